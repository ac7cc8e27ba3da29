"""Elementwise ops with PyTorch names. One table row per op: the tkernels entry, the node's name and the
derivative written with differentiable ops (so gradients of gradients work). Broadcast gradients are
reduced to each input's shape by the engine."""

from __future__ import annotations

import cmath
import math

import numpy as _np

import tkernels as tk
from tkernels.validation import OpTypeError, OpValueError, describe, names_op

from ..grad_mode import STATE, no_grad
from ._base import Node, Tensor, check_out, data, needs_grad, wrap

__all__ = []  # filled below


def _export(name, fn):
    globals()[name] = fn
    __all__.append(name)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _write_out(op, tk_fn, out, args, params):
    check_out(op, out, args)
    tk_fn(*[data(a) for a in args], out=out._data, **params)
    out._version.v += 1
    return out


# --------------------------------------------------------------------------------------------- unary
class _UnaryNode(Node):
    _saves = "x"  # "x", "y", "xy" or ""

    def __init__(self, x, params):
        super().__init__((x,))
        self.params = params

    def backward(self, g):
        saved = self.saved_tensors
        x = saved[0] if "x" in self._saves else None
        y = saved[-1] if "y" in self._saves else None
        return (self.formula(g, x, y, **self.params),)


def _unary(name, tk_fn, node_name=None, formula=None, save="x", aliases=()):
    cls = None
    if formula is not None:
        cls = type(node_name, (_UnaryNode,), {"formula": staticmethod(formula), "_saves": save})

    def fn(input, *, out=None, **params):
        if not isinstance(input, Tensor):
            raise OpTypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        if out is not None:
            return _write_out(name, tk_fn, out, (input,), params)
        r = tk_fn(input._data, **params)
        if cls is None or r._dtype.kind not in "fc" or not STATE.grad_enabled or not needs_grad(input):
            return wrap(r)
        node = cls(input, params)
        t = node.output(r)
        node.save(*((input,) if "x" in save else ()), outputs=(t,) if "y" in save else ())
        return t

    fn._node = cls
    _export(name, fn)
    for a in aliases:
        _export(a, fn)
    return fn


def _zeros(g, x, y, **_):
    return g * 0.0


def _torch_sign(x, *, out=None):
    """PyTorch's sign, ``(x > 0) - (x < 0)``: NaN gives 0 and -0.0 gives 0.0 (tkernels keeps the array API's NaN),
    bool is the identity. One extra pass over float results, on every device, without a host sync."""
    if x.dtype is tk.bool:
        if out is None:
            return tk.astype(x, tk.bool, copy=True)
        tk.copy_into(out, x, op="sign")
        return out
    r = tk.sign(x, out=out)
    if x.dtype.kind == "f":
        tk.nan_to_num(r, nan=0.0, out=r)  # sign's results are finite: only its NaNs change
    return r


_S2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K = math.sqrt(2.0 / math.pi)

_unary("abs", tk.abs, "AbsBackward0", lambda g, x, y: g * sign(x), aliases=("absolute",))
_unary("acos", tk.acos, "AcosBackward0", lambda g, x, y: -g * rsqrt(1.0 - x * x), aliases=("arccos",))
# (complex: 1 / (sqrt(z - 1) sqrt(z + 1)), the derivative of the principal acosh; 1 / sqrt(z^2 - 1) has the wrong sign
# left of the imaginary axis)
_unary("acosh", tk.acosh, "AcoshBackward0", lambda g, x, y: g * rsqrt(x - 1.0) * rsqrt(x + 1.0)
       if x._data._dtype.kind == "c" else g * rsqrt((x - 1.0) * (x + 1.0)), aliases=("arccosh",))
_unary("asin", tk.asin, "AsinBackward0", lambda g, x, y: g * rsqrt(1.0 - x * x), aliases=("arcsin",))
_unary("asinh", tk.asinh, "AsinhBackward0", lambda g, x, y: g * rsqrt(x * x + 1.0), aliases=("arcsinh",))
_unary("atan", tk.atan, "AtanBackward0", lambda g, x, y: g / (x * x + 1.0), aliases=("arctan",))
_unary("atanh", tk.atanh, "AtanhBackward0", lambda g, x, y: g / (1.0 - x * x), aliases=("arctanh",))
_unary("ceil", tk.ceil, "CeilBackward0", _zeros, save="")
_unary("floor", tk.floor, "FloorBackward0", _zeros, save="")
_unary("trunc", tk.trunc, "TruncBackward0", _zeros, save="", aliases=("fix",))
def _sign_grad(g, x, y):
    if x._data._dtype.kind != "c":
        return g * 0.0
    # sgn(z) = z / |z|: z.grad = (g - Re(g conj(s)) s) / |z|, 0 at z = 0 (PyTorch's sgn_backward)
    from .complex_ops import conj, real

    a = abs(x)
    s = sign(x)
    return where(eq(a, 0.0), 0.0, (g - real(g * conj(s)) * s) / a)


