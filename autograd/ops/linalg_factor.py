"""Differentiable factorizations and solves (reached as ``autograd.linalg.<name>``, PyTorch's ``torch.linalg``):
cholesky, cholesky_ex, solve_triangular, and the LU family, solve, inv, det, slogdet built on them.

Backward formulas are PyTorch's (``FunctionsManual.cpp``, real case), written with differentiable ops so that
they are twice differentiable (gradgradcheck) where PyTorch's are.
"""

from __future__ import annotations

import collections

import tkernels as tk
from tkernels.factorizations import _not_pd, _raise_info
from tkernels.validation import OpTypeError

from ..graph import Node
from ._base import needs_grad, sum_to, wrap
from .linalg import matmul
from .shape import tril, triu

__all__: list[str] = []  # reached through autograd.linalg

LinAlgError = tk.linalg.LinAlgError

CholeskyExResult = collections.namedtuple("linalg_cholesky_ex", ("L", "info"))
CholeskyExResult.__module__ = "autograd.return_types"


def _check_tensor(op: str, A, name="A"):  # noqa: N803
    a = getattr(A, "_data", None)
    if a is None:
        raise OpTypeError(f"linalg.{op}: expected a Tensor for {name}, got {type(A).__name__}")
    return a


class LinalgCholeskyExBackward0(Node):
    """``gA = L^-H Phi(L^H gL) L^-1``, ``Phi`` taking the lower triangle with its diagonal halved and mirrored
    (Hermitian: the input is; PyTorch's ``cholesky_backward``). Not holomorphic for complex input (``L^H``):
    written for PyTorch's convention directly (Note [complex gradients])."""

    _holomorphic = False

    def __init__(self, A, upper):  # noqa: N803
        super().__init__((A,))
        self.upper = upper

    def backward(self, gL):  # noqa: N803
        (L,) = self.saved_tensors  # noqa: N806
        if self.upper:
            L, gL = L.mH, gL.mH  # noqa: N806
        gA = tril(matmul(L.mH, gL))  # noqa: N806
        gA = 0.5 * (gA + tril(gA, -1).mH)  # noqa: N806
        gA = solve_triangular(L.mH, gA, upper=True, left=True)  # noqa: N806
        gA = solve_triangular(L, gA, upper=False, left=False)  # noqa: N806
        return (gA,)


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):  # noqa: N803
    """``torch.linalg.cholesky_ex``: ``(L, info)``, info (int32, ...) 0 or the order of the first leading minor
    that is not positive-definite (no error unless ``check_errors``)."""
    a = _check_tensor("cholesky_ex", A)
    L, info = tk.linalg.cholesky_ex(a, upper=bool(upper), check_errors=bool(check_errors))  # noqa: N806
    if not needs_grad(A):
        return CholeskyExResult(wrap(L), wrap(info))
    node = LinalgCholeskyExBackward0(A, bool(upper))
    Lt = node.output(L, 0)  # noqa: N806
    node.save(outputs=(Lt,))
    return CholeskyExResult(Lt, wrap(info))


def cholesky(A, *, upper: bool = False, out=None):  # noqa: N803
    """``torch.linalg.cholesky``: the lower (``upper``: upper) Cholesky factor of symmetric positive-definite
    matrices; ``LinAlgError`` naming the failing leading minor otherwise (a host sync on cuda, as PyTorch's)."""
    _check_tensor("cholesky", A)
    L, info = cholesky_ex(A, upper=upper)  # noqa: N806
    _raise_info("cholesky", info._data, _not_pd)
    return L


