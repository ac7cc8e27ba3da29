"""The fused multi-tensor optimizer steps (default, ``foreach=None``) against the per-parameter reference
(``foreach=False``): the same parameters and state after several steps on cpu (bit-identical for float32/float64)
and interpreted cuda (one kernel launch per group and step); mixed step counts and devices split into calls."""

import numpy as np
import pytest

import autograd as ag
import nn

SHAPES = [(4, 3), (4,), (1,), (2, 5)]


def _run(opt_cls, device, dtype, foreach, steps=3, skip=None, **kw):
    """Parameters and optimizer state after ``steps`` steps with seeded gradients; ``skip``: (step, index) of a
    parameter without a gradient at that step."""
    rng = np.random.default_rng(0)
    params = [nn.Parameter(ag.tensor(rng.standard_normal(s), dtype=dtype, device=device)) for s in SHAPES]
    opt = opt_cls(params, foreach=foreach, **kw)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = None if (k, i) == skip else ag.tensor(rng.standard_normal(p.shape), dtype=dtype, device=device)
        opt.step()
    state = [{n: v.cpu().numpy() for n, v in sorted(opt.state.get(p, {}).items())} for p in params]
    return [p.detach().cpu().numpy() for p in params], state


def _compare(a, b, exact, tol=1e-6):
    (pa, sa), (pb, sb) = a, b
    for x, y in zip(pa + [v for s in sa for v in s.values()], pb + [v for s in sb for v in s.values()]):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64), rtol=tol, atol=tol)
    assert [sorted(s) for s in sa] == [sorted(s) for s in sb]


OPTIMS = [
    (nn.optim.Adam, dict(lr=0.01)),
    (nn.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    (nn.optim.AdamW, dict(lr=0.01, betas=(0.8, 0.99), amsgrad=True)),
    (nn.optim.SGD, dict(lr=0.1)),
    (nn.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, maximize=True)),
    (nn.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
]
IDS = ["adam", "adam-wd-ams-max", "adamw-ams", "sgd", "sgd-mom-damp-wd-max", "sgd-nesterov"]


@pytest.mark.parametrize("opt_cls,kw", OPTIMS, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_is_bit_identical_to_per_parameter_on_cpu(opt_cls, kw, dtype):
    dt = getattr(ag, dtype)
    skip = (1, 2)  # a parameter without a gradient at step 1: its step count lags (a second fused call)
    _compare(_run(opt_cls, "cpu", dt, None, skip=skip, **kw), _run(opt_cls, "cpu", dt, False, skip=skip, **kw),
             exact=True)


def test_fused_bfloat16_close_to_per_parameter_on_cpu():
    # the reference rounds every intermediate to bfloat16, the fused step only the stored results
    a = _run(nn.optim.AdamW, "cpu", ag.bfloat16, None, lr=0.01)
    b = _run(nn.optim.AdamW, "cpu", ag.bfloat16, False, lr=0.01)
    _compare(a, b, exact=False, tol=2e-2)


CUDA_CASES = (1, 2, 4, 5)


@pytest.mark.parametrize("opt_cls,kw", [OPTIMS[i] for i in CUDA_CASES], ids=[IDS[i] for i in CUDA_CASES])
def test_fused_matches_per_parameter_on_interpreted_cuda(opt_cls, kw, monkeypatch):
    from tkernels.backends.triton import optim as backend

    launches = []
    real = backend.launch
    monkeypatch.setattr(backend, "launch", lambda *a, **k: (launches.append(a[0]), real(*a, **k))[1])
    fused = _run(opt_cls, "cuda", ag.float32, None, steps=2, **kw)
    assert len(launches) == 2  # one per step for the whole group
    ref = _run(opt_cls, "cpu", ag.float32, False, steps=2, **kw)
    _compare(fused, ref, exact=False)


def test_fused_option_and_groups_on_mixed_devices():
    """``fused=True`` runs the fused path even with ``foreach=False``; a group spread over cpu and cuda makes one
    call per device; per-group options apply."""
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(s) for s in SHAPES]
    gs = [rng.standard_normal(s) for s in SHAPES]

    def run(devices, **kw):
        ps = [nn.Parameter(ag.tensor(w, dtype=ag.float32, device=d)) for w, d in zip(ws, devices)]
        opt = nn.optim.Adam([{"params": ps[:2], "lr": 0.05}, {"params": ps[2:]}], lr=0.01, **kw)
        for _ in range(2):
            for p, g in zip(ps, gs):
                p.grad = ag.tensor(g, dtype=ag.float32, device=p.device)
            opt.step()
        return [p.detach().cpu().numpy() for p in ps]

    ref = run(["cpu"] * 4, foreach=False)
    for got in (run(["cpu"] * 4, foreach=False, fused=True), run(["cpu", "cuda", "cuda", "cpu"])):
        for x, y in zip(got, ref):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("foreach", [None, False])
def test_step_count_follows_user_writes_and_loaded_state(foreach, device, monkeypatch):
    """``state["step"]`` counts steps as in PyTorch, and a count the user writes (in place, or through ``.data`` on
    cpu) or restores with ``load_state_dict`` is the one the next step uses (the bias corrections show it). On
    cuda the count is kept on the host too: a step does not read the tensor back (a device sync per parameter)."""
    if device == "cuda" and not ag.cuda.is_available():
        pytest.skip("no cuda device (not even interpreted)")
    g = ag.tensor([0.5, -1.0], device=device)

    def fresh(steps, lr=0.1):
        p = nn.Parameter(ag.tensor([1.0, 2.0], device=device))
        opt = nn.optim.Adam([p], lr=lr, foreach=foreach)
        for _ in range(steps):
            p.grad = g.clone()
            opt.step()
        return p, opt

    p, opt = fresh(3)
    assert opt.state[p]["step"].item() == 3.0
    reads = []
    orig = ag.Tensor.item
    monkeypatch.setattr(ag.Tensor, "item", lambda self: reads.append(1) or orig(self))
    p.grad = g.clone()
    opt.step()
    monkeypatch.undo()
    assert opt.state[p]["step"].item() == 4.0
    if device == "cuda":
        assert reads == []
    # the user rewinds the count in place: the next step is step 1 again (same update as a fresh optimizer's
    # first step from the same parameters with the moments zeroed)
    with ag.no_grad():
        opt.state[p]["step"].zero_()
        opt.state[p]["exp_avg"].zero_()
        opt.state[p]["exp_avg_sq"].zero_()
    before = p.detach().cpu().numpy().copy()
    p.grad = g.clone()
    opt.step()
    assert opt.state[p]["step"].item() == 1.0
    q, _ = fresh(0)
    with ag.no_grad():
        q.copy_(ag.tensor(before, device=device))
    opt2 = nn.optim.Adam([q], lr=0.1, foreach=foreach)
    q.grad = g.clone()
    opt2.step()
    np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())
    if device == "cpu":  # a write through .data (no version bump) is read too
        opt.state[p]["step"].data.fill_(100.0)
        p.grad = g.clone()
        opt.step()
        assert opt.state[p]["step"].item() == 101.0
    # a loaded state dict replaces the step tensors: its count is read
    p3, opt3 = fresh(2)
    sd = opt3.state_dict()
    p4, opt4 = fresh(5)
    opt4.load_state_dict(sd)
    p4.grad = g.clone()
    opt4.step()
    assert opt4.state[p4]["step"].item() == 3.0
