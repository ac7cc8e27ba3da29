"""Convolutions on NumPy (signatures in ``tkernels/ops/conv.py``).

One BLAS GEMM per layer and direction on a "K-major" im2col: the windows of the padded input, a strided view
(no copy), are copied once into a (groups, C_in/g * kH * kW, columns) patch matrix. The columns are ordered
(N, Ho, Wo) from an (N, C, Hp, Wp) canvas when outputs are 16 or more wide, and (Ho, Wo, N) from a planes-last
(C, Hp, Wp, N) canvas below that, so the copy's contiguous runs stay long (Wo or Wo*N values). Copying the
patches of 64x16x10x10 (3x3, 8x8 out) takes 0.65 ms pixel-major ((N*Ho*Wo, C*kH*kW), the previous layout),
0.26 ms batch-major K and 0.04 ms planes-last (one shared core). Then

* forward: ``W (g, O/g, K) @ cols (g, K, columns)``, stored transposed to (N, O, Ho, Wo) with the bias in the
  same pass;
* weight gradient: ``grad^T (g, O/g, columns) @ cols^T``, the transposed operand handed to BLAS as a flag;
* input gradient at stride 1 (and the transposed convolution, the same computation): a forward convolution of
  the gradient, padded to full size, with the flipped weights; at other strides ``W^T @ grad^T`` gives
  per-offset columns, accumulated into a zero canvas with one strided add per kernel offset (a loop over
  kH * kW, never over pixels or the batch), then cropped and transposed to (N, C, H, W) in one copy.

float16/bfloat16 compute in float32.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...dispatch import register
from ._util import HALF_NP, npv


def _c(x) -> np.ndarray:
    """The compute view of an Array: float32 for half dtypes, else the NumPy view itself."""
    v = npv(x)
    return v.astype(np.float32) if v.dtype in HALF_NP else v


def _planes_last(wo: int) -> bool:
    """The layout for a convolution whose columns are ``wo`` wide: planes-last below 16 (short rows make the
    batch-major copies crawl), batch-major above (no transposing copies of the input and output: 150 ms vs
    168 ms for the 32x64x32x32 3x3 forward + backward, one shared core)."""
    return wo < 16


def _canvas(x: np.ndarray, top: int, bottom: int, left: int, right: int, last: bool) -> np.ndarray:
    """(N, C, H, W) ``x`` zero-padded: (C, Hp, Wp, N) when ``last`` (planes-last), else (N, C, Hp, Wp)."""
    n, c, h, w = x.shape
    if not (top or bottom or left or right):
        return np.ascontiguousarray(x.transpose(1, 2, 3, 0)) if last else x
    hp, wp = h + top + bottom, w + left + right
    if last:
        xp = np.zeros((c, hp, wp, n), x.dtype)
        xp[:, top:top + h, left:left + w] = x.transpose(1, 2, 3, 0)
    else:
        xp = np.zeros((n, c, hp, wp), x.dtype)
        xp[:, :, top:top + h, left:left + w] = x
    return xp


def _cols(xp: np.ndarray, g: int, kh: int, kw: int, s, d, ho: int, wo: int, last: bool) -> np.ndarray:
    """Patches of a ``_canvas`` as a (G, C/G*kh*kw, columns) matrix per group; the columns ordered (ho, wo, N)
    when ``last``, else (N, ho, wo)."""
    if last:
        c, _, _, n = xp.shape
        sc, sh, sw, sn = xp.strides
        shape, strides = (ho, wo, n), (sh * s[0], sw * s[1], sn)
    else:
        n, c = xp.shape[:2]
        sn, sc, sh, sw = xp.strides
        shape, strides = (n, ho, wo), (sn, sh * s[0], sw * s[1])
    cg = c // g
    win = as_strided(xp, (g, cg, kh, kw) + shape, (sc * cg, sc, sh * d[0], sw * d[1]) + strides, writeable=False)
    return win.reshape(g, cg * kh * kw, n * ho * wo)


def _grad_t(gr: np.ndarray, g: int, last: bool) -> np.ndarray:
    """An output gradient (N, O, Ho, Wo) as (G, O/G, columns) (one copy of the gradient's size)."""
    n, o, ho, wo = gr.shape
    return np.ascontiguousarray(gr.transpose((1, 2, 3, 0) if last else (1, 0, 2, 3))).reshape(g, o // g, -1)


def _wmat(w: np.ndarray, g: int) -> np.ndarray:
    """A weight (O, Cg, kh, kw) as (G, O/G, Cg*kh*kw) (a view)."""
    o, cg, kh, kw = w.shape
    return w.reshape(g, o // g, cg * kh * kw)


def _conv(xp: np.ndarray, w: np.ndarray, g: int, s, d, ho: int, wo: int, last: bool) -> np.ndarray:
    """The convolution of a ``_canvas`` as (G, O/G, columns)."""
    _, _, kh, kw = w.shape
    return np.matmul(_wmat(w, g), _cols(xp, g, kh, kw, s, d, ho, wo, last))


def _store_conv(out, y: np.ndarray, bias, last: bool) -> None:
    """Write (G, O/G, columns) results (+ bias) into the (N, O, ho, wo) output, in one pass."""
    n, o, ho, wo = out.shape
    src = y.reshape(o, ho, wo, n).transpose(3, 0, 1, 2) if last else y.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    dst = npv(out)
    if bias is None:
        np.copyto(dst, src, casting="unsafe")
    elif dst.dtype == y.dtype:
        np.add(src, _c(bias)[:, None, None], out=dst)
    else:
        np.copyto(dst, src + _c(bias)[:, None, None], casting="unsafe")


def _col2im(gt: np.ndarray, w: np.ndarray, g: int, s, d, canvas, crop, ho: int, wo: int, last: bool) -> np.ndarray:
    """The input gradient of a convolution: weights^T @ (G, O/G, columns) gradient columns, accumulated per
    kernel offset into a zero canvas of (N, C, Hc, Wc) = ``canvas`` (laid out (C, Hc, Wc, N) when ``last``, else
    (C, N, Hc, Wc)); returns the (N, C, H, W) view of the ``crop`` = (top, left, H, W) region."""
    o, cg, kh, kw = w.shape
    n, c, hc, wc = canvas
    cols = (ho, wo, n) if last else (n, ho, wo)
    dcols = np.matmul(_wmat(w, g).transpose(0, 2, 1), gt).reshape((g * cg, kh, kw) + cols)
    acc = np.zeros((c, hc, wc, n) if last else (c, n, hc, wc), dcols.dtype)
    he, we = s[0] * (ho - 1) + 1, s[1] * (wo - 1) + 1
    t, left, h, wd = crop
    for i in range(kh):
        for j in range(kw):
            r, q = i * d[0], j * d[1]
            rs, cs = slice(r, r + he, s[0]), slice(q, q + we, s[1])
            if last:
                acc[:, rs, cs] += dcols[:, i, j]
            else:
                acc[:, :, rs, cs] += dcols[:, i, j]
    if last:
        return acc[:, t:t + h, left:left + wd].transpose(3, 0, 1, 2)
    return acc[:, :, t:t + h, left:left + wd].transpose(1, 0, 2, 3)


def _flipped(w: np.ndarray, g: int) -> np.ndarray:
    """The weight of the adjoint convolution: (O, Cg, kh, kw) -> (C, O/G, kh, kw), taps reversed."""
    o, cg, kh, kw = w.shape
    return w.reshape(g, o // g, cg, kh, kw).transpose(0, 2, 1, 3, 4)[:, :, :, ::-1, ::-1].reshape(g * cg, o // g,
                                                                                                 kh, kw)


def _adjoint(out, gr: np.ndarray, w: np.ndarray, g: int, s, d, pt: int, pl: int) -> bool:
    """Write into ``out`` (N, C, H, W) the input gradient for the (N, O, Ho, Wo) output gradient ``gr`` of a
    convolution whose input was padded by ``pt`` rows on top and ``pl`` columns on the left. With stride 1 that
    is a forward convolution of the gradient, padded to full size, with the flipped weights: one im2col copy
    and one GEMM, no per-offset accumulation (53 ms -> 38 ms for 32x64x32x32, 3x3, and 0.76 ms -> 0.71 ms for
    64x32x8x8 -> 16 channels, one shared core). Returns False (nothing written) when the stride is not 1 or
    the gradient would have to be cropped rather than padded; col2im then does it."""
    if tuple(s) != (1, 1):
        return False
    _, _, kh, kw = w.shape
    _, _, h, wd = out.shape
    _, _, ho, wo = gr.shape
    top, left = d[0] * (kh - 1) - pt, d[1] * (kw - 1) - pl
    bottom, right = h + d[0] * (kh - 1) - ho - top, wd + d[1] * (kw - 1) - wo - left
    if min(top, left, bottom, right) < 0:
        return False
    last = _planes_last(wd)
    y = _conv(_canvas(gr, top, bottom, left, right, last), _flipped(w, g), g, (1, 1), d, h, wd, last)
    _store_conv(out, y, None, last)
    return True


@register("conv2d", "numpy")
def conv2d(out, x, weight, bias, stride, padding, dilation, groups) -> None:
    _, _, ho, wo = out.shape
    last = _planes_last(wo)
    y = _conv(_canvas(_c(x), *padding, last), _c(weight), groups, stride, dilation, ho, wo, last)
    _store_conv(out, y, bias, last)


@register("conv2d_backward", "numpy")
def conv2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, dilation, groups) -> None:
    gr = _c(grad)
    n, _, ho, wo = gr.shape
    if dx is not None or dweight is not None:
        xv, wv = _c(x), _c(weight)
        pt, pb, pl, pr = padding
        last = _planes_last(wo)
        done = dx is None or _adjoint(dx, gr, wv, groups, stride, dilation, pt, pl)
        gt = _grad_t(gr, groups, last) if dweight is not None or not done else None
        if not done:
            _, c, h, w = xv.shape
            res = _col2im(gt, wv, groups, stride, dilation, (n, c, h + pt + pb, w + pl + pr), (pt, pl, h, w), ho, wo,
                          last)
            np.copyto(npv(dx), res, casting="unsafe")
        if dweight is not None:
            _, _, kh, kw = wv.shape
            cols = _cols(_canvas(xv, *padding, last), groups, kh, kw, stride, dilation, ho, wo, last)
            np.copyto(npv(dweight), np.matmul(gt, cols.transpose(0, 2, 1)).reshape(wv.shape), casting="unsafe")
    if dbias is not None:
        np.copyto(npv(dbias), gr.sum(axis=(0, 2, 3)), casting="unsafe")


@register("conv_transpose2d", "numpy")
def conv_transpose2d(out, x, weight, bias, stride, padding, output_padding, groups, dilation) -> None:
    # the transposed convolution is the input gradient of the convolution whose weight is `weight`
    xv = _c(x)
    n, c_out, ho, wo = out.shape
    _, _, h, w = xv.shape
    ph, pw = padding
    ov = npv(out)
    if (bias is None or ov.dtype == xv.dtype) and _adjoint(out, xv, _c(weight), groups, stride, dilation, ph, pw):
        if bias is not None:
            ov += _c(bias)[:, None, None]
        return
    last = _planes_last(w)
    res = _col2im(_grad_t(xv, groups, last), _c(weight), groups, stride, dilation,
                  (n, c_out, ho + 2 * ph, wo + 2 * pw), (ph, pw, ho, wo), h, w, last)
    if bias is None:
        np.copyto(ov, res, casting="unsafe")
    elif ov.dtype == res.dtype:
        np.add(res, _c(bias)[:, None, None], out=ov)
    else:
        np.copyto(ov, res + _c(bias)[:, None, None], casting="unsafe")


@register("conv_transpose2d_backward", "numpy")
def conv_transpose2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, output_padding, groups,
                              dilation) -> None:
    gr = _c(grad)
    if dx is not None or dweight is not None:
        xv, wv = _c(x), _c(weight)
        _, _, h, w = xv.shape
        _, _, kh, kw = wv.shape
        ph, pw = padding
        last = _planes_last(w)
        gp = _canvas(gr, ph, ph, pw, pw, last)
        if dx is not None:  # the forward convolution of the gradient
            _store_conv(dx, _conv(gp, wv, groups, stride, dilation, h, w, last), None, last)
        if dweight is not None:
            cols = _cols(gp, groups, kh, kw, stride, dilation, h, w, last)
            np.copyto(npv(dweight), np.matmul(_grad_t(xv, groups, last), cols.transpose(0, 2, 1)).reshape(wv.shape),
                      casting="unsafe")
    if dbias is not None:
        np.copyto(npv(dbias), gr.sum(axis=(0, 2, 3)), casting="unsafe")
