"""complex64/complex128 ``cholesky``, ``lu_factor``, ``solve_triangular``, ``lu_panel`` and ``lu_swap_rows`` on
cuda (signatures: ``tkernels/factorizations.py``): the kernels of ``tkernels/kernels/linalg_complex.py`` on the
operands' real pair views (``view_as_real``: no copy; strides in real words), reached from the real entries of
``linalg_lu.py`` on a complex dtype. The row swaps are the real ``lu_swap_kernel`` on the real and imaginary part
views. Everything built on these ops in ``tkernels.linalg`` (blocked paths with matmul trailing updates, lu_solve,
solve, inv, det, slogdet, matrix_power) then takes complex input on cuda."""

from __future__ import annotations

from ... import dtypes as _dt
from ..._complex import CUDA_COMPLEX_OPS, imag, real, view_as_real
from ...array import Array
from ...kernels.linalg_blocked import GPU_PANEL_ROWS
from ...kernels.linalg_complex import cholesky_c_kernel, lu_c_kernel, lu_panel_c_kernel, trsm_c_kernel
from ...kernels.linalg_lu import GPU_BLOCKS, MAX_BLOCK
from ._launch import INTERPRETED
from .memory import copy_, empty
from .reduction import _launch, _pow2

_F64 = _dt.complex128

# the entries of tkernels.linalg served for complex input on cuda by these kernels
CUDA_COMPLEX_OPS.update({f"linalg.{op}" for op in (
    "cholesky", "cholesky_ex", "solve_triangular", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "solve", "inv",
    "inv_ex", "det", "slogdet", "matrix_power")} | {"tril", "triu"})


def warps(block: int) -> int:
    """8 warps for the 64 tile (two fp tiles per complex matrix, four in the solves), 4 for the small one."""
    return 8 if block > GPU_BLOCKS[0] else 4


# the elements of a right-hand side tile per program on a GPU: half the real kernel's (two tiles per operand)
GPU_TRSM_TILE = 1024


def trsm_columns(block: int, k: int) -> int:
    """The right-hand side columns per program."""
    return min(_pow2(k), max(1, (2048 if INTERPRETED else GPU_TRSM_TILE) // block))


def _pairs(x: Array):
    """The pair view of ``x`` and its matrix strides in real words (batch ones first)."""
    v = view_as_real(x)
    return v, v._strides[:-1]


def cholesky(out: Array, info: Array, x: Array, upper: bool) -> None:
    from .linalg_lu import _batch, _block

    n = x._shape[-1]
    xv, st = _pairs(x)
    so_r, so_c = (2, 2 * n) if upper else (2 * n, 2)
    block = _block(n)
    _launch(cholesky_c_kernel, (info.size,), xv, view_as_real(out), info, n, st[-2], st[-1], so_r, so_c,
            *_batch(x._shape[:-2], st[:-2]), CONJ=bool(upper), F64=x._dtype is _F64, BLOCK_N=block,
            num_warps=warps(block))


def lu_factor(lu: Array, piv: Array, info: Array, x: Array, pivot: bool = True) -> None:
    from .linalg_lu import _batch, _block

    m, n = x._shape[-2:]
    xv, st = _pairs(x)
    block = _block(max(m, n))
    _launch(lu_c_kernel, (info.size,), xv, view_as_real(lu), piv, info, m, n, min(m, n), st[-2], st[-1],
            *_batch(x._shape[:-2], st[:-2]), PIVOT=bool(pivot), F64=x._dtype is _F64, BLOCK_N=block,
            num_warps=warps(block))


def solve_triangular(out: Array, a: Array, b: Array, upper: bool, unit: bool, piv, pivot_mode: int) -> None:
    from .linalg_lu import _batch, _block

    n, k = b._shape[-2:]
    block = _block(n)
    bk = trsm_columns(block, k)
    av, sa = _pairs(a)
    bv, sb = _pairs(b)
    ov, so = _pairs(out)
    pv = av if piv is None else piv
    ps = (0,) * (a.ndim - 2) if piv is None else piv._strides[:-1]
    sp = 0 if piv is None else piv._strides[-1]
    batch = _batch(a._shape[:-2], sa[:-2], sb[:-2], so[:-2], ps)
    nb = 1
    for s in a._shape[:-2]:
        nb *= s
    _launch(trsm_c_kernel, (nb, -(-k // bk)), av, bv, ov, pv, n, k, *sa[-2:], *sb[-2:], *so[-2:], sp, *batch,
            LOWER=not upper, UNIT=bool(unit), PIVOT=int(pivot_mode), F64=out._dtype is _F64, BLOCK_N=block,
            BLOCK_K=bk, num_warps=warps(block))


def lu_panel(w: Array, piv: Array, info: Array, k0: int, k1: int, pivot: bool = True) -> None:
    m, n = w._shape[-2:]
    nb = k1 - k0
    wv, st = _pairs(w)
    rows = min(max(_pow2(m - k0), 2), 64) if INTERPRETED else GPU_PANEL_ROWS
    _launch(lu_panel_c_kernel, (info.size,), wv, piv, info, m, k0, nb, piv._shape[-1], 2 * m * n, st[-2], st[-1],
            PIVOT=bool(pivot), F64=w._dtype is _F64, BLOCK_R=rows,
            BLOCK_C=max(_pow2(nb), 2) if INTERPRETED else MAX_BLOCK, num_warps=warps(MAX_BLOCK))


def lu_swap_rows(x: Array, piv: Array, offset: int, reverse: bool) -> None:
    """laswp by the real kernel: on rows of ``2 C`` real words when ``x``'s rows are contiguous (one launch),
    otherwise on the real and on the imaginary part views (any strides)."""
    from .linalg_lu import lu_swap_rows as swap

    if x._strides[-1] == 1:
        v = view_as_real(x)
        swap(v._view((*x._shape[:-1], 2 * x._shape[-1]), v._strides[:-2] + (1,), v._offset), piv, offset, reverse)
        return
    swap(real(x), piv, offset, reverse)
    swap(imag(x), piv, offset, reverse)


def tri_complex(tri, out: Array, x: Array, k: int, upper: bool) -> None:
    """``tril``/``triu`` of complex ``x``: the real triangle kernel ``tri`` (contiguous output) on each part view,
    copied into ``out``'s parts."""
    rd = _dt.to_real(x._dtype)
    for part in (real, imag):
        t = empty(x._shape, rd, x._device)
        tri(t, part(x), k, upper)
        copy_(part(out), t)
