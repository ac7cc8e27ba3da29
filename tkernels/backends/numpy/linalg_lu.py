"""``cholesky``, ``lu_factor`` and ``solve_triangular`` on NumPy/SciPy (LAPACK; float32 for halves).
Signatures: ``tkernels/factorizations.py``."""

from __future__ import annotations

import numpy as np
import scipy.linalg as _sl

from ...dispatch import register
from ._util import npv


def _compute(x) -> np.ndarray:
    a = npv(x)
    if a.dtype.itemsize == 2:
        a = a.astype(np.float32)
    return a


def _potrf_info(a: np.ndarray) -> int:
    """LAPACK's info of the Cholesky factorization of one matrix: 0 or the order of the first leading minor
    that is not positive-definite."""
    n = a.shape[-1]
    lo = np.tril(a).astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    for j in range(n):
        d = (lo[j, j] - lo[j, :j] @ lo[j, :j].conj()).real  # (a Hermitian matrix's pivots are real)
        if not d > 0:
            return j + 1
        lo[j, j] = np.sqrt(d)
        lo[j + 1:, j] = (lo[j + 1:, j] - lo[j + 1:, :j] @ lo[j, :j].conj()) / lo[j, j]
    return 0


@register("cholesky", "numpy")
def cholesky(out, info, x, upper: bool) -> None:
    a = _compute(x)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2).conj()  # LAPACK reads one triangle only
    if sym.dtype.kind == "c":  # ... and the real part of a Hermitian matrix's diagonal
        idx = np.arange(sym.shape[-1])
        sym[..., idx, idx] = sym[..., idx, idx].real
    inf = npv(info)
    try:
        lo = np.linalg.cholesky(sym)
        inf[...] = 0
        if not np.isfinite(np.diagonal(lo, axis1=-2, axis2=-1)).all():  # NaN input: LAPACK's potrf flags it
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        flat = sym.reshape(-1, *sym.shape[-2:])
        lo = np.zeros_like(flat)
        codes = inf.reshape(-1)
        for i, m in enumerate(flat):
            codes[i] = c = _potrf_info(m)
            if c == 0:
                lo[i] = np.linalg.cholesky(m)
            else:  # the columns LAPACK completed before the failing minor, NaN-free
                k = c - 1
                if k:
                    lo[i, :, :k] = 0
                    lo[i, :k, :k] = np.linalg.cholesky(m[:k, :k])
        lo = lo.reshape(sym.shape)
        inf[...] = codes.reshape(inf.shape)
    np.copyto(npv(out), np.swapaxes(lo, -1, -2).conj() if upper else lo, casting="unsafe")


@register("lu_factor", "numpy")
def lu_factor(lu, piv, info, x) -> None:
    a = _compute(x)
    m, n = a.shape[-2:]
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    getrf = _sl.lapack.get_lapack_funcs("getrf", (flat,))
    o, p, f = npv(lu).reshape(-1, m, n), npv(piv).reshape(-1, k), npv(info).reshape(-1)
    for i, mat in enumerate(flat):
        r, pv, code = getrf(mat)
        o[i], p[i], f[i] = r, pv[:k] + 1, code
    npv(lu)[...] = o.reshape(lu.shape)
    npv(piv)[...] = p.reshape(piv.shape)
    npv(info)[...] = f.reshape(info.shape)


def _substitute(A, B, upper):  # noqa: N803
    """Row-by-row substitution on the whole batch (rows ``i`` of ``X`` in solve order)."""
    n = B.shape[-2]
    X = np.zeros(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:], B.dtype)  # noqa: N806
    with np.errstate(all="ignore"):
        for i in (reversed(range(n)) if upper else range(n)):
            acc = B[..., i, :] - np.einsum("...j,...jk->...k", A[..., i, :], X)
            X[..., i, :] = acc / A[..., i, i, None]
    return X


@register("solve_triangular", "numpy")
def solve_triangular(out, a, b, upper: bool, unit: bool, piv, pivot_mode: int) -> None:
    A, B = _compute(a), _compute(b)  # noqa: N806
    dt = np.result_type(A, B)
    B = np.array(B, dtype=dt)  # noqa: N806 - a writable copy
    n = B.shape[-2]
    if pivot_mode == 1:
        p = np.broadcast_to(npv(piv), B.shape[:-1]).reshape(-1, n) - 1
        flat = B.reshape(-1, *B.shape[-2:])
        for j, row in enumerate(p):
            for i in range(n):
                flat[j, [i, row[i]]] = flat[j, [row[i], i]]
        B = flat.reshape(B.shape)  # noqa: N806
    A = np.triu(A) if upper else np.tril(A)  # noqa: N806
    if unit:
        A = A.copy()  # noqa: N806
        idx = np.arange(n)
        A[..., idx, idx] = 1
    A = A.astype(dt, copy=False)  # noqa: N806
    try:
        X = _sl.solve_triangular(A, B, lower=not upper, check_finite=False)  # noqa: N806
    except np.linalg.LinAlgError:  # a zero on the diagonal: substitution, inf/NaN like the cuda kernel
        X = _substitute(A, B, upper)  # noqa: N806
    if pivot_mode == 2:
        p = np.broadcast_to(npv(piv), X.shape[:-1]).reshape(-1, n) - 1
        flat = np.array(X).reshape(-1, *X.shape[-2:])
        for j, row in enumerate(p):
            for i in reversed(range(n)):
                flat[j, [i, row[i]]] = flat[j, [row[i], i]]
        X = flat.reshape(X.shape)  # noqa: N806
    np.copyto(npv(out), X, casting="unsafe")
