"""Sorting and searching: sort, argsort, sort_with_indices, topk, unique_*, unique, searchsorted, isin.

Array API 2024.12 signatures and semantics for ``sort``, ``argsort``, ``unique_*`` and ``searchsorted``;
PyTorch's for ``topk``, ``unique`` and ``sort_with_indices`` (``torch.sort``'s ``(values, indices)``), with
``axis`` for ``dim``. NaNs sort last when ascending and first when descending (they count as the largest
value, like NumPy and PyTorch); ``topk`` treats them as the largest too. Indices are int64.

Backend ops:

- ``sort(values, indices, x, axis, descending, stable)``: fills ``values`` and/or ``indices`` (either may be
  None), preallocated with x's shape;
- ``topk(values, indices, x, k, axis, largest)``: the ``k`` largest (smallest) along ``axis``, in order;
- ``unique(x, axis, return_index, return_inverse, return_counts)`` → ``(values, index, inverse, counts)``
  (None for what was not asked; ``axis`` None works on the flattened x; inverse is 1-D): sorted values, each
  NaN distinct, indices of first occurrences;
- ``searchsorted(out, x1, x2, side, sorter, compute_dtype)``: ``x1`` of shape ``(..., M)`` (1-D, or matching
  ``x2``'s leading dimensions), ``out`` of x2's shape.
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

from . import dtypes as _dt
from .array import Array
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, as_int, describe, normalize_axis

__all__ = ["sort", "argsort", "sort_with_indices", "topk", "unique_values", "unique_counts", "unique_inverse",
           "unique_all", "unique", "searchsorted", "isin"]


class SortResult(NamedTuple):
    values: Array
    indices: Array


class TopKResult(NamedTuple):
    values: Array
    indices: Array


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _array(op, x) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    return x


def _ordered(op, x) -> None:
    """Sorting needs an order, which complex numbers lack (PyTorch refuses them; NumPy's lexicographic order is
    not the array API's)."""
    if x._dtype.kind == "c":
        raise OpTypeError(f"{op}: complex arrays are not supported ({describe(x)}): complex numbers have no order; "
                          f"hint: sort by abs(x), real(x) or angle(x) and take_along_axis")


def _sort(op, x, axis, descending, stable, want_values, want_indices):
    _array(op, x)
    _ordered(op, x)
    a = normalize_axis(axis, x.ndim, op)
    dev = x._device
    empty = lookup("empty", dev)
    values = empty(x._shape, x._dtype, dev) if want_values else None
    indices = empty(x._shape, _dt.int64, dev) if want_indices else None
    lookup("sort", dev)(values, indices, x, a, builtins.bool(descending), builtins.bool(stable))
    return values, indices


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The values of ``x`` sorted along ``axis`` (array API ``sort``); NaNs last (first when descending)."""
    return _sort("sort", x, axis, descending, stable, True, False)[0]


def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The int64 indices that sort ``x`` along ``axis`` (array API ``argsort``); with ``stable`` equal elements
    keep their original order, descending included."""
    return _sort("argsort", x, axis, descending, stable, False, True)[1]


def sort_with_indices(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> SortResult:
    """``torch.sort``: ``(values, indices)`` with ``values == take_along_axis(x, indices, axis=axis)``."""
    return SortResult(*_sort("sort_with_indices", x, axis, descending, stable, True, True))


def topk(x, k: int, /, *, axis: int = -1, largest: bool = True, sorted: bool = True) -> TopKResult:  # noqa: A002
    """``torch.topk``: the ``k`` largest (``largest=False``: smallest) elements along ``axis`` and their int64
    indices, in sorted order (also when ``sorted=False``, which PyTorch leaves unspecified). Ties keep their
    original order; NaN counts as the largest value."""
    _array("topk", x)
    _ordered("topk", x)
    if x._dtype.kind == "b":
        raise OpTypeError(f"topk: not supported for bool arrays ({describe(x)}); hint: convert with astype(int8)")
    a = normalize_axis(axis, x.ndim, "topk")
    k = as_int("topk", "k", k)
    size = x._shape[a] if x.ndim else 1
    if not 0 <= k <= size:
        raise OpValueError(f"topk: k={k} is out of range for axis {a} of size {size} ({describe(x)}); expected "
                           f"0 <= k <= {size}")
    x1 = x if x.ndim else x.reshape((1,))
    shape = x1._shape[:a] + (k,) + x1._shape[a + 1:]
    dev = x._device
    empty = lookup("empty", dev)
    values, indices = empty(shape, x._dtype, dev), empty(shape, _dt.int64, dev)
    lookup("topk", dev)(values, indices, x1, k, a, builtins.bool(largest))
    if x.ndim == 0 and k == 1:  # a 0-d input gives 0-d results, like torch
        values, indices = values.reshape(()), indices.reshape(())
    return TopKResult(values, indices)


def _unique(op, x, axis, index, inverse, counts):
    _array(op, x)
    if axis is not None:
        if x.ndim == 0:
            raise OpValueError(f"{op}: axis={axis} needs an array with at least one dimension, got {describe(x)}")
        axis = normalize_axis(axis, x.ndim, op)
    return lookup("unique", x._device)(x, axis, index, inverse, counts)


def unique_values(x, /) -> Array:
    """Array API ``unique_values``: the sorted unique elements of ``x`` (1-D; each NaN is distinct)."""
    return _unique("unique_values", x, None, False, False, False)[0]


def unique_counts(x, /) -> UniqueCountsResult:
    """Array API ``unique_counts``: ``(values, counts)``; counts are int64."""
    v, _, _, c = _unique("unique_counts", x, None, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /) -> UniqueInverseResult:
    """Array API ``unique_inverse``: ``(values, inverse_indices)``, ``values[inverse_indices] == x`` (x's shape)."""
    v, _, inv, _ = _unique("unique_inverse", x, None, False, True, False)
    return UniqueInverseResult(v, inv.reshape(x.shape))


def unique_all(x, /) -> UniqueAllResult:
    """Array API ``unique_all``: ``(values, indices, inverse_indices, counts)``; ``indices`` are the flat
    positions of the first occurrences, ``inverse_indices`` has x's shape."""
    v, i, inv, c = _unique("unique_all", x, None, True, True, True)
    return UniqueAllResult(v, i, inv.reshape(x.shape), c)


def unique(x, *, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           axis: int | None = None):
    """``torch.unique``: the unique elements (``axis``: the unique slices along it), always sorted; with
    ``return_inverse``/``return_counts`` a tuple ``(values, inverse, counts)`` of those asked. The inverse has
    x's shape (``axis`` None) or ``(x.shape[axis],)``."""
    ri, rc = builtins.bool(return_inverse), builtins.bool(return_counts)
    v, _, inv, c = _unique("unique", x, axis, False, ri, rc)
    if not (ri or rc):
        return v
    out = [v]
    if ri:
        out.append(inv.reshape(x.shape) if axis is None else inv)
    if rc:
        out.append(c)
    return tuple(out)


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> Array:
    """Array API ``searchsorted``: int64 insertion indices of ``x2`` into the sorted ``x1`` along its last axis.

    ``x1`` is 1-D (``x2`` any shape, or a Python number), or N-D with ``x2.shape[:-1] == x1.shape[:-1]`` like
    ``torch.searchsorted``. ``sorter``: int64/int32 indices that sort ``x1`` (its shape). ``side="right"``
    places equal values after their matches. The result has x2's shape; dtypes promote with PyTorch's rules.
    """
    _array("searchsorted", x1)
    if side not in ("left", "right"):
        raise OpValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim == 0:
        raise OpValueError(f"searchsorted: x1 must have at least one dimension, got {describe(x1)}")
    if x1._dtype.kind in "bc":
        raise OpTypeError(f"searchsorted: x1 must have a real numeric dtype, got {describe(x1)}")
    dev = x1._device
    if isinstance(x2, Array):
        if x2._device != dev:
            raise RuntimeError(f"searchsorted: x1 is on {x1.device} but x2 is on {x2.device}; hint: move one "
                               f"with .to()")
        if x2._dtype.kind in "bc":
            raise OpTypeError(f"searchsorted: x2 must have a real numeric dtype, got {describe(x2)}")
        cd = _dt.promote_types(x1._dtype, x2._dtype)
    else:
        try:
            cat = _dt._scalar_kind(x2)
        except TypeError:
            raise OpTypeError(f"searchsorted: x2 must be an Array or a Python number, got {describe(x2)}") from None
        cd = _dt.promote_weak(x1._dtype, cat)
        from .creation import full

        x2 = full((), x2, dtype=cd, device=dev)
    if x1.ndim > 1 and (x2.ndim != x1.ndim or x2._shape[:-1] != x1._shape[:-1]):
        raise OpValueError(f"searchsorted: an N-D x1 needs x2 with the same leading dimensions (x1.shape[:-1] == "
                           f"x2.shape[:-1]), got {describe(x1)} and {describe(x2)}; hint: use a 1-D x1 to search "
                           f"any x2")
    if sorter is not None:
        if not isinstance(sorter, Array) or sorter._dtype not in (_dt.int64, _dt.int32):
            raise OpTypeError(f"searchsorted: sorter must be an int64 or int32 Array, got {describe(sorter)}")
        if sorter._shape != x1._shape:
            raise OpValueError(f"searchsorted: sorter must have x1's shape {x1.shape}, got {describe(sorter)}")
        if sorter._device != dev:
            raise RuntimeError(f"searchsorted: sorter is on {sorter.device} but x1 is on {x1.device}")
    out = lookup("empty", dev)(x2._shape, _dt.int64, dev)
    lookup("searchsorted", dev)(out, x1, x2, side, sorter, cd)
    return out


def isin(x1, x2, /, *, invert: bool = False) -> Array:
    """Array API ``isin`` (2025.12; ``torch.isin``): a bool array of x1's shape, True where an element of ``x1``
    equals some element of ``x2`` (``invert``: where none does). Either may be a Python number (it takes the
    other's dtype by weak promotion), not both; arrays of different dtypes compare after promotion (PyTorch's
    rules). NaN is in nothing. On the device: ``x2`` flattened and sorted, each ``x1`` element's insertion point
    found by ``searchsorted`` and compared (no host round trip)."""
    from .creation import full, zeros
    from .elementwise import equal, logical_not, minimum
    from .indexing import take

    if not isinstance(x1, Array) and not isinstance(x2, Array):
        raise OpTypeError(f"isin: x1 or x2 must be an Array, got {describe(x1)} and {describe(x2)}")
    ref = x1 if isinstance(x1, Array) else x2
    dev = ref._device

    def _as_array(x, other):
        if isinstance(x, Array):
            if x._device != dev:
                raise RuntimeError(f"isin: x1 is on {describe(x1)} but x2 is on {describe(x2)}; hint: move one "
                                   f"with .to()")
            return x
        try:
            cat = _dt._scalar_kind(x)
        except TypeError:
            raise OpTypeError(f"isin: expected an Array or a Python number, got {describe(x)}") from None
        return full((), x, dtype=_dt.promote_weak(other._dtype, cat), device=dev)

    a = _as_array(x1, ref)
    b = _as_array(x2, ref)
    for name, x in (("x1", a), ("x2", b)):
        if x._dtype.kind == "c":
            raise OpTypeError(f"isin: {name} must have a real or bool dtype (complex numbers have no order to "
                              f"search), got {describe(x)}")
    cd = _dt.promote_types(a._dtype, b._dtype)
    if cd is _dt.bool:  # (searched as 0/1)
        cd = _dt.uint8
    a, b = a.astype(cd), b.astype(cd)
    t = sort(b.reshape((-1,)))
    if t._shape[0] == 0:
        found = zeros(a._shape, dtype=_dt.bool, device=dev)
    else:
        pos = minimum(searchsorted(t, a), t._shape[0] - 1)
        found = equal(take(t, pos.reshape((-1,)), axis=0).reshape(a._shape), a)
    return logical_not(found) if invert else found
