"""``autograd.accelerator.memory``: the caching allocator's statistics for the current accelerator device
(``torch.accelerator.memory``), forwarding to ``autograd.cuda``."""

from __future__ import annotations

import tkernels.cuda as _cuda

__all__ = ["empty_cache", "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_accumulated_memory_stats"]


def _idx(device):
    from . import _index, _need

    _need("memory")
    return _index("memory", device)


def empty_cache() -> None:
    """Return the cached, unused blocks to the driver."""
    if _cuda.is_available():
        _cuda.empty_cache()


def memory_stats(device=None, /) -> dict:
    return _cuda.memory_stats(_idx(device))


def memory_allocated(device=None, /) -> int:
    return _cuda.memory_allocated(_idx(device))


def max_memory_allocated(device=None, /) -> int:
    return _cuda.max_memory_allocated(_idx(device))


def memory_reserved(device=None, /) -> int:
    return _cuda.memory_reserved(_idx(device))


def max_memory_reserved(device=None, /) -> int:
    return _cuda.max_memory_reserved(_idx(device))


def reset_peak_memory_stats(device=None, /) -> None:
    _cuda.reset_peak_memory_stats(_idx(device))


def reset_accumulated_memory_stats(device=None, /) -> None:
    """Zero the totals that only grow (bytes allocated and freed, retries, OOMs, cache hits, segments)."""
    _cuda.caching_allocator(_idx(device)).reset_accumulated_memory_stats()
