"""The convolution kernels (the implicit-GEMM forward, im2col / col2im around the matmul kernel for the gradients)
past what the op table reaches (tests/tkernels/opinfos/ops_conv_pool.py runs the forward entries on small samples):
backward entries on every float dtype, implicit-GEMM tiles crossing M, N and K blocks and groups past the grid's
third axis, images larger than one interpreted block (4096 elements) in im2col and col2im, non-contiguous operands
(strided x, grad, weight, bias), non-contiguous outputs given to the backend, asymmetric padding, strides larger
than the kernel (pixels no window touches), output_padding at least the stride, empty batches and zero input
channels, and deterministic (bitwise repeatable) gradients.

Results on cuda are compared with the cpu backend (itself checked against NumPy references and finite
differences in tests/tkernels/test_ops_conv_pool.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.dispatch import lookup
from tkernels.ops.conv import (
    conv1d_backward,
    conv2d,
    conv2d_backward,
    conv_transpose1d_backward,
    conv_transpose2d,
    conv_transpose2d_backward,
)

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

TOL = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12), "float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}
RNG = np.random.default_rng(0)
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def arr(shape, dtype="float32"):
    return tk.asarray(RNG.uniform(-1.0, 1.0, shape), device="cuda").astype(dtype)


def _both(fn, *args, **kwargs):
    """``fn`` on cuda and on cpu (Array arguments moved), results as NumPy (tuples flattened, None kept)."""
    def on(dev):
        r = fn(*[x.to(dev) if isinstance(x, tk.Array) else x for x in args], **kwargs)
        rs = r if isinstance(r, tuple) else (r,)
        assert all(x is None or x.device.type == dev for x in rs)
        return [None if x is None else x.to("cpu").numpy() for x in rs]

    return on("cuda"), on("cpu")


def check(fn, *args, dtype="float32", **kwargs):
    got, want = _both(fn, *args, **kwargs)
    rtol, atol = TOL[dtype]
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None
            continue
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
    return got


def _grad_of(fn, *args, dtype, **kw):
    return arr(fn(*args, **kw).shape, dtype)


# ----------------------------------------------------------------------------------------------- backward
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv2d_backward_every_dtype(dtype):
    x, w = arr((2, 4, 9, 7), dtype), arr((6, 2, 3, 3), dtype)
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    g = _grad_of(conv2d, x, w, dtype=dtype, **kw)
    dx, dw, db = check(conv2d_backward, g, x, w, dtype=dtype, **kw)
    assert np.abs(dx.astype(np.float64)).sum() > 0 and np.abs(dw.astype(np.float64)).sum() > 0  # not all zeros
    check(conv2d_backward, g, x, w, dtype=dtype, needs=(False, True, False), **kw)


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_transpose2d_backward_every_dtype(dtype):
    x, w = arr((2, 4, 3, 5), dtype), arr((4, 3, 3, 3), dtype)
    kw = dict(stride=2, padding=1, output_padding=1)
    check(conv_transpose2d, x, w, arr((3,), dtype), dtype=dtype, **kw)
    g = _grad_of(conv_transpose2d, x, w, dtype=dtype, **kw)
    check(conv_transpose2d_backward, g, x, w, dtype=dtype, **kw)


def test_larger_than_one_block():
    """im2col writes 9 * 3 * 2 * 27 * 29 columns, col2im folds 2 * 3 * 27 * 29 = 4698 pixels (> 4096)."""
    x, w, b = arr((2, 3, 27, 29)), arr((5, 3, 3, 3)), arr((5,))
    check(conv2d, x, w, b, padding=1)
    g = _grad_of(conv2d, x, w, padding=1, dtype="float32")
    check(conv2d_backward, g, x, w, padding=1)
    check(conv_transpose2d, arr((2, 5, 14, 15)), arr((5, 3, 3, 3)), b[:3], stride=2)


def test_implicit_gemm_tiles(monkeypatch):
    """130 output channels (two 128-wide N tiles), K = 16 * 3 * 3 = 144 (two K steps), 2 * 9 * 10 = 180 pixels (two
    M tiles); then 3 groups launched as 2 + 1 along the grid's third axis."""
    from tkernels.backends.triton import ops_conv

    for dtype in ("float32", "bfloat16"):
        x, w, b = arr((2, 16, 9, 10), dtype), arr((130, 16, 3, 3), dtype), arr((130,), dtype)
        check(conv2d, x, w, b, padding=1, dtype=dtype)
    monkeypatch.setattr(ops_conv, "MAX_BATCH", 2)
    x, w, b = arr((2, 6, 5, 4)), arr((9, 2, 3, 2)), arr((9,))
    check(conv2d, x, w, b, padding=(1, 0), groups=3)
    check(conv_transpose2d_backward, arr((2, 6, 5, 5)), arr((2, 9, 5, 4)), w, padding=(1, 0), groups=3)


def _t(shape):
    """A random (..., H, W) cuda array whose last two axes are transposed in memory (non-contiguous)."""
    return arr(tuple(shape[:-2]) + (shape[-1], shape[-2])).mT


