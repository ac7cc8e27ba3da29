"""OpInfos of the reduction and scan family.

References compute in float64 (int64 for integer sums) from the same values, so the comparison measures the
op's own rounding. Rows whose samples hold NaN, infinities or planted zeros (where gradients are undefined) are
separate rows marked ``differentiable=False``, so gradcheck sees only the clean rows.
"""

import warnings

import numpy as np
from scipy import special

import tkernels as tk

from ..harness import ALL, FLOATS, INTS, OpInfo, Sample, make

INF = float("inf")
# the harness's input-unchanged check (assert_array_equal) sees bfloat16 NaN != NaN, so NaN samples skip
# bfloat16 here; test_reduction.py checks bfloat16 NaN propagation
NAN_FLOATS = ("float32", "float64", "float16")

# (shape, axis): full, single axis (first, middle, last, negative), several axes (also negative), 0-d, odd sizes
CASES = [
    ((), None), ((), 0), ((), -1),
    ((1,), None), ((7,), 0), ((127,), -1), ((129,), None),
    ((3, 129), 1), ((3, 129), 0), ((129, 3), None), ((129, 3), -2),
    ((4, 5, 6), 0), ((4, 5, 6), 1), ((4, 5, 6), -1), ((4, 5, 6), (0, 2)), ((4, 5, 6), (-1, -3)),
    ((4, 5, 6), (0, 1, 2)), ((4, 5, 6), None), ((2, 7, 3), -2), ((3, 4), ()),
]
# empty inputs: reductions over an empty axis (sum → 0, prod → 1, any → False...), and empty outputs
EMPTY = [((0,), None), ((2, 0, 3), 1), ((2, 0, 3), (0, 1)), ((2, 0, 3), None)]
EMPTY_OUT = [((2, 0, 3), 2), ((0, 3), -1)]  # the output is empty, the reduced axes are not
ARG_CASES = [(s, a) for s, a in CASES if not isinstance(a, tuple)]


def _ax(x, axis):
    """The NumPy spelling of an axis: every valid axis of a 0-d array means all of it."""
    return None if x.ndim == 0 else axis


def _quiet(fn):
    """References of empty or degenerate slices warn in NumPy where the ops are silent (NaN means, 0/0...)."""
    def ref(*a, **k):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*a, **k)

    return ref


