"""Elementwise ops on NumPy. Each impl writes into ``out`` (allocated by the entry) and computes in
``compute`` (float32 for half results, as the GPU kernels do). NumPy's floating-point warnings are off around
every backend call (the package's ``_silent``), so overflows and domain errors are values here, as in PyTorch."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from scipy import special as _special

from ...array import Array
from ...dispatch import register
from ...elementwise import BINARY, UNARY, half_common
from ...validation import integer_division_by_zero, negative_integer_power
from . import _threads
from ._erf import erf as _erf
from ._util import npv, operand

_np = np


def _sigmoid(x, out):
    # 1 / (1 + exp(-x)) overflows to inf for very negative x, which still gives the exact 0.0
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


def _silu(x, out):
    s = np.empty_like(out)
    _sigmoid(x, s)
    np.multiply(x, s, out=out)


def _gelu(x, out, approximate="none"):
    if approximate == "tanh":
        inner = np.sqrt(2.0 / np.pi).astype(x.dtype) * (x + x.dtype.type(0.044715) * x * x * x)
        np.multiply(x * x.dtype.type(0.5), 1 + np.tanh(inner), out=out)
    else:
        e = _erf(x * x.dtype.type(1 / np.sqrt(2.0)))  # (before out is written: out may be x)
        e += 1
        np.multiply(x, x.dtype.type(0.5), out=out)
        out *= e


def _softplus(x, out, beta=1.0, threshold=20.0):
    bx = x * x.dtype.type(beta)
    y = np.logaddexp(0, bx) / x.dtype.type(beta)
    np.copyto(out, np.where(bx > threshold, x, y), casting="unsafe")


def _mish(x, out):
    sp = np.empty_like(x)
    _softplus(x, sp)
    np.multiply(x, np.tanh(sp), out=out)


def _elu(x, out, alpha=1.0):
    np.copyto(out, np.where(x > 0, x, x.dtype.type(alpha) * np.expm1(np.minimum(x, 0))), casting="unsafe")


def _leaky_relu(x, out, negative_slope=0.01):
    np.copyto(out, np.where(x > 0, x, x * np.asarray(negative_slope, dtype=x.dtype)), casting="unsafe")


_ZERO_RUN = 1 << 15  # elements per maximum() call of relu's contiguous path
_ZERO_RUNS_MAX = 1 << 17  # and up to how many elements it goes by runs
_ZEROS: dict = {}  # NumPy float dtype -> a read-only run of _ZERO_RUN zeros


def _zeros_run(dt: np.dtype) -> np.ndarray:
    z = _ZEROS.get(dt)
    if z is None:
        z = np.zeros(_ZERO_RUN, dt)
        z.flags.writeable = False
        z = _ZEROS[dt] = z
    return z


def _relu(x, out):
    # maximum propagates NaN, like torch.relu. Against a scalar 0 NumPy runs maximum's scalar loop (~10 µs for
    # 32768 float32 values, one shared core); against an array of zeros, its SIMD loop (~2 µs): contiguous
    # float arrays of one dtype take runs of a cached zeros array (the same bits: NaN payloads kept, -0.0 -> 0.0);
    # above _ZERO_RUNS_MAX values, where the passes are memory-bound, one call against the scalar (262,144
    # float32 values: 56 us vs 60 us by runs; 2M: 590 vs 658 us; and a part of a split makes one call)
    dt = x.dtype
    if dt.kind == "f" and out.dtype == dt and x.flags.c_contiguous and out.flags.c_contiguous and x.size \
            and x.size <= _ZERO_RUNS_MAX:
        xf, of = x.reshape(-1), out.reshape(-1)
        z = _zeros_run(dt)
        n = xf.size
        if n <= _ZERO_RUN:
            np.maximum(xf, z[:n], out=of)
            return
        for i in range(0, n, _ZERO_RUN):
            j = min(i + _ZERO_RUN, n)
            np.maximum(xf[i:j], z[:j - i], out=of[i:j])
        return
    np.maximum(x, dt.type(0), out=out, casting="unsafe")


def _logit(x, out, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    np.log(x / (1 - x), out=out, casting="unsafe")


def _rsqrt(x, out):
    np.sqrt(x, out=out, casting="unsafe")
    _reciprocal(out, out)


def _reciprocal(x, out):
    if x.dtype.kind == "c":  # as 1 / x (the array API's rule): 1 / 0 is complex infinity (inf + nan j), as in
        np.divide(x.dtype.type(1), x, out=out, casting="unsafe")  # PyTorch; np.reciprocal gives nan + nan j
    else:
        np.reciprocal(x, out=out, casting="unsafe")


def _cpx(re, im, dtype):
    """A complex array from its components (``re + 1j * im`` would turn an infinite ``im`` times 1j into NaN and
    lose the sign of zeros)."""
    z = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype)
    z.real, z.imag = re, im
    return z


def _log1p(x, out):
    if x.dtype.kind != "c":
        np.log1p(x, out=out, casting="unsafe")
        return
    # NumPy's complex log1p is log(1 + z), which loses the real part for small |z| (log1p(1e-8j) has real part
    # 5e-17, NumPy says 0): there, Re = log1p(x (2 + x) + y^2) / 2 and Im = atan2(y, 1 + x), exact to rounding
    re, im = x.real, x.imag
    r = np.log(_cpx(1 + re, im, x.dtype))
    small = (np.abs(re) < 0.5) & (np.abs(im) < 0.5)
    if small.any():
        fine = _cpx(np.log1p(re * (2 + re) + im * im) / 2, np.arctan2(im, 1 + re), x.dtype)
        r = np.where(small, fine, r)
    np.copyto(out, r, casting="unsafe")


def _expm1(x, out):
    if x.dtype.kind != "c":
        np.expm1(x, out=out, casting="unsafe")
        return
    # NumPy's nc_expm1 (expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y) is accurate for finite z; the array API's
    # special cases are set here: zeros keep +0 real parts and their imaginary zero, -inf real parts give -1 (an
    # imaginary zero of y's sign), +inf ones inf cis(y) (y = 0: inf + 0j; y inf/NaN: inf + NaN j), NaN real parts
    # NaN + i y for y = 0, and a finite real part with an inf/NaN imaginary one NaN + NaN j
    re, im = x.real, x.imag
    r = np.expm1(x)
    rr, ri = r.real.copy(), r.imag.copy()
    zero_im = im == 0
    ri = np.where(zero_im, im, ri)
    rr = np.where(zero_im & (re == 0), 0.0, rr)
    bad_im = ~np.isfinite(im)
    neg, pos = re == -np.inf, re == np.inf
    rr = np.where(neg, -1.0, rr)
    ri = np.where(neg, np.where(bad_im, 0.0, np.copysign(0.0, im)), ri)
    rr = np.where(pos & bad_im, np.inf, rr)
    ri = np.where(pos & bad_im, np.nan, ri)
    nan_re = np.isnan(re)
    rr = np.where(nan_re, np.nan, rr)
    ri = np.where(nan_re, np.where(zero_im, im, np.nan), ri)
    fin = np.isfinite(re) & bad_im
    rr = np.where(fin, np.nan, rr)
    ri = np.where(fin, np.nan, ri)
    np.copyto(out, _cpx(rr, ri, x.dtype), casting="unsafe")


def _tanh(x, out):
    if x.dtype.kind != "c":
        np.tanh(x, out=out, casting="unsafe")
        return
    # the array API: tanh(+-inf + i y) = +-1 + i copysign(0, y) for finite y (NumPy, as C99, gives the zero the
    # sign of sin(2y)); the signs are read before out is written (out may be x)
    fix = np.isinf(x.real) & np.isfinite(x.imag)
    zeros = np.copysign(0.0, x.imag[fix]) if fix.any() else None
    np.tanh(x, out=out, casting="unsafe")
    if zeros is not None:
        out.imag[fix] = zeros


def _round(x, out, decimals=0):
    if x.dtype.kind in "iub":
        np.copyto(out, x, casting="unsafe")
    else:
        np.round(x, decimals, out=out)


def _nan_to_num(x, out, nan=0.0, posinf=None, neginf=None):
    np.copyto(out, np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf), casting="unsafe")


def _identity_int(fn):
    def impl(x, out):
        if x.dtype.kind in "iub":
            np.copyto(out, x, casting="unsafe")
        else:
            fn(x, out=out, casting="unsafe")

    return impl


def _ufunc(fn):
    def impl(x, out):
        fn(x, out=out, casting="unsafe")

    return impl


def _lgamma(x, out):
    # the masks and the tiny values' logs are taken before out is written (out may be x)
    neginf = np.isneginf(x)  # log|Γ(-inf)|: +inf (PyTorch; SciPy says -inf)
    tiny = (np.abs(x) < 1e-300) & (x != 0)  # SciPy overflows 1 / x for subnormals: lgamma(x) = -log|x| there
    tiny_log = -np.log(np.abs(x)) if tiny.any() else None
    _special.gammaln(x, out=out, casting="unsafe")
    np.copyto(out, np.inf, where=neginf)
    if tiny_log is not None:
        np.copyto(out, tiny_log, where=tiny, casting="unsafe")


def _digamma(x, out):
    zero = x == 0  # -0.0 too (PyTorch; SciPy gives +inf for -0.0); read before out is written (out may be x)
    _special.psi(x, out=out, casting="unsafe")
    np.copyto(out, -np.inf, where=zero)


def _polygamma(x, out, n=1):
    np.copyto(out, _special.polygamma(n, x), casting="unsafe")


def _sign(x, out):
    if x.dtype.kind == "c":  # z / |z| divided per component, 0 at 0 (the array API; PyTorch's sgn): NumPy's sign
        a = np.abs(x)  # of an infinite z is finite, the standard's division rule gives NaN there
        zero = a == 0  # +0 + 0j for every signed zero (the standard)
        a = np.where(zero, a.dtype.type(1), a)
        np.copyto(out, _cpx(np.where(zero, 0, x.real / a), np.where(zero, 0, x.imag / a), x.dtype), casting="unsafe")
        return
    np.sign(x, out=out, casting="unsafe")


_UNARY_FN = {
    "abs": _ufunc(np.abs), "negative": _ufunc(np.negative), "positive": _ufunc(np.positive),
    "square": _ufunc(np.square), "sign": _sign,
    "floor": _identity_int(np.floor), "ceil": _identity_int(np.ceil), "trunc": _identity_int(np.trunc),
    "round": _round,
    "exp": _ufunc(np.exp), "expm1": _expm1, "exp2": _ufunc(np.exp2), "log": _ufunc(np.log),
    "log1p": _log1p, "log2": _ufunc(np.log2), "log10": _ufunc(np.log10), "sqrt": _ufunc(np.sqrt),
    "rsqrt": _rsqrt, "reciprocal": _reciprocal,
    "sin": _ufunc(np.sin), "cos": _ufunc(np.cos), "tan": _ufunc(np.tan), "asin": _ufunc(np.arcsin),
    "acos": _ufunc(np.arccos), "atan": _ufunc(np.arctan), "sinh": _ufunc(np.sinh), "cosh": _ufunc(np.cosh),
    "tanh": _tanh, "asinh": _ufunc(np.arcsinh), "acosh": _ufunc(np.arccosh),
    "atanh": _ufunc(np.arctanh),
    "sigmoid": _sigmoid, "erf": _erf, "gelu": _gelu, "silu": _silu, "softplus": _softplus,
    "mish": _mish, "elu": _elu, "leaky_relu": _leaky_relu, "relu": _relu, "logit": _logit,
    "isnan": _ufunc(np.isnan), "isinf": _ufunc(np.isinf), "isfinite": _ufunc(np.isfinite),
    "signbit": _ufunc(np.signbit), "logical_not": _ufunc(np.logical_not), "bitwise_invert": _ufunc(np.invert),
    "nan_to_num": _nan_to_num,
    "lgamma": _lgamma, "digamma": _digamma, "polygamma": _polygamma,
}
def _trunc_divide(a, b, out=None, dtype=None, casting="unsafe"):
    """Division rounded toward zero: exact on integers (floor quotient, one up where the signs differ and the
    division is inexact), ``trunc(a / b)`` on floats (PyTorch's ``div(rounding_mode="trunc")``)."""
    cd = np.result_type(a, b) if dtype is None else np.dtype(dtype)
    if cd.kind == "f":
        return np.trunc(np.true_divide(a, b, dtype=cd, casting=casting), out=out, casting=casting)
    q = np.floor_divide(a, b, dtype=cd, casting=casting)
    if cd.kind == "i":
        q += (np.fmod(a, b, dtype=cd, casting=casting) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
    if out is None:
        return q
    np.copyto(out, q, casting=casting)
    return out


_BINARY_FN = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "floor_divide": np.floor_divide,
    "remainder": np.remainder, "fmod": np.fmod, "trunc_divide": _trunc_divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum,
    "divide": np.true_divide, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "copysign": np.copysign, "nextafter": np.nextafter,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
}
assert set(_UNARY_FN) == set(UNARY), set(UNARY) ^ set(_UNARY_FN)
assert set(_BINARY_FN) == set(BINARY), set(BINARY) ^ set(_BINARY_FN)


def _split_unary(fn, tgt: np.ndarray, a: np.ndarray, params: dict, name: str) -> bool:
    """``fn(a, tgt, **params)`` by parts over the intra-op threads when ``tgt`` is large; False when not done."""
    if tgt.size < _threads.SPLIT_MIN_VALUES:
        return False
    return _threads.elementwise(lambda tp, ap: fn(ap, tp, **params), tgt, a, name=name)


def _make_unary(name, fn):
    to_bool = UNARY[name] in ("pred", "lnot")

    def impl(out, x, compute, **params):
        cd = compute.numpy
        a = operand(x, cd)
        o = out._nd
        if o is None:
            o = out._materialize()
        direct = to_bool or o.dtype == cd or cd.kind == "c" and name == "abs"  # |complex|: real, written directly
        tgt = o if direct else np.empty(o.shape, cd)
        if name == "nan_to_num" and not direct:  # default ±inf replacements: the extremes of the result dtype
            fi = ml_dtypes.finfo(o.dtype)
            params = {**params, "posinf": fi.max if params.get("posinf") is None else params["posinf"],
                      "neginf": fi.min if params.get("neginf") is None else params["neginf"]}
        if not _split_unary(fn, tgt, a, params, name):
            fn(a, tgt, **params)
        if not direct:
            np.copyto(o, tgt, casting="unsafe")

    impl.__name__ = f"numpy_{name}"
    return impl


def _int_pow_check(x1, x2, b):
    """An integer base to a negative exponent: a Python scalar one before it wraps to the compute dtype (uint8 ** -2
    is refused, as PyTorch refuses it), negative values inside an array as NumPy refuses them."""
    if (b < 0).any() if isinstance(x2, Array) else x2 < 0:
        raise negative_integer_power("pow", x1, x2)


_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _rounded(x, od: np.dtype, cd: np.dtype):
    """Operand ``x`` of a binary op whose result dtype ``od`` (float16/bfloat16) is computed in ``cd`` (float32):
    cast to ``od`` first, as type promotion says (int32 70000 -> float16 is inf; ``fmod(h, 0.001)`` divides by
    float16's 0.0010004), then widened for the arithmetic."""
    if isinstance(x, Array):
        v = x._nd
        if v is None:
            v = x._materialize()
        if v.dtype == od:
            return v.astype(cd)
    else:
        v = np.asarray(x)
    v = v.astype(od).astype(cd)  # (an overflow to ±inf in the cast is the value)
    return v if isinstance(x, Array) else v[()]


def _make_binary(name, fn):
    is_cmp = BINARY[name] in ("cmp", "logic")
    is_order = BINARY[name] == "cmp"
    int_div = name in ("floor_divide", "remainder", "fmod", "trunc_divide")

    is_pow = name == "pow"

    uname = getattr(fn, "__name__", name)  # (the ufunc's name, as NumPy's warnings give it)

    def part(op, ap, bp):  # a part of a large call (below SPLIT_MIN_VALUES values the call is made whole)
        fn(ap, bp, out=op, casting="unsafe")

    def impl(out, x1, x2, compute):
        cd = compute.numpy
        o = out._nd
        if o is None:
            o = out._materialize()
        hd = half_common(x1, x2) if is_order else None
        if not is_cmp and o.dtype != cd and o.dtype in _HALF:  # half result: operands rounded to it first
            a, b = _rounded(x1, o.dtype, cd), _rounded(x2, o.dtype, cd)
        elif hd is not None:  # a comparison in a half dtype: int64 operands rounded to it (maybe to inf) first
            a, b = _rounded(x1, hd.numpy, cd), _rounded(x2, hd.numpy, cd)
        else:
            a, b = operand(x1, cd), operand(x2, cd)
        if (int_div or is_pow) and cd.kind in "iu":
            if int_div and o.size and (np.asarray(b) == 0).any():  # (PyTorch checks per element)
                raise integer_division_by_zero(name, x1, x2)
            if is_pow:
                _int_pow_check(x1, x2, b)
        if is_cmp or o.dtype == cd:
            if o.size < _threads.SPLIT_MIN_VALUES or not _threads.elementwise(part, o, a, b, name=uname):
                fn(a, b, out=o, casting="unsafe")
        else:
            np.copyto(o, fn(a, b, dtype=cd, casting="unsafe"), casting="unsafe")

    impl.__name__ = f"numpy_{name}"
    return impl


for _n, _f in _UNARY_FN.items():
    register(_n, "numpy")(_make_unary(_n, _f))
for _n, _f in _BINARY_FN.items():
    register(_n, "numpy")(_make_binary(_n, _f))


_SAME_SIZE_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}


