"""Elementwise ops: the array API 2024.12 set plus activations (sigmoid, erf, rsqrt, relu, gelu, silu...).

Each op is one row of a table (name → kind). The kind fixes the dtype rule (PyTorch's promotion with weak
Python scalars) and what inputs are allowed; one generic entry per arity validates, broadcasts, promotes,
allocates the output (or checks ``out=``) and dispatches to the backend registered under the op's name.
Backends receive ``(out, *operands, compute_dtype, **params)`` where operands are Arrays or Python scalars
and ``compute_dtype`` is the dtype to compute in (float32 for float16/bfloat16 results, like the kernels).
"""

from __future__ import annotations

import builtins
import sys

from . import dtypes as _dt
from .array import Array
from .device import CPU
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, broadcast_shapes, describe

# kinds of unary ops
#   float : int/bool inputs promote to the default float dtype, output float
#   num   : numbers in, same dtype out (bool refused)
#   round : floor/ceil/trunc/round: identity on ints and bools
#   pred  : any numbers in, bool out
#   lnot  : anything in, bool out
#   bits  : integers and bool only, same dtype out
UNARY = {
    "abs": "num", "negative": "num", "positive": "num", "square": "num", "sign": "num",
    "floor": "round", "ceil": "round", "trunc": "round", "round": "round",
    "exp": "float", "expm1": "float", "exp2": "float", "log": "float", "log1p": "float", "log2": "float",
    "log10": "float", "sqrt": "float", "rsqrt": "float", "reciprocal": "float",
    "sin": "float", "cos": "float", "tan": "float", "asin": "float", "acos": "float", "atan": "float",
    "sinh": "float", "cosh": "float", "tanh": "float", "asinh": "float", "acosh": "float", "atanh": "float",
    "sigmoid": "float", "erf": "float", "gelu": "float", "silu": "float", "softplus": "float",
    "mish": "float", "elu": "float", "leaky_relu": "num", "relu": "num", "logit": "float",
    "isnan": "pred", "isinf": "pred", "isfinite": "pred", "signbit": "pred",
    "logical_not": "lnot", "bitwise_invert": "bits", "nan_to_num": "num",
    "lgamma": "float", "digamma": "float", "polygamma": "float",
}
# kinds of binary ops
#   arith : promoted dtype out
#   float : promoted, then int/bool → default float (true division, atan2...)
#   cmp   : promoted for the comparison, bool out
#   logic : bool out
#   bits  : integers and bool only, promoted
BINARY = {
    "add": "arith", "subtract": "arith", "multiply": "arith", "floor_divide": "arith", "remainder": "arith",
    "pow": "arith", "maximum": "arith", "minimum": "arith", "fmod": "arith", "trunc_divide": "arith",
    "divide": "float", "atan2": "float", "hypot": "float", "logaddexp": "float", "copysign": "float",
    "nextafter": "float",
    "equal": "cmp", "not_equal": "cmp", "less": "cmp", "less_equal": "cmp", "greater": "cmp",
    "greater_equal": "cmp",
    "logical_and": "logic", "logical_or": "logic", "logical_xor": "logic",
    "bitwise_and": "bits", "bitwise_or": "bits", "bitwise_xor": "bits", "bitwise_left_shift": "bits",
    "bitwise_right_shift": "bits",
}
_NO_BOOL = {"negative", "positive", "subtract", "sign", "abs", "square", "relu", "leaky_relu", "nan_to_num",
            "floor_divide", "remainder", "fmod", "trunc_divide", "pow", "bitwise_left_shift", "bitwise_right_shift"}
