"""Triton without torch: our driver subclass, so every launch goes to *our* current device and stream.

Why (notes/triton-torch-free.md §1): Triton's stock CUDA driver imports torch to find the current device
and stream (always on 3.6; 3.9 falls back to the legacy default stream without torch), the AMD probe imports
torch unless ``TRITON_DEFAULT_BACKEND=nvidia``, and 3.6's native specializer imports torch on its first
call. So, before anything reads ``triton.runtime.driver.active``:
1. ``TRITON_DEFAULT_BACKEND=nvidia``;
2. prime the specializer once with ``import torch`` blocked by a meta-path finder;
3. install ``TorchFreeCudaDriver`` with ``triton.runtime.driver.set_active``: it skips ``CudaDriver.__init__``
   (which binds torch.cuda on 3.6) and answers device, stream and capability from ``tkernels.cuda``.
Benchmarks use ``event_bench`` (CUDA events on our stream, an L2 flush between runs) instead of
``triton.testing.do_bench``'s torch-backed timer; ``triton.autotune(do_bench=event_bench)`` uses it too.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading

__all__ = ["ensure_installed", "event_bench", "prime_specializer_without_torch"]

_installed = False
_lock = threading.Lock()


class _BlockTorch:
    """A meta-path finder refusing ``torch`` (setting sys.modules['torch'] = None breaks 3.9)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch import blocked: tkernels runs Triton without torch")
        return None


def prime_specializer_without_torch() -> None:
    """Make Triton's first specialization with ``import torch`` blocked (3.6 imports it there)."""
    from triton.runtime.jit import mangle_type

    if "torch" in sys.modules:
        mangle_type(1)
        return
    sys.meta_path.insert(0, _BlockTorch)
    try:
        mangle_type(1)
    finally:
        sys.meta_path.remove(_BlockTorch)


def _make_driver_class():
    from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils

    from . import Event as _Event
    from . import _activate, _local, current_device, current_stream, get_device_capability, set_device, synchronize
    from .runtime import get_runtime

    class _DeviceInterface:
        """The part of ``torch.cuda`` that ``triton.testing.do_bench`` touches."""

        Event = _Event  # a name bound in the class body is looked up in globals, not the enclosing function

        @staticmethod
        def synchronize():
            synchronize()

        @staticmethod
        def current_device():
            return current_device()

    class TorchFreeCudaDriver(CudaDriver):
        def __init__(self):  # deliberately no super().__init__(): on 3.6 it imports torch
            self.utils = CudaUtils()
            self.launcher_cls = CudaLauncher
            self._flush = None

        def get_current_device(self):
            # Triton asks this before every launch: make the device's context current on the calling thread
            # too (a fresh thread has none, and Triton's launcher would silently retain device 0's)
            index = _local.device
            _activate(index)
            return index

        def set_current_device(self, device):
            set_device(device)

        def get_current_stream(self, device=None):
            return current_stream(device).handle

        def get_device_capability(self, device=None):
            return get_device_capability(device)

        @staticmethod
        def is_active():
            return True

        def get_active_torch_device(self):
            raise RuntimeError("tkernels runs Triton without torch: there is no torch device")

        def get_device_interface(self):
            return _DeviceInterface

        def get_empty_cache_for_benchmark(self):
            if self._flush is None:
                self._flush = _L2Flush()
            return self._flush

        def clear_cache(self, cache):
            cache.zero_()

        def get_benchmarker(self):
            return event_bench

        def allocate_default_profile_scratch(self, size, alignment, stream):
            # Triton 3.9's default (profiling scratch, proton only) is torch.zeros: zeroed caching-allocator memory
            from .autotune import triton_scratch_allocator

            buf = triton_scratch_allocator(size, alignment, stream)
            get_runtime().memset_d8(_local.device, buf.data_ptr(), 0, size,
                                    current_stream().handle if stream is None else stream)
            return buf

    return TorchFreeCudaDriver


class _L2Flush:
    """256 MiB of device memory zeroed between benchmark runs so each run starts with a cold L2."""

    def __init__(self, nbytes: int = 256 << 20):
        from ..creation import empty

        self.buf = empty((nbytes,), dtype="uint8", device="cuda")
        self.nbytes = nbytes

    def zero_(self):
        from . import current_stream, get_runtime

        get_runtime().memset_d8(self.buf.device.index, self.buf.data_ptr(), 0, self.nbytes, current_stream().handle)


def ensure_installed() -> None:
    """Install the torch-free driver once per process (before the first compiled launch)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        os.environ.setdefault("TRITON_DEFAULT_BACKEND", "nvidia")
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default, stated: 3.9 warns when unset
        import triton

        from . import current_device, set_device
        from .compile_log import install_from_env

        set_device(current_device())  # context current on this thread before Triton's utils load
        prime_specializer_without_torch()
        triton.runtime.driver.set_active(_make_driver_class()())
        install_from_env()
        _installed = True


def event_bench(kernel_call, quantiles=None, warmup: float = 25.0, rep: float = 100.0, flush_l2: bool = True,
                return_mode: str = "mean"):
    """Time ``kernel_call`` with CUDA events on the current stream: ``triton.testing.do_bench``'s contract
    (milliseconds; ``quantiles`` → a list), without torch."""
    from . import Event, current_stream

    stream = current_stream()
    flush = _L2Flush() if flush_l2 else None
    kernel_call()
    stream.synchronize()
    e0, e1 = Event(enable_timing=True), Event(enable_timing=True)
    e0.record()
    for _ in range(5):
        if flush is not None:
            flush.zero_()
        kernel_call()
    e1.record()
    est = max(e0.elapsed_time(e1) / 5, 1e-3)
    n_warm, n_rep = max(1, int(warmup / est)), max(1, int(rep / est))
    for _ in range(n_warm):
        kernel_call()
    starts = [Event(enable_timing=True) for _ in range(n_rep)]
    ends = [Event(enable_timing=True) for _ in range(n_rep)]
    for a, b in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        a.record()
        kernel_call()
        b.record()
    stream.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in zip(starts, ends))
    if quantiles is not None:
        out = [times[min(len(times) - 1, int(round(q * (len(times) - 1))))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return times[0]
    if return_mode == "max":
        return times[-1]
    if return_mode == "median":
        return statistics.median(times)
    return statistics.fmean(times)