def _f64(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def _make(rng, shape, dtype, data):
    if data == "prod":  # magnitudes near 1 so that products of 129 values stay in float16's range
        v = rng.uniform(0.7, 1.4, shape) * rng.choice([-1.0, 1.0], shape)
        if dtype in FLOATS:
            return np.asarray(v).astype(_np_dtype(dtype))
        return make(rng, shape, dtype, low=-2, high=3)
    if data == "zeros":  # about a third of the values zero, for any/all/count_nonzero
        v = make(rng, shape, dtype, nonzero=True)
        return np.where(rng.random(shape) < 0.35, np.zeros((), v.dtype), v)
    return make(rng, shape, dtype, nonzero=data == "nonzero")


def _np_dtype(dtype):
    return tk.dtypes.as_dtype(dtype).numpy


def reduce_samples(cases=CASES, empty=True, data="uniform", **kwargs):
    """One sample per (shape, axis), keepdims alternating; ``kwargs`` (each a tuple of values) are cycled too."""
    def gen(rng, dtype):
        allc = list(cases) + (EMPTY if empty else []) + EMPTY_OUT
        for i, (shape, axis) in enumerate(allc):
            kw = {k: v[i % len(v)] for k, v in kwargs.items()}
            yield Sample((_make(rng, shape, dtype, data),), dict(axis=axis, keepdims=i % 2 == 1, **kw),
                         desc=f"{shape} axis={axis}")

    return gen


# ----------------------------------------------------------------------------------------- references
def _sum_dtype(x, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float64) if x.dtype.kind == "f" else np.dtype(np.int64)


def _acc_ref(fn):
    def ref(x, axis=None, dtype=None, keepdims=False):
        d = _sum_dtype(x, dtype)
        xc = x.astype(d)
        acc = np.float64 if d.kind == "f" else np.int64 if d.kind in "iu" else d
        return fn(xc, axis=_ax(x, axis), dtype=acc, keepdims=keepdims).astype(d)

    return ref


def _mean_ref(x, axis=None, keepdims=False):
    return np.mean(_f64(x), axis=_ax(x, axis), keepdims=keepdims)


def _var_ref(x, axis=None, correction=0.0, keepdims=False):
    return np.var(_f64(x), axis=_ax(x, axis), ddof=correction, keepdims=keepdims)


def _std_ref(x, axis=None, correction=0.0, keepdims=False):
    return np.sqrt(_var_ref(x, axis, correction, keepdims))


def _plain_ref(fn):
    def ref(x, axis=None, keepdims=False):
        return fn(_f64(x), axis=_ax(x, axis), keepdims=keepdims)

    return ref


def _arg_ref(fn):
    def ref(x, axis=None, keepdims=False):
        if x.ndim == 0:
            return np.zeros((), np.int64)
        return fn(x, axis=axis, keepdims=keepdims).astype(np.int64)

    return ref


def _lse_ref(x, axis=None, keepdims=False):
    x = x.astype(np.float64)
    ax = _ax(x, axis)
    if ax == () or x.ndim == 0:
        return x.copy()
    if x.size == 0:  # scipy cannot take empty arrays with a tuple axis: the sum of no exponentials is 0
        return np.log(np.sum(np.exp(x), axis=ax, keepdims=keepdims))
    return special.logsumexp(x, axis=ax, keepdims=keepdims)


def _count_ref(x, axis=None, keepdims=False):
    return np.asarray(np.count_nonzero(x, axis=_ax(x, axis), keepdims=keepdims), np.int64)


def _scan_ref(fn, identity):
    def ref(x, axis=None, dtype=None, include_initial=False):
        d = _sum_dtype(x, dtype)
        acc = np.float64 if d.kind == "f" else np.int64
        if x.ndim == 0:
            return x.astype(d)
        a = 0 if axis is None else axis
        r = fn(x.astype(d), axis=a, dtype=acc)
        if include_initial:
            shape = list(r.shape)
            shape[a] = 1
            r = np.concatenate([np.full(shape, identity, acc), r], axis=a)
        return r.astype(d)

    return ref


def _vnorm_ref(x, axis=None, keepdims=False, ord=2):  # noqa: A002
    x = x.astype(np.float64)
    ax = _ax(x, axis)
    if ax == ():
        a = np.abs(x)
        return (a != 0).astype(np.float64) if ord == 0 else a
    return np.linalg.vector_norm(x, axis=ax, keepdims=keepdims, ord=ord)


def _mnorm_ref(x, keepdims=False, ord="fro"):  # noqa: A002
    x = x.astype(np.float64)
    if x.shape[-1] * x.shape[-2] == 0:  # NumPy's 'nuc' cannot take empty matrices; both norms are 0 there
        r = np.zeros(x.shape[:-2])
        return r.reshape(r.shape + (1, 1)) if keepdims else r
    return np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


# -------------------------------------------------------------------------------------- special samples
def _sum_dtype_samples(rng, dtype):
    to = {"float16": "float32", "bfloat16": "float32", "float32": "float64", "float64": "float32",
          "bool": "int32"}.get(dtype, "float32")
    wrap = "int8" if dtype in INTS else to  # small integer accumulators wrap around, like NumPy and PyTorch
    for i, (shape, axis) in enumerate([((), None), ((7,), 0), ((3, 129), 1), ((4, 5, 6), (0, 2)), ((0, 3), 0)]):
        yield Sample((make(rng, shape, dtype),), dict(axis=axis, dtype=(to, wrap)[i % 2], keepdims=i == 2))


def _ties(rng, dtype):
    """Integer-valued data: ties everywhere (argmax/argmin must give the first index)."""
    base = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2], [0, 1, 0, 1, 0], [1, 0, 1, 1, 0]])
    d = _np_dtype(dtype)
    yield Sample((base.astype(d),), dict(axis=1), desc="ties rows")
    yield Sample((base.astype(d),), dict(axis=0, keepdims=True), desc="ties columns")
    yield Sample((base.astype(d),), dict(axis=None), desc="ties flat")
    yield Sample((rng.integers(0, 2, (3, 129)).astype(d),), dict(axis=-1), desc="ties 129")


