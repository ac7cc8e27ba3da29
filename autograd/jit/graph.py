"""The one graph IR of ``autograd.jit``: values, nodes of ops with PyTorch names, readable text and JSON form."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tkernels import dtypes as _dt
from tkernels.device import Device

__all__ = ["Ref", "RunDevice", "Value", "Node", "Graph", "to_json", "from_json", "refs_in"]


@dataclass(frozen=True)
class Ref:
    """A reference to a graph value (a tensor or a symbolic int) inside a node's arguments."""

    name: str

    def __repr__(self):
        return f"%{self.name}"


class RunDevice:
    """The device the graph runs on: what a ``device=`` argument seen while tracing becomes (traces are portable)."""

    def __repr__(self):
        return "<device>"

    def __eq__(self, other):
        return isinstance(other, RunDevice)

    def __hash__(self):
        return hash("RunDevice")


@dataclass
class Value:
    """A value of the graph: ``kind`` is "tensor" or "int"; shape and dtype are the ones seen while tracing."""

    name: str
    kind: str = "tensor"
    shape: tuple | None = None
    dtype: str | None = None
    role: str = "node"  # input, param, const or node

    def type_str(self):
        if self.kind == "int":
            return "int"
        return f"{self.dtype}({', '.join(str(s) for s in self.shape)})"


@dataclass
class Node:
    """One op call: ``op`` is its PyTorch name, ``target`` how to call it (``ag.<fn>`` or ``Tensor.<method>``),
    ``args``/``kwargs`` as passed (with ``Ref`` for values), ``bound`` the arguments by parameter name, and
    ``out`` the structure of the results (``Ref`` leaves)."""

    op: str
    target: str
    args: list
    kwargs: dict
    out: object
    bound: dict = field(default_factory=dict)
    sub: list | None = None  # an autograd.Function: the ops its forward ran (what ONNX inlines)
    sub_out: object = None  # the values of ``sub`` that forward returned

    def outputs(self):
        return refs_in(self.out)


@dataclass
class Graph:
    """Inputs, parameters (module state by name), constants (tensors captured while tracing), nodes, outputs."""

    inputs: list = field(default_factory=list)
    params: dict = field(default_factory=dict)  # value name -> state_dict key
    constants: dict = field(default_factory=dict)  # value name -> numpy array
    nodes: list = field(default_factory=list)
    output: object = None  # a structure with Ref leaves
    values: dict = field(default_factory=dict)  # name -> Value

    def __str__(self):
        head = [f"%{n} : {self.values[n].type_str()}" for n in self.inputs]
        head += [f"%{n} : {self.values[n].type_str()}" for n in self.params]
        lines = [f"graph({', '.join(head)}):"]
        for n, arr in self.constants.items():
            lines.append(f"  %{n} : {arr.dtype}({', '.join(map(str, arr.shape))}) = constant()")
        for node in self.nodes:
            outs = node.outputs()
            lhs = ", ".join(f"%{r.name} : {self.values[r.name].type_str()}" for r in outs)
            lines.append(f"  {lhs or '_'} = {node.op}({_fmt_args(node.args, node.kwargs)})")
        lines.append(f"  return {_fmt(self.output)}")
        return "\n".join(lines)

    def code(self):
        """Python-like source of the forward computation."""
        names = {n: "self." + ".".join(p if p.isidentifier() else f"_{p}" for p in k.split("."))
                 for n, k in self.params.items()}
        names.update({n: f"input_{i}" for i, n in enumerate(self.inputs)})
        names.update({n: f"self._const_{n}" for n in self.constants})
        py = lambda a: _fmt(a, lambda r: names.get(r.name, r.name))  # noqa: E731
        sig = ", ".join(["self"] + [names[n] for n in self.inputs])
        lines = [f"def forward({sig}):"]
        if self.inputs and "<device>" in str(self):  # the trace runs on its inputs' device
            lines.append(f"    device = {names[self.inputs[0]]}.device")
        for node in self.nodes:
            outs = node.outputs()
            call = node.target.replace("ag.", "autograd.")
            if node.target.startswith("Tensor."):
                call = node.target
            if node.target.startswith("sym."):
                call = f"operator.{node.target[4:]}"
            args = ", ".join([py(a) for a in node.args] + [f"{k}={py(v)}" for k, v in node.kwargs.items()])
            lhs = py(node.out) if outs else "_"
            lines.append(f"    {lhs} = {call}({args.replace('<device>', 'device')})")
        lines.append(f"    return {py(self.output)}")
        return "\n".join(lines) + "\n"


