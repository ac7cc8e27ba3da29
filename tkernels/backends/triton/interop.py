"""GPU interop for cuda arrays: DLPack both ways and the CUDA Array Interface (v3), zero-copy.

Streams follow the standards. DLPack: the consumer passes its stream to ``__dlpack__`` (1: legacy default,
2: per-thread default, other ints: a ``CUstream``, -1: no synchronization, None: assume the legacy default,
0: disallowed); the producer makes that stream wait for its current stream with an event. The CUDA Array
Interface: the producer publishes the stream its data is being written on (1 for the legacy default stream);
the consumer makes its current stream wait for that one. Our default stream is the legacy default stream
(handle 0), published as 1.

Imported memory (a foreign object's or a DLPack producer's) becomes a ``Storage`` over an ``ExternalMemory``:
its address and the object that keeps it alive (the foreign object, or the DLPack owner that calls the
producer's deleter when the last Array over it dies).
"""

from __future__ import annotations

import operator

import numpy as np

from ... import cuda as _cuda
from ... import dlpack as _dl
from ... import dtypes as _dt
from ...array import Array, Storage, _contiguous_strides
from ...device import Device, as_device
from ...dispatch import register
from ...validation import OpTypeError, OpValueError, describe
from .memory import copy_, empty, to_device, to_numpy


class ExternalMemory:
    """Memory tkernels did not allocate: ``ptr`` and the ``owner`` that keeps it alive."""

    __slots__ = ("ptr", "owner")

    def __init__(self, ptr: int, owner):
        self.ptr = ptr
        self.owner = owner


def _wrap_external(ptr: int, shape, strides, dtype, device, owner) -> Array:
    """A cuda Array over foreign memory; ``ptr`` is element 0, ``strides`` are in elements (None: C order)."""
    shape = tuple(shape)
    strides = _contiguous_strides(shape) if strides is None else tuple(strides)
    isz = dtype.itemsize
    if any(s == 0 for s in shape):
        base, offset, nbytes = ptr, 0, 0
    else:  # the storage starts at the lowest address reached (negative strides reach below element 0)
        lo = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
        hi = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
        base, offset, nbytes = ptr + lo * isz, -lo, (hi - lo + 1) * isz
    return Array(Storage(ExternalMemory(base, owner), nbytes, device), shape, strides, offset, dtype, device)


def _copy(x: Array) -> Array:
    out = empty(x.shape, x.dtype, x.device)
    copy_(out, x)
    return out


def _wait(waiter: int, signaler: int, index: int) -> None:
    """Later work on stream ``waiter`` waits for the work queued so far on stream ``signaler`` (raw handles)."""
    if waiter == signaler:
        return
    event = _cuda.Event()
    event.record(_cuda.Stream(index, _handle=signaler))
    _cuda.Stream(index, _handle=waiter).wait_event(event)


def _stream_arg(op: str, stream, allow_no_sync: bool) -> int | None:
    """A standard stream number (1 legacy default, 2 per-thread default, else a CUstream) as a raw handle."""
    if type(stream) is not int:
        raise OpTypeError(f"{op}: stream must be an int or None, got {type(stream).__name__} {stream!r}")
    if stream == -1 and allow_no_sync:
        return None
    if stream == 0:
        raise OpValueError(f"{op}: stream 0 is ambiguous and disallowed by the standard; use 1 for the legacy "
                           f"default stream, 2 for the per-thread default stream" +
                           (", or -1 for no synchronization" if allow_no_sync else ""))
    if stream < 0:
        raise OpValueError(f"{op}: invalid stream {stream}"
                           + ("; -1 means no synchronization" if allow_no_sync else ""))
    return 0 if stream == 1 else stream


def _published_stream(index: int) -> int:
    """Our current stream as a standard stream number (the legacy default stream is 1)."""
    h = _cuda.current_stream(index).handle
    return 1 if h == 0 else h


