"""``autograd.linalg``: PyTorch's ``torch.linalg`` names for the norms and products autograd has
(vector_norm, matrix_norm, norm, vecdot, matmul); all differentiable."""

from __future__ import annotations

import math

from .ops.linalg import matmul, vecdot
from .ops.reduction import amax, amin, vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul"]


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):  # noqa: A002, N803
    """Matrix norm over the two dims ``dim``: ``'fro'``, or the max/min absolute column (``ord=±1``) or row
    (``ord=±inf``) sum. ``'nuc'`` and ``ord=±2`` need singular values and are not available yet."""
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
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values (an SVD), which autograd "
                                  f"does not have yet. Hint: ord='fro', 1, -1, inf or -inf work")
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