def refs_in(obj) -> list:
    """The ``Ref`` leaves of an argument structure, in order."""
    if isinstance(obj, Ref):
        return [obj]
    if isinstance(obj, list | tuple):
        return [r for o in obj for r in refs_in(o)]
    if isinstance(obj, dict):
        return [r for o in obj.values() for r in refs_in(o)]
    if isinstance(obj, slice):
        return refs_in([obj.start, obj.stop, obj.step])
    return []


def _fmt(a, name=repr) -> str:
    if isinstance(a, Ref):
        return name(a)
    if isinstance(a, tuple):
        inner = ", ".join(_fmt(x, name) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x, name) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v, name)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        parts = ["" if p is None else _fmt(p, name) for p in (a.start, a.stop, a.step)]
        return ":".join(parts[:2] if a.step is None else parts) if a.start is not None or a.stop is not None \
            or a.step is not None else ":"
    if a is Ellipsis:
        return "..."
    if isinstance(a, _dt.DType):
        return f"autograd.{a}"
    return repr(a)


def _fmt_args(args, kwargs) -> str:
    return ", ".join([_fmt(a) for a in args] + [f"{k}={_fmt(v)}" for k, v in kwargs.items()])


# -------------------------------------------------------------------------------------------------- JSON
def to_json(a):
    """An argument structure as JSON data (tuples, slices, dtypes, devices and refs tagged)."""
    if isinstance(a, Ref):
        return {"ref": a.name}
    if isinstance(a, RunDevice):
        return {"device": None}
    if isinstance(a, bool) or a is None or isinstance(a, str):
        return a
    if isinstance(a, int):
        return int(a)
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if isinstance(a, tuple):
        return {"tuple": [to_json(x) for x in a]}
    if isinstance(a, list):
        return [to_json(x) for x in a]
    if isinstance(a, dict):
        return {"dict": {str(k): to_json(v) for k, v in a.items()}}
    if isinstance(a, slice):
        return {"slice": [to_json(a.start), to_json(a.stop), to_json(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, _dt.DType):
        return {"dtype": str(a)}
    if isinstance(a, Device):
        return {"device": str(a)}
    raise TypeError(f"autograd.jit: cannot store an argument of type {type(a).__name__} ({a!r}) in a graph. "
                    f"Hint: pass tensors, numbers, strings, dtypes or tuples of them to the traced ops")


def from_json(a):
    """The inverse of ``to_json``."""
    if isinstance(a, list):
        return [from_json(x) for x in a]
    if not isinstance(a, dict):
        return a
    (tag, v), = a.items()
    if tag == "ref":
        return Ref(v)
    if tag == "device":
        return RunDevice() if v is None else Device(v)
    if tag == "float":
        return float(v)
    if tag == "tuple":
        return tuple(from_json(x) for x in v)
    if tag == "dict":
        return {k: from_json(x) for k, x in v.items()}
    if tag == "slice":
        return slice(*(from_json(x) for x in v))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return getattr(_dt, v)
    raise ValueError(f"autograd.jit.load: unknown tag {tag!r} in the stored graph. Hint: the file was written by a "
                     f"newer version, or is corrupt")


def graph_to_json(g: Graph) -> dict:
    return {
        "format": "tkernels.jit/1",
        "inputs": g.inputs, "params": g.params, "constants": list(g.constants),
        "values": {n: [v.kind, list(v.shape) if v.shape is not None else None, v.dtype, v.role]
                   for n, v in g.values.items()},
        "nodes": [_node_json(n) for n in g.nodes],
        "output": to_json(g.output),
    }


def graph_from_json(d: dict, constants: dict) -> Graph:
    if d.get("format") != "tkernels.jit/1":
        raise ValueError(f"autograd.jit.load: not a traced module (format {d.get('format')!r}, expected "
                         f"'tkernels.jit/1')")
    g = Graph(inputs=list(d["inputs"]), params=dict(d["params"]))
    g.constants = {n: constants[n] for n in d["constants"]}
    g.values = {n: Value(n, k, tuple(s) if s is not None else None, dt, role)
                for n, (k, s, dt, role) in d["values"].items()}
    g.nodes = [_node_from_json(n) for n in d["nodes"]]
    g.output = from_json(d["output"])
    return g


def _node_json(n: Node) -> dict:
    d = {"op": n.op, "target": n.target, "args": to_json(n.args), "kwargs": to_json(n.kwargs), "out": to_json(n.out),
         "bound": to_json(n.bound)}
    if n.sub is not None:
        d["sub"] = [_node_json(x) for x in n.sub]
        d["sub_out"] = to_json(n.sub_out)
    return d


def _node_from_json(d: dict) -> Node:
    n = Node(d["op"], d["target"], from_json(d["args"]), from_json(d["kwargs"]), from_json(d["out"]),
             from_json(d["bound"]))
    if "sub" in d:
        n.sub = [_node_from_json(x) for x in d["sub"]]
        n.sub_out = from_json(d["sub_out"])
    return n
