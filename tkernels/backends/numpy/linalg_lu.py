"""``cholesky``, ``lu_factor``, ``solve_triangular`` and the blocked LU's ``lu_panel``/``lu_swap_rows`` on
NumPy/SciPy (LAPACK; float32 for halves), each on the whole batch at once (``_lu_batched.py``).
Signatures: ``tkernels/factorizations.py``."""

from __future__ import annotations

import numpy as np
import scipy.linalg as _sl

from ...dispatch import register
from ._lu_batched import SMALL_TRSM, getrf, permutation, substitute
from ._util import npv


def _compute(x) -> np.ndarray:
    a = npv(x)
    if a.dtype.itemsize == 2:
        a = a.astype(np.float32)
    return a


@register("cholesky", "numpy")
def cholesky(out, info, x, upper: bool) -> None:
    # np.linalg.cholesky is LAPACK's potrf batched in C: it reads the lower triangle only (and a Hermitian
    # matrix's diagonal's real part), as PyTorch's; a failure anywhere raises for the whole batch, and then
    # potrf per matrix gives each one's code
    a = _compute(x)
    inf = npv(info)
    try:
        with np.errstate(all="ignore"):
            lo = np.linalg.cholesky(a)
        if not np.isfinite(np.diagonal(lo, axis1=-2, axis2=-1)).all():  # an inf input: LAPACK's potrf flags it
            raise np.linalg.LinAlgError
        inf[...] = 0
    except np.linalg.LinAlgError:
        flat = a.reshape(-1, *a.shape[-2:])
        potrf = _sl.lapack.get_lapack_funcs("potrf", (flat,))
        lo = np.zeros_like(flat)
        codes = inf.reshape(-1)
        for i, m in enumerate(flat):
            c, code = potrf(m, lower=True, clean=True)
            ok = code == 0 and np.isfinite(np.diagonal(c)).all()
            codes[i] = 0 if ok else (code if code > 0 else _first_bad(c))
            if ok:
                lo[i] = c
            else:  # the columns LAPACK completed before the failing minor, NaN-free
                k = codes[i] - 1
                if k:
                    lo[i, :k, :k] = np.linalg.cholesky(m[:k, :k])
        lo = lo.reshape(a.shape)
        inf[...] = codes.reshape(inf.shape)
    np.copyto(npv(out), np.swapaxes(lo, -1, -2).conj() if upper else lo, casting="unsafe")


def _first_bad(c: np.ndarray) -> int:
    """The order of the first non-finite pivot of a factor ``c`` that potrf did not flag (an inf input)."""
    return int(np.flatnonzero(~np.isfinite(np.diagonal(c)))[0]) + 1


@register("lu_factor", "numpy")
def lu_factor(lu, piv, info, x, pivot: bool = True) -> None:
    a = _compute(x)
    m, n = a.shape[-2:]
    r, p, f = getrf(a.reshape(-1, m, n), pivot)
    np.copyto(npv(lu), r.reshape(lu.shape), casting="unsafe")
    npv(piv)[...] = p.reshape(piv.shape)
    npv(info)[...] = f.reshape(info.shape)


def _permute_rows(B, piv, reverse: bool):  # noqa: N803
    """LAPACK's row swaps ``piv`` (1-based, broadcast to B's batch) applied to the rows of B (a fresh array)."""
    n = B.shape[-2]
    p = np.broadcast_to(piv, B.shape[:-2] + piv.shape[-1:]).reshape(-1, piv.shape[-1]) - 1
    perm = permutation(p, n, reverse)
    flat = B.reshape(-1, n, B.shape[-1])
    return np.take_along_axis(flat, perm[:, :, None], axis=1).reshape(B.shape)


@register("solve_triangular", "numpy")
def solve_triangular(out, a, b, upper: bool, unit: bool, piv, pivot_mode: int) -> None:
    A, B = _compute(a), _compute(b)  # noqa: N806
    dt = np.result_type(A, B)
    B = np.asarray(B, dtype=dt)  # noqa: N806
    n = B.shape[-2]
    if pivot_mode == 1:
        B = _permute_rows(B, npv(piv), False)  # noqa: N806
    if n <= SMALL_TRSM:  # small systems (see SMALL_TRSM): substitution on the whole batch
        X = substitute(A.astype(dt, copy=False), B, upper, unit)  # noqa: N806 - (it reads one triangle only)
    else:
        A = np.triu(A) if upper else np.tril(A)  # noqa: N806
        if unit:
            A = A.copy()  # noqa: N806
            idx = np.arange(n)
            A[..., idx, idx] = 1
        A = A.astype(dt, copy=False)  # noqa: N806
        try:
            X = _sl.solve_triangular(A, B, lower=not upper, check_finite=False)  # noqa: N806
        except np.linalg.LinAlgError:  # a zero on the diagonal: substitution, inf/NaN like the cuda kernel
            X = substitute(A, B, upper, unit)  # noqa: N806
    if pivot_mode == 2:
        X = _permute_rows(X, npv(piv), True)  # noqa: N806
    np.copyto(npv(out), X, casting="unsafe")


@register("lu_panel", "numpy")
def lu_panel(w, piv, info, k0: int, k1: int, pivot: bool = True) -> None:
    """The blocked LU's panel (signature: ``tkernels/solvers.py``), in place: getrf of rows ``k0..``, columns
    ``k0..k1-1`` of each matrix of ``w``, the pivots (of the whole matrix) into ``piv[..., k0:k1]``, ``info``
    (where still 0) the first zero pivot's 1-based index. ``pivot=False``: no row exchanges."""
    W = npv(w)  # noqa: N806
    m = W.shape[-2]
    panel = W[..., k0:, k0:k1]
    flat = _compute(w)[..., k0:, k0:k1].reshape(-1, m - k0, k1 - k0)
    res, p, codes = getrf(flat, pivot)
    np.copyto(panel, res.reshape(panel.shape), casting="unsafe")
    npv(piv)[..., k0:k1] = (p + k0).reshape(piv.shape[:-1] + (k1 - k0,))
    codes = np.where(codes > 0, codes + k0, 0)
    f = npv(info)
    f[...] = np.where(f == 0, codes.reshape(f.shape), f)


@register("lu_swap_rows", "numpy")
def lu_swap_rows(x, piv, offset: int, reverse: bool) -> None:
    """LAPACK's laswp in place on the (*b, R, C) view ``x``: rows ``i`` and ``piv[..., i] - 1 - offset`` swapped
    for each ``i`` of the (*b, P) pivots, in order (``reverse``: last first)."""
    X = npv(x)  # noqa: N806
    if X.size == 0:
        return
    r = X.shape[-2]
    pv = npv(piv)
    p = np.broadcast_to(pv, X.shape[:-2] + pv.shape[-1:]).reshape(-1, pv.shape[-1]) - 1 - offset
    perm = permutation(p, r, reverse)
    flat = X.reshape(-1, r, X.shape[-1]) if X.flags.c_contiguous else X.reshape(-1, r, X.shape[-1]).copy()
    X[...] = np.take_along_axis(flat, perm[:, :, None], axis=1).reshape(X.shape)
