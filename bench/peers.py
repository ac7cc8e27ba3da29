"""Optional peers of the CPU benchmarks, measured in the same run when importable: PyTorch (eager, CPU) and
MyGrad (a pure-Python autograd over NumPy). Neither is a dependency: an absent peer leaves its rows empty.

PyTorch runs its CPU kernels on its own thread pool, NumPy on OpenBLAS's: compute-bound comparisons are only
fair with the same number of threads on both sides, so ``torch()`` sets PyTorch's intra-op threads to what
the BLAS under NumPy uses (``OPENBLAS_NUM_THREADS`` etc. when set, else threadpoolctl's count when it is
installed, else every core, OpenBLAS's default) and the environment block prints both.
"""

from __future__ import annotations

import os

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_cache: dict = {}


def blas_threads() -> int:
    """The number of threads the BLAS under NumPy computes with."""
    for var in _THREAD_VARS:
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        from threadpoolctl import threadpool_info

        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return max(counts)
    except Exception:  # noqa: BLE001 - not installed or not introspectable: fall back to the default
        pass
    return os.cpu_count() or 1


def _import(name: str):
    if name not in _cache:
        try:
            _cache[name] = __import__(name)
        except Exception:  # noqa: BLE001 - absent or broken: the peer is left out
            _cache[name] = None
    return _cache[name]


def torch(enabled: bool = True):
    """The torch module with its intra-op threads matched to NumPy's BLAS, or None (absent or disabled)."""
    if not enabled:
        return None
    t = _import("torch")
    if t is not None and not _cache.get("torch_threads_set"):
        t.set_num_threads(blas_threads())
        _cache["torch_threads_set"] = True
    return t


def mygrad(enabled: bool = True):
    """The mygrad module, or None (absent or disabled)."""
    return _import("mygrad") if enabled else None


def add_arguments(p) -> None:
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is importable")
    p.add_argument("--no-mygrad", action="store_true", help="leave MyGrad out even when it is importable")


def environment(args) -> dict:
    """The environment lines of the peers (versions and threads, or why a column is empty)."""
    env = {}
    t = torch(not args.no_torch)
    if t is not None:
        env["torch"] = f"{t.__version__} (intra-op threads: {t.get_num_threads()}, matched to NumPy's BLAS)"
    else:
        env["torch"] = "left out (--no-torch)" if args.no_torch else "not importable: PyTorch rows are empty"
    m = mygrad(not args.no_mygrad)
    if m is not None:
        env["mygrad"] = str(getattr(m, "__version__", "?"))
    else:
        env["mygrad"] = "left out (--no-mygrad)" if args.no_mygrad else "not importable: MyGrad rows are empty"
    return env
