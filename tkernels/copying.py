"""Copies, casts, device transfers, advanced indexing and item assignment."""

from __future__ import annotations

import builtins

import numpy as np

from . import dtypes as _dt
from ._complex import check_device
from .array import Array
from .device import as_device
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, broadcast_shapes, check_scalar_fits, describe

__all__ = ["copy", "astype", "copy_into", "to_device", "to_numpy", "pin_memory", "dlpack_export", "getitem_advanced",
           "setitem_advanced"]


def copy(x, /) -> Array:
    """A contiguous copy of ``x`` on the same device."""
    if not isinstance(x, Array):
        raise OpTypeError(f"copy: expected an Array, got {describe(x)}")
    out = lookup("empty", x._device)(x._shape, x._dtype, x._device)
    lookup("copy_", x._device)(out, x)
    return out


def astype(x, dtype, /, *, copy: bool = True, device=None) -> Array:
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero; nonzero to bool is True)."""
    if not isinstance(x, Array):
        raise OpTypeError(f"astype: expected an Array, got {describe(x)}")
    d = _dt.as_dtype(dtype)
    if device is not None and as_device(device) != x._device:
        x = to_device(x, as_device(device))
    if d is x._dtype and not copy:
        return x
    out = lookup("empty", x._device)(x._shape, d, x._device)
    if d.kind == "c" or x._dtype.kind == "c":
        check_device("astype", x, out)
    lookup("copy_", x._device)(out, x)
    return out


_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)


def copy_into(dst: Array, src, *, op: str = "copy_") -> Array:
    """Write ``src`` (an Array broadcast to ``dst``'s shape, or a scalar) into ``dst``, casting to its dtype."""
    if src.__class__ is builtins.float and dst._dtype.kind == "f":  # the hot case (optimizer step counts)
        lookup("fill", dst._device)(dst, src)
        return dst
    if isinstance(src, Array):
        if src._device != dst._device:
            if src.ndim == 0 and src._device.type == "cpu":
                src = src.item()
            else:
                src = to_device(src, dst._device)
    if isinstance(src, Array):
        if src._shape != dst._shape:
            try:
                shape = broadcast_shapes(dst._shape, src._shape, op=op)
            except ValueError:
                shape = None
            if shape != dst._shape:
                raise OpValueError(f"{op}: cannot write a value of shape {src.shape} into a target of shape "
                                   f"{dst.shape} (the value must broadcast to the target)")
            src = src.broadcast_to(dst._shape)
        if dst._dtype.kind == "c" or src._dtype.kind == "c":
            check_device(op, dst, src)
        lookup("copy_", dst._device)(dst, src)
        return dst
    if isinstance(src, _SCALARS):
        check_scalar_fits(op, src, dst._dtype)
        check_device("fill", dst)
        lookup("fill", dst._device)(dst, src)
        return dst
    from .creation import asarray

    try:
        value = asarray(src, dtype=dst._dtype)  # straight to dst's dtype (a list of floats is no float32 first)
    except TypeError:
        raise OpTypeError(f"{op}: cannot assign {describe(src)} to {describe(dst)}") from None
    return copy_into(dst, value, op=op)


def to_device(x: Array, device, *, non_blocking: bool = False, stream=None) -> Array:
    """A copy of ``x`` on ``device`` (host↔device through the target's or the source's backend); ``x`` itself
    when it is there already. ``stream`` (None: the current stream) orders the copy on a stream of the cuda device
    involved (the target's, else the source's): a ``tkernels.cuda.Stream``, or an int as in ``__dlpack__``
    (1: the legacy default stream, 2: the per-thread default stream, other positive ints: a ``CUstream``)."""
    dev = as_device(device)
    s = None if stream is None else _copy_stream("to_device", x, dev, stream)
    if dev == x._device:
        return x
    if s is not None:
        from . import cuda

        with cuda.stream(s):
            return to_device(x, dev, non_blocking=non_blocking)
    if dev.type == "cpu":
        return Array._wrap(to_numpy(x))
    return lookup("to_device", dev)(x, dev, non_blocking=non_blocking)


def _copy_stream(op: str, x: Array, dev, stream):
    """``stream`` as a ``tkernels.cuda.Stream`` of the cuda device of a copy of ``x`` to ``dev``."""
    cuda_dev = dev if dev.type == "cuda" else x._device if x._device.type == "cuda" else None
    if cuda_dev is None:
        raise OpValueError(f"{op}: stream={stream!r} given for a copy of {describe(x)} to {dev}; streams order "
                           f"cuda work and neither device is cuda; hint: pass stream=None")
    from . import cuda

    if isinstance(stream, cuda.Stream):
        if stream.device_index != cuda_dev.index:
            raise OpValueError(f"{op}: stream {stream!r} is on cuda:{stream.device_index}, but the copy of "
                               f"{describe(x)} to {dev} runs on {cuda_dev}; hint: pass a stream of {cuda_dev}")
        return stream
    if type(stream) is not int:
        raise OpTypeError(f"{op}: stream must be None, a tkernels.cuda.Stream or an int, got "
                          f"{type(stream).__name__} {stream!r}")
    if stream <= 0:
        why = "0 is ambiguous and disallowed by the array API" if stream == 0 else "stream numbers are positive"
        raise OpValueError(f"{op}: invalid stream {stream} ({why}); use 1 for the legacy default stream, 2 for the "
                           f"per-thread default stream, or a CUstream handle")
    return cuda.Stream(cuda_dev.index, _handle=0 if stream == 1 else stream)


def pin_memory(x: Array) -> Array:
    """A copy of cpu array ``x`` in page-locked host memory, for fast ``non_blocking`` copies to cuda."""
    from . import cuda

    if x._device.type != "cpu":
        raise RuntimeError(f"pin_memory: only cpu arrays can be pinned, got {describe(x)}")
    if not cuda.is_available():
        raise RuntimeError("pin_memory: pinned memory needs a CUDA driver (tkernels.cuda.is_available() is False)")
    from .device import Device

    return lookup("pin_memory", Device("cuda", cuda.current_device()))(x)


def to_numpy(x: Array) -> np.ndarray:
    """A host NumPy copy of a device array (a view for cpu arrays)."""
    if x._device.type == "cpu":
        return x.numpy()
    return lookup("to_numpy", x._device)(x)


def dlpack_export(x: Array, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``__dlpack__`` of an Array: the backend of its device produces the capsule."""
    return lookup("dlpack_export", x._device)(x, stream=stream, max_version=max_version, dl_device=dl_device,
                                              copy=copy)


def cuda_array_interface(x: Array) -> dict:
    """``__cuda_array_interface__`` (v3) of a cuda array: the backend of its device describes it."""
    return lookup("cuda_array_interface", x._device)(x)


def _normalize_key(op, x: Array, key):
    """Turn lists and NumPy arrays in an index into Arrays on x's device, and check index dtypes."""
    from .creation import asarray

    out = []
    for k in key:
        if isinstance(k, list | range | np.ndarray | builtins.bool | np.bool_):
            if isinstance(k, range):  # PyTorch and NumPy take a range as the list of its integers
                k = np.arange(k.start, k.stop, k.step, dtype=np.int64)
            try:
                k = asarray(k, device=x._device)
            except TypeError:
                raise IndexError(f"{op}: cannot use {describe(k)} as an index") from None
            if k.dtype.kind == "f":
                if k.size == 0:
                    k = k.astype(_dt.int64)
                else:
                    raise IndexError(f"{op}: arrays used as indices must be integer or bool, got {describe(k)}")
        elif isinstance(k, Array):
            if k.dtype.kind == "f":
                raise IndexError(f"{op}: arrays used as indices must be integer or bool, got {describe(k)}; "
                                 f"hint: convert with .astype(int64)")
            if k._device != x._device:
                raise RuntimeError(f"{op}: the index is on {k.device} but the array is on {x.device}")
        elif not (k is None or k is Ellipsis or isinstance(k, slice)):
            try:
                k = k.__index__()
            except (AttributeError, TypeError):
                raise IndexError(f"{op}: only integers, slices, None, Ellipsis, and integer or boolean arrays "
                                 f"are valid indices, got {describe(k)}") from None
        out.append(k)
    return tuple(out)


def getitem_advanced(x: Array, key) -> Array:
    """``x[key]`` with integer or boolean arrays in ``key`` (NumPy rules; the result is a copy)."""
    key = _normalize_key("index", x, key)
    return lookup("getitem_advanced", x._device)(x, key)


def setitem_advanced(x: Array, key, value) -> None:
    """``x[key] = value`` with integer or boolean arrays in ``key``; ``value`` broadcasts to the selection."""
    key = _normalize_key("setitem", x, key)
    if isinstance(value, Array):
        if value._device != x._device:
            value = value.item() if value.ndim == 0 else to_device(value, x._device)
    elif not isinstance(value, builtins.bool | builtins.int | builtins.float | np.generic):
        from .creation import asarray

        value = asarray(value, dtype=x._dtype, device=x._device)
    else:
        check_scalar_fits("setitem", value, x._dtype)
    lookup("setitem_advanced", x._device)(x, key, value)
