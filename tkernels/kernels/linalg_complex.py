"""Complex Cholesky, LU with partial pivoting, triangular solves and the blocked LU's panel: the complex forms
of ``linalg_lu.py`` and ``linalg_blocked.py`` (one program per matrix, the matrix as one ``BLOCK_N x BLOCK_N``
tile; the panel in place on global memory), for complex64 (fp32 pairs) and complex128 (fp64 pairs).

Operands are the real pair views of the complex arrays (``view_as_real``): an element is two real words, the
real part at the element's address and the imaginary part one word after it; every stride and offset handed in
is in real words. Each tile is kept as two real tiles (``*r``, ``*i``) and the arithmetic is written out on them.

The choices that make the results LAPACK's (zpotrf, zgetrf, ztrsm):
- Cholesky: ``A = L L^H``; only the real part of a diagonal element is read and the factor's diagonal is real;
  the upper factor is ``L^H`` (stored conjugated and transposed).
- LU pivots on the largest ``|re| + |im|`` (LAPACK's izamax, so the pivots are zgetrf's), the first one on ties;
  a NaN is taken as the pivot; ``info`` is the first pivot that is exactly zero (both parts), whose column is then
  not scaled.
- Divisions (the multipliers, the solves' diagonal) by Smith's algorithm: no overflow from ``|d|^2``.
"""

import triton
import triton.language as tl

from .strided import strided_offset

_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min


@triton.jit
def _cdiv(xr, xi, dr, di):
    """``x / d`` for complex values (Smith's algorithm)."""
    big = tl.abs(dr) >= tl.abs(di)
    t = tl.where(big, di / tl.where(dr == 0, 1.0, dr), dr / tl.where(di == 0, 1.0, di))
    den = tl.where(big, dr + di * t, dr * t + di)
    qr = tl.where(big, xr + xi * t, xr * t + xi) / den
    qi = tl.where(big, xi - xr * t, xi * t - xr) / den
    return qr, qi


@triton.jit
def _pick(tr, ti, sel, axis: tl.constexpr):
    """The entries of the complex tile where ``sel`` holds, summed along ``axis`` (a row, a column, an element)."""
    return tl.reduce(tl.where(sel, tr, 0.0), axis, _SUM), tl.reduce(tl.where(sel, ti, 0.0), axis, _SUM)


@triton.jit(do_not_specialize=["N"])
def cholesky_c_kernel(x_ptr, out_ptr, info_ptr, N, sx_r, sx_c, so_r, so_c,
                      bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
                      CONJ: tl.constexpr, F64: tl.constexpr, BLOCK_N: tl.constexpr):
    """The lower Cholesky factor ``L`` (``A = L L^H``, A Hermitian: only its lower triangle is read, the real
    part of its diagonal) of matrix ``pid`` into ``out_ptr`` (the pair view of contiguous ``N x N`` complex
    matrices, element strides ``so_r``/``so_c`` in real words: swapped, with ``CONJ``, for ``U = L^H``), zeros
    in the other triangle; ``info_ptr[pid]``: 0, or the order ``j + 1`` of the first leading minor whose pivot
    is not positive (or NaN)."""
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    m = (rows < N) & (cols < N) & (cols <= rows)
    ptrs = x_base + rows * sx_r + cols * sx_c
    if F64:
        ar = tl.load(ptrs, mask=m, other=0).to(tl.float64)
        ai = tl.load(ptrs + 1, mask=m & (cols < rows), other=0).to(tl.float64)
    else:
        ar = tl.load(ptrs, mask=m, other=0).to(tl.float32)
        ai = tl.load(ptrs + 1, mask=m & (cols < rows), other=0).to(tl.float32)
    lr = ar * 0
    li = ar * 0
    info = N * 0
    for j in range(0, N):
        cr, ci = _pick(ar, ai, cols == j, 1)  # column j of the updated tile
        d = tl.reduce(tl.where(r1 == j, cr, 0.0), 0, _SUM)
        ok = d > 0
        info = tl.where((info == 0) & (ok == 0), j + 1, info)
        if F64:
            piv = tl.sqrt(tl.where(ok, d, 1.0))
        else:
            piv = tl.sqrt_rn(tl.where(ok, d, 1.0))
        ljr = tl.where(r1 >= j, cr / piv, 0.0)
        lji = tl.where(r1 > j, ci / piv, 0.0)  # the diagonal is real
        lr = tl.where(cols == j, ljr[:, None], lr)
        li = tl.where(cols == j, lji[:, None], li)
        # A -= l l^H
        ar = ar - (ljr[:, None] * ljr[None, :] + lji[:, None] * lji[None, :])
        ai = ai - (lji[:, None] * ljr[None, :] - ljr[:, None] * lji[None, :])
    if CONJ:
        li = -li
    om = (rows < N) & (cols < N)
    optrs = out_ptr + pid * 2 * N * N + rows * so_r + cols * so_c
    tl.store(optrs, lr.to(out_ptr.dtype.element_ty), mask=om)
    tl.store(optrs + 1, li.to(out_ptr.dtype.element_ty), mask=om)
    tl.store(info_ptr + pid, info.to(tl.int32))


