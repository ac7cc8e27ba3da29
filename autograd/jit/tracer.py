"""Recording a graph: each outermost op call while tracing (``nn.Linear`` -> ``F.linear`` -> ``ag.linear``: one
``linear`` node) becomes a node, with symbolic sizes and constants folded. The wrappers that call into the
``Tracer`` are installed by ``patching.py`` for the trace only, so eager mode pays nothing."""

from __future__ import annotations

import threading
import warnings

from ..tensor import Size, Tensor
from .graph import Graph, Node, Ref, RunDevice, Value

__all__ = ["TracerWarning", "SymInt", "Tracer", "active", "NONDETERMINISTIC"]

_ACTIVE = None  # the Tracer of the trace in progress (one at a time, in one thread)

# ops whose results differ from call to call: never folded into constants, and check_trace cannot compare
NONDETERMINISTIC = {"dropout", "bernoulli", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                    "normal", "multinomial", "randperm", "bernoulli_", "uniform_", "normal_", "random_",
                    "exponential_", "alpha_dropout", "feature_alpha_dropout"}

class TracerWarning(Warning):
    """A traced value was turned into a Python value: the trace keeps what it was this time."""


def active():
    """The trace in progress in this thread, or None."""
    t = _ACTIVE
    return t if t is not None and t.thread == threading.get_ident() else None


class SymInt(int):
    """A size read from a traced tensor: an int that remembers where it came from, so that ``view(B, T, C)``
    records the sizes rather than freezing them (``expr``: ``("size", name, dim)`` or ``(op, a, b)``)."""

    def __new__(cls, value, expr):
        o = int.__new__(cls, value)
        o.expr = expr
        return o

    def _op(self, op, other, fn, reflected=False):
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented  # floats, lists...: their own operators take a plain int
        if active() is None:
            return fn(int(self), int(other)) if not reflected else fn(int(other), int(self))
        a, b = (self, other) if not reflected else (other, self)
        v = fn(int(a), int(b))
        return SymInt(v, (op, _expr(a), _expr(b)))

    __add__ = lambda s, o: s._op("add", o, int.__add__)  # noqa: E731
    __radd__ = lambda s, o: s._op("add", o, int.__add__, True)  # noqa: E731
    __sub__ = lambda s, o: s._op("sub", o, int.__sub__)  # noqa: E731
    __rsub__ = lambda s, o: s._op("sub", o, int.__sub__, True)  # noqa: E731
    __mul__ = lambda s, o: s._op("mul", o, int.__mul__)  # noqa: E731
    __rmul__ = lambda s, o: s._op("mul", o, int.__mul__, True)  # noqa: E731
    __floordiv__ = lambda s, o: s._op("floordiv", o, int.__floordiv__)  # noqa: E731
    __rfloordiv__ = lambda s, o: s._op("floordiv", o, int.__floordiv__, True)  # noqa: E731
    __mod__ = lambda s, o: s._op("mod", o, int.__mod__)  # noqa: E731

    def __neg__(self):
        return self._op("mul", -1, int.__mul__)

    def __repr__(self):
        return int.__repr__(self)

    __hash__ = int.__hash__


def _expr(a):
    return a.expr if isinstance(a, SymInt) else int(a)


def _strip(a):
    """Arguments for the real call: symbolic ints become plain ints (sizes stored in arrays stay ints)."""
    if isinstance(a, SymInt):
        return int(a)
    if type(a) in (tuple, list, Size):
        return type(a)(_strip(x) for x in a)
    if isinstance(a, dict):
        return {k: _strip(v) for k, v in a.items()}
    if isinstance(a, slice) and any(isinstance(x, SymInt) for x in (a.start, a.stop, a.step)):
        return slice(_strip(a.start), _strip(a.stop), _strip(a.step))
    return a


_SIGS = {}


def _bind(fn, args, kwargs):
    """The call's arguments by parameter name (defaults applied): what the ONNX mapping reads."""
    sig = _SIGS.get(fn)
    if sig is None:
        import inspect  # here: importing it costs more than the rest of autograd.jit

        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = False
        _SIGS[fn] = sig
    if sig is False:
        return {"args": tuple(args), **kwargs}
    try:
        b = sig.bind(*args, **kwargs)
    except TypeError:
        return {"args": tuple(args), **kwargs}
    b.apply_defaults()
    out = dict(b.arguments)
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:  # unary table ops take their options as **params: flattened by name
            out.update(out.pop(p.name, {}))
    return out


