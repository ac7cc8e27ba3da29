"""Launching kernels: Arrays are passed as they are on a GPU (``data_ptr()`` and ``dtype``), or wrapped for the
interpreter; grids are 1-D over elements. The torch-free driver makes launches use our current stream."""

from __future__ import annotations

import threading

import numpy as np

from ... import cuda as _cuda
from ... import dtypes as _dt
from ...array import Array
from ...cuda import device_errors as _errors
from ...cuda import interpreter as _interp
from ...cuda import is_interpreted
from ...validation import OpValueError

MAX_DIMS = 6
INTERPRETED = is_interpreted()
if INTERPRETED:
    _interp.apply_fixes()
else:
    from ...cuda import autotune as _autotune
    from ...cuda import triton_driver as _driver

# large blocks and few programs: the interpreter costs ~0.5 ms per program instance
ELEMENTWISE_BLOCK = 4096 if INTERPRETED else 1024
# Triton's interpreter patches triton.language module-wide for the duration of a launch (and keeps its grid in
# one builder): two threads inside it at once break each other ("_semantic argument must be provided outside
# of JIT functions"). Interpreted launches take turns, as a GPU's queue would order them anyway.
_INTERPRETER_LOCK = threading.Lock()


def launch(kernel, grid, *args, **meta):
    """``kernel[grid](*args, **meta)`` on the device of the first Array argument (a device guard, like
    PyTorch's: the launcher reads the current device, stream and context of the calling thread).

    A kernel that records errors (an ``err_ptr`` argument, given ``error_buffer(device)``) is followed by a
    check of the buffer when sync checks are on (``TKERNELS_SYNC_CHECKS=1``), so the op raises itself."""
    try:
        if INTERPRETED:
            wrapped = tuple(_interp.KernelArg(a) if isinstance(a, Array) else a for a in args)
            # the interpreter evaluates masked-off lanes too, in NumPy, and its casts warn where a GPU saturates
            # silently (int32 70000 -> float16 is inf): a warning there is not the op's
            with _INTERPRETER_LOCK, np.errstate(all="ignore"):
                r = kernel[grid](*wrapped, **meta)
        else:
            _driver.ensure_installed()
            _autotune.ensure_triton_allocator()  # kernels needing global scratch get it from our allocator
            index = next(a._device.index for a in args if isinstance(a, Array))
            if index != _cuda._local.device:
                with _cuda.device(index):
                    r = kernel[grid](*args, **meta)
            else:
                _cuda._activate(index)  # the context must be current on this thread (once per thread)
                r = kernel[grid](*args, **meta)
    except KeyError:
        # Triton has no complex pointer type: a kernel handed a complex array (an op whose complex cuda kernel
        # does not exist yet) says so instead of Triton's KeyError (checked only on that failure: no hot-path cost)
        c = next((a for a in args if isinstance(a, Array) and a._dtype.kind == "c"), None)
        if c is None:
            raise
        name = getattr(getattr(kernel, "fn", kernel), "__name__", str(kernel))
        raise NotImplementedError(f"{name}: {c._dtype} on cuda is not implemented yet (an argument is "
                                  f"{c._dtype}, shape {c._shape}); hint: compute on cpu with .to('cpu'), or in "
                                  f"real arithmetic on view_as_real(x)") from None
    records = _RECORDS.get(kernel)
    if records is None:
        records = _RECORDS[kernel] = "err_ptr" in kernel.arg_names
    if records and _errors.sync_checks_enabled():
        index = next(a._device.index for a in args if isinstance(a, Array))
        _cuda.current_stream(index).synchronize()  # checks the buffer (tkernels.cuda.Stream.synchronize)
    return r


_RECORDS: dict = {}  # kernel -> whether it takes the error buffer (an ``err_ptr`` argument)


def error_buffer(device) -> Array:
    """The device's error buffer as the ``err_ptr`` argument of recording kernels (``tkernels/kernels/errors.py``,
    ``tkernels/cuda/device_errors.py``): ``WORDS`` int64, allocated once per device, never freed."""
    b = _errors.buffer_block(device.index)
    a = b.array
    if a is None:
        from ...array import Storage

        a = b.array = Array(Storage(b.block, b.block.size, device), (_errors.WORDS,), (1,), 0, _dt.int64, device)
    return a


def collapse(shape, *strides_list):
    """Drop size-1 dimensions and merge dimensions contiguous in every operand; pad to ``MAX_DIMS``.

    Returns (sizes, [strides per operand]); raises ValueError when more than ``MAX_DIMS`` remain.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    sizes = [shape[i] for i in dims]
    strides = [[st[i] for i in dims] for st in strides_list]
    k = len(sizes) - 1
    while k > 0:
        if all(st[k - 1] == st[k] * sizes[k] for st in strides):
            sizes[k - 1] *= sizes[k]
            del sizes[k]
            for st in strides:
                st[k - 1] = st[k]  # the merged dimension steps like the inner one
                del st[k]
        k -= 1
    if len(sizes) > MAX_DIMS:
        raise OpValueError(f"strided kernels support {MAX_DIMS} non-mergeable dimensions, got shape {shape}")
    pad = MAX_DIMS - len(sizes)
    return [1] * pad + sizes, [[0] * pad + st for st in strides]


def f64_bits(x: float) -> int:
    """The int64 bit pattern of a float64 (kernels take float scalars as fp32 otherwise)."""
    return int(np.float64(x).view(np.int64))


def grid1d(n: int, block: int):
    return (max(1, -(-n // block)),)
