"""Adam/AdamW ``capturable=True`` (PyTorch's): step counts as float32 tensors on each parameter's device, the bias
corrections computed there; the same parameters as the host-counted step (bit for bit through the fused op on cpu
and interpreted cuda in float32, within float64 rounding otherwise), a captured step replays like eager steps bit
for bit, and the counts themselves stay on the device. The driver side (one CUDA graph for the whole step) is
tests/tkernels/cuda/test_cuda_graphs_fake_driver.py."""

import numpy as np
import pytest

import autograd as ag
import nn
import tkernels as tk
from tests.nn.test_graph_capture import _run, _same
from tkernels import ops

DEVICES = ["cpu", "cuda"]


def _train(dev, *, steps=4, dtype=ag.float32, **kw):
    rng = np.random.default_rng(0)
    w = nn.Parameter(ag.tensor(rng.standard_normal((5, 3)), dtype=dtype, device=dev))
    b = nn.Parameter(ag.tensor(rng.standard_normal(3), dtype=dtype, device=dev))
    x = ag.tensor(rng.standard_normal((4, 5)), dtype=dtype, device=dev)
    opt = nn.optim.AdamW([w, b], lr=0.05, weight_decay=0.1, **kw)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w + b) ** 2).sum().backward()
        opt.step()
    return [p.detach().cpu().numpy() for p in (w, b)], opt


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("amsgrad", [False, True])
def test_capturable_equals_the_host_counted_step(dev, amsgrad):
    ref, _ = _train(dev, amsgrad=amsgrad)
    got, opt = _train(dev, amsgrad=amsgrad, capturable=True)
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)  # float32 math: the float64 bias corrections round alike
    st = next(iter(opt.state.values()))
    assert st["step"].dtype == ag.float32 and st["step"].device.type == dev and float(st["step"]) == 4.0
    ref64, _ = _train(dev, dtype=ag.float64, amsgrad=amsgrad)
    got64, _ = _train(dev, dtype=ag.float64, amsgrad=amsgrad, capturable=True)
    for a, b in zip(ref64, got64):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dev", DEVICES)
def test_capturable_single_tensor_path_matches_within_float32_rounding(dev):
    ref, _ = _train(dev, steps=6)
    got, opt = _train(dev, steps=6, capturable=True, foreach=False)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)  # op by op: float32 roundings in another order
    assert float(next(iter(opt.state.values()))["step"]) == 6.0


@pytest.mark.parametrize("dev", DEVICES)
def test_a_captured_capturable_step_replays_like_eager(dev):
    eager, cap = _run(dev, lambda p: nn.optim.Adam(p, lr=1e-2, capturable=True))
    _same(eager, cap)
    host_eager, _ = _run(dev, lambda p: nn.optim.Adam(p, lr=1e-2))
    _same(host_eager, eager)  # and the same training as the host-counted optimizer


def test_torch_reference_when_importable():
    torch = pytest.importorskip("torch")
    got, _ = _train("cpu", steps=5, capturable=True, foreach=False)
    rng = np.random.default_rng(0)
    w = torch.nn.Parameter(torch.tensor(rng.standard_normal((5, 3)), dtype=torch.float32))
    b = torch.nn.Parameter(torch.tensor(rng.standard_normal(3), dtype=torch.float32))
    x = torch.tensor(rng.standard_normal((4, 5)), dtype=torch.float32)
    opt = torch.optim.AdamW([w, b], lr=0.05, weight_decay=0.1)
    for _ in range(5):
        opt.zero_grad()
        ((x @ w + b) ** 2).sum().backward()
        opt.step()
    for a, t in zip(got, (w, b)):
        np.testing.assert_allclose(a, t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_loaded_host_counted_state_becomes_device_counts():
    _, host = _train("cpu", steps=3)
    rng = np.random.default_rng(0)
    w = nn.Parameter(ag.tensor(rng.standard_normal((5, 3)), dtype=ag.float32))
    b = nn.Parameter(ag.tensor(rng.standard_normal(3), dtype=ag.float32))
    opt = nn.optim.AdamW([w, b], lr=0.05, weight_decay=0.1, capturable=True)
    sd = host.state_dict()
    for st in sd["state"].values():
        st["step"] = ag.tensor(3.0, dtype=ag.float64)
    for grp in sd["param_groups"]:  # (the saved groups' options replace the optimizer's, as in PyTorch)
        grp["capturable"] = True
    opt.load_state_dict(sd)
    w.grad, b.grad = ag.ones_like(w), ag.ones_like(b)
    opt.step()
    st = opt.state[w]
    assert st["step"].dtype == ag.float32 and float(st["step"]) == 4.0


@pytest.mark.parametrize("dev", DEVICES)
def test_adam_step_with_device_counts_checks_them(dev):
    p = [tk.ones((3,), device=dev)]
    z = [tk.zeros((3,), device=dev)]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)
    with pytest.raises(ValueError, match=r"adam_step: step\[0\] .*float64.* must be a float32 0-d Array"):
        ops.adam_step(p, z, z, z, None, step=[tk.zeros((), dtype=tk.float64, device=dev)], **kw)
    with pytest.raises(ValueError, match=r"adam_step: step has 2 arrays but params has 1"):
        ops.adam_step(p, z, z, z, None, step=[tk.zeros((), device=dev)] * 2, **kw)
    with pytest.raises(ValueError, match=r"adam_step: betas must be in \[0, 1\)"):
        ops.adam_step(p, z, [tk.zeros((3,), device=dev)], [tk.zeros((3,), device=dev)], None,
                      step=[tk.zeros((), device=dev)], **{**kw, "beta1": 1.0})
    k = tk.zeros((), device=dev)
    ops.adam_step(p, [tk.ones((3,), device=dev)], [tk.zeros((3,), device=dev)], [tk.zeros((3,), device=dev)], None,
                  step=[k], **kw)
    assert float(k) == 1.0
    np.testing.assert_allclose(p[0].numpy() if dev == "cpu" else p[0].cpu().numpy(), 1 - 0.1, rtol=1e-6)
