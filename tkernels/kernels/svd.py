"""Singular values (and vectors) of a batch of matrices by one-sided Jacobi (Hestenes): ``svd_kernel``.

One program per matrix. The host (``tkernels/backends/triton/linalg_svd.py``: ``svd``, ``svdvals``, and through
them ``matrix_norm``'s 'nuc', 2, -2) views each matrix as ``R`` rows and ``C`` columns (for the singular values
alone the longer side as rows; a wide matrix is read transposed: swapped strides, no copy), so that Jacobi works
on the ``C (C - 1) / 2`` column pairs.

1. ``amax = max |a_ij|``; the matrix is copied, divided by ``amax``, into a column-major fp32/fp64 scratch
   ``w[b, j, :]`` (one contiguous column per ``j``; halves compute in fp32, float64 in float64). The scaling
   keeps the sums of squares below clear of overflow and underflow; the results are scaled back.
2. Sweeps over the pairs ``(p, q)`` in cyclic order: ``alpha = |a_p|^2``, ``beta = |a_q|^2``,
   ``gamma = a_p . a_q`` in one walk down the two columns (``BLOCK_R`` rows at a time, so any ``R`` works);
   when ``|gamma| > TOL * sqrt(R) * |a_p| |a_q|`` the rotation that makes the pair orthogonal is applied
   (Demmel, Applied Numerical Linear Algebra, Alg. 5.5)::

       zeta = (beta - alpha) / (2 gamma),  t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)),
       c = 1 / sqrt(1 + t^2),  s = c t,    a_p <- c a_p - s a_q,  a_q <- s a_p + c a_q

   Sweeps stop when one rotates no pair, or after ``MAX_SWEEPS`` (quadratic convergence: 5-10 sweeps on
   random matrices). Column norms then are the singular values, small ones to high relative accuracy.
3. The column norms sorted in descending order; the vectors normalized and written (``svd_kernel``'s docstring).
4. (A second kernel, ``svd_complete.py``.) Where singular values are 0 or noise, W's normalized columns are zero
   or not orthogonal to the others; ``svd_complete_kernel`` makes them an orthonormal completion.

Non-finite inputs give NaN (or inf) instead of the NumPy backend's error (a check on the host): no rotation of a
NaN column compares true, and the sweeps end. Cost: ``C^2 / 2`` pairs a sweep, each two walks down ``R`` rows.
"""

import triton
import triton.language as tl

from .strided import strided_offset

MAX_SWEEPS = tl.constexpr(30)
# BLOCK_R on a GPU: short columns (up to 64 rows) and the rest; each is a compiled variant (both in the AOT table)
GPU_BLOCKS = (64, 512)
# the orthogonality threshold per unit of sqrt(R) (rounding in a dot product of R terms): twice the unit roundoff
TOL_F32 = tl.constexpr(2.0**-23)
TOL_F64 = tl.constexpr(2.0**-52)


# Square roots are written inline, correctly rounded (``tl.sqrt`` is approximate in fp32, ``tl.sqrt_rn`` takes
# fp32 only), and reductions by ``tl.reduce`` with the standard combines: a call of a @jit function (a helper,
# ``tl.sum``, ``tl.max``) costs ~5 ms in the interpreter, for a few operations.
_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max


