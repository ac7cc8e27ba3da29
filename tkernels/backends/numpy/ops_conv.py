"""Convolutions on NumPy (signatures in ``tkernels/ops/conv.py``).

im2col: a strided window view of the padded input (no copy) becomes one (groups, N*Ho*Wo, C_in/g*kH*kW) patch
matrix in a single reshape, and one batched matmul per call multiplies it with the weights. The input
gradient (and the transposed convolution, which is the same computation) multiplies the weights with the
output gradient into per-offset columns and accumulates them into the padded canvas with one strided add per
kernel offset (a loop over kH * kW, never over pixels or the batch). float16/bfloat16 compute in float32.
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


def _pad(x: np.ndarray, top: int, bottom: int, left: int, right: int) -> np.ndarray:
    if not (top or bottom or left or right):
        return x
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + top + bottom, w + left + right), x.dtype)
    xp[:, :, top:top + h, left:left + w] = x
    return xp


def _cols(xp: np.ndarray, g: int, kh: int, kw: int, s, d, ho: int, wo: int) -> np.ndarray:
    """Patches of the padded input (N, C, Hp, Wp) as a (G, N*ho*wo, C/G*kh*kw) matrix per group."""
    n, c = xp.shape[:2]
    cg = c // g
    s0, s1, s2, s3 = xp.strides
    win = as_strided(xp, (n, g, cg, ho, wo, kh, kw),
                     (s0, s1 * cg, s1, s2 * s[0], s3 * s[1], s2 * d[0], s3 * d[1]), writeable=False)
    return win.transpose(1, 0, 3, 4, 2, 5, 6).reshape(g, n * ho * wo, cg * kh * kw)


def _grad_t(gr: np.ndarray, g: int) -> np.ndarray:
    """An output gradient (N, O, Ho, Wo) as (G, O/G, N*Ho*Wo)."""
    n, o, ho, wo = gr.shape
    return gr.reshape(n, g, o // g, ho * wo).transpose(1, 2, 0, 3).reshape(g, o // g, n * ho * wo)


def _wmat(w: np.ndarray, g: int) -> np.ndarray:
    """A weight (O, Cg, kh, kw) as (G, O/G, Cg*kh*kw)."""
    o, cg, kh, kw = w.shape
    return w.reshape(g, o // g, cg * kh * kw)


def _conv(xp: np.ndarray, w: np.ndarray, g: int, s, d, ho: int, wo: int) -> np.ndarray:
    """The convolution of a padded input as (G, N*ho*wo, O/G)."""
    _, _, kh, kw = w.shape
    return np.matmul(_cols(xp, g, kh, kw, s, d, ho, wo), _wmat(w, g).transpose(0, 2, 1))


def _store_conv(out, y: np.ndarray, bias, g: int) -> None:
    """Write (G, N*ho*wo, O/G) results (+ bias) into the (N, O, ho, wo) output."""
    n, o, ho, wo = out.shape
    if bias is not None:
        y += _c(bias).reshape(g, 1, o // g)
    np.copyto(npv(out).reshape(n, g, o // g, ho, wo), y.reshape(g, n, ho, wo, o // g).transpose(1, 0, 4, 2, 3),
              casting="unsafe")


def _col2im(gt: np.ndarray, w: np.ndarray, g: int, s, d, canvas, crop, ho: int, wo: int) -> np.ndarray:
    """The input gradient of a convolution: weights^T @ (G, O/G, N*ho*wo) gradient columns, accumulated per
    kernel offset into a zero canvas (N, C, Hc, Wc), then cropped to ``crop`` = (top, left, H, W)."""
    o, cg, kh, kw = w.shape
    n, c, hc, wc = canvas
    dcols = np.matmul(_wmat(w, g).transpose(0, 2, 1), gt).reshape(g, cg, kh, kw, n, ho, wo)
    acc = np.zeros((n, g, cg, hc, wc), dcols.dtype)
    he, we = s[0] * (ho - 1) + 1, s[1] * (wo - 1) + 1
    for i in range(kh):
        for j in range(kw):
            r, q = i * d[0], j * d[1]
            acc[:, :, :, r:r + he:s[0], q:q + we:s[1]] += dcols[:, :, i, j].transpose(2, 0, 1, 3, 4)
    t, left, h, wd = crop
    return acc.reshape(n, c, hc, wc)[:, :, t:t + h, left:left + wd]


@register("conv2d", "numpy")
def conv2d(out, x, weight, bias, stride, padding, dilation, groups) -> None:
    _, _, ho, wo = out.shape
    y = _conv(_pad(_c(x), *padding), _c(weight), groups, stride, dilation, ho, wo)
    _store_conv(out, y, bias, groups)


@register("conv2d_backward", "numpy")
def conv2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, dilation, groups) -> None:
    gr = _c(grad)
    n, _, ho, wo = gr.shape
    if dx is not None or dweight is not None:
        gt = _grad_t(gr, groups)
        xv, wv = _c(x), _c(weight)
        if dx is not None:
            _, c, h, w = xv.shape
            pt, pb, pl, pr = padding
            res = _col2im(gt, wv, groups, stride, dilation, (n, c, h + pt + pb, w + pl + pr), (pt, pl, h, w), ho, wo)
            np.copyto(npv(dx), res, casting="unsafe")
        if dweight is not None:
            _, _, kh, kw = wv.shape
            cols = _cols(_pad(xv, *padding), groups, kh, kw, stride, dilation, ho, wo)
            np.copyto(npv(dweight), np.matmul(gt, cols).reshape(wv.shape), casting="unsafe")
    if dbias is not None:
        np.copyto(npv(dbias), gr.sum(axis=(0, 2, 3)), casting="unsafe")


@register("conv_transpose2d", "numpy")
def conv_transpose2d(out, x, weight, bias, stride, padding, output_padding, groups, dilation) -> None:
    # the transposed convolution is the input gradient of the convolution whose weight is `weight`
    xv = _c(x)
    n, c_out, ho, wo = out.shape
    _, _, h, w = xv.shape
    ph, pw = padding
    res = _col2im(_grad_t(xv, groups), _c(weight), groups, stride, dilation, (n, c_out, ho + 2 * ph, wo + 2 * pw),
                  (ph, pw, ho, wo), h, w)
    if bias is not None:
        res = res + _c(bias)[:, None, None]
    np.copyto(npv(out), res, casting="unsafe")


@register("conv_transpose2d_backward", "numpy")
def conv_transpose2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, output_padding, groups,
                              dilation) -> None:
    gr = _c(grad)
    if dx is not None or dweight is not None:
        xv, wv = _c(x), _c(weight)
        _, _, h, w = xv.shape
        _, _, kh, kw = wv.shape
        ph, pw = padding
        gp = _pad(gr, ph, ph, pw, pw)
        if dx is not None:  # the forward convolution of the gradient
            _store_conv(dx, _conv(gp, wv, groups, stride, dilation, h, w), None, groups)
        if dweight is not None:
            cols = _cols(gp, groups, kh, kw, stride, dilation, h, w)
            np.copyto(npv(dweight), np.matmul(_grad_t(xv, groups), cols).reshape(wv.shape), casting="unsafe")
    if dbias is not None:
        np.copyto(npv(dbias), gr.sum(axis=(0, 2, 3)), casting="unsafe")
