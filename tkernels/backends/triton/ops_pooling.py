"""Pooling and resizing on cuda (``tkernels/kernels/pool.py``); signatures as the NumPy backend
(``tkernels/ops/pooling.py``)::

    max_pool2d(out, indices, x, kernel_size, stride, padding, dilation)     # indices may be None
    max_pool2d_backward(dx, grad, indices, kernel_size, stride, padding, dilation)
    avg_pool2d(out, x, kernel_size, stride, padding, count_include_pad, divisor_override)
    avg_pool2d_backward(dx, grad, kernel_size, stride, padding, count_include_pad, divisor_override)
    adaptive_avg_pool2d(out, x)
    adaptive_avg_pool2d_backward(dx, grad)
    interpolate(out, x, mode, align_corners, scales)
    interpolate_backward(dx, grad, mode, align_corners, scales)

Inputs (x, grad, indices) are read in place through their strides; outputs are the entries' fresh contiguous
arrays. Max/avg pooling and their gradients are one launch each (the gradients gather: no atomics).
Adaptive pooling and resizing are separable: one ``resample_kernel`` launch along H, then one along W (an fp32,
or fp64, intermediate between them, as the NumPy backend's ``mh @ x @ mw.T``); an axis whose map is the identity
is skipped (a resize to the same size is a copy, as in PyTorch). ``max_pool2d_backward`` adds the gradient of each
output to the element its index names when that element lies in the output's window (always so for indices from
``max_pool2d``); unlike the NumPy backend it does not read the indices back to raise on out-of-range values (a host
round trip): such entries are ignored.
"""

from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...dispatch import register
from ...kernels.pool import (
    AREA,
    AVG,
    LINEAR,
    LINEAR_ALIGNED,
    MAX,
    NEAREST,
    NEAREST_EXACT,
    pool2d_bwd_kernel,
    pool2d_kernel,
    resample_kernel,
)
from ._launch import INTERPRETED, f64_bits, grid1d, launch
from .memory import copy_, empty, fill

BLOCK = 4096 if INTERPRETED else 256
_MODES = {"nearest": NEAREST, "nearest-exact": NEAREST_EXACT, "area": AREA}


def _run(kernel, total, *args, **meta):
    if INTERPRETED:
        with np.errstate(all="ignore"):
            return launch(kernel, grid1d(total, BLOCK), *args, BLOCK=BLOCK, **meta)
    return launch(kernel, grid1d(total, BLOCK), *args, BLOCK=BLOCK, **meta)


def _f64(*arrays) -> bool:
    return any(a._dtype is _dt.float64 for a in arrays)


def _div_mode(count_include_pad, divisor_override):
    if divisor_override is not None:
        return 2, int(divisor_override)
    return (0 if count_include_pad else 1), 0


# ------------------------------------------------------------------------------------------- window pooling
def _pool(out, idx, x, k, s, p, d, mode, div_mode, divisor) -> None:
    total = out.size
    if total == 0:
        return
    _, c, h, w = x._shape
    _, _, ho, wo = out._shape
    _run(pool2d_kernel, total, x, out, out if idx is None else idx, total, c, h, w, ho, wo, *x._strides, *k, *s, *p,
         *d, divisor, MODE=mode, INDICES=idx is not None, DIV_MODE=div_mode, F64=_f64(x))


def _pool_bwd(dx, grad, idx, k, s, p, d, mode, div_mode, divisor) -> None:
    total = dx.size
    if total == 0:
        return
    _, c, h, w = dx._shape
    _, _, ho, wo = grad._shape
    ia = grad if idx is None else idx
    _run(pool2d_bwd_kernel, total, grad, ia, dx, total, c, h, w, ho, wo, *grad._strides, *ia._strides, *k, *s, *p,
         *d, divisor, MODE=mode, DIV_MODE=div_mode, F64=_f64(dx))


@register("max_pool2d", "triton")
def max_pool2d(out, indices, x, kernel_size, stride, padding, dilation) -> None:
    _pool(out, indices, x, kernel_size, stride, padding, dilation, MAX, 0, 0)


@register("max_pool2d_backward", "triton")
def max_pool2d_backward(dx, grad, indices, kernel_size, stride, padding, dilation) -> None:
    _pool_bwd(dx, grad, indices, kernel_size, stride, padding, dilation, MAX, 0, 0)


@register("avg_pool2d", "triton")
def avg_pool2d(out, x, kernel_size, stride, padding, count_include_pad, divisor_override) -> None:
    _pool(out, None, x, kernel_size, stride, padding, (1, 1), AVG, *_div_mode(count_include_pad, divisor_override))


@register("avg_pool2d_backward", "triton")
def avg_pool2d_backward(dx, grad, kernel_size, stride, padding, count_include_pad, divisor_override) -> None:
    _pool_bwd(dx, grad, None, kernel_size, stride, padding, (1, 1), AVG,
              *_div_mode(count_include_pad, divisor_override))


