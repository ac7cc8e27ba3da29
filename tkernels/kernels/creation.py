"""Ranges and triangles: the kernels behind ``arange``, ``linspace`` and ``tril``/``triu`` on cuda
(``eye`` is two fills: zeros, then ones on the diagonal view).

``range_kernel`` computes ``start + i * step`` in int64 (integer ranges) or in float64 (everything else, as
the NumPy backend does, then cast on store; ``linspace`` sets its last element to ``stop`` exactly, like
``np.linspace``). Float arguments come as int64 bit patterns of float64 values.
"""

import triton
import triton.language as tl

from .strided import strided_offset


@triton.jit(do_not_specialize=["start", "step", "last"])
def range_kernel(y_ptr, n, start, step, last, INT: tl.constexpr, SET_LAST: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    if INT:
        v = start + i * step
    else:
        v = i.to(tl.float64) * step.to(tl.int64).to(tl.float64, bitcast=True) + \
            start.to(tl.int64).to(tl.float64, bitcast=True)
        if SET_LAST:
            v = tl.where(i == n - 1, last.to(tl.int64).to(tl.float64, bitcast=True), v)
    if y_ptr.dtype.element_ty == tl.int1:
        out = v != 0
    else:
        out = v.to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + i, out, mask=mask)


@triton.jit
def tri_kernel(x_ptr, y_ptr, n, rows, cols, k, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
               UPPER: tl.constexpr, BLOCK: tl.constexpr):
    # y (contiguous, the shape of x) = x where col - row <= k (tril) or >= k (triu), else 0
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    c = i % cols
    r = (i // cols) % rows
    if UPPER:
        keep = c - r >= k
    else:
        keep = c - r <= k
    xo = strided_offset(i, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5)
    x = tl.load(x_ptr + xo, mask=mask & keep, other=0)
    tl.store(y_ptr + i, x, mask=mask)
