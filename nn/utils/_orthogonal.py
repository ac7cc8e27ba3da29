"""``nn.utils.parametrizations.orthogonal``: PyTorch's orthogonal parametrization (maps ``matrix_exp``, ``cayley``
and ``householder``; with ``use_trivialization`` the buffer ``base`` holds the orthogonal starting point).

The linear algebra it needs is written here as composites of matmuls and elementwise ops, so it is differentiable
and runs on cuda through the existing kernels: ``matrix_exp`` (scaling and squaring of a Taylor polynomial),
``householder_product`` (the product of the reflectors ``I - tau v v^T``), the Cayley map's solve (Gauss-Jordan
without pivoting, stable here: ``I - A/2`` for skew-symmetric A has a positive definite symmetric part) and, for
``right_inverse`` only (no gradient), a Householder QR with LAPACK's ``geqrf`` conventions."""

from __future__ import annotations

import math

import autograd as ag

from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _eye(n, k, like):
    e = ag.eye(n, k, dtype=like.dtype, device=like.device)
    return e.expand(*like.shape[:-2], n, k) if like.dim() > 2 else e


def matrix_exp(a):
    """``exp(a)`` for square (..., n, n) ``a``: a degree-18 Taylor polynomial of ``a / 2**s`` (1-norm <= 1/2),
    squared ``s`` times (``s`` is read from the norm: one host sync)."""
    n = a.shape[-1]
    norm = float(a.detach().abs().sum(-2).max())
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    b = a / (2.0 ** s)
    eye = _eye(n, n, a)
    e = eye + b / 18.0
    for j in range(17, 0, -1):  # Horner: I + b/j (I + b/(j+1) (...))
        e = eye + ag.matmul(b, e) / float(j)
    for _ in range(s):
        e = ag.matmul(e, e)
    return e


def _cayley(a):
    """``solve(I - a/2, I + a/2)`` for skew-symmetric (..., n, n) ``a``, by Gauss-Jordan elimination on the
    augmented ``[I - a/2 | I + a/2]`` (each step a rank-1 update, so autograd differentiates it)."""
    n = a.shape[-1]
    eye = _eye(n, n, a)
    aug = ag.cat([eye - 0.5 * a, eye + 0.5 * a], -1)
    for i in range(n):
        row = aug[..., i:i + 1, :] / aug[..., i:i + 1, i:i + 1]
        col = aug[..., :, i:i + 1] - eye[..., :, i:i + 1]
        aug = aug - col * row  # rows j != i lose col_j * row; row i becomes the pivot-normalized row
    return aug[..., :, n:]


def householder_product(a, tau):
    """The first k columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T`` with ``v_i`` column i of ``a``
    below the diagonal and 1 on it (PyTorch's ``linalg.householder_product``)."""
    n, k = a.shape[-2], a.shape[-1]
    v = a.tril(-1) + _eye(n, k, a)
    m = _eye(n, k, a)
    for i in reversed(range(k)):
        vi = v[..., :, i:i + 1]
        m = m - tau[..., i:i + 1].unsqueeze(-1) * ag.matmul(vi, ag.matmul(vi.mT, m))
    return m


def geqrf(a):
    """Householder QR of (..., n, k) ``a``, n >= k, in LAPACK's packed form: R on and above the diagonal, the
    reflectors below it, and ``tau`` (no gradient)."""
    with ag.no_grad():
        r = a.clone()
        n, k = a.shape[-2], a.shape[-1]
        taus = []
        for j in range(k):
            x = r[..., j:, j]
            x0 = x[..., 0]
            tail = (x[..., 1:] * x[..., 1:]).sum(-1) if n - j > 1 else ag.zeros_like(x0)
            norm = (x0 * x0 + tail).sqrt()
            beta = -ag.where(x0 >= 0, norm, -norm)
            flat = tail == 0  # nothing to reflect: tau = 0, as LAPACK
            beta = ag.where(flat, x0, beta)
            tau = ag.where(flat, ag.zeros_like(x0), (beta - x0) / ag.where(flat, ag.ones_like(beta), beta))
            scale = ag.where(flat, ag.zeros_like(x0), 1.0 / ag.where(flat, ag.ones_like(x0), x0 - beta))
            v = ag.cat([ag.ones_like(x0).unsqueeze(-1), x[..., 1:] * scale.unsqueeze(-1)], -1)
            if j + 1 < k:  # apply H to the trailing columns
                rest = r[..., j:, j + 1:]
                r[..., j:, j + 1:] = rest - tau[..., None, None] * v.unsqueeze(-1) * (v.unsqueeze(-1) * rest).sum(
                    -2, keepdim=True)
            r[..., j, j] = beta
            if n - j > 1:
                r[..., j + 1:, j] = v[..., 1:]
            taus.append(tau)
        return r, ag.stack(taus, -1)


def _make_orthogonal(a):
    """The Q of ``a = QR`` with R's diagonal made positive."""
    x, tau = geqrf(a)
    return householder_product(x, tau) * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eps = 10 * n * (2.220446049250313e-16 if q.dtype == ag.float64 else 1.1920928955078125e-07)
    err = (ag.matmul(q.mT, q) - _eye(k, k, q)).abs().max()
    return float(err) <= eps


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).to(ag.int32).to(q.dtype).unsqueeze(-2)  # PyTorch's .int()
        else:
            x = x.tril()
            if n != k:
                x = ag.cat([x, ag.zeros(*x.shape[:-1], n - k, dtype=x.dtype, device=x.device)], -1)
            q = matrix_exp(x - x.mT) if self.orthogonal_map == "matrix_exp" else _cayley(x - x.mT)
            if n != k:
                q = q[..., :k]
        if "base" in self._buffers:
            q = ag.matmul(self.base, q)
        return q.mT if transposed else q

    def right_inverse(self, q):
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix or batch of matrices of shape {list(self.shape)}, got "
                             f"one of shape {list(q.shape)}")
        with ag.no_grad():
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            if n < k:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError("orthogonal: it is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False")
                a, tau = geqrf(q)
                d = a.diagonal(dim1=-2, dim2=-1)
                a = _set_diag(a, ag.where(tau == 0, -d.sign(), d.sign()))  # PyTorch's sign convention
                return a.mT if q_init.shape[-2] < q_init.shape[-1] else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                extra = ag.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(ag.cat([q, extra], -1))
            self.base = q
            return -_eye(q_init.shape[-2], q_init.shape[-1], q_init).clone()


def _set_diag(a, d):
    k = d.shape[-1]
    out = a.clone()
    out[..., :k, :k] = out[..., :k, :k] - a[..., :k, :k].diagonal(dim1=-2, dim2=-1).diag_embed() + d.diag_embed()
    return out


def orthogonal(module, name: str = "weight", orthogonal_map=None, *, use_trivialization: bool = True):
    """Constrain ``module.<name>`` (a matrix or a batch of them) to be orthogonal (orthonormal rows or columns)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ag.Tensor):
        raise ValueError(f"orthogonal: module {type(module).__name__} has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"orthogonal: expected a matrix or batch of matrices, got a tensor of {weight.dim()} "
                         f"dimensions (shape {list(weight.shape)})")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
