"""Devices: ``cpu`` (NumPy) and ``cuda[:N]`` (Triton kernels on memory from our caching allocator)."""

from __future__ import annotations

import threading

from .validation import OpTypeError, OpValueError

__all__ = ["Device", "as_device", "get_default_device", "set_default_device"]

_TYPES = ("cpu", "cuda")


class Device:
    """A device: ``Device("cpu")``, ``Device("cuda")``, ``Device("cuda:1")``, ``Device("cuda", 1)``.

    ``cuda`` without an index means the current cuda device when an array is made on it; ``str()`` gives
    ``"cpu"`` or ``"cuda:N"``.
    """

    __slots__ = ("type", "index", "_str", "_impls")
    _cache: dict = {}

    def __new__(cls, spec="cpu", index: int | None = None):
        if isinstance(index, bool) or isinstance(spec, bool):
            raise OpTypeError(f"Device: a bool is not a device index (got Device({spec!r}, {index!r}))")
        if isinstance(spec, Device):
            if index is not None and index != spec.index:
                raise OpValueError(f"Device: conflicting index {index} for {spec}")
            return spec
        key = (spec, index)
        hit = cls._cache.get(key) if isinstance(spec, str) else None
        if hit is not None:
            return hit
        if isinstance(spec, int) and not isinstance(spec, bool) and index is None:
            spec, index = "cuda", spec  # PyTorch accepts a bare ordinal for cuda
        if not isinstance(spec, str):
            raise OpTypeError(f"Device: expected a string like 'cpu', 'cuda' or 'cuda:0', or a Device; "
                              f"got {type(spec).__name__} {spec!r}")
        typ, sep, idx = spec.strip().partition(":")
        if typ not in _TYPES:
            raise OpValueError(f"Device: unknown device type {typ!r} in {spec!r}; expected one of "
                               f"'cpu', 'cuda', 'cuda:N'")
        if sep and not idx:
            raise OpValueError(f"Device: missing device index after ':' in {spec!r}; expected 'cuda:N'")
        if idx:
            if index is not None:
                raise OpValueError(f"Device: index given twice in Device({spec!r}, {index})")
            if not idx.isdigit():
                raise OpValueError(f"Device: bad device index {idx!r} in {spec!r}; expected 'cuda:N' with N >= 0")
            index = int(idx)
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise OpValueError(f"Device: device index must be a non-negative int, got {index!r}")
            if typ == "cpu" and index != 0:
                raise OpValueError(f"Device: cpu has no index {index}")
            if typ == "cpu":
                index = None
        self = object.__new__(cls)
        object.__setattr__(self, "type", typ)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_str", typ if index is None else f"{typ}:{index}")
        object.__setattr__(self, "_impls", {})  # op name -> implementation (filled by dispatch.lookup)
        if isinstance(key[0], str):
            cls._cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("Device is immutable")

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __eq__(self, other) -> bool:
        if self is other:  # devices are interned: the common case
            return True
        if isinstance(other, Device):
            return self._str == other._str
        if isinstance(other, str):
            try:
                return self._str == Device(other)._str
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self):
        return (Device, (self._str,))


CPU = Device("cpu")


def as_device(spec) -> Device:
    """A concrete Device: ``cuda`` without an index resolves to the current cuda device."""
    if spec is None:
        return get_default_device()
    d = spec if isinstance(spec, Device) else Device(spec)
    if d.type == "cuda" and d.index is None:
        from . import cuda  # lazy: tkernels.cuda is the runtime layer

        d = Device("cuda", cuda.current_device())
    return d


_state = threading.local()


def get_default_device() -> Device:
    """The device that factories use when none is given (cpu unless changed)."""
    return getattr(_state, "default", CPU)


def set_default_device(device) -> None:
    """Set the device that factories use when none is given (per thread)."""
    _state.default = as_device(device)
