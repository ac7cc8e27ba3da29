"""Installing the trace: for its duration the public functions of ``autograd`` (and ``autograd.ops``), the
methods of ``Tensor``, ``Function.apply`` and the forward of modules that ask to be one node are wrapped; each
wrapper is one ``active()`` check when another thread or a nested op calls it. Everything is restored after."""

from __future__ import annotations

import threading
import types

from ..tensor import Size, Tensor
from . import tracer as _state
from .tracer import Tracer, _bind, active

__all__ = ["run_traced"]

_LOCK = threading.Lock()

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
    if active() is not None:
        raise RuntimeError("autograd.jit.trace: a trace is already in progress in this thread (nested traces are not "
                           "supported). Hint: trace the outer function only")
    with _LOCK:  # traces in other threads wait for this one: the wrappers are process-wide
        _state._ACTIVE = tracer
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
            _state._ACTIVE = None


_MISSING = object()

