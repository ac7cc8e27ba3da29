"""The cpu's intra-op thread count (``torch.set_num_threads`` / ``get_num_threads``): how many threads the NumPy
backend splits large ops over, and OpenBLAS's own thread count."""

from __future__ import annotations

__all__ = ["set_num_threads", "get_num_threads"]


def set_num_threads(n: int) -> None:
    """Run cpu ops on ``n`` threads (OpenBLAS's GEMMs and the backend's split elementwise ops); wins over the
    ``TKERNELS_NUM_THREADS`` environment variable."""
    from .backends.numpy import _threads

    _threads.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads cpu ops use now."""
    from .backends.numpy import _threads

    return _threads.num_threads()
