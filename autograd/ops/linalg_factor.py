"""Differentiable factorizations and solves (reached as ``autograd.linalg.<name>``, PyTorch's ``torch.linalg``):
cholesky, cholesky_ex, solve_triangular, and the LU family, solve, inv, det, slogdet built on them.

Backward formulas are PyTorch's (``FunctionsManual.cpp``, real case), written with differentiable ops so that
they are twice differentiable (gradgradcheck) where PyTorch's are.
"""

from __future__ import annotations

import collections

import tkernels as tk
from tkernels.factorizations import _not_pd, _raise_info

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
        raise TypeError(f"linalg.{op}: expected a Tensor for {name}, got {type(A).__name__}")
    return a


class LinalgCholeskyExBackward0(Node):
    """``gA = L^-T Phi(L^T gL) L^-1``, ``Phi`` taking the lower triangle with its diagonal halved and mirrored
    (symmetric: the input is symmetric; PyTorch's ``cholesky_backward``)."""

    def __init__(self, A, upper):  # noqa: N803
        super().__init__((A,))
        self.upper = upper

    def backward(self, gL):  # noqa: N803
        (L,) = self.saved_tensors  # noqa: N806
        if self.upper:
            L, gL = L.mT, gL.mT  # noqa: N806
        gA = tril(matmul(L.mT, gL))  # noqa: N806
        gA = 0.5 * (gA + tril(gA, -1).mT)  # noqa: N806
        gA = solve_triangular(L.mT, gA, upper=True, left=True)  # noqa: N806
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