_unary("sign", _torch_sign, "SignBackward0", _sign_grad, aliases=("sgn",))
globals()["sign"]._node._holomorphic = False
_unary("cos", tk.cos, "CosBackward0", lambda g, x, y: -g * sin(x))
_unary("cosh", tk.cosh, "CoshBackward0", lambda g, x, y: g * sinh(x))
_unary("sin", tk.sin, "SinBackward0", lambda g, x, y: g * cos(x))
_unary("sinh", tk.sinh, "SinhBackward0", lambda g, x, y: g * cosh(x))
_unary("tan", tk.tan, "TanBackward0", lambda g, x, y: g * (1.0 + y * y), save="y")
_unary("tanh", tk.tanh, "TanhBackward0", lambda g, x, y: g * (1.0 - y * y), save="y")
_unary("erf", tk.erf, "ErfBackward0", lambda g, x, y: g * (2.0 / math.sqrt(math.pi)) * exp(-(x * x)))
_unary("lgamma", tk.lgamma, "LgammaBackward0", lambda g, x, y: g * digamma(x))
_unary("digamma", tk.digamma, "DigammaBackward0", lambda g, x, y: g * polygamma(1, x))
_unary("_polygamma_n", lambda x, n, out=None: tk.polygamma(n, x, out=out), "PolygammaBackward0",
       lambda g, x, y, n: g * polygamma(n + 1, x))
__all__.remove("_polygamma_n")


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (``torch.polygamma``): ``polygamma(0, x)`` is ``digamma(x)``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise RuntimeError(f"polygamma(): n must be a non-negative integer, got {n!r}")
    if n == 0:
        return digamma(input, out=out)
    return _polygamma_n(input, out=out, n=n)


__all__.append("polygamma")
_unary("exp", tk.exp, "ExpBackward0", lambda g, x, y: g * y, save="y")
_unary("exp2", tk.exp2, "Exp2Backward0", lambda g, x, y: g * y * math.log(2.0), save="y")
_unary("expm1", tk.expm1, "Expm1Backward0", lambda g, x, y: g * (y + 1.0), save="y")
_unary("log", tk.log, "LogBackward0", lambda g, x, y: g / x)
_unary("log10", tk.log10, "Log10Backward0", lambda g, x, y: g / (x * math.log(10.0)))
_unary("log1p", tk.log1p, "Log1PBackward0", lambda g, x, y: g / (x + 1.0))
_unary("log2", tk.log2, "Log2Backward0", lambda g, x, y: g / (x * math.log(2.0)))
_unary("negative", tk.negative, "NegBackward0", lambda g, x, y: -g, save="", aliases=("neg",))
_unary("positive", tk.positive, "PositiveBackward0", lambda g, x, y: g, save="")
_unary("reciprocal", tk.reciprocal, "ReciprocalBackward0", lambda g, x, y: -g * y * y, save="y")
_unary("rsqrt", tk.rsqrt, "RsqrtBackward0", lambda g, x, y: -0.5 * g * y * y * y, save="y")
_unary("sigmoid", tk.sigmoid, "SigmoidBackward0", lambda g, x, y: g * y * (1.0 - y), save="y")
_unary("sqrt", tk.sqrt, "SqrtBackward0", lambda g, x, y: g / (2.0 * y), save="y")
_unary("square", tk.square, "PowBackward0", lambda g, x, y: 2.0 * g * x)
# PyTorch's threshold_backward: zero where the output is <= 0, the gradient itself elsewhere (a NaN input passes
# its gradient, an infinite gradient at a negative input gives 0: not g * (y > 0))
def _relu_grad(g, x, y):
    if not STATE.grad_enabled:  # no graph of the backward: one tkernels call, without the autograd layer
        ga, ya = g._data, y._data
        if ga._dtype is ya._dtype and ga._shape == ya._shape:
            return wrap(tk.ops.threshold_backward(ga, ya, 0.0))
        return wrap(tk.where(tk.less_equal(ya, 0.0), 0.0, ga))
    return where(le(y, 0.0), 0.0, g)


