"""Householder QR of a batch of small matrices: ``qr_kernel``, one program per matrix.

The host (``tkernels/backends/triton/linalg_qr.py``) passes each ``M x N`` matrix by its strides. The kernel
copies it, divided by ``max |a_ij|``, into a column-major fp32/fp64 scratch ``w[b, j, :]`` (halves compute in
fp32; R is scaled back at the end) and, for each of the
``K = min(M, N)`` columns ``j``, forms LAPACK's reflector (geqrf's convention, so R matches NumPy's signs)::

    alpha = w[j, j],  xnorm = |w[j, j+1:]|,  beta = -sign(alpha) hypot(alpha, xnorm),
    tau = (beta - alpha) / beta,  v = (1, w[j, j+1:] / (alpha - beta))      (xnorm == 0: tau = 0, H = I)

applies ``H = I - tau v v^T`` to the columns right of ``j`` (one dot product and one update walk each, in
``BLOCK_R`` rows) and keeps ``v`` below the diagonal, ``beta`` on it and ``tau`` in a scratch. R is the upper
triangle of the result; Q (``QC`` = K or M columns) is ``H_0 ... H_{K-1}`` applied to the first ``QC`` columns
of the identity, accumulated backwards (LAPACK's orgqr order). Cost: ``K N`` column walks for R and ``K QC``
for Q, each ``M / BLOCK_R`` tiles. Non-finite input gives NaN in the results (no check on the device).
"""

import triton
import triton.language as tl

from .strided import strided_offset

GPU_BLOCKS = (64, 512)  # BLOCK_R on a GPU: short columns and the rest (both variants in the AOT table)
_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max


@triton.jit(do_not_specialize=["M", "N", "K", "QC", "RR"])
def qr_kernel(x_ptr, w_ptr, tau_ptr, q_ptr, r_ptr, M, N, K, QC, RR, stride_xr, stride_xc,
              bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
              WANT_Q: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr):
    """Matrix ``pid`` (``x_ptr``, strides ``stride_xr``/``stride_xc``) into ``r_ptr`` (a contiguous ``RR x N``
    matrix, RR = K or M rows; zeros below the diagonal) and, when ``WANT_Q``, ``q_ptr`` (contiguous ``M x QC``);
    ``w_ptr``: an ``N x M`` fp scratch per matrix, ``tau_ptr``: ``K`` per matrix (the module docstring)."""
    if F64:
        zero = tl.zeros([BLOCK_R], tl.float64)
    else:
        zero = tl.zeros([BLOCK_R], tl.float32)
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    w_base = w_ptr + pid * N * M
    t_base = tau_ptr + pid * K
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    # the matrix / max|a_ij| into the column-major scratch (the sums of squares stay clear of overflow and
    # underflow; R is scaled back, Q does not depend on the scale)
    big = zero
    for c in range(0, N):
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            a = tl.load(x_base + c * stride_xc + r * stride_xr, mask=r < M, other=0).to(zero.dtype)
            big = tl.maximum(big, tl.abs(a))
    amax = tl.reduce(big, 0, _MAX)
    scale = tl.where((amax > 0) & (amax < float("inf")), amax, 1.0)
    for c in range(0, N):
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            a = tl.load(x_base + c * stride_xc + r * stride_xr, mask=r < M, other=0).to(zero.dtype)
            tl.store(w_base + c * M + r, a / scale, mask=r < M)
    tl.debug_barrier()
    for j in range(0, K):
        col = w_base + j * M
        sq = zero
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            a = tl.load(col + r, mask=(r > j) & (r < M), other=0)
            sq += a * a
        xn2 = tl.reduce(sq, 0, _SUM)
        alpha = tl.load(col + j)
        if F64:
            nrm = tl.sqrt(alpha * alpha + xn2)
        else:
            nrm = tl.sqrt_rn(alpha * alpha + xn2)
        # -sign(alpha) with Fortran's SIGN, as dgeqrf: the sign bit (a -0.0 alpha gives a positive beta)
        if F64:
            neg = alpha.to(tl.int64, bitcast=True) < 0
        else:
            neg = alpha.to(tl.int32, bitcast=True) < 0
        beta = tl.where(neg, nrm, -nrm)
        reflect = xn2 > 0
        tau = tl.where(reflect, (beta - alpha) / tl.where(reflect, beta, 1.0), 0.0)
        inv = tl.where(reflect, 1.0 / tl.where(reflect, alpha - beta, 1.0), 0.0)
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            m = (r > j) & (r < M)
            a = tl.load(col + r, mask=m, other=0)
            tl.store(col + r, a * inv, mask=m)
        tl.store(col + j, tl.where(reflect, beta, alpha))
        tl.store(t_base + j, tau)
        tl.debug_barrier()
        for c in range(j + 1, N):
            cc = w_base + c * M
            d = zero
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                m = (r >= j) & (r < M)
                v = tl.where(r == j, 1.0, tl.load(col + r, mask=m & (r > j), other=0))
                d += v * tl.load(cc + r, mask=m, other=0)
            f = tau * tl.reduce(d, 0, _SUM)
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                m = (r >= j) & (r < M)
                v = tl.where(r == j, 1.0, tl.load(col + r, mask=m & (r > j), other=0))
                a = tl.load(cc + r, mask=m, other=0)
                tl.store(cc + r, a - f * v, mask=m)
            tl.debug_barrier()
    # R: the upper triangle of the first RR rows
    r_base = r_ptr + pid * RR * N
    for c in range(0, N):
        for r0 in range(0, RR, BLOCK_R):
            r = r0 + rows
            m = r < RR
            a = tl.load(w_base + c * M + r, mask=m & (r <= c) & (r < M), other=0)
            tl.store(r_base + r * N + c, (a * scale).to(r_ptr.dtype.element_ty), mask=m)
    if WANT_Q:
        # Q = H_0 ... H_{K-1} I[:, :QC], backwards, written straight into the output (column c, rows apart QC)
        q_base = q_ptr + pid * M * QC
        for c in range(0, QC):
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                tl.store(q_base + r * QC + c, tl.where(r == c, 1.0, zero).to(q_ptr.dtype.element_ty),
                         mask=r < M)
        tl.debug_barrier()
        for jj in range(0, K):
            j = K - 1 - jj
            col = w_base + j * M
            tau = tl.load(t_base + j)
            for c in range(j, QC):
                d = zero
                for r0 in range(0, M, BLOCK_R):
                    r = r0 + rows
                    m = (r >= j) & (r < M)
                    v = tl.where(r == j, 1.0, tl.load(col + r, mask=m & (r > j), other=0))
                    d += v * tl.load(q_base + r * QC + c, mask=m, other=0).to(zero.dtype)
                f = tau * tl.reduce(d, 0, _SUM)
                for r0 in range(0, M, BLOCK_R):
                    r = r0 + rows
                    m = (r >= j) & (r < M)
                    v = tl.where(r == j, 1.0, tl.load(col + r, mask=m & (r > j), other=0))
                    a = tl.load(q_base + r * QC + c, mask=m, other=0).to(zero.dtype)
                    tl.store(q_base + r * QC + c, (a - f * v).to(q_ptr.dtype.element_ty), mask=m)
                tl.debug_barrier()
