"""``autograd.accelerator``: PyTorch's device-agnostic accelerator API (``torch.accelerator``). The one
accelerator here is ``cuda`` (a real GPU, or interpreted cuda with ``TKERNELS_INTERPRET=1``); every function
forwards to ``autograd.cuda``. Without one, ``is_available()`` is False, ``current_accelerator()`` is None and
the functions that need a device raise ``RuntimeError`` saying so."""

from __future__ import annotations

import contextlib

import tkernels.cuda as _cuda
from tkernels.device import Device

from . import memory  # noqa: F401

__all__ = ["device_count", "is_available", "current_accelerator", "set_device_index", "set_device_idx",
           "current_device_index", "current_device_idx", "set_stream", "current_stream", "synchronize",
           "device_index", "memory"]


def is_available() -> bool:
    """True when an accelerator can be used (``ag.cuda.is_available()``)."""
    return _cuda.is_available()


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return _cuda.device_count() if _cuda.is_available() else 0


def current_accelerator(check_available: bool = False):
    """``device("cuda")`` when this build has an accelerator (here: always cuda); with ``check_available=True``,
    None when no device can be used now."""
    if check_available and not is_available():
        return None
    return Device("cuda")


def _need(op):
    if not is_available():
        raise RuntimeError(f"accelerator.{op}: no accelerator is available (no CUDA GPU, and interpreted cuda is "
                           f"off); hint: check accelerator.is_available() first, or set TKERNELS_INTERPRET=1 "
                           f"before importing to run cuda through Triton's interpreter")


def _index(op, device) -> int:
    if device is None:
        return _cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = device if isinstance(device, Device) else Device(str(device)) if isinstance(device, str) else None
    if d is None or d.type != "cuda":
        raise ValueError(f"accelerator.{op}: expected a cuda device or an index, got {device!r}")
    return _cuda.current_device() if d.index is None else d.index


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _need("current_device_index")
    return _cuda.current_device()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or a device) the current accelerator device."""
    _need("set_device_index")
    _cuda.set_device(_index("set_device_index", device))


current_device_idx = current_device_index  # the names PyTorch 2.6 used
set_device_idx = set_device_index


@contextlib.contextmanager
def device_index(device, /):
    """Context manager: ``device`` is the current accelerator device inside the block (None: no change)."""
    if device is None:
        yield
        return
    _need("device_index")
    with _cuda.device(_index("device_index", device)):
        yield


def current_stream(device=None, /):
    """The current stream of ``device`` (default: the current device)."""
    _need("current_stream")
    return _cuda.current_stream(_index("current_stream", device))


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its device."""
    _need("set_stream")
    _cuda.set_stream(stream)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on ``device`` (default: the current device)."""
    _need("synchronize")
    _cuda.synchronize(_index("synchronize", device))
