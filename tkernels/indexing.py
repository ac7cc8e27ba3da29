"""Indexing ops: take, take_along_axis, gather, scatter(_add), index_add, index_select, index_put, masked_fill,
masked_select, nonzero, argwhere, one_hot.

Array API names and semantics where the standard has the op (``take``, ``take_along_axis``, ``nonzero``);
PyTorch's elsewhere, with ``axis`` for ``dim``. Index arrays are int64 or int32 Arrays. The ``*_`` variants
write into ``x`` and return it; they validate everything (bounds included) before writing.

Four backend ops serve the data movement, so a GPU backend writes four kernels:

- ``gather(out, x, index, axis, wrap, op)``: ``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along
  ``axis``; ``x``, ``index`` and ``out`` have one ndim and equal sizes off ``axis`` (the entry slices and
  broadcasts; ``index`` may have stride 0 on broadcast dimensions). ``wrap``: negative indices count from the
  end (else they are out of range).
- ``scatter(target, index, src, axis, reduce, wrap, op)``: the inverse, in place into ``target``;
  ``src`` an Array of ``index``'s shape or a Python scalar; ``reduce`` None (store) or ``"add"``.
- ``index_put(x, indices, values, accumulate, op)``: ``x[indices] = values`` (or ``+=``, duplicates summed) for
  a tuple of integer index Arrays broadcast to one shape, indexing the leading dimensions of ``x``.
- ``masked_fill(out, mask, value)``: in place where ``mask`` (broadcast to ``out``) is true; ``value`` a Python
  scalar or a 0-d Array.

Out-of-range indices raise ``IndexError`` from the backend (naming the op, the axis, the index and the size),
before anything is written. Data-dependent shapes (``masked_select``, ``nonzero``, ``argwhere``, ``one_hot``
with ``num_classes=-1``) come back from the backend as new Arrays.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import dtypes as _dt
from .array import Array
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, as_int, broadcast_shapes, describe, normalize_axis

__all__ = ["take", "take_along_axis", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add",
           "index_add_", "index_select", "index_put", "index_put_", "masked_fill", "masked_fill_", "masked_select",
           "nonzero", "argwhere", "one_hot"]

_INDEX_DTYPES = (_dt.int64, _dt.int32)
_SCALARS = (builtins.bool, builtins.int, builtins.float)


def oob_message(op: str, index: int, axis: int, size: int, x, wrap: bool) -> str:
    """The message of an out-of-range index, shared by the backends."""
    lo = -size if wrap else 0
    hint = "" if wrap or index >= 0 else f"; {op} does not accept negative indices"
    return (f"{op}: index {index} is out of bounds for axis {axis} with size {size} (valid: {lo} <= index < "
            f"{size}; {describe(x)}){hint}")


# ------------------------------------------------------------------------------------------- argument checks
def _array(op: str, name: str, x) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: {name} must be an Array, got {describe(x)}")
    return x


def _index(op: str, name: str, idx, x: Array, *, allow_bool: bool = False) -> Array:
    """An integer (int64/int32) index Array on x's device."""
    if not isinstance(idx, Array):
        raise OpTypeError(f"{op}: {name} must be an integer Array (int64 or int32), got {describe(idx)}; hint: make "
                          f"one with tkernels.asarray(..., dtype=tkernels.int64)")
    d = idx._dtype
    if d is not _dt.int64 and d is not _dt.int32 and not (allow_bool and d is _dt.bool):
        kinds = "int64, int32 or bool" if allow_bool else "int64 or int32"
        raise OpTypeError(f"{op}: {name} must have dtype {kinds}, got {describe(idx)}; hint: convert with "
                          f".astype(tkernels.int64)")
    if idx._device != x._device:
        raise RuntimeError(f"{op}: {name} is on {idx.device} but x is on {x.device} ({describe(idx)}, "
                           f"{describe(x)}); hint: move it with .to(x.device)")
    return idx


def _same_dtype(op: str, name: str, v: Array, x: Array):
    if v._dtype is not x._dtype:
        raise OpTypeError(f"{op}: {name} must have the dtype of x ({x.dtype}), got {describe(v)}; hint: convert "
                          f"with .astype({x.dtype})")
    if v._device != x._device:
        raise RuntimeError(f"{op}: {name} is on {v.device} but x is on {x.device}; hint: move it with .to()")


