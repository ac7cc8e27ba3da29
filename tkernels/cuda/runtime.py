"""The device layer under ``tkernels.cuda``: two runtimes behind one small interface.

- ``DriverRuntime`` talks to the CUDA driver through ``cuda-python`` (``cuda.bindings.driver``): primary
  contexts made current per thread, streams, events, copies, memsets, and the ``CudaBackend`` of the allocator.
- ``HostRuntime`` serves interpreted cuda (``TKERNELS_INTERPRET=1``): device memory is host memory from the
  allocator's ``HostBackend``, work runs synchronously on the host (Triton's interpreter), so streams are
  ids whose work is always complete, and events carry host timestamps.

Discovery never crashes: a missing driver library (cuda-python raises rather than returning an error code)
or a driver without devices gives ``device_count() == 0`` and ``unavailable_reason`` says why. When the machine
has an NVIDIA GPU (device nodes, ``nvidia-smi``) that the driver layer cannot use (cuda-python missing or
too old, a broken driver), a ``RuntimeWarning`` says so once, as PyTorch warns: cuda code would otherwise fall
back to the cpu without a word.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import itertools
import os
import shutil
import struct
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass

from .raw_backends import BINDINGS_REQUIREMENT, CudaBackend, import_driver_bindings  # noqa: F401

__all__ = ["DeviceProperties", "get_runtime", "CudaError", "import_driver_bindings", "nvidia_gpu_present"]

def nvidia_gpu_present(dev_dir: str | None = None) -> str | None:
    """Evidence that this machine has an NVIDIA GPU, whether or not its driver is usable: the device nodes
    (``/dev/nvidia0``...; ``TKERNELS_NVIDIA_DEV_DIR`` stands for ``/dev`` in tests) or ``nvidia-smi -L``; None when
    there is none."""
    root = dev_dir or os.environ.get("TKERNELS_NVIDIA_DEV_DIR") or "/dev"
    nodes = sorted(p for p in glob.glob(os.path.join(root, "nvidia[0-9]*")) if os.path.basename(p)[6:].isdigit())
    if nodes:
        return f"device node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}"
    if dev_dir is None and not os.environ.get("TKERNELS_NVIDIA_DEV_DIR") and shutil.which("nvidia-smi"):
        try:
            r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            return None
        gpus = [line for line in r.stdout.splitlines() if line.startswith("GPU ")]
        if gpus:
            return f"nvidia-smi -L: {gpus[0].strip()}" + (f" (+{len(gpus) - 1} more)" if len(gpus) > 1 else "")
    return None


_HOST_IPC_MAGIC = b"tkhostip"


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int

    def __repr__(self) -> str:
        return (f"DeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count})")


class HostRuntime:
    """Interpreted cuda: one device, host memory, synchronous execution."""

    interpreted = True
    unavailable_reason = None

    def __init__(self):
        self._ids = itertools.count(1)
        self._backends = {}
        self._ipc_lock = threading.Lock()
        self._ipc_opened = {}  # handle -> [mmap, address, opens]
        self._ipc_by_ptr = {}  # address -> handle

    def device_count(self) -> int:
        return 1

    def properties(self, index: int) -> DeviceProperties:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return DeviceProperties("Triton interpreter (host memory)", 9, 0, total, os.cpu_count() or 1)

    def make_current(self, index: int) -> None:
        pass

    def raw_backend(self, index: int):
        from .raw_backends import HostBackend

        backend = self._backends[index] = HostBackend(shareable=True)  # shareable: CUDA IPC works across processes
        return backend

    # CUDA IPC over host memory: a handle names the exporting process and its segment's memfd; another process maps
    # it through /proc/<pid>/fd/<fd>. As with the driver, a handle opened twice gives the same pointer (counted).
    def ipc_get_mem_handle(self, index: int, ptr: int) -> bytes:
        fd, size = self._backends[index].ipc_export(ptr)
        return struct.pack("<8sqqq", _HOST_IPC_MAGIC, os.getpid(), fd, size).ljust(64, b"\0")

    def ipc_open_mem_handle(self, index: int, handle: bytes) -> int:
        import mmap

        magic, pid, fd, size = struct.unpack_from("<8sqqq", handle)
        if magic != _HOST_IPC_MAGIC:
            raise CudaError("cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_HANDLE (not an interpreted-cuda handle)")
        if pid == os.getpid():
            raise CudaError("cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_CONTEXT (a handle cannot be opened in the "
                            "process that exported it)")
        with self._ipc_lock:
            entry = self._ipc_opened.get(handle)
            if entry is None:
                try:
                    f = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR)
                except OSError as e:
                    raise CudaError(f"cuIpcOpenMemHandle failed: CUDA_ERROR_MAP_FAILED (the exporting process {pid} "
                                    f"is gone or its memory cannot be opened: {e})") from None
                try:
                    mm = mmap.mmap(f, size)
                finally:
                    os.close(f)
                c = ctypes.c_char.from_buffer(mm)
                entry = self._ipc_opened[handle] = [mm, ctypes.addressof(c), 0]
                del c
                self._ipc_by_ptr[entry[1]] = handle
            entry[2] += 1
            return entry[1]

    def ipc_close_mem_handle(self, index: int, ptr: int) -> None:
        with self._ipc_lock:
            handle = self._ipc_by_ptr.get(ptr)
            if handle is None:
                raise CudaError(f"cuIpcCloseMemHandle failed: CUDA_ERROR_INVALID_VALUE (0x{ptr:x} was not opened "
                                f"from an IPC handle)")
            entry = self._ipc_opened[handle]
            entry[2] -= 1
            if entry[2] == 0:
                del self._ipc_opened[handle], self._ipc_by_ptr[ptr]
                entry[0].close()

    # streams and events: the host executes each launch to completion before returning
    def stream_create(self, index: int, priority: int = 0) -> int:
        return next(self._ids)

    def stream_destroy(self, index: int, handle: int) -> None:
        pass

    def stream_query(self, index: int, handle: int) -> bool:
        return True

    def stream_synchronize(self, index: int, handle: int) -> None:
        pass

    def stream_wait_event(self, index: int, stream: int, event) -> None:
        pass

    def event_create(self, index: int, enable_timing: bool = False):
        return [None]  # [host timestamp]

    def event_destroy(self, index: int, event) -> None:
        pass

    def event_record(self, index: int, event, stream: int) -> None:
        event[0] = time.perf_counter()

    def event_query(self, index: int, event) -> bool:
        return True

    def event_synchronize(self, index: int, event) -> None:
        pass

    def event_elapsed_ms(self, index: int, start, end) -> float:
        if start[0] is None or end[0] is None:
            raise RuntimeError("Event.elapsed_time: both events must have been recorded")
        return (end[0] - start[0]) * 1e3

    def synchronize(self, index: int) -> None:
        pass

    # copies: plain host memory moves
    def memcpy_htod(self, index: int, dst: int, src_ptr: int, nbytes: int, stream: int, non_blocking: bool) -> None:
        ctypes.memmove(dst, src_ptr, nbytes)

    def memcpy_dtoh(self, index: int, dst_ptr: int, src: int, nbytes: int, stream: int, non_blocking: bool) -> None:
        ctypes.memmove(dst_ptr, src, nbytes)

    def memcpy_dtod(self, index: int, dst: int, src: int, nbytes: int, stream: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def memset_d8(self, index: int, dst: int, value: int, nbytes: int, stream: int) -> None:
        ctypes.memset(dst, value, nbytes)

    def host_alloc_pinned(self, index: int, nbytes: int):
        return None  # host memory is already "pinned" for the interpreter


class DriverRuntime:
    """The real CUDA driver through cuda-python."""

    interpreted = False

    def __init__(self):
        self.unavailable_reason = None
        self._count = 0
        self._cu = None
        self._ctx = {}
        self._props = {}
        self._lock = threading.Lock()
        self._tls = threading.local()  # .index: the device whose context make_current made current here
        try:
            cu = import_driver_bindings()
            err, = cu.cuInit(0)
            if err != cu.CUresult.CUDA_SUCCESS:
                self.unavailable_reason = f"cuInit failed: {err!r}"
                return
            err, n = cu.cuDeviceGetCount()
            if err != cu.CUresult.CUDA_SUCCESS:
                self.unavailable_reason = f"cuDeviceGetCount failed: {err!r}"
                return
            self._cu = cu
            self._count = int(n)
            if not n:
                self.unavailable_reason = "the CUDA driver reports no devices"
        except Exception as e:  # noqa: BLE001 - no cuda-python, no libcuda: report, never crash
            self.unavailable_reason = f"{type(e).__name__}: {e}"
        if self._count == 0:
            evidence = nvidia_gpu_present()
            if evidence is not None:
                warnings.warn(f"tkernels.cuda: this machine has an NVIDIA GPU ({evidence}) but tkernels cannot use "
                              f"it: {self.unavailable_reason}; cuda is unavailable and work stays on the cpu",
                              RuntimeWarning, stacklevel=2)

    def _check(self, res, what: str):
        cu = self._cu
        err, *vals = res
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            _, desc = cu.cuGetErrorString(err)
            name = name.decode() if isinstance(name, bytes) else name
            desc = desc.decode() if isinstance(desc, bytes) else desc
            raise CudaError(f"{what} failed: {name} ({desc})")
        return vals[0] if len(vals) == 1 else (tuple(vals) if vals else None)

    def device_count(self) -> int:
        return self._count

    def properties(self, index: int) -> DeviceProperties:
        props = self._props.get(index)
        if props is None:
            props = self._props[index] = self._query_properties(index)
        return props

    def _query_properties(self, index: int) -> DeviceProperties:
        cu = self._cu
        dev = self._check(cu.cuDeviceGet(index), "cuDeviceGet")
        name = self._check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
        attr = cu.CUdevice_attribute
        get = lambda a: int(self._check(cu.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))  # noqa: E731
        total = int(self._check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem"))
        return DeviceProperties(name, get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), total,
                                get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))

    def _primary_context(self, index: int):
        """The primary context of device ``index``, retained once."""
        ctx = self._ctx.get(index)
        if ctx is None:
            with self._lock:
                ctx = self._ctx.get(index)
                if ctx is None:
                    dev = self._check(self._cu.cuDeviceGet(index), "cuDeviceGet")
                    ctx = self._ctx[index] = self._check(self._cu.cuDevicePrimaryCtxRetain(dev),
                                                         "cuDevicePrimaryCtxRetain")
        return ctx

    def make_current(self, index: int) -> None:
        """Retain the primary context of ``index`` once and make it current on the calling thread."""
        self._check(self._cu.cuCtxSetCurrent(self._primary_context(index)), "cuCtxSetCurrent")
        self._tls.index = index

    @contextlib.contextmanager
    def context(self, index: int):
        """Device ``index``'s context current on this thread inside the block; the thread's own afterwards.

        Every driver call below that needs a context runs inside one: a stream or event may be used, and an
        object's finalizer may run, on a thread that never touched cuda (the driver refuses the call there:
        CUDA_ERROR_INVALID_CONTEXT) or whose current device is another one. Free when it is current already.
        """
        if getattr(self._tls, "index", None) == index:
            yield
            return
        self._check(self._cu.cuCtxPushCurrent(self._primary_context(index)), "cuCtxPushCurrent")
        try:
            yield
        finally:
            self._check(self._cu.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def raw_backend(self, index: int):
        """The allocator's driver backend; its calls run in device ``index``'s context whatever the thread's."""
        return _ContextCudaBackend(self, index)

    def _call(self, index: int, what: str, fn, *args):
        """``fn(*args)`` (a driver call) in device ``index``'s context, its result checked. The common case, the
        context current already, skips the context manager (copies and event records are per-step calls)."""
        if getattr(self._tls, "index", None) == index:
            return self._check(fn(*args), what)
        with self.context(index):
            return self._check(fn(*args), what)

    def _ready(self, index: int, what: str, fn, handle) -> bool:
        """A query (``cuStreamQuery``/``cuEventQuery``): True when done, False on CUDA_ERROR_NOT_READY."""
        cu = self._cu
        if getattr(self._tls, "index", None) == index:
            err, = fn(handle)
        else:
            with self.context(index):
                err, = fn(handle)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._check((err,), what)
        return True

    def stream_create(self, index: int, priority: int = 0) -> int:
        cu = self._cu
        return int(self._call(index, "cuStreamCreateWithPriority", cu.cuStreamCreateWithPriority,
                              cu.CUstream_flags.CU_STREAM_NON_BLOCKING, priority))

    def stream_destroy(self, index: int, handle: int) -> None:
        self._call(index, "cuStreamDestroy", self._cu.cuStreamDestroy, handle)

    def stream_query(self, index: int, handle: int) -> bool:
        return self._ready(index, "cuStreamQuery", self._cu.cuStreamQuery, handle)

    def stream_synchronize(self, index: int, handle: int) -> None:
        self._call(index, "cuStreamSynchronize", self._cu.cuStreamSynchronize, handle)

    def stream_wait_event(self, index: int, stream: int, event) -> None:
        self._call(index, "cuStreamWaitEvent", self._cu.cuStreamWaitEvent, stream, event, 0)

    def event_create(self, index: int, enable_timing: bool = False):
        cu = self._cu
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT if enable_timing else cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        return self._call(index, "cuEventCreate", cu.cuEventCreate, flags)

    def event_destroy(self, index: int, event) -> None:
        self._call(index, "cuEventDestroy", self._cu.cuEventDestroy, event)

    def event_record(self, index: int, event, stream: int) -> None:
        self._call(index, "cuEventRecord", self._cu.cuEventRecord, event, stream)

    def event_query(self, index: int, event) -> bool:
        return self._ready(index, "cuEventQuery", self._cu.cuEventQuery, event)

    def event_synchronize(self, index: int, event) -> None:
        self._call(index, "cuEventSynchronize", self._cu.cuEventSynchronize, event)

    def event_elapsed_ms(self, index: int, start, end) -> float:
        return float(self._call(index, "cuEventElapsedTime", self._cu.cuEventElapsedTime, start, end))

    def synchronize(self, index: int) -> None:
        # in a pushed context, not make_current: the thread's current device stays what tkernels.cuda thinks
        self._call(index, "cuCtxSynchronize", self._cu.cuCtxSynchronize)

    def memcpy_htod(self, index: int, dst: int, src_ptr: int, nbytes: int, stream: int, non_blocking: bool) -> None:
        self._call(index, "cuMemcpyHtoDAsync", self._cu.cuMemcpyHtoDAsync, dst, src_ptr, nbytes, stream)
        if not non_blocking:
            self.stream_synchronize(index, stream)

    def memcpy_dtoh(self, index: int, dst_ptr: int, src: int, nbytes: int, stream: int, non_blocking: bool) -> None:
        self._call(index, "cuMemcpyDtoHAsync", self._cu.cuMemcpyDtoHAsync, dst_ptr, src, nbytes, stream)
        if not non_blocking:
            self.stream_synchronize(index, stream)

    def memcpy_dtod(self, index: int, dst: int, src: int, nbytes: int, stream: int) -> None:
        self._call(index, "cuMemcpyDtoDAsync", self._cu.cuMemcpyDtoDAsync, dst, src, nbytes, stream)

    def memset_d8(self, index: int, dst: int, value: int, nbytes: int, stream: int) -> None:
        self._call(index, "cuMemsetD8Async", self._cu.cuMemsetD8Async, dst, value, nbytes, stream)

    def host_alloc_pinned(self, index: int, nbytes: int):
        """Page-locked host memory (an address) for fast asynchronous copies."""
        return int(self._call(index, "cuMemHostAlloc", self._cu.cuMemHostAlloc, max(nbytes, 1), 0))

    def host_free_pinned(self, index: int, ptr: int) -> None:
        self._call(index, "cuMemFreeHost", self._cu.cuMemFreeHost, ptr)

    # CUDA IPC: a handle (64 opaque bytes) names a cuMemAlloc allocation; the driver counts the opens of a handle
    # in one context and returns the same pointer, so each open is paired with one close.
    def ipc_get_mem_handle(self, index: int, ptr: int) -> bytes:
        handle = self._call(index, "cuIpcGetMemHandle", self._cu.cuIpcGetMemHandle, ptr)
        return ctypes.string_at(handle.getPtr(), 64)

    def ipc_open_mem_handle(self, index: int, handle: bytes) -> int:
        cu = self._cu
        h = cu.CUipcMemHandle()
        ctypes.memmove(h.getPtr(), bytes(handle), 64)
        flags = cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        return int(self._call(index, "cuIpcOpenMemHandle", cu.cuIpcOpenMemHandle, h, flags))

    def ipc_close_mem_handle(self, index: int, ptr: int) -> None:
        self._call(index, "cuIpcCloseMemHandle", self._cu.cuIpcCloseMemHandle, ptr)

    # CUDA graphs (tkernels/graphs.py): a segment of recorded launches is stream-captured once, instantiated, and
    # every later replay of it is one cuGraphLaunch. Relaxed capture mode: the allocator may cuMemAlloc a new
    # segment while a capture runs (the block then belongs to the graph's private stream), which global mode forbids.
    def stream_begin_capture(self, index: int, stream: int) -> None:
        cu = self._cu
        self._call(index, "cuStreamBeginCapture", cu.cuStreamBeginCapture, stream,
                   cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)

    def stream_end_capture(self, index: int, stream: int):
        return self._call(index, "cuStreamEndCapture", self._cu.cuStreamEndCapture, stream)

    def stream_is_capturing(self, index: int, stream: int) -> bool:
        status = self._call(index, "cuStreamIsCapturing", self._cu.cuStreamIsCapturing, stream)
        return int(status) != 0

    def graph_instantiate(self, index: int, graph):
        return self._call(index, "cuGraphInstantiate", self._cu.cuGraphInstantiate, graph, 0)

    def graph_launch(self, index: int, graph_exec, stream: int) -> None:
        self._call(index, "cuGraphLaunch", self._cu.cuGraphLaunch, graph_exec, stream)

    def graph_destroy(self, index: int, graph) -> None:
        self._call(index, "cuGraphDestroy", self._cu.cuGraphDestroy, graph)

    def graph_exec_destroy(self, index: int, graph_exec) -> None:
        self._call(index, "cuGraphExecDestroy", self._cu.cuGraphExecDestroy, graph_exec)


