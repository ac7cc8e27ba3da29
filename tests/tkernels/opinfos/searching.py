"""OpInfos of sorting and searching: sort, argsort, sort_with_indices, topk, unique_*, unique, searchsorted.

Samples: odd sizes, 0-d and empty arrays, negative axes, both directions. The ``*_ties`` rows (and argsort,
unique, searchsorted) add values from a small set, so that stability is checked, with NaNs for float16/32/64
(last ascending, first descending); the differentiable rows keep distinct values, as gradcheck needs.
"""

import numpy as np

import tkernels as tk

from ..harness import ALL, FLOATS, INTS, OpInfo, Sample, assert_close, host, make

NUMERIC = FLOATS + INTS


def _ties(rng, shape, dtype):
    """Values from a small set (many ties), with NaNs for floats."""
    v = rng.integers(0, 4, shape)
    x = make(rng, shape, dtype)
    x = (v % 2).astype(x.dtype) if dtype == "bool" else v.astype(x.dtype)
    if dtype in FLOATS and dtype != "bfloat16" and x.size > 2:  # (the harness cannot compare bfloat16 NaNs)
        x.reshape(-1)[rng.permutation(x.size)[:2]] = np.nan
    return x


def _sort_samples(rng, dtype, ties=True):
    for desc in (False, True):
        for shape, axis in (((), -1), ((1,), 0), ((7,), -1), ((127,), 0), ((3, 129), -1), ((3, 129), 0),
                            ((4, 5, 6), -2), ((2, 0, 3), 1), ((5, 0), -1)):
            yield Sample((make(rng, shape, dtype),), dict(axis=axis, descending=desc))
        if ties:
            yield Sample((_ties(rng, (3, 129), dtype),), dict(axis=-1, descending=desc), desc="ties and NaNs")
            yield Sample((_ties(rng, (9, 4, 3), dtype),), dict(axis=0, descending=desc), desc="ties and NaNs")


def _distinct_samples(samples):
    """The samples without ties or NaNs: the differentiable rows (gradcheck needs distinct values)."""
    def gen(rng, dtype):
        return samples(rng, dtype, ties=False)

    return gen


def _ties_samples(samples):
    def gen(rng, dtype):
        return (s for s in samples(rng, dtype) if s.desc == "ties and NaNs")

    return gen