def _is_scalar(v) -> bool:
    return type(v) in _SCALARS or type(v) is builtins.complex or isinstance(v, np.bool_ | np.number)


def _py_scalar(v):
    return (builtins.bool, builtins.int, builtins.float, builtins.complex)[_dt._scalar_kind(v)](v)


def _check_value(op: str, x: Array, v):
    """A Python scalar that ``x``'s dtype can hold (int overflow and non-finite ints are errors, like torch)."""
    v = _py_scalar(v)
    k = x._dtype.kind
    if type(v) is builtins.complex and k != "c":
        raise OpTypeError(f"{op}: cannot store the complex value {v!r} in {describe(x)}; hint: use a complex array")
    if k in "iu":
        if type(v) is builtins.float and not math.isfinite(v):
            raise OpValueError(f"{op}: cannot store {v} in an integer array ({describe(x)})")
        info = np.iinfo(x._dtype.numpy)
        if not info.min <= v <= info.max:
            raise OpValueError(f"{op}: value {v} cannot be converted to {x.dtype} without overflow "
                               f"(range [{info.min}, {info.max}]; {describe(x)})")
    return v


def _target(op: str, x: Array) -> Array:
    """``x`` as the target of an in-place op: a broadcast view (several elements in one place) is refused."""
    for n, st in zip(x._shape, x._strides):
        if st == 0 and n > 1:
            raise OpValueError(f"{op}: x is a broadcast view ({describe(x)}, strides {x.strides}) whose elements share "
                               f"memory; an in-place op cannot write it; hint: write into x.copy()")
    return x


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(shape, dtype, device)


def _copy(x: Array) -> Array:
    out = lookup("empty", x._device)(x._shape, x._dtype, x._device)
    lookup("copy_", x._device)(out, x)
    return out


def _head(x: Array, shape) -> Array:
    """The view ``x[:shape[0], :shape[1], ...]`` (slices from 0 keep strides and offset)."""
    return x if x._shape == shape else x._view(tuple(shape), x._strides, x._offset)


def _as_1d(x: Array) -> Array:
    return x.reshape((x.size,)) if x.ndim != 1 else x


def _along(index: Array, axis: int, shape) -> Array:
    """A 1-D index laid along ``axis`` and broadcast (stride 0) to ``shape``."""
    n = len(shape)
    return index._view(tuple(shape), tuple(index._strides[0] if d == axis else 0 for d in range(n)), index._offset)


# ------------------------------------------------------------------------------------------------- gathers
def _gather_along(op: str, x: Array, index1d: Array, axis: int, wrap: bool) -> Array:
    """``x`` with its ``axis`` replaced by the 1-D ``index1d`` selection."""
    shape = x._shape[:axis] + index1d._shape + x._shape[axis + 1:]
    out = _empty(shape, x._dtype, x._device)
    if out.size == 0 and index1d.size:  # nothing to gather, but the indices must still be in range; reading
        n = x._shape[axis]                # them is a host copy on cuda, made only for such empty results
        idx = index1d.numpy()
        bad = (idx < (-n if wrap else 0)) | (idx >= n)
        if bad.any():
            raise IndexError(f"{op}: index {int(idx[bad][0])} is out of bounds for axis {axis} with size {n} "
                             f"({describe(x)})")
        return out
    lookup("gather", x._device)(out, x, _along(index1d, axis, shape), axis, wrap, op)
    return out


def take(x, indices, /, *, axis: int | None = None) -> Array:
    """Elements of ``x`` at ``indices`` along ``axis`` (``None``: of the flattened ``x``); negative indices count
    from the end. Result shape ``x.shape[:axis] + indices.shape + x.shape[axis+1:]`` (array API ``take``)."""
    _array("take", "x", x)
    indices = _index("take", "indices", indices, x)
    if axis is None:
        x = _as_1d(x)
        a = 0
    else:
        if x.ndim == 0:
            x = x.reshape((1,))
        a = normalize_axis(axis, x.ndim, "take")
    out = _gather_along("take", x, _as_1d(indices), a, True)
    if indices.ndim != 1:
        out = out.reshape(x._shape[:a] + indices._shape + x._shape[a + 1:])
    return out


