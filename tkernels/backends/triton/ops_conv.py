"""Convolutions on cuda (kernels: ``tkernels/kernels/conv.py``, GEMMs also on ``matmul.py``); signatures as the
NumPy backend (``tkernels/ops/conv.py``)::

    conv2d(out, x, weight, bias, stride, padding, dilation, groups)       # padding (top, bottom, left, right)
    conv2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, dilation, groups)
    conv_transpose2d(out, x, weight, bias, stride, padding, output_padding, groups, dilation)  # padding (ph, pw)
    conv_transpose2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, output_padding, groups,
                              dilation)

Building blocks, with G groups, ``K = C/G * kH * kW`` and ``L = Ho * Wo`` output positions:

- forward: one implicit-GEMM kernel (``conv_gemm_kernel``): per group, (N*L pixels) x (O/G channels) output tiles,
  the column tiles gathered from x on the fly (no column matrix), x, weight, bias and out read/written through
  their strides, the bias added to the fp32 (fp64) accumulator before the single rounding; autotuned on a GPU;
- input gradient: ``dcols[n, g] (K, L) = W[g]^T @ grad[n, g]`` on the matmul kernel, in float32 (float64 for
  float64), then ``col2im`` folds the columns into the image (a gather per pixel: deterministic, no atomics),
  adding an optional bias;
- weight gradient: ``im2col`` gathers x (any strides) into a (G*K, N, L) column matrix in x's dtype (a copy:
  exact), ``grad`` is copied to (O, N, L) (unless N = 1), then ``dW[g] (O/G, K) = grad[g] (O/G, N*L) @ cols[g]^T``
  on the matmul kernel (fp32 accumulation, one rounding);
- bias gradient: the ``sum`` reduction of grad over (N, H, W).

The transposed convolution is the input gradient of the convolution whose weight is ``weight`` (its forward =
the col2im path, its input gradient = the forward path, its weight gradient = the weight-gradient path with the
roles of x and grad exchanged), as in the NumPy backend. Halves multiply on tensor cores (float32 accumulation);
float32 follows ``tkernels.backends.matmul.allow_tf32``. Temporary column matrices come from the caching
allocator.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...cuda.autotune import autotune
from ...dispatch import lookup, register
from ...kernels import conv as ck
from ...kernels import matmul as mk
from ...kernels.conv import col2im_kernel, conv_gemm_kernel, im2col_kernel
from ._launch import ELEMENTWISE_BLOCK, INTERPRETED, grid1d, launch
from .linalg import MAX_BATCH, dot_code, launch_matmul
from .memory import copy_, empty, fill

BLOCK = ELEMENTWISE_BLOCK  # one element a lane; interpreted: 4096 (few programs, each costs ~0.5 ms)
# the implicit GEMM, autotuned on a GPU (tensor-core dtypes / float64); interpreted: blocks covering the problem
_TUNED = {False: autotune(ck.CONV_TC_CONFIGS, key=ck.CONV_AUTOTUNE_KEY)(conv_gemm_kernel),
          True: autotune(ck.CONV_F64_CONFIGS, key=ck.CONV_AUTOTUNE_KEY)(conv_gemm_kernel)}


def _v(a, shape, strides):
    """A view of Array ``a`` (same offset) with the given shape and strides."""
    return a._view(tuple(shape), tuple(strides), a._offset)


def _contiguous(a):
    if a.is_contiguous():
        return a
    c = empty(a._shape, a._dtype, a._device)
    copy_(c, a)
    return c


def _order(g: int, n: int):
    """Orders (group, image) pairs for a GEMM batched over both: the weight's zero image stride keeps the two from
    merging, so the matmul launcher loops over the outer one on the host and batches the inner one on the grid;
    the larger goes inside (depthwise layers: one launch per image, not per channel)."""
    return (lambda t: t) if n >= g else (lambda t: t[::-1])


def _acc_dtype(dtype):
    return _dt.float64 if dtype is _dt.float64 else _dt.float32


def _im2col(cols, col_strides, x, kh, kw, ho, wo, s, pt, pl, d) -> None:
    """``cols[n, (c*kh + i)*kw + j, oh*wo + ow]`` (through ``col_strides``) = the padded input's window values."""
    n, c, h, w = x._shape
    total = n * c * kh * kw * ho * wo
    launch(im2col_kernel, grid1d(total, BLOCK), x, cols, total, c, h, w, kh, kw, ho, wo, *x._strides, *col_strides,
           s[0], s[1], pt, pl, d[0], d[1], BLOCK=BLOCK)


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _forward(out, x, w, bias, s, pads, d, g) -> None:
    """``out (N, O, Ho, Wo) = conv(x (N, C, H, W), w (O, C/G, kh, kw)) + bias``; pads (top, bottom, left, right).
    One implicit-GEMM launch (per 65535 groups): every operand read and written in place through its strides."""
    n, _, h, wd = x._shape
    o, cg, kh, kw = w._shape
    _, _, ho, wo = out._shape
    if out.size == 0:
        return
    bs = bias._strides[0] if bias is not None else 0
    if cg == 0:  # no input channels: the bias alone
        if bias is None:
            fill(out, 0.0)
        else:
            copy_(out, _v(bias, out._shape, (0, bs, 0, 0)))
        return
    M, og, k = n * ho * wo, o // g, cg * kh * kw
    dot = dot_code(x._dtype)
    args = (M, og, k, cg, h, wd, kh, kw, ho, wo)
    geo = (*x._strides, *w._strides, *out._strides, bs, s[0], s[1], pads[0], pads[2], d[0], d[1])
    b = bias if bias is not None else out
    for g0 in range(0, g, MAX_BATCH):
        nb = min(MAX_BATCH, g - g0)
        if INTERPRETED:
            blocks = {"BLOCK_M": min(max(_pow2(M), 16), 128), "BLOCK_N": min(max(_pow2(og), 16), 128),
                      "BLOCK_K": min(max(_pow2(k), 16), 128), "GROUP_M": 8}
            grid = (-(-M // blocks["BLOCK_M"]) * -(-og // blocks["BLOCK_N"]), 1, nb)
            launch(conv_gemm_kernel, grid, x, w, b, out, *args, g0, *geo, DOT=dot, HAS_BIAS=bias is not None,
                   **blocks)
        else:
            def grid(meta, nb=nb):
                return (-(-M // meta["BLOCK_M"]) * -(-og // meta["BLOCK_N"]), 1, nb)

            launch(_TUNED[dot == mk.DOT_F64], grid, x, w, b, out, *args, g0, *geo, DOT=dot,
                   HAS_BIAS=bias is not None)


def _input_grad(dx, grad, w, bias, s, pt, pl, d, g) -> None:
    """``dx (N, C, H, W)`` = the input gradient of the convolution of weight ``w (O, C/G, kh, kw)`` whose output
    gradient is ``grad (N, O, Ho, Wo)`` (top/left padding pt, pl), plus an optional per-channel ``bias``."""
    n, c, h, wd = dx._shape
    o, cg, kh, kw = w._shape
    _, _, ho, wo = grad._shape
    if dx.size == 0:
        return
    k, L, og = cg * kh * kw, ho * wo, o // g
    acc = _acc_dtype(dx._dtype)
    dcols = empty((n, c * kh * kw, L), acc, dx._device)
    if og == 0 or L == 0:
        fill(dcols, 0.0)
    else:
        gc, wc = _contiguous(grad), _contiguous(w)
        # batch (group, image): dcols[n, g] (k, L) = W[g]^T (k, og) @ grad[n, g] (og, L)
        p = _order(g, n)
        a = _v(wc, p((g, n)) + (k, og), p((og * k, 0)) + (1, k))
        b = _v(gc, p((g, n)) + (og, L), p((og * L, o * L)) + (L, 1))
        cv = _v(dcols, p((g, n)) + (k, L), p((k * L, c * kh * kw * L)) + (L, 1))
        launch_matmul(cv, a, b, None, None, 0, dot_code(grad._dtype))
    total = dx.size
    launch(col2im_kernel, grid1d(total, BLOCK), dcols, bias if bias is not None else dcols, dx, total, c, h, wd,
           kh, kw, ho, wo, *dx._strides, bias._strides[0] if bias is not None else 0, s[0], s[1], pt, pl, d[0], d[1],
           HAS_BIAS=bias is not None, F64=acc is _dt.float64, BLOCK=BLOCK)


def _weight_grad(dw, grad, x, s, pads, d, g) -> None:
    """``dw (O, C/G, kh, kw)`` = the weight gradient of the convolution of ``x (N, C, H, W)`` whose output gradient
    is ``grad (N, O, Ho, Wo)``."""
    n, c, _, _ = x._shape
    o, cg, kh, kw = dw._shape
    _, _, ho, wo = grad._shape
    if dw.size == 0:
        return
    k, L, og = cg * kh * kw, ho * wo, o // g
    if n * L == 0:
        fill(dw, 0.0)
        return
    cols = empty((c * kh * kw, n, L), x._dtype, x._device)  # (G, K, N, L): N*L one contraction axis per group
    _im2col(cols, (L, n * L, 1), x, kh, kw, ho, wo, s, pads[0], pads[2], d)
    if n == 1:
        gt = _contiguous(grad)
    else:
        gt = empty((o, n, L), grad._dtype, grad._device)
        copy_(_v(gt, grad._shape, (L, n * L, wo, 1)), grad)
    y = dw if dw.is_contiguous() else empty(dw._shape, dw._dtype, dw._device)
    # per group: dW[g] (og, k) = grad[g] (og, N*L) @ cols[g]^T (N*L, k)
    a = _v(gt, (g, og, n * L), (og * n * L, n * L, 1))
    b = _v(cols, (g, n * L, k), (k * n * L, 1, n * L))
    launch_matmul(_v(y, (g, og, k), (og * k, k, 1)), a, b, None, None, 0, dot_code(x._dtype))
    if y is not dw:
        copy_(dw, y)


def _bias_grad(db, grad) -> None:
    if db.size == 0:
        return
    if grad.size == 0:
        fill(db, 0.0)
        return
    lookup("sum", grad._device)(db, grad, (0, 2, 3), _acc_dtype(grad._dtype))


@register("conv2d", "triton")
def conv2d(out, x, weight, bias, stride, padding, dilation, groups) -> None:
    _forward(out, x, weight, bias, stride, padding, dilation, groups)


@register("conv2d_backward", "triton")
def conv2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, dilation, groups) -> None:
    if dx is not None:
        _input_grad(dx, grad, weight, None, stride, padding[0], padding[2], dilation, groups)
    if dweight is not None:
        _weight_grad(dweight, grad, x, stride, padding, dilation, groups)
    if dbias is not None:
        _bias_grad(dbias, grad)


@register("conv_transpose2d", "triton")
def conv_transpose2d(out, x, weight, bias, stride, padding, output_padding, groups, dilation) -> None:
    # the input gradient of the convolution of `out` with `weight` whose output gradient is x
    _input_grad(out, x, weight, bias, stride, padding[0], padding[1], dilation, groups)


@register("conv_transpose2d_backward", "triton")
def conv_transpose2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, output_padding, groups,
                              dilation) -> None:
    pads = (padding[0], padding[0], padding[1], padding[1])
    if dx is not None:  # the forward convolution of the gradient
        _forward(dx, grad, weight, None, stride, pads, dilation, groups)
    if dweight is not None:  # x plays the output gradient, grad the input
        _weight_grad(dweight, x, grad, stride, pads, dilation, groups)
    if dbias is not None:
        _bias_grad(dbias, grad)