def _nan_data(rng, dtype):
    x = make(rng, (5, 7), dtype)
    x[1, 2] = x[1, 5] = x[3, 0] = np.nan
    x[4, :] = np.nan
    return x


def _arg_samples(rng, dtype):
    yield from reduce_samples(ARG_CASES, empty=False)(rng, dtype)
    yield from _ties(rng, dtype)
    if dtype in NAN_FLOATS:  # NaN counts as the extreme: the first NaN wins, in both argmax and argmin
        x = _nan_data(rng, dtype)
        yield Sample((x,), dict(axis=1), desc="nan rows")
        yield Sample((x,), dict(axis=0, keepdims=True), desc="nan columns")
        yield Sample((x,), dict(axis=None), desc="nan flat")


def _nan_samples(rng, dtype):
    x = _nan_data(rng, dtype)
    for axis in (0, 1, None, (0, 1)):
        yield Sample((x,), dict(axis=axis), desc=f"nan axis={axis}")
    y = make(rng, (3, 4), dtype)
    y[0, 1], y[1, 2] = INF, -INF
    y[2, :] = -INF
    for axis in (0, 1, None):
        yield Sample((y,), dict(axis=axis, keepdims=True), desc=f"inf axis={axis}")


def _lse_samples(rng, dtype):
    yield from reduce_samples()(rng, dtype)
    big = make(rng, (3, 129), dtype, low=50, high=80)  # exp overflows without the shift by the max
    yield Sample((big,), dict(axis=1), desc="large values")


def _var_samples(rng, dtype):
    yield from reduce_samples(correction=(0.0, 1, 0.5, 2))(rng, dtype)
    off = make(rng, (3, 129), dtype, low=0.5, high=1.0) + np.asarray(1000.0, _np_dtype(dtype))
    yield Sample((off,), dict(axis=1, correction=1), desc="large mean")  # two-pass: no catastrophic cancellation


def _scan_samples(data="uniform", aliases=False):
    cases = [((), None), ((1,), None), ((7,), 0), ((127,), -1), ((129,), None), ((3, 129), 1), ((3, 129), 0),
             ((4, 5, 6), 1), ((4, 5, 6), -1), ((4, 5, 6), 0), ((0,), None), ((2, 0, 3), 1), ((2, 0, 3), 2)]

    def gen(rng, dtype):
        for i, (shape, axis) in enumerate(cases):
            x = _make(rng, shape, dtype, data)
            if aliases:
                yield Sample((x, 0 if axis is None else axis), desc=f"{shape} axis={axis}")
            else:
                yield Sample((x,), dict(axis=axis, include_initial=bool(i % 2) and shape != ()),
                             desc=f"{shape} axis={axis}")
        if not aliases and dtype in FLOATS:
            yield Sample((_make(rng, (3, 7), dtype, data),), dict(axis=1, dtype="float64"), desc="dtype=float64")

    return gen


def _vnorm_samples(ords):
    def gen(rng, dtype):
        allc = CASES + EMPTY + EMPTY_OUT
        for i, (shape, axis) in enumerate(allc):
            ord = ords[i % len(ords)]  # noqa: A001
            empty = any(shape[a] == 0 for a in (range(len(shape)) if axis is None or shape == () else
                                                 (axis,) if isinstance(axis, int) else axis))
            if empty and (ord == INF or ord < 0):
                continue  # undefined: an error (tested in test_reduction_errors)
            x = _make(rng, shape, dtype, "zeros" if ord == 0 else "nonzero")
            yield Sample((x,), dict(axis=axis, keepdims=i % 3 == 1, ord=ord), desc=f"{shape} axis={axis} ord={ord}")

    return gen


def _mnorm_samples(ords):
    shapes = [(3, 3), (1, 1), (7, 5), (5, 7), (2, 3, 4), (2, 1, 3, 3), (129, 3), (0, 3), (2, 0, 3), (0, 3, 3)]

    def gen(rng, dtype):
        for i, shape in enumerate(shapes):
            for j, ord in enumerate(ords):  # noqa: A001
                m, n = shape[-2:]
                if (ord in (2, -2) and m * n == 0) or (ord in (1, -1) and n == 0) or (ord in (INF, -INF) and m == 0):
                    continue
                yield Sample((make(rng, shape, dtype),), dict(keepdims=(i + j) % 2 == 1, ord=ord),
                             desc=f"{shape} ord={ord}")

    return gen


