"""Recording a graph: for the duration of a trace, the public functions of ``autograd`` and the methods of
``Tensor`` are wrapped so that each outermost op call (``nn.Linear`` -> ``F.linear`` -> ``ag.linear``: one
``linear`` node) becomes a node. Outside a trace nothing is wrapped, so eager mode pays nothing."""

from __future__ import annotations

import threading
import types
import warnings

from ..tensor import Size, Tensor
from .graph import Graph, Node, Ref, RunDevice, Value

__all__ = ["TracerWarning", "SymInt", "Tracer", "active"]

_LOCK = threading.Lock()
_ACTIVE = None  # the Tracer of the trace in progress (one at a time, in one thread)

# ops whose results differ from call to call: never folded into constants, and check_trace cannot compare
NONDETERMINISTIC = {"dropout", "bernoulli", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                    "normal", "multinomial", "randperm", "bernoulli_", "uniform_", "normal_", "random_",
                    "exponential_", "alpha_dropout", "feature_alpha_dropout"}

# Tensor members that are metadata or plumbing, not ops: left alone
_SKIP = {"__init__", "__repr__", "__str__", "__format__", "__hash__", "__deepcopy__", "__reduce_ex__", "__dlpack__",
         "__dlpack_device__", "__cuda_array_interface__", "backward", "register_hook",
         "register_post_accumulate_grad_hook", "retain_grad", "requires_grad_", "size", "dim", "ndimension",
         "numel", "nelement", "element_size", "stride", "storage_offset", "data_ptr", "is_contiguous",
         "is_floating_point", "get_device", "is_pinned", "pin_memory", "type", "shape", "dtype", "device", "ndim",
         "grad", "grad_fn", "requires_grad", "is_leaf", "retains_grad", "data", "is_cuda", "is_inference",
         "itemsize", "nbytes", "detach_", "new_tensor"}
# conversions to Python values: the trace keeps the value seen, so they warn
_CONVERSIONS = {"__bool__": "a Python boolean", "__float__": "a Python float", "__int__": "a Python integer",
                "__index__": "a Python index", "__complex__": "a Python complex", "item": "a Python number",
                "tolist": "a Python list", "numpy": "a NumPy array", "__array__": "a NumPy array",
                "__len__": "a Python int with len() (use x.shape[0], which stays symbolic)",
                "__iter__": "a Python iterator (the number of items is frozen)"}
# operators: (PyTorch op name, operands reflected)
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
           "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
           "xor": "bitwise_xor", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
_DUNDER = {f"__{k}__": (v, False) for k, v in _BINARY.items()}
_DUNDER.update({f"__r{k}__": (v, True) for k, v in _BINARY.items()})
_DUNDER.update({f"__i{k}__": (v + "_", False) for k, v in _BINARY.items()})
_DUNDER.update({f"__{k}__": (k, False) for k in ("eq", "ne", "lt", "le", "gt", "ge")})
_UNARY_DUNDER = {"__neg__": "neg", "__pos__": "positive", "__abs__": "abs", "__invert__": "bitwise_not"}


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
        sub_out = self.encode(raw if raw is not None else result)
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


# ------------------------------------------------------------------------------------------ patching
def _fn_wrapper(name, fn):
    def traced(*args, **kwargs):
        t = active()
        if t is None or t.depth:
            return fn(*args, **kwargs)
        return t.call(name, f"ag.{name}", fn, args, kwargs, _bind(fn, args, kwargs))
    traced.__wrapped__ = fn
    return traced


def _method_wrapper(name, fn, oof=None):
    op, reflected = _DUNDER.get(name, (None, False))
    if name in _UNARY_DUNDER:
        op = _UNARY_DUNDER[name]
    elif name == "__getitem__":
        op = "getitem"
    elif name == "__setitem__":
        op = "setitem"
    elif op is None:
        op = name

    def traced(*args, **kwargs):
        t = active()
        if t is None or t.depth:
            return fn(*args, **kwargs)
        if op in _BINARY.values() or op in ("eq", "ne", "lt", "le", "gt", "ge") or op.rstrip("_") in _BINARY.values():
            a, b = args[0], args[1]
            bound = {"input": b, "other": a} if reflected else {"input": a, "other": b}
        elif name in _UNARY_DUNDER:
            bound = {"input": args[0]}
        elif name == "__getitem__":
            bound = {"input": args[0], "key": args[1]}
        elif name == "__setitem__":
            bound = {"input": args[0], "key": args[1], "value": args[2]}
        else:
            bound = _bind(oof or fn, args, kwargs)
        return t.call(op, f"Tensor.{name}", fn, args, kwargs, bound)
    traced.__wrapped__ = fn
    return traced


def _conversion_wrapper(name, fn):
    what = _CONVERSIONS[name]

    def traced(self, *args, **kwargs):
        t = active()
        if t is None or t.depth:
            return fn(self, *args, **kwargs)
        t.convert(self, what)
        if name == "__iter__":  # the items (an unbind) are traced ops
            return fn(self, *args, **kwargs)
        t.depth += 1  # __bool__ calls item(): one warning
        try:
            return fn(self, *args, **kwargs)
        finally:
            t.depth -= 1
    traced.__wrapped__ = fn
    return traced


