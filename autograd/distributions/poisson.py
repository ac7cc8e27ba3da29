"""``Poisson(rate)``: ``P(k) = rate^k exp(-rate) / k!``. Draws on the device without a host loop: inversion of
the CDF over k = 0..63 below rate 10 (the tail past 63 has probability < 1e-25 there), Hörmann's transformed
rejection with squeeze (PTRS, 1993) at and above 10, 16 candidates per draw evaluated at once and the first
accepted taken (acceptance > 0.85: all 16 rejected has probability < 1e-13)."""

from __future__ import annotations

from .. import factory as _f
from ..grad_mode import no_grad
from ..ops import abs as _abs
from ..ops import argmax, clamp, floor, gather, lgamma, log, sqrt, where, xlogy
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Poisson"]

_K_INV = 64
_CANDIDATES = 16


def _poisson_small(mu, shape):
    k = _f.arange(_K_INV, dtype=mu.dtype, device=mu.device).reshape((_K_INV,) + (1,) * len(shape))
    logpmf = xlogy(k, mu) - mu - lgamma(k + 1.0)
    cdf = logpmf.exp().cumsum(0)
    u = _f.rand(*shape, dtype=mu.dtype, device=mu.device)
    return (u > cdf).sum(0).to(mu.dtype)  # the first k whose CDF reaches u


def _poisson_ptrs(mu, shape):
    m = clamp(mu, min=10.0)  # (lanes below 10 take the other branch; keep this one's arithmetic finite)
    smu = sqrt(m)
    b = 0.931 + 2.53 * smu
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    u = _f.rand(_CANDIDATES, *shape, dtype=mu.dtype, device=mu.device) - 0.5
    v = _f.rand(_CANDIDATES, *shape, dtype=mu.dtype, device=mu.device)
    us = 0.5 - _abs(u)
    k = floor((2.0 * a / us + b) * u + m + 0.43)
    quick = (us >= 0.07) & (v <= vr)
    reject = (k < 0) | ((us < 0.013) & (v > us))
    ok = log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -m + xlogy(clamp(k, min=0.0), m) - lgamma(
        clamp(k, min=0.0) + 1.0)
    accept = quick | (~reject & ok)
    first = argmax(accept.to(mu.dtype), dim=0, keepdim=True)
    return clamp(gather(k, 0, first).squeeze(0), min=0.0)


class Poisson(Distribution):
    """``Poisson(rate)`` on the non-negative integers (samples as floats of rate's dtype, as PyTorch)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return floor(self.rate)

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            mu = self.rate.detach().expand(shape).double()
            r = where(mu < 10.0, _poisson_small(mu, shape), _poisson_ptrs(mu, shape))
            return r.to(self.rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate = self.rate
        return xlogy(value, rate) - rate - lgamma(value + 1.0)


