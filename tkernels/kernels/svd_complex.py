"""Singular values (and vectors) of a batch of complex matrices by one-sided Jacobi: ``csvd_kernel``, one program
per matrix (the complex counterpart of ``svd_kernel`` in ``svd.py``; read that module's docstring first).

The host (``tkernels/backends/triton/linalg_svd.py``) passes each matrix through its real pair view (element
``(r, c)`` the words ``x[r sr + c sc]`` and ``+ 1``, strides in real words), viewed as ``R x C`` as for real
input (a wide matrix read transposed, not conjugated). The scratch holds the columns in two planes (real parts
``w[b, 0, j, :]``, imaginary parts ``w[b, 1, j, :]``; ``V`` alike). For a pair ``(p, q)``::

    alpha = |a_p|^2,  beta = |a_q|^2,  gamma = a_p^H a_q = |gamma| e^{i phi}

and the rotation is the real one of ``svd_kernel`` for ``(alpha, beta, |gamma|)`` applied to ``a_p`` and
``e^{-i phi} a_q`` (whose product with ``a_p`` is the real ``|gamma|``): afterwards ``a_p^H a_q = 0``. The same
unitary 2 x 2 transform goes to V's columns, so ``A V = W`` with orthogonal columns and V unitary. Then
``A = U diag(S) V^H`` with ``S_j = |w_j|`` and ``U``'s columns ``w_j / S_j``: the kernel writes W's normalized
columns as they are and V's columns conjugated (for ``A`` itself those are U's columns and Vh's rows; for a wide
matrix read as ``A^T``, ``A = conj(V) S (W / S)^T``: Vh's rows and U's columns). Where ``S_j`` is 0 or noise
``svd_complete_kernel`` (``svd_complete.py``, ``COMPLEX``) completes W's normalized columns, as for real input.
"""

import triton
import triton.language as tl

from .strided import strided_offset

MAX_SWEEPS = tl.constexpr(30)
TOL_F32 = tl.constexpr(2.0**-23)
TOL_F64 = tl.constexpr(2.0**-52)
_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max


