"""tk.ops.adam_step / sgd_step (fused multi-tensor optimizer steps) against a NumPy reference of PyTorch's
single-tensor arithmetic, several steps, every flag, float32/float64/bfloat16/float16 parameters (also mixed in
one call), on cpu and interpreted cuda (one kernel launch per call); bad input."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
from tkernels import ops

BF16 = np.dtype(ml_dtypes.bfloat16)
SIZES = [(1,), (7,), (3, 5), (1000,), (2, 2, 2)]  # odd sizes, 1 and 1000 elements in one call
TOL = {np.dtype(np.float64): 1e-13, np.dtype(np.float32): 2e-6, np.dtype(np.float16): 2e-3, BF16: 1e-2}


def _ct(d):
    return np.float64 if d == np.float64 else np.float32


def adam_ref(p, g, m, v, x, *, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize):
    """One step on NumPy copies: math in float32 (float64 for float64), Python scalars rounded to it,
    PyTorch's single-tensor order; returns the new (p, m, v, x) in the parameter's dtype."""
    d = p.dtype
    c = _ct(d)
    p, g, m, v = (a.astype(c) for a in (p, g, m, v))
    if maximize:
        g = -g
    if weight_decay and not decoupled:
        g = g + p * c(weight_decay)
    if weight_decay and decoupled:
        p = p * c(1 - lr * weight_decay)
    m = m + c(1 - beta1) * (g - m)
    v = v * c(beta2) + (g * g) * c(1 - beta2)
    if amsgrad:
        x = np.maximum(x.astype(c), v)
    s = np.sqrt(x if amsgrad else v)
    denom = s / c(np.sqrt(1 - beta2**step)) + c(eps)
    p = p - (m / denom) * c(lr / (1 - beta1**step))
    return tuple(None if a is None else a.astype(d) for a in (p, m, v, x if amsgrad else None))


def sgd_ref(p, g, b, *, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step):
    d = p.dtype
    c = _ct(d)
    p, g = p.astype(c), g.astype(c)
    if maximize:
        g = -g
    if weight_decay:
        g = g + p * c(weight_decay)
    if momentum:
        b = g.copy() if first_step else b.astype(c) * c(momentum) + g * c(1 - dampening)
        g = g + b * c(momentum) if nesterov else b
    p = p - g * c(lr)
    return p.astype(d), None if b is None else b.astype(d)


def _data(dtypes, seed=0, sizes=SIZES):
    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(sizes):
        d = dtypes[i % len(dtypes)]
        out.append({k: (rng.standard_normal(s) * (0.1 if k == "v" else 1)).astype(d) for k in "pgmv"})
        out[-1]["v"] = np.abs(out[-1]["v"])
        out[-1]["x"] = (out[-1]["v"] * 1.5).astype(d)
        out[-1]["b"] = rng.standard_normal(s).astype(d)
    return out


def _close(got, want):
    tol = TOL[want.dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.fixture
def launches(monkeypatch):
    """Counts the kernel launches of the cuda optimizer backend."""
    from tkernels.backends.triton import optim as backend

    calls = []
    real = backend.launch

    def counting(kernel, grid, *args, **meta):
        calls.append((kernel.fn.__name__ if hasattr(kernel, "fn") else kernel.__name__, grid, meta))
        return real(kernel, grid, *args, **meta)

    monkeypatch.setattr(backend, "launch", counting)
    return calls


ADAM_CASES = [  # (weight_decay, decoupled, amsgrad, maximize)
    (0.0, False, False, False), (0.1, False, True, False), (0.1, True, False, True), (0.05, True, True, False)]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtypes", [(np.float32,), (np.float64,), (BF16,), (np.float32, BF16, np.float64, np.float16)],
                         ids=["f32", "f64", "bf16", "mixed"])
@pytest.mark.parametrize("case", ADAM_CASES, ids=["adam", "adam-wd-ams", "adamw-max", "adamw-ams"])
def test_adam_step_matches_reference(device, dtypes, case, launches):
    if device == "cuda" and len(dtypes) == 1 and dtypes != (np.float32,):
        pytest.skip("interpreted cuda: the other dtypes in the mixed call only (time)")
    wd, decoupled, amsgrad, maximize = case
    data = _data([np.dtype(d) for d in dtypes])
    arrs = {k: [tk.asarray(t[k].copy(), device=device) for t in data] for k in "pgmvx"}
    kw = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=wd, decoupled=decoupled, amsgrad=amsgrad,
              maximize=maximize)
    grads_before = [a.numpy().copy() for a in arrs["g"]]
    steps = (1, 2, 3) if device == "cpu" else (1, 2)
    for step in steps:
        ops.adam_step(arrs["p"], arrs["g"], arrs["m"], arrs["v"], arrs["x"] if amsgrad else None, step=step, **kw)
        for t in data:
            t["p"], t["m"], t["v"], x = adam_ref(t["p"], t["g"], t["m"], t["v"], t["x"], step=step, **kw)
            t["x"] = t["x"] if x is None else x
    for i, t in enumerate(data):
        for k in "pmvx":
            _close(arrs[k][i].numpy(), t[k])
        np.testing.assert_array_equal(arrs["g"][i].numpy(), grads_before[i])  # grads are only read
    if device == "cuda":
        assert [c[0] for c in launches] == ["adam_kernel"] * 2  # one launch per call, every tensor
        assert launches[0][2]["AMSGRAD"] is amsgrad


def test_adam_step_cpu_is_bit_identical_to_the_reference():
    data = _data([np.dtype(np.float32), np.dtype(np.float64)], seed=3)
    arrs = {k: [tk.asarray(t[k].copy()) for t in data] for k in "pgmvx"}
    kw = dict(lr=3e-3, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.2, decoupled=False, amsgrad=True,
              maximize=True)
    for step in (1, 2):
        ops.adam_step(arrs["p"], arrs["g"], arrs["m"], arrs["v"], arrs["x"], step=step, **kw)
        for t in data:
            t["p"], t["m"], t["v"], t["x"] = adam_ref(t["p"], t["g"], t["m"], t["v"], t["x"], step=step, **kw)
    for i, t in enumerate(data):
        for k in "pmvx":
            np.testing.assert_array_equal(arrs[k][i].numpy(), t[k])


SGD_CASES = [  # (momentum, dampening, weight_decay, nesterov, maximize)
    (0.0, 0.0, 0.0, False, False), (0.9, 0.0, 0.01, False, True), (0.9, 0.1, 0.0, False, False),
    (0.8, 0.0, 0.1, True, False)]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtypes", [(np.float32,), (np.float64,), (BF16,), (np.float32, BF16, np.float64, np.float16)],
                         ids=["f32", "f64", "bf16", "mixed"])
@pytest.mark.parametrize("case", SGD_CASES, ids=["plain", "mom-wd-max", "damp", "nesterov-wd"])
def test_sgd_step_matches_reference(device, dtypes, case, launches):
    if device == "cuda" and len(dtypes) == 1 and dtypes != (np.float32,):
        pytest.skip("interpreted cuda: the other dtypes in the mixed call only (time)")
    mom, damp, wd, nesterov, maximize = case
    data = _data([np.dtype(d) for d in dtypes], seed=1)
    arrs = {k: [tk.asarray(t[k].copy(), device=device) for t in data] for k in "pgb"}
    kw = dict(lr=0.1, momentum=mom, dampening=damp, weight_decay=wd, nesterov=nesterov, maximize=maximize)
    for step in range(3 if device == "cpu" else 2):
        ops.sgd_step(arrs["p"], arrs["g"], arrs["b"] if mom else None, first_step=step == 0, **kw)
        for t in data:
            t["p"], b = sgd_ref(t["p"], t["g"], t["b"] if mom else None, first_step=step == 0, **kw)
            t["b"] = t["b"] if b is None else b
    for i, t in enumerate(data):
        for k in "pb":
            _close(arrs[k][i].numpy(), t[k])
    if device == "cuda":
        assert [c[0] for c in launches] == ["sgd_kernel"] * 2
        assert launches[0][2]["MOMENTUM"] is bool(mom)


def test_cuda_large_tensor_and_strided_views(launches):
    """Several blocks of one tensor (block boundaries), a tensor at an odd offset (unaligned: the ALIGNED=False
    variant) and transposed (non-contiguous: updated through a copy written back), empty tensors skipped."""
    from tkernels.backends.triton.optim import BLOCK

    rng = np.random.default_rng(5)
    n = 2 * BLOCK + 3
    base = [rng.standard_normal(n + 1).astype(np.float32) for _ in range(3)]
    mats = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(3)]
    empty = [np.zeros((0, 4), np.float32)] * 3
    p, g, b = ([tk.asarray(base[j].copy(), device="cuda")[1:], tk.asarray(mats[j].copy(), device="cuda").mT,
                tk.asarray(empty[j], device="cuda")] for j in range(3))
    kw = dict(lr=0.5, momentum=0.5, dampening=0.0, weight_decay=0.0, nesterov=True, maximize=False)
    ops.sgd_step(p, g, b, first_step=False, **kw)
    for j, (pp, bb) in enumerate(zip(p, b)):
        src = [base, mats, empty][j]
        cut = (lambda a: a[1:]) if j == 0 else (lambda a: a.T) if j == 1 else (lambda a: a)
        want_p, want_b = sgd_ref(cut(src[0]), cut(src[1]), cut(src[2]), first_step=False, **kw)
        _close(pp.numpy(), want_p)
        _close(bb.numpy(), want_b)
    assert len(launches) == 1 and launches[0][2]["ALIGNED"] is False
    assert launches[0][1] == (3 + 1,)  # programs: 3 blocks of the long tensor, 1 of the small one, 0 of the empty


def test_empty_lists_do_nothing():
    ops.adam_step([], [], [], [], None, step=1, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    ops.sgd_step([], [], None, lr=0.1)


# ---------------------------------------------------------------------------------------------- bad input
def _adam(**over):
    p = [tk.ones((3,)), tk.ones((2, 2))]
    args = dict(params=p, grads=[tk.ones((3,)), tk.ones((2, 2))], exp_avgs=[tk.zeros((3,)), tk.zeros((2, 2))],
                exp_avg_sqs=[tk.zeros((3,)), tk.zeros((2, 2))], max_exp_avg_sqs=None)
    kw = dict(step=1, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    for k, v in over.items():
        (args if k in args else kw)[k] = v
    ops.adam_step(*args.values(), **kw)


@pytest.mark.parametrize("over,exc,match", [
    ({"grads": [tk.ones((3,))]}, ValueError, r"adam_step: grads has 1 arrays but params has 2"),
    ({"grads": [tk.ones((3,)), tk.ones((4,))]}, ValueError, r"adam_step: grads\[1\] .*shape=\(4,\).* params\[1\]"),
    ({"exp_avgs": [tk.zeros((3,)), tk.zeros((2, 2), dtype=tk.float64)]}, ValueError,
     r"adam_step: exp_avgs\[1\] .*float64.* must have the shape, dtype and device"),
    ({"params": [tk.ones((3,), dtype=tk.int32), tk.ones((2, 2))]}, TypeError, r"adam_step: params\[0\] must be "
     r"floating.*int32"),
    ({"grads": tk.ones((3,))}, TypeError, r"adam_step: grads must be a list of Arrays, got Array\(shape=\(3,\)"),
    ({"amsgrad": True}, ValueError, r"adam_step: amsgrad=True needs max_exp_avg_sqs"),
    ({"max_exp_avg_sqs": [tk.zeros((3,)), tk.zeros((2, 2))]}, ValueError, r"adam_step: max_exp_avg_sqs given"),
    ({"step": 0}, ValueError, r"adam_step: step must be >= 1"),
    ({"beta2": 1.0}, ValueError, r"adam_step: betas must be in \[0, 1\)"),
    ({"lr": "x"}, TypeError, r"adam_step: lr must be a number"),
])
def test_adam_step_errors(over, exc, match):
    with pytest.raises(exc, match=match):
        _adam(**over)


def test_errors_leave_inputs_unchanged_and_name_devices():
    p = [tk.ones((3,)), tk.ones((3,), device="cuda")]
    with pytest.raises(RuntimeError, match=r"adam_step: params\[1\] is on cuda:0 but params\[0\] is on cpu"):
        ops.adam_step(p, [tk.ones((3,))] * 2, [tk.zeros((3,)), tk.zeros((3,))], [tk.zeros((3,))] * 2, None, step=1,
                      lr=1.0, beta1=0.9, beta2=0.999, eps=1e-8)
    np.testing.assert_array_equal(p[0].numpy(), np.ones(3, np.float32))
    g_cuda = tk.ones((3,), device="cuda")
    with pytest.raises(ValueError, match=r"sgd_step: grads\[0\] .*device=cuda:0.* params\[0\] .*device=cpu"):
        ops.sgd_step([p[0]], [g_cuda], None, lr=0.1)
    with pytest.raises(ValueError, match=r"sgd_step: exp|sgd_step: momentum_buffers\[0\] is params\[0\] itself"):
        ops.sgd_step([p[0]], [tk.ones((3,))], [p[0]], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("kw,match", [
    ({"momentum": 0.9}, r"sgd_step: momentum=0.9 needs momentum_buffers"),
    ({"nesterov": True}, r"sgd_step: nesterov needs a momentum and zero dampening"),
    ({"momentum_buffers": [tk.zeros((3,))]}, r"sgd_step: momentum_buffers given with momentum=0"),
    ({"lr": -1.0}, r"sgd_step: lr must be >= 0"),
])
def test_sgd_step_errors(kw, match):
    bufs = kw.pop("momentum_buffers", None)
    with pytest.raises(ValueError, match=match):
        ops.sgd_step([tk.ones((3,))], [tk.ones((3,))], bufs, lr=kw.pop("lr", 0.1), **kw)