_HALF = (_dt.float16, _dt.bfloat16)
# the ops defined for complex arrays (PyTorch's and the array API's set); the others refuse them. abs is real.
COMPLEX_UNARY = {"abs", "negative", "positive", "square", "sign", "exp", "expm1", "log", "log1p", "log2", "log10",
                 "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                 "asinh", "acosh", "atanh", "sigmoid", "isnan", "isinf", "isfinite", "logical_not", "exp2"}
COMPLEX_BINARY = {"add", "subtract", "multiply", "divide", "pow", "equal", "not_equal", "logical_and",
                  "logical_or", "logical_xor"}
_ORDERING = {"less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "clip"}


def _complex_refused(op, *args):
    why = ("complex numbers have no order" if op in _ORDERING else "it is not defined for complex numbers")
    raise OpTypeError(f"{op}: complex arrays are not supported ({', '.join(describe(a) for a in args)}): {why}; "
                      f"hint: apply it to real(x), imag(x) or abs(x)")


def half_common(x1, x2):
    """The half dtype two comparison operands promote to (float16 with int64 or a Python number), else None:
    both backends round the operands to it before comparing in float32, as PyTorch's promotion says."""
    d1 = x1._dtype if isinstance(x1, Array) else None
    d2 = x2._dtype if isinstance(x2, Array) else None
    if d1 in _HALF and (d2 is None or d2 is d1 or d2.kind in "biu"):
        return d1
    if d2 in _HALF and (d1 is None or d1.kind in "biu"):
        return d2
    return None
_CAT = _dt._CAT


def _scalar_cat(x) -> int:
    t = type(x)
    if t is builtins.float:
        return 2
    if t is builtins.int:
        return 1
    if t is builtins.bool:
        return 0
    return _dt._scalar_kind(x)


def _norm_scalar(op, x):
    """Arrays pass; Python/NumPy numbers pass as Python scalars; 0-d NumPy arrays and others are refused."""
    if isinstance(x, Array):
        return x
    t = type(x)
    if t is builtins.float or t is builtins.int or t is builtins.bool:
        return x
    try:
        cat = _dt._scalar_kind(x)
    except TypeError:
        raise OpTypeError(f"{op}: expected an Array or a Python number, got {describe(x)}; hint: convert with "
                          f"tkernels.asarray(...) first") from None
    return (builtins.bool, builtins.int, builtins.float, builtins.complex)[cat](x)


def _out_check(op, out, shape, dtype):
    if not isinstance(out, Array):
        raise OpTypeError(f"{op}: out must be an Array, got {describe(out)}")
    if out.shape != shape:
        raise OpValueError(f"{op}: out has shape {out.shape} but the result has shape {shape} (broadcast of the "
                           f"inputs); in-place ops cannot change the shape of their target")
    for n, st in zip(out._shape, out._strides):
        if st == 0 and n > 1:
            raise RuntimeError(f"{op}: cannot write into {describe(out)}: it is an expanded (broadcast) view whose "
                               f"elements share memory; hint: write into a .copy() instead")
    if _CAT[dtype.kind] > _CAT[out.dtype.kind]:
        raise OpTypeError(f"{op}: the result dtype {dtype} cannot be cast to the dtype of out ({out.dtype}); "
                          f"hint: convert the inputs or use an out of a wider kind")


_COMPUTE = {d: (_dt.float32 if d is _dt.float16 or d is _dt.bfloat16 else d) for d in _dt.all_dtypes}


def _compute_dtype(d: _dt.DType) -> _dt.DType:
    return _COMPUTE[d]


def unary(op: str, x, *, out: Array | None = None, **params) -> Array:
    """The generic entry of unary elementwise ops (see ``UNARY``)."""
    if out is None and x.__class__ is Array and x._dtype.kind == "f":
        # fast path, the common case: a float array, a fresh output (same result as the general path below)
        kind = UNARY[op]
        if kind != "bits":
            d = x._dtype
            impls = x._device._impls
            empty = impls.get("empty")
            impl = impls.get(op)
            if empty is not None and impl is not None:
                o = empty(x._shape, _dt.bool if kind == "pred" or kind == "lnot" else d, x._device)
                impl(o, x, _dt.bool if kind == "lnot" else _COMPUTE[d], **params)
                return o
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    kind = UNARY[op]
    d = x._dtype
    k = d.kind
    if k == "c":
        return _complex_unary(op, x, out, params)
    if kind == "float":
        rd = d if k == "f" else _dt.get_default_dtype()
    elif kind in ("num", "round"):
        if k == "b" and op in _NO_BOOL:
            raise OpTypeError(f"{op}: not supported for bool arrays ({describe(x)}); hint: use logical_not or "
                              f"convert with astype")
        rd = d
    elif kind == "bits":
        if k == "f":
            raise OpTypeError(f"{op}: only integer and bool arrays are supported, got {describe(x)}")
        rd = d
    else:
        rd = _dt.bool
    if out is None:
        out = _empty(x._shape, rd, x._device)
    else:
        _out_check(op, out, x._shape, rd)
        if out._device != x._device:
            raise RuntimeError(f"{op}: out is on {out.device} but the input is on {x.device}")
    lookup(op, x._device)(out, x, _compute_dtype(rd if kind != "pred" else d), **params)
    return out


def _complex_unary(op, x, out, params):
    if op not in COMPLEX_UNARY:
        _complex_refused(op, x)
    from ._complex import check_device

    check_device(op, x)
    kind = UNARY[op]
    d = x._dtype
    rd = _dt.bool if kind in ("pred", "lnot") else _dt.to_real(d) if op == "abs" else d
    if out is None:
        out = _empty(x._shape, rd, x._device)
    else:
        _out_check(op, out, x._shape, rd)
        if out._device != x._device:
            raise RuntimeError(f"{op}: out is on {out.device} but the input is on {x.device}")
    lookup(op, x._device)(out, x, d, **params)  # computed in the complex dtype (abs writes its real result)
    return out


_BCAST: dict = {}  # (shape, ...) -> their broadcast shape (shapes repeat in training loops)


def _broadcast_cached(shapes: tuple, op: str) -> tuple:
    """``broadcast_shapes(*shapes)`` remembered per tuple of shapes (its error, naming every shape, otherwise)."""
    shape = _BCAST.get(shapes)
    if shape is None:
        shape = broadcast_shapes(*shapes, op=op)
        if len(_BCAST) < 1024:
            _BCAST[shapes] = shape
    return shape


def binary(op: str, x1, x2, *, out: Array | None = None) -> Array:
    """The generic entry of binary elementwise ops (see ``BINARY``); one side may be a Python scalar."""
    # fast path, the common case: float arrays of one dtype, shape and device, or a float array and a Python
    # int/float (weak: the array's dtype wins), with a fresh output or an ``out`` of that dtype, shape and
    # device that is not an expanded view (in-place updates: optimizers); the same result as the general path
    # (and two arrays of one dtype and device whose shapes broadcast: bias additions, masks, scales)
    c1, c2 = x1.__class__, x2.__class__
    if c1 is Array:
        a = x1
        shape = a._shape
        if c2 is Array:
            ok = x2._dtype is x1._dtype and x2._device is x1._device
            if ok and x2._shape != shape:
                shape = _broadcast_cached((shape, x2._shape), op)
        else:
            ok = c2 is float or c2 is int
    elif c2 is Array:
        a = x2
        shape = a._shape
        ok = c1 is float or c1 is int
    else:
        ok = False
    if ok and a._dtype.kind == "f":
        kind = BINARY[op]
        if kind == "arith" or kind == "float":
            d = a._dtype
            dev = a._device
            impl = dev._impls.get(op)
            if impl is not None:
                if out is None:
                    empty = dev._impls.get("empty")
                    if empty is not None:
                        o = empty(shape, d, dev)
                        impl(o, x1, x2, _COMPUTE[d])
                        return o
                elif out.__class__ is Array and out._dtype is d and out._device is dev and out._shape == shape \
                        and 0 not in out._strides:
                    impl(out, x1, x2, _COMPUTE[d])
                    return out
        elif out is None and kind != "bits":
            d = a._dtype
            dev = a._device
            impls = dev._impls
            empty = impls.get("empty")
            impl = impls.get(op)
            if empty is not None and impl is not None:
                o = empty(shape, _dt.bool, dev)
                impl(o, x1, x2, _COMPUTE[d] if kind == "cmp" else _dt.bool)
                return o
    a1 = isinstance(x1, Array)
    a2 = isinstance(x2, Array)
    if a1 and a2 and x1._device is not x2._device and x1._device != x2._device:
        if x2.ndim == 0 and x2._device is CPU:  # a 0-d cpu array acts like a scalar (PyTorch)
            x2, a2 = x2.item(), False
        elif x1.ndim == 0 and x1._device is CPU:
            x1, a1 = x1.item(), False
        else:
            raise RuntimeError(f"{op}: expected all arrays on the same device, but found {x1.device} and "
                               f"{x2.device} ({describe(x1)}, {describe(x2)}); hint: move one with .to()")
    if a1 and a2:
        d1, d2 = x1._dtype, x2._dtype
        s1, s2 = x1._shape, x2._shape
        dt = d1 if d1 is d2 else _dt.promote_arrays(d1, d2, len(s1), len(s2))
        dev = x1._device
        shape = s1 if s1 == s2 else broadcast_shapes(s1, s2, op=op)
    elif a1:
        x2 = _norm_scalar(op, x2)
        dt = _dt.promote_weak(x1._dtype, _scalar_cat(x2))
        dev, shape = x1._device, x1._shape
    elif a2:
        x1 = _norm_scalar(op, x1)
        dt = _dt.promote_weak(x2._dtype, _scalar_cat(x1))
        dev, shape = x2._device, x2._shape
    else:
        raise OpTypeError(f"{op}: at least one argument must be an Array, got {describe(x1)} and {describe(x2)}")
    kind = BINARY[op]
    if dt.kind == "c" or (a1 and x1._dtype.kind == "c") or (a2 and x2._dtype.kind == "c"):
        if op not in COMPLEX_BINARY:
            _complex_refused(op, x1, x2)
        from ._complex import check_device

        check_device(op, x1, x2)
    if kind == "arith":
        if dt.kind == "b" and op in _NO_BOOL:
            hint = "use logical_xor or convert with astype" if op == "subtract" else "convert with astype"
            raise OpTypeError(f"{op}: not supported for bool arrays ({describe(x1)}, {describe(x2)}); hint: {hint}")
        rd = cd = dt
    elif kind == "float":
        rd = cd = dt if dt.kind in "fc" else _dt.get_default_dtype()
    elif kind == "cmp":
        rd, cd = _dt.bool, dt
    elif kind == "logic":
        rd, cd = _dt.bool, _dt.bool
    else:
        if dt.kind == "f" or dt.kind == "b" and op in _NO_BOOL:  # shifts: integers only (array API)
            raise OpTypeError(f"{op}: only integer{'' if op in _NO_BOOL else ' and bool'} arrays are supported, got "
                              f"{describe(x1)} and {describe(x2)}")
        rd = cd = dt
    if out is None:
        out = _empty(shape, rd, dev)
    else:
        _out_check(op, out, shape, rd)
        if out._device != dev:
            raise RuntimeError(f"{op}: out is on {out.device} but the inputs are on {dev}")
    lookup(op, dev)(out, x1, x2, _COMPUTE[cd])
    return out


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(shape, dtype, device)


# ------------------------------------------------------------------------------------ the public entries
def _make_unary(name):
    def fn(x, /, *, out=None):
        return unary(name, x, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (array API semantics; PyTorch dtype rules). ``out=`` writes in place."
    return fn


def _make_binary(name):
    def fn(x1, x2, /, *, out=None):
        return binary(name, x1, x2, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` with broadcasting; one side may be a Python scalar (weak in "
                  f"promotion). ``out=`` writes in place.") + _BINARY_NOTES.get(name, "")
    return fn


_BINARY_NOTES = {"floor_divide": (
    "\n\n    Floats: ``floor(x1 / x2)`` as NumPy and PyTorch compute it, not the array API's special cases for "
    "infinities: ``+-inf // finite`` is NaN (the standard: +-inf) and ``finite // -+inf`` of the opposite sign "
    "is -1.0 (the standard: -0.0). Chosen so that ``x1 == x2 * (x1 // x2) + x1 % x2`` keeps holding with "
    "``remainder``, and autograd matches ``torch.floor_divide``; tests/ARRAY_API.md lists the suite's cases.")}


_module = sys.modules[__name__]
_PARAMETRIZED = {"gelu", "softplus", "elu", "leaky_relu", "round", "nan_to_num", "logit", "polygamma"}
for _name in UNARY:
    if _name not in _PARAMETRIZED:
        setattr(_module, _name, _make_unary(_name))
for _name in BINARY:
    setattr(_module, _name, _make_binary(_name))


def round(x, /, *, decimals: int = 0, out=None):  # noqa: A001
    """Round half to even, like NumPy and PyTorch; ``decimals`` as in ``torch.round``."""
    return unary("round", x, out=out, decimals=int(decimals))


def gelu(x, /, *, approximate: str = "none", out=None):
    """GELU: ``x * Φ(x)`` (exact, with erf) or the tanh approximation (``approximate="tanh"``)."""
    if approximate not in ("none", "tanh"):
        raise OpValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return unary("gelu", x, out=out, approximate=approximate)


def softplus(x, /, *, beta: float = 1.0, threshold: float = 20.0, out=None):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (PyTorch)."""
    return unary("softplus", x, out=out, beta=float(beta), threshold=float(threshold))


def elu(x, /, *, alpha: float = 1.0, out=None):
    """ELU: ``x`` where positive, ``alpha (exp(x) - 1)`` elsewhere."""
    return unary("elu", x, out=out, alpha=float(alpha))


def leaky_relu(x, /, *, negative_slope: float = 0.01, out=None):
    """``x`` where positive, ``negative_slope x`` elsewhere."""
    return unary("leaky_relu", x, out=out, negative_slope=float(negative_slope))


def logit(x, /, *, eps: float | None = None, out=None):
    """``log(x / (1 - x))``, inputs clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return unary("logit", x, out=out, eps=None if eps is None else float(eps))


def polygamma(n: int, x, /, *, out=None):
    """The n-th derivative of the digamma function (n = 0: ``digamma``); like ``scipy.special.polygamma``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OpValueError(f"polygamma: n must be a non-negative int, got {n!r}")
    if n == 0:
        return unary("digamma", x, out=out)
    return unary("polygamma", x, out=out, n=n)


def nan_to_num(x, /, *, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, out=None):
    """Replace NaN by ``nan`` and ±inf by ``posinf``/``neginf`` (default: the dtype's finite extremes)."""
    return unary("nan_to_num", x, out=out, nan=nan, posinf=posinf, neginf=neginf)


def _ternary_prepare(op, args, names):
    arrays = [a for a in args if isinstance(a, Array)]
    if not arrays:
        raise OpTypeError(f"{op}: at least one of {', '.join(names)} must be an Array")
    dev = arrays[0]._device
    for a in arrays[1:]:
        if a._device != dev:
            raise RuntimeError(f"{op}: expected all arrays on the same device, but found {dev} and {a.device} "
                               f"({', '.join(describe(x) for x in arrays)})")
    args = [a if isinstance(a, Array) or a is None else _norm_scalar(op, a) for a in args]
    shape = broadcast_shapes(*(a._shape for a in arrays), op=op)
    return args, dev, shape


def _stored_scalars(op, rd, *values):
    """Python-number sides of where/clip, which the result stores as they are: rounded once to a float16 or
    bfloat16 result here, as the kernels compute halves in float32 (they would round twice)."""
    if rd not in _HALF:
        return values
    return tuple(v if v is None or isinstance(v, Array) else _dt.literal_scalar(v, rd, op) for v in values)


def where(condition, x1, x2, /, *, out=None):
    """``x1`` where ``condition`` is true, else ``x2``; all three broadcast; scalars allowed for x1/x2. x1 and x2
    promote as in binary ops (``result_type``: a 0-d array ranks below a dimensioned one, as in PyTorch)."""
    if out is None and condition.__class__ is Array and condition._dtype is _dt.bool:
        # fast path, the common case (masks in gradients, masked_fill): a float array and a Python float or an
        # array of its dtype, all on one device; the same result as the general path below
        a = x2 if x2.__class__ is Array else x1
        if a.__class__ is Array and a._dtype.kind == "f" and a._device is condition._device:
            o = x1 if a is x2 else x2
            if o.__class__ is float or (o.__class__ is Array and o._dtype is a._dtype and o._device is a._device):
                d = a._dtype
                if d in _HALF:
                    x1, x2 = _stored_scalars("where", d, x1, x2)
                shape = condition._shape
                key = tuple(v._shape for v in (condition, x1, x2) if v.__class__ is Array)
                if key[1] != shape or key[-1] != shape:
                    shape = _broadcast_cached(key, "where")
                dev = a._device
                r = lookup("empty", dev)(shape, d, dev)
                lookup("where", dev)(r, condition, x1, x2, _COMPUTE[d])
                return r
    if not isinstance(condition, Array):
        raise OpTypeError(f"where: condition must be an Array, got {describe(condition)}")
    if condition._dtype is not _dt.bool:  # the array API and PyTorch take a bool condition only
        raise OpTypeError(f"where: condition must be a bool array, got {describe(condition)}; hint: compare it, "
                          f"e.g. where(mask != 0, x1, x2), or convert it with astype(bool)")
    (c, a, b), dev, shape = _ternary_prepare("where", (condition, x1, x2), ("condition", "x1", "x2"))
    rd = _dt.result_type(a, b)  # PyTorch's rule: 0-d arrays rank below dimensioned ones
    if rd.kind == "c":
        from ._complex import check_device

        check_device("where", c, dtype=rd)
    a, b = _stored_scalars("where", rd, a, b)
    if out is None:
        out = _empty(shape, rd, dev)
    else:
        _out_check("where", out, shape, rd)
    lookup("where", dev)(out, c, a, b, _compute_dtype(rd))
    return out


def clip(x, /, min=None, max=None, *, out=None):  # noqa: A002
    """Clamp to ``[min, max]`` (either may be None, a scalar or an Array; NaN propagates like PyTorch)."""
    if not isinstance(x, Array):
        raise OpTypeError(f"clip: expected an Array, got {describe(x)}")
    (x, lo, hi), dev, shape = _ternary_prepare("clip", (x, min, max), ("x", "min", "max"))
    if x.dtype.kind == "b":
        raise OpTypeError(f"clip: not supported for bool arrays ({describe(x)})")
    rd = _dt.result_type(*(v for v in (x, lo, hi) if v is not None))
    if rd.kind == "c":
        _complex_refused("clip", x, lo, hi)
    lo, hi = _stored_scalars("clip", rd, lo, hi)
    if out is None:
        out = _empty(shape, rd, dev)
    else:
        _out_check("clip", out, shape, rd)
    lookup("clip", dev)(out, x, lo, hi, _compute_dtype(rd))
    return out


def lerp(start, end, weight, /, *, out=None):
    """``start + weight * (end - start)``, broadcasting; floating dtypes."""
    (s, e, w), dev, shape = _ternary_prepare("lerp", (start, end, weight), ("start", "end", "weight"))
    rd = _dt.result_type(s, e, w)
    if rd.kind != "f":
        raise OpTypeError(f"lerp: floating inputs are required, got {describe(start)} and {describe(end)}")
    if out is None:
        out = _empty(shape, rd, dev)
    else:
        _out_check("lerp", out, shape, rd)
    lookup("lerp", dev)(out, s, e, w, _compute_dtype(rd))
    return out
