"""The ONNX graph under construction and the registry of op mappings (``@register("linear")``): a mapping
reads a traced node's arguments by name and emits ONNX nodes through the ``Builder``."""

from __future__ import annotations

import numpy as np

from ..jit.graph import Ref

__all__ = ["Builder", "register", "SYMBOLICS", "UnsupportedOperatorError", "NP_DTYPES", "MIN_OPSET", "DEFAULT_OPSET"]

SYMBOLICS = {}  # traced op name -> mapping function(builder, node, args)
MIN_OPSET = 17  # LayerNormalization
DEFAULT_OPSET = 18

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
             "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


class UnsupportedOperatorError(RuntimeError):
    """A traced op has no ONNX mapping at the requested opset."""


def register(*names, min_opset=17):
    """Register a mapping for the traced ops ``names``."""
    def deco(fn):
        for n in names:
            SYMBOLICS[n] = (fn, min_opset)
        return fn
    return deco


class Builder:
    """Collects ONNX nodes and initializers; names traced values; small helpers for the mappings."""

    def __init__(self, onnx, graph, opset: int):
        self.onnx, self.helper, self.graph, self.opset = onnx, onnx.helper, graph, opset
        self.nodes, self.initializers = [], []
        self.names = {}  # traced value name -> ONNX name
        self.known = {}  # traced value name -> NumPy value (parameters, constants, folded results)
        self._n = 0
        self._consts = {}

    # ------------------------------------------------------------------------------------- naming
    def fresh(self, hint="t"):
        self._n += 1
        return f"/{hint}_{self._n}"

    def initializer(self, name, array):
        array = np.asarray(array)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def const(self, value, dtype=None):
        """An initializer holding ``value`` (scalars become 0-d tensors of ``dtype``)."""
        arr = np.asarray(value, dtype=NP_DTYPES[dtype] if isinstance(dtype, str) else dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.initializer(self.fresh("const"), arr)
        return self._consts[key]

    def op(self, op_type, *inputs, n=1, **attrs):
        """Emit ``op_type(*inputs)`` (None for an omitted optional input); returns its output name(s)."""
        outs = [self.fresh(op_type) for _ in range(n)]
        ins = ["" if i is None else i for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, ins, outs, name=outs[0].lstrip("/"), **attrs))
        return outs[0] if n == 1 else outs

    # ---------------------------------------------------------------------------------- arguments
    def value(self, r: Ref):
        return self.graph.values[r.name]

    def rank(self, x) -> int:
        return len(self.value(x).shape)

    def shape(self, x) -> tuple:
        """The shape seen while tracing (static facts only: ranks, feature sizes)."""
        return tuple(self.value(x).shape)

    def dtype(self, x) -> str:
        if isinstance(x, Ref):
            return self.value(x).dtype
        if isinstance(x, bool):
            return "bool"
        return "int64" if isinstance(x, int) else "float32"

    def t(self, x, dtype=None):
        """The ONNX name of a traced tensor or int (cast to ``dtype`` if given), or a constant for a number."""
        if isinstance(x, Ref):
            name = self.names[x.name]
            if dtype is not None and self.dtype(x) != dtype and self.value(x).kind == "tensor":
                return self.op("Cast", name, to=self.tensor_type(dtype))
            if dtype is not None and self.value(x).kind == "int" and dtype != "int64":
                return self.op("Cast", name, to=self.tensor_type(dtype))
            return name
        if x is None:
            return None
        return self.const(x, dtype or self.dtype(x))

    def tensor_type(self, dtype: str) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(NP_DTYPES[dtype]))

    def ints(self, values):
        """A 1-D int64 tensor from Python ints and traced ints (a Concat when some are dynamic)."""
        values = list(values)
        if all(not isinstance(v, Ref) for v in values):
            return self.const(np.array(values, dtype=np.int64))
        parts = [self.op("Unsqueeze", self.t(v), self.const(np.array([0], np.int64))) if isinstance(v, Ref)
                 else self.const(np.array([v], np.int64)) for v in values]
        return self.op("Concat", *parts, axis=0)

    def dims(self, x, start=0, end=None):
        """``shape(x)[start:end]`` at run time, as a 1-D int64 tensor."""
        return self.op("Shape", self.t(x), start=start, end=end)

    def dim(self, x, i):
        """``shape(x)[i]`` at run time, as a 0-d int64 tensor."""
        return self.op("Gather", self.op("Shape", self.t(x)), self.const(np.array(i, np.int64)), axis=0)

    def reduce(self, kind, x, axes, keepdims):
        """``Reduce<kind>`` over ``axes`` (None: all), with the axes as an input or an attribute as the opset wants."""
        if axes is None:
            return self.op(f"Reduce{kind}", x, keepdims=int(keepdims))
        axes = [int(a) for a in axes]
        if kind == "Sum" or self.opset >= 18:
            return self.op(f"Reduce{kind}", x, self.const(np.array(axes, np.int64)), keepdims=int(keepdims))
        return self.op(f"Reduce{kind}", x, axes=axes, keepdims=int(keepdims))

    def unsupported(self, node, why):
        args = ", ".join(f"{k}={self._describe(v)}" for k, v in node.bound.items())
        raise UnsupportedOperatorError(f"autograd.onnx.export: op '{node.op}' ({args}) {why} at opset {self.opset}. "
                                       f"Hint: rewrite the model with supported ops, or see "
                                       f"autograd.onnx.supported_ops()")

    def _describe(self, v):
        if isinstance(v, Ref):
            val = self.value(v)
            return f"Tensor{list(val.shape)}:{val.dtype}" if val.kind == "tensor" else "int"
        return repr(v)