def _argsort_ref(x, axis=-1, descending=False, stable=True):
    """Stable order of the dense ranks of x (NaN ranks last); descending sorts the negated ranks, so equal
    elements keep their original order either way."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    _, rank = np.unique(x, return_inverse=True, equal_nan=True)
    rank = rank.reshape(x.shape).astype(np.int64)
    return np.argsort(-rank if descending else rank, axis=axis, kind="stable")


def _sort_ref(x, axis=-1, descending=False, stable=True):
    if x.ndim == 0:
        return x.copy()
    return np.take_along_axis(x, _argsort_ref(x, axis, descending), axis)


def _sort_with_indices_ref(x, axis=-1, descending=False, stable=True):
    return _sort_ref(x, axis, descending), _argsort_ref(x, axis, descending)


def _unstable_samples(rng, dtype):
    for s in _sort_samples(rng, dtype):
        yield Sample(s.args, dict(s.kwargs, stable=False), s.desc)


def _unstable_ref(x, axis=-1, descending=False, stable=False):
    return _sort_ref(x, axis, descending), x, axis


def _check_permutation(idx, values, x, axis, msg):
    """``idx`` along ``axis`` is a permutation (or a k-subset) that gathers ``values`` out of ``x``."""
    i = host(idx)
    assert i.dtype == np.int64, f"{msg}: indices dtype {i.dtype}"
    if x.ndim == 0:
        assert i.shape in ((), (0,)) and (i.size == 0 or i[()] == 0), f"{msg}: indices {i} for a 0-d input"
        return
    got = np.take_along_axis(x, i, axis)
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(values, np.float64), err_msg=msg)
    srt = np.sort(i, axis=axis)
    assert (np.diff(srt, axis=axis) > 0).all(), f"{msg}: repeated indices"


def _compare_unstable_argsort(result, expected, dtype, rtol, atol, msg):
    values, x, axis = expected
    _check_permutation(result, values, x, axis, msg)


def _topk_samples(rng, dtype, ties=True):
    for largest in (True, False):
        for shape, k, axis in (((7,), 3, -1), ((127,), 127, 0), ((3, 129), 5, -1), ((3, 129), 1, 0),
                               ((4, 5, 6), 2, -2), ((5, 4), 0, 0), ((2, 0, 3), 2, 2), ((), 1, -1)):
            yield Sample((make(rng, shape, dtype), k), dict(axis=axis, largest=largest))
        if ties:
            yield Sample((_ties(rng, (3, 129), dtype), 10), dict(largest=largest), desc="ties and NaNs")


def _topk_ref(x, k, axis=-1, largest=True, sorted=True):  # noqa: A002
    if x.ndim == 0:
        return x.copy(), x, axis
    v = _sort_ref(x, axis, largest)
    return np.take(v, np.arange(k), axis=axis), x, axis


def _compare_topk(result, expected, dtype, rtol, atol, msg):
    """Values as the reference; indices any that gather them (PyTorch leaves the order of ties unspecified)."""
    values, x, axis = expected
    assert isinstance(result, tuple) and len(result) == 2, f"{msg}: expected (values, indices)"
    assert_close(result[0], values, dtype, rtol, atol, msg + " values")
    _check_permutation(result[1], values, x, axis, msg + " indices")


# -------------------------------------------------------------------------------------------------- unique
def _unique_samples(rng, dtype):
    for s in ((), (1,), (7,), (127,), (3, 129), (2, 0, 3)):
        yield Sample((make(rng, s, dtype),))
    yield Sample((_ties(rng, (3, 129), dtype),), desc="ties and NaNs")
    yield Sample((_ties(rng, (4, 5, 6), dtype),), desc="ties and NaNs")


def _np_unique(index=False, inverse=False, counts=False):
    """NumPy's sorted ``unique`` (np.unique_values no longer sorts integers), each NaN distinct."""
    def ref(x):  # return_index=True: NumPy then sorts stably (the order of distinct NaNs is defined)
        r = list(np.unique(x, return_index=True, return_inverse=inverse, return_counts=counts, equal_nan=False))
        if not index:
            del r[1]
        if not (index or inverse or counts):
            return r[0]
        if inverse:
            r[1 + index] = r[1 + index].reshape(x.shape)
        return tuple(r)

    return ref


def _unique_torch_samples(rng, dtype):
    yield Sample((_ties(rng, (3, 129), dtype),))
    yield Sample((_ties(rng, (3, 129), dtype),), dict(return_inverse=True))
    yield Sample((_ties(rng, (4, 5, 6), dtype),), dict(return_inverse=True, return_counts=True))
    yield Sample((make(rng, (127,), dtype),), dict(return_counts=True))
    yield Sample((make(rng, (), dtype),), dict(return_inverse=True, return_counts=True), desc="0-d")
    rows = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 1], [0, 0, 0], [0, 1, 1]])
    yield Sample((rows.astype(make(rng, (1,), dtype).dtype),), dict(axis=0, return_inverse=True, return_counts=True),
                 desc="unique rows")
    yield Sample((rows.T.astype(make(rng, (1,), dtype).dtype).copy(),), dict(axis=-1, return_inverse=True),
                 desc="unique columns")
    yield Sample((make(rng, (0, 3), dtype),), dict(return_inverse=True, return_counts=True), desc="empty")


def _unique_torch_ref(x, sorted=True, return_inverse=False, return_counts=False, axis=None):  # noqa: A002
    r = list(np.unique(x, return_index=True, return_inverse=return_inverse, return_counts=return_counts, axis=axis,
                       equal_nan=False))  # return_index=True: a stable sort (defined order of distinct NaNs)
    del r[1]
    if not (return_inverse or return_counts):
        return r[0]
    if return_inverse:
        r[1] = r[1].reshape(x.shape if axis is None else (-1,))
    return tuple(r)


