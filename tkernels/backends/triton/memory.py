"""Memory, fills, copies and host<->device transfers on cuda."""

from __future__ import annotations

import sys

import numpy as np

from ... import cuda as _cuda
from ... import dtypes as _dt
from ...array import Array, Storage, _contiguous_strides
from ...device import CPU
from ...dispatch import register
from ...kernels.copy import copy_kernel, fill_kernel
from ._launch import ELEMENTWISE_BLOCK, collapse, f64_bits, grid1d, launch


class DeviceStorage(Storage):
    """Storage owning an allocator block; the block returns to the pool when the last view dies."""

    __slots__ = ("block", "_allocator", "keepalive")

    def __init__(self, block, allocator, device):
        super().__init__(block, block.size, device)
        self.block = block
        self._allocator = allocator
        self.keepalive = None  # e.g. the pinned host source of a non_blocking copy still in flight

    def __del__(self):
        try:
            self._allocator.free(self.block)
        except Exception:  # noqa: BLE001 - interpreter shutdown: the process frees everything anyway
            pass


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@register("empty", "triton")
def empty(shape, dtype, device) -> Array:
    idx = device.index
    _cuda._activate(idx)  # cuMemAlloc needs the device's context current on this thread
    alloc = _cuda.caching_allocator(idx)
    block = alloc.malloc(_size(shape) * dtype.itemsize, _cuda.current_stream(idx).handle)
    return Array(DeviceStorage(block, alloc, device), shape, _contiguous_strides(shape), 0, dtype, device)


@register("fill", "triton")
def fill(out: Array, value) -> None:
    n = out.size
    if n == 0:
        return
    d = out.dtype
    if d.kind == "c":  # the two parts of the real pair view (complex.py)
        from .complex import fill_complex

        fill_complex(out, value)
        return
    value = _dt.literal_scalar(value, d, "fill")  # exact in the argument: float64 as its bits, others as fp32
    bits = d is _dt.float64
    if bits:
        value = f64_bits(value)
    elif d.kind == "b":
        value = int(value)
    contiguous = out.is_contiguous()
    sizes, (st,) = collapse(out.shape, out.stride())
    launch(fill_kernel, grid1d(n, ELEMENTWISE_BLOCK), out, value, n, *sizes[1:], *st,
           CONTIGUOUS=contiguous, TO_BOOL=d is _dt.bool, F64_BITS=bits, BLOCK=ELEMENTWISE_BLOCK)


@register("copy_", "triton")
def copy_(out: Array, x: Array) -> None:
    """Strided copy with dtype conversion; ``x`` is already broadcast to ``out``'s shape."""
    n = out.size
    if n == 0:
        return
    if x.device != out.device:
        raise RuntimeError(f"copy_: source on {x.device}, target on {out.device}; move it with .to() first")
    if out._dtype.kind == "c" or x._dtype.kind == "c":  # through the real pair views (complex.py)
        from .complex import copy_complex

        copy_complex(out, x)
        return
    xc, yc = x.is_contiguous(), out.is_contiguous()
    try:
        sizes, (xs, ys) = collapse(out.shape, x.stride(), out.stride())
    except ValueError:  # more strided dimensions than the kernel indexes (tile's 2n-d view): one copy per row
        d = next(i for i, s in enumerate(out.shape) if s != 1)
        shape, xst, yst = out.shape[:d] + out.shape[d + 1:], x.stride(), out.stride()
        for i in range(out.shape[d]):
            copy_(out._view(shape, yst[:d] + yst[d + 1:], out._offset + i * yst[d]),
                  x._view(shape, xst[:d] + xst[d + 1:], x._offset + i * xst[d]))
        return
    launch(copy_kernel, grid1d(n, ELEMENTWISE_BLOCK), x, out, n, *sizes[1:], *xs, *ys,
           X_CONTIGUOUS=xc, Y_CONTIGUOUS=yc, TO_BOOL=out.dtype is _dt.bool and x.dtype is not _dt.bool,
           BLOCK=ELEMENTWISE_BLOCK)


