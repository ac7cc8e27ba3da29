"""Cholesky, LU with partial pivoting and triangular solves of a batch of small matrices: one program per
matrix (per matrix and column block of the right-hand sides for ``trsm_kernel``), the whole matrix held as one
``BLOCK_N x BLOCK_N`` tile.

The host (``tkernels/backends/triton/linalg_lu.py``) passes every operand with its own strides (the matrix
strides and the collapsed batch strides of ``strided_offset``, 0 where an operand broadcasts), so transposed
and sliced views are read in place. The factorizations run as ``N`` rank-1 updates of the tile (right-looking):
step ``k`` takes column ``k`` and row ``k`` out of the tile by masked reductions and subtracts their outer
product from the trailing part. Halves compute in fp32, float64 in float64; results are cast on the store.

Failures are reported, never raised (a kernel cannot): ``info`` gets LAPACK's code, the order of the first
leading minor that is not positive-definite (Cholesky), or the 1-based index of the first zero pivot (LU); the
computation goes on as LAPACK's does, so the factors past that point are the caller's to ignore.
"""

import triton
import triton.language as tl

from .strided import strided_offset

# the tile sizes on a GPU: small matrices and the rest (larger ones go through the blocked paths on the host)
GPU_BLOCKS = (16, 64)
MAX_BLOCK = GPU_BLOCKS[-1]

_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min


@triton.jit(do_not_specialize=["N"])
def cholesky_kernel(x_ptr, out_ptr, info_ptr, N, sx_r, sx_c, so_r, so_c,
                    bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
                    F64: tl.constexpr, BLOCK_N: tl.constexpr):
    """The lower Cholesky factor ``L`` (``A = L L^T``, A symmetric: only its lower triangle is read) of matrix
    ``pid`` into ``out_ptr`` (contiguous matrices of ``N * N``, element strides ``so_r``/``so_c``: swapped for
    the upper factor ``L^T``), zeros in the other triangle; ``info_ptr[pid]``: 0, or the order ``j + 1`` of the
    first leading minor whose pivot ``d_j`` is not positive (or NaN)."""
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    m = (rows < N) & (cols < N) & (cols <= rows)
    if F64:
        a = tl.load(x_base + rows * sx_r + cols * sx_c, mask=m, other=0).to(tl.float64)
    else:
        a = tl.load(x_base + rows * sx_r + cols * sx_c, mask=m, other=0).to(tl.float32)
    lo = a * 0
    info = N * 0
    for j in range(0, N):
        col = tl.reduce(tl.where(cols == j, a, 0.0), 1, _SUM)  # column j of the updated tile
        d = tl.reduce(tl.where(r1 == j, col, 0.0), 0, _SUM)
        ok = d > 0
        info = tl.where((info == 0) & (ok == 0), j + 1, info)
        if F64:
            piv = tl.sqrt(tl.where(ok, d, 1.0))
        else:
            piv = tl.sqrt_rn(tl.where(ok, d, 1.0))
        lj = tl.where(r1 >= j, col / piv, 0.0)
        lo = tl.where(cols == j, lj[:, None], lo)
        a = a - lj[:, None] * lj[None, :]
    tl.store(out_ptr + pid * N * N + rows * so_r + cols * so_c, lo.to(out_ptr.dtype.element_ty),
             mask=(rows < N) & (cols < N))
    tl.store(info_ptr + pid, info.to(tl.int32))


