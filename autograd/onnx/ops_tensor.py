"""ONNX mappings of the tensor ops: elementwise, comparisons, casts, shapes and views, indexing and the symbolic
size arithmetic."""

from __future__ import annotations

import math

import numpy as np

from ..jit.graph import Ref
from .builder import register


def _out(node, i=0):
    return node.outputs()[i]


def _odt(b, node, i=0):
    return b.dtype(_out(node, i))


def _in(a):
    """The first argument (``input`` for functions, ``self`` for methods)."""
    return a["input"] if "input" in a else a["self"]


def _dim(d, rank):
    return int(d) + rank if int(d) < 0 else int(d)


# ------------------------------------------------------------------------------------------ elementwise
_BIN = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
        "minimum": "Min", "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor",
        "multiply": "Mul", "subtract": "Sub", "divide": "Div", "true_divide": "Div"}


def _binary(onnx_op):
    def fn(b, node, a):
        dt = _odt(b, node)
        x, y = _in(a), a["other"]
        alpha = a.get("alpha", 1)
        if onnx_op == "Pow" and not isinstance(y, Ref):  # Pow keeps its base's type; the exponent can stay fp32
            return b.op("Pow", b.t(x, dt), b.t(y, dt))
        if onnx_op.startswith("Bitwise") and dt == "bool":  # on bools: the logical ops (and any opset)
            return b.op(onnx_op[7:], b.t(x, dt), b.t(y, dt))
        if onnx_op.startswith("Bitwise") and b.opset < 18:
            b.unsupported(node, "on integers needs opset 18 (BitwiseAnd/Or/Xor)")
        ys = b.t(y, dt)
        if alpha != 1:
            ys = b.op("Mul", ys, b.t(alpha, dt))
        r = b.op(onnx_op, b.t(x, dt), ys)
        if onnx_op == "Div" and a.get("rounding_mode") in ("floor", "trunc") and dt.startswith("float"):
            r = b.op("Floor" if a["rounding_mode"] == "floor" else "Ceil", r) if a["rounding_mode"] == "floor" \
                else b.op("Mul", b.op("Sign", r), b.op("Floor", b.op("Abs", r)))
        return r
    return fn


for _k, _v in _BIN.items():
    register(_k, _k + "_")(_binary(_v))


@register("rsub")
def _rsub(b, node, a):
    dt = _odt(b, node)
    return b.op("Sub", b.t(a["other"], dt), b.op("Mul", b.t(_in(a), dt), b.t(a.get("alpha", 1), dt)))


@register("floor_divide", "floor_divide_")
def _floor_divide(b, node, a):
    dt = _odt(b, node)
    q = b.op("Div", b.t(_in(a), dt), b.t(a["other"], dt))
    return b.op("Floor", q) if dt.startswith("float") else q


@register("remainder", "remainder_")
def _remainder(b, node, a):
    dt = _odt(b, node)
    x, y = b.t(_in(a), dt), b.t(a["other"], dt)
    if dt.startswith("float"):  # Python's sign rule: x - floor(x / y) * y
        return b.op("Sub", x, b.op("Mul", b.op("Floor", b.op("Div", x, y)), y))
    return b.op("Mod", x, y, fmod=0)


def _common(b, xs):
    dts = [b.dtype(x) for x in xs if isinstance(x, Ref)]
    floats = [d for d in dts if d.startswith("float")]
    if floats:
        return floats[0]
    if any(isinstance(x, float) for x in xs):
        return "float32"
    return dts[0] if dts else "int64"


_CMP = {"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
        "greater": "Greater", "less": "Less", "greater_equal": "GreaterOrEqual", "less_equal": "LessOrEqual",
        "not_equal": "Equal"}


def _compare(name, onnx_op):
    def fn(b, node, a):
        x, y = _in(a), a["other"]
        dt = _common(b, [x, y])
        r = b.op(onnx_op, b.t(x, dt), b.t(y, dt))
        return b.op("Not", r) if name in ("ne", "not_equal") else r
    return fn


for _k, _v in _CMP.items():
    register(_k)(_compare(_k, _v))

_LOGIC = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}
for _k, _v in _LOGIC.items():
    register(_k)((lambda o: lambda b, node, a: b.op(o, b.t(_in(a), "bool"), b.t(a["other"], "bool")))(_v))

