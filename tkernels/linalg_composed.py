"""The rest of ``tkernels.linalg``, composed of other ops (so every device that has them serves these): the array
API's ``cross``, ``diagonal``, ``matrix_transpose``, ``trace``, ``pinv``, ``matrix_rank``, and PyTorch's
``lstsq``, ``norm``, ``vander``, ``householder_product``.

``pinv``/``matrix_rank``/``lstsq`` go through ``svd`` (or ``eigh`` with ``hermitian=True``): singular values at
or below ``max(atol, rtol * largest)`` count as zero, PyTorch's rule (``rtol`` defaults to ``eps * max(M, N)``
when neither is given, to 0 when only ``atol`` is). ``lstsq`` is the SVD solver (LAPACK's gelsd semantics):
rank-deficient and under/over-determined systems get the minimum-norm least-squares solution.
"""

from __future__ import annotations

from typing import NamedTuple

import tkernels as _tk  # (attributes read at call time: this module loads while tkernels does)

from . import dtypes as _dt
from .array import Array
from .decompositions import _check, eigh, svd, svdvals
from .products import matmul
from .validation import OpTypeError, OpValueError, as_int, broadcast_shapes, describe


class LstsqResult(NamedTuple):
    solution: Array
    residuals: Array
    rank: Array
    singular_values: Array


def _arr(op, x, name="x"):
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array for {name}, got {describe(x)}; hint: convert with "
                          f"tkernels.asarray(...)")
    return x


def matrix_transpose(x, /) -> Array:
    """A view with the last two axes swapped (at least 2-D)."""
    if _arr("matrix_transpose", x).ndim < 2:
        raise OpValueError(f"matrix_transpose: expected at least 2 dimensions, got {describe(x)}")
    return x.matrix_transpose()


