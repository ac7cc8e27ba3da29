"""Errors found by kernels (a bad index, an integer division by zero...), reported on the host without a sync.

A kernel cannot raise. Kernels that can meet an invalid element record the first one into a small per-device
error buffer (``WORDS`` int64 words in device memory, allocated once per device from the caching allocator):
the first error wins by a compare-and-swap on the flag word, then its program writes the details
(``tkernels/kernels/errors.py``: ``record_error``). The offending element itself gets a defined value (a zero,
a skipped write), never an out-of-bounds access.

The host reads the flag word at the next call that synchronises anyway (``item``/``numpy``/``tolist``/
``__array__``, any device-to-host copy, ``synchronize`` of a device, stream or event): one 8-byte read, after the
sync that call makes. The end of ``backward`` and ``Graph.replay`` are not synchronising points: they look
without waiting (``poll``; interpreted cuda runs every kernel before returning, so there they always see it).
A recorded error raises the exception the cpu backend raises for the same input (``IndexError``,
``ValueError``, ``ZeroDivisionError``...) naming the op and the value, and the buffer is cleared, so the process
and its memory stay usable.

Like ``CUDA_LAUNCH_BLOCKING=1``: with ``TKERNELS_SYNC_CHECKS=1`` in the environment (read at use time) or
``set_sync_checks(True)``, every launch of a recording kernel synchronises its stream and checks, so the op
itself raises.

Words of the buffer: 0 the flag (0: no error), 1 the site (what failed: op and kind of error, see ``site``),
2 the offending value, 3 the bound it broke (a size, a class count), 4 the element's position in the launch.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from ..validation import OpIndexError, OpValueError

__all__ = ["WORDS", "site", "check", "check_all", "poll", "clear", "clear_all", "set_sync_checks",
           "sync_checks_enabled", "buffer_block",
           "INDEX", "INDEX_NO_WRAP", "EMBEDDING", "CLASS_TARGET", "ONE_HOT", "ZERO_DIVISION", "NEGATIVE_POWER",
           "INVALID_DISTRIBUTION", "TOO_FEW_CATEGORIES", "SPARSE_INDEX"]

WORDS = 8
_ENV = "TKERNELS_SYNC_CHECKS"

# kinds of error: (exception class, message of op, value, bound, position)
(INDEX, INDEX_NO_WRAP, EMBEDDING, CLASS_TARGET, ONE_HOT, ZERO_DIVISION, NEGATIVE_POWER, INVALID_DISTRIBUTION,
 TOO_FEW_CATEGORIES, SPARSE_INDEX) = range(10)


def _index_message(op, axis, v, n, pos, wrap):
    lo = -n if wrap else 0
    hint = "" if wrap or v >= 0 else f"; {op} does not accept negative indices"
    return f"{op}: index {v} is out of bounds for axis {axis} with size {n} (valid: {lo} <= index < {n}){hint}"


def _exception(kind: int, op: str, axis: int, v: int, n: int, pos: int) -> BaseException:
    from ..validation import NegativeIntegerPowerError
    from ..validation import ZeroDivisionError as IntegerDivisionByZero  # also Python's ZeroDivisionError

    if kind in (INDEX, INDEX_NO_WRAP):
        return OpIndexError(_index_message(op, axis, v, n, pos, kind == INDEX))
    if kind == EMBEDDING:
        return OpIndexError(f"{op}: index {v} is out of bounds for a table of {n} rows (valid indices are "
                            f"0..{n - 1})")
    if kind == CLASS_TARGET:
        return OpIndexError(f"{op}: target {v} is out of bounds for {n} classes (class indices must be in "
                            f"[0, {n - 1}] or equal ignore_index)")
    if kind == ONE_HOT:
        return OpValueError(f"{op}: class value {v} is out of range [0, {n}) (num_classes={n})")
    if kind == ZERO_DIVISION:
        return IntegerDivisionByZero(f"ZeroDivisionError: {op}: integer division by zero (element {pos} of the "
                                     f"divisor is 0; x1 there is {v}); hint: mask the zeros first "
                                     f"(where(x2 == 0, 1, x2)) or compute in a float dtype")
    if kind == NEGATIVE_POWER:
        return NegativeIntegerPowerError(f"{op}: Integers to negative integer powers are not allowed (exponent {v} "
                                         f"at element {pos}); hint: use a float base or non-negative exponents")
    if kind == INVALID_DISTRIBUTION:  # v: the row
        return RuntimeError(f"{op}(): invalid probability distribution: row {v} holds negative, non-finite or only "
                            f"zero weights")
    if kind == TOO_FEW_CATEGORIES:  # v: the row, n: the number of samples
        return RuntimeError(f"{op}(): cannot sample n_sample={n} > prob_dist.size(-1) without replacement: row {v} "
                            f"has fewer non-zero weights")
    if kind == SPARSE_INDEX:  # v: the nonzero
        return RuntimeError(f"{op}(): the indices of nonzero {v} lie outside the tensor's size (each index must be "
                            f"in [0, size) of its dim)")
    return RuntimeError(f"{op}: a kernel recorded an invalid value {v} (bound {n}, element {pos})")


# ------------------------------------------------------------------------------------------------ sites
_lock = threading.Lock()
_sites: list = [("<none>", -1, 0)]  # code -> (op, kind, axis); code 0 is never recorded
_site_codes: dict = {}


def site(op: str, kind: int, axis: int = 0) -> int:
    """The code a kernel records for an error of ``kind`` in ``op`` (along ``axis``): a small int, stable for
    the process, passed to the kernel as a plain argument (one compiled kernel serves every site)."""
    key = (op, kind, axis)
    code = _site_codes.get(key)
    if code is None:
        with _lock:
            code = _site_codes.get(key)
            if code is None:
                code = len(_sites)
                _sites.append(key)
                _site_codes[key] = code
    return code


# the sites kernels name by constexpr codes (tkernels/kernels/errors.py holds the same numbers)
for _op, _kind in (("floor_divide", ZERO_DIVISION), ("remainder", ZERO_DIVISION), ("pow", NEGATIVE_POWER),
                   ("embedding", EMBEDDING), ("embedding_backward", EMBEDDING),
                   ("cross_entropy", CLASS_TARGET), ("nll_loss", CLASS_TARGET), ("fmod", ZERO_DIVISION),
                   ("trunc_divide", ZERO_DIVISION)):
    site(_op, _kind)


# ---------------------------------------------------------------------------------------------- buffers
class _Buffer:
    __slots__ = ("block", "ptr", "host", "snapshot", "event", "array")

    def __init__(self, block):
        self.block = block  # kept for the life of the process: never returns to the pool
        self.ptr = block.ptr
        self.host = np.zeros(WORDS, np.int64)  # what a blocking read lands in
        self.snapshot = None  # poll on a GPU: pinned host words and the event of their copy
        self.event = None
        self.array = None  # the backend's Array view of it (tkernels/backends/triton/_launch.py)


_buffers: dict = {}  # device index -> _Buffer


def buffer_block(index: int) -> _Buffer:
    """The device's error buffer (zeroed on first use; allocated once from the caching allocator)."""
    b = _buffers.get(index)
    if b is None:
        from . import _activate, caching_allocator, current_stream, get_runtime

        with _lock:
            b = _buffers.get(index)
            if b is None:
                _activate(index)
                stream = current_stream(index).handle
                block = caching_allocator(index).malloc(WORDS * 8, stream)
                zeros = np.zeros(WORDS, np.int64)
                get_runtime().memcpy_htod(index, block.ptr, zeros.ctypes.data, zeros.nbytes, stream, False)
                b = _buffers[index] = _Buffer(block)
    return b


