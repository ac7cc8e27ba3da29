"""``kl_divergence(p, q)``: KL(p ‖ q) in closed form for the registered pairs; ``register_kl(P, Q)`` adds one
(the most specific registered pair of base classes is used, as in PyTorch)."""

from __future__ import annotations

import math

from ..ops import digamma, lgamma, log, softplus, where
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent

__all__ = ["kl_divergence", "register_kl"]

_KL: dict = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def _(p, q): ...``."""
    def deco(fn):
        _KL[type_p, type_q] = fn
        return fn
    return deco


def kl_divergence(p, q):
    best = None
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            rank = (type(p).__mro__.index(tp), type(q).__mro__.index(tq))
            if best is None or rank < best[0]:
                best = (rank, fn)
    if best is None:
        raise NotImplementedError(f"kl_divergence: no KL(p || q) is implemented for p of type {type(p).__name__} "
                                  f"and q of type {type(q).__name__}; hint: register one with "
                                  f"@autograd.distributions.register_kl({type(p).__name__}, {type(q).__name__})")
    return best[1](p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    pp = p.probs
    t1 = pp * (softplus(-q.logits) - softplus(-p.logits))  # log p - log q, in logits
    t0 = (1 - pp) * (softplus(q.logits) - softplus(p.logits))  # log(1 - p) - log(1 - q)
    return t1 + t0


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = where(p.probs == 0, t * 0, t)  # 0 log 0 = 0, also against q's -inf
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = log((q.high - q.low) / (p.high - p.low))
    outside = (q.low > p.low) | (q.high < p.high)
    return where(outside, result * 0 + math.inf, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - log(ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -log(scale_ratio) + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions with different "
                                  "reinterpreted_batch_ndims")
    result = kl_divergence(p.base_dist, q.base_dist)
    for _ in range(p.reinterpreted_batch_ndims):
        result = result.sum(-1)
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a1, b1, a2, b2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * digamma(a1) - lgamma(a1) + lgamma(a2) + a2 * (log(b1) - log(b2))
            + a1 * (b2 - b1) / b1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    lb = lambda a, b: lgamma(a) + lgamma(b) - lgamma(a + b)  # noqa: E731
    return (lb(a2, b2) - lb(a1, b1) + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1)
            + (a2 - a1 + b2 - b1) * digamma(a1 + b1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    a0 = a.sum(-1)
    return (lgamma(a0) - lgamma(a).sum(-1) - lgamma(b.sum(-1)) + lgamma(b).sum(-1)
            + ((a - b) * (digamma(a) - digamma(a0).unsqueeze(-1))).sum(-1))
