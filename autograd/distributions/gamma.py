"""``Gamma``, ``Beta`` and ``Dirichlet`` (PyTorch's parameters, formulas and reparameterized samplers: the
implicit gradient of the standard gamma draws in ``_gamma_math``)."""

from __future__ import annotations

from ..ops import clamp, digamma, lgamma, log, log1p, xlogy
from . import constraints
from ._gamma_math import gammainc, lbeta, standard_gamma
from .distribution import Distribution, broadcast_all

__all__ = ["Gamma", "Beta", "Dirichlet"]


class Gamma(Distribution):
    """``Gamma(concentration, rate)``: density ``rate^c x^(c-1) exp(-rate x) / Γ(c)`` on x > 0."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return clamp((self.concentration - 1) / self.rate, min=0.0)

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return xlogy(c, r) + xlogy(c - 1, value) - r * value - lgamma(c)

    def cdf(self, value):
        return gammainc(self.concentration.expand(value.shape), (self.rate * value).double()).to(value.dtype)

    def entropy(self):
        c = self.concentration
        return c - log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)


class Beta(Distribution):
    """``Beta(concentration1, concentration0)`` on [0, 1]: ``X / (X + Y)`` of Gamma(c1) and Gamma(c0) draws."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return (self.concentration1 - 1) / (self.concentration1 + self.concentration0 - 2)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total * total * (total + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration1.expand(shape))
        y = standard_gamma(self.concentration0.expand(shape))
        return x / (x + y)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c1, c0 = self.concentration1, self.concentration0
        return xlogy(c1 - 1, value) + (c0 - 1) * log1p(-value) - lbeta(c1, c0)

    def entropy(self):
        c1, c0 = self.concentration1, self.concentration0
        return (lbeta(c1, c0) - (c1 - 1) * digamma(c1) - (c0 - 1) * digamma(c0)
                + (c1 + c0 - 2) * digamma(c1 + c0))


class Dirichlet(Distribution):
    """``Dirichlet(concentration)`` on the simplex (event shape: the last dim of ``concentration``)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("Dirichlet: concentration must be at least one-dimensional, got a 0-d tensor")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        c = self.concentration
        m = clamp(c - 1, min=0.0)
        return m / m.sum(-1, keepdim=True)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0 * c0 * (c0 + 1))

    def rsample(self, sample_shape=()):
        g = standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(c0) - (k - c0) * digamma(c0) - ((c - 1.0) * digamma(c)).sum(-1))
