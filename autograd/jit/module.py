"""``TracedModule``: runs a recorded graph on new inputs (through the autograd ops, so it is differentiable),
and saves/loads it as one safetensors file whose metadata holds the JSON graph."""

from __future__ import annotations

import json
import operator

import numpy as np

from ..tensor import Tensor
from . import _safetensors
from .graph import Graph, Ref, RunDevice, graph_from_json, graph_to_json

__all__ = ["TracedModule", "TracingCheckError", "load", "run_graph"]

_SYM = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
        "mod": operator.mod}


class TracingCheckError(Exception):
    """The traced graph, run again, does not reproduce what eager mode computed."""


def _function_class(target: str, functions=None):
    """The autograd.Function subclass a node calls: the one traced, or one of an already imported module (load
    never imports a module a file names)."""
    import sys

    from ..function import Function

    cls = (functions or {}).get(target)
    if cls is None:
        modname, _, qual = target[len("function."):].partition(":")
        cls = sys.modules.get(modname)
        for part in qual.split("."):
            cls = getattr(cls, part, None)
    if not (isinstance(cls, type) and issubclass(cls, Function)):
        raise ValueError(f"autograd.jit: the graph calls autograd.Function {target[len('function.'):]!r}, which is "
                         f"not defined. Hint: import the module that defines it before autograd.jit.load (a "
                         f"Function defined inside a function cannot be loaded)")
    return cls


def _target(target: str, leaves=None, functions=None):
    import autograd

    kind, _, name = target.partition(".")
    if kind == "function":
        return _function_class(target, functions).apply
    if kind == "module":  # a module recorded as one node: its own forward, with its own parameters
        mod = (leaves or {}).get(name)
        if mod is None:
            raise ValueError(f"autograd.jit: the graph calls module {name!r}, which this traced module lacks")
        return type(mod).forward.__get__(mod)
    if kind == "ag":
        return getattr(autograd, name)
    if kind == "Tensor":
        return getattr(Tensor, name)
    if kind == "attr":
        return operator.attrgetter(name)
    if kind == "sym":
        return _SYM[name]
    raise ValueError(f"autograd.jit: unknown call target {target!r} in the graph")


def _resolve(a, env, device):
    if isinstance(a, Ref):
        return env[a.name]
    if isinstance(a, RunDevice):
        return device
    if isinstance(a, tuple):
        return tuple(_resolve(x, env, device) for x in a)
    if isinstance(a, list):
        return [_resolve(x, env, device) for x in a]
    if isinstance(a, dict):
        return {k: _resolve(v, env, device) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_resolve(a.start, env, device), _resolve(a.stop, env, device), _resolve(a.step, env, device))
    return a


def _assign(out, r, env):
    if isinstance(out, Ref):
        env[out.name] = r
    elif isinstance(out, tuple):
        for o, x in zip(out, r):
            _assign(o, x, env)


def run_graph(graph: Graph, env: dict, device, calls=None):
    """Evaluate ``graph`` with ``env`` holding its inputs, parameters and constants (by value name)."""
    calls = calls or [_target(n.target) for n in graph.nodes]
    for node, fn in zip(graph.nodes, calls):
        r = fn(*_resolve(node.args, env, device), **_resolve(node.kwargs, env, device))
        if node.op == "setitem":
            r = env[node.args[0].name]
        _assign(node.out, r, env)
    return _resolve(graph.output, env, device)