def index_select(x, axis: int, index) -> Array:
    """``torch.index_select``: the slices of ``x`` at the 1-D ``index`` (0 <= i < size) along ``axis``."""
    _array("index_select", "x", x)
    index = _index("index_select", "index", index, x)
    if index.ndim > 1:
        raise OpValueError(f"index_select: index must be 1-D or 0-d, got {describe(index)}")
    a = normalize_axis(axis, x.ndim, "index_select")
    if x.ndim == 0:
        if index.size != 1:
            raise OpValueError(f"index_select: a 0-d x takes a single index, got {describe(index)}")
        return _gather_along("index_select", x.reshape((1,)), _as_1d(index), 0, False).reshape(())
    return _gather_along("index_select", x, _as_1d(index), a, False)


def take_along_axis(x, indices, /, *, axis: int = -1) -> Array:
    """Array API ``take_along_axis``: ``out[..., j, ...] = x[..., indices[..., j, ...], ...]``; ``indices`` has
    x's ndim and broadcasts with ``x`` off ``axis``; negative indices count from the end."""
    _array("take_along_axis", "x", x)
    indices = _index("take_along_axis", "indices", indices, x)
    if indices.ndim != x.ndim:
        raise OpValueError(f"take_along_axis: indices must have the number of dimensions of x ({x.ndim}), got "
                           f"{describe(indices)} for {describe(x)}")
    a = normalize_axis(axis, x.ndim, "take_along_axis")
    if x.ndim == 0:
        return _gather_nd("take_along_axis", x.reshape((1,)), 0, indices.reshape((1,)), True).reshape(())
    xs, s = list(x._shape), list(indices._shape)
    xs[a] = s[a] = 1
    if xs != s:
        try:
            b = broadcast_shapes(tuple(xs), tuple(s), op="take_along_axis")
        except ValueError:
            raise OpValueError(f"take_along_axis: x and indices must broadcast together off axis {a}, got "
                               f"{describe(x)} and {describe(indices)}") from None
        x = x.broadcast_to(b[:a] + (x._shape[a],) + b[a + 1:])
        indices = indices.broadcast_to(b[:a] + (indices._shape[a],) + b[a + 1:])
    return _gather_nd("take_along_axis", x, a, indices, True)


def gather(x, axis: int, index) -> Array:
    """``torch.gather``: ``out[i][j][k] = x[index[i][j][k]][j][k]`` (for axis 0); ``index`` has x's ndim and
    ``index.shape[d] <= x.shape[d]`` off ``axis``; indices in ``[0, x.shape[axis])``. Result: index's shape."""
    _array("gather", "x", x)
    index = _index("gather", "index", index, x)
    if max(index.ndim, 1) != max(x.ndim, 1):  # a 0-d array counts as 1-d (PyTorch's rule)
        raise OpValueError(f"gather: index must have the number of dimensions of x ({x.ndim}), got "
                           f"{describe(index)}")
    a = normalize_axis(axis, x.ndim, "gather")
    shape = index._shape
    x, index = _at_least_1d(x), _at_least_1d(index)
    for d, (n, m) in enumerate(zip(index._shape, x._shape)):
        if d != a and n > m:
            raise OpValueError(f"gather: index.shape[{d}] = {n} exceeds x.shape[{d}] = {m} (only axis {a} may "
                               f"differ; {describe(index)}, {describe(x)})")
    r = _gather_nd("gather", x, a, index, False)
    return r if r._shape == shape else r.reshape(shape)


def _at_least_1d(x):
    return x.reshape((1,)) if isinstance(x, Array) and x.ndim == 0 else x


def _gather_nd(op, x, a, index, wrap):
    shape = index._shape
    out = _empty(shape, x._dtype, x._device)
    lookup("gather", x._device)(out, _head(x, shape[:a] + (x._shape[a],) + shape[a + 1:]), index, a, wrap, op)
    return out


