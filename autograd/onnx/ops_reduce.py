"""ONNX mappings of reductions, matrix products and factories."""

from __future__ import annotations

import numpy as np

from ..jit.graph import Ref
from .builder import NP_DTYPES, register
from .ops_tensor import _dim, _in, _odt, _shape_arg


# ------------------------------------------------------------------------------------------ reductions
def _axes(a, rank):
    d = a.get("dim", a.get("axis"))
    if d is None:
        return None
    return [_dim(x, rank) for x in (d if isinstance(d, tuple | list) else (d,))]


_RED = {"sum": "Sum", "mean": "Mean", "amax": "Max", "amin": "Min", "prod": "Prod", "logsumexp": "LogSumExp",
        "nansum": None}


def _reduction(kind):
    def fn(b, node, a):
        x = _in(a)
        dt = _odt(b, node)
        axes = _axes(a, b.rank(x))
        keep = bool(a.get("keepdim", False))
        xs = b.t(x, dt)
        if kind == "Sum" and b.dtype(x) == "bool":
            xs = b.t(x, "int64")
        return b.reduce(kind, xs, axes, keep)
    return fn


for _k, _v in _RED.items():
    if _v:
        register(_k)(_reduction(_v))


@register("max", "min")
def _maxmin(b, node, a):
    x = _in(a)
    kind = "Max" if node.op == "max" else "Min"
    dim = a.get("dim")
    other = a.get("other")
    if isinstance(other, Ref):
        return b.op(kind, b.t(x), b.t(other, b.dtype(x)))
    if dim is None or (isinstance(dim, Ref) and b.value(dim).kind == "tensor"):
        if isinstance(dim, Ref):
            return b.op(kind, b.t(x), b.t(dim, b.dtype(x)))
        return b.reduce(kind, b.t(x), None, False)
    d = _dim(dim, b.rank(x))
    keep = bool(a.get("keepdim", False))
    vals = b.reduce(kind, b.t(x), [d], keep)
    idx = b.op("ArgMax" if kind == "Max" else "ArgMin", b.t(x), axis=d, keepdims=int(keep), select_last_index=0)
    return [vals, idx]


@register("argmax", "argmin")
def _argmax(b, node, a):
    x = _in(a)
    op = "ArgMax" if node.op == "argmax" else "ArgMin"
    dim = a.get("dim")
    keep = bool(a.get("keepdim", False))
    if dim is None:
        flat = b.op("Reshape", b.t(x), b.const(np.array([-1], np.int64)))
        return b.op(op, flat, axis=0, keepdims=0)
    return b.op(op, b.t(x), axis=_dim(dim, b.rank(x)), keepdims=int(keep))


@register("var", "std")
def _var(b, node, a):
    x = _in(a)
    dt = _odt(b, node)
    axes = _axes(a, b.rank(x))
    keep = bool(a.get("keepdim", False))
    corr = a.get("correction")
    if corr is None:
        corr = 1 if a.get("unbiased", True) in (True, None) else 0
    shape = b.shape(x)
    n = int(np.prod([shape[i] for i in (axes if axes is not None else range(len(shape)))]))
    xs = b.t(x, dt)
    d = b.op("Sub", xs, b.reduce("Mean", xs, axes, True))
    v = b.reduce("Mean", b.op("Mul", d, d), axes, keep)
    if corr:
        v = b.op("Mul", v, b.const(n / max(n - corr, 1), dt))
    return b.op("Sqrt", v) if node.op == "std" else v


@register("norm")
def _norm(b, node, a):
    x = _in(a)
    p = a.get("p", 2)
    p = 2 if p in (None, "fro") else p
    axes = _axes(a, b.rank(x))
    keep = bool(a.get("keepdim", False))
    if p == 2:
        return b.reduce("L2", b.t(x), axes, keep)
    if p == 1:
        return b.reduce("L1", b.t(x), axes, keep)
    b.unsupported(node, f"with p={p!r} has no mapping")


@register("all", "any")
def _allany(b, node, a):
    x = _in(a)
    axes = _axes(a, b.rank(x))
    keep = bool(a.get("keepdim", False))
    kind = "Min" if node.op == "all" else "Max"
    r = b.reduce(kind, b.t(x, "int32"), axes, keep)
    return b.op("Cast", r, to=b.tensor_type("bool"))


@register("cumsum")
def _cumsum(b, node, a):
    x = _in(a)
    return b.op("CumSum", b.t(x, _odt(b, node)), b.const(np.array(_dim(a["dim"], b.rank(x)), np.int64)))


@register("matmul", "mm", "bmm", "mv")
def _matmul(b, node, a):
    dt = _odt(b, node)
    return b.op("MatMul", b.t(_in(a), dt), b.t(a.get("other", a.get("mat2", a.get("vec"))), dt))


@register("addmm")
def _addmm(b, node, a):
    dt = _odt(b, node)
    return b.op("Gemm", b.t(a["mat1"], dt), b.t(a["mat2"], dt), b.t(_in(a), dt),
                alpha=float(a.get("alpha", 1)), beta=float(a.get("beta", 1)))


# ------------------------------------------------------------------------------------------- factories
def _np(dt):
    return NP_DTYPES[dt]


@register("zeros", "ones", "full", "empty")
def _factory(b, node, a):
    size = list(a["size"]) if a.get("size") is not None else _shape_arg({"shape": a.get("size_", ())})
    value = {"zeros": 0, "ones": 1, "empty": 0}.get(node.op, a.get("fill_value"))
    dt = _odt(b, node)
    if isinstance(value, Ref):
        b.unsupported(node, "with a traced fill value has no mapping")
    return b.op("ConstantOfShape", b.ints(size), value=b.onnx.numpy_helper.from_array(np.array([value], _np(dt))))


@register("zeros_like", "ones_like", "full_like", "empty_like", "new_zeros", "new_ones", "new_full")
def _like_factory(b, node, a):
    dt = _odt(b, node)
    value = {"zeros_like": 0, "ones_like": 1, "empty_like": 0, "new_zeros": 0, "new_ones": 1}.get(
        node.op, a.get("fill_value"))
    if node.op.startswith("new_"):
        shape = b.ints(_shape_arg(a))
    else:
        shape = b.dims(_in(a))
    return b.op("ConstantOfShape", shape, value=b.onnx.numpy_helper.from_array(np.array([value], _np(dt))))


@register("arange")
def _arange(b, node, a):
    dt = _odt(b, node)
    start, end, step = a["start"], a.get("end"), a.get("step", 1)
    if end is None:
        start, end = 0, start
    return b.op("Range", b.t(start, dt), b.t(end, dt), b.t(step, dt))