_unary("relu", tk.relu, "ReluBackward0", _relu_grad, save="y")
_unary("silu", tk.silu, "SiluBackward0",
       lambda g, x, y: g * (sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x)))))
_unary("mish", tk.mish, "MishBackward0",
       lambda g, x, y: g * (tanh(softplus(x)) + x * sigmoid(x) * (1.0 - tanh(softplus(x)) ** 2)))
_unary("elu", tk.elu, "EluBackward0",
       lambda g, x, y, alpha=1.0: g * where(gt(x, 0.0), 1.0, y + alpha) if alpha >= 0 else
       g * where(gt(x, 0.0), 1.0, alpha * exp(x)), save="xy")
_unary("leaky_relu", tk.leaky_relu, "LeakyReluBackward0",
       lambda g, x, y, negative_slope=0.01: g * where(gt(x, 0.0), 1.0, negative_slope))
_unary("softplus", tk.softplus, "SoftplusBackward0",
       lambda g, x, y, beta=1.0, threshold=20.0: g * where(gt(x * beta, threshold), 1.0, sigmoid(x * beta)))
_unary("nan_to_num", tk.nan_to_num, "NanToNumBackward0",
       lambda g, x, y, **_: g * isfinite(x).to(g.dtype))


def _gelu_grad_with_cdf(g, xa, cdf):
    """``g * (cdf + x pdf(x))`` in tkernels calls, written into ``cdf`` (a fresh buffer of the gradient's shape)."""
    e = tk.multiply(xa, -0.5)
    tk.multiply(e, xa, out=e)
    tk.exp(e, out=e)
    pdf = tk.multiply(xa, _S2PI)
    tk.multiply(pdf, e, out=pdf)
    tk.add(cdf, pdf, out=cdf)
    return wrap(tk.multiply(g._data, cdf, out=cdf))


def _gelu_grad(g, x, y, approximate="none"):
    if approximate == "tanh":
        inner = _K * (x + 0.044715 * x * x * x)
        t = tanh(inner)
        return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _K * (1.0 + 3 * 0.044715 * x * x))
    if not STATE.grad_enabled and g._data._dtype is x._data._dtype and g._data._shape == x._data._shape:
        # no graph of the backward (the common case): the same tkernels calls as the formula below, without the
        # autograd layer, into two buffers (GELU over (1024, 256) float32 on cpu: 10 fresh arrays less)
        xa = x._data
        cdf = tk.erf(tk.multiply(xa, 1.0 / math.sqrt(2.0)))
        tk.add(cdf, 1.0, out=cdf)
        tk.multiply(cdf, 0.5, out=cdf)
        return _gelu_grad_with_cdf(g, xa, cdf)
    cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
    return g * (cdf + x * _S2PI * exp(-0.5 * x * x))


def _logit_grad(g, x, y, eps=None):
    d = g / (x * (1.0 - x))
    if eps is None:
        return d
    return where(logical_or(lt(x, eps), gt(x, 1.0 - eps)), 0.0, d)


def _round_grad(g, x, y, decimals=0):
    return g * 0.0


_gelu_any = _unary("gelu", tk.gelu, "GeluBackward0", _gelu_grad)


class _GeluSavedCdf(_gelu_any._node):
    """GeluBackward0 of an exact GELU on the cpu that also saved ``1 + erf(x / sqrt(2))`` from its forward: the
    backward reads it instead of computing erf again (erf is most of GELU's cost in NumPy; on cuda the kernel
    recomputes it, cheaper than reading a saved tensor). The same values and bits as recomputing it."""

    def backward(self, g):
        x, e = self.saved_tensors  # (the version check of x, and the "freed" error after a backward)
        ea = e._data
        if STATE.grad_enabled or g._data._dtype is not ea._dtype or g._data._shape != ea._shape:
            return (_gelu_grad(g, x, None, **self.params),)  # a graph of the backward: the formula
        # the formula's cdf, 0.5 (1 + erf(x / sqrt(2))), in a fresh buffer: e is kept for another backward
        return (_gelu_grad_with_cdf(g, x._data, tk.multiply(ea, 0.5)),)


