"""``tkernels.cuda``: devices, streams, events and the caching allocator (``torch.cuda``'s names).

Two modes, fixed at import: the real driver through cuda-python, or interpreted cuda when
``TKERNELS_INTERPRET=1`` is set before import (host memory through the same allocator, kernels through
Triton's interpreter). ``is_interpreted()`` says which. On a machine without a driver ``is_available()``
is False and nothing crashes.

State is per thread, like PyTorch: the current device, and per device the current stream. Any call that
allocates, copies or launches first makes the device's primary context current on the calling thread.
"""

from __future__ import annotations

import contextlib
import os
import threading

from ..validation import OpTypeError, OpValueError
from . import device_errors
from .allocator import CachingAllocator, OutOfMemoryError, format_size
from .device_errors import set_sync_checks, sync_checks_enabled
from .runtime import CudaError, DeviceProperties, get_runtime

__all__ = [
    "is_available", "is_interpreted", "device_count", "current_device", "set_device", "device",
    "get_device_properties", "get_device_name", "get_device_capability", "synchronize", "Stream", "Event",
    "current_stream", "default_stream", "stream", "set_stream", "OutOfMemoryError", "CudaError",
    "DeviceProperties", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_stats", "memory_summary", "empty_cache", "reset_peak_memory_stats", "set_per_process_memory_fraction",
    "set_memory_limit", "record_stream", "mem_get_info", "caching_allocator", "format_size", "CUDAGraph", "graph",
    "is_current_stream_capturing", "set_sync_checks", "sync_checks_enabled",
]

if os.environ.get("TKERNELS_INTERPRET") == "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")


def is_interpreted() -> bool:
    """True when cuda arrays live in host memory and kernels run in Triton's interpreter."""
    return get_runtime().interpreted


def device_count() -> int:
    """Number of usable cuda devices (1 when interpreted; 0 without a driver)."""
    return get_runtime().device_count()


def is_available() -> bool:
    """Whether cuda arrays can be made here (a device with a driver, or interpreted mode)."""
    return device_count() > 0


def _require(index: int | None = None) -> int:
    rt = get_runtime()
    n = rt.device_count()
    if n == 0:
        raise RuntimeError(f"cuda: no CUDA device is available ({rt.unavailable_reason}); hint: use "
                           f"device='cpu', or set TKERNELS_INTERPRET=1 before importing tkernels to run cuda "
                           f"code on the host through Triton's interpreter")
    if index is not None and not 0 <= index < n:
        raise RuntimeError(f"cuda: invalid device index {index}: {n} device(s) available (0..{n - 1})")
    return n


class _Local(threading.local):
    def __init__(self):
        self.device = 0
        self.streams = {}  # device index -> Stream
        self.current_ctx = set()  # device indices whose context is current on this thread


_local = _Local()


def _index(dev) -> int:
    if dev is None:
        return _local.device
    if isinstance(dev, int):
        return dev
    idx = getattr(dev, "index", None)
    if idx is None and getattr(dev, "type", "cuda") == "cuda" and not isinstance(dev, str):
        return _local.device
    if isinstance(dev, str):
        from ..device import Device

        d = Device(dev)
        if d.type != "cuda":
            raise OpValueError(f"cuda: expected a cuda device, got {dev!r}")
        return _local.device if d.index is None else d.index
    return idx


def current_device() -> int:
    """Index of the current cuda device of this thread."""
    _require()
    return _local.device


def _activate(index: int) -> None:
    """Make device ``index``'s context current on this thread (once per thread and device)."""
    if index not in _local.current_ctx:
        get_runtime().make_current(index)
        _local.current_ctx = {index}


def set_device(dev) -> None:
    """Set this thread's current cuda device."""
    index = _index(dev)
    _require(index)
    _activate(index)
    _local.device = index


@contextlib.contextmanager
def device(dev):
    """Context manager: the current device inside the block is ``dev``."""
    prev = _local.device
    set_device(dev)
    try:
        yield
    finally:
        set_device(prev)


def get_device_properties(dev=None) -> DeviceProperties:
    index = _index(dev)
    _require(index)
    return get_runtime().properties(index)


def get_device_name(dev=None) -> str:
    return get_device_properties(dev).name


def get_device_capability(dev=None) -> tuple[int, int]:
    p = get_device_properties(dev)
    return p.major, p.minor


def synchronize(dev=None) -> None:
    """Wait for all work queued on every stream of the device."""
    index = _index(dev)
    _require(index)
    get_runtime().synchronize(index)
    device_errors.check(index)  # an error a kernel recorded raises here (tkernels/cuda/device_errors.py)


