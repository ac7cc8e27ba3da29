"""Bijective transforms for ``TransformedDistribution`` (``torch.distributions.transforms``' names):
``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``, ``TanhTransform``, ``PowerTransform``,
``ComposeTransform``; each has ``__call__`` (forward), ``inv``, ``log_abs_det_jacobian(x, y)``, ``domain``,
``codomain`` and ``event_dim``."""

from __future__ import annotations

import math

from ..ops import abs as _abs
from ..ops import exp, log, sigmoid, softplus, tanh
from ..tensor import Tensor
from . import constraints

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform", "TanhTransform", "PowerTransform",
           "ComposeTransform"]


class Transform:
    domain = constraints.real
    codomain = constraints.real
    bijective = True
    event_dim = 0

    def __call__(self, x):
        return self._call(x)

    @property
    def inv(self):
        return _Inverse(self)

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__}: forward")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__}: inverse")

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError(f"{type(self).__name__}.log_abs_det_jacobian")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Inverse(Transform):
    def __init__(self, t):
        self._t = t
        self.domain, self.codomain, self.event_dim = t.codomain, t.domain, t.event_dim

    @property
    def inv(self):
        return self._t

    def _call(self, x):
        return self._t._inverse(x)

    def _inverse(self, y):
        return self._t(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._t.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    codomain = constraints.positive

    def _call(self, x):
        return exp(x)

    def _inverse(self, y):
        return log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """``y = loc + scale x``; ``event_dim`` > 0 sums the log-determinant over that many rightmost dims."""

    def __init__(self, loc, scale, event_dim: int = 0):
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        s = self.scale
        r = log(_abs(s)) if isinstance(s, Tensor) else math.log(abs(s)) + x * 0
        r = r.expand(x.shape) if r.shape != x.shape else r
        for _ in range(self.event_dim):
            r = r.sum(-1)
        return r


class SigmoidTransform(Transform):
    codomain = constraints.unit_interval

    def _call(self, x):
        return sigmoid(x)

    def _inverse(self, y):
        return log(y) - log(1 - y)

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return tanh(x)

    def _inverse(self, y):
        return 0.5 * (log(1 + y) - log(1 - y))

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))  # log(1 - tanh(x)^2), stable


class PowerTransform(Transform):
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent):
        self.exponent = exponent

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1.0 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        e = self.exponent
        le = log(_abs(e)) if isinstance(e, Tensor) else math.log(abs(e))
        return le + log(y / x)


class ComposeTransform(Transform):
    def __init__(self, parts):
        self.parts = list(parts)
        self.event_dim = max((p.event_dim for p in self.parts), default=0)
        if self.parts:
            self.domain, self.codomain = self.parts[0].domain, self.parts[-1].codomain

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        total = 0.0
        for p in self.parts:
            nxt = p(x)
            term = p.log_abs_det_jacobian(x, nxt)
            for _ in range(self.event_dim - p.event_dim):
                term = term.sum(-1)
            total = total + term
            x = nxt
        return total
