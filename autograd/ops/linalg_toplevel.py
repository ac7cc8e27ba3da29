"""PyTorch's top-level names for matrix functions (``torch.det``, ``torch.logdet``, ``torch.slogdet``,
``torch.inverse``, ``torch.matrix_power``, ``torch.pinverse``, ``torch.cholesky``) and the Tensor methods of the
same names: thin forms of ``autograd.linalg``'s functions, differentiable through them."""

from __future__ import annotations

__all__ = ["det", "logdet", "slogdet", "inverse", "matrix_power", "pinverse", "cholesky"]
METHODS = __all__


def det(input):  # noqa: A002
    """``torch.det``: ``linalg.det``."""
    from .linalg_factor import det as _det
    return _det(input)


def slogdet(input):  # noqa: A002
    """``torch.slogdet``: ``(sign, logabsdet)`` of ``linalg.slogdet``."""
    from .linalg_factor import slogdet as _slogdet
    return _slogdet(input)


def logdet(input):  # noqa: A002
    """``torch.logdet``: ``log(det(A))``: NaN for a real matrix of negative determinant, -inf for a singular one,
    the principal complex logarithm for a complex matrix (``log(sign) + logabsdet``)."""
    from .elementwise import log
    from .linalg_factor import slogdet as _slogdet
    sign, logabs = _slogdet(input)
    return log(sign) + logabs


def inverse(input):  # noqa: A002
    """``torch.inverse``: ``linalg.inv``."""
    from .linalg_factor import inv
    return inv(input)


def matrix_power(input, n: int):  # noqa: A002
    """``torch.matrix_power``: ``linalg.matrix_power``."""
    from .linalg_factor import matrix_power as _mp
    return _mp(input, n)


def pinverse(input, rcond: float = 1e-15):  # noqa: A002
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    from ..linalg import pinv
    return pinv(input, rtol=rcond)


def cholesky(input, upper: bool = False):  # noqa: A002
    """``torch.cholesky`` (deprecated in PyTorch for ``linalg.cholesky``, same factor)."""
    from .linalg_factor import cholesky as _cholesky
    return _cholesky(input, upper=upper)