@triton.jit(do_not_specialize=["R", "C"])
def csvd_kernel(x_ptr, w_ptr, v_ptr, sv_ptr, s_ptr, wv_ptr, vv_ptr, R, C, K, stride_xr, stride_xc,
                bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
                s_batch, wv_batch, wv_vec, wv_el, vv_batch, vv_vec, vv_el,
                WANT_VECTORS: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr):
    """``svd_kernel``'s contract for complex input: ``x_ptr``, ``wv_ptr`` and ``vv_ptr`` are real pair views
    (every stride in real words; a vector element is two words), ``w_ptr`` a ``2 x C x R`` and ``v_ptr`` a
    ``2 x C x C`` real scratch per matrix; the right vectors are written conjugated (the module docstring)."""
    if F64:
        zero = tl.zeros([BLOCK_R], tl.float64)
        tol = TOL_F64
    else:
        zero = tl.zeros([BLOCK_R], tl.float32)
        tol = TOL_F32
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    w_re = w_ptr + pid * 2 * C * R
    w_im = w_re + C * R
    v_re = v_ptr + pid * 2 * C * C
    v_im = v_re + C * C
    sv_base = sv_ptr + pid * C
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    # 1. the largest |re|, |im|, then the matrix / amax into the planes, column by column; V = I
    big = zero
    for j in range(0, C):
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            p = x_base + j * stride_xc + r * stride_xr
            a = tl.load(p, mask=r < R, other=0).to(zero.dtype)
            b = tl.load(p + 1, mask=r < R, other=0).to(zero.dtype)
            big = tl.maximum(big, tl.maximum(tl.abs(a), tl.abs(b)))
    amax = tl.reduce(big, 0, _MAX)
    scale = tl.where((amax > 0) & (amax < float("inf")), amax, 1.0)
    for j in range(0, C):
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            p = x_base + j * stride_xc + r * stride_xr
            a = tl.load(p, mask=r < R, other=0).to(zero.dtype)
            b = tl.load(p + 1, mask=r < R, other=0).to(zero.dtype)
            tl.store(w_re + j * R + r, a / scale, mask=r < R)
            tl.store(w_im + j * R + r, b / scale, mask=r < R)
        if WANT_VECTORS:
            for i0 in range(0, C, BLOCK_R):
                i = i0 + rows
                tl.store(v_re + j * C + i, tl.where(i == j, 1.0, zero), mask=i < C)
                tl.store(v_im + j * C + i, zero, mask=i < C)
    tl.debug_barrier()
    # 2. sweeps of rotations until no pair needs one
    if F64:
        tol = tol * tl.sqrt(R.to(tl.float64))
        floor = tol * tl.sqrt(C.to(tl.float64))
    else:
        tol = tol * tl.sqrt_rn(R.to(tl.float32))
        floor = tol * tl.sqrt_rn(C.to(tl.float32))
    sweep = 0
    rotated = 1
    while (sweep < MAX_SWEEPS) & (rotated > 0):
        rotated = 0
        for p in range(0, C - 1):
            pr = w_re + p * R
            pi = w_im + p * R
            for q in range(p + 1, C):
                qr = w_re + q * R
                qi = w_im + q * R
                alpha = zero
                beta = zero
                gre = zero
                gim = zero
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    rm = r < R
                    a = tl.load(pr + r, mask=rm, other=0)
                    b = tl.load(pi + r, mask=rm, other=0)
                    c_ = tl.load(qr + r, mask=rm, other=0)
                    d = tl.load(qi + r, mask=rm, other=0)
                    alpha += a * a + b * b
                    beta += c_ * c_ + d * d
                    gre += a * c_ + b * d  # conj(a_p) a_q
                    gim += a * d - b * c_
                al = tl.reduce(alpha, 0, _SUM)
                be = tl.reduce(beta, 0, _SUM)
                gr = tl.reduce(gre, 0, _SUM)
                gi = tl.reduce(gim, 0, _SUM)
                ag = tl.maximum(tl.abs(gr), tl.abs(gi))
                lo = tl.minimum(tl.abs(gr), tl.abs(gi))
                ratio = lo / tl.where(ag > 0, ag, 1.0)
                if F64:
                    na = tl.sqrt(al)
                    nb = tl.sqrt(be)
                    ga = ag * tl.sqrt(1.0 + ratio * ratio)
                else:
                    na = tl.sqrt_rn(al)
                    nb = tl.sqrt_rn(be)
                    ga = ag * tl.sqrt_rn(1.0 + ratio * ratio)
                if (ga > tol * na * nb) & (na > floor) & (nb > floor):
                    er = gr / ga  # e^{i phi}
                    ei = gi / ga
                    zeta = (be - al) / (2.0 * ga)
                    az = tl.abs(zeta)
                    u = tl.where(az > 1.0, 1.0 / az, az)
                    vv = tl.where(az > 1.0, az, 1.0)
                    if F64:
                        root = tl.sqrt(1.0 + u * u) * vv
                    else:
                        root = tl.sqrt_rn(1.0 + u * u) * vv
                    t = tl.where(zeta < 0, -1.0, 1.0) / (az + root)
                    if F64:
                        c = 1.0 / tl.sqrt(1.0 + t * t)
                    else:
                        c = 1.0 / tl.sqrt_rn(1.0 + t * t)
                    s = c * t
                    for r0 in range(0, R, BLOCK_R):
                        r = r0 + rows
                        rm = r < R
                        a = tl.load(pr + r, mask=rm, other=0)
                        b = tl.load(pi + r, mask=rm, other=0)
                        c_ = tl.load(qr + r, mask=rm, other=0)
                        d = tl.load(qi + r, mask=rm, other=0)
                        yr = er * c_ + ei * d  # e^{-i phi} a_q
                        yi = er * d - ei * c_
                        tl.store(pr + r, c * a - s * yr, mask=rm)
                        tl.store(pi + r, c * b - s * yi, mask=rm)
                        tl.store(qr + r, s * a + c * yr, mask=rm)
                        tl.store(qi + r, s * b + c * yi, mask=rm)
                    if WANT_VECTORS:
                        for i0 in range(0, C, BLOCK_R):
                            i = i0 + rows
                            im = i < C
                            a = tl.load(v_re + p * C + i, mask=im, other=0)
                            b = tl.load(v_im + p * C + i, mask=im, other=0)
                            c_ = tl.load(v_re + q * C + i, mask=im, other=0)
                            d = tl.load(v_im + q * C + i, mask=im, other=0)
                            yr = er * c_ + ei * d
                            yi = er * d - ei * c_
                            tl.store(v_re + p * C + i, c * a - s * yr, mask=im)
                            tl.store(v_im + p * C + i, c * b - s * yi, mask=im)
                            tl.store(v_re + q * C + i, s * a + c * yr, mask=im)
                            tl.store(v_im + q * C + i, s * b + c * yi, mask=im)
                    rotated += 1
                tl.debug_barrier()
        sweep += 1
    # 3. the column norms (scaled) into the scratch
    for j in range(0, C):
        sq = zero
        for r0 in range(0, R, BLOCK_R):
            r = r0 + rows
            a = tl.load(w_re + j * R + r, mask=r < R, other=0)
            b = tl.load(w_im + j * R + r, mask=r < R, other=0)
            sq += a * a + b * b
        if F64:
            nrm = tl.sqrt(tl.reduce(sq, 0, _SUM))
        else:
            nrm = tl.sqrt_rn(tl.reduce(sq, 0, _SUM))
        tl.store(sv_base + j, nrm)
    tl.debug_barrier()
    # 4. selection in descending order (NaN first); a taken norm is marked below every other
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
        src = bi.to(tl.int64)
        if k < K:
            tl.store(s_base + k, (sval * scale).to(s_ptr.dtype.element_ty))
            if WANT_VECTORS:
                inv = tl.where(sval == 0, 0.0, 1.0 / sval)
                dst = wv_base + k * wv_vec
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    a = tl.load(w_re + src * R + r, mask=r < R, other=0)
                    b = tl.load(w_im + src * R + r, mask=r < R, other=0)
                    tl.store(dst + r * wv_el, (a * inv).to(wv_ptr.dtype.element_ty), mask=r < R)
                    tl.store(dst + r * wv_el + 1, (b * inv).to(wv_ptr.dtype.element_ty), mask=r < R)
        if WANT_VECTORS:
            dst = vv_base + k * vv_vec
            for i0 in range(0, C, BLOCK_R):
                i = i0 + rows
                a = tl.load(v_re + src * C + i, mask=i < C, other=0)
                b = tl.load(v_im + src * C + i, mask=i < C, other=0)
                tl.store(dst + i * vv_el, a.to(vv_ptr.dtype.element_ty), mask=i < C)
                tl.store(dst + i * vv_el + 1, (-b).to(vv_ptr.dtype.element_ty), mask=i < C)
