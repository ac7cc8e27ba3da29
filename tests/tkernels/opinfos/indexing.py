"""OpInfos of the indexing family: take, take_along_axis, gather, scatter(_add), index_add, index_select,
index_put, masked_fill, masked_select, nonzero, argwhere, one_hot.

Index arrays come in int64 and int32, with negative entries where the op accepts them, repeated entries
for the accumulating ops (and distinct ones where a repeat would make the result ambiguous), empty index
arrays, odd sizes and 0-d arrays. The harness also passes index arrays in non-contiguous and transposed
layouts.
"""

import numpy as np

import tkernels as tk

from ..harness import ALL, FLOATS, INTS, OpInfo, Sample, make, noncontig, transposed

DATA = ALL  # data movement: every dtype
ACC = FLOATS + INTS  # accumulating ops: every numeric dtype


def _idx(rng, shape, low, high, dtype="int64"):
    return rng.integers(low, high, shape).astype(dtype)


def _distinct(rng, shape, axis, size, dtype="int64"):
    """Indices in [0, size) of ``shape``, distinct along ``axis`` (shape[axis] <= size)."""
    full = list(shape)
    full[axis] = size
    r = np.argsort(rng.random(full), axis=axis)
    return np.take(r, np.arange(shape[axis]), axis=axis).astype(dtype)


# ------------------------------------------------------------------------------------------------------ take
def _take_samples(rng, dtype):
    yield Sample((make(rng, (7,), dtype), _idx(rng, (3,), -7, 7)), desc="1-D, negative indices")
    yield Sample((make(rng, (3, 129), dtype), _idx(rng, (5,), -129, 129, "int32")), dict(axis=1))
    yield Sample((make(rng, (3, 129), dtype), _idx(rng, (4,), -3, 3)), dict(axis=-2))
    yield Sample((make(rng, (127,), dtype), _idx(rng, (129,), 0, 127)), dict(axis=0), desc="repeats")
    yield Sample((make(rng, (4, 5, 6), dtype), _idx(rng, (2, 3), -5, 5)), dict(axis=1), desc="2-D indices")
    yield Sample((make(rng, (3, 4), dtype), _idx(rng, (2, 2), -12, 12)), desc="axis None: flattened")
    yield Sample((make(rng, (3, 4), dtype), _idx(rng, (0,), 0, 1)), dict(axis=0), desc="empty indices")
    yield Sample((make(rng, (2, 0, 3), dtype), _idx(rng, (3,), 0, 2)), dict(axis=0), desc="empty x")
    yield Sample((make(rng, (), dtype), np.array([0, -1, 0])), desc="0-d x")
    yield Sample((make(rng, (5,), dtype), np.array(3)), dict(axis=0), desc="0-d indices")


def _take_along_samples(rng, dtype):
    yield Sample((make(rng, (3, 7), dtype), _idx(rng, (3, 5), -7, 7)), dict(axis=1))
    yield Sample((make(rng, (3, 129), dtype), _idx(rng, (3, 129), 0, 129, "int32")), desc="axis -1 default")
    yield Sample((make(rng, (4, 5, 6), dtype), _idx(rng, (4, 2, 6), -5, 5)), dict(axis=-2))
    yield Sample((make(rng, (7, 3), dtype), _idx(rng, (9, 3), 0, 7)), dict(axis=0), desc="repeats")
    yield Sample((make(rng, (1, 5), dtype), _idx(rng, (3, 2), -5, 5)), dict(axis=1), desc="x broadcasts")
    yield Sample((make(rng, (3, 5), dtype), _idx(rng, (1, 4), 0, 5)), dict(axis=1), desc="indices broadcast")
    yield Sample((make(rng, (3, 5), dtype), _idx(rng, (3, 0), 0, 5)), dict(axis=1), desc="empty")
    yield Sample((make(rng, (), dtype), np.array(-1)), dict(axis=0), desc="0-d")