def _raise(index: int, words) -> None:
    code, value, bound, pos = (int(w) for w in words[1:5])
    op, kind, axis = _sites[code] if 0 < code < len(_sites) else ("<unknown op>", -1, 0)
    err = _exception(kind, op, axis, value, bound, pos)
    if sync_checks_enabled():
        where = "by the op's kernel; raised at the op as sync checks are on (TKERNELS_SYNC_CHECKS)"
    else:
        where = ("by a kernel launched earlier; errors on cuda are reported at the next synchronising call, set "
                 "TKERNELS_SYNC_CHECKS=1 to raise at the op")
    err.args = (f"{err.args[0]} (recorded on cuda:{index} {where})",)
    raise err


def clear(index: int) -> None:
    """Reset the device's buffer (after an error was reported)."""
    from . import current_stream, get_runtime

    b = _buffers.get(index)
    if b is not None:
        zeros = np.zeros(WORDS, np.int64)
        get_runtime().memcpy_htod(index, b.ptr, zeros.ctypes.data, zeros.nbytes, current_stream(index).handle,
                                  False)
        b.event = None


def clear_all() -> None:
    """Reset every device's buffer, dropping any error not reported yet (test isolation)."""
    for index in list(_buffers):
        clear(index)


def check(index: int) -> None:
    """At a synchronising call on device ``index``: read the flag word (8 bytes) and raise a recorded error."""
    b = _buffers.get(index)
    if b is None:  # no recording kernel ever ran on this device
        return
    from . import current_stream, get_runtime

    rt = get_runtime()
    stream = current_stream(index).handle
    host = b.host
    rt.memcpy_dtoh(index, host.ctypes.data, b.ptr, 8, stream, False)
    if host[0] == 0:
        return
    rt.memcpy_dtoh(index, host.ctypes.data, b.ptr, WORDS * 8, stream, False)
    words = host.copy()
    clear(index)
    _raise(index, words)


