"""Raw memory backends for the caching allocator: where its segments come from.

One interface (``RawBackend``), three implementations:

- ``CudaBackend``: device memory from the CUDA driver (``cuMemAlloc``/``cuMemFree``, events) through
  ``cuda-python``, imported lazily so this module imports on machines without it or without a driver;
- ``HostBackend``: real host memory (NumPy byte buffers), for the interpreted-cuda mode; events complete
  at once;
- ``FakeBackend``: no memory at all, fake increasing pointers out of a configurable capacity, and events
  that complete only when the test says so; it records every raw allocation, so a test can assert no
  leak and no double free (CuPy tests its pool the same way, on a mock allocator).

Like ``allocator.py``, this module imports nothing from tkernels.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import os
import weakref
from typing import Protocol, runtime_checkable

__all__ = ["RawOutOfMemory", "RawBackendError", "RawBackend", "FakeBackend", "HostBackend", "CudaBackend"]


class RawOutOfMemory(MemoryError):
    """The backend has no memory for this raw allocation (the allocator then frees its cache and retries)."""


class RawBackendError(RuntimeError):
    """A raw backend call failed for another reason than lack of memory (bad pointer, driver error)."""


@runtime_checkable
class RawBackend(Protocol):
    """What the caching allocator needs from a source of memory. Streams and events are opaque."""

    def malloc(self, nbytes: int) -> int:
        """A pointer to ``nbytes`` (> 0) fresh bytes; raises ``RawOutOfMemory`` when there are none."""

    def free(self, ptr: int) -> None:
        """Give back memory from ``malloc``."""

    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of the device."""

    def create_event(self): ...

    def record_event(self, event, stream) -> None:
        """Capture in ``event`` the work queued on ``stream`` so far."""

    def event_query(self, event) -> bool:
        """Whether the work captured by ``event`` has completed."""

    def destroy_event(self, event) -> None: ...


