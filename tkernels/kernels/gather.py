"""Gathers and scatters: reading or writing an array at data-dependent positions.

Two kernels move the data, one checks the indices:

- ``axis_kernel``: element ``i`` of the iteration shape (``out``'s for a gather, ``index``'s for a scatter)
  reads or writes ``x`` at ``strided_offset(i, x strides with the axis zeroed) + j * stride_axis`` with
  ``j = index[i]``; the axis' contribution comes only from ``j``, so the three operands collapse together.
- ``offsets_kernel``: element ``i`` of a selection ``(B, R)`` (B index positions, R trailing elements)
  reads or writes ``x`` at ``base[b] + strided_offset(r, trailing strides)``: ``base`` holds the offsets of the
  indexed leading dimensions, summed over any number of index arrays by ``base_kernel`` (advanced indexing,
  ``index_put``).
- ``check_kernel``: the first position of an out-of-range index (atomic min) and the largest index (atomic
  max) into a two-element int64 buffer that the host reads (for ops that need the host to see the indices
  anyway: the size of ``one_hot``'s result, ``repeat``'s counts).

Out-of-range indices: ``axis_kernel`` and ``base_kernel`` record the first one into the device's error buffer
(``errors.record_error``, site ``err_site``; the host raises at its next synchronising call) and never touch
memory there: a gather reads 0, a scatter skips the element, and ``base_kernel`` marks the row ``BAD`` for
``offsets_kernel`` to skip.

``MODE``: GET (load x, store out), PUT (store the value), ADD (atomic add: repeated positions accumulate;
the host gives half and narrow-integer targets a float32/int64 accumulator copy). The value comes from an
array (``src``) or is a kernel argument (``VALUE``: a Python number; float64 as its int64 bit pattern).
"""

import triton
import triton.language as tl

from .errors import record_error
from .strided import strided_offset

GET, PUT, ADD = 0, 1, 2
BAD = tl.constexpr(-(2**62))  # base_kernel's offset of a row with an out-of-range index
VALUE_ARRAY, VALUE_SCALAR, VALUE_F64_BITS = 0, 1, 2


@triton.jit
def _value(v_ptr, vo, value, mask, VALUE: tl.constexpr, BLOCK: tl.constexpr, dtype: tl.constexpr):
    if VALUE == 0:
        v = tl.load(v_ptr + vo, mask=mask).to(dtype)
    elif VALUE == 2:  # ones * v is v for every float v (0.0 + -0.0 would drop the sign of a -0.0 value, and
        # Triton 3.6 makes a -0.0 constant +0.0)
        v = (tl.full([BLOCK], 1.0, dtype=tl.float64) * value.to(tl.int64).to(tl.float64, bitcast=True)).to(dtype)
    else:
        z = tl.zeros([BLOCK], dtype=dtype)
        if z.dtype.is_floating():
            v = (tl.full([BLOCK], 1.0, dtype=dtype) * value).to(dtype)
        else:
            v = (z + value).to(dtype)
    return v


@triton.jit(do_not_specialize=["value", "err_site"])
def axis_kernel(x_ptr, idx_ptr, v_ptr, value, n, size, stride_axis, s1, s2, s3, s4, s5,
                xt0, xt1, xt2, xt3, xt4, xt5, it0, it1, it2, it3, it4, it5, vt0, vt1, vt2, vt3, vt4, vt5,
                err_ptr, err_site,
                MODE: tl.constexpr, VALUE: tl.constexpr, WRAP: tl.constexpr, BLOCK: tl.constexpr):
    # gather: x_ptr is the source, v_ptr the output; scatter: x_ptr is the target, v_ptr the source
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    j = tl.load(idx_ptr + strided_offset(i, s1, s2, s3, s4, s5, it0, it1, it2, it3, it4, it5), mask=mask,
                other=0).to(tl.int64)
    if WRAP:
        bad = mask & ((j < -size) | (j >= size))
    else:
        bad = mask & ((j < 0) | (j >= size))
    record_error(err_ptr, bad, j, i, err_site, size)
    if WRAP:
        j = tl.where(j < 0, j + size, j)
    ok = mask & (bad == 0)
    xo = strided_offset(i, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5) + tl.where(ok, j, 0) * stride_axis
    vo = strided_offset(i, s1, s2, s3, s4, s5, vt0, vt1, vt2, vt3, vt4, vt5)
    if MODE == 0:  # an out-of-range index gathers 0
        tl.store(v_ptr + vo, tl.load(x_ptr + xo, mask=ok, other=0), mask=mask)
    else:  # and scatters nothing
        v = _value(v_ptr, vo, value, ok, VALUE, BLOCK, x_ptr.dtype.element_ty)
        if MODE == 1:
            tl.store(x_ptr + xo, v, mask=ok)
        else:
            tl.atomic_add(x_ptr + xo, v, mask=ok)


