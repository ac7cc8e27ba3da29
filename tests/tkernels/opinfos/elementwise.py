"""OpInfos of the elementwise family."""

import numpy as np
from scipy import special

import tkernels as tk

from ..harness import ALL, ALL_NUMERIC, FLOATS, INTS, SIGNED_INTS, OpInfo, Sample, binary_samples, make, unary_samples

NUM = FLOATS + SIGNED_INTS + ("uint8",)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + special.erf(x / np.sqrt(2)))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _trunc_divide(a, b):
    if np.result_type(a, b).kind == "f":
        return np.trunc(np.true_divide(a, b))
    return (a - np.fmod(a, b)) // b  # an exact multiple: floor is trunc


def _f(ref):
    """Integer inputs compute in the default float dtype (float32), like the ops."""
    def r(*a, **k):
        a = [x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype.kind in "biu" else x for x in a]
        return ref(*a, **k)

    return r


U = unary_samples
OP_INFOS = [
    OpInfo("abs", tk.abs, np.abs, U(), NUM),
    OpInfo("negative", tk.negative, np.negative, U(), FLOATS + SIGNED_INTS),
    OpInfo("positive", tk.positive, np.positive, U(), ALL_NUMERIC),
    OpInfo("square", tk.square, np.square, U(), NUM),
    OpInfo("sign", tk.sign, np.sign, U(), FLOATS + SIGNED_INTS, differentiable=False),
    OpInfo("floor", tk.floor, np.floor, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("ceil", tk.ceil, np.ceil, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("trunc", tk.trunc, np.trunc, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("round", tk.round, np.round, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("round_decimals", lambda x: tk.round(x, decimals=2), lambda x: np.round(x, 2), U(), ("float32", "float64"),
           differentiable=False),
    OpInfo("exp", tk.exp, _f(np.exp), U(), FLOATS + INTS),
    OpInfo("expm1", tk.expm1, _f(np.expm1), U(), FLOATS),
    OpInfo("exp2", tk.exp2, _f(np.exp2), U(), FLOATS),
    OpInfo("log", tk.log, _f(np.log), U(low=0.1, high=5), FLOATS + ("int32",)),
    OpInfo("log1p", tk.log1p, np.log1p, U(low=-0.9, high=5), FLOATS),
    OpInfo("log2", tk.log2, np.log2, U(low=0.1, high=5), FLOATS),
    OpInfo("log10", tk.log10, np.log10, U(low=0.1, high=5), FLOATS),
    OpInfo("sqrt", tk.sqrt, _f(np.sqrt), U(low=0.1, high=5), FLOATS + ("int64",)),
    OpInfo("rsqrt", tk.rsqrt, lambda x: 1 / np.sqrt(x), U(low=0.1, high=5), FLOATS),
    OpInfo("reciprocal", tk.reciprocal, lambda x: 1 / x, U(nonzero=True), FLOATS),
    OpInfo("sin", tk.sin, np.sin, U(), FLOATS),
    OpInfo("cos", tk.cos, np.cos, U(), FLOATS),
    OpInfo("tan", tk.tan, np.tan, U(low=-1.2, high=1.2), FLOATS),
    OpInfo("asin", tk.asin, np.arcsin, U(low=-0.95, high=0.95), FLOATS),
    OpInfo("acos", tk.acos, np.arccos, U(low=-0.95, high=0.95), FLOATS),
    OpInfo("atan", tk.atan, np.arctan, U(), FLOATS),
    OpInfo("sinh", tk.sinh, np.sinh, U(), FLOATS),
    OpInfo("cosh", tk.cosh, np.cosh, U(), FLOATS),
    OpInfo("tanh", tk.tanh, np.tanh, U(), FLOATS),
    OpInfo("asinh", tk.asinh, np.arcsinh, U(), FLOATS),
    OpInfo("acosh", tk.acosh, np.arccosh, U(low=1.1, high=5), FLOATS),
    OpInfo("atanh", tk.atanh, np.arctanh, U(low=-0.9, high=0.9), FLOATS),
    OpInfo("sigmoid", tk.sigmoid, _sigmoid, U(low=-8, high=8), FLOATS),
    OpInfo("erf", tk.erf, special.erf, U(), FLOATS),
    OpInfo("lgamma", tk.lgamma, special.gammaln, U(low=-4.7, high=9), FLOATS),
    OpInfo("digamma", tk.digamma, special.psi, U(low=-4.7, high=9), FLOATS),
    OpInfo("polygamma1", lambda x: tk.polygamma(1, x), lambda x: special.polygamma(1, x), U(low=0.2, high=9), FLOATS),
    OpInfo("polygamma3", lambda x: tk.polygamma(3, x), lambda x: special.polygamma(3, x), U(low=0.3, high=9), FLOATS),
    OpInfo("gelu", tk.gelu, _gelu, U(), FLOATS),
    OpInfo("gelu_tanh", lambda x: tk.gelu(x, approximate="tanh"), lambda x: _gelu(x, "tanh"), U(), FLOATS),
    OpInfo("silu", tk.silu, lambda x: x * _sigmoid(x), U(), FLOATS),
    OpInfo("softplus", tk.softplus, _softplus, U(low=-30, high=30), FLOATS),
    OpInfo("softplus_beta", lambda x: tk.softplus(x, beta=2.0, threshold=5.0),
           lambda x: _softplus(x, 2.0, 5.0), U(), FLOATS),
    OpInfo("mish", tk.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), U(), FLOATS),
    OpInfo("elu", lambda x: tk.elu(x, alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), U(), FLOATS),
    OpInfo("leaky_relu", lambda x: tk.leaky_relu(x, negative_slope=0.2), lambda x: np.where(x > 0, x, 0.2 * x),
           U(), FLOATS),
    OpInfo("relu", tk.relu, lambda x: np.maximum(x, 0), U(), FLOATS + SIGNED_INTS),
    OpInfo("logit", tk.logit, lambda x: np.log(x / (1 - x)), U(low=0.05, high=0.95), FLOATS),
    OpInfo("logit_eps", lambda x: tk.logit(x, eps=0.1), lambda x: (lambda c: np.log(c / (1 - c)))(np.clip(x, .1, .9)),
           U(low=0.01, high=0.99), ("float32", "float64")),
    OpInfo("isnan", tk.isnan, np.isnan, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("isinf", tk.isinf, np.isinf, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("isfinite", tk.isfinite, np.isfinite, U(), ALL_NUMERIC, differentiable=False),
    OpInfo("signbit", tk.signbit, np.signbit, U(), FLOATS + SIGNED_INTS, differentiable=False),
    OpInfo("logical_not", tk.logical_not, np.logical_not, U(), ALL, differentiable=False),
    OpInfo("bitwise_invert", tk.bitwise_invert, np.invert, U(), INTS + ("bool",), differentiable=False),
    OpInfo("nan_to_num", tk.nan_to_num, np.nan_to_num, U(), FLOATS, differentiable=False),
    OpInfo("conj", tk.conj, np.conj, U(), FLOATS),
    OpInfo("real", tk.real, np.real, U(), FLOATS),
    OpInfo("imag", tk.imag, lambda x: np.zeros_like(x), U(), FLOATS, differentiable=False),
]

B = binary_samples
OP_INFOS += [
    OpInfo("add", tk.add, np.add, B(), ALL),
    OpInfo("subtract", tk.subtract, np.subtract, B(), ALL_NUMERIC),
    OpInfo("multiply", tk.multiply, np.multiply, B(), ALL),
    OpInfo("divide", tk.divide, _f(np.divide), B(rhs_nonzero=True), FLOATS + INTS,
           tols={"float32": (1e-5, 1e-5)}),
    OpInfo("floor_divide", tk.floor_divide, np.floor_divide, B(rhs_nonzero=True), FLOATS + INTS,
           differentiable=False),
    OpInfo("remainder", tk.remainder, np.remainder, B(rhs_nonzero=True, scalars=(2, 1.5)), FLOATS + INTS,
           differentiable=False),
    OpInfo("fmod", tk.fmod, np.fmod, B(rhs_nonzero=True, scalars=(2, 1.5)), FLOATS + INTS, differentiable=False),
    OpInfo("trunc_divide", tk.trunc_divide, _trunc_divide, B(rhs_nonzero=True, scalars=(2, 1.5)), FLOATS + INTS,
           differentiable=False),
    OpInfo("pow", tk.pow, np.power, B(low=0.5, high=2, rhs_low=-2, rhs_high=2, scalars=(2, 0.5)), FLOATS),
    OpInfo("pow_int", tk.pow, np.power, B(low=-3, high=3, rhs_low=0, rhs_high=4, scalars=(2, 3)), SIGNED_INTS,
           differentiable=False),
    OpInfo("maximum", tk.maximum, np.maximum, B(), ALL_NUMERIC),
    OpInfo("minimum", tk.minimum, np.minimum, B(), ALL_NUMERIC),
    OpInfo("atan2", tk.atan2, np.arctan2, B(), FLOATS),
    OpInfo("hypot", tk.hypot, np.hypot, B(), FLOATS),
    OpInfo("logaddexp", tk.logaddexp, np.logaddexp, B(), FLOATS),
    OpInfo("copysign", tk.copysign, np.copysign, B(), FLOATS, differentiable=False),
    OpInfo("nextafter", tk.nextafter, np.nextafter, B(), ("float32", "float64"), differentiable=False,
           tols={"float32": (0, 0), "float64": (0, 0)}),
]
for _n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    OP_INFOS.append(OpInfo(_n, getattr(tk, _n), getattr(np, _n), B(low=-2, high=2, rhs_low=-2, rhs_high=2), ALL,
                           differentiable=False))
for _n in ("logical_and", "logical_or", "logical_xor"):
    OP_INFOS.append(OpInfo(_n, getattr(tk, _n), getattr(np, _n), B(), ALL, differentiable=False))
for _n, _r in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)):
    OP_INFOS.append(OpInfo(_n, getattr(tk, _n), _r, B(scalars=(3,)), INTS + ("bool",), differentiable=False))
for _n, _r in (("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)):
    OP_INFOS.append(OpInfo(_n, getattr(tk, _n), _r, B(low=0, high=7, rhs_low=0, rhs_high=3, scalars=(2,)),
                           ("int16", "int32", "int64", "uint8"), differentiable=False))


def _where_samples(rng, dtype):
    for s in ((), (7,), (3, 129), (0,), (2, 3, 4)):
        yield Sample((make(rng, s, "bool"), make(rng, s, dtype), make(rng, s, dtype)))
    yield Sample((make(rng, (3, 1), "bool"), make(rng, (1, 4), dtype), make(rng, (4,), dtype)), desc="broadcast")
    yield Sample((make(rng, (3, 4), "bool"), make(rng, (3, 4), dtype), 0), desc="scalar rhs")


def _clip_samples(rng, dtype):
    for s in ((), (7,), (3, 129), (0,)):
        yield Sample((make(rng, s, dtype),), dict(min=-1, max=2))
    yield Sample((make(rng, (3, 5), dtype),), dict(min=None, max=1))
    yield Sample((make(rng, (3, 5), dtype),), dict(min=0, max=None))
    yield Sample((make(rng, (3, 5), dtype), make(rng, (5,), dtype, low=-3, high=-1), make(rng, (3, 1), dtype,
                                                                                           low=1, high=3)),
                 desc="array bounds")


def _clip_ref(x, min=None, max=None):  # noqa: A002
    return np.clip(x, min, max)


def _lerp_samples(rng, dtype):
    for s in ((), (7,), (3, 129), (0,)):
        yield Sample((make(rng, s, dtype), make(rng, s, dtype), make(rng, s, dtype, low=0, high=1)))
    yield Sample((make(rng, (3, 4), dtype), make(rng, (4,), dtype), 0.3), desc="scalar weight")


OP_INFOS += [
    OpInfo("where", tk.where, np.where, _where_samples, ALL, grad_args=(1, 2)),
    OpInfo("clip", tk.clip, _clip_ref, _clip_samples, FLOATS + SIGNED_INTS),
    OpInfo("lerp", tk.lerp, lambda s, e, w: s + w * (e - s), _lerp_samples, FLOATS,
           tols={"float32": (1e-5, 1e-5)}),
]
