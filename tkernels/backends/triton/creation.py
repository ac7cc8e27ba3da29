"""Ranges, eye and triangles on cuda (``tkernels/kernels/creation.py``); signatures of the NumPy backend."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ...kernels.creation import range_kernel, tri_kernel
from ._launch import ELEMENTWISE_BLOCK, collapse, f64_bits, grid1d, launch
from .memory import empty, fill

BLOCK = ELEMENTWISE_BLOCK


def _range(n, start, step, last, is_int, set_last, dtype, device):
    out = empty((n,), dtype, device)
    if n:
        if is_int:
            args = (int(start), int(step), 0)
        else:
            args = (f64_bits(float(start)), f64_bits(float(step)), f64_bits(float(last)))
        launch(range_kernel, grid1d(n, BLOCK), out, n, *args, INT=is_int, SET_LAST=set_last, BLOCK=BLOCK)
    return out


@register("arange", "triton")
def arange(n, start, step, dtype, device):
    # integer dtypes with integer bounds in int64; anything else in float64 then cast (the NumPy backend)
    is_int = dtype.kind in "iu" and all(isinstance(v, int | np.integer) for v in (start, step))
    return _range(n, start, step, 0.0, is_int, False, dtype, device)


@register("linspace", "triton")
def linspace(start, stop, num, endpoint, dtype, device):
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    return _range(num, start, step, stop, False, endpoint and num > 1, dtype, device)


@register("eye", "triton")
def eye(n, m, k, dtype, device):
    out = empty((n, m), dtype, device)
    if n and m:
        fill(out, 0)
        length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
        if length:
            off = k if k >= 0 else -k * m
            fill(out._view((length,), (m + 1,), off), 1)
    return out


def _tri(out, x, k, upper):
    n = out.size
    if n == 0:
        return
    if x._dtype.kind == "c":  # the real kernel on each part (linalg_complex.py)
        from .linalg_complex import tri_complex
        return tri_complex(_tri, out, x, k, upper)
    sizes, (xs,) = collapse(x._shape, x._strides)
    launch(tri_kernel, grid1d(n, BLOCK), x, out, n, x._shape[-2], x._shape[-1], int(k), *sizes[1:], *xs,
           UPPER=upper, BLOCK=BLOCK)


@register("tril", "triton")
def tril(out, x, k) -> None:
    _tri(out, x, k, False)


@register("triu", "triton")
def triu(out, x, k) -> None:
    _tri(out, x, k, True)
