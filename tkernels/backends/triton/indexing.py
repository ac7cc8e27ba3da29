"""Indexing ops on cuda: gather/scatter along an axis, index_put, masked fills and selections, nonzero, one_hot.

Backend signatures are the NumPy backend's (``tkernels/indexing.py`` documents them). Kernels in
``tkernels/kernels/gather.py`` and ``tkernels/kernels/movement.py``.

Host synchronisation: none for the indices. The kernels record the first out-of-range index into the device's
error buffer (``tkernels/cuda/device_errors.py``), gather 0 and write nothing there; the ``IndexError`` the NumPy
backend raises at the op is raised at the next synchronising call (``item``, ``numpy``, ``synchronize``...),
or at the op with ``TKERNELS_SYNC_CHECKS=1`` (PyTorch has a device assertion instead, which cannot be caught).
Ops whose output size depends on the data (``nonzero``, ``masked_select``, ``one_hot`` without
``num_classes``) read one count to allocate it, as PyTorch does; ``one_hot`` without ``num_classes`` then
raises at the op.

Accumulation (``scatter_add``, ``index_add``, ``index_put(accumulate=True)``) uses atomics: float32/float64/
int32/int64 targets directly; float16/bfloat16 targets accumulate in a float32 copy, bool and 8/16-bit
integers in an int64 copy, written back after (so halves sum in float32, like the NumPy backend).
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...cuda import device_errors as _errors
from ...dispatch import lookup, register
from ...kernels import gather as gk
from ...kernels import movement as mk
from ...validation import OpValueError, describe
from ._launch import ELEMENTWISE_BLOCK, collapse, error_buffer, f64_bits, grid1d, launch
from .memory import copy_, empty, fill, to_numpy

BLOCK = ELEMENTWISE_BLOCK
_DIRECT_ADD = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


# ------------------------------------------------------------------------------------------------ helpers
def _unique_view(ix: Array) -> Array:
    """``ix`` without its broadcast (stride-0) dimensions: each distinct element once."""
    if 0 not in ix._strides:
        return ix
    shape = tuple(1 if st == 0 else s for s, st in zip(ix._shape, ix._strides))
    return ix._view(shape, ix._strides, ix._offset)


def check_indices(ix: Array, lo: int, hi: int):
    """(linear position of the first index outside [lo, hi) or None, largest index) — one device read."""
    ix = _unique_view(ix)
    n = ix.size
    flag = empty((2,), _dt.int64, ix._device)
    fill(flag._view((1,), (1,), 0), n)
    fill(flag._view((1,), (1,), 1), -(2**62))
    if n:
        sizes, (st,) = collapse(ix._shape, ix._strides)
        launch(gk.check_kernel, grid1d(n, BLOCK), ix, flag, n, lo, hi, *sizes[1:], *st, BLOCK=BLOCK)
    first, top = (int(v) for v in to_numpy(flag))
    return (None if first >= n else _element(ix, first)), top


def _element(x: Array, pos: int):
    """The value at row-major position ``pos`` of ``x`` (a one-element device read)."""
    off = x._offset
    for s, st in zip(reversed(x._shape), reversed(x._strides)):
        off += (pos % s) * st
        pos //= s
    return to_numpy(x._view((), (), off)).item()


def index_site(op: str | None, axis: int, wrap: bool) -> int:
    """The error site of an out-of-range index of ``op`` along ``axis`` (0: an internal op whose indices are in
    range by construction)."""
    return 0 if op is None else _errors.site(op, _errors.INDEX if wrap else _errors.INDEX_NO_WRAP, axis)


def _zeroed(strides, axis):
    return tuple(0 if d == axis else s for d, s in enumerate(strides))


def _value_args(value, dtype):
    """(kernel value argument, VALUE mode) of a Python scalar for a target of ``dtype``."""
    value = _dt.literal_scalar(value, dtype, "setitem")
    if dtype is _dt.float64:
        return f64_bits(value), gk.VALUE_F64_BITS
    return (int(value) if dtype.kind == "b" else value), gk.VALUE_SCALAR


def _accumulator(target: Array):
    """(array the atomics add into, write-back or None): halves → float32, narrow integers/bool → int64."""
    if target._dtype in _DIRECT_ADD:
        return target, None
    acc = empty(target._shape, _dt.float32 if target._dtype.kind == "f" else _dt.int64, target._device)
    copy_(acc, target)
    return acc, (lambda: copy_(target, acc))


def axis_op(mode, x: Array, index: Array, v, axis: int, wrap: bool, site: int = 0) -> None:
    """Launch ``axis_kernel`` over ``index``'s shape (gather: ``v`` is the output; scatter: the source); an
    out-of-range index is recorded as ``site`` (``index_site``)."""
    n = index.size
    if n == 0:
        return
    if isinstance(v, Array):
        vptr, value, vmode, vst = v, 0, gk.VALUE_ARRAY, v._strides
    else:
        (value, vmode), vptr, vst = _value_args(v, x._dtype), x, (0,) * index.ndim
    sizes, (xs, its, vs) = collapse(index._shape, _zeroed(x._strides, axis), index._strides, vst)
    launch(gk.axis_kernel, grid1d(n, BLOCK), x, index, vptr, value, n, x._shape[axis], x._strides[axis], *sizes[1:],
           *xs, *its, *vs, error_buffer(x._device), site, MODE=mode, VALUE=vmode, WRAP=wrap, BLOCK=BLOCK)


# ------------------------------------------------------------------------------------------ gather/scatter
@register("gather", "triton")
def gather(out, x, index, axis, wrap, op) -> None:
    if out.size:
        axis_op(gk.GET, x, index, out, axis, wrap, index_site(op, axis, wrap))


@register("scatter", "triton")
def scatter(target, index, src, axis, reduce, wrap, op) -> None:
    if index.size == 0:
        return
    site = index_site(op, axis, wrap)
    if isinstance(src, Array) and src._dtype is not target._dtype:
        src = src.astype(target._dtype)
    if reduce is None:
        axis_op(gk.PUT, target, index, src, axis, wrap, site)
        return
    acc, write_back = _accumulator(target)
    if isinstance(src, Array) and src._dtype is not acc._dtype:
        src = src.astype(acc._dtype)
    axis_op(gk.ADD, acc, index, src, axis, wrap, site)
    if write_back:
        write_back()


# -------------------------------------------------------------------------------------- index_put, offsets
def offsets(x: Array, indices, op: str = "index_put", axes=None) -> Array:
    """int64 offsets (in elements, from x's offset) of the rows ``x[i0[b], i1[b], ...]`` for the index arrays
    (all of one shape); a row with an index out of range for its dimension is ``gk.BAD`` (the index recorded as
    an error of ``op`` along ``axes[d]``, x's axis the array indexes; default d)."""
    bshape = indices[0]._shape if indices else ()
    nb = 1
    for s in bshape:
        nb *= s
    base = empty((nb,), _dt.int64, x._device)
    if not indices or nb == 0:
        if nb:
            fill(base, 0)
        return base
    err = error_buffer(x._device)
    for d, ix in enumerate(indices):
        sizes, (st,) = collapse(ix._shape, ix._strides)
        axis = d if axes is None or axes[d] is None else axes[d]
        launch(gk.base_kernel, grid1d(nb, BLOCK), ix, base, nb, x._shape[d], x._strides[d], *sizes[1:], *st,
               err, index_site(op, axis, True), FIRST=d == 0, BLOCK=BLOCK)
    return base


def offsets_op(mode, x: Array, base: Array, k: int, v, sel_shape, v_strides=None) -> None:
    """``offsets_kernel`` over the selection ``sel_shape`` = (index shape) + x.shape[k:]: x at base[b] + the
    trailing offset; ``v`` the output (GET, strides ``v_strides``) or the values (an Array of ``sel_shape``
    or a scalar)."""
    n = 1
    for s in sel_shape:
        n *= s
    if n == 0:
        return
    rest, rest_st = x._shape[k:], x._strides[k:]
    R = 1
    for s in rest:
        R *= s
    rsz, (rst,) = collapse(rest, rest_st)
    if isinstance(v, Array):
        vptr, value, vmode = v, 0, gk.VALUE_ARRAY
        vst = v_strides if v_strides is not None else v._strides
    else:
        (value, vmode), vptr, vst = _value_args(v, x._dtype), x, (0,) * len(sel_shape)
    ssz, (sst,) = collapse(tuple(sel_shape), tuple(vst))
    launch(gk.offsets_kernel, grid1d(n, BLOCK), x, base, vptr, value, n, R, *rsz[1:], *rst, *ssz[1:], *sst,
           MODE=mode, VALUE=vmode, BLOCK=BLOCK)


def put(x: Array, indices, values, accumulate: bool, op: str) -> None:
    """``x[indices] = values`` (or ``+=``) for int index arrays of one shape on x's leading dimensions."""
    k = len(indices)
    sel = (indices[0]._shape if indices else ()) + x._shape[k:]
    if isinstance(values, Array) and values._dtype is not x._dtype:
        values = values.astype(x._dtype)
    if not accumulate:
        offsets_op(gk.PUT, x, offsets(x, indices, op), k, values, sel)
        return
    acc, write_back = _accumulator(x)
    if isinstance(values, Array) and values._dtype is not acc._dtype:
        values = values.astype(acc._dtype)
    offsets_op(gk.ADD, acc, offsets(acc, indices, op), k, values, sel)
    if write_back:
        write_back()


@register("index_put", "triton")
def index_put(x, indices, values, accumulate, op) -> None:
    put(x, indices, values, accumulate, op)


# ------------------------------------------------------------------------------------------------- masks
@register("masked_fill", "triton")
def masked_fill(out, mask, value) -> None:
    if out.size == 0:
        return
    from ...elementwise import _compute_dtype

    if isinstance(value, Array):
        if value._dtype is not out._dtype:
            value = value.astype(out._dtype)
    else:  # rounded once to out's dtype (the where kernel computes halves in float32)
        value = _dt.literal_scalar(value, out._dtype, "masked_fill")
    lookup("where", out._device)(out, mask, value, out, _compute_dtype(out._dtype))


def select_positions(x: Array):
    """(inclusive prefix sum of ``x != 0`` in row-major order, count): the slots of a compaction."""
    n = x.size
    flags = empty((n,), _dt.int64, x._device)
    sizes, (st,) = collapse(x._shape, x._strides)
    launch(mk.flag_kernel, grid1d(n, BLOCK), x, flags, n, *sizes[1:], *st, BLOCK=BLOCK)
    pos = empty((n,), _dt.int64, x._device)
    lookup("cumulative_sum", x._device)(pos, flags, 0, _dt.int64, False)
    count = int(to_numpy(pos._view((), (), n - 1)))  # the one device read: the size of the result
    return pos, count


@register("masked_select", "triton")
def masked_select(x, mask) -> Array:
    """The selected elements, compacted on the device; the count is read back once to allocate the result."""
    n = x.size
    if n == 0:
        return empty((0,), x._dtype, x._device)
    pos, count = select_positions(mask)
    out = empty((count,), x._dtype, x._device)
    if count:
        sizes, (st,) = collapse(x._shape, x._strides)
        launch(mk.compact_kernel, grid1d(n, BLOCK), x, pos, out, n, *sizes[1:], *st, MODE=mk.VALUES, BLOCK=BLOCK)
    return out


def nonzero_linear(x: Array) -> Array:
    """int64 row-major linear positions of the nonzero elements of ``x`` (one count read)."""
    n = x.size
    if n == 0:
        return empty((0,), _dt.int64, x._device)
    pos, count = select_positions(x)
    lin = empty((count,), _dt.int64, x._device)
    if count:
        launch(mk.compact_kernel, grid1d(n, BLOCK), x, pos, lin, n, *([1] * 5), *([0] * 6), MODE=mk.LINEAR,
               BLOCK=BLOCK)
    return lin


@register("nonzero", "triton")
def nonzero(x) -> Array:
    """(count, ndim) int64 coordinates, row-major; the count is read back once to allocate them."""
    lin = nonzero_linear(x)
    count, nd = lin._shape[0], x.ndim
    out = empty((count, nd), _dt.int64, x._device)
    inner = 1
    for d in reversed(range(nd)):
        if count:
            launch(mk.unravel_kernel, grid1d(count, BLOCK), lin, out, count, nd, d, x._shape[d], inner, BLOCK=BLOCK)
        inner *= x._shape[d]
    return out


@register("one_hot", "triton")
def one_hot(x, num_classes) -> Array:
    """int64 ``x.shape + (num_classes,)``; ``num_classes=-1`` reads the largest class back (one sync, which also
    checks the classes); with ``num_classes`` a class out of range is recorded (device_errors) and left zero."""
    if num_classes < 0 and x.size == 0:
        raise OpValueError(f"one_hot: cannot infer the number of classes from an empty x ({describe(x)}); "
                           f"hint: pass num_classes")
    if x.size and num_classes < 0:
        bad, top = check_indices(x, 0, 2**62)
        if num_classes < 0:
            num_classes = max(top + 1, 0)
        if bad is not None:
            raise OpValueError(f"one_hot: class value {int(bad)} is out of range [0, {num_classes}) ({describe(x)}, "
                               f"num_classes={num_classes})")
    out = empty(x._shape + (num_classes,), _dt.int64, x._device)
    fill(out, 0)
    if x.size:  # also with num_classes=0: every class is out of range and recorded
        index = x._view(x._shape + (1,), x._strides + (0,), x._offset)
        axis_op(gk.PUT, out, index, 1, x.ndim, False, _errors.site("one_hot", _errors.ONE_HOT))
    return out


# ----------------------------------------------------------------------------------- advanced indexing
def _advanced_plan(x: Array, key, op: str):
    """Basic indices applied as a view, advanced ones (integer arrays; bool arrays as their nonzero
    coordinates, read back once) kept: (view with the advanced dimensions first, index arrays broadcast to one
    shape, the result's shape, strides mapping the view's selection order onto a result of that shape)."""
    from ...validation import broadcast_shapes

    consumed = sum(1 if not isinstance(k, Array) else (k.ndim if k._dtype is _dt.bool else 1)
                   for k in key if k is not None and k is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"{op}: too many indices for an array of {x.ndim} dimension(s): {consumed} were indexed "
                         f"({describe(x)})")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    if Ellipsis not in [k for k in key if not isinstance(k, Array)]:
        key = tuple(key) + (Ellipsis,)
    shape, strides, off = [], [], x._offset
    adv = []  # (dimension of the view, index array, axis of x)
    basic_before = None  # basic result dimensions before the first advanced entry
    entries = []  # per key entry: advanced or not (ints count as advanced next to arrays, as in NumPy)
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            entries.append(False)
        elif k is Ellipsis:
            for _ in range(x.ndim - consumed):
                shape.append(x._shape[d])
                strides.append(x._strides[d])
                d += 1
            entries.append(False)
        elif isinstance(k, slice):
            start, stop, step = k.indices(x._shape[d])
            length = len(range(start, stop, step))
            if length:
                off += start * x._strides[d]
            shape.append(length)
            strides.append(x._strides[d] * step)
            d += 1
            entries.append(False)
        elif not isinstance(k, Array):
            size = x._shape[d]
            if not -size <= k < size:
                raise IndexError(f"{op}: index {k} is out of bounds for axis {d} with size {size} ({describe(x)})")
            off += (k % size) * x._strides[d]
            d += 1
            entries.append(True)
        else:
            if basic_before is None:
                basic_before = len(shape) - len(adv)
            if k._dtype is _dt.bool and k.ndim == 0:  # a new dimension of size 1, selected or not
                cols = [_new_index(int(bool(to_numpy(k))), k._device)]
                shape.append(1)
                strides.append(0)
                axes = [None]
            elif k._dtype is _dt.bool:
                for j in range(k.ndim):
                    if k._shape[j] != x._shape[d + j]:
                        raise IndexError(f"{op}: boolean index did not match indexed array along axis {d + j}; "
                                         f"size of axis is {x._shape[d + j]} but size of corresponding boolean "
                                         f"axis is {k._shape[j]}")
                coords = nonzero(k)
                cols = [coords[:, j] for j in range(k.ndim)]
                axes = list(range(d, d + k.ndim))
                for j in range(k.ndim):
                    shape.append(x._shape[d + j])
                    strides.append(x._strides[d + j])
                d += k.ndim
            else:
                cols, axes = [k], [d]
                shape.append(x._shape[d])
                strides.append(x._strides[d])
                d += 1
            first = len(shape) - len(cols)  # the view dimensions the columns index
            adv.extend((first + j, c, a) for j, (c, a) in enumerate(zip(cols, axes)))
            entries.append(True)
    while d < x.ndim:
        shape.append(x._shape[d])
        strides.append(x._strides[d])
        d += 1
    flags = [i for i, e in enumerate(entries) if e]
    adjacent = flags == list(range(flags[0], flags[-1] + 1))
    try:
        bshape = broadcast_shapes(*(c._shape for _, c, _ in adv), op=op)
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{' '.join(str(c.shape) for _, c, _ in adv)}") from None
    adv_dims = [p for p, _, _ in adv]
    rest = [i for i in range(len(shape)) if i not in adv_dims]
    view = x._view(tuple(shape[p] for p in adv_dims + rest), tuple(strides[p] for p in adv_dims + rest), off)
    indices = [c if c._shape == bshape else c.broadcast_to(bshape) for _, c, _ in adv]
    axes = [a for _, _, a in adv]  # x's axis each index array indexes (checked in base_kernel)
    p0 = (basic_before or 0) if adjacent else 0
    rshape = [shape[i] for i in rest]
    final = tuple(rshape[:p0]) + bshape + tuple(rshape[p0:])
    nb = len(bshape)
    order = list(range(p0, p0 + nb)) + list(range(p0)) + list(range(p0 + nb, len(final)))
    return view, indices, axes, final, order


def _new_index(n: int, device) -> Array:
    ix = empty((n,), _dt.int64, device)
    if n:
        fill(ix, 0)
    return ix


def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


@register("getitem_advanced", "triton")
def getitem_advanced(x, key) -> Array:
    """``x[key]`` with integer/bool arrays (NumPy placement rules); bool arrays cost one count read each."""
    view, indices, axes, final, order = _advanced_plan(x, key, "index")
    out = empty(final, x._dtype, x._device)
    st = _contiguous_strides(final)
    base = offsets(view, indices, "index", axes)
    offsets_op(gk.GET, view, base, len(indices), out, tuple(final[i] for i in order), tuple(st[i] for i in order))
    return out


@register("setitem_advanced", "triton")
def setitem_advanced(x, key, value) -> None:
    view, indices, axes, final, order = _advanced_plan(x, key, "setitem")
    sel = tuple(final[i] for i in order)
    vst = None
    if isinstance(value, Array):
        if value._dtype is not x._dtype:
            value = value.astype(x._dtype)
        if value._shape != final:
            from ...validation import broadcast_shapes

            try:
                ok = broadcast_shapes(final, value._shape, op="setitem") == final
            except ValueError:
                ok = False
            if not ok:
                raise OpValueError(f"setitem: cannot assign a value of shape {value.shape} to the selection of shape "
                                   f"{final}")
            value = value.broadcast_to(final)
        vst = tuple(value._strides[i] for i in order)
    base = offsets(view, indices, "setitem", axes)
    offsets_op(gk.PUT, view, base, len(indices), value, sel, vst)