_GeluSavedCdf.__name__ = _GeluSavedCdf.__qualname__ = "GeluBackward0"
_CDF_DTYPES = (tk.float32, tk.float64)


def _gelu(input, *, approximate="none", out=None):
    if (out is None and approximate == "none" and isinstance(input, Tensor) and STATE.grad_enabled
            and needs_grad(input)):
        a = input._data
        if a._device.type == "cpu" and a._dtype in _CDF_DTYPES:
            # the numpy backend's GELU, x * 0.5 * (1 + erf(x / sqrt(2))), as its tkernels calls (the same bits),
            # keeping 1 + erf for the backward
            e = tk.erf(tk.multiply(a, 1.0 / math.sqrt(2.0)))
            tk.add(e, 1.0, out=e)
            r = tk.multiply(a, 0.5)
            tk.multiply(r, e, out=r)
            node = _GeluSavedCdf(input, {"approximate": approximate})
            t = node.output(r)
            node.save(input, wrap(e))
            return t
    return _gelu_any(input, approximate=approximate, out=out)


_gelu._node = _gelu_any._node
__all__.remove("gelu")
_export("gelu", _gelu)
_unary("logit", tk.logit, "LogitBackward0", _logit_grad)
_unary("round", tk.round, "RoundBackward0", _round_grad, save="")

# not differentiable (bool or integer results, or PyTorch declares them so)
for _n in ("isfinite", "isinf", "isnan", "signbit", "logical_not", "bitwise_invert"):
    _unary(_n, getattr(tk, _n))
_export("bitwise_not", globals()["bitwise_invert"])


def isposinf(input):
    return logical_and(isinf(input), gt(input, 0))


def isneginf(input):
    return logical_and(isinf(input), lt(input, 0))


for _f in (isposinf, isneginf):
    _export(_f.__name__, _f)


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


for _f in (resolve_conj, resolve_neg):
    _export(_f.__name__, _f)


# -------------------------------------------------------------------------------------------- binary
class _BinaryNode(Node):
    _saves = "ab"

    def __init__(self, a, b):
        super().__init__((a, b))

    def backward(self, g):
        saved = self.saved_tensors
        i = 0
        a = b = y = None
        if "a" in self._saves:
            a = saved[i] if self._a_t else self._a
            i += self._a_t
        else:
            a = self._a if not self._a_t else None
        if "b" in self._saves:
            b = saved[i] if self._b_t else self._b
            i += self._b_t
        else:
            b = self._b if not self._b_t else None
        if "y" in self._saves:
            y = saved[-1]
        na, nb = self.needs_input_grad
        return (self.grad_a(g, a, b, y) if na else None, self.grad_b(g, a, b, y) if nb else None)


def _array_operand(a, like):
    return wrap(tk.asarray(a, device=like._data._device))


def _binary(name, tk_fn, node_name=None, grad_a=None, grad_b=None, save="ab", aliases=()):
    cls = None
    if grad_a is not None:
        cls = type(node_name, (_BinaryNode,), {"grad_a": staticmethod(grad_a), "grad_b": staticmethod(grad_b),
                                               "_saves": save})

    def fn(input, other, *, out=None):
        a_t = isinstance(input, Tensor)
        b_t = isinstance(other, Tensor)
        if a_t != b_t and isinstance(other if a_t else input, _np.ndarray):  # tensor * ndarray: as PyTorch, the
            if a_t:  # array is made a tensor (its dtype kept) on the tensor's device
                other, b_t = _array_operand(other, input), True
            else:
                input, a_t = _array_operand(input, other), True
        if not (a_t or b_t):
            raise OpTypeError(f"{name}(): expected at least one Tensor argument, got {type(input).__name__} and "
                              f"{type(other).__name__}")
        if out is not None:
            return _write_out(name, tk_fn, out, (input, other), {})
        r = tk_fn(input._data if a_t else input, other._data if b_t else other)
        if cls is None or r._dtype.kind not in "fc" or not STATE.grad_enabled or not needs_grad(input, other):
            return wrap(r)
        node = cls(input, other)
        node._a_t, node._b_t = a_t, b_t
        if not a_t:
            node._a = input
        if not b_t:
            node._b = other
        t = node.output(r)
        ts = []
        if "a" in save and a_t:
            ts.append(input)
        if "b" in save and b_t:
            ts.append(other)
        node.save(*ts, outputs=(t,) if "y" in save else ())
        return t

    fn._tk = tk_fn  # the tkernels entry: in-place methods without a graph call it directly (autograd.methods)
    _export(name, fn)
    for a in aliases:
        _export(a, fn)
    return fn


