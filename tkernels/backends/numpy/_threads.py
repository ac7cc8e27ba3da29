"""Intra-op threads of the NumPy backend: a batch split over threads, each running BLAS on one core.

NumPy runs a ufunc or a copy on one core, while its OpenBLAS runs each GEMM on all of them. An op whose work is
"copy a slice, then GEMM it" (im2col convolution) thus runs its copies on one core, and OpenBLAS splits thin
GEMMs (64 output channels) less well than independent slices would. ``split`` cuts the batch into one
contiguous part per thread and runs the parts at once, with OpenBLAS set to one thread for the duration (NumPy
releases the GIL inside copies and BLAS calls): the ResNet-block convolution (32x64x32x32, 3x3) forward
15.9 -> 12.9 ms on 2 cores (``ops_conv._split_images``). Memory-bound work on large tensors splits the same
way (``elementwise``: a ufunc over parts of its output; batch norm by channels): one NumPy call per part, since
a part that makes many short calls waits for the GIL at each of them (40-90 us per hand-off on the 2-core VM),
which is also why nothing below ``SPLIT_MIN_VALUES`` values splits.

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
import operator
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...validation import OpValueError

__all__ = ["split", "split_reporting", "num_threads", "set_num_threads", "parts_for", "elementwise", "SPLIT_MIN_VALUES"]

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


_set_by_call: list = [None]  # the count given to set_num_threads, which wins over the environment


def set_num_threads(n: int) -> None:
    """Use ``n`` intra-op threads on the cpu (``torch.set_num_threads``): ``split``'s parts and OpenBLAS's
    threads both; wins over ``TKERNELS_NUM_THREADS``."""
    n = operator.index(n)
    if n < 1:
        raise OpValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    _set_by_call[0] = n
    if _BLAS is not None:
        _BLAS[1](n)


def num_threads() -> int:
    """How many parts ``split`` cuts a batch into now: the count of ``set_num_threads`` when it was called, else
    ``TKERNELS_NUM_THREADS`` when set, else OpenBLAS's thread count (1 without a settable OpenBLAS)."""
    if _set_by_call[0] is not None:
        return _set_by_call[0]
    v = os.environ.get("TKERNELS_NUM_THREADS", "").strip()
    if v:
        try:
            n = int(v)
        except ValueError:
            n = 0
        if n < 1:
            raise OpValueError(f"TKERNELS_NUM_THREADS must be a positive integer, got {v!r}; e.g. "
                               f"TKERNELS_NUM_THREADS=1 runs every cpu op on the calling thread")
        return n
    return 1 if _BLAS is None else max(1, _BLAS[0]())


# memory-bound work (one ufunc pass) over at least this many values is split over the intra-op threads: handing a
# part to a pool thread and waiting for it costs 40-90 us on the 2-core VM, so below ~600K values a split loses
# (float32 add, 2 threads: 512K values 223 -> 239 us, 1M 453 -> 378 us, 2M 895 -> 600 us)
SPLIT_MIN_VALUES = 1 << 20


def parts_for(values: int) -> int:
    """How many parts a split of memory-bound work over ``values`` values uses: 1 below ``SPLIT_MIN_VALUES`` (or
    with one thread), else up to ``num_threads()`` parts of at least half of it each."""
    if values < SPLIT_MIN_VALUES:
        return 1
    return max(1, min(num_threads(), values // max(1, SPLIT_MIN_VALUES // 2)))


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.strides == b.strides
            and a.shape == b.shape)


# NumPy's floating-point error kinds in the order it reports them, with the text its messages use
_FP_KINDS = (("divide", "divide by zero"), ("over", "overflow"), ("under", "underflow"), ("invalid", "invalid value"))


def split_reporting(n: int, fn, *, parts: int, name: str) -> list:
    """``split`` of a ufunc-like call whose floating-point errors are reported once for the whole call, as the one
    NumPy call would report them under the caller's ``np.errstate`` (warn, raise, call, print, log; "in
    ``name``"), not once per part: the parts run with the errors collected, and each kind seen is reported after
    they all finished (NumPy, too, reports at the end of a ufunc call)."""
    mode = np.geterr()
    if all(v == "ignore" for v in mode.values()):
        return split(n, fn, parts=parts)
    seen: dict = {}

    def collect(kind, flag):  # (a set-item under the GIL: safe from the parts' threads)
        seen[kind] = flag

    collecting = {k: ("ignore" if mode[k] == "ignore" else "call") for k, _ in _FP_KINDS}

    def part(lo, hi):
        with np.errstate(call=collect, **collecting):
            return fn(lo, hi)

    res = split(n, part, parts=parts)
    for k, text in _FP_KINDS:
        if text not in seen:
            continue
        msg = f"{text} encountered in {name}"
        m = mode[k]
        if m == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        elif m == "raise":
            raise FloatingPointError(msg)
        elif m == "call":
            np.geterrcall()(text, seen[text])
        elif m == "print":
            print(f"Warning: {msg}")
        elif m == "log":
            np.geterrcall().write(f"Warning: {msg}\n")
    return res


def elementwise(call, out: np.ndarray, *ins, name: str = "") -> bool:
    """``call(out_part, *in_parts)`` over parts of ``out`` at once, one per intra-op thread, when ``out`` has at
    least ``SPLIT_MIN_VALUES`` values (``parts_for``); True when it ran so, False (nothing done) when the caller
    should make the one whole call itself. Elementwise work only: each value of ``out`` must depend on the values
    at its own position in ``ins`` (arrays broadcasting to ``out``'s shape, or scalars passed as they are), so the
    results are those of the whole call, bit for bit. ``out`` is cut along its first axis (or flat, when it and
    every same-shaped input are C-contiguous); an input that may overlap ``out`` without being the same view
    (``np.add(x[1:], x[:-1], out=x[1:])``) makes the call whole (NumPy buffers such a call, parts would not).
    Floating-point errors are reported once, naming ``name`` (``split_reporting``)."""
    t = parts_for(out.size)
    if t < 2:
        return False
    flat = out.flags.c_contiguous
    for x in ins:
        if isinstance(x, np.ndarray) and x.ndim:
            if np.may_share_memory(x, out) and not _same_view(x, out):
                return False
            if flat and (x.shape != out.shape or not x.flags.c_contiguous):
                flat = False
    if flat:
        o = out.reshape(-1)
        parts = [x.reshape(-1) if isinstance(x, np.ndarray) and x.ndim else x for x in ins]
        n = o.size
    else:
        n = out.shape[0]
        if n < t:
            return False
        o = out
        parts = ins
    nd = out.ndim

    def cut(x, lo, hi):
        if isinstance(x, np.ndarray) and x.ndim == (1 if flat else nd) and x.shape[0] != 1:
            return x[lo:hi]
        return x  # a scalar, or an input broadcast along the cut axis

    split_reporting(n, lambda lo, hi: call(o[lo:hi], *[cut(x, lo, hi) for x in parts]), parts=t, name=name)
    return True


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
