"""``svd`` on cuda (signature: ``tkernels/decompositions.py``): one-sided Jacobi, one program per matrix
(``svd_kernel`` in ``tkernels/kernels/svd.py``), singular values sorted and vectors written by the kernel.

The kernel works on an ``R x C`` view of each matrix and orthogonalizes its ``C`` columns: ``A V = W``. Reduced
factors take ``C`` = the shorter side (a tall matrix as is, a wide one transposed), full ones with ``M != N``
the longer side, so that ``V`` (always a full orthogonal basis) is the large factor. For ``A`` itself the left
vectors are W's normalized columns and Vh's rows are V's columns; for the transpose U's columns are V's and
Vh's rows are W's.
"""

from __future__ import annotations

import functools

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.svd import GPU_BLOCKS, svd_kernel
from ._launch import INTERPRETED, collapse
from .memory import empty
from .reduction import TILE, _launch, _pow2

_F32, _F64 = _dt.float32, _dt.float64


@functools.lru_cache(maxsize=1024)
def _plan(shape, strides, transpose, interpreted):
    """(R, C, row stride, column stride, batch args, BLOCK_R) of the ``R x C`` view (``transpose``: of A^T)."""
    m, n = shape[-2:]
    sm, sn = strides[-2:]
    R, C, sr, sc = (n, m, sn, sm) if transpose else (m, n, sm, sn)
    sizes, (st,) = collapse(list(shape[:-2]) or [1], list(strides[:-2]) or [0])
    if interpreted:
        block = min(_pow2(max(R, C)), TILE)
    else:
        block = GPU_BLOCKS[0] if max(R, C) <= GPU_BLOCKS[0] else GPU_BLOCKS[1]
    return R, C, sr, sc, (*sizes[1:], *st), block


@register("svd", "triton")
def svd(u, s, vh, x: Array, compute) -> None:
    m, n = x._shape[-2:]
    K = min(m, n)
    B = s.size // K
    vectors = u is not None
    full = vectors and (u._shape[-1] != K or vh._shape[-2] != K)  # full factors of a non-square matrix
    transpose = (m >= n) == full  # C: the shorter side (reduced), the longer side (full)
    R, C, sr, sc, batch, block = _plan(x._shape, x._strides, transpose, INTERPRETED)
    cd = _F64 if compute is _F64 else _F32
    w = empty((B, C, R), cd, x.device)
    sv = empty((B, C), cd, x.device)
    if vectors:
        v = empty((B, C, C), cd, x.device)
        us, vs = u._strides, vh._strides
        ub, vb = u._shape[-2] * u._shape[-1], vh._shape[-2] * vh._shape[-1]
        if transpose:  # W's columns: Vh's rows; V's columns: U's columns
            wv, wvs, vv, vvs = vh, (vb, vs[-2], vs[-1]), u, (ub, us[-1], us[-2])
        else:  # W's columns: U's columns; V's columns: Vh's rows
            wv, wvs, vv, vvs = u, (ub, us[-1], us[-2]), vh, (vb, vs[-2], vs[-1])
    else:  # singular values only: the vector pointers are never read or written
        v, wv, wvs, vv, vvs = sv, s, (0, 0, 0), s, (0, 0, 0)
    _launch(svd_kernel, (B,), x, w, v, sv, s, wv, vv, R, C, K, sr, sc, *batch, K, *wvs, *vvs,
            WANT_VECTORS=vectors, F64=cd is _F64, BLOCK_R=block)
