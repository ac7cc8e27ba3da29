"""Differentiable QR and symmetric eigen-decompositions (``autograd.linalg.qr``, ``eigh``, ``eigvalsh``) with
PyTorch's backward formulas (``linalg_qr_backward``, the hermitian case of ``linalg_eig_backward``), written
with differentiable ops so that they are twice differentiable."""

from __future__ import annotations

import collections

import tkernels as tk

from ..graph import Node
from ._base import needs_grad, wrap
from .linalg import matmul
from .shape import diag_embed, triu

__all__: list[str] = []  # reached through autograd.linalg

QRResult = collections.namedtuple("linalg_qr", ("Q", "R"))
EighResult = collections.namedtuple("linalg_eigh", ("eigenvalues", "eigenvectors"))
QRResult.__module__ = EighResult.__module__ = "autograd.return_types"


def _check(op, A, square=False):  # noqa: N803
    a = A._data
    if a.ndim < 2 or a.dtype.kind not in "fc" or (square and a.shape[-1] != a.shape[-2]):
        what = "square matrices (..., n, n)" if square else "at least 2 dimensions"
        raise RuntimeError(f"linalg.{op}: The input tensor A must have {what} and a floating point or complex "
                           f"dtype, got shape {list(a.shape)} and {a.dtype}")
    return a


def _syminvadj(X):  # noqa: N802, N803 - triu(X, 1) + triu(X, 1)^H + Re(diag(X))
    U = triu(X)  # noqa: N806
    d = U.diagonal(0, -2, -1)
    if d._data.dtype.kind == "c":  # (R's diagonal is real: only the real part of X's diagonal has a gradient)
        from .complex_ops import real
        d = real(d)
    return U + U.mH - diag_embed(d)


def _qr_backward_tall(gQ, gR, Q, R):  # noqa: N803 - m >= n, reduced factors
    from .linalg_factor import solve_triangular

    if gQ is not None and gR is not None:
        M = matmul(gR, R.mH) - matmul(Q.mH, gQ)  # noqa: N806
    elif gQ is not None:
        M = -matmul(Q.mH, gQ)  # noqa: N806
    else:
        M = matmul(gR, R.mH)  # noqa: N806
    gA = matmul(Q, _syminvadj(M))  # noqa: N806
    if gQ is not None:
        gA = gA + gQ  # noqa: N806
    return solve_triangular(R.mH, gA, upper=False, left=False)  # gA R^-H (R^H lower triangular)


class LinalgQrBackward0(Node):
    """PyTorch's QR backward: for M >= N, ``gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^-H`` (a triangular
    solve); for a wide ``A = [X | Y]`` (X square, ``R = [U | V]``): ``gA = [qr_backward(gQ + Y gV^H, gU) | Q gV]``.
    Defined for reduced factors and for complete ones of a square or wide matrix, as PyTorch; needs R's diagonal
    nonzero. Complex: R's diagonal is real (LAPACK's), which fixes Q's phases; not holomorphic, written for
    PyTorch's convention (Note [complex gradients])."""

    _materialize = False
    _holomorphic = False

    def __init__(self, A, m, n):  # noqa: N803
        super().__init__((A,))
        self.m, self.n = m, n

    def backward(self, gQ, gR):  # noqa: N803
        A, Q, R = self.saved_tensors  # noqa: N806
        m, n = self.m, self.n
        if gQ is None and gR is None:
            return (None,)
        if m >= n:
            return (_qr_backward_tall(gQ, gR, Q, R),)
        from ..ops.shape import cat
        Y = A[..., m:]  # noqa: N806
        U, gU = R[..., :m], (None if gR is None else gR[..., :m])  # noqa: N806
        gV = None if gR is None else gR[..., m:]  # noqa: N806
        gX = gQ if gV is None else (matmul(Y, gV.mH) if gQ is None else gQ + matmul(Y, gV.mH))  # noqa: N806
        left = _qr_backward_tall(gX, gU, Q, U)
        right = matmul(Q, gV) if gV is not None else (A[..., m:] * 0)
        return (cat([left, right], -1),)