@triton.jit(do_not_specialize=["M", "N"])
def lu_kernel(x_ptr, lu_ptr, piv_ptr, info_ptr, M, N, K, sx_r, sx_c,
              bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
              PIVOT: tl.constexpr, F64: tl.constexpr, BLOCK_N: tl.constexpr):
    """``P A = L U`` of the ``M x N`` matrix ``pid`` by Gaussian elimination with partial pivoting (LAPACK's
    getrf): the unit-lower ``L`` below the diagonal and ``U`` on and above it into ``lu_ptr`` (contiguous),
    the ``K = min(M, N)`` 1-based pivots (row ``k`` was swapped with row ``piv[k] - 1``) into ``piv_ptr`` and
    into ``info_ptr[pid]`` 0 or ``k + 1`` for the first exactly zero pivot ``U_kk`` (its column is not scaled).
    ``PIVOT`` False: ``A = L U`` without row exchanges (pivots ``k + 1``), a zero pivot's column divided by it
    (inf/NaN, as PyTorch's ``pivot=False``)."""
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    m = (rows < M) & (cols < N)
    if F64:
        a = tl.load(x_base + rows * sx_r + cols * sx_c, mask=m, other=0).to(tl.float64)
    else:
        a = tl.load(x_base + rows * sx_r + cols * sx_c, mask=m, other=0).to(tl.float32)
    info = N * 0
    for k in range(0, K):
        col = tl.reduce(tl.where(cols == k, a, 0.0), 1, _SUM)
        row_k = tl.reduce(tl.where(rows == k, a, 0.0), 0, _SUM)
        if PIVOT:
            cand = tl.where((r1 >= k) & (r1 < M), tl.abs(col), -1.0)
            cand = tl.where(cand != cand, float("inf"), cand)  # a NaN is taken as the pivot (it propagates)
            big = tl.reduce(cand, 0, _MAX)
            p = tl.reduce(tl.where(cand == big, r1, BLOCK_N), 0, _MIN)
            p = tl.where(p < M, p, k)
            row_p = tl.reduce(tl.where(rows == p, a, 0.0), 0, _SUM)
            a = tl.where(rows == k, row_p[None, :], tl.where(rows == p, row_k[None, :], a))
            col = tl.where(r1 == k, tl.reduce(tl.where(r1 == p, col, 0.0), 0, _SUM),
                           tl.where(r1 == p, tl.reduce(tl.where(r1 == k, col, 0.0), 0, _SUM), col))
        else:
            p = k
            row_p = row_k
        tl.store(piv_ptr + pid * K + k, (p + 1).to(tl.int32))
        pivot = tl.reduce(tl.where(r1 == k, col, 0.0), 0, _SUM)
        info = tl.where((info == 0) & (pivot == 0), k + 1, info)
        if PIVOT:
            scale = 1.0 / tl.where(pivot == 0, 1.0, pivot)  # a zero pivot's column (zeros) is not scaled
        else:
            scale = 1.0 / pivot
        lk = tl.where(r1 > k, col * scale, 0.0)
        uk = tl.where(r1 > k, row_p, 0.0)
        # only the trailing block is updated: past a zero pivot without pivoting lk is inf/NaN (inf * 0 = NaN)
        a = tl.where((cols == k) & (rows > k), lk[:, None],
                     tl.where((rows > k) & (cols > k), a - lk[:, None] * uk[None, :], a))
    tl.store(lu_ptr + pid * M * N + rows * N + cols, a.to(lu_ptr.dtype.element_ty), mask=m)
    tl.store(info_ptr + pid, info.to(tl.int32))


@triton.jit
def _swap_rows(b, rows, i, p):
    row_i = tl.reduce(tl.where(rows == i, b, 0.0), 0, _SUM)
    row_p = tl.reduce(tl.where(rows == p, b, 0.0), 0, _SUM)
    return tl.where(rows == i, row_p[None, :], tl.where(rows == p, row_i[None, :], b))


@triton.jit(do_not_specialize=["N", "K"])
def trsm_kernel(a_ptr, b_ptr, out_ptr, piv_ptr, N, K, sa_r, sa_c, sb_r, sb_c, so_r, so_c, sp,
                bs1, bs2, bs3, bs4, bs5, at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5,
                ot0, ot1, ot2, ot3, ot4, ot5, pt0, pt1, pt2, pt3, pt4, pt5,
                LOWER: tl.constexpr, UNIT: tl.constexpr, PIVOT: tl.constexpr, F64: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``X = A^-1 B`` for the triangular ``N x N`` matrix ``A`` of batch entry ``program_id(0)`` (only its
    ``LOWER`` or upper triangle is read; ``UNIT``: its diagonal is taken as ones) and columns
    ``program_id(1) * BLOCK_K...`` of the ``N x K`` right-hand side ``B``, by substitution (a rank-1 update of
    the remaining rows per solved row). ``PIVOT`` 1: LAPACK's row swaps ``piv`` (1-based, elements ``sp``
    apart) are applied to ``B`` first, in order (``P^T B`` of ``lu_factor``); 2: to ``X`` afterwards, in
    reverse order (``P X``). A zero diagonal gives inf/NaN, as LAPACK's trtrs."""
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
    if F64:
        a = tl.load(a_base + rows * sa_r + cols * sa_c, mask=ma, other=0).to(tl.float64)
        b = tl.load(b_base + rows * sb_r + kc * sb_c, mask=mb, other=0).to(tl.float64)
    else:
        a = tl.load(a_base + rows * sa_r + cols * sa_c, mask=ma, other=0).to(tl.float32)
        b = tl.load(b_base + rows * sb_r + kc * sb_c, mask=mb, other=0).to(tl.float32)
    if PIVOT == 1:
        for i in range(0, N):
            p = tl.load(p_base + i * sp) - 1
            b = _swap_rows(b, rows, i, p)
    for ii in range(0, N):
        if LOWER:
            i = ii
        else:
            i = N - 1 - ii
        col = tl.reduce(tl.where(cols == i, a, 0.0), 1, _SUM)
        x = tl.reduce(tl.where(rows == i, b, 0.0), 0, _SUM)
        if not UNIT:
            x = x / tl.reduce(tl.where(r1 == i, col, 0.0), 0, _SUM)
        if LOWER:
            col = tl.where(r1 > i, col, 0.0)
        else:
            col = tl.where(r1 < i, col, 0.0)
        b = tl.where(rows == i, x[None, :], b - col[:, None] * x[None, :])
    if PIVOT == 2:
        for ii in range(0, N):
            i = N - 1 - ii
            p = tl.load(p_base + i * sp) - 1
            b = _swap_rows(b, rows, i, p)
    tl.store(o_base + rows * so_r + kc * so_c, b.to(out_ptr.dtype.element_ty), mask=mb)
