"""``Module``: the base class of layers and models (parameters, buffers and submodules registered by
attribute, state dicts, train/eval, device/dtype moves, hooks), with PyTorch's names and behaviour."""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import autograd as ag
from autograd.graph import Node
from autograd.tensor import Tensor
from tkernels.validation import OpTypeError, OpValueError

from ..parameter import Buffer, Parameter

__all__ = ["Module"]

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
_ids = itertools.count()


class _Handle:
    def __init__(self, d, key):
        self._d = d
        self.key = key

    def remove(self):
        self._d.pop(self.key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_EXTRA_STATE = "_extra_state"  # the state_dict key of get_extra_state

class Module:
    """Base class: subclasses set parameters/submodules in ``__init__`` (after ``super().__init__()``) and
    define ``forward``. Calling the module runs hooks around ``forward``."""

    training: bool
    _version = 1
    _compiled_call = None  # Module.compile(): the compiled callable calls go through (see __call__)
    _in_compiled_call = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise OpTypeError(f"{type(self).__name__}.__init__() got unexpected arguments; Module.__init__ takes none")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------------------- registration
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise OpTypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (nn.Parameter or "
                                  f"None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, keep="_modules")
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise OpTypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (nn.Module or "
                                  f"None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer):
            self._remove_from(name, d, keep="_buffers")
            self.register_buffer(name, value, persistent=value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise OpTypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None "
                                  f"expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_from(self, name, d, keep):
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep and d.get(key) is not None and name in d[key]:
                del d[key][name]
                d["_non_persistent_buffers_set"].discard(name)
        d.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            store = d.get(key)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d.get(key, {}):
                del d[key][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _check_name(self, kind, name):
        if not isinstance(name, str):
            raise OpTypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{kind} name can\'t contain "." and can\'t be empty, got {name!r}')
        if hasattr(self, name) and name not in self._parameters and name not in self._buffers and \
                name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name)
        if param is not None and not isinstance(param, Parameter):
            raise OpTypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (nn.Parameter "
                              f"or None required)")
        if param is not None and param.grad_fn is not None:
            raise OpValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                               f"created explicitly; to express '{name}' as a function of another Tensor, compute "
                               f"the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise OpTypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None "
                              f"required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise OpTypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name("module", name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}` (looking up '{target}')")
            mod = mod._modules[item]
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target`` (its parent must exist; ``strict``: and so must the
        attribute, as a module)."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if name in parent.__dict__ or name in parent._parameters or name in parent._buffers:
            raise AttributeError(f"`{name}` is not an nn.Module")
        parent.add_module(name, module)

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod._buffers[name]

    # ----------------------------------------------------------------------------------- iteration
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else \
            [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get(mod):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---------------------------------------------------------------------------------------- modes
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise OpValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def apply(self, fn) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---------------------------------------------------------------------------- device and dtype
    def _apply(self, fn, recurse: bool = True) -> Module:
        """Replace every parameter's and buffer's data with ``fn(tensor)`` (parameters keep their identity, so
        optimizers built before ``to()`` keep working)."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        with ag.no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    p._data = new._data
                    p._version.v += 1
                if p.grad is not None:
                    g = fn(p.grad)
                    if g is not p.grad:
                        p.grad._data = g._data
            for key, b in self._buffers.items():
                if b is not None:
                    self._buffers[key] = fn(b)
        return self

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Parameters and buffers moved to ``device`` without their values (``empty_like`` there: uninitialized,
        for modules built on the meta device or to be loaded from a checkpoint)."""
        return self._apply(lambda t: ag.empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """Move every parameter, gradient and buffer to shared memory (cpu; cuda ones share through CUDA IPC), in
        place: processes that receive the module (``autograd.multiprocessing``) update the same weights."""
        from tkernels import shared_memory

        arrays = []
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    arrays.append(p._data)
                    if p.grad is not None:
                        arrays.append(p.grad._data)
            arrays.extend(b._data for b in m._buffers.values() if b is not None)
        shared_memory.share_arrays(arrays)  # one call: one scan for stale NumPy views, whatever the model size
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)`` (floating parameters and buffers only), ``to(device, dtype)``,
        ``to(tensor)``; ``non_blocking``."""
        from tkernels import dtypes as _dt

        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        non_blocking = kwargs.get("non_blocking", False)
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _dt.DType):
                dtype = a
            elif a is not None:
                device = a
        if dtype is not None and _dt.as_dtype(dtype).kind != "f":
            raise OpTypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")

        def convert(t):
            return t.to(device=device, dtype=dtype if (dtype is not None and t.is_floating_point()) else None,
                        non_blocking=non_blocking)
        return self._apply(convert)

    def cuda(self, device=None) -> Module:
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def cpu(self) -> Module:
        return self.to("cpu")

    def _cast(self, dtype):
        return self._apply(lambda t: t.to(dtype=dtype) if t.is_floating_point() else t)

    def float(self) -> Module:
        return self._cast(ag.float32)

    def double(self) -> Module:
        return self._cast(ag.float64)

    def half(self) -> Module:
        return self._cast(ag.float16)

    def bfloat16(self) -> Module:
        return self._cast(ag.bfloat16)

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.to(dtype=dst_type))

    # ----------------------------------------------------------------------------------- state dicts
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not Module.get_extra_state

    def get_extra_state(self):
        """What ``state_dict`` keeps under ``_extra_state`` besides the tensors: override it together with
        ``set_extra_state`` (PyTorch's protocol); the base class has none."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called: "
                           "override get_extra_state (and set_extra_state) in the module that has extra state")

    def set_extra_state(self, state) -> None:
        """Restore what ``get_extra_state`` returned (called by ``load_state_dict``)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called: "
                           "override set_extra_state in the module whose state_dict has _extra_state")

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer by dotted name (tensors share storage)."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _local_state(self):
        out = {}
        for name, p in self._parameters.items():
            if p is not None:
                out[name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                out[name] = b
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy ``state_dict``'s tensors into the parameters and buffers (checking every key and shape first;
        nothing is written when something is wrong and ``strict``). Returns ``(missing_keys, unexpected_keys)``."""
        if not hasattr(state_dict, "keys"):
            raise OpTypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        expected = {}
        for prefix, mod in self.named_modules(remove_duplicate=False):
            for hook in mod._load_state_dict_pre_hooks.values():
                hook(state_dict, prefix + ("." if prefix else ""))
            for name, t in mod._local_state().items():
                expected[prefix + ("." if prefix else "") + name] = (mod, name, t)
            if mod._has_extra_state():
                expected[prefix + ("." if prefix else "") + _EXTRA_STATE] = (mod, _EXTRA_STATE, None)
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        errors = []
        for k, (_, _, t) in expected.items():
            if k not in state_dict or t is None:
                continue
            v = state_dict[k]
            if not isinstance(v, Tensor):
                errors.append(f'While copying the parameter named "{k}", expected a Tensor from checkpoint but '
                              f"received {type(v).__name__}")
                continue
            if tuple(v.shape) != tuple(t.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape {v.shape} from checkpoint, the "
                              f"shape in current model is {t.shape}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected)
                              + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with ag.no_grad():
            for k, (mod, name, t) in expected.items():
                if k not in state_dict:
                    continue
                v = state_dict[k]
                if t is None:  # (_extra_state)
                    mod.set_extra_state(v)
                elif assign:
                    if name in mod._parameters:
                        mod._parameters[name] = Parameter(v, requires_grad=t.requires_grad)
                    else:
                        mod._buffers[name] = v
                else:
                    t.copy_(v)
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_hook(self, hook):
        k = next(_ids)
        self._state_dict_hooks[k] = hook
        return _Handle(self._state_dict_hooks, k)

    def register_load_state_dict_pre_hook(self, hook):
        k = next(_ids)
        self._load_state_dict_pre_hooks[k] = hook
        return _Handle(self._load_state_dict_pre_hooks, k)

    # ----------------------------------------------------------------------------------------- hooks
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` (or ``(module, args, kwargs)`` with_kwargs) before forward; a non-None result
        replaces the arguments."""
        k = next(_ids)
        self._forward_pre_hooks[k] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(k)
        if prepend:
            self._forward_pre_hooks.move_to_end(k, last=False)
        return _Handle(self._forward_pre_hooks, k)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` after forward; a non-None result replaces the output."""
        k = next(_ids)
        self._forward_hooks[k] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(k)
        if prepend:
            self._forward_hooks.move_to_end(k, last=False)
        return _Handle(self._forward_hooks, k)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's tensor inputs are
        computed; a non-None result replaces grad_input."""
        k = next(_ids)
        self._backward_hooks[k] = hook
        if prepend:
            self._backward_hooks.move_to_end(k, last=False)
        return _Handle(self._backward_hooks, k)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` before the module's gradients are computed; may replace grad_output."""
        k = next(_ids)
        self._backward_pre_hooks[k] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(k, last=False)
        return _Handle(self._backward_pre_hooks, k)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module in place (``torch.nn.Module.compile``): later calls run through
        ``autograd.compile(self, *args, **kwargs)``; its own eager runs (warm-up, recording) call forward as
        before."""
        self.__dict__["_compiled_call"] = ag.compile(self, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        if self._compiled_call is not None and not self._in_compiled_call:
            d = self.__dict__
            d["_in_compiled_call"] = True  # (the compiled callable calls the module again: that call is eager)
            try:
                return self._compiled_call(*args, **kwargs)
            finally:
                d["_in_compiled_call"] = False
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        for k, hook in list(self._forward_pre_hooks.items()):
            if k in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if (self._backward_hooks or self._backward_pre_hooks) and ag.is_grad_enabled():
            bw = _BackwardHookState(self)
            args = bw.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        for k, hook in list(self._forward_hooks.items()):
            r = hook(self, args, kwargs, out) if k in self._forward_hooks_with_kwargs else hook(self, args, out)
            if r is not None:
                out = r
        if bw is not None:
            out = bw.wrap_outputs(out)
        return out

    # -------------------------------------------------------------------------------------- printing
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child = []
        for name, m in self._modules.items():
            mod_str = repr(m).replace("\n", "\n  ")
            child.append(f"({name}): {mod_str}")
        lines = lines + child
        main = self._get_name() + "("
        if lines:
            if len(extra.split("\n")) == 1 and not child:
                main += extra
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        import copy

        for k, v in self.__dict__.items():
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        return new


class _HookIdentity(Node):
    """An identity over several tensors whose backward calls a callback with all their gradients."""

    def __init__(self, tensors, callback, name):
        super().__init__(tensors)
        self.callback = callback
        self._name = name
        self._materialize = False

    def name(self):
        return self._name

    def backward(self, *grads):
        r = self.callback(grads)
        return tuple(r) if r is not None else grads


class _BackwardHookState:
    """Full backward hooks: identity nodes on the module's tensor inputs and outputs capture grad_output and
    grad_input (PyTorch's BackwardHook)."""

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_in = 0

    def _wrap(self, values, callback, name):
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not idx:
            return values, []
        node = _HookIdentity([values[i] for i in idx], callback, name)
        out = list(values)
        for j, i in enumerate(idx):
            t = node.output(values[i]._data, j)
            out[i] = t
        return out, idx

    def wrap_inputs(self, args):
        def on_grad_input(grads):
            gi = tuple(grads)
            for hook in list(self.module._backward_hooks.values()):
                r = hook(self.module, gi, self.grad_output)
                if r is not None:
                    gi = tuple(r)
            return gi
        out, idx = self._wrap(list(args), on_grad_input, "BackwardHookFunctionBackward")
        self.n_in = len(idx)
        return tuple(out)

    def wrap_outputs(self, out):
        single = isinstance(out, Tensor)
        values = [out] if single else list(out) if isinstance(out, tuple | list) else None
        if values is None:
            return out

        def on_grad_output(grads):
            go = tuple(grads)
            for hook in list(self.module._backward_pre_hooks.values()):
                r = hook(self.module, go)
                if r is not None:
                    go = tuple(r)
            self.grad_output = go
            if self.n_in == 0 and self.module._backward_hooks:  # no input needs grad: hooks see grad_input=None
                for hook in list(self.module._backward_hooks.values()):
                    hook(self.module, (None,), go)
            return go
        wrapped, _ = self._wrap(values, on_grad_output, "BackwardHookFunctionBackward")
        if single:
            return wrapped[0]
        return type(out)(wrapped) if isinstance(out, tuple) else wrapped