@triton.jit
def _swap_rows_c(br, bi, rows, i, p):
    ir, ii = _pick(br, bi, rows == i, 0)
    pr, pi = _pick(br, bi, rows == p, 0)
    br = tl.where(rows == i, pr[None, :], tl.where(rows == p, ir[None, :], br))
    bi = tl.where(rows == i, pi[None, :], tl.where(rows == p, ii[None, :], bi))
    return br, bi


@triton.jit(do_not_specialize=["M", "N"])
def lu_c_kernel(x_ptr, lu_ptr, piv_ptr, info_ptr, M, N, K, sx_r, sx_c,
                bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
                PIVOT: tl.constexpr, F64: tl.constexpr, BLOCK_N: tl.constexpr):
    """``P A = L U`` of the complex ``M x N`` matrix ``pid`` by Gaussian elimination with partial pivoting on
    ``|re| + |im|`` (zgetrf): L (unit diagonal) below the diagonal and U on and above it into ``lu_ptr`` (the
    pair view of contiguous matrices), the ``K = min(M, N)`` 1-based pivots into ``piv_ptr``, and into
    ``info_ptr[pid]`` 0 or ``k + 1`` for the first exactly zero pivot (its column is not scaled). ``PIVOT``
    False: ``A = L U`` without row exchanges (pivots ``k + 1``), a zero pivot's column divided by it (inf/NaN, as
    PyTorch's ``pivot=False``); only the trailing block is updated, so the finished columns stay as they are."""
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    m = (rows < M) & (cols < N)
    ptrs = x_base + rows * sx_r + cols * sx_c
    if F64:
        ar = tl.load(ptrs, mask=m, other=0).to(tl.float64)
        ai = tl.load(ptrs + 1, mask=m, other=0).to(tl.float64)
    else:
        ar = tl.load(ptrs, mask=m, other=0).to(tl.float32)
        ai = tl.load(ptrs + 1, mask=m, other=0).to(tl.float32)
    info = N * 0
    for k in range(0, K):
        if PIVOT:
            cr, ci = _pick(ar, ai, cols == k, 1)
            cand = tl.where((r1 >= k) & (r1 < M), tl.abs(cr) + tl.abs(ci), -1.0)
            cand = tl.where(cand != cand, float("inf"), cand)  # a NaN is taken as the pivot (it propagates)
            big = tl.reduce(cand, 0, _MAX)
            p = tl.reduce(tl.where(cand == big, r1, BLOCK_N), 0, _MIN)
            p = tl.where(p < M, p, k)
            upr, upi = _pick(ar, ai, rows == p, 0)
            ar, ai = _swap_rows_c(ar, ai, rows, k, p)
        else:
            p = k
            upr, upi = _pick(ar, ai, rows == k, 0)
        tl.store(piv_ptr + pid * K + k, (p + 1).to(tl.int32))
        cr, ci = _pick(ar, ai, cols == k, 1)
        pr = tl.reduce(tl.where(r1 == k, cr, 0.0), 0, _SUM)
        pi = tl.reduce(tl.where(r1 == k, ci, 0.0), 0, _SUM)
        zero = (pr == 0) & (pi == 0)
        info = tl.where((info == 0) & zero, k + 1, info)
        if PIVOT:
            lkr, lki = _cdiv(cr, ci, tl.where(zero, 1.0, pr), pi)  # a zero pivot's column (zeros) is not scaled
        else:
            lkr, lki = _cdiv(cr, ci, pr, pi)
        lkr = tl.where(r1 > k, lkr, 0.0)
        lki = tl.where(r1 > k, lki, 0.0)
        ukr = tl.where(r1 > k, upr, 0.0)
        uki = tl.where(r1 > k, upi, 0.0)
        below = (cols == k) & (rows > k)
        trail = (rows > k) & (cols > k)  # past a zero pivot without pivoting lk is inf/NaN (inf * 0 = NaN)
        ar = tl.where(below, lkr[:, None],
                      tl.where(trail, ar - (lkr[:, None] * ukr[None, :] - lki[:, None] * uki[None, :]), ar))
        ai = tl.where(below, lki[:, None],
                      tl.where(trail, ai - (lkr[:, None] * uki[None, :] + lki[:, None] * ukr[None, :]), ai))
    optrs = lu_ptr + pid * 2 * M * N + rows * 2 * N + cols * 2
    tl.store(optrs, ar.to(lu_ptr.dtype.element_ty), mask=m)
    tl.store(optrs + 1, ai.to(lu_ptr.dtype.element_ty), mask=m)
    tl.store(info_ptr + pid, info.to(tl.int32))