# --------------------------------------------------------------------------------------------- searchsorted
def _searchsorted_samples(rng, dtype):
    for side in ("left", "right"):
        kw = dict(side=side)
        yield Sample((np.sort(make(rng, (7,), dtype)), make(rng, (5,), dtype)), kw)
        yield Sample((np.sort(make(rng, (129,), dtype)), make(rng, (3, 127), dtype)), kw)
        yield Sample((np.sort(_ties(rng, (127,), dtype)), _ties(rng, (2, 9), dtype)), kw, desc="ties and NaNs")
        yield Sample((np.sort(make(rng, (1,), dtype)), make(rng, (), dtype)), kw, desc="0-d x2")
        yield Sample((np.sort(make(rng, (7,), dtype)), 1), kw, desc="scalar x2")
        yield Sample((np.sort(make(rng, (7,), dtype)), make(rng, (0,), dtype)), kw, desc="empty x2")
        yield Sample((make(rng, (0,), dtype), make(rng, (4,), dtype)), kw, desc="empty x1")
        x1 = make(rng, (9,), dtype)
        yield Sample((x1, make(rng, (6,), dtype)), dict(side=side, sorter=np.argsort(x1, kind="stable")),
                     desc="sorter")
        yield Sample((np.sort(make(rng, (3, 7), dtype), axis=-1), make(rng, (3, 5), dtype)), kw, desc="N-D x1")
        x1 = make(rng, (2, 4, 9), dtype)
        yield Sample((x1, make(rng, (2, 4, 3), dtype)), dict(side=side, sorter=np.argsort(x1, -1).astype("int32")),
                     desc="N-D x1 with sorter")


def _searchsorted_ref(x1, x2, side="left", sorter=None):
    if x1.ndim == 1:
        return np.asarray(np.searchsorted(x1, x2, side=side, sorter=sorter), np.int64)
    out = np.zeros(np.shape(x2), np.int64)
    for r in np.ndindex(x1.shape[:-1]):
        out[r] = np.searchsorted(x1[r], x2[r], side=side, sorter=None if sorter is None else sorter[r])
    return out


OP_INFOS = [
    OpInfo("sort", tk.sort, _sort_ref, _distinct_samples(_sort_samples), ALL),
    OpInfo("sort_ties", tk.sort, _sort_ref, _ties_samples(_sort_samples), ALL, differentiable=False),
    OpInfo("argsort", tk.argsort, _argsort_ref, _sort_samples, ALL, differentiable=False),
    OpInfo("argsort_unstable", tk.argsort, _unstable_ref, _unstable_samples, NUMERIC, differentiable=False,
           compare=_compare_unstable_argsort),
    OpInfo("sort_with_indices", tk.sort_with_indices, _sort_with_indices_ref, _distinct_samples(_sort_samples), ALL),
    OpInfo("sort_with_indices_ties", tk.sort_with_indices, _sort_with_indices_ref, _ties_samples(_sort_samples), ALL,
           differentiable=False),
    OpInfo("topk", tk.topk, _topk_ref, _distinct_samples(_topk_samples), NUMERIC, compare=_compare_topk),
    OpInfo("topk_ties", tk.topk, _topk_ref, _ties_samples(_topk_samples), NUMERIC, compare=_compare_topk,
           differentiable=False),
    OpInfo("unique_values", tk.unique_values, _np_unique(), _unique_samples, ALL, differentiable=False),
    OpInfo("unique_counts", tk.unique_counts, _np_unique(counts=True), _unique_samples, ALL, differentiable=False),
    OpInfo("unique_inverse", tk.unique_inverse, _np_unique(inverse=True), _unique_samples, ALL, differentiable=False),
    OpInfo("unique_all", tk.unique_all, _np_unique(True, True, True), _unique_samples, ALL, differentiable=False),
    OpInfo("unique", tk.unique, _unique_torch_ref, _unique_torch_samples, ALL, differentiable=False),
    OpInfo("searchsorted", tk.searchsorted, _searchsorted_ref, _searchsorted_samples, NUMERIC, differentiable=False),
]