class TracedModule:
    """A traced function or module: call it like the original (same number and ranks of tensor inputs)."""

    def __init__(self, graph: Graph, params: dict, buffers: dict, name: str = "TracedModule", leaves=None,
                 functions=None):
        self._graph = graph
        self._params = dict(params)  # state_dict key -> Tensor (the traced module's own, shared when traced)
        self._buffers = dict(buffers)
        self._name = name
        self._leaves = dict(leaves or {})  # module path -> module called as one node (nn.LSTM...)
        self._calls = [_target(n.target, self._leaves, functions) for n in graph.nodes]
        self._consts = {}  # device -> {name: Tensor}
        self.training = False

    # ----------------------------------------------------------------------------------- graph
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def code(self) -> str:
        return self._graph.code()

    def __repr__(self):
        return f"{self._name}(traced: {len(self._graph.nodes)} nodes, {len(self._graph.inputs)} inputs)"

    # ------------------------------------------------------------------------------------ call
    def __call__(self, *inputs):
        g = self._graph
        if len(inputs) != len(g.inputs):
            raise TypeError(f"{self._name}: the trace takes {len(g.inputs)} tensor input(s), got {len(inputs)}. "
                            f"Hint: pass the same arguments as the example inputs of the trace")
        env = {}
        device = None
        for i, (name, x) in enumerate(zip(g.inputs, inputs)):
            v = g.values[name]
            if not isinstance(x, Tensor):
                raise TypeError(f"{self._name}: input {i} must be a Tensor, got {type(x).__name__}")
            if x.ndim != len(v.shape):
                raise ValueError(f"{self._name}: input {i} has shape {list(x.shape)} (rank {x.ndim}), but the trace "
                                 f"saw rank {len(v.shape)} ({v.type_str()}). Hint: traces keep the rank of each input")
            device = device or x.device
            env[name] = x
        state = self.state_dict()
        if device is None:
            device = next(iter(state.values())).device if state else Tensor([0.0]).device
        for name, key in g.params.items():
            env[name] = state[key]
        env.update(self._constants(device))
        return run_graph(g, env, device, self._calls)

    forward = __call__

    def _constants(self, device):
        key = str(device)
        if key not in self._consts:
            import autograd

            self._consts[key] = {n: autograd.from_numpy(np.array(a)).to(device)
                                 for n, a in self._graph.constants.items()}
        return self._consts[key]

    # ---------------------------------------------------------------------------- module-like API
    def named_parameters(self):
        return iter(self._params.items())

    def parameters(self):
        return iter(self._params.values())

    def named_buffers(self):
        return iter(self._buffers.items())

    def buffers(self):
        return iter(self._buffers.values())

    def state_dict(self) -> dict:
        return {**self._params, **self._buffers}

    def load_state_dict(self, state_dict: dict):
        """Copy values into the parameters and buffers (same keys, same shapes)."""
        import autograd

        mine = self.state_dict()
        missing, unexpected = sorted(set(mine) - set(state_dict)), sorted(set(state_dict) - set(mine))
        if missing or unexpected:
            raise KeyError(f"{self._name}.load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        with autograd.no_grad():
            for k, t in mine.items():
                src = state_dict[k]
                if tuple(src.shape) != tuple(t.shape):
                    raise ValueError(f"{self._name}.load_state_dict: {k!r} has shape {list(src.shape)}, the module "
                                     f"has {list(t.shape)}")
                t.copy_(src)
        return self

    def to(self, *args, **kwargs):
        """Move (or cast) the parameters and buffers, as ``Module.to`` does."""
        for d in (self._params, self._buffers):
            for k, t in d.items():
                new = t.detach().to(*args, **kwargs)
                d[k] = new.requires_grad_(t.requires_grad) if new.is_floating_point() else new
        self._adopt_leaves(lambda m: m.to(*args, **kwargs))
        return self

    def _adopt_leaves(self, prepare):
        """Modules called as one node compute with their own parameters: make those the traced module's."""
        for path, m in self._leaves.items():
            prepare(m)
            for n, p in m.named_parameters():
                self._params[f"{path}.{n}" if path else n] = p

    def eval(self):
        return self

    def train(self, mode: bool = True):
        if mode:
            raise RuntimeError(f"{self._name}.train(): a trace is frozen in the mode it was traced in. Hint: trace "
                               f"the module again after model.train()")
        return self

    def zero_grad(self, set_to_none: bool = True):
        for p in self._params.values():
            p.grad = None

    # ----------------------------------------------------------------------------------- save/load
    def save(self, path) -> None:
        """One safetensors file: the weights and constants as tensors, the graph as JSON metadata (no pickle)."""
        arrays = {k: t.detach().cpu().numpy() for k, t in self.state_dict().items()}
        arrays.update({f"__const__.{n}": a for n, a in self._graph.constants.items()})
        meta = {"format": "tkernels.jit", "name": self._name, "graph": json.dumps(graph_to_json(self._graph)),
                "parameters": json.dumps({k: bool(t.requires_grad) for k, t in self._params.items()}),
                "buffers": json.dumps(list(self._buffers)),
                "leaves": json.dumps({p: {"class": f"{type(m).__module__}.{type(m).__qualname__}",
                                          "kwargs": m._jit_spec()["kwargs"]} for p, m in self._leaves.items()})}
        _safetensors.write(path, arrays, meta)


def load(path, map_location=None) -> TracedModule:
    """A ``TracedModule`` saved by ``traced.save(path)``; ``map_location``: the device for its tensors."""
    import autograd

    arrays, meta = _safetensors.read(path)
    if meta.get("format") != "tkernels.jit":
        raise ValueError(f"autograd.jit.load({str(path)!r}): not a traced module (metadata format "
                         f"{meta.get('format')!r}). Hint: weights saved by nn.save load with nn.load")
    consts = {k[len("__const__."):]: a for k, a in arrays.items() if k.startswith("__const__.")}
    graph = graph_from_json(json.loads(meta["graph"]), consts)
    dev = map_location

    def tensor(a, rg=False):
        t = autograd.from_numpy(np.array(a))
        t = t.to(dev) if dev is not None else t
        return t.requires_grad_(rg) if rg else t

    params = {k: tensor(arrays[k], rg) for k, rg in json.loads(meta["parameters"]).items()}
    buffers = {k: tensor(arrays[k]) for k in json.loads(meta["buffers"])}
    leaves = {p: _rebuild(spec, path) for p, spec in json.loads(meta.get("leaves", "{}")).items()}
    tm = TracedModule(graph, params, buffers, meta.get("name", "TracedModule"), leaves)

    def fill(m):
        prefix = next(p for p, x in leaves.items() if x is m)
        with autograd.no_grad():
            for n, p in m.named_parameters():
                p.copy_(params[f"{prefix}.{n}" if prefix else n].to(p.device))
        if dev is not None:
            m.to(dev)
    tm._adopt_leaves(fill)
    return tm


def _rebuild(spec, path):
    """A module recorded as one node, made again from its class and constructor arguments; only classes that
    declare ``_jit_leaf`` (the file names a class: it must not be able to name anything else)."""
    import importlib

    modname, _, qual = spec["class"].rpartition(".")
    try:
        cls = getattr(importlib.import_module(modname), qual) if modname.split(".")[0] == "nn" else None
    except (ImportError, AttributeError):
        cls = None
    if cls is None or not getattr(cls, "_jit_leaf", False):
        raise ValueError(f"autograd.jit.load({str(path)!r}): the graph names module class {spec['class']!r}, which is "
                         f"not a module autograd.jit records as one node")
    return cls(**spec["kwargs"])