# ------------------------------------------------------------------------------------------------ scatters
def _scatter(op: str, x, axis, index, src, reduce, inplace: bool) -> Array:
    _array(op, "x", x)
    index = _index(op, "index", index, x)
    if max(index.ndim, 1) != max(x.ndim, 1):  # a 0-d array counts as 1-d (PyTorch's rule)
        raise OpValueError(f"{op}: index must have the number of dimensions of x ({x.ndim}), got {describe(index)}")
    a = normalize_axis(axis, x.ndim, op)
    index = _at_least_1d(index)
    if isinstance(src, Array):
        _same_dtype(op, "src", src, x)
        src = _at_least_1d(src)
        if src.ndim != index.ndim:
            raise OpValueError(f"{op}: src must have the number of dimensions of index ({index.ndim}), got "
                               f"{describe(src)}")
        for d, (n, m) in enumerate(zip(index._shape, src._shape)):
            if n > m:
                raise OpValueError(f"{op}: index.shape[{d}] = {n} exceeds src.shape[{d}] = {m} ({describe(index)}, "
                                   f"{describe(src)})")
    elif reduce is None and _is_scalar(src):
        src = _check_value(op, x, src)
    else:
        raise OpTypeError(f"{op}: src must be an Array{'' if reduce else ' or a Python number'}, got {describe(src)}")
    for d, (n, m) in enumerate(zip(index._shape, x._shape)):
        if d != a and n > m:
            raise OpValueError(f"{op}: index.shape[{d}] = {n} exceeds x.shape[{d}] = {m} (only axis {a} may differ; "
                               f"{describe(index)}, {describe(x)})")
    out = _target(op, x) if inplace else _copy(x)
    shape = index._shape
    target = _at_least_1d(out)
    target = _head(target, shape[:a] + (target._shape[a],) + shape[a + 1:])
    if isinstance(src, Array):
        src = _head(src, shape)
    lookup("scatter", x._device)(target, index, src, a, reduce, False, op)
    return out


def scatter(x, axis: int, index, src) -> Array:
    """``torch.scatter`` out of place: a copy of ``x`` with ``out[index[i][j]][j] = src[i][j]`` (for axis 0).
    ``src``: an Array of x's dtype (``index.shape[d] <= src.shape[d]``) or a Python number. With repeated
    indices the value written is one of the candidates (the last on cpu)."""
    return _scatter("scatter", x, axis, index, src, None, False)


def scatter_(x, axis: int, index, src) -> Array:
    """In-place ``scatter``: writes into ``x`` and returns it."""
    return _scatter("scatter_", x, axis, index, src, None, True)


def scatter_add(x, axis: int, index, src) -> Array:
    """``torch.scatter_add`` out of place: a copy of ``x`` with ``src`` summed in at ``index`` along ``axis``
    (repeated indices accumulate; float16/bfloat16 accumulate in float32)."""
    return _scatter("scatter_add", x, axis, index, src, "add", False)


def scatter_add_(x, axis: int, index, src) -> Array:
    """In-place ``scatter_add``."""
    return _scatter("scatter_add_", x, axis, index, src, "add", True)


def _index_add(op: str, x, axis, index, source, alpha, inplace: bool) -> Array:
    _array(op, "x", x)
    index = _index(op, "index", index, x)
    _array(op, "source", source)
    _same_dtype(op, "source", source, x)
    if index.ndim > 1:
        raise OpValueError(f"{op}: index must be 1-D or 0-d, got {describe(index)}")
    a = normalize_axis(axis, x.ndim, op)
    xs, ss = x._shape or (1,), source._shape or (1,)
    n = index.size
    if len(xs) != len(ss) or any(p != q for d, (p, q) in enumerate(zip(xs, ss)) if d != a) or ss[a] != n:
        expect = xs[:a] + (n,) + xs[a + 1:]
        raise OpValueError(f"{op}: source must have shape {expect} (x's shape with axis {a} of the size of index, "
                           f"{n}), got {describe(source)} for {describe(x)}")
    if not _is_scalar(alpha):
        raise OpTypeError(f"{op}: alpha must be a number, got {describe(alpha)}")
    if x._dtype.kind != "f" and isinstance(alpha, builtins.float | np.floating):
        raise OpTypeError(f"{op}: alpha must not be a float for {x.dtype} arrays, got alpha={alpha}")
    if alpha != 1:
        from .elementwise import multiply

        source = multiply(source, _py_scalar(alpha))
    out = _target(op, x) if inplace else _copy(x)
    target = out if out.ndim else out.reshape((1,))
    src = source if source.ndim else source.reshape((1,))
    lookup("scatter", x._device)(target, _along(_as_1d(index), a, ss), src, a, "add", False, op)
    return out