def _pow_grad_a(g, a, b, y):
    if not isinstance(b, Tensor):
        if b == 0:
            return g * 0.0
        if b == 2 and a._data._dtype.kind == "f":  # pow(a, 1.0) is a, exactly: one pass over the data fewer
            return g * b * a
        return g * b * pow(a, b - 1.0)
    return where(eq(b, 0.0), 0.0, g * b * pow(a, b - 1.0))


def _pow_grad_b(g, a, b, y):
    if not isinstance(a, Tensor):
        if isinstance(a, complex):
            return g * y * cmath.log(a) if a != 0 else g * 0.0
        return g * y * math.log(a) if a > 0 else g * 0.0  # base 0: the gradient PyTorch gives where b >= 0
    if b._data._dtype.kind == "c" or a._data._dtype.kind == "c":  # complex: no order; Re(b) >= 0 at base 0
        from .complex_ops import real

        b_re = real(b)
        return g * where(logical_and(eq(a, 0.0), ge(b_re, 0.0)), 0.0, y * log(a))
    return g * where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, y * log(a))


def _max_grad(g, a, b, y, first=True):
    if not isinstance(b, Tensor) or not isinstance(a, Tensor):
        other = b if first else a
        mine = a if first else b
        return g * (gt(mine, other).to(g.dtype) + 0.5 * eq(mine, other).to(g.dtype))
    mine, other = (a, b) if first else (b, a)
    return g * (gt(mine, other).to(g.dtype) + 0.5 * eq(mine, other).to(g.dtype))


def _min_grad(g, a, b, y, first=True):
    mine, other = (a, b) if first else (b, a)
    return g * (lt(mine, other).to(g.dtype) + 0.5 * eq(mine, other).to(g.dtype))


_binary("add", tk.add, "AddBackward0", lambda g, a, b, y: g, lambda g, a, b, y: g, save="")
def _bool_checked_subtract(x1, x2, check_only=False, **kw):
    """``tk.subtract`` refusing bool tensors, as PyTorch does (NumPy refuses bool - bool only)."""
    for x in (x1, x2):
        if isinstance(x, tk.Array) and x.dtype == tk.bool:
            raise RuntimeError(f"sub(): Subtraction, the `-` operator, with a bool tensor is not supported (got "
                               f"{describe(x1)} and {describe(x2)}). Hint: to invert a mask use the `~` or "
                               f"logical_not() operator; else convert it with .int() first")
    return None if check_only else tk.subtract(x1, x2, **kw)


_binary("subtract", _bool_checked_subtract, "SubBackward0", lambda g, a, b, y: g, lambda g, a, b, y: -g, save="",
        aliases=("sub",))
_binary("multiply", tk.multiply, "MulBackward0", lambda g, a, b, y: g * b, lambda g, a, b, y: g * a,
        aliases=("mul",))
_binary("divide", tk.divide, "DivBackward0", lambda g, a, b, y: g / b, lambda g, a, b, y: -g * a / (b * b),
        aliases=("true_divide",))
_binary("pow", tk.pow, "PowBackward1", _pow_grad_a, _pow_grad_b, save="aby")
def _atan2_recip(a, b):  # 1 / (a^2 + b^2), 0 at the origin (PyTorch's gradient of atan2 there is 0)
    d = a * a + b * b
    return where(eq(d, 0.0), 0.0, 1.0 / d)


_binary("atan2", tk.atan2, "Atan2Backward0", lambda g, a, b, y: g * b * _atan2_recip(a, b),
        lambda g, a, b, y: -g * a * _atan2_recip(a, b), aliases=("arctan2",))
_binary("hypot", tk.hypot, "HypotBackward0", lambda g, a, b, y: g * a / y, lambda g, a, b, y: g * b / y,
        save="aby")
_binary("maximum", tk.maximum, "MaximumBackward0", lambda g, a, b, y: _max_grad(g, a, b, y, True),
        lambda g, a, b, y: _max_grad(g, a, b, y, False))
