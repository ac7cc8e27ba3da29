"""``autograd.linalg``: PyTorch's ``torch.linalg`` names for the norms, products and decompositions autograd
has (vector_norm, matrix_norm, norm, vecdot, matmul, svd, svdvals, qr, eigh, eigvalsh, pinv, lstsq, cross,
diagonal, vander, householder_product, matrix_rank, eig, eigvals); differentiable except matrix_rank (an
integer)."""

from __future__ import annotations

import collections
import math

import tkernels as tk

from .graph import Node
from .ops._base import needs_grad, wrap
from .ops.linalg import matmul, vecdot
from .ops.linalg_decomp import eigh, eigvalsh, qr
from .ops.linalg_eig import eig, eigvals
from .ops.linalg_factor import (  # noqa: F401 - factorizations and solves
    LinAlgError,
    cholesky,
    cholesky_ex,
    cond,
    det,
    inv,
    inv_ex,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matrix_power,
    multi_dot,
    slogdet,
    solve,
    solve_triangular,
)
from .ops.reduction import amax, amin, vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul", "svd", "svdvals", "qr", "eigh", "eigvalsh",
           "eig", "eigvals", "pinv", "matrix_rank", "lstsq", "cross", "diagonal", "vander", "householder_product"]
__all__ += ["LinAlgError", "cholesky", "cholesky_ex", "solve_triangular", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
            "solve", "inv", "inv_ex", "det", "slogdet", "matrix_power", "multi_dot", "cond"]

# PyTorch's torch.return_types.linalg_svd
SVDResult = collections.namedtuple("linalg_svd", ("U", "S", "Vh"))
SVDResult.__module__ = "autograd.return_types"


class LinalgSvdBackward0(Node):
    """The SVD's backward (PyTorch's ``svd_backward``): with ``E_jk = s_k^2 - s_j^2`` (1 on the diagonal) and
    ``skew(X) = X - X^H``, ``X = (skew(U^H gU) S + S skew(Vh gVh^H)) / E + diag(gS)`` (complex: plus
    ``diag(skew(U^H gU)) / 2S``, the phase of U's columns fixed against V's) and ``gA = U X Vh``, plus for a tall
    matrix ``(I - U U^H) gU S^-1 Vh`` and for a wide one ``U S^-1 gVh (I - Vh^H Vh)``. Full factors of a
    non-square matrix: the columns beyond min(M, N) get no gradient (as PyTorch). A complex loss that depends on
    the singular vectors' phases raises PyTorch's error. Written with differentiable ops: twice differentiable
    where the singular values are distinct and nonzero; for PyTorch's convention directly (not holomorphic)."""

    _materialize = False  # an unused U or Vh gets no term (svdvals, norms: only gS)
    _holomorphic = False

    def __init__(self, A, m, n, full):  # noqa: N803
        super().__init__((A,))
        self.m, self.n, self.full = m, n, full

    def backward(self, gU, gS, gVh):  # noqa: N803
        U, S, Vh = self.saved_tensors  # noqa: N806
        m, n = self.m, self.n
        k = min(m, n)
        if self.full and m != n:
            U, Vh = U[..., :k], Vh[..., :k, :]  # noqa: N806
            gU = None if gU is None else gU[..., :k]  # noqa: N806
            gVh = None if gVh is None else gVh[..., :k, :]  # noqa: N806
        if gU is None and gVh is None:
            if gS is None:
                return (None,)
            return (matmul(U * gS.unsqueeze(-2), Vh),)
        complex_ = U._data.dtype.kind == "c"
        Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)  # noqa: N806 - S as a row / a column
        S2 = S * S  # noqa: N806
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S)  # noqa: N806
        UhgU = None if gU is None else matmul(U.mH, gU)  # noqa: N806
        VhgV = None if gVh is None else matmul(Vh, gVh.mH)  # noqa: N806
        if complex_:
            from .ops.linalg_decomp import _check_phase_invariance
            _check_phase_invariance("linalg_svd_backward", UhgU if UhgU is not None else VhgV,
                                    VhgV if UhgU is not None else None)
        X = 0  # noqa: N806
        if gU is not None:
            UhgU = UhgU - UhgU.mH  # noqa: N806
            X = X + UhgU * Sr  # noqa: N806
        if gVh is not None:
            X = X + Sc * (VhgV - VhgV.mH)  # noqa: N806
        X = X / E  # noqa: N806
        if gS is not None:
            X = X + _eye(k, S) * gS.unsqueeze(-2)  # noqa: N806
        if complex_ and gU is not None:
            from .ops.shape import diag_embed
            X = X + diag_embed(UhgU.diagonal(0, -2, -1) / (2 * S))  # noqa: N806
        if m > n and gU is not None:
            gUS = gU / Sr  # noqa: N806
            gA = matmul(matmul(U, X) + gUS - matmul(U, matmul(U.mH, gUS)), Vh)  # noqa: N806
        elif m < n and gVh is not None:
            gVS = gVh / Sc  # noqa: N806 - (S^-1 gVh)
            gA = matmul(U, matmul(X, Vh) + gVS - matmul(matmul(gVS, Vh.mH), Vh))  # noqa: N806
        else:
            gA = matmul(matmul(U, X), Vh)  # noqa: N806
        return (gA,)


