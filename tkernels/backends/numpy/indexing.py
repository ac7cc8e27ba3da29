"""Indexing ops on NumPy: gather/scatter along an axis, index_put, masked fills and selections, nonzero, one_hot.

Every op checks its indices (one min/max pass) before it reads or writes, and raises the IndexError of
``tkernels.indexing.oob_message``; half-float accumulation goes through float32.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...indexing import oob_message
from ...validation import OpIndexError, OpValueError, describe
from ._util import HALF_NP, npv, wrap


def _check(op, iv: np.ndarray, size: int, axis: int, wrap_neg: bool, x) -> None:
    """IndexError when an index is outside ``[-size, size)`` (``wrap_neg``) or ``[0, size)``."""
    if iv.size == 0:
        return
    if 0 in iv.strides:  # a broadcast index: check each distinct element once
        iv = iv[tuple(slice(0, 1) if st == 0 else slice(None) for st in iv.strides)]
    if wrap_neg:
        if iv.min() >= -size and iv.max() < size:
            return
        lo = -size
    else:  # one pass: negative indices turn into huge unsigned ones
        if iv.view(_UNSIGNED[iv.dtype.itemsize]).max() < size:
            return
        lo = 0
    bad = iv[(iv < lo) | (iv >= size)].flat[0]
    raise OpIndexError(oob_message(op, int(bad), axis, size, x, wrap_neg))


_UNSIGNED = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


def _only_along(iv: np.ndarray, axis: int):
    """The 1-D index when ``iv`` varies along ``axis`` only (stride 0 elsewhere), else None."""
    st = iv.strides
    for d in range(iv.ndim):
        if d != axis and st[d] != 0 and iv.shape[d] != 1:
            return None
    return iv[tuple(slice(None) if d == axis else 0 for d in range(iv.ndim))]


def _along_key(iv: np.ndarray, axis: int) -> tuple:
    """The fancy-index tuple addressing ``a[..., iv[...], ...]`` at every position of ``iv``."""
    n = iv.ndim
    return tuple(iv if d == axis else np.arange(iv.shape[d]).reshape([-1 if e == d else 1 for e in range(n)])
                 for d in range(n))


def _add_at(tv: np.ndarray, key, v) -> None:
    """``tv[key] += v`` with repeated indices accumulated; float16/bfloat16 sum in float32."""
    if tv.dtype in HALF_NP:
        acc = tv.astype(np.float32)
        _add_at(acc, key, v.astype(np.float32) if isinstance(v, np.ndarray) else v)
        np.copyto(tv, acc, casting="unsafe")
    elif key is None:
        np.add(tv, v, out=tv, casting="unsafe")
    else:
        np.add.at(tv, key, v)


@register("gather", "numpy")
def gather(out, x, index, axis, wrap, op) -> None:
    iv = npv(index)
    i1 = _only_along(iv, axis) if iv.size else None
    _check(op, iv if i1 is None else i1, x.shape[axis], axis, wrap, x)
    if out.size == 0:
        return
    xv, ov = npv(x), npv(out)
    if i1 is not None:  # take/index_select/embedding: one 1-D index, no per-element index arrays
        np.take(xv, i1, axis=axis, out=ov, mode="wrap" if wrap else "clip")
    else:
        np.copyto(ov, np.take_along_axis(xv, iv, axis))


@register("scatter", "numpy")
def scatter(target, index, src, axis, reduce, wrap, op) -> None:
    iv = npv(index)
    if iv.size == 0:
        return
    i1 = _only_along(iv, axis)
    _check(op, iv if i1 is None else i1, target.shape[axis], axis, wrap, target)
    tv = npv(target)
    sv = npv(src) if isinstance(src, Array) else _dt.literal(src, target.dtype, op)
    key = (slice(None),) * axis + (i1,) if i1 is not None else _along_key(iv, axis)
    if reduce is None:
        tv[key] = sv
    else:
        _add_at(tv, key, sv)


@register("index_put", "numpy")
def index_put(x, indices, values, accumulate, op) -> None:
    xv = npv(x)
    ivs = tuple(npv(i) for i in indices)
    for d, iv in enumerate(ivs):
        _check(op, iv, xv.shape[d], d, True, x)
    v = npv(values) if isinstance(values, Array) else _dt.literal(values, x.dtype, op)
    if accumulate:
        _add_at(xv, ivs or None, v)
    else:
        xv[ivs or ...] = v


@register("masked_fill", "numpy")
def masked_fill(out, mask, value) -> None:
    ov = npv(out)
    v = npv(value).astype(ov.dtype) if isinstance(value, Array) else _dt.literal(value, out.dtype, "masked_fill")
    np.copyto(ov, v, where=npv(mask))


@register("masked_select", "numpy")
def masked_select(x, mask) -> Array:
    return wrap(np.ascontiguousarray(npv(x)[npv(mask)]), x.dtype)


@register("nonzero", "numpy")
def nonzero(x) -> Array:
    xv = npv(x)
    if x.dtype.kind == "f":
        xv = xv != 0  # NaN counts as nonzero; also avoids asking ml_dtypes for a nonzero function
    return wrap(np.ascontiguousarray(np.argwhere(xv), dtype=np.int64))


@register("one_hot", "numpy")
def one_hot(x, num_classes) -> Array:
    xv = npv(x)
    if num_classes < 0:
        if xv.size == 0:
            raise OpValueError(f"one_hot: cannot infer the number of classes from an empty x ({describe(x)}); "
                               f"hint: pass num_classes")
        num_classes = max(int(xv.max()) + 1, 0)
    if xv.size and (xv.min() < 0 or xv.max() >= num_classes):
        bad = xv[(xv < 0) | (xv >= num_classes)].flat[0]
        raise OpValueError(f"one_hot: class value {int(bad)} is out of range [0, {num_classes}) ({describe(x)}, "
                           f"num_classes={num_classes})")
    out = np.zeros(xv.shape + (num_classes,), np.int64)
    if xv.size:
        np.put_along_axis(out, xv[..., None].astype(np.intp), 1, axis=-1)
    return wrap(out)
