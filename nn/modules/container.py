"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""

from __future__ import annotations

import operator
from collections import OrderedDict

from tkernels.validation import OpValueError

from ..parameter import Parameter
from .module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(op, idx, n):
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"{op}: index {i} is out of range for a container of {n} modules")
    return i % n


class Sequential(Module):
    """Modules called in order, each on the previous one's output. ``Sequential(m1, m2)`` or
    ``Sequential(OrderedDict(name=m))``; indexing gives a module, slicing a Sequential."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for k, m in args[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index("Sequential", idx, len(mods))][1]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index("Sequential", idx, len(self._modules))]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else [keys[_index("Sequential", idx, len(keys))]]):
            del self._modules[k]
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        return Sequential(*self, *other)

    def __mul__(self, n: int) -> Sequential:
        """The modules repeated ``n`` times (the same module objects, as PyTorch's)."""
        if not isinstance(n, int) or isinstance(n, bool):
            return NotImplemented
        if n <= 0:
            raise ValueError(f"Non-positive multiplication factor {n} for Sequential")
        return Sequential(*(list(self) * n))

    __rmul__ = __mul__

    def __imul__(self, n: int) -> Sequential:
        r = self * n
        self._modules.clear()
        for i, m in enumerate(r):
            self.add_module(str(i), m)
        return self

    def pop(self, key):
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def append(self, module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module) -> Sequential:
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} out of range for {n} modules")
        items = list(self._modules.values())
        items.insert(index % (n + 1) if index < 0 else index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)
        return self

    def extend(self, modules) -> Sequential:
        for m in modules:
            self.append(m)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """A list of modules, registered (so their parameters are the parent's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return list(self._modules.values())[_index("ModuleList", idx, len(self._modules))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index("ModuleList", idx, len(self._modules))), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index("ModuleList", idx, len(items))]
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        return ModuleList([*self, *other])

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def index(self, module) -> int:
        for i, m in enumerate(self):
            if m is module:
                return i
        raise OpValueError(f"{type(module).__name__} is not in the ModuleList")

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(); iterate over it and call the modules")


class _DictContainer(Module):
    """The dict protocol over one of the module's registries (``_STORE``: ``_modules`` or ``_parameters``);
    subclasses say how a value is registered (``__setitem__``)."""

    _STORE = "_modules"

    def __init__(self, items=None):
        super().__init__()
        if items is not None:
            self.update(items)

    def _store(self) -> dict:
        return self.__dict__[self._STORE]

    def __getitem__(self, key):
        return self._store()[key]

    def __delitem__(self, key):
        del self._store()[key]

    def __len__(self):
        return len(self._store())

    def __iter__(self):
        return iter(self._store())

    def __contains__(self, key):
        return key in self._store()

    def clear(self):
        self._store().clear()

    def pop(self, key):
        return self._store().pop(key)

    def keys(self):
        return self._store().keys()

    def items(self):
        return self._store().items()

    def values(self):
        return self._store().values()

    def update(self, items):
        for k, v in (items.items() if hasattr(items, "items") else items):
            self[k] = v

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward(); index it and call what it holds")


class ModuleDict(_DictContainer):
    """A dict of modules (insertion-ordered), registered by key."""

    def __init__(self, modules=None):
        super().__init__(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)


class ParameterList(Module):
    """A list of parameters, registered (``"0"``, ``"1"``...)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _as_param(self, v):
        return v if isinstance(v, Parameter) else Parameter(v)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self)[idx])
        return self._parameters[str(_index("ParameterList", idx, self._size))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index("ParameterList", idx, self._size)), self._as_param(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self._parameters[str(i)] for i in range(self._size))

    def append(self, value) -> ParameterList:
        self.register_parameter(str(self._size), self._as_param(value))
        self._size += 1
        return self

    def extend(self, values) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for i, p in enumerate(self))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward()")


class ParameterDict(_DictContainer):
    """A dict of parameters, registered by key."""

    _STORE = "_parameters"

    def __init__(self, parameters=None):
        super().__init__(parameters)

    def update(self, parameters):
        """Add ``parameters``: an OrderedDict, a ParameterDict or pairs in their order, another mapping (a plain
        dict) by sorted keys (PyTorch's rule)."""
        if isinstance(parameters, OrderedDict | ParameterDict) or not hasattr(parameters, "items"):
            super().update(parameters)
        else:
            super().update(sorted(parameters.items()))

    def __setitem__(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))