# ------------------------------------------------------------------------------------------- resampling
def _axis_map(mode, o: int, n: int, align_corners: bool, scale, f64: bool):
    """(MODE, scale as a float, identity?) of one axis: PyTorch's coordinate scale, rounded as the NumPy backend
    rounds it (fp32, or the compute dtype for bilinear)."""
    if mode == "area":
        return AREA, 1.0, o == n
    if mode == "bilinear":
        t = np.float64 if f64 else np.float32
        if align_corners:
            sc = float(t(n - 1) / t(o - 1)) if o > 1 else 1.0  # o == 1: only d = 0, whose source is 0 anyway
            return LINEAR_ALIGNED, sc, o == n
        sc = float(t(1.0 / scale) if scale else t(n) / t(o))
        return LINEAR, sc, o == n and sc == 1.0
    if mode == "nearest" and o in (n, 2 * n):
        return NEAREST, (1.0 if o == n else 0.5), o == n
    sc = float(np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o))
    return _MODES[mode], sc, o == n and sc == 1.0


def _candidates(m: int, sc: float, o: int, n: int, bwd: bool) -> int:
    """How many positions one element of y visits: the window (area forward), or the outputs that may read one
    input (backward: the exact count's bound plus two candidates of margin each side of the estimate)."""
    if m == AREA:
        return -(-n // o) + 1 if not bwd else min(o, -(-o // n) + 1)
    if not bwd:
        return 1
    if sc == 0.0:  # align_corners with one input: every output reads it
        return o
    reach = 1.0 if m in (NEAREST, NEAREST_EXACT) else 2.0
    return min(o, math.ceil(reach / sc) + 5)


def _pass(y, x, axis: int, m: int, sc: float, n: int, o: int, bwd: bool) -> None:
    """One resample_kernel launch along ``axis`` (2: H, 3: W) of 4-D ``x`` into contiguous 4-D ``y``."""
    total = y.size
    if total == 0:
        return
    _, c, h, w = y._shape
    sx = x._strides
    if axis == 2:  # (P0, P1, P2, L, Q) = (N, C, 1, H, W)
        sizes, strides = (c, 1, h, w), (sx[0], sx[1], 0, sx[2], sx[3])
    else:  # (N, C, H, W, 1)
        sizes, strides = (c, h, w, 1), (sx[0], sx[1], sx[2], sx[3], 0)
    _run(resample_kernel, total, x, y, total, *sizes, *strides, n, o, f64_bits(sc), _candidates(m, sc, o, n, bwd),
         MODE=m, BWD=bwd, F64=_f64(x, y))


def _resample(y, x, mode, align_corners, scales, bwd: bool) -> None:
    """y = Mh x Mw^T (forward: x the input) or Mh^T x Mw (backward: x the gradient), H first."""
    if y.size == 0:
        return
    f64 = _f64(x, y)
    src, dst = (y, x) if bwd else (x, y)  # the forward op's input and output shapes
    (n_h, n_w), (o_h, o_w) = src._shape[2:], dst._shape[2:]
    mh, sch, id_h = _axis_map(mode, o_h, n_h, align_corners, scales[0], f64)
    mw, scw, id_w = _axis_map(mode, o_w, n_w, align_corners, scales[1], f64)
    if id_h and id_w:
        copy_(y, x)
        return
    if id_h or id_w:
        if id_h:
            _pass(y, x, 3, mw, scw, n_w, o_w, bwd)
        else:
            _pass(y, x, 2, mh, sch, n_h, o_h, bwd)
        return
    mid_shape = (x._shape[0], x._shape[1], y._shape[2], x._shape[3])  # H resampled, W not yet
    mid = empty(mid_shape, _dt.float64 if f64 else _dt.float32, y._device)
    _pass(mid, x, 2, mh, sch, n_h, o_h, bwd)
    _pass(y, mid, 3, mw, scw, n_w, o_w, bwd)


@register("adaptive_avg_pool2d", "triton")
def adaptive_avg_pool2d(out, x) -> None:
    _resample(out, x, "area", False, (None, None), False)


@register("adaptive_avg_pool2d_backward", "triton")
def adaptive_avg_pool2d_backward(dx, grad) -> None:
    if grad.size == 0:  # no outputs (an output size of 0): no gradient
        fill(dx, 0.0)
        return
    _resample(dx, grad, "area", False, (None, None), True)


@register("interpolate", "triton")
def interpolate(out, x, mode, align_corners, scales) -> None:
    _resample(out, x, mode, align_corners, scales, False)


@register("interpolate_backward", "triton")
def interpolate_backward(dx, grad, mode, align_corners, scales) -> None:
    _resample(dx, grad, mode, align_corners, scales, True)
