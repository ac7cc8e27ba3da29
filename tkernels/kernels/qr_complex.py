"""Householder QR of a batch of small complex matrices: ``cqr_kernel``, one program per matrix (the complex
counterpart of ``qr_kernel`` in ``qr.py``, LAPACK's zgeqrf/zungqr conventions).

The host (``tkernels/backends/triton/linalg_qr.py``) passes each complex ``M x N`` matrix through its real pair
view (``view_as_real``: element ``(r, c)`` is the two words ``x[r sr + c sc]`` and ``x[r sr + c sc + 1]``, the
strides in real words). The kernel copies it, divided by ``max(|re a_ij|, |im a_ij|)``, into a column-major
scratch of two planes (``w[b, 0, j, :]`` the real parts of column ``j``, ``w[b, 1, j, :]`` the imaginary ones) and,
for each of the ``K = min(M, N)`` columns ``j``, forms zlarfg's reflector::

    alpha = w[j, j] (complex),  xnorm = |w[j, j+1:]|,  beta = -sign(Re alpha) |(alpha, xnorm)|  (real),
    tau = (beta - alpha) / beta,  v = (1, w[j, j+1:] / (alpha - beta))     (xnorm == 0 and Im alpha == 0: H = I)

(sign: Fortran's SIGN, by the sign bit: -0.0 counts as negative) so that ``H^H (alpha, x) = (beta, 0)`` with
``H = I - tau v v^H``: R's diagonal is real, as LAPACK's (and NumPy's and PyTorch's).
``H^H = I - conj(tau) v v^H`` is applied to the columns right of ``j`` (one dot product
``v^H a_c`` and one update walk each, ``BLOCK_R`` rows at a time); ``v`` stays below the diagonal, ``beta`` on it
and ``tau`` in a scratch. Q (``QC`` = K or M columns) is ``H_0 ... H_{K-1}`` applied to the first ``QC`` columns
of the identity, backwards (zungqr's order). Cost: 4 real multiply-adds per complex one, else as ``qr_kernel``.
Non-finite input gives NaN in the results (no check on the device).
"""

import triton
import triton.language as tl

from .strided import strided_offset

_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max