def test_non_contiguous_operands():
    x = arr((2, 6, 11, 9))[:, ::2, 1:]  # (2, 3, 10, 9): strided channels and rows
    xt = _t((2, 3, 10, 8))
    w = arr((3, 4, 3, 3)).mT[:, :3]  # (3, 3, 3, 3), non-contiguous
    b = arr((6,))[::2]
    kw = dict(padding=(1, 2), stride=(1, 2))
    for xx in (x, xt):
        check(conv2d, xx, w, b, **kw)
        check(conv2d_backward, _t(conv2d(xx, w, **kw).shape), xx, w, **kw)
    check(conv2d, x[:, :, ::-1], w[:, :, :, ::-1], b, **kw)  # negative strides
    kw = dict(stride=2, padding=1)
    check(conv_transpose2d, xt, w, b, **kw)
    check(conv_transpose2d_backward, _t(conv_transpose2d(xt, w, **kw).shape), xt, w, **kw)


def test_backend_writes_non_contiguous_outputs():
    """The backend contract allows any output views: results are computed in place or through a temporary."""
    dev = tk.device.as_device("cuda")
    x, w, b, g = arr((2, 3, 6, 5)), arr((4, 3, 3, 3)), arr((4,)), arr((2, 4, 6, 5))
    out = tk.zeros((2, 4, 5, 6), device="cuda").mT
    lookup("conv2d", dev)(out, x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(out.numpy(), conv2d(x.to("cpu"), w.to("cpu"), b.to("cpu"), padding=1).numpy(),
                               rtol=2e-5, atol=2e-5)
    dx, dw = tk.zeros((2, 3, 5, 6), device="cuda").mT, tk.zeros((4, 3, 3, 3), device="cuda").mT
    lookup("conv2d_backward", dev)(dx, dw, None, g, x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    rdx, rdw, _ = conv2d_backward(g.to("cpu"), x.to("cpu"), w.to("cpu"), padding=1)
    np.testing.assert_allclose(dx.numpy(), rdx.numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(dw.numpy(), rdw.numpy(), rtol=2e-5, atol=2e-5)


def test_geometry_edge_cases():
    # asymmetric "same" padding (even kernel), its backward
    x, w = arr((1, 2, 5, 6)), arr((3, 2, 4, 2))
    check(conv2d_backward, arr((1, 3, 5, 6)), x, w, padding="same")
    # stride larger than the kernel: pixels no window reads get a zero input gradient
    x, w = arr((1, 2, 8, 8)), arr((2, 2, 2, 2))
    dx, _, _ = check(conv2d_backward, _grad_of(conv2d, x, w, stride=3, dtype="float32"), x, w, stride=3)
    assert (dx[:, :, 2::3] == 0).all() and (dx[:, :, :, 2::3] == 0).all()
    # output_padding >= stride (allowed when below the dilation): the conv of grad is cropped to x's size
    x, w = arr((1, 3, 3, 3)), arr((3, 1, 3, 3))
    kw = dict(stride=1, padding=1, output_padding=1, dilation=2, groups=3)
    check(conv_transpose2d_backward, _grad_of(conv_transpose2d, x, w, dtype="float32", **kw), x, w, **kw)
    # 1-D entries route through the 2-D kernels
    x, w = arr((2, 3, 9)), arr((3, 1, 3))
    check(conv1d_backward, arr((2, 3, 3)), x, w, stride=2, dilation=2, groups=3)
    x, w = arr((2, 3, 5)), arr((3, 2, 3))
    check(conv_transpose1d_backward, arr((2, 2, 10)), x, w, stride=2, padding=1, output_padding=1)


def test_empty_batch_and_no_input_channels():
    x, w = arr((0, 3, 5, 5)), arr((4, 3, 3, 3))
    _, dw, db = check(conv2d_backward, arr((0, 4, 3, 3)), x, w)
    assert not dw.any() and not db.any()
    check(conv_transpose2d_backward, arr((0, 2, 4, 4)), arr((0, 4, 2, 2)), arr((4, 2, 3, 3)))
    x, w, b = arr((2, 0, 4, 4)), arr((3, 0, 3, 3)), arr((3,))
    y, = check(conv2d, x, w, b)
    np.testing.assert_array_equal(y, np.broadcast_to(b.numpy()[:, None, None], y.shape))


def test_gradients_are_deterministic():
    x, w = arr((2, 4, 9, 9)), arr((4, 2, 3, 3))
    kw = dict(stride=2, padding=2, dilation=2, groups=2)
    g = _grad_of(conv2d, x, w, dtype="float32", **kw)
    first = [a.numpy() for a in conv2d_backward(g, x, w, **kw)]
    second = [a.numpy() for a in conv2d_backward(g, x, w, **kw)]
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_large_convolutions_on_gpu(dtype):
    """Real-GPU sizes: a ResNet-like 3x3 layer, a strided depthwise layer and an upsampling transposed layer."""
    x, w, b = arr((8, 64, 56, 56), dtype), arr((128, 64, 3, 3), dtype), arr((128,), dtype)
    tol = {**TOL, "float32": (1e-3, 1e-3)}  # TF32 may be on; K = 576 products
    got, want = _both(conv2d, x, w, b, padding=1)
    np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64), *tol[dtype])
    g = arr((8, 128, 56, 56), dtype)
    for a, r in zip(*_both(conv2d_backward, g, x, w, padding=1), strict=True):
        scale = max(1.0, float(np.abs(r.astype(np.float64)).max()))
        np.testing.assert_allclose(a.astype(np.float64) / scale, r.astype(np.float64) / scale, *tol[dtype])
    check(conv2d, arr((4, 96, 33, 33), dtype), arr((96, 1, 5, 5), dtype), stride=2, padding=2, groups=96,
          dtype=dtype)
    check(conv_transpose2d, arr((4, 32, 17, 17), dtype), arr((32, 16, 4, 4), dtype), stride=2, padding=1,
          dtype=dtype)