def qr(A, mode: str = "reduced"):  # noqa: N803
    """``torch.linalg.qr``: ``(Q, R)`` with ``A = Q @ R``; ``mode`` 'reduced', 'complete' or 'r' (Q empty).
    Differentiable for 'reduced', and for 'complete' when M <= N (PyTorch's rule); R's diagonal must be nonzero."""
    a = _check("qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           f"(default), 'r', or 'complete'")
    q, r = tk.linalg.qr(a, mode=mode)
    m, n = a.shape[-2:]
    if not needs_grad(A) or mode == "r":
        if mode == "r" and needs_grad(A):
            out_r = qr(A, "reduced").R
            return QRResult(wrap(q), out_r)
        return QRResult(wrap(q), wrap(r))
    if mode == "complete" and m > n:
        raise RuntimeError("linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='complete' and nrows > ncols (PyTorch's rule); hint: use mode='reduced'")
    node = LinalgQrBackward0(A, m, n)
    outs = (node.output(q, 0), node.output(r, 1))
    node.save(A, outputs=outs)
    return QRResult(*outs)


class LinalgEighBackward0(Node):
    """PyTorch's eigh backward: ``gA = V (diag(gL) + skew(V^H gV) / E) V^H`` with ``skew(X) = (X - X^H) / 2`` and
    ``E_ij = L_j - L_i``. As PyTorch documents, gradients through the eigenvectors are finite only for distinct
    eigenvalues (a repeated eigenvalue divides by 0); eigenvalue-only losses are always fine. Complex
    eigenvectors are defined up to a phase each: a loss that depends on the phases (``Im diag(V^H gV) != 0``)
    raises PyTorch's error. Not holomorphic: written for PyTorch's convention (Note [complex gradients])."""

    _materialize = False
    _holomorphic = False

    def backward(self, gL, gV):  # noqa: N803
        L, V = self.saved_tensors  # noqa: N806
        if gL is None and gV is None:
            return (None,)
        if gV is None:
            return (matmul(V * gL.unsqueeze(-2), V.mH),)
        X = matmul(V.mH, gV)  # noqa: N806
        if X._data.dtype.kind == "c":
            _check_phase_invariance("linalg_eigh_backward", X)
        X = (X - X.mH) * 0.5  # noqa: N806
        n = L.shape[-1]
        from ..factory import eye
        eye_n = eye(n, dtype=L.dtype, device=L.device)
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye_n  # noqa: N806
        X = X / E  # noqa: N806
        if gL is not None:
            X = X + diag_embed(gL)  # noqa: N806
        return (matmul(matmul(V, X), V.mH),)


def _check_phase_invariance(op: str, X, other=None):  # noqa: N803
    """PyTorch's check that a loss does not depend on the phases of complex singular/eigen vectors: the
    imaginary part of ``diag(X)`` (``X = V^H gV``; for the SVD ``diag(U^H gU) + diag(Vh gVh^H)``) must vanish."""
    import numpy as np

    d = tk.imag(tk.diagonal(X._data, axis1=-2, axis2=-1))
    if other is not None:
        d = d + tk.imag(tk.diagonal(other._data, axis1=-2, axis2=-1))
    if d.size and not np.allclose(d.numpy() if d.device.type == "cpu" else d.to_device("cpu").numpy(), 0,
                                  rtol=1e-2, atol=1e-2):
        what = "eigenvectors" if "eig" in op else "singular vectors"
        raise RuntimeError(f"{op}: The {what} in the complex case are specified up to multiplication by e^{{i phi}}. "
                           f"The specified loss function depends on this quantity, so it is ill-defined.")


def eigh(A, UPLO: str = "L"):  # noqa: N803
    """``torch.linalg.eigh``: ``(eigenvalues, eigenvectors)``, ascending, of the symmetric matrices (triangle
    ``UPLO`` read). See LinalgEighBackward0 for the gradients' caveat at repeated eigenvalues."""
    a = _check("eigh", A, square=True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, v = tk.linalg.eigh(a, UPLO=UPLO)
    if not needs_grad(A):
        return EighResult(wrap(w), wrap(v))
    node = LinalgEighBackward0((A,))
    outs = (node.output(w, 0), node.output(v, 1))
    node.save(outputs=outs)
    return EighResult(*outs)


def eigvalsh(A, UPLO: str = "L"):  # noqa: N803
    """``torch.linalg.eigvalsh``: the eigenvalues, ascending (gradient ``V diag(g) V^T``)."""
    if needs_grad(A):
        return eigh(A, UPLO).eigenvalues
    a = _check("eigvalsh", A, square=True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigvalsh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return wrap(tk.linalg.eigvalsh(a, UPLO=UPLO))
