"""The one place where an op meets a device: a registry of implementations by (op name, backend).

Public entries in ``tkernels`` validate, broadcast, promote and allocate, then call ``lookup(op, device)``
and hand the implementation their arrays. Backends register with ``@register("exp", "numpy")``. No other
module branches on the device type.

Backends: ``numpy`` serves ``cpu``; ``triton`` serves ``cuda`` (real or interpreted). A backend module is
imported the first time one of its devices is used, so importing tkernels never imports Triton.
"""

from __future__ import annotations

import importlib
import threading

from . import _capture
from .validation import OpValueError

__all__ = ["register", "lookup", "implementations", "BACKEND_OF", "has_impl", "wrap_calls"]

BACKEND_OF = {"cpu": "numpy", "cuda": "triton"}
_BACKEND_MODULES = {"numpy": "tkernels.backends.numpy", "triton": "tkernels.backends.triton"}

_impls: dict[str, dict[str, object]] = {}
_call_wrappers: dict[str, tuple] = {}  # backend -> (wrapper, ops left unwrapped): see wrap_calls
_loaded: set[str] = set()  # backends whose module finished importing
_loading: set[str] = set()  # backends whose module the thread holding _load_lock is importing
_load_lock = threading.RLock()


def register(op: str, backend: str):
    """Decorator: register ``fn`` as the implementation of ``op`` on ``backend``."""
    if backend not in _BACKEND_MODULES:
        raise OpValueError(f"register: unknown backend {backend!r}; known: {', '.join(_BACKEND_MODULES)}")

    def deco(fn):
        table = _impls.setdefault(op, {})
        if backend in table and table[backend] is not fn:
            raise RuntimeError(f"register: {op!r} already has a {backend} implementation ({table[backend]})")
        table[backend] = fn
        _invalidate(op)
        return fn

    return deco


def wrap_calls(backend: str, wrapper, *, skip=()) -> None:
    """Hand out every implementation ``fn`` of ``backend`` as ``wrapper(fn)``, but those of the ops in ``skip``:
    a policy around all of a backend's calls, set once by the backend (the numpy backend runs every call with
    NumPy's floating-point warnings off)."""
    _call_wrappers[backend] = (wrapper, frozenset(skip))
    for op in list(_impls):
        _invalidate(op)


def _invalidate(op: str) -> None:
    from .device import Device

    for d in list(Device._cache.values()):
        d._impls.pop(op, None)


def _load(backend: str):
    """Import a backend's module once. Other threads wait until its registrations are complete (they saw an
    empty registry before: the first use of a device from several threads at once failed); the importing thread
    itself may come back here while its module registers (it goes on: what is registered so far serves it)."""
    if backend in _loaded:
        return
    with _load_lock:
        if backend in _loaded or backend in _loading:
            return
        _loading.add(backend)
        try:
            importlib.import_module(_BACKEND_MODULES[backend])
        except ModuleNotFoundError as e:
            if e.name != _BACKEND_MODULES[backend]:
                raise
        finally:
            _loading.discard(backend)
        _loaded.add(backend)


def lookup(op: str, device):
    """The implementation of ``op`` for ``device``; NotImplementedError naming both when there is none."""
    fn = device._impls.get(op)  # per-device cache: one dict lookup on the hot path
    if fn is not None:
        return fn
    backend = BACKEND_OF[device.type]
    _load(backend)
    fn = _impls.get(op, {}).get(backend)
    if fn is None:
        have = sorted(implementations().get(op, ()))
        raise NotImplementedError(f"{op}: no implementation for device {device} (backend {backend!r}); "
                                  f"implemented for: {', '.join(have) or 'no backend (unknown op?)'}")
    wrap = _call_wrappers.get(backend)
    if wrap is not None and op not in wrap[1]:
        fn = wrap[0](fn)
    g = _capture.GRAPH  # (read once: another thread may end the capture meanwhile)
    if g is not None:  # a graph is capturing: hand out its recording wrapper
        g._attach(device)  # (a device first used during the capture)
        device._impls[op] = fn
        return device._impls.get(op)
    device._impls[op] = fn
    return fn


def has_impl(op: str, backend: str) -> bool:
    _load(backend)
    return backend in _impls.get(op, {})


def implementations() -> dict[str, set[str]]:
    """Op name → set of backends that implement it (loads every importable backend first)."""
    for b in _BACKEND_MODULES:
        try:
            _load(b)
        except ImportError:
            pass
    return {op: set(t) for op, t in _impls.items()}