def _host_contiguous(x: Array) -> np.ndarray:
    nd = x.numpy()
    return nd if nd.flags.c_contiguous else np.ascontiguousarray(nd)


@register("to_device", "triton")
def to_device(x: Array, device, *, non_blocking: bool = False) -> Array:
    """Host → device (or device → device) copy of ``x``, ordered on the current stream."""
    rt = _cuda.get_runtime()
    if x.device.type == "cpu":
        src = _host_contiguous(x)
        out = empty(x.shape, x.dtype, device)
        if src.nbytes:
            rt.memcpy_htod(device.index, out.data_ptr(), src.ctypes.data, src.nbytes,
                           _cuda.current_stream(device.index).handle, non_blocking)
        if non_blocking and not rt.interpreted:
            out._storage.keepalive = (x._storage, src)  # the host buffer must outlive the queued copy
        return out
    src = x if x.is_contiguous() else x.contiguous()
    out = empty(x.shape, x.dtype, device)
    if src.nbytes:
        rt.memcpy_dtod(device.index, out.data_ptr(), src.data_ptr(), src.nbytes,
                       _cuda.current_stream(device.index).handle)
    return out


@register("to_numpy", "triton")
def to_numpy(x: Array) -> np.ndarray:
    """Device → host copy (synchronous on the current stream)."""
    src = x if x.is_contiguous() else x.contiguous()
    out = np.empty(x.shape, x.dtype.numpy)
    if out.nbytes:
        _cuda.get_runtime().memcpy_dtoh(x.device.index, out.ctypes.data, src.data_ptr(), out.nbytes,
                                        _cuda.current_stream(x.device.index).handle, False)
    _cuda.device_errors.check(x.device.index)  # synchronised: an error a kernel recorded raises here
    return out


class PinnedStorage(Storage):
    """Page-locked host memory holding a cpu Array (fast, asynchronous host<->device copies)."""

    __slots__ = ("pinned", "_ptr", "_index")

    def __init__(self, nd, ptr, index: int):
        super().__init__(nd, nd.nbytes, CPU)
        self.pinned = True
        self._ptr = ptr
        self._index = index  # the device whose context allocated it (and must be current to free it)

    def __del__(self):
        if self._ptr is not None:
            try:
                _cuda.get_runtime().host_free_pinned(self._index, self._ptr)
            except Exception:  # noqa: BLE001 - interpreter shutdown (a finalizer must not raise)
                pass


@register("pin_memory", "triton")
def pin_memory(x: Array) -> Array:
    """A copy of cpu array ``x`` in page-locked memory (plain host memory when interpreted)."""
    import ctypes

    rt = _cuda.get_runtime()
    nbytes = x.nbytes
    index = _cuda.current_device()
    if rt.interpreted:
        nd, ptr = np.empty(x.shape, x.dtype.numpy), None
    else:
        ptr = rt.host_alloc_pinned(index, nbytes)
        buf = (ctypes.c_uint8 * max(nbytes, 1)).from_address(ptr)
        nd = np.frombuffer(buf, dtype=np.uint8, count=nbytes).view(x.dtype.numpy).reshape(x.shape)
    np.copyto(nd, x.numpy())
    storage = PinnedStorage(nd, ptr, index)
    return Array(storage, x.shape, _contiguous_strides(x.shape), 0, x.dtype, storage.device, nd)


def register_shared_storage_types() -> None:
    """Let multiprocessing share these storages (CUDA IPC; pinned: cpu shared memory): tkernels/shared_memory.py."""
    shared = sys.modules["tkernels.shared_memory"]
    shared.register_storage_type(DeviceStorage)
    shared.register_storage_type(PinnedStorage)


if "tkernels.shared_memory" in sys.modules:  # imported first: it could not register the classes defined here
    register_shared_storage_types()