_UN = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "neg": "Neg", "negative": "Neg",
       "reciprocal": "Reciprocal", "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "sigmoid": "Sigmoid",
       "relu": "Relu", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign",
       "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
       "acosh": "Acosh", "atanh": "Atanh", "isnan": "IsNaN", "logical_not": "Not", "bitwise_not": "BitwiseNot",
       "positive": "Identity", "clone": "Identity", "contiguous": "Identity", "detach": "Identity",
       "alias": "Identity"}
def _unary(onnx_op):
    def fn(b, node, a):
        dt = _odt(b, node)
        return b.op("Not" if onnx_op == "BitwiseNot" and dt == "bool" else onnx_op, b.t(_in(a), dt))
    return fn


for _k, _v in _UN.items():
    register(_k, _k + "_")(_unary(_v))


@register("rsqrt", "rsqrt_")
def _rsqrt(b, node, a):
    return b.op("Reciprocal", b.op("Sqrt", b.t(_in(a), _odt(b, node))))


@register("square", "square_")
def _square(b, node, a):
    x = b.t(_in(a), _odt(b, node))
    return b.op("Mul", x, x)


@register("log1p", "log1p_")
def _log1p(b, node, a):
    dt = _odt(b, node)
    return b.op("Log", b.op("Add", b.t(_in(a), dt), b.const(1, dt)))


@register("expm1", "expm1_")
def _expm1(b, node, a):
    dt = _odt(b, node)
    return b.op("Sub", b.op("Exp", b.t(_in(a), dt)), b.const(1, dt))


@register("log2", "log10")
def _logb(b, node, a):
    dt = _odt(b, node)
    base = 2.0 if node.op == "log2" else 10.0
    return b.op("Div", b.op("Log", b.t(_in(a), dt)), b.const(math.log(base), dt))


@register("isinf")
def _isinf(b, node, a):
    return b.op("IsInf", b.t(_in(a)))