# ------------------------------------------------------------------------------------------ streams
class Stream:
    """A cuda stream (ordered queue of work). ``Stream()`` creates one on the current device."""

    __slots__ = ("handle", "device_index", "_owned")

    def __init__(self, device=None, priority: int = 0, *, _handle: int | None = None):
        self.device_index = _index(device)
        _require(self.device_index)
        if _handle is None:
            self.handle = get_runtime().stream_create(self.device_index, priority)
            self._owned = True
        else:
            self.handle = int(_handle)
            self._owned = False

    @property
    def cuda_stream(self) -> int:
        """The raw CUstream handle as an int (0 is the legacy default stream)."""
        return self.handle

    @property
    def device(self):
        from ..device import Device

        return Device("cuda", self.device_index)

    def query(self) -> bool:
        """True when all work queued on this stream has completed."""
        return get_runtime().stream_query(self.device_index, self.handle)

    def synchronize(self) -> None:
        get_runtime().stream_synchronize(self.device_index, self.handle)
        device_errors.check(self.device_index)

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits for ``event``."""
        if event._handle is not None:
            get_runtime().stream_wait_event(self.device_index, self.handle, event._handle)

    def wait_stream(self, other: Stream) -> None:
        """Later work on this stream waits for the work queued so far on ``other``."""
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and (self.handle, self.device_index) == (other.handle, other.device_index)

    def __hash__(self) -> int:
        return hash((self.handle, self.device_index))

    def __repr__(self) -> str:
        return f"<tkernels.cuda.Stream device=cuda:{self.device_index} cuda_stream=0x{self.handle:x}>"

    def __del__(self):
        if getattr(self, "_owned", False):
            try:
                # the allocator keys cached blocks by stream handle and a new stream may get this handle
                # back: let the queued work finish before the handle can be reused
                get_runtime().stream_synchronize(self.device_index, self.handle)
                get_runtime().stream_destroy(self.device_index, self.handle)
            except Exception:  # noqa: BLE001 - interpreter shutdown (a finalizer must not raise)
                pass


_default_streams: dict[int, Stream] = {}


def default_stream(dev=None) -> Stream:
    """The legacy default stream (handle 0) of the device."""
    index = _index(dev)
    s = _default_streams.get(index)
    if s is None:
        s = _default_streams[index] = Stream(index, _handle=0)
    return s


def current_stream(dev=None) -> Stream:
    """This thread's current stream on the device (the default stream unless set)."""
    index = _index(dev)
    s = _local.streams.get(index)
    return s if s is not None else default_stream(index)


def set_stream(s: Stream) -> None:
    _local.streams[s.device_index] = s


@contextlib.contextmanager
def stream(s: Stream | None):
    """Context manager: work on ``s``'s device goes to ``s`` inside the block (None: no change)."""
    if s is None:
        yield
        return
    prev_dev = _local.device
    prev = _local.streams.get(s.device_index)
    set_device(s.device_index)
    _local.streams[s.device_index] = s
    try:
        yield s
    finally:
        if prev is None:
            _local.streams.pop(s.device_index, None)
        else:
            _local.streams[s.device_index] = prev
        set_device(prev_dev)


class Event:
    """A cuda event: ``record`` on a stream, then ``query``/``synchronize``/``wait``/``elapsed_time``."""

    __slots__ = ("enable_timing", "_handle", "_device_index")

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._handle = None
        self._device_index = None

    def record(self, stream: Stream | None = None) -> None:
        s = current_stream() if stream is None else stream
        rt = get_runtime()
        if self._handle is None:
            self._handle = rt.event_create(s.device_index, self.enable_timing)
            self._device_index = s.device_index
        elif s.device_index != self._device_index:
            raise OpValueError(f"Event.record: the event belongs to cuda:{self._device_index}, the stream to "
                               f"cuda:{s.device_index}; hint: record on a stream of the event's device")
        rt.event_record(s.device_index, self._handle, s.handle)

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        return True if self._handle is None else get_runtime().event_query(self._device_index, self._handle)

    def synchronize(self) -> None:
        if self._handle is not None:
            get_runtime().event_synchronize(self._device_index, self._handle)
            device_errors.check(self._device_index)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, timing enabled)."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events need enable_timing=True")
        if self._handle is None or end._handle is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded first")
        end.synchronize()
        return get_runtime().event_elapsed_ms(self._device_index, self._handle, end._handle)

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            try:
                get_runtime().event_destroy(self._device_index, self._handle)
            except Exception:  # noqa: BLE001 - interpreter shutdown (a finalizer must not raise)
                pass


# ------------------------------------------------------------------------------------------- memory
_allocators: dict[int, CachingAllocator] = {}
_alloc_lock = threading.Lock()


def caching_allocator(dev=None) -> CachingAllocator:
    """The caching allocator of a device (made on first use)."""
    index = _index(dev)
    a = _allocators.get(index)
    if a is None:
        with _alloc_lock:
            a = _allocators.get(index)
            if a is None:
                _require(index)
                _activate(index)
                a = _allocators[index] = CachingAllocator(get_runtime().raw_backend(index), index)
    return a


def memory_allocated(dev=None) -> int:
    """Bytes held by live arrays on the device."""
    return caching_allocator(dev).memory_allocated()