class FakeBackend:
    """Fake memory for allocator tests: pointers only, from ``capacity`` bytes; events the test completes.

    Pointers come from one increasing counter starting at ``base``, aligned to ``alignment``, so segments
    sit next to each other in the fake address space (an allocator that mixed them up would show it).
    ``live`` maps each live pointer to its size; ``free`` of an unknown pointer raises. An event recorded
    on a stream stays incomplete until ``complete_stream(stream)`` or ``complete_all()``; an event never
    recorded counts as complete, as in CUDA.
    """

    def __init__(self, capacity: int = 1 << 30, *, alignment: int = 512, base: int = 0x7F00_0000_0000):
        self.capacity = capacity
        self.alignment = alignment
        self.used = 0
        self.live: dict[int, int] = {}
        self.num_mallocs = 0
        self.num_frees = 0
        self.num_failed_mallocs = 0
        self._next_ptr = base
        self._event_ids = itertools.count(1)
        self._events: dict[int, tuple | None] = {}  # id -> None (not recorded) or (stream, seq)
        self._seq = 0
        self._completed: dict[object, int] = {}  # stream -> last completed seq

    def malloc(self, nbytes: int) -> int:
        if nbytes <= 0:
            raise RawBackendError(f"FakeBackend.malloc: nbytes must be > 0, got {nbytes}")
        if self.used + nbytes > self.capacity:
            self.num_failed_mallocs += 1
            raise RawOutOfMemory(f"FakeBackend: cannot allocate {nbytes} bytes, {self.used} of "
                                 f"{self.capacity} in use")
        ptr = self._next_ptr
        self._next_ptr += -(-nbytes // self.alignment) * self.alignment
        self.live[ptr] = nbytes
        self.used += nbytes
        self.num_mallocs += 1
        return ptr

    def free(self, ptr: int) -> None:
        nbytes = self.live.pop(ptr, None)
        if nbytes is None:
            raise RawBackendError(f"FakeBackend.free: 0x{ptr:x} is not a live allocation (double free?)")
        self.used -= nbytes
        self.num_frees += 1

    def mem_get_info(self) -> tuple[int, int]:
        return self.capacity - self.used, self.capacity

    def create_event(self) -> int:
        event = next(self._event_ids)
        self._events[event] = None
        return event

    def record_event(self, event: int, stream) -> None:
        self._check_event(event)
        self._seq += 1
        self._events[event] = (stream, self._seq)

    def event_query(self, event: int) -> bool:
        self._check_event(event)
        rec = self._events[event]
        return rec is None or self._completed.get(rec[0], 0) >= rec[1]

    def destroy_event(self, event: int) -> None:
        self._check_event(event)
        del self._events[event]

    def _check_event(self, event):
        if event not in self._events:
            raise RawBackendError(f"FakeBackend: unknown or destroyed event {event!r}")

    # --- test controls

    def complete_stream(self, stream) -> None:
        """All work queued on ``stream`` so far is done: events recorded on it until now complete."""
        self._completed[stream] = self._seq

    def complete_all(self) -> None:
        """All work on every stream is done."""
        for rec in self._events.values():
            if rec is not None:
                self._completed[rec[0]] = self._seq

    @property
    def num_live_events(self) -> int:
        return len(self._events)


class HostBackend:
    """Host memory for interpreted cuda: NumPy byte buffers, kept alive in a dict by address.

    Pointers are aligned to ``alignment`` bytes (default 512, what the allocator rounds to). Events
    complete at once: host "kernels" run synchronously. ``capacity`` (optional) caps the bytes handed
    out, and is then the total that ``mem_get_info`` reports; otherwise it reports the machine's RAM.
    ``shareable=True`` (Linux): each segment is a ``memfd`` mapping that another process can map too, which is
    how interpreted cuda gives CUDA IPC real cross-process memory (``ipc_export``; ``HostRuntime.ipc_*``).
    """

    def __init__(self, capacity: int | None = None, *, alignment: int = 512, shareable: bool = False):
        self.capacity = capacity
        self.alignment = alignment
        self.shareable = shareable and hasattr(os, "memfd_create") and alignment <= 4096
        self.used = 0
        self._buffers: dict[int, tuple] = {}  # ptr -> (numpy buffer or mmap, nbytes, memfd or None)

    def malloc(self, nbytes: int) -> int:
        import numpy as np

        if nbytes <= 0:
            raise RawBackendError(f"HostBackend.malloc: nbytes must be > 0, got {nbytes}")
        if self.capacity is not None and self.used + nbytes > self.capacity:
            raise RawOutOfMemory(f"HostBackend: cannot allocate {nbytes} bytes, {self.used} of "
                                 f"{self.capacity} in use")
        if self.shareable:
            return self._malloc_shareable(nbytes)
        try:
            buf = np.empty(nbytes + self.alignment, dtype=np.uint8)
        except MemoryError as e:
            raise RawOutOfMemory(f"HostBackend: cannot allocate {nbytes} bytes of host memory") from e
        addr = buf.ctypes.data
        ptr = addr + (-addr) % self.alignment
        self._buffers[ptr] = (buf, nbytes, None)
        self.used += nbytes
        return ptr

    def _malloc_shareable(self, nbytes: int) -> int:
        import ctypes
        import mmap

        fd = os.memfd_create("tkernels_cuda_segment", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, nbytes)
            mm = mmap.mmap(fd, nbytes)  # page-aligned: every alignment up to 4096
        except OSError as e:
            os.close(fd)
            raise RawOutOfMemory(f"HostBackend: cannot map {nbytes} bytes of shared host memory ({e})") from e
        c = ctypes.c_char.from_buffer(mm)
        ptr = ctypes.addressof(c)
        del c  # the address stays valid while mm is open; a live export would forbid closing it
        self._buffers[ptr] = (mm, nbytes, fd)
        self.used += nbytes
        _shareable_backends.add(self)
        return ptr

    def _privatize(self) -> None:
        """In a forked child: give each inherited segment memory of its own (same address, same bytes). A memfd
        mapping is shared across fork, and this process's allocator would hand out blocks the parent uses."""
        for ptr, (mm, nbytes, fd) in list(self._buffers.items()):
            if fd is None:
                continue
            new = os.memfd_create("tkernels_cuda_segment", os.MFD_CLOEXEC)
            os.ftruncate(new, nbytes)
            os.pwrite(new, mm[:], 0)  # the bytes as they are now (the parent may change its copy from here on)
            if _libc_mmap(ptr, nbytes, new) != ptr:
                os.close(new)
                raise RawBackendError(f"HostBackend: remapping the segment 0x{ptr:x} after fork failed")
            os.close(fd)  # mm still spans the address: its close() unmaps the new mapping when the segment is freed
            self._buffers[ptr] = (mm, nbytes, new)

    def ipc_export(self, ptr: int) -> tuple[int, int]:
        """``(memfd, size)`` of the shareable segment at ``ptr``, for an IPC handle."""
        entry = self._buffers.get(ptr)
        if entry is None or entry[2] is None:
            raise RawBackendError(f"HostBackend.ipc_export: 0x{ptr:x} is not the base of a shareable segment")
        return entry[2], entry[1]

    def free(self, ptr: int) -> None:
        entry = self._buffers.pop(ptr, None)
        if entry is None:
            raise RawBackendError(f"HostBackend.free: 0x{ptr:x} is not a live allocation (double free?)")
        self.used -= entry[1]
        if entry[2] is not None:
            entry[0].close()
            os.close(entry[2])

    def mem_get_info(self) -> tuple[int, int]:
        if self.capacity is not None:
            return self.capacity - self.used, self.capacity
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
        except (ValueError, OSError, AttributeError):  # not POSIX: report only what we hold
            return 0, self.used

    def create_event(self):
        return None

    def record_event(self, event, stream) -> None:
        pass

    def event_query(self, event) -> bool:
        return True

    def destroy_event(self, event) -> None:
        pass

    @property
    def live(self) -> dict[int, int]:
        """Live pointer -> size."""
        return {ptr: n for ptr, (_, n, _) in self._buffers.items()}


_shareable_backends: weakref.WeakSet = weakref.WeakSet()


def _libc_mmap(addr: int, nbytes: int, fd: int) -> int:
    """``mmap(addr, nbytes, RW, MAP_SHARED | MAP_FIXED, fd, 0)`` (Python's mmap cannot map at a fixed address)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    map_fixed = 0x10  # Linux, every architecture we run on
    return libc.mmap(addr, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | map_fixed, fd, 0) or 0


def _after_fork_in_child() -> None:
    for backend in list(_shareable_backends):
        backend._privatize()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# cuda-python's driver bindings moved to ``cuda.bindings`` in 12.6.2 (12.6.0 has only ``cuda.cuda``); from 12.8
# ``cuda-python`` is a metapackage over ``cuda-bindings``, which is what we depend on
BINDINGS_REQUIREMENT = "cuda-bindings>=12.8"


def import_driver_bindings():
    """``cuda.bindings.driver``, or an ImportError naming the installed package, its version and the fix."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        versions = []
        for name in ("cuda-python", "cuda-bindings"):
            try:
                versions.append(f"{name} {importlib.metadata.version(name)}")
            except importlib.metadata.PackageNotFoundError:
                pass
        have = ", ".join(versions) if versions else "neither cuda-python nor cuda-bindings"
        raise ImportError(f"tkernels.cuda needs the CUDA driver bindings cuda.bindings.driver "
                          f"({BINDINGS_REQUIREMENT}); installed: {have} ({type(e).__name__}: {e}); hint: pip "
                          f"install '{BINDINGS_REQUIREMENT}' (a cuda-bindings major version the installed NVIDIA "
                          f"driver supports)") from e
    return driver


def _driver():
    try:
        return import_driver_bindings()
    except ImportError as e:
        raise RawBackendError(f"CudaBackend: {e}") from e


def _stream_handle(stream) -> int:
    """Our streams are ints (raw CUstream handles) or objects with a ``handle``; 0 is the legacy default."""
    return int(getattr(stream, "handle", stream))


class CudaBackend:
    """Device memory and events from the CUDA driver. The device's context must be current when called."""

    def __init__(self, device_index: int = 0):
        self.device_index = device_index

    def _check(self, err, what):
        cu = _driver()
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            _, text = cu.cuGetErrorString(err)
            name = name.decode() if isinstance(name, bytes) else name
            text = text.decode() if isinstance(text, bytes) else text
            raise RawBackendError(f"{what} failed on device {self.device_index}: {name}: {text}")

    def malloc(self, nbytes: int) -> int:
        cu = _driver()
        err, ptr = cu.cuMemAlloc(nbytes)
        if err == cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise RawOutOfMemory(f"cuMemAlloc({nbytes}) on device {self.device_index}: out of memory")
        self._check(err, f"cuMemAlloc({nbytes})")
        return int(ptr)

    def free(self, ptr: int) -> None:
        (err,) = _driver().cuMemFree(ptr)
        self._check(err, f"cuMemFree(0x{ptr:x})")

    def mem_get_info(self) -> tuple[int, int]:
        err, free, total = _driver().cuMemGetInfo()
        self._check(err, "cuMemGetInfo")
        return int(free), int(total)

    def create_event(self):
        cu = _driver()
        err, event = cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        self._check(err, "cuEventCreate")
        return event

    def record_event(self, event, stream) -> None:
        (err,) = _driver().cuEventRecord(event, _stream_handle(stream))
        self._check(err, "cuEventRecord")

    def event_query(self, event) -> bool:
        cu = _driver()
        (err,) = cu.cuEventQuery(event)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._check(err, "cuEventQuery")
        return True

    def destroy_event(self, event) -> None:
        (err,) = _driver().cuEventDestroy(event)
        self._check(err, "cuEventDestroy")
