"""Elementwise binary ops (one kernel family, the op selected by a constexpr code).

Half types are loaded, computed in fp32 and stored back (also the cure for the interpreter's bf16
arithmetic); operands are strided/broadcast through collapsed dimensions (stride 0 where broadcast); a
Python scalar operand is passed as a kernel argument, never materialized.
"""

import triton
import triton.language as tl

from .strided import strided_offset

OP_ADD = 0
OP_SUB = 1
OP_MUL = 2

BINARY_CODES = {"add": OP_ADD, "subtract": OP_SUB, "multiply": OP_MUL}


@triton.jit
def _apply(a, b, OP: tl.constexpr):
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = a - b
    else:
        r = a * b
    return r


@triton.jit(do_not_specialize=["a_scalar", "b_scalar"])
def binary_kernel(a_ptr, b_ptr, y_ptr, a_scalar, b_scalar, n, s1, s2, s3, s4, s5,
                  at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5,
                  OP: tl.constexpr, A_SCALAR: tl.constexpr, B_SCALAR: tl.constexpr, F64_BITS: tl.constexpr,
                  CONTIGUOUS: tl.constexpr, COMPUTE_F32: tl.constexpr, BOOL_OUT: tl.constexpr,
                  BLOCK: tl.constexpr):
    # A scalar operand is a kernel argument; a float64 one comes as its int64 bit pattern (floats pass as fp32)
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if A_SCALAR:
        if F64_BITS:
            a_scalar = a_scalar.to(tl.int64).to(tl.float64, bitcast=True)
        a = (tl.zeros([BLOCK], dtype=y_ptr.dtype.element_ty) + a_scalar).to(y_ptr.dtype.element_ty)
    else:
        if CONTIGUOUS:
            ao = idx
        else:
            ao = strided_offset(idx, s1, s2, s3, s4, s5, at0, at1, at2, at3, at4, at5)
        a = tl.load(a_ptr + ao, mask=mask).to(y_ptr.dtype.element_ty)
    if B_SCALAR:
        if F64_BITS:
            b_scalar = b_scalar.to(tl.int64).to(tl.float64, bitcast=True)
        b = (tl.zeros([BLOCK], dtype=y_ptr.dtype.element_ty) + b_scalar).to(y_ptr.dtype.element_ty)
    else:
        if CONTIGUOUS:
            bo = idx
        else:
            bo = strided_offset(idx, s1, s2, s3, s4, s5, bt0, bt1, bt2, bt3, bt4, bt5)
        b = tl.load(b_ptr + bo, mask=mask).to(y_ptr.dtype.element_ty)
    if BOOL_OUT:  # bool + bool is logical or, bool * bool logical and (PyTorch): compute in int32, test != 0
        r = _apply(a.to(tl.int32), b.to(tl.int32), OP) != 0
    elif COMPUTE_F32:
        r = _apply(a.to(tl.float32), b.to(tl.float32), OP).to(y_ptr.dtype.element_ty)
    else:
        r = _apply(a, b, OP)
    tl.store(y_ptr + idx, r, mask=mask)