class _ContextCudaBackend(CudaBackend):
    """``CudaBackend`` whose driver calls run in its device's context (pushed, then popped, when another or none
    is current).

    A raw ``cuMemAlloc`` may come from any thread: the first array made on a new thread (no current context:
    the driver refuses), or an array on a device other than the thread's current one (it would land there);
    a block's last reference, and with it the free and the events of ``record_stream``, may die on any thread.
    Only raw calls pay for it (cache misses, not hits).
    """

    def __init__(self, runtime: DriverRuntime, device_index: int):
        super().__init__(device_index)
        self._runtime = runtime

    def malloc(self, nbytes: int) -> int:
        with self._runtime.context(self.device_index):
            return super().malloc(nbytes)

    def free(self, ptr: int) -> None:
        with self._runtime.context(self.device_index):
            super().free(ptr)

    def mem_get_info(self) -> tuple[int, int]:
        with self._runtime.context(self.device_index):
            return super().mem_get_info()

    def create_event(self):
        with self._runtime.context(self.device_index):
            return super().create_event()

    def record_event(self, event, stream) -> None:
        with self._runtime.context(self.device_index):
            super().record_event(event, stream)

    def event_query(self, event) -> bool:
        with self._runtime.context(self.device_index):
            return super().event_query(event)

    def destroy_event(self, event) -> None:
        with self._runtime.context(self.device_index):
            super().destroy_event(event)


_runtime = None
_runtime_lock = threading.Lock()


def get_runtime():
    """The process's runtime: interpreted when ``TKERNELS_INTERPRET=1`` was set at import, else the driver."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = HostRuntime() if os.environ.get("TKERNELS_INTERPRET") == "1" else DriverRuntime()
    return _runtime
