"""Recording an error from inside a kernel (``tkernels/cuda/device_errors.py`` is the host side).

``record_error(err_ptr, bad, value, pos, site, bound)``: when any lane of ``bad`` (a block of any shape) is set,
the lane with the lowest ``pos`` is the block's offending element; its program claims the device's error buffer by
a compare-and-swap of the flag word (0 -> 1: the first error wins, later ones leave it alone) and writes the
details. The common path (no bad lane) costs a block reduction and a branch; no atomic is issued.

``site`` says which op failed and how (an int from ``device_errors.site``; the constants below for sites kernels
name themselves). Callers give the offending element a defined value (a zero, a skipped store) themselves.
"""

import triton
import triton.language as tl

# built-in sites, registered in this order by tkernels/cuda/device_errors.py
FLOOR_DIVIDE_BY_ZERO = tl.constexpr(1)
REMAINDER_BY_ZERO = tl.constexpr(2)
NEGATIVE_POWER = tl.constexpr(3)
EMBEDDING = tl.constexpr(4)
EMBEDDING_BACKWARD = tl.constexpr(5)
CROSS_ENTROPY = tl.constexpr(6)
NLL_LOSS = tl.constexpr(7)
FMOD_BY_ZERO = tl.constexpr(8)
TRUNC_DIVIDE_BY_ZERO = tl.constexpr(9)

_NONE = tl.constexpr(2**62)


@triton.jit
def record_error(err_ptr, bad, value, pos, site, bound):
    first = tl.min(tl.where(bad, pos.to(tl.int64), _NONE), axis=None)
    if first < _NONE:
        v = tl.sum(tl.where(bad & (pos == first), value.to(tl.int64), 0), axis=None)
        zero = first * 0
        if tl.atomic_cas(err_ptr, zero, zero + 1) == 0:
            tl.store(err_ptr + 1, zero + site)
            tl.store(err_ptr + 2, v)
            tl.store(err_ptr + 3, zero + bound)
            tl.store(err_ptr + 4, first)


@triton.jit
def assert_kernel(ok_ptr, err_ptr, n, site, bound, BLOCK: tl.constexpr):
    """``device_assert``: records the first element of the bool array ``ok`` that is False (its position is the
    value recorded: a row of a distribution, say)."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ok = tl.load(ok_ptr + offs, mask=mask, other=1)
    record_error(err_ptr, mask & (ok == 0), offs, offs, site, bound)
