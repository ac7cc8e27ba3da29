"""One-call cpu implementations of ops that ``tkernels/solvers.py`` otherwise composes of ``lu_factor`` and
triangular solves: NumPy's LAPACK gufuncs loop over the batch in C (``np.linalg.solve`` at 10^4 x 16x16 float32:
20 ms, the composed path 525 ms before the batched backends). Only the numpy backend has these ops; the entries
use them where registered (``dispatch.has_impl``). Float32 for halves.

    linalg_solve(out, info, a, b)       a (*b, N, N), b and out (*b, N, K) (one batch shape)   info (*b,)
    linalg_inv_ex(out, info, a)         a, out (*b, N, N)                                       info (*b,)
    linalg_det(out, a)                  out (*b,)
    linalg_slogdet(sign, logabsdet, a)  sign, logabsdet (*b,)
    linalg_lu_solve(out, lu, piv, b, adjoint)
                                        lu (*b, N, N), piv (*b, N), b and out (*b, N, K): A X = B (A^H X = B)

``info`` is getrf's (0 or the first zero pivot, 1-based). NumPy raises for the whole batch when any matrix is
singular; then the batched LU (``_lu_batched.getrf``) gives every code and the solution with its inf/NaN.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as _sl

from ...dispatch import register
from ._lu_batched import SMALL_TRSM, getrf, permutation, substitute
from ._util import npv


def _compute(x) -> np.ndarray:
    a = npv(x)
    return a.astype(np.float32) if a.dtype.itemsize == 2 else a


def _lu_solve(a: np.ndarray, b: np.ndarray):
    """``(X, info)`` of ``A X = B`` through the batched LU, for a batch that holds a singular matrix."""
    n = a.shape[-1]
    lu, piv, info = getrf(a.reshape(-1, n, n))
    bb = np.broadcast_to(b, a.shape[:-2] + b.shape[-2:]).reshape(-1, n, b.shape[-1])
    bb = np.take_along_axis(bb, permutation(piv - 1, n)[:, :, None], axis=1)
    x = substitute(lu, bb, False, True)
    x = substitute(lu, x, True, False)
    return x.reshape(a.shape[:-2] + b.shape[-2:]), info.reshape(a.shape[:-2])


@register("linalg_solve", "numpy")
def linalg_solve(out, info, a, b) -> None:
    A, B = _compute(a), _compute(b)  # noqa: N806
    try:
        X, code = np.linalg.solve(A, B), 0  # noqa: N806
    except np.linalg.LinAlgError:
        X, code = _lu_solve(A, B)  # noqa: N806
    np.copyto(npv(out), X, casting="unsafe")
    npv(info)[...] = code


@register("linalg_inv_ex", "numpy")
def linalg_inv_ex(out, info, a) -> None:
    A = _compute(a)  # noqa: N806
    try:
        X, code = np.linalg.inv(A), 0  # noqa: N806
    except np.linalg.LinAlgError:
        X, code = _lu_solve(A, np.eye(A.shape[-1], dtype=A.dtype))  # noqa: N806
    np.copyto(npv(out), X, casting="unsafe")
    npv(info)[...] = code


@register("linalg_det", "numpy")
def linalg_det(out, a) -> None:
    np.copyto(npv(out), np.linalg.det(_compute(a)), casting="unsafe")


@register("linalg_slogdet", "numpy")
def linalg_slogdet(sign, logabsdet, a) -> None:
    s, ld = np.linalg.slogdet(_compute(a))
    np.copyto(npv(sign), s, casting="unsafe")
    np.copyto(npv(logabsdet), ld, casting="unsafe")


@register("linalg_lu_solve", "numpy")
def linalg_lu_solve(out, lu, piv, b, adjoint: bool) -> None:
    """``lu_solve`` from getrf's factors: small systems vectorised over the batch (the row swaps as one gather, two
    substitutions), larger ones LAPACK's getrs per matrix (SciPy's batched lu_solve is the same loop)."""
    LU, B = _compute(lu), _compute(b)  # noqa: N806
    dt = np.result_type(LU, B)
    n, k = B.shape[-2:]
    P = npv(piv).reshape(-1, n) - 1  # noqa: N806
    flat_lu, flat_b = LU.reshape(-1, n, n), B.reshape(-1, n, k)
    if n <= SMALL_TRSM:
        if not adjoint:  # X = U^-1 L^-1 P^T B
            x = np.take_along_axis(flat_b.astype(dt, copy=False), permutation(P, n)[:, :, None], axis=1)
            x = substitute(flat_lu, x, False, True)
            x = substitute(flat_lu, x, True, False)
        else:  # A^H = U^H L^H P^T: X = P L^-H U^-H B
            lh = np.swapaxes(flat_lu, -1, -2).conj()
            x = substitute(lh, flat_b, False, False)
            x = substitute(lh, x, True, True)
            x = np.take_along_axis(x, permutation(P, n, True)[:, :, None], axis=1)
    else:
        getrs = _sl.lapack.get_lapack_funcs("getrs", (flat_lu, flat_b))
        trans = (2 if dt.kind == "c" else 1) if adjoint else 0
        x = np.empty(flat_b.shape, dt)
        with np.errstate(all="ignore"):
            for i in range(flat_b.shape[0]):
                x[i] = getrs(flat_lu[i], P[i], flat_b[i], trans=trans)[0]
    np.copyto(npv(out), x.reshape(out.shape), casting="unsafe")
