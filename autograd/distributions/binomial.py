"""``Binomial(total_count, probs=None, logits=None)``: ``P(k) = C(n, k) p^k (1-p)^(n-k)`` for k = 0..n, PyTorch's
parameters, log_prob (in logits, stable for extreme ones), entropy and enumerate_support (one total_count for
the whole batch, as PyTorch). Draws on the device without a host loop, on ``p' = min(p, 1 - p)`` (k -> n - k
when flipped): inversion of the CDF over k = 0..63 where ``n p' < 10`` (the tail past 63 has probability
< 1e-25 there), Hörmann's transformed rejection (BTRS, 1993) where ``n p' >= 10``, 24 candidates per draw
evaluated at once and the first accepted taken (each is accepted with probability >= 0.7, measured at n p' = 10:
all 24 rejected has probability < 3e-13)."""

from __future__ import annotations

from .. import factory as _f
from ..grad_mode import no_grad
from ..ops import abs as _abs
from ..ops import argmax, clamp, exp, floor, gather, lgamma, log, log1p, sqrt, where, xlogy
from . import constraints
from .discrete import _binary_param, _one_of
from .distribution import Distribution, broadcast_all

__all__ = ["Binomial"]

_K_INV = 64
_CANDIDATES = 24


def _binomial_small(n, p, shape):
    k = _f.arange(_K_INV, dtype=p.dtype, device=p.device).reshape((_K_INV,) + (1,) * len(shape))
    logpmf = lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(clamp(n - k, min=0.0) + 1.0) + xlogy(k, p) + xlogy(
        clamp(n - k, min=0.0), 1.0 - p)
    pmf = where(k <= n, exp(logpmf), 0.0)
    u = _f.rand(*shape, dtype=p.dtype, device=p.device)
    return clamp((u > pmf.cumsum(0)).sum(0).to(p.dtype), max=n)  # the first k whose CDF reaches u


def _binomial_btrs(n, p, shape):
    p = clamp(p, min=1e-300)  # (lanes that take the other branch: keep this one's arithmetic finite)
    n = where(n * p < 10.0, 10.0 / p, n)
    q = 1.0 - p
    spq = sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    m = floor((n + 1.0) * p)
    h = lgamma(m + 1.0) + lgamma(n - m + 1.0)
    u = _f.rand(_CANDIDATES, *shape, dtype=p.dtype, device=p.device) - 0.5
    v = _f.rand(_CANDIDATES, *shape, dtype=p.dtype, device=p.device)
    us = 0.5 - _abs(u)
    k = floor((2.0 * a / us + b) * u + c)
    inside = (k >= 0) & (k <= n)
    kc = clamp(clamp(k, min=0.0), max=n)
    quick = (us >= 0.07) & (v <= v_r)
    ok = log(v * alpha / (a / (us * us) + b)) <= h - lgamma(kc + 1.0) - lgamma(n - kc + 1.0) + (kc - m) * (
        log(p) - log(q))
    accept = inside & (quick | ok)
    first = argmax(accept.to(p.dtype), dim=0, keepdim=True)
    return gather(kc, 0, first).squeeze(0)


def _clamp_by_zero(x):
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """``Binomial(total_count=1, probs=None, logits=None)``: successes in ``total_count`` trials of probability
    ``probs = sigmoid(logits)`` (samples as floats of the parameters' dtype, as PyTorch)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of("Binomial", probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            shape = self.probs.shape
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            shape = self.logits.shape
        super().__init__(shape, validate_args=validate_args)

    def __getattr__(self, name):
        return _binary_param(self, name)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return clamp(floor((self.total_count + 1) * self.probs), max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            n = self.total_count.detach().expand(shape).double()
            p = self.probs.detach().expand(shape).double()
            flip = p > 0.5
            ps = where(flip, 1.0 - p, p)
            k = where(n * ps < 10.0, _binomial_small(n, ps, shape), _binomial_btrs(n, ps, shape))
            return where(flip, n - k, k).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        value = value.to(logits.dtype)
        normalize = n * _clamp_by_zero(logits) + n * log1p(exp(-_abs(logits))) - lgamma(n + 1.0)
        return value * logits - lgamma(value + 1.0) - lgamma(n - value + 1.0) - normalize

    def _homogeneous(self, what) -> int:
        n = self.total_count
        top = int(n.max().item()) if n.numel() else 0
        if n.numel() and top != int(n.min().item()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return top

    def enumerate_support(self, expand: bool = True):
        top = self._homogeneous("enumerate_support")
        values = _f.arange(1 + top, dtype=self.total_count.dtype, device=self.total_count.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values

    def entropy(self):
        self._homogeneous("entropy")
        values = self.enumerate_support(False)
        lp = self.log_prob(values)
        return -(exp(lp) * lp).sum(0)