class LinalgSolveTriangularBackward0(Node):
    """``gB = A^-T gX`` (left) or ``gX A^-T``; ``gA = -gB X^T`` or ``-X^T gB``, restricted to A's triangle
    (its strict triangle when unitriangular)."""

    def __init__(self, A, B, upper, left, unit):  # noqa: N803
        super().__init__((A, B))
        self.upper, self.left, self.unit = upper, left, unit

    def backward(self, gX):  # noqa: N803
        A, X = self.saved_tensors  # noqa: N806
        na, nb = self.needs_input_grad
        gB = solve_triangular(A.mT, gX, upper=not self.upper, left=self.left, unitriangular=self.unit)  # noqa: N806
        gA = None  # noqa: N806
        if na:
            gA = -matmul(gB, X.mT) if self.left else -matmul(X.mT, gB)  # noqa: N806
            k = int(self.unit)
            gA = triu(gA, k) if self.upper else tril(gA, -k)  # noqa: N806
            gA = sum_to(gA, A.shape)  # noqa: N806
        return gA, (sum_to(gB, self.b_shape) if nb else None)


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None):  # noqa: N803
    """``torch.linalg.solve_triangular``: ``X`` with ``A X = B`` (``left``) or ``X A = B`` for triangular A
    (only its ``upper`` or lower triangle is read; ``unitriangular``: ones on its diagonal)."""
    a = _check_tensor("solve_triangular", A)
    b = _check_tensor("solve_triangular", B, "B")
    x = tk.linalg.solve_triangular(a, b, upper=bool(upper), left=bool(left), unitriangular=bool(unitriangular))
    if not needs_grad(A, B):
        return wrap(x)
    node = LinalgSolveTriangularBackward0(A, B, bool(upper), bool(left), bool(unitriangular))
    node.b_shape = tuple(b.shape)
    X = node.output(x, 0)  # noqa: N806
    node.save(A, outputs=(X,))
    return X


