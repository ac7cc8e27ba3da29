"""Whole objects in checkpoints (``nn.save(model, path)``), safe by default as in PyTorch >= 2.6.

Note [objects]. An object that is not a plain tree of containers, scalars and tensors (a Module, an
optimizer, a user class) is pickled with every tensor, Parameter, tkernels Array and NumPy array replaced by a
persistent reference ``("t", k, kind, requires_grad)``; the tensors themselves are written as safetensors
entries (so their bytes stay in the safetensors layout and other tools can read them), and the pickle bytes
travel base64-encoded in the structure: ``{"pickle": "<base64>", "tensors": [tensor refs]}``.

``load(weights_only=True)`` (the default) unpickles with a restricted unpickler: it resolves a global only if
it is in the allow-list: a few safe built-ins (containers, ``OrderedDict``, numbers), our dtypes, devices and
``Size``, and the classes a user allowed with ``add_safe_globals([...])`` or, for one block,
``with safe_globals([...])``. Anything else raises ``WeightsOnlyError`` naming the class and both ways to
load it; ``weights_only=False`` unpickles everything, which runs code from the file: only for trusted files.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import collections
import contextlib
import io
import pickle
import threading

import numpy as np

from autograd import Tensor
from autograd.tensor import Size
from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.device import Device

__all__ = ["WeightsOnlyError", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"]


class WeightsOnlyError(pickle.UnpicklingError):
    """``nn.load(..., weights_only=True)`` met a class that is not allow-listed."""


_DEFAULT_SAFE = [collections.OrderedDict, collections.defaultdict, builtins.set, builtins.frozenset,
                 builtins.complex, builtins.slice, builtins.range, builtins.dict, builtins.list, builtins.tuple,
                 builtins.int, builtins.float, builtins.bool, builtins.str, builtins.bytes, builtins.bytearray,
                 _dt.as_dtype, Device, Size]
_user_safe: list = []  # add_safe_globals
_local = threading.local()  # safe_globals blocks, per thread


def _key(entry):
    """``(module, qualified name)`` of an allow-list entry: an object, or ``(object, "module.name")``."""
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], str):
        module, _, name = entry[1].rpartition(".")
        return module, name
    module, name = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if module is None or name is None:
        raise TypeError(f"add_safe_globals: {entry!r} has no __module__/__qualname__; pass (object, "
                        f"'module.name') for it")
    return module, name


def add_safe_globals(safe: list) -> None:
    """Allow these classes and functions in ``nn.load(weights_only=True)``, for this process."""
    keys = [_key(e) for e in safe]
    _user_safe.extend(keys)


def clear_safe_globals() -> None:
    _user_safe.clear()


def get_safe_globals() -> list:
    """The user's allow-list (``add_safe_globals``), as ``"module.name"`` strings."""
    return [f"{m}.{n}" for m, n in _user_safe]


@contextlib.contextmanager
def safe_globals(safe: list):
    """``with nn.serialization.safe_globals([MyModel]): nn.load(path)``: allowed inside the block only."""
    keys = [_key(e) for e in safe]
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(keys)
    try:
        yield
    finally:
        stack.pop()


def _allowed(module, name) -> bool:
    if (module, name) in _DEFAULT_KEYS or (module, name) in _user_safe:
        return True
    return any((module, name) in keys for keys in getattr(_local, "stack", ()))


_DEFAULT_KEYS = {_key(e) for e in _DEFAULT_SAFE}


# ----------------------------------------------------------------------------------------------- save
def dumps(obj, where):
    """``(pickle bytes, tensors)``: ``obj`` pickled with its tensors pulled out (Note [objects])."""
    from nn.parameter import Parameter

    tensors, index = [], {}

    class _Pickler(pickle.Pickler):
        def persistent_id(self, v):
            if not isinstance(v, Tensor | Array | np.ndarray):
                return None
            if isinstance(v, np.ndarray) and (v.dtype.hasobject or v.dtype.kind not in "biuf"):
                raise TypeError(f"{where}: a NumPy array of dtype {v.dtype} cannot be stored as a tensor; "
                                f"checkpoints hold numeric arrays")
            k = index.get(id(v))
            if k is None:
                k = index[id(v)] = len(tensors)
                tensors.append(v)
            kind = ("parameter" if isinstance(v, Parameter) else "tensor" if isinstance(v, Tensor) else
                    "numpy" if isinstance(v, np.ndarray) else "array")
            return ("t", k, kind, bool(isinstance(v, Tensor) and v.requires_grad))

    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol=4).dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError(f"{where}: the object cannot be saved: {e}; hint: save its state_dict() instead") from None
    return base64.b64encode(buf.getvalue()).decode("ascii"), tensors


# ----------------------------------------------------------------------------------------------- load
class _Restricted(pickle.Unpickler):
    def __init__(self, file, persistent, where):
        super().__init__(file)
        self._persistent = persistent
        self._where = where

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module, name):
        if _allowed(module, name):
            return super().find_class(module, name)
        raise WeightsOnlyError(
            f"{self._where}: weights_only=True refuses to load the global {module}.{name} (the checkpoint holds a "
            f"whole object, and loading it would run code named by the file); hint: if you trust the file, "
            f"nn.load(path, weights_only=False), or allow the class: "
            f"nn.serialization.add_safe_globals([{name}]) or with nn.serialization.safe_globals([{name}]): ...")


class _Full(pickle.Unpickler):
    def __init__(self, file, persistent):
        super().__init__(file)
        self._persistent = persistent

    def persistent_load(self, pid):
        return self._persistent(pid)


def loads(text, tensors, weights_only, where, error):
    """Unpickle ``text`` (base64), resolving tensor references into ``tensors`` (a list)."""
    from nn.parameter import Parameter

    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise error(f"{where}: the pickled object is not valid base64") from None
    made = {}

    def persistent(pid):
        if not (isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "t" and isinstance(pid[1], int)
                and 0 <= pid[1] < len(tensors) and pid[2] in ("parameter", "tensor", "numpy", "array")):
            raise error(f"{where}: the pickled object holds a bad tensor reference {pid!r:.80}")
        _, k, kind, requires_grad = pid
        key = (k, kind)
        if key not in made:
            t = tensors[k]
            if kind == "parameter":
                v = Parameter(t, requires_grad=bool(requires_grad))
            elif kind == "tensor":
                v = t.requires_grad_(True) if requires_grad and t.is_floating_point() else t
            elif kind == "numpy":  # the tensor list's own structure may have made it an ndarray already
                v = t if isinstance(t, np.ndarray) else t.detach().cpu().numpy().copy()
            else:
                v = t if isinstance(t, Array) else t._data
            made[key] = v
        return made[key]

    f = io.BytesIO(raw)
    unpickler = _Restricted(f, persistent, where) if weights_only else _Full(f, persistent)
    try:
        return unpickler.load()
    except WeightsOnlyError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            ImportError) as e:
        if isinstance(e, error):
            raise
        raise error(f"{where}: the pickled object is corrupt ({type(e).__name__}: {e})") from None