# --------------------------------------------------------------------------------------------- DLPack
def _versioned(max_version) -> bool:
    if max_version is None:
        return False
    try:
        major, minor = (operator.index(v) for v in max_version)
    except (TypeError, ValueError):
        raise OpTypeError(f"__dlpack__: max_version must be a (major, minor) tuple of ints or None, got "
                          f"{max_version!r}") from None
    return major >= 1


def _dl_device(dl_device) -> tuple[int, int]:
    try:
        t, i = (int(v) for v in dl_device)
    except (TypeError, ValueError):
        raise OpTypeError(f"__dlpack__: dl_device must be a (device_type, device_id) tuple of ints or None, got "
                          f"{dl_device!r}") from None
    return t, i


def _device_name(dev: tuple[int, int]) -> str:
    return f"({_dl.DEVICE_NAMES.get(dev[0], dev[0])}, {dev[1]})"


@register("dlpack_export", "triton")
def dlpack_export(x: Array, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``x.__dlpack__``: a capsule over ``x``'s memory (a copy if ``copy`` or ``dl_device`` asks for one)."""
    op = "__dlpack__"
    versioned = _versioned(max_version)
    consumer = 0 if stream is None else _stream_arg(op, stream, allow_no_sync=True)
    if copy is not None and not isinstance(copy, bool):
        raise OpTypeError(f"{op}: copy must be True, False or None, got {copy!r}")
    ours = (_dl.kDLCUDA, x.device.index)
    target = ours if dl_device is None else _dl_device(dl_device)
    dt = _dl.dl_dtype(x.dtype)
    if target != ours:
        if copy is False:
            raise BufferError(f"{op}: {describe(x)} can only be exported to {_device_name(target)} by copying, "
                              f"but copy=False")
        if target == (_dl.kDLCPU, 0):  # a host copy, complete when to_numpy returns
            nd = to_numpy(x)
            return _dl.to_capsule(nd, nd.ctypes.data if nd.size else None, target, dt, nd.shape,
                                  _contiguous_strides(nd.shape), versioned=versioned, copied=True)
        if target[0] != _dl.kDLCUDA or not 0 <= target[1] < _cuda.device_count():
            raise BufferError(f"{op}: cannot export {describe(x)} to device {_device_name(target)}; supported: "
                              f"{_device_name(ours)}, (kDLCPU, 0) and other cuda devices, by copying")
        y = to_device(x, Device("cuda", target[1]))
    else:
        y = _copy(x) if copy else x
    index = y.device.index
    if consumer is not None:
        _wait(consumer, _cuda.current_stream(index).handle, index)
    return _dl.to_capsule(y._storage, y.data_ptr() if y.size else None, (_dl.kDLCUDA, index), dt, y.shape,
                          y.strides, versioned=versioned, copied=y is not x)


@register("from_dlpack", "triton")
def from_dlpack(x, *, device=None, copy=None) -> Array:
    """A cuda Array over a GPU DLPack producer's memory (zero-copy unless ``copy``/``device`` ask otherwise)."""
    op = "from_dlpack"
    dev_type, dev_id = (int(v) for v in x.__dlpack_device__())
    if dev_type not in (_dl.kDLCUDA, _dl.kDLCUDAManaged):
        raise BufferError(f"{op}: {describe(x)} is on {_device_name((dev_type, dev_id))}; tkernels takes kDLCPU "
                          f"(through NumPy), kDLCUDA and kDLCUDAManaged producers")
    if not 0 <= dev_id < _cuda.device_count():
        raise BufferError(f"{op}: {describe(x)} is on cuda device {dev_id}, but {_cuda.device_count()} cuda "
                          f"device(s) are available")
    kw = {"stream": _published_stream(dev_id), "max_version": _dl.DLPACK_VERSION}
    if copy is not None:
        kw["copy"] = copy
    try:
        capsule = x.__dlpack__(**kw)
        honored = True
    except TypeError:  # a producer older than the 2023.12 signature
        capsule = x.__dlpack__(stream=kw["stream"])
        honored = False
    t = _dl.from_capsule(capsule, op)
    if t.device[0] not in (_dl.kDLCUDA, _dl.kDLCUDAManaged):
        raise BufferError(f"{op}: the DLPack tensor of {describe(x)} is on {_device_name(t.device)}, not on a "
                          f"cuda device")
    out = _wrap_external(t.data, t.shape, t.strides, t.dtype, Device("cuda", t.device[1]), t.owner)
    if t.read_only:  # our arrays are writable: a read-only export is taken as a copy
        if copy is False:
            raise BufferError(f"{op}: {describe(x)} is exported read-only and tkernels arrays are writable; "
                              f"it needs a copy, but copy=False")
        out = _copy(out)
    elif copy and not honored:
        out = _copy(out)
    if device is not None:
        dev = as_device(device)
        if dev != out.device:
            if copy is False:
                raise OpValueError(f"{op}: moving {describe(out)} to {dev} needs a copy, but copy=False")
            out = out.to(dev)
    return out


# ---------------------------------------------------------------------------------- CUDA Array Interface
_TYPESTRS = ", ".join(f"{d.numpy.str} ({d.name})" for d in _dt.all_dtypes if d is not _dt.bfloat16)


@register("cuda_array_interface", "triton")
def cuda_array_interface(x: Array) -> dict:
    """``x.__cuda_array_interface__`` (version 3)."""
    if x.dtype is _dt.bfloat16:
        raise OpTypeError(f"__cuda_array_interface__: dtype bfloat16 is not supported ({describe(x)}): the CUDA "
                          f"Array Interface has no type string for it (PyTorch refuses it too); hint: use DLPack "
                          f"(__dlpack__ exports bfloat16) or .astype(float32)")
    isz = x.dtype.itemsize
    return {
        "shape": x.shape,
        "typestr": x.dtype.numpy.str,
        "data": (x.data_ptr() if x.size else 0, False),
        "strides": None if x.is_contiguous() else tuple(s * isz for s in x.strides),
        "version": 3,
        "stream": _published_stream(x.device.index),
    }


@register("from_cuda_array_interface", "triton")
def from_cuda_array_interface(obj) -> Array:
    """A cuda Array over the memory an object publishes with ``__cuda_array_interface__``; keeps ``obj`` alive."""
    op = "asarray"
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise OpTypeError(f"{op}: {type(obj).__name__}.__cuda_array_interface__ must be a dict, got "
                          f"{type(cai).__name__}")
    try:
        shape, typestr, (ptr, _readonly) = tuple(cai["shape"]), cai["typestr"], cai["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise OpTypeError(f"{op}: malformed __cuda_array_interface__ of {type(obj).__name__} ({e!r}); it needs "
                          f"'shape', 'typestr' and 'data': (pointer, read_only)") from None
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise OpValueError(f"{op}: negative size in the __cuda_array_interface__ shape {shape}")
    if cai.get("mask") is not None:
        raise OpTypeError(f"{op}: masked arrays (a __cuda_array_interface__ 'mask') are not supported")
    try:
        npd = np.dtype(typestr)
    except TypeError:
        npd = None
    dtype = _dt._by_np.get(npd) if npd is not None and npd.isnative else None
    if dtype is None or dtype is _dt.bfloat16:
        raise OpTypeError(f"{op}: unsupported __cuda_array_interface__ typestr {typestr!r} of {type(obj).__name__}; "
                          f"supported: {_TYPESTRS}")
    isz = dtype.itemsize
    strides = cai.get("strides")
    if strides is not None:
        strides = tuple(operator.index(s) for s in strides)
        if len(strides) != len(shape) or any(s % isz for s in strides):
            raise OpValueError(f"{op}: __cuda_array_interface__ strides {strides} (bytes) do not fit shape {shape} "
                               f"with {isz}-byte elements ({typestr!r}): they must be multiples of the item size")
        strides = tuple(s // isz for s in strides)
    index = _cuda.current_device()
    stream = cai.get("stream")
    if stream is not None:
        producer = _stream_arg(op, stream, allow_no_sync=False)
        _wait(_cuda.current_stream(index).handle, producer, index)
    return _wrap_external(int(ptr or 0), shape, strides, dtype, Device("cuda", index), obj)
