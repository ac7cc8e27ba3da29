"""Fill and strided copy with dtype conversion: the kernels behind ``empty/full``, ``copy``, ``astype``,
``contiguous`` and item assignment on cuda.

One kernel per job, any dtype pair: loads convert through ``.to(out dtype)``; float to int truncates toward
zero (``fptosi``), anything to bool is ``!= 0`` (as NumPy and PyTorch).
"""

import triton
import triton.language as tl

from .strided import strided_offset


@triton.jit(do_not_specialize=["value"])
def fill_kernel(y_ptr, value, n, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
                CONTIGUOUS: tl.constexpr, TO_BOOL: tl.constexpr, F64_BITS: tl.constexpr, BLOCK: tl.constexpr):
    # Python floats reach kernels as fp32: a float64 fill value comes as its int64 bit pattern instead
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if CONTIGUOUS:
        off = idx
    else:
        off = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
    if F64_BITS:
        v = value.to(tl.int64).to(tl.float64, bitcast=True)
    else:
        v = value
    # `zeros + scalar` works for a scalar tensor (compiled) and a Python number (interpreter) alike; floats
    # multiply ones instead (exact for every float): 0.0 + -0.0 is 0.0, and a -0.0 constant is no way out
    # (Triton 3.6 makes any constant equal to 0 a +0.0)
    if TO_BOOL:
        out = (tl.zeros([BLOCK], dtype=tl.float64) + v) != 0
    elif y_ptr.dtype.element_ty.is_floating():
        out = (tl.full([BLOCK], 1.0, dtype=y_ptr.dtype.element_ty) * v).to(y_ptr.dtype.element_ty)
    else:
        out = (tl.zeros([BLOCK], dtype=y_ptr.dtype.element_ty) + v).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + off, out, mask=mask)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, s1, s2, s3, s4, s5,
                xt0, xt1, xt2, xt3, xt4, xt5, yt0, yt1, yt2, yt3, yt4, yt5,
                X_CONTIGUOUS: tl.constexpr, Y_CONTIGUOUS: tl.constexpr, TO_BOOL: tl.constexpr,
                BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if X_CONTIGUOUS:
        xo = idx
    else:
        xo = strided_offset(idx, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5)
    if Y_CONTIGUOUS:
        yo = idx
    else:
        yo = strided_offset(idx, s1, s2, s3, s4, s5, yt0, yt1, yt2, yt3, yt4, yt5)
    x = tl.load(x_ptr + xo, mask=mask)
    if TO_BOOL:
        out = x != 0
    else:
        out = x.to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + yo, out, mask=mask)
