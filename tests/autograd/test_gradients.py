"""Every differentiable op of autograd: gradcheck in float64 on cpu (contiguous and non-contiguous leaves,
broadcast samples), gradgradcheck where the backward is differentiable, and float32 gradients on
interpreted cuda against cpu's; PyTorch's values where they leave tkernels' (sign)."""

import importlib
import pkgutil
import zlib

import numpy as np
import pytest

import autograd as ag
import tkernels as tk

from . import gradinfos
from .harness import as_func, build

INFOS = []
for _m in sorted(pkgutil.iter_modules(gradinfos.__path__), key=lambda m: m.name):
    INFOS.extend(importlib.import_module(f"{gradinfos.__name__}.{_m.name}").GRAD_INFOS)

IDS = [i.name for i in INFOS]


def _rng(info):
    return np.random.default_rng(zlib.crc32(info.name.encode()))


def test_names_unique():
    assert len(IDS) == len(set(IDS)), sorted(n for n in IDS if IDS.count(n) > 1)


@pytest.mark.parametrize("info", INFOS, ids=IDS)
def test_gradcheck(info):
    for sample in info.samples(_rng(info)):
        for layout in ("contiguous", "noncontig") if info.noncontig else ("contiguous",):
            args, kwargs = build(sample, layout)
            f, ls = as_func(info, args, kwargs)
            assert ls, f"{info.name}: sample has no differentiable input"
            assert ag.gradcheck(f, tuple(ls), eps=info.eps, atol=info.atol, rtol=info.rtol, nondet_tol=1e-12)


@pytest.mark.parametrize("info", [i for i in INFOS if i.gradgrad], ids=[i.name for i in INFOS if i.gradgrad])
def test_gradgradcheck(info):
    for sample in list(info.samples(_rng(info)))[:2]:
        args, kwargs = build(sample)
        f, ls = as_func(info, args, kwargs)
        assert ag.gradgradcheck(f, tuple(ls), eps=info.eps, atol=info.atol, rtol=info.rtol, nondet_tol=1e-12)


def _grads(info, sample, device):
    args, kwargs = build(sample, "contiguous", device, ag.float32)
    f, ls = as_func(info, args, kwargs)
    outs = f(*ls)
    outs = outs if isinstance(outs, tuple | list) else (outs,)
    outs = [o for o in outs if isinstance(o, ag.Tensor) and o.requires_grad]
    rng = np.random.default_rng(7)
    gos = [ag.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=device) for o in outs]
    gs = ag.grad(outs, ls, gos, allow_unused=True)
    return [None if g is None else g.detach().cpu().numpy() for g in gs], [o.detach().cpu().numpy() for o in outs]


@pytest.mark.parametrize("info", [i for i in INFOS if i.cuda], ids=[i.name for i in INFOS if i.cuda])
def test_cuda_matches_cpu(info):
    if not ag.cuda.is_available():
        pytest.skip("no cuda (not even interpreted)")
    sample = next(iter(info.samples(_rng(info))))
    g_cuda, o_cuda = _grads(info, sample, "cuda")
    g_cpu, o_cpu = _grads(info, sample, "cpu")
    for a, b in zip(o_cuda, o_cpu):
        np.testing.assert_allclose(a, b, rtol=info.cuda_rtol, atol=info.cuda_atol)
    for a, b in zip(g_cuda, g_cpu):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=info.cuda_rtol, atol=info.cuda_atol)


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if ag.cuda.is_available() else []))
def test_sign_is_pytorchs(device):
    """torch.sign is (x > 0) - (x < 0): NaN gives 0, -0.0 gives 0.0 (tkernels' sign keeps the array API's NaN);
    ints keep their dtype, bool is the identity; the gradient is 0, at NaN too."""
    nan, inf = float("nan"), float("inf")
    vals = [-2.5, -0.0, 0.0, 3.0, nan, inf, -inf, 1e-5]
    want = np.array([-1.0, 0.0, 0.0, 1.0, 0.0, 1.0, -1.0, 1.0])
    for dt in (ag.float64, ag.float32, ag.float16, ag.bfloat16):
        x = ag.tensor(vals, dtype=dt, device=device, requires_grad=True)
        for y in (ag.sign(x), ag.sgn(x), x.sign(), x.sgn()):
            assert y.dtype == dt and y.device == x.device
            got = y.detach().cpu().to(ag.float64).numpy()
            np.testing.assert_array_equal(got, want, err_msg=str(dt))
            assert not np.signbit(got[1]), dt  # +0.0, as PyTorch's (0 < x) - (x < 0)
        (g,) = ag.grad(ag.sign(x).sum(), x)
        np.testing.assert_array_equal(g.cpu().to(ag.float64).numpy(), np.zeros(len(vals)))
        out = ag.empty(len(vals), dtype=dt, device=device)
        assert ag.sign(x.detach(), out=out) is out
        np.testing.assert_array_equal(out.cpu().to(ag.float64).numpy(), want)
        z = x.detach().clone()
        assert z.sign_() is z
        np.testing.assert_array_equal(z.cpu().to(ag.float64).numpy(), want)
        assert np.isnan(tk.sign(x.detach()._data).numpy()[4])  # the array library keeps the array API
    for dt, v, w in ((ag.int64, [-3, 0, 7], [-1, 0, 1]), (ag.int8, [-128, 0, 127], [-1, 0, 1]),
                     (ag.uint8, [0, 5, 255], [0, 1, 1]), (ag.bool, [True, False], [True, False])):
        x = ag.tensor(v, dtype=dt, device=device)
        y = ag.sign(x)
        assert y.dtype == dt and y.tolist() == w, (dt, y)
        assert y._data._storage is not x._data._storage  # a new tensor, as PyTorch's