@triton.jit(do_not_specialize=["M", "N", "K", "QC", "RR"])
def cqr_kernel(x_ptr, w_ptr, tau_ptr, q_ptr, r_ptr, M, N, K, QC, RR, stride_xr, stride_xc,
               bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
               WANT_Q: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr):
    """Complex matrix ``pid`` (real pair view ``x_ptr``, strides in real words) into ``r_ptr`` (the pair view of a
    contiguous ``RR x N`` matrix, RR = K or M rows; zeros below the diagonal) and, when ``WANT_Q``, ``q_ptr``
    (contiguous ``M x QC``, pair view); ``w_ptr``: a ``2 x N x M`` real scratch per matrix (real and imaginary
    planes), ``tau_ptr``: ``2 K`` per matrix (the module docstring)."""
    if F64:
        zero = tl.zeros([BLOCK_R], tl.float64)
    else:
        zero = tl.zeros([BLOCK_R], tl.float32)
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    plane = N * M
    w_re = w_ptr + pid * 2 * plane
    w_im = w_re + plane
    t_base = tau_ptr + pid * 2 * K
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    # the matrix / max(|re|, |im|) into the two planes (R is scaled back, Q does not depend on the scale)
    big = zero
    for c in range(0, N):
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            p = x_base + c * stride_xc + r * stride_xr
            a = tl.load(p, mask=r < M, other=0).to(zero.dtype)
            b = tl.load(p + 1, mask=r < M, other=0).to(zero.dtype)
            big = tl.maximum(big, tl.maximum(tl.abs(a), tl.abs(b)))
    amax = tl.reduce(big, 0, _MAX)
    scale = tl.where((amax > 0) & (amax < float("inf")), amax, 1.0)
    for c in range(0, N):
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            p = x_base + c * stride_xc + r * stride_xr
            a = tl.load(p, mask=r < M, other=0).to(zero.dtype)
            b = tl.load(p + 1, mask=r < M, other=0).to(zero.dtype)
            tl.store(w_re + c * M + r, a / scale, mask=r < M)
            tl.store(w_im + c * M + r, b / scale, mask=r < M)
    tl.debug_barrier()
    for j in range(0, K):
        cre = w_re + j * M
        cim = w_im + j * M
        sq = zero
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            m = (r > j) & (r < M)
            a = tl.load(cre + r, mask=m, other=0)
            b = tl.load(cim + r, mask=m, other=0)
            sq += a * a + b * b
        xn2 = tl.reduce(sq, 0, _SUM)
        ar = tl.load(cre + j)
        ai = tl.load(cim + j)
        if F64:
            nrm = tl.sqrt(ar * ar + ai * ai + xn2)
        else:
            nrm = tl.sqrt_rn(ar * ar + ai * ai + xn2)
        # -sign(Re alpha) with Fortran's SIGN: the sign bit (-0.0, as in 1j * x for x < 0, gives a positive beta)
        if F64:
            neg = ar.to(tl.int64, bitcast=True) < 0
        else:
            neg = ar.to(tl.int32, bitcast=True) < 0
        beta = tl.where(neg, nrm, -nrm)
        reflect = (xn2 > 0) | (ai != 0)
        bsafe = tl.where(reflect, beta, 1.0)
        tr = tl.where(reflect, (beta - ar) / bsafe, 0.0)
        ti = tl.where(reflect, -ai / bsafe, 0.0)
        # 1 / (alpha - beta) = conj(d) / |d|^2 with d = (ar - beta, ai)
        dr = ar - beta
        den = tl.where(reflect, dr * dr + ai * ai, 1.0)
        ir = tl.where(reflect, dr / den, 0.0)
        ii = tl.where(reflect, -ai / den, 0.0)
        for r0 in range(0, M, BLOCK_R):
            r = r0 + rows
            m = (r > j) & (r < M)
            a = tl.load(cre + r, mask=m, other=0)
            b = tl.load(cim + r, mask=m, other=0)
            tl.store(cre + r, a * ir - b * ii, mask=m)
            tl.store(cim + r, a * ii + b * ir, mask=m)
        tl.store(cre + j, tl.where(reflect, beta, ar))
        tl.store(cim + j, tl.where(reflect, 0.0, ai))
        tl.store(t_base + 2 * j, tr)
        tl.store(t_base + 2 * j + 1, ti)
        tl.debug_barrier()
        for c in range(j + 1, N):
            ore = w_re + c * M
            oim = w_im + c * M
            dre = zero
            dim = zero
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                m = (r >= j) & (r < M)
                vr = tl.where(r == j, 1.0, tl.load(cre + r, mask=m & (r > j), other=0))
                vi = tl.load(cim + r, mask=m & (r > j), other=0)
                a = tl.load(ore + r, mask=m, other=0)
                b = tl.load(oim + r, mask=m, other=0)
                dre += vr * a + vi * b  # conj(v) a
                dim += vr * b - vi * a
            sr = tl.reduce(dre, 0, _SUM)
            si = tl.reduce(dim, 0, _SUM)
            fr = tr * sr + ti * si  # f = conj(tau) (v^H a)
            fi = tr * si - ti * sr
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                m = (r >= j) & (r < M)
                vr = tl.where(r == j, 1.0, tl.load(cre + r, mask=m & (r > j), other=0))
                vi = tl.load(cim + r, mask=m & (r > j), other=0)
                a = tl.load(ore + r, mask=m, other=0)
                b = tl.load(oim + r, mask=m, other=0)
                tl.store(ore + r, a - (fr * vr - fi * vi), mask=m)
                tl.store(oim + r, b - (fr * vi + fi * vr), mask=m)
            tl.debug_barrier()
    # R: the upper triangle of the first RR rows
    r_base = r_ptr + pid * 2 * RR * N
    for c in range(0, N):
        for r0 in range(0, RR, BLOCK_R):
            r = r0 + rows
            m = r < RR
            keep = m & (r <= c) & (r < M)
            a = tl.load(w_re + c * M + r, mask=keep, other=0)
            b = tl.load(w_im + c * M + r, mask=keep, other=0)
            tl.store(r_base + 2 * (r * N + c), (a * scale).to(r_ptr.dtype.element_ty), mask=m)
            tl.store(r_base + 2 * (r * N + c) + 1, (b * scale).to(r_ptr.dtype.element_ty), mask=m)
    if WANT_Q:
        # Q = H_0 ... H_{K-1} I[:, :QC], backwards, written straight into the output (pair view)
        q_base = q_ptr + pid * 2 * M * QC
        for c in range(0, QC):
            for r0 in range(0, M, BLOCK_R):
                r = r0 + rows
                tl.store(q_base + 2 * (r * QC + c), tl.where(r == c, 1.0, zero).to(q_ptr.dtype.element_ty),
                         mask=r < M)
                tl.store(q_base + 2 * (r * QC + c) + 1, zero.to(q_ptr.dtype.element_ty), mask=r < M)
        tl.debug_barrier()
        for jj in range(0, K):
            j = K - 1 - jj
            cre = w_re + j * M
            cim = w_im + j * M
            tr = tl.load(t_base + 2 * j)
            ti = tl.load(t_base + 2 * j + 1)
            for c in range(j, QC):
                dre = zero
                dim = zero
                for r0 in range(0, M, BLOCK_R):
                    r = r0 + rows
                    m = (r >= j) & (r < M)
                    vr = tl.where(r == j, 1.0, tl.load(cre + r, mask=m & (r > j), other=0))
                    vi = tl.load(cim + r, mask=m & (r > j), other=0)
                    p = q_base + 2 * (r * QC + c)
                    a = tl.load(p, mask=m, other=0).to(zero.dtype)
                    b = tl.load(p + 1, mask=m, other=0).to(zero.dtype)
                    dre += vr * a + vi * b
                    dim += vr * b - vi * a
                sr = tl.reduce(dre, 0, _SUM)
                si = tl.reduce(dim, 0, _SUM)
                fr = tr * sr - ti * si  # f = tau (v^H q)
                fi = tr * si + ti * sr
                for r0 in range(0, M, BLOCK_R):
                    r = r0 + rows
                    m = (r >= j) & (r < M)
                    vr = tl.where(r == j, 1.0, tl.load(cre + r, mask=m & (r > j), other=0))
                    vi = tl.load(cim + r, mask=m & (r > j), other=0)
                    p = q_base + 2 * (r * QC + c)
                    a = tl.load(p, mask=m, other=0).to(zero.dtype)
                    b = tl.load(p + 1, mask=m, other=0).to(zero.dtype)
                    tl.store(p, (a - (fr * vr - fi * vi)).to(q_ptr.dtype.element_ty), mask=m)
                    tl.store(p + 1, (b - (fr * vi + fi * vr)).to(q_ptr.dtype.element_ty), mask=m)
                tl.debug_barrier()
