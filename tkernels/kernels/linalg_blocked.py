"""The two kernels of the blocked LU (``tkernels/solvers.py``) that the one-tile kernels of ``linalg_lu.py``
cannot do: the factorization of a tall panel with partial pivoting, and LAPACK's row swaps (laswp) applied to
the columns outside the panel (and to the right-hand sides of the blocked ``lu_solve``).

``lu_panel_kernel`` works in place on global memory, one program per matrix: the panel is ``M - K0`` rows of
``NB`` columns, walked in chunks of ``BLOCK_R`` rows, so any height fits; the steps of one column (pivot search,
swap, scaling and rank-1 update) are separated by barriers, since one program's threads read what others wrote.
``lu_swap_kernel`` runs one program per matrix and column chunk, the swaps in order (or reversed) inside it.
"""

import triton
import triton.language as tl

from .strided import strided_offset

# the row chunk of the panel walk on a GPU (the panel width is a power of two up to linalg_lu.MAX_BLOCK)
GPU_PANEL_ROWS = 64
# the column chunk of the row swaps on a GPU
GPU_SWAP_COLS = 256

_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min


@triton.jit(do_not_specialize=["M", "K0", "NB", "KP"])
def lu_panel_kernel(w_ptr, piv_ptr, info_ptr, M, K0, NB, KP, s_mat, s_r, s_c,
                    PIVOT: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """``P A_p = L U`` of the panel rows ``K0..M-1``, columns ``K0..K0+NB-1`` of matrix ``pid`` (``s_mat``
    elements apart; element strides ``s_r``/``s_c``), in place: L below the diagonal, U on and above. Row
    swaps are applied to the panel's columns only. The 1-based pivots (of the whole matrix) go to
    ``piv_ptr[pid * KP + k]``; ``info_ptr[pid]``, when still 0, becomes ``k + 1`` for the first exactly zero
    pivot (its column is then not scaled, as LAPACK's getrf). A NaN is taken as the pivot. ``PIVOT`` False: no
    search and no swaps (pivots ``k + 1``), a zero pivot's column divided by it (inf/NaN, as PyTorch's)."""
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
            # the pivot: the first row of the largest |a_ik|, i >= k
            if F64:
                best = tl.full((), -1.0, tl.float64)
            else:
                best = tl.full((), -1.0, tl.float32)
            bidx = k
            for r0 in range(k, M, BLOCK_R):
                r = r0 + rr
                if F64:
                    v = tl.load(base + r * s_r + k * s_c, mask=r < M, other=0).to(tl.float64)
                else:
                    v = tl.load(base + r * s_r + k * s_c, mask=r < M, other=0).to(tl.float32)
                cand = tl.where(r < M, tl.abs(v), -1.0)
                cand = tl.where(cand != cand, float("inf"), cand)
                big = tl.reduce(cand, 0, _MAX)
                at = tl.reduce(tl.where(cand == big, r, M), 0, _MIN)
                take = big > best
                bidx = tl.where(take, at, bidx)
                best = tl.where(take, big, best)
            tl.store(piv_ptr + pid * KP + k, (bidx + 1).to(tl.int32))
            row_k = tl.load(base + k * s_r + ccol * s_c, mask=cmask, other=0)
            row_p = tl.load(base + bidx * s_r + ccol * s_c, mask=cmask, other=0)
            tl.debug_barrier()
            tl.store(base + bidx * s_r + ccol * s_c, row_k, mask=cmask)
            tl.debug_barrier()
            tl.store(base + k * s_r + ccol * s_c, row_p, mask=cmask)
            tl.debug_barrier()
        else:
            tl.store(piv_ptr + pid * KP + k, (k + 1).to(tl.int32))
            row_p = tl.load(base + k * s_r + ccol * s_c, mask=cmask, other=0)
        if F64:
            u = row_p.to(tl.float64)
        else:
            u = row_p.to(tl.float32)
        pivot = tl.reduce(tl.where(c1 == kk, u, 0.0), 0, _SUM)
        info = tl.where((info == 0) & (pivot == 0), k + 1, info)
        if PIVOT:
            scale = 1.0 / tl.where(pivot == 0, 1.0, pivot)
        else:
            scale = 1.0 / pivot
        u = tl.where(c1 > kk, u, 0.0)
        for r0 in range(k + 1, M, BLOCK_R):
            r = (r0 + rr)[:, None]
            m2 = (r < M) & cmask[None, :]
            ptrs = base + r * s_r + ccol[None, :] * s_c
            if F64:
                t = tl.load(ptrs, mask=m2, other=0).to(tl.float64)
            else:
                t = tl.load(ptrs, mask=m2, other=0).to(tl.float32)
            lk = tl.reduce(tl.where(c1[None, :] == kk, t, 0.0), 1, _SUM) * scale
            # the columns right of kk only: past a zero pivot without pivoting lk is inf/NaN (inf * 0 = NaN)
            t = tl.where(c1[None, :] == kk, lk[:, None], tl.where(c1[None, :] > kk, t - lk[:, None] * u[None, :], t))
            tl.store(ptrs, t.to(w_ptr.dtype.element_ty), mask=m2)
        tl.debug_barrier()
    tl.store(info_ptr + pid, info.to(tl.int32))


@triton.jit(do_not_specialize=["P", "C", "OFF"])
def lu_swap_kernel(x_ptr, piv_ptr, P, C, OFF, sx_r, sx_c, sp,
                   bs1, bs2, bs3, bs4, bs5, xt0, xt1, xt2, xt3, xt4, xt5, pt0, pt1, pt2, pt3, pt4, pt5,
                   REVERSE: tl.constexpr, BLOCK_C: tl.constexpr):
    """LAPACK's laswp on batch entry ``program_id(0)``, columns ``program_id(1) * BLOCK_C...`` of ``C``: for
    ``i`` in ``0..P-1`` (``REVERSE``: ``P-1..0``) swap rows ``i`` and ``piv[i] - 1 - OFF`` (pivots ``sp``
    elements apart, 1-based and offset by ``OFF`` rows), in place."""
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, xt0, xt1, xt2, xt3, xt4, xt5)
    p_base = piv_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, pt0, pt1, pt2, pt3, pt4, pt5)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < C
    for ii in range(0, P):
        if REVERSE:
            i = P - 1 - ii
        else:
            i = ii
        p = (tl.load(p_base + i * sp) - 1 - OFF).to(tl.int64)
        a = tl.load(x_base + i * sx_r + c * sx_c, mask=cm)
        b = tl.load(x_base + p * sx_r + c * sx_c, mask=cm)
        tl.debug_barrier()
        tl.store(x_base + p * sx_r + c * sx_c, a, mask=cm)
        tl.debug_barrier()
        tl.store(x_base + i * sx_r + c * sx_c, b, mask=cm)
        tl.debug_barrier()
