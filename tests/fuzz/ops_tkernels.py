"""The op table of the ``tkernels`` array-API namespace, compared with NumPy: each row's ``fn(m, ...)`` is called
with ``m = tkernels`` and, as the reference, with ``m = numpy`` (NumPy 2 has the standard's names), unless the row
gives its own NumPy ``ref``."""

from __future__ import annotations

import numpy as np

from . import gens as G
from .cases import DTYPES, FLOATS, INTS
from .ops_autograd import NUM, Op

INTB = INTS + ("bool",)


def _u(name, dtypes=FLOATS, kind="any", **kw):
    return Op(name, lambda m, x, _n=name: getattr(m, _n)(x), G.unary(kind), dtypes, **kw)


def _b(name, dtypes=NUM, scalars=True, **kw):
    return Op(name, lambda m, x, y, _n=name: getattr(m, _n)(x, y), G.binary(scalars=scalars), dtypes, **kw)


def _red(name, dtypes=NUM, tol=4.0):
    return Op(name, lambda m, x, _n=name, dim=None, keepdim=False: getattr(m, _n)(x, axis=dim, keepdims=keepdim),
              G.reduce_gen(), dtypes, tol=tol)


def _sort_ref(x, dim, descending):
    if not descending:
        return np.sort(x, axis=dim, stable=True)
    return np.flip(np.sort(x, axis=dim, stable=True), axis=dim)


def _argsort_ref(x, dim, descending):
    if not descending:
        return np.argsort(x, axis=dim, stable=True)
    n = x.shape[dim]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis=dim), axis=dim, stable=True), axis=dim)


_SORT = G.with_params(G.unary(min_dims=1), dim=lambda d, s: G.dim_of(d, G.nd0(s), wider=False),
                      descending=G.p_bool)

TK_OPS = [
    *(_u(n, NUM) for n in ("abs", "sign", "floor", "ceil", "trunc", "round", "square", "positive")),
    _u("negative", ("int8", "int16", "int32", "int64") + FLOATS),
    *(_u(n, DTYPES) for n in ("isnan", "isinf", "isfinite", "logical_not")),
    _u("signbit", FLOATS), _u("bitwise_invert", INTB),
    *(_u(n) for n in ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos",
                      "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "reciprocal")),
    *(_b(n, DTYPES) for n in ("add", "multiply", "equal", "not_equal", "maximum", "minimum", "logical_and",
                              "logical_or", "logical_xor")),
    *(_b(n) for n in ("subtract", "divide", "floor_divide", "remainder", "fmod", "pow", "less", "less_equal", "greater",
                      "greater_equal")),
    *(_b(n, FLOATS) for n in ("atan2", "hypot", "copysign", "logaddexp")),
    _b("nextafter", FLOATS, scalars=False),
    *(_b(n, INTB) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(_b(n, INTS) for n in ("bitwise_left_shift", "bitwise_right_shift")),
    *(_red(n, DTYPES) for n in ("sum", "prod", "max", "min", "any", "all", "count_nonzero")),
    _red("mean", FLOATS),
    Op("std", lambda m, x, dim, correction: m.std(x, axis=dim, correction=correction),
       G.with_params(G.unary(), dim=G.p_dim_or_none, correction=lambda d, s: d.sample((0, 1))), FLOATS, tol=8),
    Op("var", lambda m, x, dim, correction: m.var(x, axis=dim, correction=correction),
       G.with_params(G.unary(), dim=G.p_dim_or_none, correction=lambda d, s: d.sample((0, 1))), FLOATS, tol=8),
    Op("argmax", lambda m, x, dim, keepdim: m.argmax(x, axis=dim, keepdims=keepdim),
       G.with_params(G.unary(), dim=G.p_dim, keepdim=G.p_bool), NUM),
    Op("argmin", lambda m, x, dim, keepdim: m.argmin(x, axis=dim, keepdims=keepdim),
       G.with_params(G.unary(), dim=G.p_dim, keepdim=G.p_bool), NUM),
    Op("cumulative_sum", lambda m, x, dim: m.cumulative_sum(x, axis=dim),
       G.with_params(G.unary(min_dims=1), dim=G.p_dim), NUM, tol=4),
    Op("reshape", lambda m, x, shape: m.reshape(x, shape), G.with_params(G.unary(), shape=G.factor_shape), DTYPES),
    Op("permute_dims", lambda m, x, dims: m.permute_dims(x, dims), G.with_params(G.unary(), dims=G.perm_of), DTYPES),
    Op("matrix_transpose", lambda m, x: m.matrix_transpose(x), G.unary(), DTYPES),
    Op("concat", lambda m, xs, dim: m.concat(xs, axis=dim), G.seq_of_arrays(same=False), DTYPES),
    Op("stack", lambda m, xs, dim: m.stack(xs, axis=dim), G.seq_of_arrays(same=True), DTYPES),
    Op("squeeze", lambda m, x, dim: m.squeeze(x, axis=dim), G.with_params(G.unary(), dim=G.p_dim), DTYPES),
    Op("expand_dims", lambda m, x, dim: m.expand_dims(x, axis=dim),
       G.with_params(G.unary(), dim=lambda d, s: d.int(-G.nd0(s) - 2, G.nd0(s) + 1)), DTYPES),
    Op("flip", lambda m, x, dim: m.flip(x, axis=dim), G.with_params(G.unary(), dim=G.p_dim_or_none), DTYPES),
    Op("roll", lambda m, x, shift, dim: m.roll(x, shift, axis=dim),
       G.with_params(G.unary(), shift=lambda d, s: d.int(-4, 4), dim=G.p_dim_or_none), DTYPES),
    Op("moveaxis", lambda m, x, a, b: m.moveaxis(x, a, b), G.with_params(G.unary(), a=G.p_dim, b=G.p_dim), DTYPES),
    Op("broadcast_to", lambda m, x, size: m.broadcast_to(x, size), G.expand_gen, DTYPES),
    Op("tile", lambda m, x, reps: m.tile(x, reps),
       G.with_params(G.unary(), reps=lambda d, s: tuple(d.int(0, 2) for _ in range(d.int(1, 3)))), DTYPES),
    Op("unstack", lambda m, x, dim: m.unstack(x, axis=dim), G.with_params(G.unary(min_dims=1), dim=G.p_dim), DTYPES),
    Op("take", lambda m, x, i, dim: m.take(x, i, axis=dim), G.index_gen(), DTYPES),
    Op("take_along_axis", lambda m, x, i, dim: m.take_along_axis(x, i, axis=dim), G.index_gen(for_gather=True),
       DTYPES),
    Op("where", lambda m, c, x, y: m.where(c, x, y), G.where_gen, DTYPES),
    Op("clip", lambda m, x: m.clip(x, -1.5, 2.0), G.unary(), FLOATS),
    Op("sort", lambda m, x, dim, descending: m.sort(x, axis=dim, descending=descending, stable=True), _SORT, NUM,
       ref=_sort_ref),
    Op("argsort", lambda m, x, dim, descending: m.argsort(x, axis=dim, descending=descending, stable=True), _SORT,
       NUM, ref=_argsort_ref),
    Op("matmul", lambda m, x, y: m.matmul(x, y), G.matmul_gen, NUM, tol=16),
]