def _take_along_ref(x, i, axis=-1):
    if x.ndim == 0:
        return x.copy()
    return np.take_along_axis(x, i, axis)


# --------------------------------------------------------------------------------------------- gather/scatter
def _gather_samples(rng, dtype):
    yield Sample((make(rng, (3, 7), dtype), 1, _idx(rng, (3, 4), 0, 7)))
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (3, 4), 0, 5, "int32")), desc="index smaller off axis")
    yield Sample((make(rng, (3, 129), dtype), -1, _idx(rng, (3, 129), 0, 129)))
    yield Sample((make(rng, (4, 5, 6), dtype), -2, _idx(rng, (2, 7, 6), 0, 5)), desc="index longer on axis")
    yield Sample((make(rng, (127,), dtype), 0, _idx(rng, (1,), 0, 127)))
    yield Sample((make(rng, (5, 7), dtype), 1, _idx(rng, (0, 3), 0, 7)), desc="empty index")
    yield Sample((make(rng, (), dtype), 0, np.array(0)), desc="0-d")


def _gather_ref(x, axis, index):
    if x.ndim == 0:
        return x.copy()
    sl = tuple(slice(None) if d == axis % x.ndim else slice(0, n) for d, n in enumerate(index.shape))
    return np.take_along_axis(x[sl], index, axis)


def _scatter_ref(x, axis, index, src, add=False):
    out = x.copy()
    if x.ndim == 0:
        v = src if not isinstance(src, np.ndarray) else src[()]
        out[()] = out[()] + v if add else v
        return out
    axis %= x.ndim
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[axis] = index[pos]
        v = src[pos] if isinstance(src, np.ndarray) else np.asarray(src).astype(x.dtype)
        if add:
            out[tuple(tgt)] += v
        else:
            out[tuple(tgt)] = v
    return out


def _scatter_samples(rng, dtype):
    yield Sample((make(rng, (5, 7), dtype), 0, _distinct(rng, (3, 7), 0, 5), make(rng, (3, 7), dtype)))
    yield Sample((make(rng, (5, 7), dtype), 1, _distinct(rng, (4, 3), 1, 7, "int32"), make(rng, (6, 5), dtype)),
                 desc="index smaller than x and src")
    yield Sample((make(rng, (3, 129), dtype), -1, _distinct(rng, (3, 127), 1, 129), make(rng, (3, 127), dtype)))
    yield Sample((make(rng, (4, 5, 6), dtype), -2, _distinct(rng, (4, 2, 6), 1, 5), make(rng, (4, 3, 6), dtype)))
    value = {"bool": True}.get(dtype, 2)
    yield Sample((make(rng, (5, 7), dtype), 1, _distinct(rng, (5, 3), 1, 7), value), desc="scalar src")
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (0, 7), 0, 5), make(rng, (0, 7), dtype)),
                 desc="empty index")
    yield Sample((make(rng, (), dtype), 0, np.array(0), make(rng, (), dtype)), desc="0-d")


def _scatter_add_samples(rng, dtype):
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (9, 7), 0, 5), make(rng, (9, 7), dtype)), desc="repeats")
    yield Sample((make(rng, (5, 7), dtype), 1, _idx(rng, (4, 3), 0, 7, "int32"), make(rng, (6, 5), dtype)),
                 desc="index smaller than x and src")
    yield Sample((make(rng, (3, 7), dtype), -1, _idx(rng, (3, 129), 0, 7), make(rng, (3, 129), dtype)))
    yield Sample((make(rng, (4, 5, 6), dtype), -2, _idx(rng, (4, 7, 6), 0, 5), make(rng, (4, 7, 6), dtype)))
    yield Sample((make(rng, (127,), dtype), 0, _idx(rng, (1,), 0, 127), make(rng, (1,), dtype)))
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (0, 7), 0, 5), make(rng, (0, 7), dtype)), desc="empty")
    yield Sample((make(rng, (), dtype), 0, np.array(0), make(rng, (), dtype)), desc="0-d")


