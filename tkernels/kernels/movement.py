"""Compaction: the kernels behind data-dependent sizes on cuda (``nonzero``/``argwhere``, ``masked_select``,
boolean-mask indexing, ``unique``).

A selection is compacted in three passes: ``flag_kernel`` writes 0/1 flags (row-major order of the operand,
strided reads), an inclusive ``cumulative_sum`` of the flags gives each selected element its output slot
``pos[i] - 1`` (the last one is the count, read by the host once to allocate the result), and
``compact_kernel`` writes the selected values or linear indices there; ``unravel_kernel`` turns linear indices
into one coordinate column of an ``(count, ndim)`` result.
"""

import triton
import triton.language as tl

from .strided import strided_offset

VALUES, LINEAR = 0, 1


@triton.jit
def flag_kernel(x_ptr, f_ptr, n, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(x_ptr + strided_offset(i, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5), mask=mask, other=0)
    tl.store(f_ptr + i, (x != 0).to(f_ptr.dtype.element_ty), mask=mask)


@triton.jit
def compact_kernel(x_ptr, pos_ptr, out_ptr, n, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                   MODE: tl.constexpr, BLOCK: tl.constexpr):
    # element i was selected when the inclusive prefix sum steps at i; it goes to slot pos[i] - 1
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    pos = tl.load(pos_ptr + i, mask=mask, other=0)
    prev = tl.load(pos_ptr + i - 1, mask=mask & (i > 0), other=0)
    sel = mask & (pos > prev)
    if MODE == 0:
        v = tl.load(x_ptr + strided_offset(i, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5), mask=sel)
    else:
        v = i
    tl.store(out_ptr + (pos - 1), v, mask=sel)


@triton.jit
def unravel_kernel(lin_ptr, out_ptr, n, ndim, col, dsize, inner, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    k = pid * BLOCK + tl.arange(0, BLOCK)
    mask = k < n
    lin = tl.load(lin_ptr + k, mask=mask, other=0)
    tl.store(out_ptr + k * ndim + col, (lin // inner) % dsize, mask=mask)
