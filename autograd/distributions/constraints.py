"""Constraints on distribution parameters and supports (``torch.distributions.constraints``' names):
``check(value)`` gives a bool Tensor, True where the value satisfies the constraint."""

from __future__ import annotations

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean", "simplex",
           "integer_interval", "interval", "half_open_interval", "greater_than", "greater_than_eq",
           "nonnegative_integer", "independent", "real_vector"]


class Constraint:
    event_dim = 0
    is_discrete = False

    def check(self, value):
        raise NotImplementedError(f"{type(self).__name__}.check")

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def check(self, value):
        return value == value  # not NaN (infinities are real here, as in PyTorch)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound, strict=True):
        self.lower_bound, self.strict = lower_bound, strict

    def check(self, value):
        return (value > self.lower_bound) if self.strict else (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{'GreaterThan' if self.strict else 'GreaterThanEq'}(lower_bound={self.lower_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound, half_open=False):
        self.lower_bound, self.upper_bound, self.half_open = lower_bound, upper_bound, half_open

    def check(self, value):
        upper = (value < self.upper_bound) if self.half_open else (value <= self.upper_bound)
        return (value >= self.lower_bound) & upper

    def __repr__(self) -> str:
        kind = "HalfOpenInterval" if self.half_open else "Interval"
        return f"{kind}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Independent(Constraint):
    def __init__(self, base, reinterpreted_batch_ndims):
        self.base, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.event_dim = base.event_dim + reinterpreted_batch_ndims
        self.is_discrete = base.is_discrete

    def check(self, value):
        ok = self.base.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            ok = ok.all(-1)
        return ok

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base!r}, {self.reinterpreted_batch_ndims})"


class _LowerCholesky(Constraint):
    """Lower triangular with a positive diagonal (PyTorch's ``lower_cholesky``)."""

    event_dim = 2

    def check(self, value):
        tril = (value.tril() == value).all(-1).all(-1)
        return tril & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric with a Cholesky factorization (PyTorch's ``positive_definite``)."""

    event_dim = 2

    def check(self, value):
        import tkernels as tk

        from ..ops._base import wrap

        sym = ((value - value.mT).abs() <= 1e-6 * value.abs().amax((-2, -1), keepdim=True)).all(-1).all(-1)
        info = wrap(tk.linalg.cholesky_ex(value.detach()._data).info)
        return sym & (info == 0)


real = _Real()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, strict=False)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
nonnegative_integer = _IntegerGreaterThan(0)
real_vector = _Independent(real, 1)
integer_interval = _IntegerInterval
interval = _Interval
independent = _Independent


def half_open_interval(lower_bound, upper_bound):
    return _Interval(lower_bound, upper_bound, half_open=True)


def greater_than(lower_bound):
    return _GreaterThan(lower_bound)


def greater_than_eq(lower_bound):
    return _GreaterThan(lower_bound, strict=False)
