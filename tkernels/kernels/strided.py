"""Shared device helpers: the element offset of a linear index in a strided array of up to 6 dimensions.

Operands are described after dimension collapsing (``tkernels.backends.triton.layout.collapse``): sizes
``s0..s5`` (leading ones padded with 1) and per-operand strides in elements; a broadcast operand has stride
0 in the broadcast dimensions. Offsets are int64 so arrays past 2**31 elements index correctly.
"""

import triton
import triton.language as tl  # noqa: F401 - the interpreter needs `tl` in a kernel module


@triton.jit
def strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5):
    """Offset of linear (row-major) index ``idx`` in an array of sizes (*, s1..s5) with strides t0..t5."""
    i5 = idx % s5
    idx = idx // s5
    i4 = idx % s4
    idx = idx // s4
    i3 = idx % s3
    idx = idx // s3
    i2 = idx % s2
    idx = idx // s2
    i1 = idx % s1
    i0 = idx // s1
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4 + i5 * t5