@register("clamp", "clip", "clamp_", "clip_", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_")
def _clamp(b, node, a):
    dt = _odt(b, node)
    op = node.op.rstrip("_")
    lo = a.get("min") if op != "clamp_max" else None
    hi = a.get("max") if op != "clamp_min" else None
    x = b.t(_in(a), dt)
    if isinstance(lo, Ref) or isinstance(hi, Ref):  # tensor bounds: elementwise Max/Min broadcast
        if lo is not None:
            x = b.op("Max", x, b.t(lo, dt))
        return b.op("Min", x, b.t(hi, dt)) if hi is not None else x
    return b.op("Clip", x, b.t(lo, dt) if lo is not None else None, b.t(hi, dt) if hi is not None else None)


@register("where")
def _where(b, node, a):
    dt = _odt(b, node)
    return b.op("Where", b.t(a["condition"], "bool"), b.t(_in(a), dt), b.t(a["other"], dt))


@register("masked_fill", "masked_fill_")
def _masked_fill(b, node, a):
    dt = _odt(b, node)
    return b.op("Where", b.t(a["mask"], "bool"), b.t(a["value"], dt), b.t(_in(a), dt))


_CASTS = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
          "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}


@register("to", "to_copy", "type_as", *_CASTS)
def _to(b, node, a):
    x, dt = _in(a), _odt(b, node)
    return b.t(x, dt) if b.dtype(x) != dt else b.op("Identity", b.t(x))


@register("cpu", "cuda")
def _identity(b, node, a):
    return b.op("Identity", b.t(_in(a)))


# -------------------------------------------------------------------------------------- shapes and views
def _shape_arg(a):
    s = a.get("shape", a.get("size", a.get("sizes")))
    if isinstance(s, tuple | list) and len(s) == 1 and isinstance(s[0], tuple | list):
        s = s[0]
    return list(s)


@register("reshape", "view")
def _reshape(b, node, a):
    return b.op("Reshape", b.t(_in(a)), b.ints(_shape_arg(a)))


@register("view_as", "reshape_as", "expand_as")
def _like(b, node, a):
    op = "Expand" if node.op == "expand_as" else "Reshape"
    return b.op(op, b.t(_in(a)), b.dims(a["other"]))


@register("flatten")
def _flatten(b, node, a):
    x = _in(a)
    r = b.rank(x)
    if r == 0:
        return b.op("Reshape", b.t(x), b.const(np.array([1], np.int64)))
    s, e = _dim(a.get("start_dim", 0), r), _dim(a.get("end_dim", -1), r)
    parts = [p for p in (b.dims(x, 0, s) if s else None, b.const(np.array([-1], np.int64)),
                         b.dims(x, e + 1) if e + 1 < r else None) if p is not None]
    return b.op("Reshape", b.t(x), parts[0] if len(parts) == 1 else b.op("Concat", *parts, axis=0))


@register("unflatten")
def _unflatten(b, node, a):
    x = _in(a)
    r = b.rank(x)
    d = _dim(a["dim"], r)
    parts = [p for p in (b.dims(x, 0, d) if d else None, b.ints(list(a["sizes"])),
                         b.dims(x, d + 1) if d + 1 < r else None) if p is not None]
    return b.op("Reshape", b.t(x), b.op("Concat", *parts, axis=0) if len(parts) > 1 else parts[0])


@register("permute")
def _permute(b, node, a):
    x = _in(a)
    dims = _shape_arg({"shape": a["dims"]})
    return b.op("Transpose", b.t(x), perm=[_dim(d, b.rank(x)) for d in dims])


@register("transpose", "swapaxes", "swapdims")
def _transpose(b, node, a):
    x = _in(a)
    r = b.rank(x)
    d0 = a.get("dim0", a.get("axis0"))
    d1 = a.get("dim1", a.get("axis1"))
    perm = list(range(r))
    i, j = _dim(d0, r), _dim(d1, r)
    perm[i], perm[j] = perm[j], perm[i]
    return b.op("Transpose", b.t(x), perm=perm)


@register("t", "T", "mT", "adjoint", "H", "mH")
def _t(b, node, a):
    x = _in(a)
    r = b.rank(x)
    if r < 2:
        return b.op("Identity", b.t(x))
    perm = list(range(r))[::-1] if node.op in ("T", "H") else list(range(r - 2)) + [r - 1, r - 2]
    return b.op("Transpose", b.t(x), perm=perm)


@register("unsqueeze")
def _unsqueeze(b, node, a):
    x = _in(a)
    return b.op("Unsqueeze", b.t(x), b.const(np.array([_dim(a["dim"], b.rank(x) + 1)], np.int64)))


@register("squeeze")
def _squeeze(b, node, a):
    x = _in(a)
    dim = a.get("dim")
    shape = b.shape(x)
    if dim is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    else:
        dims = [_dim(d, len(shape)) for d in (dim if isinstance(dim, tuple | list) else (dim,))]
        dims = [d for d in dims if shape[d] == 1]
    if not dims:
        return b.op("Identity", b.t(x))
    return b.op("Squeeze", b.t(x), b.const(np.array(dims, np.int64)))


@register("expand", "broadcast_to")
def _expand(b, node, a):
    x = _in(a)
    size = _shape_arg(a)
    lead = len(size) - b.rank(x)
    one = b.const(np.array([0], np.int64))
    parts = []
    for i, s in enumerate(size):
        if isinstance(s, Ref):
            parts.append(b.op("Unsqueeze", b.t(s), one))
        elif s == -1:  # keep the input's size there (known at run time only)
            parts.append(b.dims(x, i - lead, i - lead + 1))
        else:
            parts.append(b.const(np.array([s], np.int64)))
    return b.op("Expand", b.t(x), b.op("Concat", *parts, axis=0) if len(parts) > 1 else parts[0])


@register("cat", "concat", "concatenate")
def _cat(b, node, a):
    ts = a["tensors"]
    dt = _odt(b, node)
    r = b.rank(_out(node))
    return b.op("Concat", *[b.t(t, dt) for t in ts], axis=_dim(a.get("dim", 0), r))


@register("stack")
def _stack(b, node, a):
    ts = a["tensors"]
    d = _dim(a.get("dim", 0), b.rank(ts[0]) + 1)
    ax = b.const(np.array([d], np.int64))
    return b.op("Concat", *[b.op("Unsqueeze", b.t(t), ax) for t in ts], axis=d)


def _split_sizes(b, node, dim):
    return [b.shape(o)[dim] for o in node.outputs()]


@register("split", "chunk", "tensor_split")
def _split(b, node, a):
    x = _in(a)
    d = _dim(a.get("dim", 0), b.rank(x))
    sizes = _split_sizes(b, node, d)
    return b.op("Split", b.t(x), b.const(np.array(sizes, np.int64)), n=len(sizes), axis=d)


@register("unbind")
def _unbind(b, node, a):
    x = _in(a)
    d = _dim(a.get("dim", 0), b.rank(x))
    n = len(node.outputs())
    parts = b.op("Split", b.t(x), b.const(np.ones(n, np.int64)), n=n, axis=d)
    parts = [parts] if n == 1 else parts
    return [b.op("Squeeze", p, b.const(np.array([d], np.int64))) for p in parts]


@register("narrow")
def _narrow(b, node, a):
    x = _in(a)
    start = b.ints([a["start"]])
    end = b.op("Add", start, b.ints([a["length"]]))
    return b.op("Slice", b.t(x), start, end, b.const(np.array([_dim(a["dim"], b.rank(x))], np.int64)))


@register("select")
def _select(b, node, a):
    x = _in(a)
    return b.op("Gather", b.t(x), b.t(a["index"]), axis=_dim(a["dim"], b.rank(x)))


@register("flip")
def _flip(b, node, a):
    x = _in(a)
    dims = [_dim(d, b.rank(x)) for d in _shape_arg({"shape": a["dims"]})]
    big = np.iinfo(np.int64).max
    return b.op("Slice", b.t(x), b.const(np.full(len(dims), -1, np.int64)), b.const(np.full(len(dims), -big)),
                b.const(np.array(dims, np.int64)), b.const(np.full(len(dims), -1, np.int64)))


@register("repeat", "tile")
def _repeat(b, node, a):
    x = _in(a)
    reps = _shape_arg({"shape": a.get("repeats", a.get("dims", a.get("sizes")))})
    xs = b.t(x)
    if len(reps) > b.rank(x):
        xs = b.op("Reshape", xs, b.op("Concat", b.const(np.ones(len(reps) - b.rank(x), np.int64)), b.dims(x), axis=0))
    elif len(reps) < b.rank(x):
        reps = [1] * (b.rank(x) - len(reps)) + reps
    return b.op("Tile", xs, b.ints(reps))


@register("tril", "triu", "tril_", "triu_")
def _trilu(b, node, a):
    return b.op("Trilu", b.t(_in(a)), b.t(int(a.get("diagonal", 0))), upper=int(node.op.startswith("triu")))


@register("gather", "take_along_dim")
def _gather(b, node, a):
    x = _in(a)
    return b.op("GatherElements", b.t(x), b.t(a["index"] if "index" in a else a["indices"]),
                axis=_dim(a["dim"], b.rank(x)))


@register("index_select")
def _index_select(b, node, a):
    x = _in(a)
    return b.op("Gather", b.t(x), b.t(a["index"]), axis=_dim(a["dim"], b.rank(x)))


@register("getitem")
def _getitem(b, node, a):
    x = _in(a)
    key = a["key"]
    key = list(key) if isinstance(key, tuple) else [key]
    r = b.rank(x)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + [slice(None)] * (r - n_real) + key[i + 1:]
    out, d = b.t(x), 0  # d: the dim of ``out`` the next key entry indexes
    tensor_seen = False
    for k in key:
        if k is None:
            out = b.op("Unsqueeze", out, b.const(np.array([d], np.int64)))
            d += 1
        elif isinstance(k, slice):
            if k.start is None and k.stop is None and k.step in (None, 1):
                d += 1
                continue
            step = 1 if k.step is None else k.step
            big = np.iinfo(np.int64).max
            start = (0 if step > 0 else -1) if k.start is None else k.start
            stop = (big if step > 0 else -big) if k.stop is None else k.stop
            out = b.op("Slice", out, b.ints([start]), b.ints([stop]), b.const(np.array([d], np.int64)),
                       b.ints([step]))
            d += 1
        elif isinstance(k, Ref) and b.value(k).kind == "tensor":
            if tensor_seen or b.dtype(k) == "bool":
                b.unsupported(node, "with a boolean mask or several tensor indices has no mapping")
            tensor_seen = True
            out = b.op("Gather", out, b.t(k, "int64"), axis=d)
            d += b.rank(k)
        elif isinstance(k, int | Ref):
            out = b.op("Gather", out, b.t(k), axis=d)  # a 0-d index removes the dim
        else:
            b.unsupported(node, f"with index {k!r} has no mapping")
    return out


@register("size")
def _size(b, node, a):
    return b.dim(_in(a), int(a["dim"]))


for _k, _v in {"sym_add": "Add", "sym_sub": "Sub", "sym_mul": "Mul", "sym_floordiv": "Div", "sym_mod": "Mod"}.items():
    register(_k)((lambda o: lambda b, node, a: b.op(o, b.t(a["input"], "int64"), b.t(a["other"], "int64")))(_v))