def _bits(x, cd, it):
    """``x`` (an array or a scalar) as ``cd``, viewed as the integer type of its size."""
    return (x if isinstance(x, np.ndarray) and x.dtype == cd else np.asarray(x, cd)).view(it)


@register("where", "numpy")
def where(out, cond, x1, x2, compute):
    cd = compute.numpy
    o = npv(out)
    c = npv(cond)
    a, b = operand(x1, cd), operand(x2, cd)
    it = _SAME_SIZE_INT.get(cd.itemsize)
    if it is None or o.dtype != cd or cd.kind not in "fiub" or c.dtype != np.bool_ or o.size < 2048:
        np.copyto(o, np.where(c, a, b), casting="unsafe")
        return
    # np.where branches per element (~4 ns each on a random mask); selecting bits with an all-ones/all-zeros
    # mask is a few vectorized passes, bit-exact (NaN payloads and -0.0 included). A zero side (relu's
    # gradient, masked_fill(0)) needs one mask pass and one AND. (Small outputs: np.where's one call is cheaper.)
    ob = o.view(it)
    ab, bb = _bits(a, cd, it), _bits(b, cd, it)
    if ab.ndim == 0 and ab == 0:
        np.bitwise_and(bb, np.subtract(c, 1, dtype=it, casting="unsafe"), out=ob)  # 0 where cond, -1 elsewhere
        return
    keep_a = np.negative(c, dtype=it, casting="unsafe")  # -1 (all ones) where cond, 0 elsewhere
    if bb.ndim == 0 and bb == 0:
        np.bitwise_and(ab, keep_a, out=ob)
        return
    # x2's side is taken before out is written: out may be x2 itself or overlap it (one ufunc per write
    # handles overlap with its own inputs; the masks are temporaries)
    side_b = np.bitwise_and(bb, ~keep_a)
    np.bitwise_and(ab, keep_a, out=ob)
    np.bitwise_or(ob, side_b, out=ob)


