"""Matrix multiplication on NumPy (BLAS for float32/float64; float16/bfloat16 through float32)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import lapack, npv

_F32 = np.dtype(np.float32)


@register("matmul", "numpy")
def matmul(out, x1, x2) -> None:
    """``out (*batch, M, N) = x1 (*batch, M, K) @ x2 (*batch, K, N)``; one batch shape, any strides, K > 0."""
    o = npv(out)
    cd = o.dtype
    if cd.itemsize == 2 and cd.kind != "i":  # float16, bfloat16 (kind 'V'): accumulate in float32
        cd = _F32
    a = npv(x1)
    b = npv(x2)
    if a.dtype != cd:
        a = a.astype(cd)
    if b.dtype != cd:
        b = b.astype(cd)
    nb = o.ndim - 2
    if nb and not any(b.strides[:nb]):
        # x2 shared by every batch entry (a weight): one (B*M, K) @ (K, N) GEMM instead of B small ones, as
        # np.matmul loops over the batch: (64, 32, 256) @ (256, 256) float32 on 2 cores, 14 ms folded against
        # 49 ms for the loop over a broadcast weight and 460 ms for np.matmul on the 2-D weight itself.
        b = b[(0,) * nb]
        a = a.reshape(-1, a.shape[-1])
        if o.dtype == cd and o.flags.c_contiguous:
            np.matmul(a, b, out=o.reshape(-1, o.shape[-1]))
        else:
            np.copyto(o, np.matmul(a, b).reshape(o.shape), casting="unsafe")
        return
    if o.dtype == cd:
        np.matmul(a, b, out=o)
    else:
        np.copyto(o, np.matmul(a, b), casting="unsafe")


@register("svd", "numpy")
def svd(u, s, vh, x, compute) -> None:
    """LAPACK's SVD (float32 for halves); ``u``/``vh`` None: singular values only. Full factors when ``u`` is square."""
    a = npv(x)
    if a.dtype != compute.numpy:
        a = a.astype(compute.numpy)
    if u is None:  # (non-finite input never gets here: the entry raises PyTorch's LinAlgError)
        np.copyto(npv(s), lapack("svd", "singular values", np.linalg.svd, a, compute_uv=False), casting="unsafe")
        return
    m = a.shape[-2]
    ru, rs, rvh = lapack("svd", "singular values", np.linalg.svd, a,
                         full_matrices=u.shape[-1] == m and vh.shape[-2] == a.shape[-1])
    np.copyto(npv(u), ru, casting="unsafe")
    np.copyto(npv(s), rs, casting="unsafe")
    np.copyto(npv(vh), rvh, casting="unsafe")


def _compute(x, compute):
    a = npv(x)
    return a.astype(compute.numpy) if a.dtype != compute.numpy else a


@register("qr", "numpy")
def qr(q, r, x, compute) -> None:
    """LAPACK's Householder QR (geqrf + orgqr through np.linalg.qr); ``q`` None: R only."""
    a = _compute(x, compute)
    if q is None:
        np.copyto(npv(r), np.triu(np.linalg.qr(a, mode="r")[..., : r.shape[-2], :]), casting="unsafe")
        return
    rq, rr = np.linalg.qr(a, mode="complete" if q.shape[-1] == a.shape[-2] else "reduced")
    np.copyto(npv(q), rq, casting="unsafe")
    np.copyto(npv(r), rr, casting="unsafe")


@register("eigh", "numpy")
def eigh(w, v, x, upper, compute) -> None:
    """LAPACK's symmetric eigensolver (syevd through np.linalg.eigh); ``v`` None: eigenvalues only."""
    a = _compute(x, compute)
    uplo = "U" if upper else "L"
    if v is None:  # (non-finite input never gets here: the entry raises PyTorch's LinAlgError)
        np.copyto(npv(w), lapack("eigh", "eigenvalues", np.linalg.eigvalsh, a, UPLO=uplo), casting="unsafe")
        return
    rw, rv = lapack("eigh", "eigenvalues", np.linalg.eigh, a, UPLO=uplo)
    np.copyto(npv(w), rw, casting="unsafe")
    np.copyto(npv(v), rv, casting="unsafe")