# ------------------------------------------------------------------------------------------ LU family
LUFactorResult = collections.namedtuple("linalg_lu_factor", ("LU", "pivots"))
LUFactorExResult = collections.namedtuple("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LUResult = collections.namedtuple("linalg_lu", ("P", "L", "U"))
InvExResult = collections.namedtuple("linalg_inv_ex", ("inverse", "info"))
SlogdetResult = collections.namedtuple("linalg_slogdet", ("sign", "logabsdet"))
for _t in (LUFactorResult, LUFactorExResult, LUResult, InvExResult, SlogdetResult):
    _t.__module__ = "autograd.return_types"


def _eye(n, like):
    from ..factory import eye
    return eye(n, dtype=like.dtype, device=like.device)


class LinalgLuFactorExBackward0(Node):
    """Square A = P L U: ``gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T`` (PyTorch's ``linalg_lu_backward``),
    gL / gU the strict lower / upper parts of the gradient of ``LU`` (lu_factor) or the factors' own (lu);
    rectangular A: ``_lu_backward_rect``."""

    def __init__(self, A, packed):  # noqa: N803
        super().__init__((A,))
        self.packed = packed

    def backward(self, *grads):
        if self.packed:
            P, LU = self.saved_tensors  # noqa: N806
            m, n = LU.shape[-2:]
            k = min(m, n)
            L, U = tril(LU[..., :, :k], -1) + _eye(m, LU)[:, :k], triu(LU[..., :k, :])  # noqa: N806
        else:
            P, L, U = self.saved_tensors  # noqa: N806
        if self.packed:
            (g,) = grads[:1]
            gL, gU = tril(g[..., :, :k], -1), triu(g[..., :k, :])  # noqa: N806
        else:
            gL, gU = grads[1], grads[2]  # noqa: N806
            gL = 0 if gL is None else tril(gL, -1)  # noqa: N806
            gU = 0 if gU is None else triu(gU)  # noqa: N806
        m, n = L.shape[-2], U.shape[-1]
        if m != n:
            return (_lu_backward_rect(P, L, U, gL, gU),)
        phi = 0
        if not isinstance(gL, int):
            phi = phi + tril(matmul(L.mT, gL), -1)
        if not isinstance(gU, int):
            phi = phi + triu(matmul(gU, U.mT))
        if isinstance(phi, int):
            return (None,)
        x = solve_triangular(L.mT, phi, upper=True, unitriangular=True)
        x = solve_triangular(U.mT, x, upper=False, left=False)
        return (matmul(P, x),)


def _lu_backward_rect(P, L, U, gL, gU):  # noqa: N803
    """PyTorch's ``linalg_lu_backward`` for non-square A = P L U (gL, gU already masked to the free entries).
    Wide (m < n, U = [U1 U2]): ``gA = P L^-T [tril(L^T gL - gU U^T, -1) U1^-T + gU1 | gU2]``; tall (m > n,
    L = [L1; L2]): ``gA = P [L1^-T triu(gU U^T - L^T gL) + gL1 ; gL2] U^-T``."""
    from .shape import cat

    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    zL, zU = isinstance(gL, int), isinstance(gU, int)  # noqa: N806
    if zL and zU:
        return None
    if m < n:
        U1 = U[..., :, :k]  # noqa: N806
        y = 0 if zL else matmul(L.mT, gL)
        y = y if zU else y - matmul(gU, U.mT)
        y = solve_triangular(U1.mT, tril(y, -1), upper=False, left=False)
        if zU:
            y = cat([y, (U[..., :, k:] * 0)], dim=-1)
        else:
            y = cat([y + gU[..., :, :k], gU[..., :, k:]], dim=-1)
        y = solve_triangular(L.mT, y, upper=True, unitriangular=True)
    else:
        L1 = L[..., :k, :]  # noqa: N806
        y = 0 if zU else matmul(gU, U.mT)
        y = y if zL else y - matmul(L.mT, gL)
        y = solve_triangular(L1.mT, triu(y), upper=True, unitriangular=True)
        if zL:
            y = cat([y, (L[..., k:, :] * 0)], dim=-2)
        else:
            y = cat([y + gL[..., :k, :], gL[..., k:, :]], dim=-2)
        y = solve_triangular(U.mT, y, upper=False, left=False)
    return matmul(P, y)


def _lu_graph(A, a, lu_, piv, packed, pivot=True):  # noqa: N803
    """The differentiable outputs of an LU of ``A`` (packed LU, or P, L, U); ``pivot=False``: P = I in the
    backward (the returned P is empty, as PyTorch's)."""
    P, L, U = tk.linalg.lu(a, pivot=pivot)  # noqa: N806
    Pb = wrap(P) if pivot else _eye(a.shape[-2], A)  # noqa: N806 - the backward's P
    node = LinalgLuFactorExBackward0(A, packed)
    if packed:
        out = (node.output(lu_, 0),)
        node.save(Pb, outputs=out)
    else:
        out = (wrap(P), node.output(L, 1), node.output(U, 2))
        node.save(out[0] if pivot else Pb, outputs=out[1:])
    node._materialize = False
    return out


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):  # noqa: N803
    """``torch.linalg.lu_factor_ex``: ``(LU, pivots, info)`` (pivots 1-based int32); differentiable in LU.
    ``pivot=False`` (cpu and cuda; PyTorch's cpu raises): no row exchanges, identity pivots."""
    a = _check_tensor("lu_factor_ex", A)
    lu_, piv, info = tk.linalg.lu_factor_ex(a, pivot=pivot, check_errors=check_errors)
    if not needs_grad(A):
        return LUFactorExResult(wrap(lu_), wrap(piv), wrap(info))
    (LU,) = _lu_graph(A, a, lu_, piv, True, pivot)  # noqa: N806
    return LUFactorExResult(LU, wrap(piv), wrap(info))


def lu_factor(A, *, pivot: bool = True, out=None):  # noqa: N803
    """``torch.linalg.lu_factor``: ``(LU, pivots)``; an error when U has a zero on its diagonal."""
    _check_tensor("lu_factor", A)
    LU, piv, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    from tkernels.solvers import _zero_u
    _raise_info("lu_factor", info._data, _zero_u)
    return LUFactorResult(LU, piv)