# ------------------------------------------------------------------------------------------------- rows
R = reduce_samples
_F32_RED = {"float32": (1e-5, 1e-5)}  # float32 accumulation over a few hundred values, vs a float64 reference
OP_INFOS = [
    OpInfo("sum", tk.sum, _acc_ref(np.sum), R(), ALL, tols=_F32_RED),
    OpInfo("sum_dtype", tk.sum, _acc_ref(np.sum), _sum_dtype_samples, ALL, tols={"float64": (1e-5, 1e-5)}),
    OpInfo("prod", tk.prod, _acc_ref(np.prod), R(data="prod"), ALL, tols=_F32_RED),
    OpInfo("mean", tk.mean, _quiet(_mean_ref), R(), FLOATS, tols=_F32_RED),
    OpInfo("max", tk.max, _plain_ref(np.max), R(empty=False), ALL),
    OpInfo("min", tk.min, _plain_ref(np.min), R(empty=False), ALL),
    OpInfo("max_nan", tk.max, _plain_ref(np.max), _nan_samples, NAN_FLOATS, differentiable=False),
    OpInfo("min_nan", tk.min, _plain_ref(np.min), _nan_samples, NAN_FLOATS, differentiable=False),
    OpInfo("argmax", tk.argmax, _arg_ref(np.argmax), _arg_samples, ALL, differentiable=False),
    OpInfo("argmin", tk.argmin, _arg_ref(np.argmin), _arg_samples, ALL, differentiable=False),
    OpInfo("var", tk.var, _quiet(_var_ref), _var_samples, FLOATS, tols=_F32_RED),
    OpInfo("std", tk.std, _quiet(_std_ref), _var_samples, FLOATS, tols=_F32_RED),
    OpInfo("logsumexp", tk.logsumexp, _quiet(_lse_ref), _lse_samples, FLOATS + ("int64", "bool"),
           tols={"float32": (1e-5, 1e-5), "int64": (1e-5, 1e-5), "bool": (1e-5, 1e-5)}),
    OpInfo("logsumexp_inf", tk.logsumexp, _quiet(_lse_ref), _nan_samples, NAN_FLOATS, differentiable=False),
    OpInfo("any", tk.any, _plain_ref(np.any), R(data="zeros"), ALL, differentiable=False),
    OpInfo("all", tk.all, _plain_ref(np.all), R(data="zeros"), ALL, differentiable=False),
    OpInfo("count_nonzero", tk.count_nonzero, _count_ref, R(data="zeros"), ALL, differentiable=False),
    OpInfo("cumulative_sum", tk.cumulative_sum, _scan_ref(np.cumsum, 0), _scan_samples(), ALL, tols=_F32_RED),
    OpInfo("cumulative_prod", tk.cumulative_prod, _scan_ref(np.cumprod, 1), _scan_samples("prod"), ALL,
           tols=_F32_RED),
    OpInfo("cumsum", tk.cumsum, lambda x, a: _scan_ref(np.cumsum, 0)(x, a), _scan_samples(aliases=True),
           FLOATS + ("int32", "bool"), tols=_F32_RED),
    OpInfo("cumprod", tk.cumprod, lambda x, a: _scan_ref(np.cumprod, 1)(x, a), _scan_samples("prod", True),
           FLOATS + ("int32",), tols=_F32_RED),
    OpInfo("vector_norm", tk.vector_norm, _quiet(_vnorm_ref), _vnorm_samples((2, 1, INF, -INF, 3, 0.5, -1, -2.5)),
           FLOATS, tols=_F32_RED),
    OpInfo("vector_norm_ord0", tk.vector_norm, _vnorm_ref, _vnorm_samples((0,)), FLOATS, differentiable=False),
    OpInfo("matrix_norm", tk.matrix_norm, _mnorm_ref, _mnorm_samples(("fro",)), FLOATS, tols=_F32_RED),
    OpInfo("matrix_norm_ord", tk.matrix_norm, _mnorm_ref, _mnorm_samples(("nuc", 2, -2, 1, -1, INF, -INF)), FLOATS,
           tols=_F32_RED),
]