def _property_wrapper(name, prop):
    def get(self):
        t = active()
        if t is None or t.depth:
            return prop.fget(self)
        return t.call(name, f"attr.{name}", prop.fget, (self,), {}, {"input": self})
    return property(get)


def _shape_get(self):
    t = active()
    if t is None or t.depth:
        return Size(self._data.shape)
    return t.shape(self)


def _size_wrapper(fn):
    def size(self, dim=None):
        t = active()
        if t is None or t.depth:
            return fn(self, dim)
        s = t.shape(self)
        return s if dim is None else s[dim if dim >= 0 else dim + len(s)]
    return size


def _patches():
    """(owner, name, replacement) for everything a trace wraps."""
    import autograd

    out = []
    for ns in (autograd, autograd.ops):  # ag.linear and ag.ops.linear
        for n, v in list(vars(ns).items()):
            if isinstance(v, types.FunctionType) and (v.__module__ or "").startswith(("autograd.ops",
                                                                                     "autograd.factory")):
                out.append((ns, n, _fn_wrapper(n, v)))
    for n, v in list(vars(Tensor).items()):
        if n in _CONVERSIONS:
            out.append((Tensor, n, _conversion_wrapper(n, v)))
        elif n in ("T", "mT", "H", "mH"):
            out.append((Tensor, n, _property_wrapper(n, v)))
        elif n in _SKIP or (n.startswith("_") and not n.startswith("__")) or not callable(v):
            continue
        elif isinstance(v, types.FunctionType):
            oof = getattr(autograd, n[:-1], None) if n.endswith("_") else None
            out.append((Tensor, n, _method_wrapper(n, v, oof if callable(oof) else None)))
    from .. import function

    out.append((function.Function, "apply", _apply_wrapper(vars(function.Function)["apply"].__func__)))
    out.append((function, "_wrap_outputs", _wrap_outputs_wrapper(function._wrap_outputs)))
    out.append((Tensor, "shape", property(_shape_get)))
    out.append((Tensor, "size", _size_wrapper(vars(Tensor)["size"])))
    return out


def _apply_wrapper(apply):
    def traced(cls, *args, **kwargs):
        t = active()
        if t is None or t.depth:
            return apply(cls, *args, **kwargs)
        return t.call_function(cls, apply, args, kwargs)
    return classmethod(traced)


def _wrap_outputs_wrapper(fn):
    def traced(ctx, args, out, record):
        t = active()
        if t is not None and not t.depth and t.fn_outs:
            t.fn_outs[-1] = out  # forward's own tensors: the ends of ``sub`` (apply may return aliases)
        return fn(ctx, args, out, record)
    return traced


def _leaf_forward(tracer, path, mod):
    """A module that asks to be one node (``_jit_leaf``, e.g. nn.LSTM): its forward, recording one ``rnn`` node
    whose bound arguments carry the module's spec and weights."""
    original = type(mod).forward.__get__(mod)
    spec = mod._jit_spec()

    def forward(input, hx=None):
        t = active()
        if t is None or t.depth or not isinstance(input, Tensor):
            return original(input, hx)
        weights = [getattr(mod, n) for n in spec["weights"]]
        bound = {"input": input, "hx": hx, "mode": spec["mode"], **spec["kwargs"], "weights": weights,
                 "training": bool(getattr(mod, "training", False))}
        tracer.leaves[path] = mod
        return t.call("rnn", f"module.{path}", original, (input, hx), {}, bound)
    return forward


def _leaves(fn):
    mods = fn.named_modules() if hasattr(fn, "named_modules") else ()
    return [(p, m) for p, m in mods if getattr(type(m), "_jit_leaf", False)]


def run_traced(tracer: Tracer, fn, inputs):
    """Run ``fn(*inputs)`` with ``tracer`` recording; the wrappers are removed afterwards, whatever happens."""
    global _ACTIVE
    if active() is not None:
        raise RuntimeError("autograd.jit.trace: a trace is already in progress in this thread (nested traces are not "
                           "supported). Hint: trace the outer function only")
    with _LOCK:  # traces in other threads wait for this one: the wrappers are process-wide
        _ACTIVE = tracer
        saved = []
        try:
            for owner, name, new in _patches():
                saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
                setattr(owner, name, new)
            for path, mod in _leaves(fn):  # an instance attribute shadows the class's forward
                saved.append((mod, "forward", mod.__dict__.get("forward", _MISSING)))
                object.__setattr__(mod, "forward", _leaf_forward(tracer, path, mod))
            return fn(*inputs)
        finally:
            for owner, name, old in reversed(saved):
                if old is _MISSING:
                    type.__delattr__(owner, name) if isinstance(owner, type) else object.__delattr__(owner, name)
                elif isinstance(owner, type) or isinstance(owner, types.ModuleType):
                    setattr(owner, name, old)
                else:
                    object.__setattr__(owner, name, old)
            _ACTIVE = None


_MISSING = object()

