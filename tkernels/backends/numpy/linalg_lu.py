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


@register("lu_panel", "numpy")
def lu_panel(w, piv, info, k0: int, k1: int) -> None:
    """The blocked LU's panel (signature: ``tkernels/solvers.py``), in place: getrf of rows ``k0..``, columns
    ``k0..k1-1`` of each matrix of ``w``, the pivots (of the whole matrix) into ``piv[..., k0:k1]``, ``info``
    (where still 0) the first zero pivot's 1-based index."""
    W = npv(w)  # noqa: N806
    m = W.shape[-2]
    panel = W[..., k0:, k0:k1]
    flat = np.array(_compute(w)[..., k0:, k0:k1]).reshape(-1, m - k0, k1 - k0)
    getrf = _sl.lapack.get_lapack_funcs("getrf", (flat,))
    res = np.empty_like(flat)
    p = np.empty((flat.shape[0], k1 - k0), np.int32)
    codes = np.empty(flat.shape[0], np.int32)
    for i, mat in enumerate(flat):
        r, pv, code = getrf(mat)
        res[i], p[i], codes[i] = r, pv[:k1 - k0] + 1 + k0, code + k0 if code > 0 else 0
    np.copyto(panel, res.reshape(panel.shape), casting="unsafe")
    npv(piv)[..., k0:k1] = p.reshape(piv.shape[:-1] + (k1 - k0,))
    f = npv(info)
    f[...] = np.where(f == 0, codes.reshape(f.shape), f)


@register("lu_swap_rows", "numpy")
def lu_swap_rows(x, piv, offset: int, reverse: bool) -> None:
    """LAPACK's laswp in place on the (*b, R, C) view ``x``: rows ``i`` and ``piv[..., i] - 1 - offset`` swapped
    for each ``i`` of the (*b, P) pivots, in order (``reverse``: last first)."""
    X = npv(x)  # noqa: N806
    P = np.broadcast_to(npv(piv), X.shape[:-2] + npv(piv).shape[-1:])  # noqa: N806
    for idx in np.ndindex(*X.shape[:-2]):
        mat, pv = X[idx], P[idx] - 1 - offset
        for i in (reversed(range(len(pv))) if reverse else range(len(pv))):
            j = int(pv[i])
            if j != i:
                mat[[i, j]] = mat[[j, i]]