@triton.jit(do_not_specialize=["N", "K"])
def trsm_c_kernel(a_ptr, b_ptr, out_ptr, piv_ptr, N, K, sa_r, sa_c, sb_r, sb_c, so_r, so_c, sp,
                  bs1, bs2, bs3, bs4, bs5, at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5,
                  ot0, ot1, ot2, ot3, ot4, ot5, pt0, pt1, pt2, pt3, pt4, pt5,
                  LOWER: tl.constexpr, UNIT: tl.constexpr, PIVOT: tl.constexpr, F64: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``X = A^-1 B`` for the complex triangular ``N x N`` matrix ``A`` of batch entry
    ``program_id(0)`` (only its ``LOWER`` or upper triangle is read; ``UNIT``: a diagonal of ones) and columns
    ``program_id(1) * BLOCK_K...`` of the ``N x K`` right-hand side ``B``, by substitution; all three are pair
    views (strides in real words). ``PIVOT`` 1: LAPACK's row swaps ``piv`` applied to ``B`` first, in order
    (``P^T B``); 2: to ``X`` afterwards, in reverse (``P X``), as ``linalg_lu.trsm_kernel``."""
    pid = tl.program_id(0).to(tl.int64)
    k0 = tl.program_id(1) * BLOCK_K
    a_base = a_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, at0, at1, at2, at3, at4, at5)
    b_base = b_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    o_base = out_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, ot0, ot1, ot2, ot3, ot4, ot5)
    p_base = piv_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, pt0, pt1, pt2, pt3, pt4, pt5)
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    kc = k0 + tl.arange(0, BLOCK_K)[None, :]
    if LOWER:
        ma = (rows < N) & (cols <= rows)
    else:
        ma = (cols < N) & (cols >= rows)
    mb = (rows < N) & (kc < K)
    pa = a_base + rows * sa_r + cols * sa_c
    pb = b_base + rows * sb_r + kc * sb_c
    if F64:
        ar = tl.load(pa, mask=ma, other=0).to(tl.float64)
        ai = tl.load(pa + 1, mask=ma, other=0).to(tl.float64)
        br = tl.load(pb, mask=mb, other=0).to(tl.float64)
        bi = tl.load(pb + 1, mask=mb, other=0).to(tl.float64)
    else:
        ar = tl.load(pa, mask=ma, other=0).to(tl.float32)
        ai = tl.load(pa + 1, mask=ma, other=0).to(tl.float32)
        br = tl.load(pb, mask=mb, other=0).to(tl.float32)
        bi = tl.load(pb + 1, mask=mb, other=0).to(tl.float32)
    if PIVOT == 1:
        for i in range(0, N):
            p = tl.load(p_base + i * sp) - 1
            br, bi = _swap_rows_c(br, bi, rows, i, p)
    for ii in range(0, N):
        if LOWER:
            i = ii
        else:
            i = N - 1 - ii
        cr, ci = _pick(ar, ai, cols == i, 1)
        xr, xi = _pick(br, bi, rows == i, 0)
        if not UNIT:
            dr = tl.reduce(tl.where(r1 == i, cr, 0.0), 0, _SUM)
            di = tl.reduce(tl.where(r1 == i, ci, 0.0), 0, _SUM)
            xr, xi = _cdiv(xr, xi, dr, di)
        if LOWER:
            rest = r1 > i
        else:
            rest = r1 < i
        cr = tl.where(rest, cr, 0.0)
        ci = tl.where(rest, ci, 0.0)
        br = tl.where(rows == i, xr[None, :], br - (cr[:, None] * xr[None, :] - ci[:, None] * xi[None, :]))
        bi = tl.where(rows == i, xi[None, :], bi - (cr[:, None] * xi[None, :] + ci[:, None] * xr[None, :]))
    if PIVOT == 2:
        for ii in range(0, N):
            i = N - 1 - ii
            p = tl.load(p_base + i * sp) - 1
            br, bi = _swap_rows_c(br, bi, rows, i, p)
    po = o_base + rows * so_r + kc * so_c
    tl.store(po, br.to(out_ptr.dtype.element_ty), mask=mb)
    tl.store(po + 1, bi.to(out_ptr.dtype.element_ty), mask=mb)


@triton.jit(do_not_specialize=["M", "K0", "NB", "KP"])
def lu_panel_c_kernel(w_ptr, piv_ptr, info_ptr, M, K0, NB, KP, s_mat, s_r, s_c,
                      PIVOT: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """The complex form of ``linalg_blocked.lu_panel_kernel``: ``P A_p = L U`` of the panel rows ``K0..M-1``,
    columns ``K0..K0+NB-1`` of matrix ``pid`` in place (``w_ptr`` a pair view; ``s_mat``, ``s_r``, ``s_c`` in
    real words), pivoting on ``|re| + |im|``; pivots (1-based, of the whole matrix) to ``piv_ptr[pid * KP + k]``,
    ``info_ptr[pid]``, when still 0, ``k + 1`` for the first exactly zero pivot. ``PIVOT`` False: no search and
    no swaps (pivots ``k + 1``), a zero pivot's column divided by it (inf/NaN, as PyTorch's), the columns right
    of it only updated."""
    pid = tl.program_id(0).to(tl.int64)
    base = w_ptr + pid * s_mat
    rr = tl.arange(0, BLOCK_R)
    c1 = tl.arange(0, BLOCK_C)
    cmask = c1 < NB
    ccol = K0 + c1
    info = tl.load(info_ptr + pid)
    for kk in range(0, NB):
        k = K0 + kk
        if PIVOT:
            if F64:
                best = tl.full((), -1.0, tl.float64)
            else:
                best = tl.full((), -1.0, tl.float32)
            bidx = k
            for r0 in range(k, M, BLOCK_R):
                r = r0 + rr
                vp = base + r * s_r + k * s_c
                if F64:
                    vr = tl.load(vp, mask=r < M, other=0).to(tl.float64)
                    vi = tl.load(vp + 1, mask=r < M, other=0).to(tl.float64)
                else:
                    vr = tl.load(vp, mask=r < M, other=0).to(tl.float32)
                    vi = tl.load(vp + 1, mask=r < M, other=0).to(tl.float32)
                cand = tl.where(r < M, tl.abs(vr) + tl.abs(vi), -1.0)
                cand = tl.where(cand != cand, float("inf"), cand)
                big = tl.reduce(cand, 0, _MAX)
                at = tl.reduce(tl.where(cand == big, r, M), 0, _MIN)
                take = big > best
                bidx = tl.where(take, at, bidx)
                best = tl.where(take, big, best)
            tl.store(piv_ptr + pid * KP + k, (bidx + 1).to(tl.int32))
            pk = base + k * s_r + ccol * s_c
            pp = base + bidx * s_r + ccol * s_c
            kr = tl.load(pk, mask=cmask, other=0)
            ki = tl.load(pk + 1, mask=cmask, other=0)
            ur = tl.load(pp, mask=cmask, other=0)
            ui = tl.load(pp + 1, mask=cmask, other=0)
            tl.debug_barrier()
            tl.store(pp, kr, mask=cmask)
            tl.store(pp + 1, ki, mask=cmask)
            tl.debug_barrier()
            tl.store(pk, ur, mask=cmask)
            tl.store(pk + 1, ui, mask=cmask)
            tl.debug_barrier()
        else:
            tl.store(piv_ptr + pid * KP + k, (k + 1).to(tl.int32))
            pk = base + k * s_r + ccol * s_c
            ur = tl.load(pk, mask=cmask, other=0)
            ui = tl.load(pk + 1, mask=cmask, other=0)
        if F64:
            ur = ur.to(tl.float64)
            ui = ui.to(tl.float64)
        else:
            ur = ur.to(tl.float32)
            ui = ui.to(tl.float32)
        pr = tl.reduce(tl.where(c1 == kk, ur, 0.0), 0, _SUM)
        pi = tl.reduce(tl.where(c1 == kk, ui, 0.0), 0, _SUM)
        zero = (pr == 0) & (pi == 0)
        info = tl.where((info == 0) & zero, k + 1, info)
        if PIVOT:
            pr = tl.where(zero, 1.0, pr)  # a zero pivot's column (zeros) is not scaled
        ur = tl.where(c1 > kk, ur, 0.0)
        ui = tl.where(c1 > kk, ui, 0.0)
        for r0 in range(k + 1, M, BLOCK_R):
            r = (r0 + rr)[:, None]
            m2 = (r < M) & cmask[None, :]
            ptrs = base + r * s_r + ccol[None, :] * s_c
            if F64:
                tr = tl.load(ptrs, mask=m2, other=0).to(tl.float64)
                ti = tl.load(ptrs + 1, mask=m2, other=0).to(tl.float64)
            else:
                tr = tl.load(ptrs, mask=m2, other=0).to(tl.float32)
                ti = tl.load(ptrs + 1, mask=m2, other=0).to(tl.float32)
            lr, li = _pick(tr, ti, c1[None, :] == kk, 1)
            lr, li = _cdiv(lr, li, pr, pi)
            here = c1[None, :] == kk
            right = c1[None, :] > kk  # past a zero pivot without pivoting l is inf/NaN (inf * 0 = NaN)
            tr = tl.where(here, lr[:, None],
                          tl.where(right, tr - (lr[:, None] * ur[None, :] - li[:, None] * ui[None, :]), tr))
            ti = tl.where(here, li[:, None],
                          tl.where(right, ti - (lr[:, None] * ui[None, :] + li[:, None] * ur[None, :]), ti))
            tl.store(ptrs, tr.to(w_ptr.dtype.element_ty), mask=m2)
            tl.store(ptrs + 1, ti.to(w_ptr.dtype.element_ty), mask=m2)
        tl.debug_barrier()
    tl.store(info_ptr + pid, info.to(tl.int32))