# ------------------------------------------------------------------------------------- index_add/index_select
def _index_add_samples(rng, dtype):
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (9,), 0, 5), make(rng, (9, 7), dtype)), desc="repeats")
    yield Sample((make(rng, (3, 129), dtype), -1, _idx(rng, (7,), 0, 129, "int32"), make(rng, (3, 7), dtype)))
    yield Sample((make(rng, (4, 5, 6), dtype), 1, _idx(rng, (3,), 0, 5), make(rng, (4, 3, 6), dtype)),
                 dict(alpha=2))
    yield Sample((make(rng, (127,), dtype), 0, _idx(rng, (129,), 0, 127), make(rng, (129,), dtype)))
    yield Sample((make(rng, (5, 7), dtype), 0, np.array(4), make(rng, (1, 7), dtype)), desc="0-d index")
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (0,), 0, 5), make(rng, (0, 7), dtype)), desc="empty")
    yield Sample((make(rng, (), dtype), 0, np.array([0]), make(rng, (), dtype)), desc="0-d x")


def _index_add_ref(x, axis, index, source, alpha=1):
    out = x.copy()
    if x.ndim == 0:
        return out + alpha * source
    key = (slice(None),) * (axis % x.ndim) + (np.atleast_1d(index),)
    np.add.at(out, key, (alpha * source).astype(x.dtype))
    return out


def _index_select_samples(rng, dtype):
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (9,), 0, 5)), desc="repeats")
    yield Sample((make(rng, (3, 129), dtype), -1, _idx(rng, (127,), 0, 129, "int32")))
    yield Sample((make(rng, (4, 5, 6), dtype), 1, _idx(rng, (3,), 0, 5)))
    yield Sample((make(rng, (5, 7), dtype), 1, np.array(6)), desc="0-d index")
    yield Sample((make(rng, (5, 7), dtype), 0, _idx(rng, (0,), 0, 5)), desc="empty")
    yield Sample((make(rng, (), dtype), 0, np.array([0])), desc="0-d x")


def _index_select_ref(x, axis, index):
    if x.ndim == 0:
        return x.copy()
    return np.take(x, np.atleast_1d(index), axis=axis)


