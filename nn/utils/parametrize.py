"""``nn.utils.parametrize``: express a module's tensor as a function of other tensors (PyTorch's API).

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``... when ``P.right_inverse`` returns a
tuple) and makes ``module.weight`` a property that returns ``P(original)``, recomputed at each access unless inside
``cached()``. As in PyTorch, the module's class is swapped for a subclass ``Parametrized<Class>`` that holds the
property, so state_dict keys and behaviour match (``parametrizations.weight.original``)."""

from __future__ import annotations

import contextlib

import autograd as ag
from autograd.tensor import Tensor

from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "ParametrizationList"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, at its first access, and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register(module, name, tensor, as_param):
    if as_param:
        module.register_parameter(name, tensor if isinstance(tensor, Parameter) else Parameter(tensor))
    else:
        module.register_buffer(name, tensor)


def _set_data(dst, value):
    """Give ``dst`` ``value``'s data in place (the Parameter object, and optimizers holding it, stay valid)."""
    if tuple(dst.shape) == tuple(value.shape) and dst.dtype == value.dtype:
        dst.copy_(value)
    else:
        dst.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or ``original0``, ``original1``...)."""

    def __init__(self, modules, original, unsafe: bool = False):
        super().__init__(modules)
        self.unsafe = unsafe
        is_param = isinstance(original, Parameter)
        new = original
        with ag.no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (new.dtype != original.dtype):
                raise ValueError(f"register_parametrization: right_inverse must not change the dtype of the "
                                 f"tensor, got {original.dtype} -> {new.dtype}")
            with ag.no_grad():
                _set_data(original, new)
            _register(self, "original", original, is_param)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"register_parametrization: right_inverse must return a Tensor or a sequence "
                                     f"of Tensors, got an element of type {type(t).__name__}")
                t = t.detach().clone()
                if is_param:
                    t = Parameter(t, requires_grad=original.requires_grad)
                _register(self, f"original{i}", t, is_param)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"register_parametrization: a parametrization must return a Tensor, got "
                                 f"{type(z).__name__}")
            if z.dtype != original.dtype or tuple(z.shape) != tuple(original.shape):
                raise ValueError(f"register_parametrization: the parametrization changes the tensor from shape "
                                 f"{list(original.shape)}, dtype {original.dtype} to shape {list(z.shape)}, dtype "
                                 f"{z.dtype}; hint: pass unsafe=True if that is intended")

    def _originals(self):
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value):
        """Set the originals so that the parametrized tensor becomes ``value`` (through each ``right_inverse``)."""
        with ag.no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse, so "
                                       f"the parametrized tensor cannot be assigned")
                value = m.right_inverse(value)
            if self.is_tensor:
                _set_data(self.original, value)
            else:
                if isinstance(value, Tensor) or len(value) != self.ntensors:
                    raise ValueError(f"right_inverse must return a sequence of {self.ntensors} tensors")
                for t, v in zip(self._originals(), value):
                    _set_data(t, v)

    def forward(self):
        mods = list(self)
        x = mods[0](*self._originals())
        for m in mods[1:]:
            x = m(x)
        return x


def _getter(name):
    def get(self):
        p = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            t = _cache.get(key)
            if t is None:
                t = _cache[key] = p()
            return t
        return p()

    def set(self, value):
        self.parametrizations[name].right_inverse(value)

    return property(get, set)


def _inject_class(module):
    cls = type(module)
    new = type(f"Parametrized{cls.__name__}", (cls,), {"_parametrized_base": cls})
    module.__class__ = new


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; a second call on the same name chains."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be an nn.Module, got "
                        f"{type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            z = parametrization(getattr(module, tensor_name))
            if not isinstance(z, Tensor) or tuple(z.shape) != tuple(getattr(module, tensor_name).shape):
                raise ValueError(f"register_parametrization: the new parametrization of '{tensor_name}' must keep "
                                 f"its shape; hint: pass unsafe=True if that is intended")
        plist.append(parametrization)
        return module
    if tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"register_parametrization: module's '{tensor_name}' is None")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = plist
        setattr(type(module), tensor_name, _getter(tensor_name))
        return module
    raise ValueError(f"register_parametrization: module {type(module).__name__} has no parameter or buffer named "
                     f"'{tensor_name}'")


def is_parametrized(module, tensor_name=None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    p = module._modules.get("parametrizations") if isinstance(module, Module) else None
    if not isinstance(p, ModuleDict):
        return False
    return len(p) > 0 if tensor_name is None else tensor_name in p


def type_before_parametrizations(module) -> type:
    """The module's class before parametrizations swapped it."""
    return type(module)._parametrized_base if is_parametrized(module) else type(module)


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain parameter or buffer again,
    holding the parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: module {type(module).__name__} does not have a parametrization "
                         f"on '{tensor_name}'")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with ag.no_grad():
                t = getattr(module, tensor_name)
                _set_data(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("remove_parametrizations: cannot leave unparametrized (leave_parametrized=False) a "
                             "tensor that is parametrized in terms of a sequence of tensors")
        with ag.no_grad():
            t = getattr(module, tensor_name).detach().clone()
        first = plist._originals()[0]
        original = Parameter(t, requires_grad=first.requires_grad) if isinstance(first, Parameter) else t
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original, isinstance(original, Parameter))
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module)._parametrized_base
    return module
