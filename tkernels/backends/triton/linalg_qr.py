"""``qr`` and ``eigh`` on cuda (signatures: ``tkernels/decompositions.py``).

``qr``: Householder QR, one program per matrix (``qr_kernel`` in ``tkernels/kernels/qr.py``). Q is accumulated
in the compute dtype: for float16/bfloat16 outputs into a scratch that is cast into ``q`` afterwards.

``eigh``: Jacobi on the device through the one-sided Jacobi SVD kernels (``svd_kernel``; ``csvd_kernel`` for
complex input): the symmetric (Hermitian) matrix ``S`` (the strict triangle ``UPLO`` mirrored, conjugated for
complex input, plus the diagonal's real part: LAPACK's heevd ignores its imaginary part) is shifted by
Gershgorin's bound ``g = max_i sum_j |s_ij|`` to ``S + g I``, which is positive semi-definite, so its SVD is its
eigen-decomposition: eigenvalues ``sigma - g`` (reversed into ascending order) and eigenvectors the right
singular vectors. Why those are eigenvectors also for repeated eigenvalues: the kernel returns a unitary V with
``(S + g I) V = W`` of orthogonal columns, ``|w_j| = sigma_j``; then ``V^H (S + g I)^2 V = diag(sigma^2)``, so V
diagonalizes ``(S + g I)^2``, and as ``S + g I`` is the unique positive semi-definite square root of that,
``S + g I = V diag(sigma) V^H``: every column of V is an eigenvector, whatever basis of a repeated eigenvalue's
space the sweeps settled on (V is always a full unitary basis, also where a shifted eigenvalue is 0). The error
is normwise (``~eps |S|``, as LAPACK's syevd); the symmetrize, shift and reversal are device ops, nothing goes
through the host.
"""

from __future__ import annotations

import functools

import tkernels as _tk

from ... import dtypes as _dt
from ..._complex import CUDA_COMPLEX_OPS, view_as_real
from ...array import Array
from ...dispatch import lookup, register
from ...kernels.qr import GPU_BLOCKS, qr_kernel
from ...kernels.qr_complex import cqr_kernel
from ._launch import INTERPRETED, collapse
from .memory import empty
from .reduction import TILE, _launch, _pow2

_F32, _F64 = _dt.float32, _dt.float64
CUDA_COMPLEX_OPS.update({"qr", "eigh", "eigvalsh", "householder_product"})  # complex kernel paths here


@functools.lru_cache(maxsize=1024)
def _plan(shape, strides, interpreted):
    """(batch args, BLOCK_R) for matrices of ``shape``/``strides``."""
    m = shape[-2]
    sizes, (st,) = collapse(list(shape[:-2]) or [1], list(strides[:-2]) or [0])
    if interpreted:
        block = min(_pow2(m), TILE)
    else:
        block = GPU_BLOCKS[0] if m <= GPU_BLOCKS[0] else GPU_BLOCKS[1]
    return (*sizes[1:], *st), block


@register("qr", "triton")
def qr(q, r, x: Array, compute) -> None:
    if x._dtype.kind == "c":
        _cqr(q, r, x, compute)
        return
    m, n = x._shape[-2:]
    K = min(m, n)
    B = r.size // (r._shape[-2] * n)
    cd = _F64 if compute is _F64 else _F32
    batch, block = _plan(x._shape, x._strides, INTERPRETED)
    w = empty((B, n, m), cd, x.device)
    tau = empty((B, K), cd, x.device)
    want = q is not None
    qs = q if not want or q._dtype in (_F32, _F64) else empty(q._shape, cd, x.device)
    _launch(qr_kernel, (B,), x, w, tau, qs if want else tau, r, m, n, K, q._shape[-1] if want else 0,
            r._shape[-2], x._strides[-2], x._strides[-1], *batch, WANT_Q=want, F64=cd is _F64, BLOCK_R=block)
    if want and qs is not q:
        lookup("copy_", x.device)(q, qs)


def _cqr(q, r, x: Array, compute) -> None:
    """Complex QR (``cqr_kernel``) on the real pair views: strides in real words, results written in place."""
    m, n = x._shape[-2:]
    K = min(m, n)
    B = r.size // (r._shape[-2] * n)
    cd = _dt.to_real(compute)
    xv = view_as_real(x)
    st = xv._strides[:-1]
    batch, block = _plan(x._shape, st, INTERPRETED)
    w = empty((B, 2, n, m), cd, x.device)
    tau = empty((B, K, 2), cd, x.device)
    want = q is not None
    _launch(cqr_kernel, (B,), xv, w, tau, view_as_real(q) if want else tau, view_as_real(r), m, n, K,
            q._shape[-1] if want else 0, r._shape[-2], st[-2], st[-1], *batch, WANT_Q=want, F64=cd is _F64,
            BLOCK_R=block)


@register("eigh", "triton")
def eigh(w, v, x: Array, upper, compute) -> None:
    cplx = x._dtype.kind == "c"
    cd = compute if cplx else _F64 if compute is _F64 else _F32
    a = x if x._dtype is cd else _tk.astype(x, cd)
    n = x._shape[-1]
    dev = x.device
    rd = _dt.to_real(cd)
    eye = _tk.eye(n, dtype=rd, device=dev)
    # the Hermitian matrix of the triangle read: the strict triangle, its (conjugate) transpose, the real diagonal
    t = _tk.triu(a, k=1) if upper else _tk.tril(a, k=-1)
    d = _tk.real(_tk.diagonal(a, axis1=-2, axis2=-1)) if cplx else _tk.diagonal(a, axis1=-2, axis2=-1)
    s = t + (t.mH if cplx else t.matrix_transpose()) + eye * d[..., None, :]
    g = _tk.max(_tk.sum(_tk.abs(s), axis=-1), axis=-1)  # (...): Gershgorin's bound of the spectrum
    shifted = s + g[..., None, None] * eye
    sv = empty(x._shape[:-1], rd, dev)
    if v is None:
        lookup("svd", dev)(None, sv, None, shifted, cd)
    else:
        u = empty(x._shape, cd, dev)
        vh = empty(x._shape, cd, dev)
        lookup("svd", dev)(u, sv, vh, shifted, cd)
        lookup("copy_", dev)(v, _tk.flip(vh.mH if cplx else vh.matrix_transpose(), axis=-1))
    lookup("copy_", dev)(w, _tk.flip(sv - g[..., None], axis=-1))
