"""``svd`` on cuda (signature: ``tkernels/decompositions.py``): one-sided Jacobi, one program per matrix
(``svd_kernel`` in ``tkernels/kernels/svd.py``), singular values sorted and vectors written by the kernel.

The kernel works on an ``R x C`` view of each matrix and orthogonalizes its ``C`` columns: ``A V = W``. Reduced
factors take ``C`` = the shorter side (a tall matrix as is, a wide one transposed), full ones with ``M != N``
the longer side, so that ``V`` (always a full orthogonal basis) is the large factor. For ``A`` itself the left
vectors are W's normalized columns and Vh's rows are V's columns; for the transpose U's columns are V's and
Vh's rows are W's. V is always orthogonal (a product of rotations); W's normalized columns are not where a
singular value is 0 or noise, so when vectors are wanted ``svd_complete_kernel`` (``tkernels/kernels/
svd_complete.py``) follows, one program per matrix, and completes them to an orthonormal set in place (the
scratch ``w`` is free by then): both factors come out orthonormal (unitary), whatever the rank.

Complex input goes to ``csvd_kernel`` (``tkernels/kernels/svd_complex.py``) on the real pair views of the input
and of U and Vh (strides in real words; the scratch has a real and an imaginary plane), which writes V's
columns conjugated: then the same mapping holds with V^H for V^T.
"""

from __future__ import annotations

import functools

from ... import dtypes as _dt
from ..._complex import CUDA_COMPLEX_OPS, view_as_real
from ...array import Array
from ...dispatch import register
from ...kernels.svd import GPU_BLOCKS, svd_kernel
from ...kernels.svd_complete import svd_complete_kernel
from ...kernels.svd_complex import csvd_kernel
from ._launch import INTERPRETED, collapse
from .memory import empty
from .reduction import TILE, _launch, _pow2

_F32, _F64 = _dt.float32, _dt.float64
# complex input: csvd_kernel on the real pair views (and what is composed of svd / svdvals on top)
CUDA_COMPLEX_OPS.update({"svd", "svdvals", "pinv", "matrix_rank", "lstsq", "linalg.cond", "matrix_norm"})


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
    cplx = x._dtype.kind == "c"
    vectors = u is not None
    full = vectors and (u._shape[-1] != K or vh._shape[-2] != K)  # full factors of a non-square matrix
    transpose = (m >= n) == full  # C: the shorter side (reduced), the longer side (full)
    xv = view_as_real(x) if cplx else x
    R, C, sr, sc, batch, block = _plan(x._shape, xv._strides[:-1] if cplx else x._strides, transpose, INTERPRETED)
    cd = _dt.to_real(compute) if cplx else _F64 if compute is _F64 else _F32
    planes = 2 if cplx else 1  # complex: real and imaginary planes of the scratch
    w = empty((B, planes, C, R), cd, x.device)
    sv = empty((B, C), cd, x.device)
    if vectors:
        v = empty((B, planes, C, C), cd, x.device)
        uv, vhv = (view_as_real(u), view_as_real(vh)) if cplx else (u, vh)
        us, vs = uv._strides[:u.ndim], vhv._strides[:vh.ndim]  # in real words
        ub, vb = planes * u._shape[-2] * u._shape[-1], planes * vh._shape[-2] * vh._shape[-1]
        if transpose:  # W's columns: Vh's rows; V's columns: U's columns
            wv, wvs, vv, vvs = vhv, (vb, vs[-2], vs[-1]), uv, (ub, us[-1], us[-2])
        else:  # W's columns: U's columns; V's columns: Vh's rows
            wv, wvs, vv, vvs = uv, (ub, us[-1], us[-2]), vhv, (vb, vs[-2], vs[-1])
    else:  # singular values only: the vector pointers are never read or written
        v, wv, wvs, vv, vvs = sv, s, (0, 0, 0), s, (0, 0, 0)
    _launch(csvd_kernel if cplx else svd_kernel, (B,), xv, w, v, sv, s, wv, vv, R, C, K, sr, sc, *batch, K, *wvs,
            *vvs, WANT_VECTORS=vectors, F64=cd is _F64, BLOCK_R=block)
    if vectors:  # W's side: an orthonormal completion where singular values are 0 or noise (w is free again)
        _launch(svd_complete_kernel, (B,), wv, s, w, R, K, *wvs, K, planes * C * R, COMPLEX=cplx, F64=cd is _F64,
                BLOCK_R=block)