def check_all() -> None:
    """``check`` on every device that has a buffer."""
    for index in list(_buffers):
        check(index)


def poll() -> None:
    """Where nothing synchronises (end of ``backward``, ``Graph.replay``): raise an error already known without
    waiting. Interpreted, every kernel has run: read the buffer. On a GPU: look at the words a previous poll
    copied (if that copy has completed) and queue a new asynchronous copy of them."""
    if not _buffers:
        return
    from . import current_stream, get_runtime

    rt = get_runtime()
    if rt.interpreted:
        check_all()
        return
    for index, b in list(_buffers.items()):
        if b.event is not None and rt.event_query(index, b.event) and b.snapshot[0] != 0:
            words = np.array(b.snapshot[:WORDS])
            clear(index)
            _raise(index, words)
        if b.event is None or rt.event_query(index, b.event):
            if b.snapshot is None:
                ptr = rt.host_alloc_pinned(index, WORDS * 8)
                b.snapshot = np.ctypeslib.as_array((ctypes.c_int64 * WORDS).from_address(int(ptr)))
            stream = current_stream(index).handle
            rt.memcpy_dtoh(index, b.snapshot.ctypes.data, b.ptr, WORDS * 8, stream, True)
            if b.event is None:
                b.event = rt.event_create(index)
            rt.event_record(index, b.event, stream)


# ---------------------------------------------------------------------------------------- the switch
_sync_override: bool | None = None


def set_sync_checks(enabled: bool | None) -> None:
    """Make every recording op synchronise and raise at the op (True), never (False), or follow the
    ``TKERNELS_SYNC_CHECKS`` environment variable (None, the default)."""
    global _sync_override
    _sync_override = None if enabled is None else bool(enabled)


def sync_checks_enabled() -> bool:
    """Whether recording ops check synchronously (``set_sync_checks``, else ``TKERNELS_SYNC_CHECKS=1``)."""
    if _sync_override is not None:
        return _sync_override
    return os.environ.get(_ENV, "") not in ("", "0")