def max_memory_allocated(dev=None) -> int:
    return caching_allocator(dev).max_memory_allocated()


def memory_reserved(dev=None) -> int:
    """Bytes the allocator holds from the driver (allocated + cached)."""
    return caching_allocator(dev).memory_reserved()


def max_memory_reserved(dev=None) -> int:
    return caching_allocator(dev).max_memory_reserved()


def memory_stats(dev=None) -> dict:
    """PyTorch's flat statistics dict (allocated/reserved/active/inactive_split, counts, retries, OOMs)."""
    return caching_allocator(dev).memory_stats()


def memory_summary(dev=None, abbreviated: bool = False) -> str:
    """A readable table of the allocator's statistics."""
    return caching_allocator(dev).memory_summary()


def empty_cache() -> None:
    """Give cached, unused segments back to the driver."""
    for a in list(_allocators.values()):
        a.empty_cache()


def reset_peak_memory_stats(dev=None) -> None:
    caching_allocator(dev).reset_peak_memory_stats()


def set_per_process_memory_fraction(fraction: float, dev=None) -> None:
    """Cap the memory this process reserves on the device at ``fraction`` of its total memory."""
    caching_allocator(dev).set_memory_fraction(fraction)


def set_memory_limit(nbytes: int | None, dev=None) -> None:
    """Cap the memory this process reserves on the device at ``nbytes`` (None: no cap)."""
    caching_allocator(dev).set_memory_limit(nbytes)


def mem_get_info(dev=None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return caching_allocator(dev).backend.mem_get_info()


def ipc_collect() -> int:
    """Free the memory sent to other processes (CUDA IPC) that they have released; returns how many storages are
    still held for consumers (``torch.cuda.ipc_collect``; see Note [CUDA IPC and the caching allocator])."""
    from . import ipc

    return ipc.ipc_collect()


def record_stream(array, s: Stream) -> None:
    """Mark ``array``'s memory as used on stream ``s``: it is not reused before ``s``'s queued work ends."""
    storage = array._storage
    block = getattr(storage, "block", None)
    if block is None:
        raise OpTypeError(f"record_stream: expected a cuda array, got an array on {array.device}")
    caching_allocator(storage.device.index).record_stream(block, s.handle)


# PyTorch's names for graph capture (``torch.cuda.CUDAGraph``, ``torch.cuda.graph``); see ``tkernels.graphs``, which
# records backend calls on every device (capture runs the code once, unlike CUDA's stream capture).
from ..graphs import Graph as CUDAGraph  # noqa: E402
from ..graphs import graph  # noqa: E402
from ..graphs import is_capturing as is_current_stream_capturing  # noqa: E402


# ------------------------------------------------------------------------------------------- random
# One generator serves every device (``tkernels.random.default_generator``): its NumPy stream draws for the cpu,
# its Philox counter for the cuda kernels. These are ``torch.cuda``'s seeding functions: they reseed the Philox
# stream only (the cpu stream stays where it is, as in PyTorch); every cuda device shares that stream, so the
# ``_all`` forms are the same calls. Without a cuda device they still work (PyTorch defers them silently).
def manual_seed(seed: int) -> None:
    """Seed the cuda kernels' random stream (``torch.cuda.manual_seed``)."""
    from .. import random

    random.default_generator.philox_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Seed the cuda kernels' random stream with a random number (``torch.cuda.seed``)."""
    import numpy as np

    manual_seed(int(np.random.SeedSequence().entropy % (2**63)))


seed_all = seed


def initial_seed() -> int:
    """The seed of the cuda kernels' random stream."""
    from .. import random

    return random.default_generator._philox


def get_rng_state(device=None) -> dict:
    """The cuda stream's state (a dict; PyTorch returns a byte tensor): ``set_rng_state`` takes it back."""
    from .. import random

    g = random.default_generator
    return {"philox_seed": g._philox, "philox_offset": g.philox_offset}


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(max(device_count(), 1))]


def set_rng_state(new_state, device=None) -> None:
    """Restore a state from ``get_rng_state``."""
    from .. import random

    try:
        s, off = int(new_state["philox_seed"]), int(new_state["philox_offset"])
    except (KeyError, TypeError, ValueError) as e:
        raise OpValueError(f"cuda.set_rng_state: not a state from cuda.get_rng_state() ({e!r})") from None
    random.default_generator.philox_seed(s)
    random.default_generator.philox_offset = off


def set_rng_state_all(new_states) -> None:
    for st in new_states:
        set_rng_state(st)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 runs on the cuda device: sm_80 and later (emulated before, as PyTorch counts it when
    ``including_emulation``), always when interpreted; False without a device."""
    if not is_available():
        return False
    if is_interpreted():
        return True
    return including_emulation or get_device_capability() >= (8, 0)


__all__ += ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
            "get_rng_state_all", "set_rng_state", "set_rng_state_all", "is_bf16_supported"]