_binary("minimum", tk.minimum, "MinimumBackward0", lambda g, a, b, y: _min_grad(g, a, b, y, True),
        lambda g, a, b, y: _min_grad(g, a, b, y, False))
_binary("copysign", tk.copysign, "CopysignBackward0",
        lambda g, a, b, y: g * where(eq(a, 0.0), 0.0, y / a), lambda g, a, b, y: g * 0.0, save="ay")
_binary("logaddexp", tk.logaddexp, "LogaddexpBackward0", lambda g, a, b, y: g * sigmoid(a - b),
        lambda g, a, b, y: g * sigmoid(b - a))
_binary("remainder", tk.remainder, "RemainderBackward0", lambda g, a, b, y: g,
        lambda g, a, b, y: -g * floor_divide(a, b))
_binary("fmod", tk.fmod, "FmodBackward0", lambda g, a, b, y: g,
        lambda g, a, b, y: -g * _trunc_divide(a, b))
for _n in ("floor_divide", "nextafter", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"):
    _binary(_n, getattr(tk, _n))
for _n, _a in (("equal", "eq"), ("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"), ("greater", "gt"),
               ("greater_equal", "ge")):
    _binary(_a, getattr(tk, _n), aliases=(_n,) if _n != "equal" else ())


_add, _sub, _div = add, subtract, divide  # the table's versions; the public ones take PyTorch's extra arguments


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``."""
    if alpha != 1:
        other = _mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _add(input, other, out=out)


def subtract(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    if alpha != 1:
        _bool_checked_subtract(data(input), data(other), check_only=True)
        other = _mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _sub(input, other, out=out)


def _trunc_divide(input, other, out=None):
    if out is not None:
        return _write_out("div", tk.trunc_divide, out, (input, other), {})
    return wrap(tk.trunc_divide(data(input), data(other)))


def divide(input, other, *, rounding_mode=None, out=None):
    """True division, or ``rounding_mode="trunc"``/``"floor"`` (not differentiable, like PyTorch)."""
    if rounding_mode is None:
        return _div(input, other, out=out)
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    if rounding_mode != "trunc":
        raise OpValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    return _trunc_divide(input, other, out=out)


_mul = multiply
for _f in (add, subtract, divide):
    _f._tk = globals()["_" + {"add": "add", "subtract": "sub", "divide": "div"}[_f.__name__]]._tk  # same without kwargs
    _export(_f.__name__, _f)
_export("sub", subtract)
_export("div", divide)
_export("true_divide", _div)


# ------------------------------------------------------------------------------------------- ternary
class WhereBackward0(Node):
    def __init__(self, cond, a, b):
        super().__init__((cond, a, b))
        self.cond = cond

    def backward(self, g):
        _, na, nb = self.needs_input_grad
        return (None, where(self.cond, g, 0.0) if na else None, where(self.cond, 0.0, g) if nb else None)


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` else ``other``; ``where(condition)`` is ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise OpTypeError(f"where(): argument 'condition' must be a bool Tensor, got {type(condition).__name__}")
    if out is not None:
        return _write_out("where", tk.where, out, (condition, input, other), {})
    r = tk.where(condition._data, data(input), data(other))
    if r.dtype.kind in "fc" and needs_grad(input, other):
        return WhereBackward0(condition, input, other).output(r)
    return wrap(r)


class ClampBackward1(Node):
    def __init__(self, x, lo, hi):
        super().__init__((x, lo, hi))
        self.lo, self.hi = lo, hi
        self.save(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        lo, hi = self.lo, self.hi
        below = lt(x, lo) if lo is not None else None
        above = gt(x, hi) if hi is not None else None
        # inside: lo <= x <= hi, false at a NaN x (PyTorch's gradient there is 0)
        at_least = ge(x, lo) if lo is not None else None
        at_most = le(x, hi) if hi is not None else None
        inside = logical_and(at_least, at_most) if at_least is not None and at_most is not None else (
            at_least if at_least is not None else at_most)
        nx, nlo, nhi = self.needs_input_grad
        return (where(inside, g, 0.0) if nx else None,
                where(logical_and(below, logical_not(above)) if above is not None else below, g, 0.0)
                if nlo else None,
                where(above, g, 0.0) if nhi else None)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - PyTorch's names
    """Values limited to ``[min, max]`` (numbers or tensors); the gradient flows where not clipped."""
    if min is None and max is None:
        raise RuntimeError(f"clamp(): at least one of 'min' or 'max' must not be None (input shape "
                           f"{list(input.shape)})")
    if out is not None:
        return _write_out("clamp", lambda x, lo, hi, out: tk.clip(x, lo, hi, out=out), out, (input, min, max), {})
    r = tk.clip(input._data, data(min), data(max))
    if r.dtype.kind in "fc" and needs_grad(input, min, max):
        return ClampBackward1(input, min, max).output(r)
    return wrap(r)


class LerpBackward1(Node):
    def __init__(self, s, e, w):
        super().__init__((s, e, w))
        self.s, self.e, self.w = s, e, w

    def backward(self, g):
        ns, ne, nw = self.needs_input_grad
        return (g * (1.0 - self.w) if ns else None, g * self.w if ne else None,
                g * (self.e - self.s) if nw else None)


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``."""
    if out is not None:
        return _write_out("lerp", tk.lerp, out, (input, end, weight), {})
    if any(getattr(getattr(v, "_data", None), "dtype", tk.float32).kind == "c" or isinstance(v, complex)
           for v in (input, end, weight)):  # complex (PyTorch's): the same formula through differentiable ops
        return input + weight * (end - input)
    r = tk.lerp(input._data, data(end), data(weight))
    if needs_grad(input, end, weight):
        return LerpBackward1(input, end, weight).output(r)
    return wrap(r)


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


@names_op("xlogy")
def xlogy(input, other):
    """``input * log(other)``: 0 where ``input == 0`` unless ``other`` is NaN (PyTorch, SciPy)."""
    if not isinstance(input, Tensor):
        input = Tensor._wrap(tk.full((), input, dtype=other.dtype, device=other.device))
    elif not isinstance(other, Tensor):  # a number: log(0) is -inf, not Python's ValueError
        dt = input.dtype if input.dtype.kind == "f" else tk.get_default_dtype()
        other = Tensor._wrap(tk.full((), other, dtype=dt, device=input.device))
    elif other.dtype is not input.dtype:
        rt = tk.result_type(input._data, other._data)
        if rt.kind == "f" and other.dtype is not rt:  # log in the result dtype (float32 for float32 * log(bf16))
            other = other.to(rt)
    with no_grad():
        r = where(logical_and(eq(input, 0.0), logical_not(isnan(other))), 0.0, multiply(input, log(other)))
    if r.dtype.kind in "fc" and STATE.grad_enabled and needs_grad(input, other):
        return XlogyBackward0(input, other).output(r._data)
    return r


class XlogyBackward0(Node):
    """PyTorch's gradients: ``d/dx = xlogy(g, y)``, 0 where ``x == 0`` and ``y <= 0`` (the limit); ``d/dy =
    g x / y``. Built from differentiable ops, so double backward works."""

    def __init__(self, x, y):
        super().__init__((x, y))
        self.x, self.y = x, y

    def backward(self, g):
        x, y = self.x, self.y
        gx = where(logical_and(eq(x, 0.0), le(y, 0.0)), 0.0, xlogy(g, y)) if self.needs_input_grad[0] else None
        gy = g * x / y if self.needs_input_grad[1] else None
        return gx, gy


@names_op("float_power")
def float_power(input, exponent):
    return pow(input.double() if isinstance(input, Tensor) else input,
               exponent.double() if isinstance(exponent, Tensor) else exponent)


def rsub(input, other, *, alpha=1):
    return subtract(other, input, alpha=alpha)


def addcmul(input, tensor1, tensor2, *, value=1):
    return add(input, multiply(tensor1, tensor2), alpha=value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    return add(input, _div(tensor1, tensor2), alpha=value)


def sinc(input):
    if input.dtype is tk.float16 or input.dtype is tk.bfloat16:  # computed in float32, rounded once (DESIGN §6)
        return sinc(input.float()).to(input.dtype)
    px = input * math.pi
    return where(eq(input, 0.0), 1.0, sin(px) / where(eq(input, 0.0), 1.0, px))


def deg2rad(input):
    return input * (math.pi / 180.0)


def rad2deg(input):
    return input * (180.0 / math.pi)


for _f in (where, clamp, lerp, clamp_min, clamp_max, xlogy, float_power, rsub, addcmul, addcdiv, sinc,
           deg2rad, rad2deg):
    _export(_f.__name__, _f)
_export("clip", clamp)
