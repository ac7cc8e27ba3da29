"""Sorting and searching on NumPy. Half floats compare in float32 (exact); descending stable sorts keep equal
elements in their original order by sorting the reversed axis."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import HALF_NP, npv, wrap
from .indexing import _check


def _cmp(xv: np.ndarray) -> np.ndarray:
    return xv.astype(np.float32) if xv.dtype in HALF_NP else xv


def _argsort(cv: np.ndarray, axis: int, descending: bool, stable: bool) -> np.ndarray:
    if not descending:
        return np.argsort(cv, axis=axis, kind="stable" if stable else None)
    # ascending stable sort of the reversed axis, reversed back: largest first (NaN first), and equal
    # elements in their original order
    n = cv.shape[axis]
    r = np.argsort(np.flip(cv, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(r, axis)


@register("sort", "numpy")
def sort(values, indices, x, axis, descending, stable) -> None:
    xv = npv(x)
    if xv.ndim == 0:
        if values is not None:
            np.copyto(npv(values), xv)
        if indices is not None:
            npv(indices)[...] = 0
        return
    if indices is None and not descending:
        np.copyto(npv(values), np.sort(_cmp(xv), axis=axis, kind="stable" if stable else None), casting="unsafe")
        return
    idx = _argsort(_cmp(xv), axis, descending, stable)
    if indices is not None:
        np.copyto(npv(indices), idx)
    if values is not None:
        np.copyto(npv(values), np.take_along_axis(xv, idx, axis))


@register("topk", "numpy")
def topk(values, indices, x, k, axis, largest) -> None:
    xv = npv(x)
    idx = _argsort(_cmp(xv), axis, largest, True)[(slice(None),) * axis + (slice(0, k),)]
    np.copyto(npv(indices), idx)
    np.copyto(npv(values), np.take_along_axis(xv, idx, axis))


@register("unique", "numpy")
def unique(x, axis, return_index, return_inverse, return_counts):
    xv = npv(x)
    # return_index=True makes NumPy sort stably (mergesort): equal keys, e.g. the distinct NaNs, keep their
    # order, as on cuda; without it the order of NaNs in the inverse depends on an unstable sort
    res = np.unique(_cmp(xv), return_index=True, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis, equal_nan=False)
    if not return_index:
        res = res[:1] + res[2:]
    it = iter(res[1:])
    values = wrap(np.ascontiguousarray(res[0].astype(xv.dtype, copy=False)), x.dtype)
    index = wrap(next(it).astype(np.int64)) if return_index else None
    inverse = wrap(np.ascontiguousarray(next(it).reshape(-1), dtype=np.int64)) if return_inverse else None
    counts = wrap(next(it).astype(np.int64)) if return_counts else None
    return values, index, inverse, counts


@register("searchsorted", "numpy")
def searchsorted(out, x1, x2, side, sorter, compute_dtype) -> None:
    npd = np.dtype(np.float32) if compute_dtype.numpy in HALF_NP else compute_dtype.numpy
    a = npv(x1).astype(npd, copy=False)
    b = npv(x2).astype(npd, copy=False)
    s = None
    if sorter is not None:
        s = npv(sorter)
        _check("searchsorted", s, a.shape[-1], a.ndim - 1, False, sorter)
    ov = npv(out)
    if a.ndim == 1:
        ov[...] = np.searchsorted(a, b, side=side, sorter=s)
        return
    for r in np.ndindex(a.shape[:-1]):
        ov[r] = np.searchsorted(a[r], b[r], side=side, sorter=None if s is None else s[r])