def diagonal(x, /, *, offset: int = 0) -> Array:
    """The diagonal ``offset`` of the matrices in the last two axes (a view), shape (..., L)."""
    if _arr("diagonal", x).ndim < 2:
        raise OpValueError(f"diagonal: expected at least 2 dimensions, got {describe(x)}")
    return _tk.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None) -> Array:
    """The sums (...) of the diagonals ``offset`` of the matrices in the last two axes (``sum``'s dtype rules)."""
    if _arr("trace", x).ndim < 2:
        raise OpValueError(f"trace: expected at least 2 dimensions, got {describe(x)}")
    return _tk.sum(_tk.diagonal(x, offset=offset, axis1=-2, axis2=-1), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis: int = -1) -> Array:
    """The cross products of the 3-vectors along ``axis`` of ``x1`` and ``x2`` (broadcast together)."""
    _arr("cross", x1, "x1"), _arr("cross", x2, "x2")
    shape = broadcast_shapes(x1._shape, x2._shape, op="cross")
    ax = as_int("cross", "axis", axis)
    if not -len(shape) <= ax < len(shape) or shape[ax] != 3:
        raise OpValueError(f"cross: axis {axis} must name a dimension of size 3 of the broadcast shape {shape} "
                           f"({describe(x1)}, {describe(x2)})")
    if x1._dtype.kind == "b" or x2._dtype.kind == "b":
        raise OpTypeError(f"cross: expected numeric arrays, got {describe(x1)} and {describe(x2)}")
    a = _tk.moveaxis(x1.broadcast_to(shape), ax, -1)
    b = _tk.moveaxis(x2.broadcast_to(shape), ax, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    r = _tk.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return _tk.moveaxis(r, -1, ax)


def vander(x, /, *, N: int | None = None) -> Array:  # noqa: N803 - PyTorch's name
    """PyTorch's ``linalg.vander``: (..., n, N) with columns ``x**0, x**1, ..., x**(N-1)`` (N defaults to n)."""
    if _arr("vander", x).ndim < 1:
        raise OpValueError(f"vander: expected at least 1 dimension, got {describe(x)}")
    n = x._shape[-1]
    N = n if N is None else as_int("vander", "N", N)  # noqa: N806
    if N < 0:
        raise OpValueError(f"vander: N must be non-negative, got {N} for {describe(x)}")
    shape = x._shape + (N,)
    if N <= 1 or x.size == 0:
        return _tk.ones(shape, dtype=x.dtype, device=x.device) if N else _tk.empty(shape, dtype=x.dtype,
                                                                                        device=x.device)
    cols = _tk.concat([_tk.ones(x._shape + (1,), dtype=x.dtype, device=x.device),
                       _tk.broadcast_to(x[..., None], x._shape + (N - 1,))], axis=-1)
    return _tk.cumulative_prod(cols, axis=-1)


def _h(x):
    """The conjugate transpose of the matrices (the transpose for real ones)."""
    return x.mH if x._dtype.kind == "c" else x.matrix_transpose()


def _threshold(op, x, s, rtol, atol):
    """``max(atol, rtol * s_max)`` of shape (..., 1) as PyTorch, with its defaults; s (..., K) descending."""
    m, n = x._shape[-2:]
    if rtol is None:
        rtol = _dt.finfo(s.dtype).eps * max(m, n) if atol is None or (not isinstance(atol, Array) and atol <= 0) \
            else 0.0
    smax = s[..., :1] if s._shape[-1] else _tk.zeros(s._shape[:-1] + (1,), dtype=s.dtype, device=s.device)
    t = smax * (rtol[..., None] if isinstance(rtol, Array) else rtol)
    if atol is not None:
        t = _tk.maximum(t, atol[..., None] if isinstance(atol, Array) else _tk.full_like(t, atol))
    return t


def _sv(op, x, hermitian):
    """Singular values (..., K) descending; with ``hermitian`` the |eigenvalues| (sorted descending)."""
    _check(op, x)
    if hermitian:
        w = eigh(x).eigenvalues
        return _tk.sort(_tk.abs(w), axis=-1, descending=True)
    return svdvals(x)


def matrix_rank(x, /, *, rtol=None, atol=None, hermitian: bool = False) -> Array:
    """The number (int64, (...)) of singular values above ``max(atol, rtol * largest)``."""
    s = _sv("matrix_rank", x, hermitian)
    t = _threshold("matrix_rank", x, s, rtol, atol)
    return _tk.sum(_tk.astype(s > t, _dt.int64), axis=-1, dtype=_dt.int64)


def pinv(x, /, *, rtol=None, atol=None, hermitian: bool = False) -> Array:
    """The Moore-Penrose pseudo-inverse (..., N, M) through the SVD (``hermitian``: the eigen-decomposition);
    singular values at or below ``max(atol, rtol * largest)`` are dropped."""
    _check("pinv", x)
    if hermitian:
        w, v = eigh(x)
        a = _tk.abs(w)
        amax = _tk.max(a, axis=-1, keepdims=True) if a.size else a[..., :1]
        t = _threshold("pinv", x, amax, rtol, atol)
        winv = _tk.where(a > t, 1 / _tk.where(a > t, w, _tk.ones_like(w)), _tk.zeros_like(w))
        return matmul(v * winv[..., None, :], _h(v))
    u, s, vh = svd(x, full_matrices=False)
    t = _threshold("pinv", x, s, rtol, atol)
    sinv = _tk.where(s > t, 1 / _tk.where(s > t, s, _tk.ones_like(s)), _tk.zeros_like(s))
    return matmul(_h(vh) * sinv[..., None, :], _h(u))


def lstsq(a, b, /, *, rcond=None, driver: str | None = None) -> LstsqResult:
    """PyTorch's ``linalg.lstsq``: ``(solution, residuals, rank, singular_values)`` of ``min ||a x - b||`` for a
    (..., M, N) and b (..., M, K) (batch dims broadcast), by the SVD: the minimum-norm solution (..., N, K);
    ``residuals`` (..., K) the squared residual norms when M > N and every matrix has full rank, else
    empty (the rank test is a host read, a sync on cuda);
    ``rank`` (...) int64; ``singular_values`` (..., min(M, N)). ``rcond``: singular values at or below
    ``rcond * largest`` count as zero (default eps * max(M, N)). ``driver`` may be None, 'gelsd' or 'gelss'
    (both SVD drivers; the QR-based 'gels'/'gelsy' are not offered)."""
    _check("lstsq", a), _arr("lstsq", b, "b")
    if driver not in (None, "gelsd", "gelss"):
        raise OpValueError(f"lstsq: driver must be None, 'gelsd' or 'gelss' (SVD solvers), got {driver!r}; hint: "
                           f"the QR drivers 'gels'/'gelsy' are not offered, pass driver=None")
    if b.ndim < 2 or b._shape[-2] != a._shape[-2] or b._dtype != a._dtype or b.device != a.device:
        raise OpValueError(f"lstsq: expected b (..., M, K) with M = {a._shape[-2]} and the dtype and device of a, got "
                           f"a {describe(a)} and b {describe(b)}; hint: a vector right-hand side is b[..., None]")
    m, n = a._shape[-2:]
    batch = broadcast_shapes(a._shape[:-2], b._shape[:-2], op="lstsq")
    a = a.broadcast_to(batch + (m, n))
    b = b.broadcast_to(batch + b._shape[-2:])
    u, s, vh = svd(a, full_matrices=False)
    t = _threshold("lstsq", a, s, rcond, None)
    keep = s > t
    sinv = _tk.where(keep, 1 / _tk.where(keep, s, _tk.ones_like(s)), _tk.zeros_like(s))
    x = matmul(_h(vh) * sinv[..., None, :], matmul(_h(u), b))
    rank = _tk.sum(_tk.astype(keep, _dt.int64), axis=-1, dtype=_dt.int64)
    # PyTorch's rule: residuals when M > N and every matrix has full rank (a host read of the ranks, as PyTorch's)
    if m > n and (rank.size == 0 or bool(_tk.all(rank == n))):
        e = matmul(a, x) - b
        res = _tk.sum(_tk.real(e * _tk.conj(e)) if e.dtype.kind == "c" else e * e, axis=-2)
    else:
        res = _tk.empty((0,), dtype=_dt.to_real(a.dtype), device=a.device)
    return LstsqResult(x, res, rank, s)


def householder_product(a, tau, /) -> Array:
    """PyTorch's ``linalg.householder_product``: the first N columns (..., M, N) of ``H_1 ... H_k`` with
    ``H_i = I - tau_i v_i v_i^H``, v_i the i-th column of ``a`` below the diagonal with a 1 on it (k <= N <= M);
    ``v_i^H`` is ``v_i^T`` for real input."""
    _check("householder_product", a), _arr("householder_product", tau, "tau")
    m, n = a._shape[-2:]
    k = tau._shape[-1] if tau.ndim else -1
    if not (n <= m and 0 <= k <= n and tau._shape[:-1] == a._shape[:-2]) or tau.dtype != a.dtype \
            or tau.device != a.device:
        raise OpValueError(f"householder_product: expected a (..., M, N) with N <= M and tau (..., k) with k <= N, "
                           f"the same batch, dtype and device; got a {describe(a)} and tau {describe(tau)}")
    q = _tk.broadcast_to(_tk.eye(m, n, dtype=a.dtype, device=a.device), a._shape)
    if k == 0 or a.size == 0:
        return q + 0
    v = _tk.tril(a[..., :k], k=-1) + _tk.eye(m, k, dtype=a.dtype, device=a.device)
    for i in range(k - 1, -1, -1):
        vi = v[..., i:i + 1]
        q = q - tau[..., i, None, None] * matmul(vi, matmul(_h(vi), q))
    return q


def norm(x, /, ord=None, axis=None, keepdims: bool = False, *, dtype=None) -> Array:  # noqa: A002
    """NumPy's and PyTorch's ``linalg.norm``: a vector norm (1-D input or an int ``axis``), a matrix norm (2-D
    input or a 2-tuple ``axis``), or with ``ord=None`` the 2-norm of the flattened input."""
    _arr("norm", x)
    if dtype is not None:
        x = _tk.astype(x, dtype)
    if isinstance(axis, int):
        axis = (axis,)
    if axis is None:
        if ord is None or x.ndim == 1:
            return _tk.vector_norm(x, axis=None, keepdims=keepdims, ord=2 if ord is None else ord)
        if x.ndim != 2:
            raise OpValueError(f"norm: with ord={ord!r} and no axis the input must be 1-D or 2-D, got {describe(x)}")
        axis = (0, 1)
    axis = tuple(axis)
    if len(axis) == 1:
        return _tk.vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise OpValueError(f"norm: axis must be an int or a tuple of 1 or 2 ints, got {axis!r} for {describe(x)}")
    d0, d1 = (as_int("norm", "axis", d) % max(x.ndim, 1) for d in axis)
    if d0 == d1 or x.ndim < 2:
        raise OpValueError(f"norm: the two axes must be different dimensions, got {axis!r} for {describe(x)}")
    y = _tk.moveaxis(x, (d0, d1), (-2, -1))
    r = _tk.matrix_norm(y, ord="fro" if ord is None else ord)
    if keepdims:
        r = _tk.expand_dims(_tk.expand_dims(r, min(d0, d1)), max(d0, d1))
    return r