@register("threshold_backward", "numpy")
def threshold_backward(out, grad, y, threshold, compute):
    """``where(y <= threshold, 0, grad)`` in one call: the compare and where backends' NumPy calls (the same
    values and bits)."""
    cd = compute.numpy
    o = npv(out)
    yv = npv(y)
    if yv.dtype != cd:  # a half dtype: the threshold rounded to it, compared in float32 (as half_common says)
        c = np.less_equal(yv.astype(cd), np.asarray(threshold, yv.dtype).astype(cd))
        np.copyto(o, np.where(c, 0.0, npv(grad).astype(cd)), casting="unsafe")
        return
    g = npv(grad)
    if o.size < 2048:
        np.copyto(o, np.where(np.less_equal(yv, threshold), 0.0, g), casting="unsafe")
        return

    def zero_where(op, gp, yp):  # 0 where y <= threshold: a bitwise and with the mask (y <= threshold) - 1
        it = _SAME_SIZE_INT[op.dtype.itemsize]
        mask = np.subtract(np.less_equal(yp, threshold), 1, dtype=it, casting="unsafe")
        np.bitwise_and(gp.view(it), mask, out=op.view(it))

    # (large tensors split over the intra-op threads)
    if not _threads.elementwise(zero_where, o, g, yv, name="threshold_backward"):
        zero_where(o, g, yv)


@register("clip", "numpy")
def clip(out, x, lo, hi, compute):
    cd = compute.numpy
    a = operand(x, cd)
    r = a
    if lo is not None:
        lo = operand(lo, cd)
        r = np.where(np.isnan(lo) if isinstance(lo, np.ndarray) and cd.kind == "f" else False, lo,
                     np.maximum(r, lo))
    if hi is not None:
        hi = operand(hi, cd)
        r = np.where(np.isnan(hi) if isinstance(hi, np.ndarray) and cd.kind == "f" else False, hi,
                     np.minimum(r, hi))
    np.copyto(npv(out), r, casting="unsafe")


@register("lerp", "numpy")
def lerp(out, start, end, weight, compute):
    cd = compute.numpy
    s, e, w = operand(start, cd), operand(end, cd), operand(weight, cd)
    np.copyto(npv(out), s + w * (e - s), casting="unsafe")
