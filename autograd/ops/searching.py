"""Sorting and searching with PyTorch names: sort/argsort/msort, topk, kthvalue, median/nanmedian (named tuples
``(values, indices)`` whose values are differentiable: the gradient goes back to the chosen positions), unique,
unique_consecutive, searchsorted, bucketize, isin (integer results, no gradient; argwhere is in indexing)."""

from __future__ import annotations

import tkernels as tk
from tkernels.validation import OpTypeError

from ._base import Tensor, wrap
from .reduction import _evenly_result, _int_dim, return_types, select_result

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "unique", "unique_consecutive",
           "searchsorted", "bucketize", "isin"]

METHODS = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "unique", "unique_consecutive"]


def _as_1d(fn, input, dim, **kw):
    """A 0-d input behaves like one element along dim 0 (PyTorch)."""
    _int_dim(fn.__name__, dim, 0)
    v, i = fn(input.reshape(1), dim=0, **kw)
    return v.reshape(()), i.reshape(())


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """Named tuple ``(values, indices)`` sorted along ``dim`` (always stable; NaN sorts as the largest)."""
    a = input._data
    if a.ndim == 0:
        return return_types.sort(*_as_1d(sort, input, dim, descending=descending))
    d = _int_dim("sort", dim, a.ndim)
    r = tk.sort_with_indices(a, axis=d, descending=descending, stable=True)
    return select_result(input, r.values, r.indices, d, True, "SortBackward0", return_types.sort)


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """Indices that sort ``input`` along ``dim`` (int64, stable)."""
    a = input._data
    if a.ndim == 0:
        _int_dim("argsort", dim, 0)
        return wrap(tk.zeros((), dtype=tk.int64, device=a.device))
    d = _int_dim("argsort", dim, a.ndim)
    return wrap(tk.argsort(a, axis=d, descending=descending, stable=True))


def msort(input):
    """Sorted along dim 0."""
    return sort(input, 0).values


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """Named tuple ``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) along ``dim``.

    A 0-d input is one element along dim 0 (or -1): ``k=1`` gives 0-d results, ``k=0`` empty ones of shape (0,)
    (PyTorch returns 0-d results for ``k=0`` too, holding the element on cpu and uninitialized memory on cuda)."""
    a = input._data
    d = _int_dim("topk", dim, a.ndim)
    size = a.shape[d] if a.ndim else 1
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise OpTypeError(f"topk(): argument 'k' must be int, not {type(k).__name__} (input shape {list(a.shape)})")
    if not 0 <= k <= size:
        where = f"dim {d} of size {size}" if a.ndim else f"a 0-d input (one element along dim {d})"
        raise RuntimeError(f"topk(): selected index k={k} out of range for {where} (input shape {list(a.shape)}, "
                           f"dtype {a.dtype}, device {a.device}). Hint: k must be in [0, {size}]")
    if a.ndim == 0:
        v, i = topk(input.reshape(1), k, 0, largest, sorted)
        return return_types.topk(*((v.reshape(()), i.reshape(())) if k == 1 else (v, i)))
    r = tk.topk(a, int(k), axis=d, largest=largest, sorted=sorted)
    return select_result(input, r.values, r.indices, d, True, "TopkBackward0", return_types.topk)


def _pick(input, d, pos, keepdim, name, rtype):
    """Sort along ``d`` and take the sorted element at position ``pos`` (an int64 Array, keepdim-shaped)."""
    a = input._data
    r = tk.sort_with_indices(a, axis=d, stable=True)
    v, i = tk.gather(r.values, d, pos), tk.gather(r.indices, d, pos)
    if not keepdim:
        v, i = tk.squeeze(v, axis=d), tk.squeeze(i, axis=d)
    return select_result(input, v, i, d, keepdim, name, rtype)


def _pos_full(a, d, value):
    shape = list(a.shape)
    shape[d] = 1
    return tk.full(tuple(shape), value, dtype=tk.int64, device=a.device)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """Named tuple ``(values, indices)``: the ``k``-th smallest element (1-based) along ``dim``."""
    a = input._data
    if a.ndim == 0:
        if k != 1:
            raise IndexError(f"kthvalue(): selected number k={k} out of range for a 0-d input")
        return return_types.kthvalue(*_as_1d(kthvalue, input, dim, k=k))
    d = _int_dim("kthvalue", dim, a.ndim)
    if not 1 <= k <= a.shape[d]:
        raise IndexError(f"kthvalue(): selected number k={k} out of range for dimension {d} of size {a.shape[d]} "
                         f"(input shape {list(a.shape)})")
    return _pick(input, d, _pos_full(a, d, k - 1), keepdim, "KthvalueBackward0", return_types.kthvalue)


