"""The op table of the autograd API: each row calls one public op through a namespace ``L`` (``L.t`` is
``autograd`` or ``torch``, ``L.F`` is ``nn.functional`` or ``torch.nn.functional``), so one lambda serves ours
and PyTorch's; ``ref`` (optional) is a NumPy reference for the values when PyTorch is absent."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy import special

from . import gens as G
from .cases import DTYPES, FLOATS, INTS

NUM = tuple(d for d in DTYPES if d != "bool")
SIGNED = ("int8", "int16", "int32", "int64") + FLOATS
INTB = INTS + ("bool",)


@dataclasses.dataclass
class Op:
    name: str
    fn: Callable
    gen: Callable
    dtypes: tuple = NUM
    ref: Callable | None = None
    # names an error message of ours may use for this op (default: the name up to a "[")
    names: tuple = ()
    # "all" | "values" (compare the first output only: indices of ties may differ) | "topk"
    compare: str = "all"
    # tolerance factor over the dtype's (reductions over many elements, accumulated differently)
    tol: float = 1.0

    @property
    def error_names(self):
        return self.names or (self.name.split("[")[0],)


def _u(name, ref=None, dtypes=FLOATS, kind="any", f=None, **kw):
    fn = f or (lambda L, x, _n=name: getattr(L.t, _n)(x))
    return Op(name, fn, G.unary(kind), dtypes, ref, **kw)


def _b(name, ref=None, dtypes=NUM, kind="any", scalars=True, f=None, **kw):
    fn = f or (lambda L, x, y, _n=name: getattr(L.t, _n)(x, y))
    return Op(name, fn, G.binary(kind, scalars), dtypes, ref, **kw)


def _red(name, ref=None, dtypes=NUM, dims=True, keepdim=True, none=True, **kw):
    """A reduction over ``dim`` (an int, a tuple, or None where torch takes None)."""
    gen = G.reduce_gen(dims=dims, keepdim=keepdim) if none else G.with_params(G.unary(), dim=G.p_dim,
                                                                                keepdim=G.p_bool)
    return Op(name, lambda L, x, _n=name, **p: getattr(L.t, _n)(x, **p), gen, dtypes, ref, **kw)


def _nnu(name, dtypes=FLOATS, **params):
    return Op(f"F.{name}", lambda L, x, _n=name: getattr(L.F, _n)(x, **params), G.unary(), dtypes, names=(name,))


def _loss(name, gen, dtypes=FLOATS, **kw):
    base = name.split("[")[0]
    return Op(f"F.{name}", lambda L, x, y, _n=base, **p: getattr(L.F, _n)(x, y, **p), gen, dtypes,
              names=(base,), **kw)


def _sig(x):
    x = np.asarray(x)
    if x.dtype.kind in "iub":  # -x of the most negative int wraps around: the reference computes in float64
        x = x.astype(np.float64)
    return 1 / (1 + np.exp(-x))


UNARY = [
    _u("abs", np.abs, NUM),
    _u("neg", np.negative, SIGNED, names=("neg", "negative")),
    _u("sign", np.sign, NUM + ("bool",)),
    _u("sgn", np.sign, NUM),
    _u("floor", np.floor, NUM),
    _u("ceil", np.ceil, NUM),
    _u("trunc", np.trunc, NUM),
    _u("round", np.round, NUM),
    _u("exp", np.exp, DTYPES),
    _u("expm1", np.expm1),
    _u("exp2", np.exp2),
    _u("log", np.log, DTYPES),
    _u("log1p", np.log1p),
    _u("log2", np.log2),
    _u("log10", np.log10),
    _u("sqrt", np.sqrt, DTYPES),
    _u("rsqrt", lambda x: 1 / np.sqrt(x)),
    _u("reciprocal", lambda x: 1 / x, DTYPES),
    _u("sin", np.sin, DTYPES),
    _u("cos", np.cos),
    _u("tan", np.tan),
    _u("asin", np.arcsin),
    _u("acos", np.arccos),
    _u("atan", np.arctan),
    _u("sinh", np.sinh),
    _u("cosh", np.cosh),
    _u("tanh", np.tanh),
    _u("asinh", np.arcsinh),
    _u("acosh", np.arccosh),
    _u("atanh", np.arctanh),
    _u("sigmoid", _sig, DTYPES),
    _u("erf", special.erf),
    _u("lgamma", special.gammaln),
    _u("digamma", special.psi),
    _u("square", np.square, DTYPES),
    _u("isnan", np.isnan, DTYPES),
    _u("isinf", np.isinf, DTYPES),
    _u("isfinite", np.isfinite, DTYPES),
    _u("signbit", np.signbit, NUM),
    _u("logical_not", np.logical_not, DTYPES),
    _u("bitwise_not", np.invert, INTB, names=("bitwise_not", "bitwise_invert")),
    _u("relu", lambda x: np.maximum(x, 0), NUM),
    _u("deg2rad", np.deg2rad),
    _u("rad2deg", np.rad2deg),
    _u("nan_to_num", np.nan_to_num, DTYPES),
    _u("sinc", np.sinc),
    _u("logit", special.logit),
    _u("positive", np.positive, NUM),
    _u("clamp[min,max]", None, NUM, f=lambda L, x: L.t.clamp(x, -1.5, 2.0), names=("clamp", "clip")),
    _u("clamp[min]", None, NUM, f=lambda L, x: L.t.clamp(x, min=0), names=("clamp", "clip")),
    _u("softmax", None, f=lambda L, x: L.t.softmax(x, dim=-1), tol=2),
    _u("log_softmax", None, f=lambda L, x: L.t.log_softmax(x, dim=-1), tol=2),
    _u("float_power[2]", None, NUM, f=lambda L, x: L.t.float_power(x, 2)),
    _u("pow[scalar]", None, NUM, f=lambda L, x: L.t.pow(x, 3), names=("pow",)),
    _u("pow[-1]", None, NUM, f=lambda L, x: L.t.pow(x, -1), names=("pow",)),
]

BINARY = [
    _b("add", np.add, DTYPES),
    _b("sub", np.subtract, NUM, names=("sub", "subtract")),
    _b("mul", np.multiply, DTYPES, names=("mul", "multiply")),
    _b("div", np.true_divide, DTYPES, names=("div", "divide")),
    _b("div[floor]", None, NUM, f=lambda L, x, y: L.t.div(x, y, rounding_mode="floor"), names=("div", "divide")),
    _b("div[trunc]", None, NUM, f=lambda L, x, y: L.t.div(x, y, rounding_mode="trunc"), names=("div", "divide")),
    _b("floor_divide", np.floor_divide),
    _b("remainder", np.remainder),
    _b("fmod", np.fmod),
    _b("pow", np.power),
    _b("atan2", np.arctan2),
    _b("hypot", np.hypot, FLOATS),
    _b("maximum", np.maximum, DTYPES),
    _b("minimum", np.minimum, DTYPES),
    _b("copysign", np.copysign),
    _b("logaddexp", np.logaddexp, FLOATS),
    _b("xlogy", special.xlogy, scalars=False),
    _b("nextafter", np.nextafter, FLOATS, scalars=False),
    _b("eq", np.equal, DTYPES, names=("eq", "equal")),
    _b("ne", np.not_equal, DTYPES, names=("ne", "not_equal")),
    _b("lt", np.less, NUM, names=("lt", "less")),
    _b("le", np.less_equal, NUM, names=("le", "less_equal")),
    _b("gt", np.greater, NUM, names=("gt", "greater")),
    _b("ge", np.greater_equal, NUM, names=("ge", "greater_equal")),
    _b("logical_and", np.logical_and, DTYPES),
    _b("logical_or", np.logical_or, DTYPES),
    _b("logical_xor", np.logical_xor, DTYPES),
    _b("bitwise_and", np.bitwise_and, INTB),
    _b("bitwise_or", np.bitwise_or, INTB),
    _b("bitwise_xor", np.bitwise_xor, INTB),
    _b("bitwise_left_shift", None, INTS),
    _b("bitwise_right_shift", None, INTS),
    _b("float_power", None),
    _b("lerp[0.3]", None, FLOATS,
                                                                         f=lambda L, x, y: L.t.lerp(x, y, 0.3),
                                                                         names=("lerp",)),
]

REDUCTIONS = [
    _red("sum", None, DTYPES, tol=4), _red("mean", None, FLOATS, tol=4), _red("prod", None, DTYPES, none=False, tol=4),
    _red("amax", None, NUM), _red("amin", None, NUM), _red("logsumexp", None, FLOATS, none=False, tol=4),
    _red("nansum", None, FLOATS, tol=4), _red("any", None, DTYPES), _red("all", None, DTYPES),
    _red("std", None, FLOATS, tol=8), _red("var", None, FLOATS, tol=8),
    _red("count_nonzero", None, DTYPES, keepdim=False),
    Op("max[full]", lambda L, x: L.t.max(x), G.unary(), DTYPES, names=("max",)),
    Op("min[full]", lambda L, x: L.t.min(x), G.unary(), DTYPES, names=("min",)),
    Op("max[dim]", lambda L, x, dim, keepdim: L.t.max(x, dim, keepdim), G.with_params(G.unary(), dim=G.p_dim,
       keepdim=G.p_bool), DTYPES, names=("max",)),
    Op("min[dim]", lambda L, x, dim, keepdim: L.t.min(x, dim, keepdim), G.with_params(G.unary(), dim=G.p_dim,
       keepdim=G.p_bool), DTYPES, names=("min",)),
    Op("argmax", lambda L, x, **p: L.t.argmax(x, **p), G.with_params(G.unary(), dim=G.p_dim, keepdim=G.p_bool), NUM),
    Op("argmin", lambda L, x, **p: L.t.argmin(x, **p), G.with_params(G.unary(), dim=G.p_dim, keepdim=G.p_bool), NUM),
    Op("argmax[full]", lambda L, x: L.t.argmax(x), G.unary(), NUM, names=("argmax",)),
    Op("var[correction]", lambda L, x, dim, correction: L.t.var(x, dim=dim, correction=correction),
       G.with_params(G.unary(), dim=G.p_dim_or_none, correction=lambda d, s: d.sample((0, 1, 2))), FLOATS,
       names=("var",), tol=8),
    Op("cumsum", lambda L, x, dim: L.t.cumsum(x, dim), G.with_params(G.unary(), dim=G.p_dim), DTYPES, tol=4),
    Op("cumprod", lambda L, x, dim: L.t.cumprod(x, dim), G.with_params(G.unary(), dim=G.p_dim), DTYPES, tol=4),
    Op("cummax", lambda L, x, dim: L.t.cummax(x, dim), G.with_params(G.unary(), dim=G.p_dim), NUM),
    Op("median[full]", lambda L, x: L.t.median(x), G.unary(), NUM, names=("median",)),
    Op("norm", lambda L, x: L.t.norm(x), G.unary(), FLOATS, tol=4),
]

SHAPE = [
    Op("reshape", lambda L, x, shape: L.t.reshape(x, shape), G.with_params(G.unary(), shape=G.factor_shape), DTYPES),
    Op("permute", lambda L, x, dims: L.t.permute(x, dims), G.with_params(G.unary(), dims=G.perm_of), DTYPES),
    Op("transpose", lambda L, x, d0, d1: L.t.transpose(x, d0, d1), G.with_params(G.unary(), d0=G.p_dim, d1=G.p_dim),
       DTYPES),
    Op("cat", lambda L, xs, dim: L.t.cat(xs, dim), G.seq_of_arrays(same=False), DTYPES),
    Op("stack", lambda L, xs, dim: L.t.stack(xs, dim), G.seq_of_arrays(same=True), DTYPES),
    Op("squeeze[dim]", lambda L, x, dim: L.t.squeeze(x, dim), G.with_params(G.unary(), dim=G.p_dim), DTYPES,
       names=("squeeze",)),
    Op("squeeze", lambda L, x: L.t.squeeze(x), G.unary(), DTYPES),
    Op("unsqueeze", lambda L, x, dim: L.t.unsqueeze(x, dim),
       G.with_params(G.unary(), dim=lambda d, s: d.int(-G.nd0(s) - 2, G.nd0(s) + 1)), DTYPES),
    Op("flip", lambda L, x, dims: L.t.flip(x, dims), G.with_params(G.unary(), dims=lambda d, s: (G.p_dim(d, s),)),
       DTYPES),
    Op("roll", lambda L, x, shifts, dims: L.t.roll(x, shifts, dims),
       G.with_params(G.unary(), shifts=lambda d, s: d.int(-4, 4), dims=lambda d, s: G.p_dim_or_none(d, s)
                     if d.bool(0.5) else None), DTYPES),
    Op("narrow", lambda L, x, **p: L.t.narrow(x, **p), G.narrow_gen, DTYPES),
    Op("expand", lambda L, x, size: x.expand(*size), G.expand_gen, DTYPES),
    Op("flatten", lambda L, x, a, b: L.t.flatten(x, a, b), G.with_params(G.unary(), a=G.p_dim, b=G.p_dim), DTYPES),
    Op("movedim", lambda L, x, a, b: L.t.movedim(x, a, b), G.with_params(G.unary(), a=G.p_dim, b=G.p_dim), DTYPES),
    Op("tile", lambda L, x, reps: L.t.tile(x, reps),
       G.with_params(G.unary(), reps=lambda d, s: tuple(d.int(0, 2) for _ in range(d.int(0, 3)))), DTYPES),
    Op("split", lambda L, x, size, dim: L.t.split(x, size, dim),
       G.with_params(G.unary(), size=lambda d, s: d.int(0, 3), dim=G.p_dim), DTYPES),
    Op("chunk", lambda L, x, n, dim: L.t.chunk(x, n, dim),
       G.with_params(G.unary(), n=lambda d, s: d.int(0, 4), dim=G.p_dim), DTYPES),
    Op("diagonal", lambda L, x, off: L.t.diagonal(x, off), G.with_params(G.unary(), off=lambda d, s: d.int(-2, 2)),
       DTYPES),
    Op("tril", lambda L, x, k: L.t.tril(x, k), G.with_params(G.unary(), k=lambda d, s: d.int(-2, 2)), DTYPES),
    Op("triu", lambda L, x, k: L.t.triu(x, k), G.with_params(G.unary(), k=lambda d, s: d.int(-2, 2)), DTYPES),
    Op("repeat_interleave", lambda L, x, r, dim: L.t.repeat_interleave(x, r, dim),
       G.with_params(G.unary(), r=lambda d, s: d.int(0, 3), dim=G.p_dim), DTYPES),
]

INDEXING = [
    Op("gather", lambda L, x, i, dim: L.t.gather(x, dim, i), G.index_gen(for_gather=True), DTYPES),
    Op("index_select", lambda L, x, i, dim: L.t.index_select(x, dim, i), G.index_gen(), DTYPES),
    Op("take", lambda L, x, i: L.t.take(x, i), G.take_gen, DTYPES),
    Op("take_along_dim", lambda L, x, i, dim: L.t.take_along_dim(x, i, dim), G.index_gen(for_gather=True), DTYPES),
    Op("masked_fill", lambda L, x, m, value: L.t.masked_fill(x, m, value), G.mask_gen, DTYPES),
    Op("where", lambda L, c, x, y: L.t.where(c, x, y), G.where_gen, DTYPES),
    Op("sort", lambda L, x, dim, descending: L.t.sort(x, dim=dim, descending=descending, stable=True),
       G.with_params(G.unary(), dim=G.p_dim, descending=G.p_bool), NUM),
    Op("argsort", lambda L, x, dim, descending: L.t.argsort(x, dim=dim, descending=descending, stable=True),
       G.with_params(G.unary(), dim=G.p_dim, descending=G.p_bool), NUM),
    Op("topk", lambda L, x, **p: L.t.topk(x, **p), G.topk_gen, NUM, compare="topk"),
    Op("kthvalue", lambda L, x, **p: L.t.kthvalue(x, p["k"], p["dim"]), G.topk_gen, NUM, compare="values"),
    Op("matmul", lambda L, x, y: L.t.matmul(x, y), G.matmul_gen, NUM, tol=16),
]

NN = [
    _nnu("relu", NUM), _nnu("gelu"), _nnu("silu"), _nnu("elu"), _nnu("leaky_relu"), _nnu("softplus"), _nnu("mish"),
    _nnu("tanh"), _nnu("sigmoid"),
    Op("F.normalize", lambda L, x: L.F.normalize(x, dim=-1), G.unary(min_dims=1), FLOATS, names=("normalize",),
       tol=4),
    _loss("mse_loss", G.loss_pair(), tol=4), _loss("l1_loss", G.loss_pair(), tol=4),
    _loss("smooth_l1_loss", G.loss_pair(), tol=4), _loss("huber_loss", G.loss_pair(), tol=4),
    _loss("binary_cross_entropy", G.loss_pair("prob"), tol=4),
    _loss("binary_cross_entropy_with_logits", G.loss_pair(target_kind="prob"), tol=4),
    _loss("kl_div", G.loss_pair(target_kind="prob"), tol=4),
    _loss("cross_entropy", G.class_gen(), tol=4), _loss("nll_loss", G.class_gen(), tol=4),
    _loss("cross_entropy[probs]", G.class_gen("probs", "prob"), tol=4),
]

AUTOGRAD_OPS = UNARY + BINARY + REDUCTIONS + SHAPE + INDEXING + NN