@triton.jit(do_not_specialize=["R", "C"])
def svd_kernel(x_ptr, w_ptr, v_ptr, sv_ptr, s_ptr, wv_ptr, vv_ptr, R, C, K, stride_xr, stride_xc,
               bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
               s_batch, wv_batch, wv_vec, wv_el, vv_batch, vv_vec, vv_el,
               WANT_VECTORS: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr):
    """The singular values (and vectors) of matrix ``pid``, viewed as ``R x C`` (``x_ptr``, strides
    ``stride_xr``/``stride_xc``), sorted in descending order: the scaling and sweeps of the module docstring,
    the rotations also applied to the columns of ``V`` (``v_ptr``: a ``C x C`` scratch starting as the identity)
    when ``WANT_VECTORS``. Then ``A V = W`` with orthogonal columns: ``S_j = |w_j|``, the left vectors
    ``w_j / S_j`` (zero where ``S_j = 0``) and the right ones ``v_j``. A selection loop over the column norms
    (``sv_ptr``: a ``C`` scratch) writes, for the ``k``-th largest: ``S[k]`` (k < K) at ``s_ptr``, the left
    vector (k < K) as vector ``k`` of ``wv_ptr`` (elements ``wv_el`` apart, vectors ``wv_vec`` apart) and the
    right vector (every k < C) as vector ``k`` of ``vv_ptr``; the host maps them to U and Vh (a wide matrix is
    read transposed, and then U and V swap roles). ``C`` may exceed ``R`` (full factors): columns beyond the rank
    converge to zero, and V stays orthogonal (a full basis). Columns whose norm falls to the rounding noise of the
    largest are not rotated (noise against noise never converges): singular values below ``~eps sqrt(RC)``
    times ``max |a_ij|`` are noise, and their left vectors arbitrary unit (or zero) vectors, until the host's
    ``svd_complete_kernel`` (``svd_complete.py``) replaces them by an orthonormal completion."""
    if F64:
        zero = tl.zeros([BLOCK_R], tl.float64)
        tol = TOL_F64
    else:
        zero = tl.zeros([BLOCK_R], tl.float32)
        tol = TOL_F32
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    w_base = w_ptr + pid * C * R
    v_base = v_ptr + pid * C * C
    sv_base = sv_ptr + pid * C
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    # 1. the largest |a_ij|, then the matrix / amax into the scratch, column by column; V = I
    big = zero
    x_col = x_base
    for _j in range(0, C):
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            a = tl.load(x_col + r * stride_xr, mask=r < R, other=0).to(zero.dtype)
            big = tl.maximum(big, tl.abs(a))
        x_col += stride_xc
    amax = tl.reduce(big, 0, _MAX)
    scale = tl.where((amax > 0) & (amax < float("inf")), amax, 1.0)
    x_col = x_base
    w_col = w_base
    v_col = v_base
    for j in range(0, C):
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            a = tl.load(x_col + r * stride_xr, mask=r < R, other=0).to(zero.dtype)
            tl.store(w_col + r, a / scale, mask=r < R)
        if WANT_VECTORS:
            for i0 in range(0, C, BLOCK_R):
                i = i0 + rows
                tl.store(v_col + i, tl.where(i == j, 1.0, zero), mask=i < C)
        x_col += stride_xc
        w_col += R
        v_col += C
    tl.debug_barrier()
    # 2. sweeps of rotations until no pair needs one (V's columns rotate with W's)
    if F64:
        tol = tol * tl.sqrt(R.to(tl.float64))
    else:
        tol = tol * tl.sqrt_rn(R.to(tl.float32))
    # columns at the rounding noise of the largest (>= 1 after the scaling) are left alone: rotating noise
    # against noise never converges (the C - R columns of full factors, rank-deficient inputs)
    if F64:
        floor = tol * tl.sqrt(C.to(tl.float64))
    else:
        floor = tol * tl.sqrt_rn(C.to(tl.float32))
    sweep = 0
    rotated = 1
    while (sweep < MAX_SWEEPS) & (rotated > 0):
        rotated = 0
        col_p = w_base
        vp = v_base
        for p in range(0, C - 1):
            col_q = col_p + R
            vq = vp + C
            for _q in range(p + 1, C):
                alpha = zero
                beta = zero
                gamma = zero
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    rm = r < R
                    ap = tl.load(col_p + r, mask=rm, other=0)
                    aq = tl.load(col_q + r, mask=rm, other=0)
                    alpha += ap * ap
                    beta += aq * aq
                    gamma += ap * aq
                al = tl.reduce(alpha, 0, _SUM)
                be = tl.reduce(beta, 0, _SUM)
                ga = tl.reduce(gamma, 0, _SUM)
                if F64:
                    na = tl.sqrt(al)
                    nb = tl.sqrt(be)
                else:
                    na = tl.sqrt_rn(al)
                    nb = tl.sqrt_rn(be)
                if (tl.abs(ga) > tol * na * nb) & (na > floor) & (nb > floor):
                    zeta = (be - al) / (2.0 * ga)
                    az = tl.abs(zeta)
                    u = tl.where(az > 1.0, 1.0 / az, az)
                    v = tl.where(az > 1.0, az, 1.0)
                    if F64:
                        root = tl.sqrt(1.0 + u * u) * v
                    else:
                        root = tl.sqrt_rn(1.0 + u * u) * v
                    t = tl.where(zeta < 0, -1.0, 1.0) / (az + root)
                    if F64:
                        c = 1.0 / tl.sqrt(1.0 + t * t)
                    else:
                        c = 1.0 / tl.sqrt_rn(1.0 + t * t)
                    s = c * t
                    for r0 in range(0, R, BLOCK_R):
                        r = r0 + rows
                        rm = r < R
                        ap = tl.load(col_p + r, mask=rm, other=0)
                        aq = tl.load(col_q + r, mask=rm, other=0)
                        tl.store(col_p + r, c * ap - s * aq, mask=rm)
                        tl.store(col_q + r, s * ap + c * aq, mask=rm)
                    if WANT_VECTORS:
                        for i0 in range(0, C, BLOCK_R):
                            i = i0 + rows
                            im = i < C
                            xp = tl.load(vp + i, mask=im, other=0)
                            xq = tl.load(vq + i, mask=im, other=0)
                            tl.store(vp + i, c * xp - s * xq, mask=im)
                            tl.store(vq + i, s * xp + c * xq, mask=im)
                    rotated += 1
                tl.debug_barrier()
                col_q += R
                vq += C
            col_p += R
            vp += C
        sweep += 1
    # 3. the column norms (scaled) into the scratch
    w_col = w_base
    for j in range(0, C):
        sq = zero
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            a = tl.load(w_col + r, mask=r < R, other=0)
            sq += a * a
        w_col += R
        if F64:
            nrm = tl.sqrt(tl.reduce(sq, 0, _SUM))
        else:
            nrm = tl.sqrt_rn(tl.reduce(sq, 0, _SUM))
        tl.store(sv_base + j, nrm)
    tl.debug_barrier()
    # 4. selection in descending order (NaN first); a taken norm is marked -1
    s_base = s_ptr + pid * s_batch
    wv_base = wv_ptr + pid * wv_batch
    vv_base = vv_ptr + pid * vv_batch
    start = tl.reduce(zero, 0, _SUM) - 0.5
    for k in range(0, C):
        best = start
        bi = k * 0
        for j in range(0, C):
            val = tl.load(sv_base + j)
            key = tl.where(val != val, float("inf"), val)
            take = key > best
            bi = tl.where(take, j, bi)
            best = tl.where(take, key, best)
        sval = tl.load(sv_base + bi)
        tl.debug_barrier()
        tl.store(sv_base + bi, start - 0.5)
        tl.debug_barrier()
        if k < K:
            tl.store(s_base + k, (sval * scale).to(s_ptr.dtype.element_ty))
            if WANT_VECTORS:
                inv = tl.where(sval == 0, 0.0, 1.0 / sval)
                src = w_base + bi.to(tl.int64) * R
                dst = wv_base + k * wv_vec
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    a = tl.load(src + r, mask=r < R, other=0)
                    tl.store(dst + r * wv_el, (a * inv).to(wv_ptr.dtype.element_ty), mask=r < R)
        if WANT_VECTORS:
            src = v_base + bi.to(tl.int64) * C
            dst = vv_base + k * vv_vec
            for i0 in range(0, C, BLOCK_R):
                i = i0 + rows
                a = tl.load(src + i, mask=i < C, other=0)
                tl.store(dst + i * vv_el, a.to(vv_ptr.dtype.element_ty), mask=i < C)
