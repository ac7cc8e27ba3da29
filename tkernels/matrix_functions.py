"""``matrix_power``, ``multi_dot`` and ``cond`` (``tkernels.linalg``), composed of matmul, inv and svdvals;
``multi_dot_order`` is shared with ``autograd.linalg.multi_dot``."""

from __future__ import annotations

import math

from .array import Array
from .factorizations import _check
from .validation import OpTypeError, OpValueError, describe

__all__: list[str] = []


def matrix_power(x, n: int, /) -> Array:
    """``x`` (..., M, M) to the integer power ``n`` by repeated squaring; ``n = 0`` the identity, ``n < 0`` the
    power of ``inv(x)`` (an error for singular x)."""
    from .creation import eye
    from .linalg import matmul
    from .solvers import inv

    _check("matrix_power", x)
    if isinstance(n, bool) or not isinstance(n, int):
        raise OpTypeError(f"linalg.matrix_power: n must be an int, got {n!r} for {describe(x)}")
    return _power(x, n, matmul, inv,
                  lambda: eye(x.shape[-1], dtype=x.dtype, device=x.device).broadcast_to(x.shape).copy())


def _power(x, n, matmul, inv, identity):
    if n == 0:
        return identity()
    if n < 0:
        x, n = inv(x), -n
    result = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)


def multi_dot_order(dims):
    """The split table of the cheapest parenthesization of matrices ``dims[i] x dims[i+1]`` (the classic
    O(n^3) dynamic program over flop counts)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot_apply(mats, matmul):
    """The product of the 2-D ``mats`` in the optimal order (``matmul``: tkernels' or autograd's)."""
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    split = multi_dot_order(dims)

    def prod(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(prod(i, k), prod(k + 1, j))
    return prod(0, len(mats) - 1)


def multi_dot(arrays, /) -> Array:
    """``arrays[0] @ arrays[1] @ ...`` in the cheapest order; the first may be 1-D (a row vector) and the last
    1-D (a column vector), the others 2-D (PyTorch's ``linalg.multi_dot``)."""
    from .linalg import matmul

    arrays = list(arrays)
    if len(arrays) < 2:
        raise OpValueError(f"linalg.multi_dot(): expected at least 2 tensors but got {len(arrays)}")
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    mats = [arrays[0][None, :] if first else arrays[0]] + arrays[1:-1] + \
        [arrays[-1][:, None] if last else arrays[-1]]
    for i, m in enumerate(mats):
        if m.ndim != 2:
            raise OpValueError(f"linalg.multi_dot(): tensor {i} must be 2D (1D allowed first and last) but got "
                               f"{describe(arrays[i])}")
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise OpValueError(f"linalg.multi_dot(): tensors {i} and {i + 1} with shapes {arrays[i].shape} and "
                               f"{arrays[i + 1].shape} cannot be multiplied")
    r = multi_dot_apply(mats, matmul)
    if first:
        r = r[0]
    if last:
        r = r[..., 0]
    return r


def cond(x, p=None, /) -> Array:
    """The condition number of the (..., M, N) matrices in norm ``p``: None/2 (largest over smallest singular
    value), -2 (the reciprocal), or 'fro', 'nuc', inf, -inf, 1, -1 (``norm(x) * norm(inv(x))``, square x;
    inf for singular x)."""
    from .decompositions import svdvals
    from .elementwise import where
    from .reduction import matrix_norm
    from .solvers import inv_ex

    _check("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(x)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise OpValueError(f"linalg.cond: got an invalid norm type {p!r}; hint: None, 2, -2, 'fro', 'nuc', inf, -inf, "
                           f"1, -1")
    xi, info = inv_ex(x)
    r = matrix_norm(x, ord=p) * matrix_norm(xi, ord=p)
    return where(info > 0, math.inf, r)
