"""Dropout whose mask lives only in registers: element ``i`` is kept when the Philox uniform of stream word
``offset + i`` (``tkernels.kernels.random``) is >= p. The forward and the backward are the same kernel,
``y = x * keep * scale``, run with the same (seed, offset): the backward regenerates the forward's mask
instead of reading a stored one.
"""

import triton
import triton.language as tl

from .random import element_words, f64_of, uniform_f32
from .strided import strided_offset


@triton.jit(do_not_specialize=["seed_lo", "seed_hi", "ctr_lo", "ctr_hi", "scale_lo", "scale_hi"])
def dropout_kernel(x_ptr, m_ptr, y_ptr, n, seed_lo, seed_hi, ctr_lo, ctr_hi, p, scale_lo, scale_hi,
                   s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, u0, u1, u2, u3, u4, u5,
                   X_CONTIGUOUS: tl.constexpr, MASK_ARRAY: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr):
    """``y = x * keep * scale`` for contiguous ``y``, ``keep = (u >= p)`` from the Philox stream, or with
    MASK_ARRAY the bool array ``m`` (strides u0..u5; a mask given explicitly, as on cpu). ``x`` is strided (sizes
    s1..s5, strides t0..t5) unless X_CONTIGUOUS; ``scale`` is a float64 bit pattern (halves), computed in
    float64 with F64, else float32."""
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if X_CONTIGUOUS:
        xo = idx
    else:
        xo = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
    if MASK_ARRAY:
        keep = tl.load(m_ptr + strided_offset(idx, s1, s2, s3, s4, s5, u0, u1, u2, u3, u4, u5), mask=mask,
                       other=0) != 0
    else:
        w, _ = element_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid, BLOCK, 1)
        keep = uniform_f32(w) >= p
    x = tl.load(x_ptr + xo, mask=mask, other=0)
    if F64:
        y = x * keep.to(tl.float64) * f64_of(scale_lo, scale_hi)  # x * 0 keeps NaN for inf, as NumPy and PyTorch
    else:
        y = x.to(tl.float32) * keep.to(tl.float32) * f64_of(scale_lo, scale_hi).to(tl.float32)
    tl.store(y_ptr + idx, y.to(y_ptr.dtype.element_ty), mask=mask)
