"""Differentiable general eigen-decomposition: ``autograd.linalg.eig`` and ``eigvals`` (PyTorch's
``torch.linalg.eig`` / ``eigvals``), with PyTorch's backward (``linalg_eig_backward``, the non-Hermitian case)::

    gA = V^-H (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) / conj(E)) V^H,   E_ij = L_j - L_i (1 on the diagonal)

(the diagonal of the bracket is ``gL``), the real part for a real ``A``. The eigenvectors are defined up to a
phase each, so a loss that depends on it (``imag(diag(V^H gV))`` not ~0) is refused with PyTorch's error (a host
read, as PyTorch's check). ``V^-H`` is a complex solve, done as the real ``2N x 2N`` system
``[[Vr, -Vi], [Vi, Vr]]`` of ``V^H`` (on cuda past the one-tile LU through the blocked LU). Written with
differentiable ops; gradients through the eigenvectors are finite only for distinct eigenvalues (as PyTorch documents).
"""

from __future__ import annotations

import collections

import tkernels as tk

from ..graph import Node
from ._base import needs_grad, wrap
from .complex_ops import complex as _complex
from .complex_ops import imag, real
from .linalg import matmul
from .shape import cat

__all__: list[str] = []  # reached through autograd.linalg

EigResult = collections.namedtuple("linalg_eig", ("eigenvalues", "eigenvectors"))
EigResult.__module__ = "autograd.return_types"


def _check(op, A):  # noqa: N803
    a = A._data
    if a.ndim < 2 or a.dtype.kind not in "fc" or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{op}: The input tensor A must be batches of square matrices (..., n, n) of a "
                           f"floating point or complex dtype, got shape {list(a.shape)} and {a.dtype}")
    return a


def _solve_adjoint(V, Y):  # noqa: N803 - V^-H Y for complex V, Y (differentiable: the real 2N system)
    from .linalg_factor import solve

    Vh = V.mH  # noqa: N806
    Ar, Ai = real(Vh), imag(Vh)  # noqa: N806
    M = cat([cat([Ar, -Ai], -1), cat([Ai, Ar], -1)], -2)  # noqa: N806
    try:
        X = solve(M, cat([real(Y), imag(Y)], -2))  # noqa: N806
    except NotImplementedError as e:  # the 2N system past what the device's solve takes
        raise NotImplementedError(f"linalg_eig_backward: the gradient solves V^H X = Y with V {tuple(V.shape)} "
                                  f"{V.dtype} on {V.device} as a real {2 * V.shape[-1]} x {2 * V.shape[-1]} "
                                  f"system, which the solve does not take there ({e}); hint: compute the "
                                  f"decomposition on cpu with A.to('cpu')") from e
    n = V.shape[-1]
    return _complex(X[..., :n, :], X[..., n:, :])


class LinalgEigBackward0(Node):
    """PyTorch's eig backward (the module docstring); an unused output's gradient is None."""

    _materialize = False
    _holomorphic = False  # the formula is already PyTorch's conjugate-Wirtinger gradient

    def __init__(self, A):  # noqa: N803
        super().__init__((A,))
        self.real_input = A._data.dtype.kind != "c"

    def backward(self, gL, gV):  # noqa: N803
        L, V = self.saved_tensors  # noqa: N806
        if gL is None and gV is None:
            return (None,)
        from ..factory import eye

        Vh = V.mH  # noqa: N806
        n = L.shape[-1]
        eye_n = eye(n, dtype=real(L).dtype, device=L.device)  # real: complex eye/diag_embed have no cuda kernel
        if gV is None:
            inner = gL.unsqueeze(-2) * eye_n
        else:
            VhgV = matmul(Vh, gV)  # noqa: N806
            d = VhgV.diagonal(0, -2, -1)
            if not bool(tk.all(tk.abs(imag(d)._data) <= 1e-2)):
                raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                                   "multiplication by e^{i phi}. The specified loss function depends on this "
                                   "quantity, so it is ill-defined.")
            Lc = L.conj()  # noqa: N806
            Ec = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye_n  # noqa: N806
            inner = (VhgV - matmul(Vh, V * real(d).unsqueeze(-2))) / Ec
            inner = inner * (1 - eye_n)  # the diagonal: gL (or 0)
            if gL is not None:
                inner = inner + gL.unsqueeze(-2) * eye_n
        gA = _solve_adjoint(V, matmul(inner, Vh))  # noqa: N806
        return (real(gA) if self.real_input else gA,)


def eig(A):  # noqa: N803
    """``torch.linalg.eig``: complex ``(eigenvalues, eigenvectors)`` of general square matrices (unit-norm
    eigenvectors in the columns, in no particular order); differentiable (LinalgEigBackward0)."""
    a = _check("eig", A)
    w, v = tk.linalg.eig(a)
    if not needs_grad(A):
        return EigResult(wrap(w), wrap(v))
    node = LinalgEigBackward0(A)
    outs = (node.output(w, 0), node.output(v, 1))
    node.save(outputs=outs)
    return EigResult(*outs)


def eigvals(A):  # noqa: N803
    """``torch.linalg.eigvals``: the complex eigenvalues (gradient ``V^-H diag(g) V^H``: the eigenvectors are
    computed when ``A`` requires grad, as PyTorch does)."""
    if needs_grad(A):
        return eig(A).eigenvalues
    return wrap(tk.linalg.eigvals(_check("eigvals", A)))