class Tracer:
    """Records the op calls made while ``fn(*inputs)`` runs (see the module docstring)."""

    def __init__(self, params: dict, module=None):
        self.thread = threading.get_ident()
        self.depth = 0
        self.graph = Graph()
        self.ids = {}  # id(tensor) -> value name
        self.dep = {}  # value name -> "input", "param" or "const"
        self.keep = []  # the tensors seen: alive while tracing, so their ids stay theirs
        self.syms = {}  # symbolic-int expression -> value name
        self.n = 0
        self.nondeterministic = False
        self.leaves = {}  # module path -> module recorded as one node
        self.functions = {}  # call target -> autograd.Function subclass recorded as one node
        self.fn_outs = []  # per Function.apply in progress: what its forward returned
        for key, t in params.items():
            name = self._new(t, "param", name="p_" + key.replace(".", "_"))
            self.graph.params[name] = key

    # --------------------------------------------------------------------------------- values
    def _fresh(self, hint="v"):
        self.n += 1
        return f"{hint}{self.n}"

    def _new(self, t: Tensor, role: str, name=None, dep=None):
        name = name if name and name not in self.graph.values else self._fresh("c" if role == "const" else "")
        self.ids[id(t)] = name
        self.keep.append(t)
        self.dep[name] = dep or role
        self.graph.values[name] = Value(name, "tensor", tuple(t.shape), str(t.dtype), role)
        return name

    def add_input(self, t: Tensor) -> str:
        name = self._new(t, "input", name=f"input_{len(self.graph.inputs)}")
        self.graph.inputs.append(name)
        return name

    def ref(self, t: Tensor) -> Ref:
        name = self.ids.get(id(t))
        if name is None:  # a tensor the trace did not produce: captured as a constant
            if t._grad_fn is not None:  # autograd history the graph does not have: gradients stop here
                warnings.warn(f"autograd.jit.trace: a tensor of shape {list(t.shape)} with autograd history (grad_fn "
                              f"{t._grad_fn.name()}) that the trace did not see come from its inputs or parameters "
                              f"is captured as a constant; gradients will not flow through it. Hint: register the "
                              f"tensors it comes from as module parameters, and call the autograd ops (autograd.* or "
                              f"Tensor methods), not tkernels, on traced values", TracerWarning, stacklevel=4)
            name = self._new(t, "const")
            self.graph.constants[name] = t.detach().cpu().numpy().copy()
        return Ref(name)

    def sym(self, expr) -> Ref | int:
        """The value computing a symbolic int (recorded on first use: sizes never used cost nothing)."""
        if isinstance(expr, int):
            return expr
        name = self.syms.get(expr)
        if name is None:
            if expr[0] == "size":
                node = Node("size", "Tensor.size", [Ref(expr[1]), expr[2]], {}, None,
                            {"input": Ref(expr[1]), "dim": expr[2]})
            else:
                a, b = self.sym(expr[1]), self.sym(expr[2])
                node = Node(f"sym_{expr[0]}", f"sym.{expr[0]}", [a, b], {}, None, {"input": a, "other": b})
            name = self._fresh("s")
            node.out = Ref(name)
            self.graph.values[name] = Value(name, "int")
            self.dep[name] = "input"
            self.graph.nodes.append(node)
            self.syms[expr] = name
        return Ref(name)

    def encode(self, a):
        """An argument structure with tensors and symbolic ints replaced by references."""
        if isinstance(a, Tensor):
            return self.ref(a)
        if isinstance(a, SymInt):
            return self.sym(a.expr)
        if isinstance(a, tuple):
            return tuple(self.encode(x) for x in a)
        if isinstance(a, list):
            return [self.encode(x) for x in a]
        if isinstance(a, dict):
            return {k: self.encode(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.encode(a.start), self.encode(a.stop), self.encode(a.step))
        if type(a).__name__ == "Device" and type(a).__module__.startswith("tkernels"):
            return RunDevice()
        return a

    def _known(self, r):
        if isinstance(r, Tensor):
            name = self.ids.get(id(r))
            return Ref(name) if name is not None else None
        if isinstance(r, tuple | list):
            return tuple(self._known(x) for x in r)
        return r

    def _register(self, r, dep):
        if isinstance(r, Tensor):
            name = self._fresh()
            self.ids[id(r)] = name
            self.keep.append(r)
            self.dep[name] = dep
            self.graph.values[name] = Value(name, "tensor", tuple(r.shape), str(r.dtype), "node")
            return Ref(name)
        if isinstance(r, tuple | list):
            return tuple(self._register(x, dep) for x in r)
        return r

    # ---------------------------------------------------------------------------------- calls
    def _deps(self, a, acc):
        if isinstance(a, Tensor):
            name = self.ids.get(id(a))
            acc.add(self.dep[name] if name is not None else "const")
        elif isinstance(a, SymInt):
            acc.add("input")
        elif isinstance(a, tuple | list):
            for x in a:
                self._deps(x, acc)
        elif isinstance(a, dict):
            for x in a.values():
                self._deps(x, acc)
        elif isinstance(a, slice):
            self._deps([a.start, a.stop, a.step], acc)
        return acc

    def call(self, op, target, fn, args, kwargs, bound):
        nondet = op in NONDETERMINISTIC and not (op == "dropout" and not bound.get("training", True))
        self.nondeterministic |= nondet
        deps = self._deps(kwargs, self._deps(args, set()))
        inplace = op.endswith("_") or op == "setitem"
        if deps <= {"const"} and not nondet and not (inplace and id(args[0]) in self.ids):
            self.depth += 1
            try:  # folded: the results become constants where (if) traced ops use them
                return fn(*_strip(args), **_strip(kwargs))
            finally:
                self.depth -= 1
        enc_args, enc_kwargs, enc_bound = self.encode(list(args)), self.encode(kwargs), self.encode(bound)
        self.depth += 1
        try:
            result = fn(*_strip(args), **_strip(kwargs))
        finally:
            self.depth -= 1
        if result is None and op == "setitem":
            result = args[0]
        if not _has_tensor(result):
            return result
        dep = "input" if "input" in deps else ("param" if "param" in deps else "const")
        out = self._register(result, dep)
        self.graph.nodes.append(Node(op, target, enc_args, enc_kwargs, out, enc_bound))
        return result

    def call_function(self, cls, apply, args, kwargs):
        """``cls.apply(*args)`` of an autograd.Function: one node (replayed by ``apply``, so its own backward
        runs), holding the ops its forward ran (``sub``, what ONNX inlines)."""
        deps = self._deps(kwargs, self._deps(args, set()))
        if deps <= {"const"}:
            self.depth += 1
            try:
                return apply(cls, *args, **kwargs)
            finally:
                self.depth -= 1
        enc_args, enc_kwargs = self.encode(list(args)), self.encode(kwargs)
        outer, self.graph.nodes = self.graph.nodes, []
        syms = dict(self.syms)
        self.fn_outs.append(None)
        try:
            result = apply(cls, *_strip(args), **_strip(kwargs))
            raw = self.fn_outs[-1]
        finally:
            self.fn_outs.pop()
            sub, self.graph.nodes = self.graph.nodes, outer
        self.syms = syms  # sizes first read inside forward live in ``sub`` only
        if not _has_tensor(result):
            return result
        # forward's results as values of ``sub``; one computed outside the autograd ops is unknown (None, not a
        # constant: ONNX export then refuses to inline the Function)
        sub_out = self._known(raw if raw is not None else result)
        dep = "input" if "input" in deps else "param"
        out = self._register(result, dep)
        target = f"function.{cls.__module__}:{cls.__qualname__}"
        self.functions[target] = cls
        node = Node(cls.__name__, target, enc_args, enc_kwargs, out, {"args": tuple(enc_args), **enc_kwargs})
        node.sub, node.sub_out = sub, sub_out
        self.graph.nodes.append(node)
        return result

    def convert(self, t, what):
        if self.dep.get(self.ids.get(id(t))) == "input":
            warnings.warn(f"autograd.jit.trace: a traced tensor (shape {list(t.shape)}) was turned into {what}; the "
                          f"trace keeps the value and the branch it gave this time, for every later input. Hint: "
                          f"keep the computation in tensor ops (autograd.where instead of if, no .item())",
                          TracerWarning, stacklevel=3)

    def shape(self, t):
        name = self.ids.get(id(t))
        dims = t._data.shape
        if name is None or self.dep[name] != "input":
            return Size(dims)
        return Size(SymInt(d, ("size", name, i)) for i, d in enumerate(dims))


def _has_tensor(r):
    if isinstance(r, Tensor):
        return True
    return isinstance(r, tuple | list) and any(_has_tensor(x) for x in r)
