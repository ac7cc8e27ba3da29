"""The pooling and resizing kernels past what the op table reaches (tests/tkernels/opinfos/ops_conv_pool.py runs the
forward entries on small samples): every backward entry on cuda, outputs across program blocks, strided inputs,
gradients and indices read in place, PyTorch's max-pool index and NaN rules, large up- and down-sampling factors
(the backward gathers' candidate windows), half types, empty outputs and deterministic gradients.

Results on cuda are compared with the cpu backend (itself checked against NumPy references and finite
differences in tests/tkernels/test_ops_conv_pool.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.ops.pooling import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    interpolate,
    interpolate_backward,
    max_pool2d,
    max_pool2d_backward,
)

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

TOL = {"float32": (2e-5, 1e-5), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2)}
RNG = np.random.default_rng(0)


def _both(fn, *args, **kwargs):
    """``fn`` on cuda and on cpu (Array arguments moved), results as NumPy (tuples flattened)."""
    def on(dev):
        a = [x.to(dev) if isinstance(x, tk.Array) else x for x in args]
        r = fn(*a, **{n: (v.to(dev) if isinstance(v, tk.Array) else v) for n, v in kwargs.items()})
        rs = r if isinstance(r, tuple) else (r,)
        assert all(x.device.type == dev for x in rs)
        return [x.to("cpu").numpy() for x in rs]

    return on("cuda"), on("cpu")


def check(fn, *args, dtype="float32", exact=False, **kwargs):
    got, want = _both(fn, *args, **kwargs)
    rtol, atol = (0, 0) if exact else TOL[dtype]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return got


def arr(shape, dtype="float32"):
    return tk.asarray(RNG.standard_normal(shape), device="cuda").astype(dtype)


def strided(shape, dtype="float32"):
    """A non-contiguous (N, C, H, W) view: H and W swapped in memory, every other channel."""
    n, c, h, w = shape
    return tk.permute_dims(arr((n, 2 * c, w, h), dtype), (0, 1, 3, 2))[:, ::2]


# ------------------------------------------------------------------------------------------------ max pooling
@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, ceil_mode=True),
                                dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1))], ids=str)
def test_max_pool2d_forward_and_backward(kw):
    x = strided((2, 3, 9, 8))
    out, idx = check(lambda a: max_pool2d(a, return_indices=True, **kw), x, exact=True)
    idx_dev = tk.asarray(idx, device="cuda")
    g = strided(out.shape)
    check(lambda a, i: max_pool2d_backward(a, x.shape, i, **kw), g, idx_dev)
    check(lambda a, i: max_pool2d_backward(a, x.shape, i, **kw), g, tk.asarray(np.ascontiguousarray(
        np.swapaxes(idx, 2, 3)), device="cuda").mT)  # indices read through their strides


def test_max_pool2d_index_and_nan_rules():
    x = np.array([[[[1.0, 3.0, 3.0], [0.0, -1.0, 2.0], [5.0, 5.0, 0.0]]]])
    out, idx = max_pool2d(tk.asarray(x, device="cuda"), 2, 1, return_indices=True)
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[1, 1], [6, 7]])  # ties: the first in window order
    assert idx.dtype == tk.int64
    x[0, 0, 1, 1] = np.nan
    out, idx = max_pool2d(tk.asarray(x, device="cuda"), 2, 1, return_indices=True)
    assert np.isnan(out.numpy()).all() and (idx.numpy() == 4).all()
    out, idx = max_pool2d(tk.full((1, 1, 2, 2), -np.inf, device="cuda"), 2, 2, padding=1, return_indices=True)
    assert (out.numpy() == -np.inf).all()
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[0, 1], [2, 3]])  # the first valid element, not padding
    ninf = tk.full((1, 1, 6, 5), -np.inf, device="cuda")  # padding skipped by whole dilations
    _, idx = check(lambda a: max_pool2d(a, 3, (3, 2), padding=1, dilation=2, return_indices=True), ninf, exact=True)
    np.testing.assert_array_equal(idx[0, 0], [[6, 6], [11, 11]])


def test_pools_across_blocks():
    """More outputs than one program's block (and more inputs than the backward's), halves."""
    x = arr((1, 3, 41, 53))
    for dtype in ("float32", "bfloat16"):
        xd = x.astype(dtype)
        out, idx = check(lambda a: max_pool2d(a, 3, 1, 1, return_indices=True), xd, exact=True)
        g = arr(out.shape, dtype)
        check(lambda a, i: max_pool2d_backward(a, x.shape, i, 3, 1, 1), g, tk.asarray(idx, device="cuda"),
              dtype=dtype)
    check(lambda a: avg_pool2d(a, 3, 1, 1, count_include_pad=False), x.astype("float16"), dtype="float16")
    check(lambda a: avg_pool2d_backward(a, x.shape, 3, 1, 1), arr(x.shape, "float16"), dtype="float16")


# ------------------------------------------------------------------------------------------------ avg pooling
@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True),
                                dict(kernel_size=2, padding=1, divisor_override=3)], ids=str)
def test_avg_pool2d_forward_and_backward(kw):
    x = strided((2, 2, 7, 6))
    (out,) = check(lambda a: avg_pool2d(a, **kw), x)
    check(lambda a: avg_pool2d_backward(a, x.shape, **kw), strided(out.shape))
    check(lambda a: avg_pool2d_backward(a, x.shape[1:], **kw), strided(out.shape)[0])  # unbatched


# ------------------------------------------------------------------------------------------------ adaptive pooling
@pytest.mark.parametrize("size", [(3, 4), 1, (5, None), (16, 20), (2, 1)], ids=str)
def test_adaptive_avg_pool2d(size):
    x = strided((2, 3, 7, 9))
    (out,) = check(lambda a: adaptive_avg_pool2d(a, size), x)
    check(lambda a: adaptive_avg_pool2d_backward(a, x.shape), strided(out.shape))


def test_adaptive_empty_output_and_halves():
    x = arr((2, 3, 7, 9))
    assert adaptive_avg_pool2d(x, (0, 3)).shape == (2, 3, 0, 3)
    assert (adaptive_avg_pool2d_backward(arr((2, 3, 0, 3)), x.shape).numpy() == 0).all()
    for dtype in ("float16", "bfloat16"):
        (out,) = check(lambda a: adaptive_avg_pool2d(a, (3, 4)), x.astype(dtype), dtype=dtype)
        check(lambda a: adaptive_avg_pool2d_backward(a, x.shape), arr(out.shape, dtype), dtype=dtype)


# ------------------------------------------------------------------------------------------------ interpolate
INTERP_CASES = [dict(size=(5, 13)), dict(scale_factor=(2, 0.55)), dict(scale_factor=5), dict(size=(2, 3)),
                dict(size=(10, 4), mode="nearest-exact"), dict(scale_factor=(3.3, 0.3), mode="nearest-exact"),
                dict(size=(10, 4), mode="bilinear", align_corners=True),
                dict(scale_factor=(4.3, 0.3), mode="bilinear"), dict(size=(31, 2), mode="bilinear", align_corners=True),
                dict(scale_factor=2.5, mode="bilinear", recompute_scale_factor=True),
                dict(size=(7, 1), mode="bilinear"),
                dict(size=(3, 4), mode="area"), dict(size=(15, 20), mode="area")]


@pytest.mark.parametrize("kw", INTERP_CASES, ids=str)
def test_interpolate_forward_and_backward(kw):
    x = strided((1, 2, 5, 7))
    (out,) = check(lambda a: interpolate(a, **kw), x, exact=kw.get("mode", "nearest").startswith("nearest"))
    check(lambda a: interpolate_backward(a, x.shape, **kw), strided(out.shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_interpolate_dtypes(dtype):
    x = arr((2, 3, 5, 7), dtype)
    for kw in (dict(scale_factor=2), dict(size=(9, 4), mode="bilinear"), dict(size=(3, 3), mode="area")):
        (out,) = check(lambda a, kw=kw: interpolate(a, **kw), x, dtype=dtype)
        check(lambda a, kw=kw: interpolate_backward(a, x.shape, **kw), arr(out.shape, dtype), dtype=dtype)


def test_interpolate_keeps_inf_and_nan_in_nearest_and_identity_copies():
    x = arr((1, 1, 3, 4))
    x[0, 0, 1, 2] = np.inf
    x[0, 0, 2, 0] = np.nan
    check(lambda a: interpolate(a, scale_factor=(2, 1.5)), x, exact=True)
    same = interpolate(x.mT.mT, size=(3, 4), mode="bilinear")  # the identity: a copy (PyTorch's), inf and NaN kept
    np.testing.assert_array_equal(same.numpy(), x.numpy())


def test_backward_gathers_are_deterministic():
    g = arr((2, 3, 20, 24))
    a = interpolate_backward(g, (2, 3, 5, 7), size=(20, 24), mode="bilinear").numpy()
    b = interpolate_backward(g, (2, 3, 5, 7), size=(20, 24), mode="bilinear").numpy()
    assert np.array_equal(a, b)


@pytest.mark.gpu
def test_large_sweep_on_gpu():
    x = arr((8, 64, 112, 112))
    for dtype in ("float32", "bfloat16"):
        xd = x.astype(dtype)
        out, idx = check(lambda a: max_pool2d(a, 3, 2, 1, return_indices=True), xd, exact=True)
        check(lambda a, i: max_pool2d_backward(a, x.shape, i, 3, 2, 1), arr(out.shape, dtype),
              tk.asarray(idx, device="cuda"), dtype=dtype)
        check(lambda a: adaptive_avg_pool2d(a, 7), xd, dtype=dtype)
        for kw in (dict(scale_factor=2), dict(scale_factor=2, mode="bilinear"), dict(size=(50, 70), mode="area")):
            (out,) = check(lambda a, kw=kw: interpolate(a, **kw), xd, dtype=dtype)
            check(lambda a, kw=kw: interpolate_backward(a, x.shape, **kw), arr(out.shape, dtype), dtype=dtype)