def _median_pos(a, d, ignore_nan):
    """Position of the lower median in each sorted slice (NaN sorts last): with NaN present, the first NaN
    (median) or the median of the rest (nanmedian)."""
    n = a.shape[d]
    nans = tk.sum(tk.isnan(a), axis=d, keepdims=True, dtype=tk.int64) if a.dtype.kind == "f" else \
        _pos_full(a, d, 0)
    valid = tk.subtract(n, nans)
    if ignore_nan:
        return tk.maximum(tk.floor_divide(tk.subtract(valid, 1), 2), 0)
    return tk.where(tk.greater(nans, 0), valid, _pos_full(a, d, (n - 1) // 2))


def _median(op, input, dim, keepdim, ignore_nan):
    a = input._data
    rtype = getattr(return_types, op)
    if dim is None:
        flat = input.reshape(-1)
        if flat.shape[0] == 0:
            if a.dtype.kind != "f":
                raise RuntimeError(f"{op}(): the median of an empty {a.dtype} tensor is undefined (NaN for floats, "
                                   f"which an integer dtype cannot hold); hint: check numel() first or convert "
                                   f"to a float dtype")
            return wrap(tk.full((), float("nan"), dtype=a.dtype, device=a.device))
        pos = _median_pos(flat._data, 0, ignore_nan)
        r = tk.reshape(tk.gather(tk.sort(flat._data), 0, pos), ())
        return _evenly_result(input, r, None, False, "NanmedianBackward0" if ignore_nan else "MedianBackward0")
    if a.ndim == 0:
        return rtype(*_as_1d(lambda x, dim: _median(op, x, dim, False, ignore_nan), input, dim))
    d = _int_dim(op, dim, a.ndim)
    if a.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (input shape {list(a.shape)})")
    name = "NanmedianBackward1" if ignore_nan else "MedianBackward1"
    return _pick(input, d, _median_pos(a, d, ignore_nan), keepdim, name, rtype)


def median(input, dim=None, keepdim: bool = False):
    """Lower median: of all elements (0-d; the gradient is split among ties), or along ``dim`` as a named
    tuple ``(values, indices)``; NaN propagates."""
    return _median("median", input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim: bool = False):
    """Like ``median`` but ignoring NaN (NaN only where a slice is all NaN)."""
    return _median("nanmedian", input, dim, keepdim, True)


def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim=None):
    """Unique elements (sorted), optionally with the inverse indices (input's shape, or ``dim``'s size) and
    the counts; with ``dim``, unique slices along it. No gradient."""
    a = input._data
    kw = {}
    if dim is not None:
        kw["axis"] = _int_dim("unique", dim, a.ndim)
    r = tk.unique(a, sorted=True, return_inverse=return_inverse, return_counts=return_counts, **kw)
    if not (return_inverse or return_counts):
        return wrap(r)
    r = [wrap(x) for x in r]
    if return_inverse and dim is None and tuple(r[1].shape) != tuple(a.shape):
        r[1] = r[1].reshape(tuple(a.shape))
    return tuple(r)


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``); optionally the inverse indices
    and the run lengths. No gradient."""
    a = input._data
    if dim is None:
        m = tk.reshape(a, (-1, 1))
        d = 0
    else:
        d = _int_dim("unique_consecutive", dim, a.ndim)
        m = tk.reshape(tk.moveaxis(a, d, 0), (a.shape[d], -1)) if a.ndim else tk.reshape(a, (1, 1))
    n = m.shape[0]
    dev = a.device
    if n:
        diff = tk.any(tk.not_equal(m[1:], m[:-1]), axis=1)
        change = tk.concat([tk.full((1,), True, dtype=tk.bool, device=dev), diff], axis=0)
    else:
        change = tk.zeros((0,), dtype=tk.bool, device=dev)
    (starts,) = tk.nonzero(change)
    vals = tk.take(m, starts, axis=0)
    if dim is None:
        vals = tk.reshape(vals, (-1,))
    else:
        rest = tuple(s for i, s in enumerate(a.shape) if i != d)
        vals = tk.moveaxis(tk.reshape(vals, (vals.shape[0],) + rest), 0, d) if a.ndim else tk.reshape(vals, (1,))
    out = [wrap(vals)]
    if return_inverse:
        inv = tk.subtract(tk.cumsum(tk.astype(change, tk.int64), 0), 1)
        out.append(wrap(tk.reshape(inv, a.shape) if dim is None else inv))
    if return_counts:
        ends = tk.concat([starts[1:], tk.full((1,), n, dtype=tk.int64, device=dev)], axis=0) if n else starts
        out.append(wrap(tk.subtract(ends, starts)))
    return out[0] if len(out) == 1 else tuple(out)


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None, sorter=None):
    """Insertion points of ``input`` in ``sorted_sequence`` (1-d, or batched over its leading dims);
    ``right``/``side='right'``: after equal elements. int64 (int32 with ``out_int32``)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"searchsorted(): side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError("searchsorted(): side and right can't be set to opposites, got side of left while "
                               "right was True")
        right = side == "right"
    seq = sorted_sequence._data
    # a number is weak, as in PyTorch: 2.5 against int boundaries stays 2.5 (it was cast to the boundaries' dtype)
    x = input._data if isinstance(input, Tensor) else tk.full((), input, dtype=tk.result_type(seq, input),
                                                              device=seq.device)
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(x.shape[:-1]):
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                           f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(x.shape)}")
    srt = sorter._data if isinstance(sorter, Tensor) else sorter
    r = tk.searchsorted(seq, x, side="right" if right else "left", sorter=srt)
    return wrap(tk.astype(r, tk.int32 if out_int32 else tk.int64, copy=False))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """Bucket index of each element for 1-d ``boundaries`` (``right=False``: ``b[i-1] < x <= b[i]``)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim}) "
                           f"(shape {list(boundaries.shape)})")
    if not isinstance(input, Tensor):
        return searchsorted(boundaries, input, out_int32=out_int32, right=right)
    seq, x = boundaries._data, input._data
    r = tk.searchsorted(seq, x, side="right" if right else "left")
    return wrap(tk.astype(r, tk.int32 if out_int32 else tk.int64, copy=False))


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Bool tensor of ``elements``' shape: is each element in ``test_elements`` (tensors or scalars);
    ``tkernels.isin`` (``assume_unique`` is PyTorch's speed hint, not needed here)."""
    e = elements._data if isinstance(elements, Tensor) else elements
    t = test_elements._data if isinstance(test_elements, Tensor) else test_elements
    return wrap(tk.isin(e, t, invert=bool(invert)))