# ------------------------------------------------------------------------------------------------ index_put
def _index_put_samples(accumulate):
    def gen(rng, dtype):
        if accumulate:  # repeated indices sum
            rows, pair = _idx(rng, (9,), -5, 5), (_idx(rng, (12,), -5, 5), _idx(rng, (12,), 0, 7))
        else:  # distinct indices (a repeat would make the stored value ambiguous)
            rows = rng.permutation(np.arange(-5, 0))[:3]
            flat = rng.permutation(35)[:6]
            pair = (flat // 7, flat % 7 - 7)
        # no index arrays: the whole of x (first, so that a device without the kernel is probed cleanly)
        yield Sample((make(rng, (5, 7), dtype), (), make(rng, (7,), dtype)), dict(accumulate=accumulate),
                     desc="no indices")
        yield Sample((make(rng, (5, 7), dtype), (rows,), make(rng, (len(rows), 7), dtype)), dict(accumulate=accumulate))
        yield Sample((make(rng, (5, 7), dtype), tuple(p.astype("int32") for p in pair), make(rng, (1,), dtype)),
                     dict(accumulate=accumulate), desc="pairs, values broadcast")
        b0, b1 = _distinct(rng, (3, 1), 0, 4), _distinct(rng, (4,), 0, 129)
        yield Sample((make(rng, (4, 129), dtype), (b0, b1), make(rng, (3, 4), dtype)), dict(accumulate=accumulate),
                     desc="broadcast indices")
        yield Sample((make(rng, (4, 5, 6), dtype), (_distinct(rng, (2,), 0, 4),), make(rng, (6,), dtype)),
                     dict(accumulate=accumulate), desc="3-D x, one index")
        mask = rng.random(5) < 0.5
        yield Sample((make(rng, (5, 7), dtype), (mask,), make(rng, (7,), dtype)), dict(accumulate=accumulate),
                     desc="bool mask")
        mask2 = rng.random((5, 7)) < 0.5
        yield Sample((make(rng, (5, 7), dtype), (mask2,), make(rng, (), dtype)), dict(accumulate=accumulate),
                     desc="full bool mask")
        yield Sample((make(rng, (127,), dtype), (_distinct(rng, (5,), 0, 127),), {"bool": True}.get(dtype, 3)),
                     dict(accumulate=accumulate), desc="scalar value")
        yield Sample((make(rng, (5, 7), dtype), (_idx(rng, (0,), 0, 5),), make(rng, (0, 7), dtype)),
                     dict(accumulate=accumulate), desc="empty")

    return gen


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    v = values if isinstance(values, np.ndarray) else np.asarray(values).astype(x.dtype)
    if accumulate:
        np.add.at(out, tuple(indices), v)
    else:
        out[tuple(indices)] = v
    return out


# ---------------------------------------------------------------------------------------------------- masks
def _fill_value(dtype):
    return {"bool": True, "uint8": 200}.get(dtype, -2.5 if dtype in FLOATS else -7)


def _masked_fill_samples(rng, dtype):
    v = _fill_value(dtype)
    for s in ((7,), (3, 129), (127,), (2, 0, 3), ()):
        yield Sample((make(rng, s, dtype), make(rng, s, "bool"), v))
    yield Sample((make(rng, (3, 5), dtype), make(rng, (3, 1), "bool"), v), desc="mask broadcasts")
    yield Sample((make(rng, (1, 5), dtype), make(rng, (3, 5), "bool"), v), desc="x broadcasts")
    yield Sample((make(rng, (3, 5), dtype), make(rng, (5,), "bool"), make(rng, (), dtype)), desc="0-d array value")


def _masked_fill_ref(x, mask, value):
    return np.where(mask, np.asarray(value).astype(x.dtype), x)


def _masked_select_samples(rng, dtype):
    for s in ((7,), (3, 129), (127,), (2, 0, 3), ()):
        yield Sample((make(rng, s, dtype), make(rng, s, "bool")))
    yield Sample((make(rng, (3, 5), dtype), make(rng, (5,), "bool")), desc="mask broadcasts")
    yield Sample((make(rng, (1, 5), dtype), make(rng, (4, 5), "bool")), desc="x broadcasts")
    yield Sample((make(rng, (4, 5), dtype), np.zeros((4, 5), bool)), desc="nothing selected")


def _masked_select_ref(x, mask):
    x, mask = np.broadcast_arrays(x, mask)
    return x[mask]


def _sparse(rng, shape, dtype):
    x = make(rng, shape, dtype)
    return np.where(rng.random(shape) < 0.5, np.zeros((), x.dtype), x)


def _nonzero_samples(rng, dtype):
    for s in ((1,), (7,), (3, 129), (127,), (2, 0, 3), (4, 5, 6)):
        yield Sample((_sparse(rng, s, dtype),))
    yield Sample((np.zeros((3, 4), dtype=make(rng, (1,), dtype).dtype),), desc="all zero")


def _argwhere_samples(rng, dtype):
    yield from _nonzero_samples(rng, dtype)
    yield Sample((make(rng, (), dtype, nonzero=True),), desc="0-d")


def _one_hot_samples(rng, dtype):
    yield Sample((_idx(rng, (7,), 0, 5, dtype),), dict(num_classes=5))
    yield Sample((_idx(rng, (3, 129), 0, 10, dtype),))
    yield Sample((_idx(rng, (127,), 0, 129, dtype), 129))
    yield Sample((np.array(2, dtype),), dict(num_classes=3), desc="0-d")
    yield Sample((_idx(rng, (2, 0), 0, 3, dtype),), dict(num_classes=3), desc="empty")
    yield Sample((_idx(rng, (4,), 0, 3, dtype),), dict(num_classes=7))


def _one_hot_ref(x, num_classes=-1):
    n = int(x.max()) + 1 if num_classes == -1 else num_classes
    return np.eye(n, dtype=np.int64)[x]


# ---------------------------------------------------------------------------------------------- in-place variants
def _inplace(fn):
    """Run the in-place ``fn`` on a copy of x in x's layout; it must write there and return that very Array."""
    def op(x, *args, **kwargs):
        y = x.copy()
        if not x.is_contiguous():
            y = transposed(y) if x.ndim >= 2 and x.mT.is_contiguous() else noncontig(y)
        r = fn(y, *args, **kwargs)
        assert r is y, f"{fn.__name__} must return x"
        return r

    return op


def _same_shape(samples):
    """Samples whose result has x's shape (an in-place op cannot broadcast x)."""
    def gen(rng, dtype):
        for s in samples(rng, dtype):
            if s.args[1].shape == s.args[0].shape or np.broadcast_shapes(s.args[0].shape, s.args[1].shape) == \
                    s.args[0].shape:
                yield s

    return gen


OP_INFOS = [
    OpInfo("take", tk.take, lambda x, i, axis=None: np.take(x, i, axis=axis), _take_samples, DATA),
    OpInfo("take_along_axis", tk.take_along_axis, _take_along_ref, _take_along_samples, DATA),
    OpInfo("gather", tk.gather, _gather_ref, _gather_samples, DATA),
    OpInfo("scatter", tk.scatter, _scatter_ref, _scatter_samples, DATA),
    OpInfo("scatter_add", tk.scatter_add, lambda x, a, i, s: _scatter_ref(x, a, i, s, add=True), _scatter_add_samples,
           ACC),
    OpInfo("index_add", tk.index_add, _index_add_ref, _index_add_samples, ACC),
    OpInfo("index_select", tk.index_select, _index_select_ref, _index_select_samples, DATA),
    OpInfo("index_put", tk.index_put, _index_put_ref, _index_put_samples(False), DATA),
    OpInfo("index_put_accumulate", tk.index_put, _index_put_ref, _index_put_samples(True), ACC),
    OpInfo("masked_fill", tk.masked_fill, _masked_fill_ref, _masked_fill_samples, DATA),
    OpInfo("masked_select", tk.masked_select, _masked_select_ref, _masked_select_samples, DATA),
    OpInfo("nonzero", tk.nonzero, np.nonzero, _nonzero_samples, DATA, differentiable=False),
    OpInfo("argwhere", tk.argwhere, np.argwhere, _argwhere_samples, DATA, differentiable=False),
    OpInfo("one_hot", tk.one_hot, _one_hot_ref, _one_hot_samples, ("int64", "int32"), differentiable=False),
]
OP_INFOS += [
    OpInfo("scatter_", _inplace(tk.scatter_), _scatter_ref, _scatter_samples, DATA, differentiable=False),
    OpInfo("scatter_add_", _inplace(tk.scatter_add_), lambda x, a, i, s: _scatter_ref(x, a, i, s, add=True),
           _scatter_add_samples, ACC, differentiable=False),
    OpInfo("index_add_", _inplace(tk.index_add_), _index_add_ref, _index_add_samples, ACC, differentiable=False),
    OpInfo("index_put_", _inplace(tk.index_put_), _index_put_ref, _index_put_samples(False), DATA,
           differentiable=False),
    OpInfo("index_put_accumulate_", _inplace(tk.index_put_), _index_put_ref, _index_put_samples(True), ACC,
           differentiable=False),
    OpInfo("masked_fill_", _inplace(tk.masked_fill_), _masked_fill_ref, _same_shape(_masked_fill_samples), DATA,
           differentiable=False),
]
