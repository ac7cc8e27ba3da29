"""``cholesky``, ``lu_factor`` and ``solve_triangular`` on cuda (signatures: ``tkernels/factorizations.py``):
one program per matrix of ``tkernels/kernels/linalg_lu.py``, the matrix as one tile of ``BLOCK`` (a power of
two, at most ``MAX_BLOCK``; the entry splits larger matrices into blocks). Operands are read and written with
their strides (transposed and broadcast views in place); info codes and pivots are int32 arrays on the device,
nothing is read back here. complex64/complex128 operands go to the complex kernels (``linalg_complex.py``)."""

from __future__ import annotations

import functools

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.linalg_blocked import GPU_PANEL_ROWS, GPU_SWAP_COLS, lu_panel_kernel, lu_swap_kernel
from ...kernels.linalg_lu import GPU_BLOCKS, MAX_BLOCK, cholesky_kernel, lu_kernel, trsm_kernel
from ._launch import INTERPRETED, collapse
from .reduction import _launch, _pow2

_F64 = _dt.float64


def _block(n: int) -> int:
    if INTERPRETED:
        return max(_pow2(n), 2)
    return next(b for b in GPU_BLOCKS if n <= b)


@functools.lru_cache(maxsize=1024)
def _batch(shape, *strides):
    """Collapsed batch sizes (s1..s5) and each operand's strides (t0..t5), flattened."""
    sizes, sts = collapse(list(shape) or [1], *[list(s) or [0] for s in strides])
    return (*sizes[1:], *(t for st in sts for t in st))


def _cx():
    """The complex forms (``linalg_complex.py``: complex64/complex128 on their real pair views)."""
    from . import linalg_complex

    return linalg_complex


def _check_size(op: str, n: int) -> None:
    if n > MAX_BLOCK:
        raise NotImplementedError(f"{op}: the cuda kernel takes matrices up to {MAX_BLOCK} x {MAX_BLOCK} in one "
                                  f"program, got {n}; the entry splits larger ones into blocks")


@register("cholesky", "triton")
def cholesky(out: Array, info: Array, x: Array, upper: bool) -> None:
    n = x._shape[-1]
    _check_size("cholesky", n)
    if x._dtype.kind == "c":
        return _cx().cholesky(out, info, x, upper)
    B = info.size
    so_r, so_c = (1, n) if upper else (n, 1)
    batch = _batch(x._shape[:-2], x._strides[:-2])
    _launch(cholesky_kernel, (B,), x, out, info, n, x._strides[-2], x._strides[-1], so_r, so_c, *batch,
            F64=x._dtype is _F64, BLOCK_N=_block(n))


@register("lu_factor", "triton")
def lu_factor(lu: Array, piv: Array, info: Array, x: Array, pivot: bool = True) -> None:
    m, n = x._shape[-2:]
    _check_size("lu_factor", max(m, n))
    if x._dtype.kind == "c":
        return _cx().lu_factor(lu, piv, info, x, pivot)
    batch = _batch(x._shape[:-2], x._strides[:-2])
    _launch(lu_kernel, (info.size,), x, lu, piv, info, m, n, min(m, n), x._strides[-2], x._strides[-1], *batch,
            PIVOT=bool(pivot), F64=x._dtype is _F64, BLOCK_N=_block(max(m, n)))


@register("solve_triangular", "triton")
def solve_triangular(out: Array, a: Array, b: Array, upper: bool, unit: bool, piv, pivot_mode: int) -> None:
    n, k = b._shape[-2:]
    _check_size("solve_triangular", n)
    if out._dtype.kind == "c":
        return _cx().solve_triangular(out, a, b, upper, unit, piv, pivot_mode)
    block = _block(n)
    bk = min(_pow2(k), max(1, (4096 if INTERPRETED else 2048) // block))
    pv = a if piv is None else piv
    ps = (0,) * (a.ndim - 2) if piv is None else piv._strides[:-1]
    sp = 0 if piv is None else piv._strides[-1]
    batch = _batch(a._shape[:-2], a._strides[:-2], b._strides[:-2], out._strides[:-2], ps)
    nb = 1
    for s in a._shape[:-2]:
        nb *= s
    _launch(trsm_kernel, (nb, -(-k // bk)), a, b, out, pv, n, k, *a._strides[-2:], *b._strides[-2:],
            *out._strides[-2:], sp, *batch, LOWER=not upper, UNIT=bool(unit), PIVOT=int(pivot_mode),
            F64=out._dtype is _F64, BLOCK_N=block, BLOCK_K=bk)


@register("lu_panel", "triton")
def lu_panel(w: Array, piv: Array, info: Array, k0: int, k1: int, pivot: bool = True) -> None:
    """The blocked LU's panel (``kernels/linalg_blocked.py``); ``w`` contiguous matrices, ``piv``/``info``
    contiguous; ``pivot=False``: no row exchanges."""
    m, n = w._shape[-2:]
    nb = k1 - k0
    _check_size("lu_panel", nb)
    if w._dtype.kind == "c":
        return _cx().lu_panel(w, piv, info, k0, k1, pivot)
    rows = min(max(_pow2(m - k0), 2), 64) if INTERPRETED else GPU_PANEL_ROWS
    cols = max(_pow2(nb), 2) if INTERPRETED else MAX_BLOCK
    _launch(lu_panel_kernel, (info.size,), w, piv, info, m, k0, nb, piv._shape[-1], m * n, w._strides[-2],
            w._strides[-1], PIVOT=bool(pivot), F64=w._dtype is _F64, BLOCK_R=rows, BLOCK_C=cols)


@register("lu_swap_rows", "triton")
def lu_swap_rows(x: Array, piv: Array, offset: int, reverse: bool) -> None:
    """LAPACK's laswp in place on the (*b, R, C) view ``x`` with the (*b, P) pivots (any strides, broadcast)."""
    c = x._shape[-1]
    if c == 0 or x.size == 0:
        return
    if x._dtype.kind == "c":
        return _cx().lu_swap_rows(x, piv, offset, reverse)
    bc = min(max(_pow2(c), 2), 256) if INTERPRETED else GPU_SWAP_COLS
    nb = 1
    for s in x._shape[:-2]:
        nb *= s
    batch = _batch(x._shape[:-2], x._strides[:-2], piv._strides[:-1])
    _launch(lu_swap_kernel, (nb, -(-c // bc)), x, piv, piv._shape[-1], c, offset, *x._strides[-2:],
            piv._strides[-1], *batch, REVERSE=bool(reverse), BLOCK_C=bc)