def lu(A, *, pivot: bool = True, out=None):  # noqa: N803
    """``torch.linalg.lu``: ``(P, L, U)`` with ``A = P L U``; differentiable in L and U. ``pivot=False`` (cpu and
    cuda; PyTorch's cpu raises): ``A = L U`` and P empty."""
    a = _check_tensor("lu", A)
    if not needs_grad(A):
        return LUResult(*(wrap(t) for t in tk.linalg.lu(a, pivot=pivot)))
    return LUResult(*_lu_graph(A, a, None, None, False, pivot))


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None):  # noqa: N803
    """``torch.linalg.lu_solve``: X with ``A X = B`` (``left``) or ``X A = B`` (A^T when ``adjoint``) from
    lu_factor's ``(LU, pivots)``; differentiable in B and LU (through the triangular solves it is made of)."""
    lu_ = _check_tensor("lu_solve", LU, "LU")
    b = _check_tensor("lu_solve", B, "B")
    piv = _check_tensor("lu_solve", pivots, "pivots")
    if not needs_grad(LU, B):
        return wrap(tk.linalg.lu_solve(lu_, piv, b, left=left, adjoint=adjoint))
    if not left:
        return lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
    n = lu_.shape[-1]
    eye = _eye(n, LU)
    L = tril(LU, -1) + eye  # noqa: N806
    U = triu(LU)  # noqa: N806
    if not adjoint:
        Pb = _permute(B, piv, False)  # noqa: N806
        y = solve_triangular(L, Pb, upper=False, unitriangular=True)
        return solve_triangular(U, y, upper=True)
    y = solve_triangular(U.mT, B, upper=False)
    y = solve_triangular(L.mT, y, upper=True, unitriangular=True)
    return _permute(y, piv, True)


def _permute(B, piv, inverse):  # noqa: N803
    """``P_l^T B`` (inverse) or ``P_l B`` as a product with the (constant) permutation matrix."""
    from tkernels.solvers import _apply_pivots
    n = piv.shape[-1]
    eye = tk.eye(n, dtype=B._data.dtype, device=B._data.device).broadcast_to(piv.shape[:-1] + (n, n))
    Pm = wrap(_apply_pivots(eye, piv, inverse))  # noqa: N806
    return matmul(Pm, B)


class LinalgSolveBackward0(Node):
    """``gB = A^-T gX``, ``gA = -gB X^T`` (left); ``gB = gX A^-T``, ``gA = -X^T gB`` (right)."""

    def __init__(self, A, B, left):  # noqa: N803
        super().__init__((A, B))
        self.left = left
        self.shapes = (tuple(A.shape), tuple(B.shape))

    def backward(self, gX):  # noqa: N803
        A, X = self.saved_tensors  # noqa: N806
        na, nb = self.needs_input_grad
        gB = _solve_mat(A.mT, gX, self.left)  # noqa: N806
        gA = None  # noqa: N806
        if na:
            gA = sum_to(-matmul(gB, X.mT) if self.left else -matmul(X.mT, gB), self.shapes[0])  # noqa: N806
        return gA, (sum_to(gB, self.shapes[1]) if nb else None)


def _solve_mat(A, B, left):  # noqa: N803
    a, b = A._data, B._data
    x = tk.linalg.solve(a, b, left=left)
    if not needs_grad(A, B):
        return wrap(x)
    node = LinalgSolveBackward0(A, B, left)
    X = node.output(x, 0)  # noqa: N806
    node.save(A, outputs=(X,))
    return X