@triton.jit(do_not_specialize=["err_site"])
def base_kernel(idx_ptr, base_ptr, n, size, stride, s1, s2, s3, s4, s5, it0, it1, it2, it3, it4, it5,
                err_ptr, err_site, FIRST: tl.constexpr, BLOCK: tl.constexpr):
    # base[b] (+)= wrap(index[b]) * stride: one launch per index array; BAD (sticky) where an index is out of range
    pid = tl.program_id(0).to(tl.int64)
    b = pid * BLOCK + tl.arange(0, BLOCK)
    mask = b < n
    j = tl.load(idx_ptr + strided_offset(b, s1, s2, s3, s4, s5, it0, it1, it2, it3, it4, it5), mask=mask,
                other=0).to(tl.int64)
    bad = mask & ((j < -size) | (j >= size))
    record_error(err_ptr, bad, j, b, err_site, size)
    j = tl.where(j < 0, j + size, j) * stride
    if not FIRST:
        prev = tl.load(base_ptr + b, mask=mask, other=0)
        bad = bad | (prev == BAD)
        j += prev
    tl.store(base_ptr + b, tl.where(bad, BAD, j), mask=mask)


@triton.jit(do_not_specialize=["value"])
def offsets_kernel(x_ptr, base_ptr, v_ptr, value, n, R, r1, r2, r3, r4, r5, rt0, rt1, rt2, rt3, rt4, rt5,
                   s1, s2, s3, s4, s5, vt0, vt1, vt2, vt3, vt4, vt5,
                   MODE: tl.constexpr, VALUE: tl.constexpr, BLOCK: tl.constexpr):
    # element i = (b, r) of the selection; x at base[b] + offset of r in the trailing dimensions; the value
    # (gather: the output) at the offset of i in the selection's shape (s*, vt*)
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    b = i // R
    r = i - b * R
    base = tl.load(base_ptr + b, mask=mask, other=0)
    ok = mask & (base != BAD)  # a row with an out-of-range index (recorded by base_kernel): 0, or no store
    xo = tl.where(ok, base, 0) + strided_offset(r, r1, r2, r3, r4, r5, rt0, rt1, rt2, rt3, rt4, rt5)
    vo = strided_offset(i, s1, s2, s3, s4, s5, vt0, vt1, vt2, vt3, vt4, vt5)
    if MODE == 0:
        tl.store(v_ptr + vo, tl.load(x_ptr + xo, mask=ok, other=0), mask=mask)
    else:
        v = _value(v_ptr, vo, value, ok, VALUE, BLOCK, x_ptr.dtype.element_ty)
        if MODE == 1:
            tl.store(x_ptr + xo, v, mask=ok)
        else:
            tl.atomic_add(x_ptr + xo, v, mask=ok)


@triton.jit
def check_kernel(idx_ptr, flag_ptr, n, lo, hi, s1, s2, s3, s4, s5, it0, it1, it2, it3, it4, it5,
                 BLOCK: tl.constexpr):
    # flag[0] = min linear position of an index outside [lo, hi) (n when none); flag[1] = max index
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    j = tl.load(idx_ptr + strided_offset(i, s1, s2, s3, s4, s5, it0, it1, it2, it3, it4, it5), mask=mask,
                other=0).to(tl.int64)
    bad = mask & ((j < lo) | (j >= hi))
    first = tl.min(tl.where(bad, i, n), axis=0)
    top = tl.max(tl.where(mask, j, -(2**62)), axis=0)
    tl.atomic_min(flag_ptr, first)
    tl.atomic_max(flag_ptr + 1, top)