def index_add(x, axis: int, index, source, *, alpha=1) -> Array:
    """``torch.index_add`` out of place: a copy of ``x`` with ``alpha * source[..., i, ...]`` added to the slice
    ``index[i]`` along ``axis`` (repeated indices accumulate; half dtypes accumulate in float32)."""
    return _index_add("index_add", x, axis, index, source, alpha, False)


def index_add_(x, axis: int, index, source, *, alpha=1) -> Array:
    """In-place ``index_add``."""
    return _index_add("index_add_", x, axis, index, source, alpha, True)


def _index_put(op: str, x, indices, values, accumulate, inplace: bool) -> Array:
    _array(op, "x", x)
    if isinstance(indices, Array) or not isinstance(indices, tuple | list):
        raise OpTypeError(f"{op}: indices must be a tuple of index Arrays, got {describe(indices)}; hint: pass "
                          f"(index,) for a single one")
    ints = []
    pos = 0
    for k, idx in enumerate(indices):
        idx = _index(op, f"indices[{k}]", idx, x, allow_bool=True)
        if idx._dtype is _dt.bool:
            if idx.ndim == 0:
                raise IndexError(f"{op}: indices[{k}] is a 0-d bool mask; hint: use masked_fill or where")
            if idx._shape != x._shape[pos:pos + idx.ndim]:
                raise IndexError(f"{op}: the shape {idx.shape} of the mask indices[{k}] does not match the shape "
                                 f"{x._shape[pos:pos + idx.ndim]} of x at dimensions {pos}.. ({describe(x)})")
            ints.extend(nonzero(idx))
            pos += idx.ndim
        else:
            ints.append(idx)
            pos += 1
    if pos > x.ndim:
        raise IndexError(f"{op}: too many indices: {pos} dimension(s) indexed in {describe(x)}")
    try:
        bshape = broadcast_shapes(*(i._shape for i in ints), op=op)
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: the index arrays could not be broadcast together, got "
                         f"{', '.join(describe(i) for i in indices)}") from None
    sel = bshape + x._shape[pos:]
    if isinstance(values, Array):
        _same_dtype(op, "values", values, x)
        if values._shape != sel:
            try:
                ok = broadcast_shapes(sel, values._shape, op=op) == sel
            except ValueError:
                ok = False
            if not ok:
                raise OpValueError(f"{op}: values of shape {values.shape} cannot be broadcast to the indexed shape "
                                   f"{sel} ({describe(values)}, {describe(x)})")
            values = values.broadcast_to(sel)
    elif _is_scalar(values):
        values = _check_value(op, x, values)
    else:
        raise OpTypeError(f"{op}: values must be an Array of x's dtype or a Python number, got {describe(values)}")
    out = _target(op, x) if inplace else _copy(x)
    lookup("index_put", x._device)(out, tuple(i if i._shape == bshape else i.broadcast_to(bshape) for i in ints),
                                   values, builtins.bool(accumulate), op)
    return out


def index_put(x, indices, values, *, accumulate: bool = False) -> Array:
    """``torch.index_put`` out of place: a copy of ``x`` with ``x[indices] = values`` (``indices``: a tuple of
    int64/int32 or bool Arrays indexing the leading dimensions); ``accumulate=True`` sums into x, repeated
    indices included. ``values`` (x's dtype) broadcasts to the indexed shape."""
    return _index_put("index_put", x, indices, values, accumulate, False)


def index_put_(x, indices, values, *, accumulate: bool = False) -> Array:
    """In-place ``index_put``."""
    return _index_put("index_put_", x, indices, values, accumulate, True)


# -------------------------------------------------------------------------------------------------- masks
def _mask(op: str, x: Array, mask) -> Array:
    if not isinstance(mask, Array) or mask._dtype is not _dt.bool:
        raise OpTypeError(f"{op}: mask must be a bool Array, got {describe(mask)}; hint: compare, e.g. x > 0")
    if mask._device != x._device:
        raise RuntimeError(f"{op}: mask is on {mask.device} but x is on {x.device}")
    return mask


