"""Intra-op threads of the NumPy backend: a batch split over threads, each running BLAS on one core.

NumPy runs a ufunc or a copy on one core, while its OpenBLAS runs each GEMM on all of them. An op whose work is
"copy a slice, then GEMM it" (im2col convolution) thus runs its copies on one core, and OpenBLAS splits thin
GEMMs (64 output channels) less well than independent slices would. ``split`` cuts the batch into one
contiguous part per thread and runs the parts at once, with OpenBLAS set to one thread for the duration (NumPy
releases the GIL inside copies and BLAS calls): the ResNet-block convolution (32x64x32x32, 3x3) forward
15.9 -> 12.9 ms on 2 cores (``ops_conv._split_images``).

The thread count is OpenBLAS's own (``OPENBLAS_NUM_THREADS``, threadpoolctl, or the cores), read at each call,
so that a process limited to one BLAS thread stays on one core; ``TKERNELS_NUM_THREADS`` overrides it. Where
NumPy's BLAS is not an OpenBLAS whose thread count can be set (another BLAS, or a build without the symbols),
the count is 1 unless ``TKERNELS_NUM_THREADS`` says otherwise (then the BLAS keeps its own threads). When
``split`` is entered while another thread is inside it (the BLAS count is not that caller's to restore) or
from one of its own parts, the work runs on the calling thread as one part. The pool is dropped in a forked
child (its threads do not exist there) and made again on first use.
"""

from __future__ import annotations

import contextvars
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["split", "num_threads"]

_state: dict = {"pool": None, "size": 0}
_busy = threading.Lock()  # held while a split runs: the BLAS thread count is set to 1 for it


def _openblas():
    """(get, set) of the thread count of the OpenBLAS NumPy is linked to, or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in ("64_", "_64", ""):
            get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None) or getattr(
                lib, f"openblas_get_num_threads{suffix}", None)
            put = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None) or getattr(
                lib, f"openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


np.ones(4) @ np.ones(4)  # NumPy's BLAS is loaded lazily by some builds: make sure it is mapped before looking
_BLAS = _openblas()


def num_threads() -> int:
    """How many parts ``split`` cuts a batch into now: ``TKERNELS_NUM_THREADS`` when set, else OpenBLAS's thread
    count (1 without a settable OpenBLAS)."""
    v = os.environ.get("TKERNELS_NUM_THREADS", "").strip()
    if v:
        try:
            n = int(v)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"TKERNELS_NUM_THREADS must be a positive integer, got {v!r}; e.g. "
                             f"TKERNELS_NUM_THREADS=1 runs every cpu op on the calling thread")
        return n
    return 1 if _BLAS is None else max(1, _BLAS[0]())


def _pool(n: int) -> ThreadPoolExecutor:
    if _state["size"] < n:
        old = _state["pool"]
        _state["pool"], _state["size"] = ThreadPoolExecutor(n, thread_name_prefix="tkernels-intraop"), n
        if old is not None:
            old.shutdown(wait=False)
    return _state["pool"]


def split(n: int, fn, *, parts: int | None = None) -> list:
    """Run ``fn(lo, hi)`` over ``[0, n)`` cut into contiguous parts, one per thread (``parts``, else
    ``num_threads()``, at most ``n``), with OpenBLAS on one thread meanwhile; returns the results in order.
    One part (``fn(0, n)`` on the calling thread) when there is one thread, ``n`` < 2, or another split is
    running. An exception of a part is raised after every part has finished."""
    t = min(num_threads() if parts is None else parts, n)
    if t < 2 or not _busy.acquire(blocking=False):
        return [fn(0, n)]
    try:
        get, put = _BLAS or (lambda: 1, lambda n: None)
        before = get()
        put(1)
        try:
            bounds = [n * i // t for i in range(t + 1)]
            pool = _pool(t - 1)
            futs = [pool.submit(contextvars.copy_context().run, fn, bounds[i], bounds[i + 1]) for i in range(1, t)]
            first, err = None, None
            try:
                first = fn(bounds[0], bounds[1])
            except BaseException as e:  # noqa: BLE001 - re-raised below, after the other parts finished
                err = e
            rest = []
            for f in futs:
                try:
                    rest.append(f.result())
                except BaseException as e:  # noqa: BLE001
                    err = err or e
            if err is not None:
                raise err
            return [first, *rest]
        finally:
            put(before)
    finally:
        _busy.release()


def _after_fork_in_child() -> None:
    global _busy
    _state["pool"], _state["size"] = None, 0
    _busy = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