def solve(A, B, *, left: bool = True, out=None):  # noqa: N803
    """``torch.linalg.solve``: X with ``A X = B`` (``left``) or ``X A = B``; B is a (batch of) vector(s) when
    it is 1-D or has A's shape without the last dimension (PyTorch's rule); singular A raises."""
    a = _check_tensor("solve", A)
    b = _check_tensor("solve", B, "B")
    vector = b.ndim == 1 or (left and b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    if vector:
        Bm = B.unsqueeze(-1) if left else B.unsqueeze(-2)  # noqa: N806
        X = _solve_mat(A, Bm, left)  # noqa: N806
        return X.squeeze(-1) if left else X.squeeze(-2)
    return _solve_mat(A, B, left)


class LinalgInvExBackward0(Node):
    """``gA = -A^-T g A^-T``."""

    def backward(self, g, *_):
        (Ai,) = self.saved_tensors  # noqa: N806
        return (-matmul(Ai.mT, matmul(g, Ai.mT)),)


def inv_ex(A, *, check_errors: bool = False, out=None):  # noqa: N803
    """``torch.linalg.inv_ex``: ``(inverse, info)``, info 0 or U's first zero diagonal index (1-based)."""
    a = _check_tensor("inv_ex", A)
    x, info = tk.linalg.inv_ex(a, check_errors=check_errors)
    if not needs_grad(A):
        return InvExResult(wrap(x), wrap(info))
    node = LinalgInvExBackward0((A,))
    X = node.output(x, 0)  # noqa: N806
    node.save(outputs=(X,))
    return InvExResult(X, wrap(info))


def inv(A, *, out=None):  # noqa: N803
    """``torch.linalg.inv``; a singular matrix raises PyTorch's error (a host sync on cuda)."""
    _check_tensor("inv", A)
    X, info = inv_ex(A)  # noqa: N806
    from tkernels.solvers import _singular
    _raise_info("inv", info._data, _singular("inv"))
    return X


class LinalgDetBackward0(Node):
    """``gA = g det(A) A^-T`` where A is invertible; where LU finds it singular (info > 0) PyTorch's SVD form
    ``g det(U) det(Vh) U diag(prod_{j != i} s_j) Vh`` (the adjugate's transpose; that branch is a constant of
    the graph, so second derivatives at exactly singular matrices are zero here)."""

    def backward(self, g):
        from .elementwise import where
        A, d = self.saved_tensors  # noqa: N806
        Ai, info = inv_ex(A)  # noqa: N806
        g_inv = (g * d).unsqueeze(-1).unsqueeze(-1) * Ai.mT
        singular = info._data > 0
        if not singular.size:
            return (g_inv,)
        a = A._data
        u, s_, vh = tk.linalg.svd(a)
        # the left null vector from the right basis of A^T (always complete): the cuda Jacobi SVD returns a
        # zero column of U for a zero singular value; any unit null vector works, det(U) follows its sign
        null = tk.linalg.svd(a.mT)[2][..., -1, :]
        if a.dtype.kind == "c":  # the left null vector u (u^H A = 0): the conjugated last row of Vh of A^H
            null = tk.conj(tk.linalg.svd(a.mH)[2][..., -1, :])
        u = tk.concat([u[..., :, :-1], null[..., :, None]], axis=-1)
        n = a.shape[-1]
        eye = tk.eye(n, dtype=s_.dtype, device=a.device)
        others = tk.prod(tk.where(eye > 0, 1.0, s_[..., None, :]), axis=-1)  # prod over j != i
        sign = tk.linalg.det(u) * tk.linalg.det(vh)
        if a.dtype.kind == "c":  # adj(A)^T = det(U) det(Vh) conj(U) diag(others) conj(Vh)
            adj_t = tk.matmul(tk.conj(u) * others[..., None, :], tk.conj(vh)) * sign[..., None, None]
        else:
            adj_t = tk.matmul(u * others[..., None, :], vh) * sign[..., None, None]
        g_svd = g.unsqueeze(-1).unsqueeze(-1) * wrap(adj_t)
        return (where(wrap(singular[..., None, None]), g_svd, g_inv),)


def det(A, *, out=None):  # noqa: N803
    """``torch.linalg.det``."""
    a = _check_tensor("det", A)
    d = tk.linalg.det(a)
    if not needs_grad(A):
        return wrap(d)
    node = LinalgDetBackward0((A,))
    D = node.output(d, 0)  # noqa: N806
    node.save(A, outputs=(D,))
    return D


class LinalgSlogdetBackward0(Node):
    """``gA = g A^-H`` with ``g = g_logabsdet + i Im(g_sign conj(sign))``: the gradient of ``log det A =
    logabsdet + i theta`` (``sign = e^{i theta}``), holomorphic in A, whose imaginary part is the phase (a real
    matrix's sign has no gradient: ``g = g_logabsdet``). Written for PyTorch's convention directly (the sign and
    logabsdet are not holomorphic outputs; Note [complex gradients])."""

    _materialize = False
    _holomorphic = False

    def backward(self, gsign, glog):
        A, sign = self.saved_tensors  # noqa: N806
        complex_ = A._data.dtype.kind == "c"
        if glog is None and (gsign is None or not complex_):
            return (None,)
        from .complex_ops import conj, imag
        g = glog
        if complex_ and gsign is not None:
            phase = imag(gsign * conj(sign)) * 1j
            g = phase if g is None else g + phase
        return (g.unsqueeze(-1).unsqueeze(-1) * inv_ex(A)[0].mH,)


def slogdet(A, *, out=None):  # noqa: N803
    """``torch.linalg.slogdet``: ``(sign, logabsdet)``."""
    a = _check_tensor("slogdet", A)
    s, la = tk.linalg.slogdet(a)
    if not needs_grad(A):
        return SlogdetResult(wrap(s), wrap(la))
    node = LinalgSlogdetBackward0((A,))
    sign = node.output(s, 0) if s.dtype.kind == "c" else wrap(s)  # a complex sign is differentiable
    out = SlogdetResult(sign, node.output(la, 1))
    node.save(A, wrap(s))
    return out


# ---------------------------------------------------------------------- matrix_power, multi_dot, cond
def matrix_power(A, n: int, *, out=None):  # noqa: N803
    """``torch.linalg.matrix_power``: repeated squaring with matmul (``n < 0``: of ``inv(A)``); differentiable
    through them."""
    from tkernels.matrix_functions import _power
    if isinstance(n, bool) or not isinstance(n, int):
        raise OpTypeError(f"linalg.matrix_power: n must be an int, got {n!r}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, got shape {list(A.shape)}")
    return _power(A, n, matmul, inv, lambda: _eye(A.shape[-1], A).expand(tuple(A.shape)) * 1)


def multi_dot(tensors, *, out=None):
    """``torch.linalg.multi_dot``: the chained product in the cheapest order (1-D first/last allowed)."""
    from tkernels.matrix_functions import multi_dot_apply
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"linalg.multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if first else ts[0]] + ts[1:-1] + [ts[-1].unsqueeze(-1) if last else ts[-1]]
    for i, m in enumerate(mats):
        if m.ndim != 2:
            raise RuntimeError(f"linalg.multi_dot(): tensor {i} must be 2D but got {ts[i].ndim}D")
    r = multi_dot_apply(mats, matmul)
    if first:
        r = r.squeeze(0)
    if last:
        r = r.squeeze(-1)
    return r


def cond(A, p=None, *, out=None):  # noqa: N803
    """``torch.linalg.cond``: None/2/-2 from the singular values, the other norms as ``norm(A) norm(inv(A))``
    (inf for singular A); differentiable."""
    import math

    from .elementwise import where
    if p in (None, 2, -2):
        from ..linalg import svdvals
        s = svdvals(A)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    from ..linalg import matrix_norm
    Ai, info = inv_ex(A)  # noqa: N806
    r = matrix_norm(A, p) * matrix_norm(Ai, p)
    return where(info > 0, math.inf, r)