def _eye(k, like):
    from .factory import eye
    return eye(k, dtype=like.dtype, device=like.device)


def svd(A, full_matrices: bool = True, *, driver=None):  # noqa: N803
    """``torch.linalg.svd``: ``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh``, S descending; U (..., M, M) and Vh
    (..., N, N) when ``full_matrices``, else (..., M, K) and (..., K, N), K = min(M, N). ``driver`` is accepted
    and ignored (cuda-only in PyTorch). Gradients are well defined for distinct singular values and loss
    functions that do not depend on the signs of the singular vectors."""
    a = A._data
    if a.ndim < 2 or a.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.svd: The input tensor A must have at least 2 dimensions and a floating point "
                           f"or complex dtype, got shape {list(a.shape)} and {a.dtype}")
    u, s, vh = tk.linalg.svd(a, full_matrices=bool(full_matrices))
    if not needs_grad(A):
        return SVDResult(wrap(u), wrap(s), wrap(vh))
    node = LinalgSvdBackward0(A, a.shape[-2], a.shape[-1], bool(full_matrices))
    outs = (node.output(u, 0), node.output(s, 1), node.output(vh, 2))
    node.save(outputs=outs)
    return SVDResult(*outs)


def svdvals(A, *, driver=None):  # noqa: N803
    """``torch.linalg.svdvals``: the singular values (..., min(M, N)) in descending order (differentiable: the
    gradient is ``U diag(g) Vh``)."""
    if not needs_grad(A):
        a = A._data
        if a.ndim < 2 or a.dtype.kind not in "fc":
            raise RuntimeError(f"linalg.svdvals: The input tensor A must have at least 2 dimensions and a floating "
                               f"point or complex dtype, got shape {list(a.shape)} and {a.dtype}")
        return wrap(tk.linalg.svdvals(a))
    return svd(A, full_matrices=False).S


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):  # noqa: A002, N803
    """Matrix norm over the two dims ``dim``: ``'fro'``, the max/min absolute column (``ord=±1``) or row
    (``ord=±inf``) sum, or of the singular values (``'nuc'``: their sum, ``ord=±2``: the largest/smallest; the
    gradients ``U Vh``, ``u_1 v_1^T``, ``u_k v_k^T``, through ``svd``)."""
    if dtype is not None:
        A = A.to(dtype)  # noqa: N806
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got shape "
                           f"{list(A.shape)}")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple, got {dim!r}")
    d0, d1 = (int(d) % A.ndim for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different, got {dim!r}")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        return _singular_value_norm(A, ord, d0, d1, keepdim)
    if ord in (1, -1):
        summed, other = d0, d1
    elif ord in (math.inf, -math.inf):
        summed, other = d1, d0
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord!r} not supported. Hint: 'fro', 'nuc', 1, -1, 2, -2, "
                           f"inf, -inf")
    s = A.abs().sum(dim=summed, keepdim=True)
    r = (amax if ord > 0 else amin)(s, other, keepdim=True)
    if not keepdim:
        r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return r


