"""Continuous distributions: ``Normal``, ``Uniform``, ``Exponential``, ``Laplace`` (PyTorch's parameters,
formulas and reparameterized samplers)."""

from __future__ import annotations

import math

from .. import factory as _f
from ..ops import erf, log, log1p, sign
from . import constraints
from .distribution import _LOG_SQRT_2PI, Distribution, broadcast_all

__all__ = ["Normal", "Uniform", "Exponential", "Laplace"]


def _uniform_like(t, shape, low=0.0, high=1.0):
    """U[low, high) draws of ``shape`` in t's dtype and device (from the global generator)."""
    u = _f.rand(*shape, dtype=t.dtype, device=t.device)
    return u if (low, high) == (0.0, 1.0) else u * (high - low) + low


class Normal(Distribution):
    """``Normal(loc, scale)``: density ``exp(-(x - loc)² / (2 scale²)) / (scale sqrt(2π))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _f.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value):
        return 0.5 * (1 + erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + log(self.scale)


class Uniform(Distribution):
    """``Uniform(low, high)`` on ``[low, high)``."""

    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(f"Expected parameter low ({tuple(self.low.shape)}) of distribution Uniform to be "
                             f"less than high, but found low >= high:\n{self.low}\n{self.high}")

    @property
    def support(self):
        return constraints.half_open_interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = _uniform_like(self.low, self._extended_shape(sample_shape))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = ((value >= self.low) & (value < self.high)).to(self.low.dtype)
        return log(inside) - log(self.high - self.low)

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self):
        return log(self.high - self.low)


class Exponential(Distribution):
    """``Exponential(rate)``: density ``rate exp(-rate x)`` on ``x >= 0``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return 1 / self.rate

    @property
    def mode(self):
        return self.rate * 0

    @property
    def variance(self):
        return self.rate ** -2

    def rsample(self, sample_shape=()):
        u = _uniform_like(self.rate, self._extended_shape(sample_shape))
        return -log1p(-u) / self.rate  # u in [0, 1): 1 - u in (0, 1], a finite draw

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return log(self.rate) - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * value).exp()

    def entropy(self):
        return 1.0 - log(self.rate)


class Laplace(Distribution):
    """``Laplace(loc, scale)``: density ``exp(-|x - loc| / scale) / (2 scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale ** 2

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        tiny = 1e-7 if self.loc.dtype.itemsize <= 4 else 1e-15  # keeps log1p(-|u|) finite
        u = _uniform_like(self.loc, self._extended_shape(sample_shape), tiny - 1.0, 1.0)
        return self.loc - self.scale * sign(u) * log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        z = value - self.loc
        return 0.5 - 0.5 * sign(z) * (-(z.abs()) / self.scale).expm1()

    def entropy(self):
        return 1 + log(2 * self.scale)

