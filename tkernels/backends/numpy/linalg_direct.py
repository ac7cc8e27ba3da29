"""One-call cpu implementations of ops that ``tkernels/solvers.py`` otherwise composes of ``lu_factor`` and
triangular solves: NumPy's LAPACK gufuncs loop over the batch in C (``np.linalg.solve`` at 10^4 x 16x16 float32:
20 ms, the composed path 525 ms before the batched backends). Only the numpy backend has these ops; the entries
use them where registered (``dispatch.has_impl``). Float32 for halves.

    linalg_solve(out, info, a, b)       a (*b, N, N), b and out (*b, N, K) (one batch shape)   info (*b,)
    linalg_inv_ex(out, info, a)         a, out (*b, N, N)                                       info (*b,)
    linalg_det(out, a)                  out (*b,)
    linalg_slogdet(sign, logabsdet, a)  sign, logabsdet (*b,)

``info`` is getrf's (0 or the first zero pivot, 1-based). NumPy raises for the whole batch when any matrix is
singular; then the batched LU (``_lu_batched.getrf``) gives every code and the solution with its inf/NaN.
"""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._lu_batched import getrf, permutation, substitute
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