def _singular_value_norm(A, ord, d0, d1, keepdim):  # noqa: A002, N803
    """'nuc' / 2 / -2 over dims (d0, d1): tkernels' matrix_norm without grad, else from svdvals."""
    X = A if (d0, d1) == (A.ndim - 2, A.ndim - 1) else A.movedim((d0, d1), (-2, -1))  # noqa: N806
    if A.shape[d0] * A.shape[d1] == 0 and ord != "nuc":
        raise RuntimeError(f"linalg.matrix_norm: Expected a non-empty matrix for ord={ord!r}, got shape "
                           f"{list(A.shape)}")
    if not needs_grad(X):
        r = wrap(tk.matrix_norm(X._data, ord=ord))
    else:
        S = svdvals(X)  # noqa: N806
        r = S.sum(-1) if ord == "nuc" else S[..., 0] if ord == 2 else S[..., -1]
    if keepdim:
        r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    return r


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002, N803
    """A vector norm (1-d input or an int ``dim``), a matrix norm (2-d input or a 2-tuple ``dim``), or with
    ``ord=None`` the 2-norm of the flattened input."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                       f"{A.ndim}D (shape {list(A.shape)})")


def _tol(A, S, atol, rtol):  # noqa: N803 - PyTorch's max(atol, rtol * s_max), (..., 1)
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = tk.finfo(A._data.dtype).eps * max(m, n) if atol is None or (
            not hasattr(atol, "_data") and atol <= 0) else 0.0
    smax = S[..., :1] if S.shape[-1] else S.sum(-1, keepdim=True)
    t = smax * (rtol.unsqueeze(-1) if hasattr(rtol, "_data") else rtol)
    if atol is not None:
        t = t.clamp(min=atol) if not hasattr(atol, "_data") else t.maximum(atol.unsqueeze(-1))
    return t


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False):  # noqa: N803
    """``torch.linalg.pinv`` through ``svd`` (``hermitian``: ``eigh``); singular values at or below
    ``max(atol, rtol * largest)`` are dropped. Differentiable through the decomposition."""
    if A.ndim < 2:
        raise RuntimeError(f"linalg.pinv: The input tensor A must have at least 2 dimensions, got shape "
                           f"{list(A.shape)}")
    if not needs_grad(A) and not hasattr(atol, "requires_grad") and not hasattr(rtol, "requires_grad"):
        return wrap(tk.linalg.pinv(A._data, rtol=rtol, atol=atol, hermitian=hermitian))
    if hermitian:
        L, V = eigh(A)  # noqa: N806
        a = L.abs()
        t = _tol(A, a.amax(-1, keepdim=True) if a.shape[-1] else a, atol, rtol)
        keep = (a > t).detach()
        inv = (1 / (L + (~keep).to(L.dtype))) * keep.to(L.dtype)
        return matmul(V * inv.unsqueeze(-2), V.mH)  # (V.mH: V.mT for real input)
    U, S, Vh = svd(A, full_matrices=False)  # noqa: N806
    t = _tol(A, S, atol, rtol)
    keep = (S > t).detach()
    inv = (1 / (S + (~keep).to(S.dtype))) * keep.to(S.dtype)
    return matmul(Vh.mH * inv.unsqueeze(-2), U.mH)


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False):  # noqa: N803
    """``torch.linalg.matrix_rank``: the number of singular values above ``max(atol, rtol * largest)`` (int64)."""
    a = A._data
    return wrap(tk.linalg.matrix_rank(a, rtol=rtol if not hasattr(rtol, "_data") else rtol._data,
                                      atol=atol if not hasattr(atol, "_data") else atol._data, hermitian=hermitian))


LstsqResult = collections.namedtuple("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
LstsqResult.__module__ = "autograd.return_types"


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """``torch.linalg.lstsq`` by the SVD (gelsd semantics, see ``tkernels.linalg.lstsq``); the solution is
    differentiable in A and B (through ``pinv``: well defined where A's rank does not change)."""
    sol, res, rank, sv = tk.linalg.lstsq(A._data, B._data, rcond=rcond, driver=driver)
    if not (needs_grad(A) or needs_grad(B)):
        return LstsqResult(wrap(sol), wrap(res), wrap(rank), wrap(sv))
    m, n = A.shape[-2:]
    X = matmul(pinv(A, rtol=tk.finfo(A._data.dtype).eps * max(m, n) if rcond is None else rcond), B)  # noqa: N806
    S = svdvals(A)  # noqa: N806
    R = ((matmul(A, X) - B) ** 2).sum(-2) if res.size else wrap(res)  # noqa: N806
    return LstsqResult(X, R, wrap(rank), S)


def cross(input, other, *, dim: int = -1):  # noqa: A002
    """``torch.linalg.cross``: cross products of the 3-vectors along ``dim`` (broadcast)."""
    from .ops.shape import broadcast_tensors, stack
    a, b = broadcast_tensors(input, other)
    if not -a.ndim <= dim < a.ndim or a.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {list(input.shape)} and "
                           f"{list(other.shape)}")
    a, b = a.movedim(dim, -1), b.movedim(dim, -1)
    r = stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
               a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], -1)
    return r.movedim(-1, dim)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: N803
    """``torch.linalg.diagonal``: the diagonal ``offset`` of the (dim1, dim2) planes (a view)."""
    return A.diagonal(offset, dim1, dim2)


def vander(x, *, N=None):  # noqa: N803
    """``torch.linalg.vander``: (..., n, N) with columns x**0 ... x**(N-1)."""
    from .ops.shape import cat
    n = x.shape[-1]
    N = n if N is None else int(N)  # noqa: N806
    if N <= 1 or x.numel() == 0:
        return wrap(tk.linalg.vander(x._data, N=N)) + x.sum() * 0 if x.numel() else wrap(tk.linalg.vander(
            x._data, N=N))
    cols = cat([x.unsqueeze(-1) * 0 + 1, x.unsqueeze(-1).expand(*x.shape, N - 1)], -1)
    return cols.cumprod(-1)


def householder_product(A, tau):  # noqa: N803
    """``torch.linalg.householder_product``: the first N columns of ``H_1 ... H_k`` (differentiable)."""
    if not (needs_grad(A) or needs_grad(tau)):
        return wrap(tk.linalg.householder_product(A._data, tau._data))
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    Q = _eye_mn(m, n, A) + A * 0  # noqa: N806
    V = A[..., :k].tril(-1) + _eye_mn(m, k, A)  # noqa: N806
    for i in range(k - 1, -1, -1):
        v = V[..., i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * matmul(v, matmul(v.mH, Q))  # noqa: N806 (v^T if real)
    return Q


def _eye_mn(m, n, like):
    from .factory import eye
    return eye(m, n, dtype=like.dtype, device=like.device)


def __dir__():
    return list(__all__)
