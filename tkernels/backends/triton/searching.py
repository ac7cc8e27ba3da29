"""Sorting and searching on cuda: sort/argsort, topk, unique, searchsorted (``tkernels/kernels/sort.py``
describes the method: bitonic tiles, then merge-path passes for rows longer than a tile).

Signatures of the NumPy backend. ``unique`` is a sort of the flattened input, flags where a new value starts,
a prefix sum of the flags and one read of the group count (its output size depends on the data, as in
PyTorch, which syncs there too), then a scatter of values, first indices, inverse and counts.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import lookup, register
from ...kernels import gather as gk
from ...kernels import sort as sk
from ...kernels.creation import range_kernel
from ._launch import ELEMENTWISE_BLOCK, INTERPRETED, collapse, grid1d, launch
from .indexing import axis_op, check_indices, nonzero_linear
from .memory import copy_, empty, to_numpy

BLOCK = ELEMENTWISE_BLOCK
# tile widths on a GPU: a fixed set, as each is a compiled variant (the interpreter takes the power of two that
# fits the row, up to 4096: its cost grows with the network's depth, log2(BLOCK)**2 / 2 steps)
SORT_BLOCKS = (16, 128, 1024)
SORT_TILE = 4096 if INTERPRETED else 1024


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _tile(M: int, L: int):
    """(ROWS, BLOCK) of the block sort."""
    if INTERPRETED:
        block = max(2, min(_pow2(L), SORT_TILE))
        return max(1, min(SORT_TILE // block, _pow2(M))), block
    block = next((b for b in SORT_BLOCKS if b >= L), SORT_BLOCKS[-1])
    return max(1, SORT_TILE // block), block


def _key_mode(d) -> int:
    if d is _dt.float64:
        return sk.KEY_F64
    if d is _dt.uint32:
        return sk.KEY_U32
    if d is _dt.uint64:
        return sk.KEY_U64
    return sk.KEY_F32 if d.kind == "f" else sk.KEY_INT


def _moved(x: Array, axis: int) -> Array:
    """A view of ``x`` with ``axis`` last."""
    order = [d for d in range(x.ndim) if d != axis] + [axis]
    return x._view(tuple(x._shape[d] for d in order), tuple(x._strides[d] for d in order), x._offset)


def sort_rows(x: Array, axis: int, descending: bool):
    """(keys, indices): int64 (M, L) scratch rows, the rows of ``x`` along ``axis`` sorted stably."""
    xm = _moved(x, axis)
    L = xm._shape[-1]
    M = x.size // L if L else 0
    dev = x._device
    keys, idx = empty((M, L), _dt.int64, dev), empty((M, L), _dt.int64, dev)
    if M == 0 or L == 0:
        return keys, idx
    rows, block = _tile(M, L)
    sizes, (st,) = collapse(xm._shape[:-1] or (1,), xm._strides[:-1] or (0,))
    launch(sk.block_sort_kernel, (-(-M // rows), -(-L // block)), x, keys, idx, M, L, xm._strides[-1], *sizes[1:],
           *st, KEY=_key_mode(x._dtype), DESCENDING=descending, PACK=x._dtype.itemsize <= 4, ROWS=rows, BLOCK=block,
           LOG=block.bit_length() - 1)
    w = block
    if w < L:
        k2, i2 = empty((M, L), _dt.int64, dev), empty((M, L), _dt.int64, dev)
        n = M * L
        while w < L:
            launch(sk.merge_kernel, grid1d(n, BLOCK), keys, idx, k2, i2, n, L, w, w.bit_length() + 1, BLOCK=BLOCK)
            keys, idx, k2, i2 = k2, i2, keys, idx
            w *= 2
    return keys, idx


def _take(out: Array, x: Array, index: Array, axis: int) -> None:
    """out = take_along_axis(x, index, axis) for in-range indices (no check)."""
    axis_op(gk.GET, x._view(index._shape[:axis] + (x._shape[axis],) + index._shape[axis + 1:], x._strides,
                            x._offset), index, out, axis, False)


def _unmove(buf: Array, shape, axis: int) -> Array:
    """The (M, k) scratch rows ``buf`` (row stride ``buf.strides[0]``) viewed as an array of ``shape`` whose
    ``axis`` (of size k) runs along the rows and whose other dimensions enumerate the rows in order."""
    st = [0] * len(shape)
    acc = buf._strides[0]
    for d in reversed([d for d in range(len(shape)) if d != axis]):
        st[d] = acc
        acc *= shape[d]
    st[axis] = buf._strides[1]
    return buf._view(tuple(shape), tuple(st), buf._offset)


@register("sort", "triton")
def sort(values, indices, x, axis, descending, stable) -> None:
    if x.ndim == 0:
        if values is not None:
            copy_(values, x)
        if indices is not None:
            lookup("fill", x._device)(indices, 0)
        return
    if x.size == 0:
        return
    _, idx = sort_rows(x, axis, descending)
    iv = _unmove(idx, x._shape, axis)
    if indices is not None:
        copy_(indices, iv)
    if values is not None:
        _take(values, x, iv, axis)


@register("topk", "triton")
def topk(values, indices, x, k, axis, largest) -> None:
    if values.size == 0:
        return
    _, idx = sort_rows(x, axis, largest)
    shape = values._shape
    iv = _unmove(idx._view((idx._shape[0], k), idx._strides, idx._offset), shape, axis)
    copy_(indices, iv)
    _take(values, x, indices, axis)


def _flipped_u64(x: Array) -> Array:
    """``x`` (uint64, or an integer dtype that casts to it) as int64 with the top bit flipped (order kept)."""

    if x.dtype is not _dt.uint64:
        x = x.astype(_dt.uint64)
    out = empty(x.shape, _dt.int64, x.device)
    lookup("bitwise_xor", x.device)(out, Array(x._storage, x._shape, x._strides, x._offset, _dt.int64, x._device),
                                     -2**63, _dt.int64)
    return out


@register("searchsorted", "triton")
def searchsorted(out, x1, x2, side, sorter, compute_dtype) -> None:
    n = x2.size
    if n == 0:
        return
    L = x1._shape[-1]
    a = x1 if x1.is_contiguous() else x1.contiguous()
    v = x2 if x2.is_contiguous() else x2.contiguous()
    s = None
    if sorter is not None:
        bad, _ = check_indices(sorter, 0, L)
        if bad is not None:
            from ...indexing import oob_message

            raise IndexError(oob_message("searchsorted", int(bad), x1.ndim - 1, L, sorter, False))
        s = sorter if sorter.is_contiguous() else sorter.contiguous()
    if compute_dtype is _dt.uint64:  # int64 keys: the top bit flipped orders uint64 values as signed ones
        a, v = _flipped_u64(a), _flipped_u64(v)
    ct = 0 if compute_dtype.kind in "iub" else (2 if compute_dtype is _dt.float64 else 1)
    M = n if x1.ndim == 1 else x2._shape[-1]
    row = 0 if x1.ndim == 1 else L
    launch(sk.searchsorted_kernel, grid1d(n, BLOCK), a, v, s if s is not None else a, out, n, max(M, 1), L, row,
           row, L.bit_length() + 1, RIGHT=side == "right", SORTER=s is not None, CT=ct, BLOCK=BLOCK)


@register("unique", "triton")
def unique(x, axis, return_index, return_inverse, return_counts):
    if axis is not None:
        return _unique_slices(x, axis, return_index, return_inverse, return_counts)
    dev = x._device
    flat = x if x.ndim == 1 and x.is_contiguous() else x.contiguous().reshape((x.size,))
    n = flat.size
    i64 = _dt.int64
    if n == 0:
        e = empty((0,), i64, dev)
        return (empty((0,), x._dtype, dev), e if return_index else None, e if return_inverse else None,
                e if return_counts else None)
    keys, idx = sort_rows(flat, 0, False)
    keys, idx = keys.reshape((n,)), idx.reshape((n,))
    flags = empty((n,), i64, dev)
    launch(sk.unique_flag_kernel, grid1d(n, BLOCK), keys, idx, flat, flags, n, IS_FLOAT=x._dtype.kind == "f",
           BLOCK=BLOCK)
    pos = empty((n,), i64, dev)
    lookup("cumulative_sum", dev)(pos, flags, 0, i64, False)
    count = int(to_numpy(pos._view((), (), n - 1)))  # the one device read: the number of unique values
    values = empty((count,), x._dtype, dev)
    first = empty((count,), i64, dev)
    start = empty((count,), i64, dev)
    inverse = empty((n,), i64, dev) if return_inverse else None
    launch(sk.unique_scatter_kernel, grid1d(n, BLOCK), flat, idx, pos, values, first, start,
           inverse if inverse is not None else start, n, FIRST=return_index, INVERSE=return_inverse, BLOCK=BLOCK)
    counts = None
    if return_counts:
        counts = empty((count,), i64, dev)
        launch(sk.unique_count_kernel, grid1d(count, BLOCK), start, counts, count, n, BLOCK=BLOCK)
    return values, first if return_index else None, inverse, counts


def _unique_slices(x, axis, return_index, return_inverse, return_counts):
    """Unique slices along ``axis``: the slices flattened to rows, ordered lexicographically by stable sorts of
    one column at a time (last column first, LSD), rows that differ from their predecessor start a group;
    then as for values (one count read)."""
    from ... import elementwise as _ew
    from ... import reduction as _red
    from ...indexing import _along

    dev, i64 = x._device, _dt.int64
    n = x._shape[axis]
    rest = x._shape[:axis] + x._shape[axis + 1:]
    S = 1
    for v in rest:
        S *= v
    rows = _moved(x, axis)
    rows = rows._view((n,) + rows._shape[:-1], (rows._strides[-1],) + rows._strides[:-1], rows._offset)
    rows = rows.contiguous().reshape((n, S))
    order = empty((n,), i64, dev)
    launch(range_kernel, grid1d(max(n, 1), BLOCK), order, n, 0, 1, 0, INT=True, SET_LAST=False, BLOCK=BLOCK)
    col = empty((n,), x._dtype, dev)
    for c in reversed(range(S if n > 1 else 0)):
        axis_op(gk.GET, rows._view((rows._shape[0],), (S,), rows._offset + c), order, col, 0, False)
        _, idx = sort_rows(col, 0, False)
        nxt = empty((n,), i64, dev)
        axis_op(gk.GET, order, idx.reshape((n,)), nxt, 0, False)
        order = nxt
    srt = empty((n, S), x._dtype, dev)
    if n and S:
        axis_op(gk.GET, rows, _along(order, 0, (n, S)), srt, 0, False)
    flags = empty((n,), i64, dev)
    if n:
        lookup("fill", dev)(flags._view((1,), (1,), 0), 1)
    if n > 1:
        diff = _red.any(_ew.not_equal(srt[1:], srt[:-1]), axis=1) if S else None
        if diff is None:
            lookup("fill", dev)(flags[1:], 0)
        else:
            copy_(flags[1:], diff)
    pos = empty((n,), i64, dev)
    count = 0
    if n:
        lookup("cumulative_sum", dev)(pos, flags, 0, i64, False)
        count = int(to_numpy(pos._view((), (), n - 1)))
    starts = nonzero_linear(flags)  # the group starts
    values = empty((count,) + rest, x._dtype, dev)
    if count and S:
        vv = values.reshape((count, S))
        sel = empty((count,), i64, dev)
        axis_op(gk.GET, order, starts, sel, 0, False)
        axis_op(gk.GET, rows, _along(sel, 0, (count, S)), vv, 0, False)
    values = values._view((count,) + rest, values._strides, values._offset)
    out_axis = _unmove_first(values, axis)
    first = None
    if return_index:
        first = empty((count,), i64, dev)
        if count:
            axis_op(gk.GET, order, starts, first, 0, False)
    inverse = None
    if return_inverse:
        inverse = empty((n,), i64, dev)
        if n:
            g = empty((n,), i64, dev)
            lookup("subtract", dev)(g, pos, 1, i64)
            axis_op(gk.PUT, inverse, order, g, 0, False)
    counts = None
    if return_counts:
        counts = empty((count,), i64, dev)
        if count:
            launch(sk.unique_count_kernel, grid1d(count, BLOCK), starts, counts, count, n, BLOCK=BLOCK)
    return out_axis, first, inverse, counts


def _unmove_first(values, axis):
    """``values`` (count first) with the count moved to ``axis``, as a contiguous array."""
    if axis == 0:
        return values
    nd = values.ndim
    order = list(range(1, axis + 1)) + [0] + list(range(axis + 1, nd))
    v = values._view(tuple(values._shape[d] for d in order), tuple(values._strides[d] for d in order),
                     values._offset)
    return v.contiguous()