def _masked_fill(op: str, x, mask, value, inplace: bool) -> Array:
    _array(op, "x", x)
    mask = _mask(op, x, mask)
    if isinstance(value, Array):
        if value.ndim != 0:
            raise OpValueError(f"{op}: value must be a number or a 0-d Array, got {describe(value)}")
        if value._device != x._device:
            if value._device.type != "cpu":
                raise RuntimeError(f"{op}: value is on {value.device} but x is on {x.device}")
            value = _check_value(op, x, value.item())
    elif _is_scalar(value):
        value = _check_value(op, x, value)
    else:
        raise OpTypeError(f"{op}: value must be a number or a 0-d Array, got {describe(value)}")
    shape = x._shape
    if mask._shape != shape:
        try:
            shape = broadcast_shapes(shape, mask._shape, op=op)
        except ValueError:
            shape = None
        if inplace and shape != x._shape or shape is None:
            raise OpValueError(f"{op}: mask of shape {mask.shape} does not broadcast to{'' if inplace else ' or with'} "
                               f"x of shape {x.shape} ({describe(mask)}, {describe(x)})")
        mask = mask.broadcast_to(shape)
    if inplace:
        out = _target(op, x)
    else:
        out = _empty(shape, x._dtype, x._device)
        lookup("copy_", x._device)(out, x if x._shape == shape else x.broadcast_to(shape))
    lookup("masked_fill", x._device)(out, mask, value)
    return out


def masked_fill(x, mask, value) -> Array:
    """``torch.masked_fill``: ``value`` where ``mask`` (bool, broadcasting with ``x``) is true, else ``x``;
    the result has x's dtype. ``value``: a number or a 0-d Array."""
    return _masked_fill("masked_fill", x, mask, value, False)


def masked_fill_(x, mask, value) -> Array:
    """In-place ``masked_fill``; ``mask`` must broadcast to x's shape."""
    return _masked_fill("masked_fill_", x, mask, value, True)


def masked_select(x, mask) -> Array:
    """``torch.masked_select``: the 1-D array of the elements of ``x`` where ``mask`` is true (both broadcast)."""
    _array("masked_select", "x", x)
    mask = _mask("masked_select", x, mask)
    if mask._shape != x._shape:
        shape = broadcast_shapes(x._shape, mask._shape, op="masked_select")
        x, mask = x.broadcast_to(shape), mask.broadcast_to(shape)
    return lookup("masked_select", x._device)(x, mask)


def argwhere(x) -> Array:
    """``torch.nonzero`` layout: an int64 array (n, x.ndim) of the indices of the nonzero elements, row-major."""
    _array("argwhere", "x", x)
    return lookup("nonzero", x._device)(x)


def nonzero(x, /) -> tuple[Array, ...]:
    """Array API ``nonzero``: a tuple of int64 arrays, one per dimension, of the indices of nonzero elements
    (row-major order). A 0-d ``x`` is an error."""
    _array("nonzero", "x", x)
    if x.ndim == 0:
        raise OpValueError(f"nonzero: x must have at least one dimension, got {describe(x)}; hint: use argwhere, or "
                           f"x.reshape((1,))")
    m = lookup("nonzero", x._device)(x)
    return tuple(m[:, d] for d in range(x.ndim))


def one_hot(x, num_classes: int = -1) -> Array:
    """``torch.nn.functional.one_hot``: int64 array ``x.shape + (num_classes,)`` with a 1 at each class value;
    ``num_classes=-1`` takes ``max(x) + 1``. Class values outside ``[0, num_classes)`` are a ValueError."""
    _array("one_hot", "x", x)
    if x._dtype is not _dt.int64 and x._dtype is not _dt.int32:
        raise OpTypeError(f"one_hot: x must hold class indices (int64 or int32), got {describe(x)}")
    n = as_int("one_hot", "num_classes", num_classes)
    if n < -1:
        raise OpValueError(f"one_hot: num_classes must be -1 (inferred) or non-negative, got {n}")
    return lookup("one_hot", x._device)(x, n)
