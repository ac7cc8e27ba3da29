"""Gradient rows for reductions and cumulative ops (autograd/ops/reduction.py)."""

import math

import numpy as np

import autograd as ag

from ..harness import GradInfo, Sample, pos, rand


def _spread(rng, *shape):
    """Distinct values (at least ~0.1 apart): max/min/sort-like ops have a gradient there."""
    n = int(np.prod(shape)) if shape else 1
    v = (rng.permutation(n) - n / 2) * 0.25 + rng.uniform(-0.05, 0.05, n)
    return v.reshape(shape)


def _away(rng, *shape):
    x = rand(rng, *shape)
    return np.where(np.abs(x) < 0.15, 0.3, x)


def _reduce(rng, fn=rand):
    return [Sample((fn(rng, 2, 4),)), Sample((fn(rng, 2, 4),), {"dim": 1}),
            Sample((fn(rng, 2, 3, 2),), {"dim": (0, -1), "keepdim": True}), Sample((fn(rng, 3, 2),), {"dim": -2}),
            Sample((fn(rng),)), Sample((fn(rng, 5),), {"dim": 0, "keepdim": True})]


def R(name, op, samples=None, fn=rand, **kw):
    return GradInfo(name, op, samples or (lambda rng: _reduce(rng, fn)), **kw)


_TIES2 = np.array([[0.5, 1.5, -0.3, 1.5], [0.2, -0.7, 0.9, -0.7], [2.0, 0.1, 2.0, -1.0]])  # exactly two per row

# cuda=False: rows whose code path another row already compares on interpreted cuda (keeps the suite fast)
GRAD_INFOS = [
    R("sum", lambda x, **k: ag.sum(x, **k)),
    R("mean", lambda x, **k: ag.mean(x, **k)),
    R("amax", lambda x, **k: ag.amax(x, **k), fn=_spread),
    R("amin", lambda x, **k: ag.amin(x, **k), fn=_spread),
    # at a tie the gradient is defined (split evenly) but is not continuous, so there is no second derivative to
    # compare with finite differences; amax/amin above cover double backward
    GradInfo("amax_ties", lambda x: ag.amax(x, 1), lambda rng: [Sample((_TIES2,))], gradgrad=False),
    GradInfo("amin_ties", lambda x: ag.amin(x, -1, keepdim=True), lambda rng: [Sample((_TIES2,))],
             gradgrad=False, cuda=False),
    GradInfo("max_all", lambda x: ag.max(x), lambda rng: [Sample((_spread(rng, 2, 4),)), Sample((rand(rng),)),
                                                          Sample((np.array([0.3, 1.2, 1.2, -0.4]),))]),
    GradInfo("min_all", lambda x: x.min(), lambda rng: [Sample((_spread(rng, 2, 4),)), Sample((rand(rng),)),
                                                        Sample((np.array([0.3, -1.2, 1.2, -1.2]),))]),
    GradInfo("max_dim", lambda x, *a, **k: ag.max(x, *a, **k).values,
             lambda rng: [Sample((_spread(rng, 2, 4), 1)), Sample((_spread(rng, 3, 2), -2), {"keepdim": True}),
                          Sample((rand(rng), 0)), Sample((_spread(rng, 2, 3, 2), 2))]),
    GradInfo("min_dim", lambda x, *a, **k: x.min(*a, **k)[0],
             lambda rng: [Sample((_spread(rng, 2, 4), 0)), Sample((_spread(rng, 3, 2), -1), {"keepdim": True})],
             cuda=False),
    GradInfo("max_binary", lambda a, b: ag.max(a, b),
             lambda rng: [Sample((_spread(rng, 3, 4), _spread(rng, 4) + 0.1))], cuda=False),
    GradInfo("aminmax", lambda x, **k: tuple(ag.aminmax(x, **k)),
             lambda rng: [Sample((_spread(rng, 2, 4),)), Sample((_spread(rng, 2, 4),), {"dim": -1, "keepdim": True})],
             cuda=False),
    R("prod", lambda x, *a: ag.prod(x, *a), samples=lambda rng: [
        Sample((rand(rng, 3, 4),)), Sample((rand(rng, 2, 4), 1)), Sample((rand(rng, 3, 2), -2, True)),
        Sample((rand(rng),)), Sample((np.array([[0.5, 0.0, 1.5], [0.0, 2.0, 0.0], [1.1, -0.7, 0.9]]), 1)),
        Sample((np.array([0.5, 0.0, -1.5, 1.2]),)), Sample((np.array([[0.5, 0.0], [0.0, 2.0]]),))]),
    R("var", lambda x, *a, **k: ag.var(x, *a, **k), samples=lambda rng: [
        Sample((rand(rng, 2, 4),)), Sample((rand(rng, 2, 4), 1)), Sample((rand(rng, 2, 4),), {"unbiased": False}),
        Sample((rand(rng, 2, 3, 2), (0, -1)), {"keepdim": True, "correction": 2}),
        Sample((rand(rng),), {"correction": 0})]),
    R("std", lambda x, *a, **k: x.std(*a, **k), samples=lambda rng: [
        Sample((rand(rng, 2, 4),)), Sample((rand(rng, 2, 4), -1, False, True)),
        Sample((rand(rng, 2, 3, 2),), {"dim": (0, 2), "correction": 0}), Sample((rand(rng),), {"correction": 0})]),
    GradInfo("var_mean", lambda x, **k: ag.var_mean(x, **k), lambda rng: [
        Sample((rand(rng, 2, 4),), {"dim": 1}), Sample((rand(rng, 3, 2),), {"dim": 0, "correction": 0})], cuda=False),
    GradInfo("std_mean", lambda x, **k: ag.std_mean(x, **k), lambda rng: [
        Sample((rand(rng, 2, 4),)), Sample((rand(rng, 3, 2),), {"dim": -1, "keepdim": True})], cuda=False),
    GradInfo("logsumexp", lambda x, *a, **k: ag.logsumexp(x, *a, **k), lambda rng: [
        Sample((rand(rng, 2, 4), 1)), Sample((rand(rng, 2, 3, 2), (0, -1), True)), Sample((rand(rng), 0)),
        Sample((rand(rng, 5), -1))]),
    GradInfo("dist", lambda x, y, *a: ag.dist(x, y, *a), lambda rng: [
        Sample((rand(rng, 2, 4), rand(rng, 4))), Sample((rand(rng, 3), rand(rng, 3), 3))]),
    GradInfo("norm", lambda x, *a, **k: ag.norm(x, *a, **k), lambda rng: [
        Sample((rand(rng, 2, 4),)), Sample((rand(rng, 2, 4), 2, 1)), Sample((rand(rng, 2, 3, 2),),
                                                                           {"dim": (0, 2), "keepdim": True}),
        Sample((rand(rng),)), Sample((np.zeros((2, 3)),)), Sample((np.array([[0.0, 0.0], [0.3, -0.4]]), 2, 1))]),
    GradInfo("norm_p1", lambda x, *a: ag.norm(x, 1, *a), lambda rng: [
        Sample((_away(rng, 2, 4),)), Sample((_away(rng, 2, 4), 0))]),
    GradInfo("norm_inf", lambda x, *a: ag.norm(x, math.inf, *a), lambda rng: [
        Sample((_spread(rng, 2, 4),)), Sample((_spread(rng, 2, 4), -1)), Sample((np.array([0.3, -1.1, 1.1]),))]),
    GradInfo("norm_neginf", lambda x, *a: ag.norm(x, -math.inf, *a), lambda rng: [
        Sample((_spread(rng, 2, 4) + 0.05,)), Sample((_spread(rng, 2, 4) + 0.05, 1))], cuda=False),
    GradInfo("norm_p3", lambda x, *a: ag.norm(x, 3, *a), lambda rng: [
        Sample((rand(rng, 2, 4),)), Sample((rand(rng, 2, 4), 1)), Sample((np.zeros(3),))]),
    GradInfo("norm_p05", lambda x, *a: ag.norm(x, 0.5, *a), lambda rng: [
        Sample((_away(rng, 2, 4),)), Sample((_away(rng, 2, 4), 1))], cuda=False),
    GradInfo("norm_fro_dims", lambda x: x.norm("fro", dim=(-2, -1)), lambda rng: [Sample((rand(rng, 2, 3, 2),))],
             cuda=False),
    GradInfo("norm_dtype", lambda x: ag.norm(x, dtype=ag.float64), lambda rng: [Sample((rand(rng, 3, 4),))],
             cuda=False),
    GradInfo("nansum", lambda x, **k: ag.nansum(x, **k), lambda rng: [
        Sample((np.array([[0.5, np.nan, 1.5], [np.nan, 2.0, -0.3]]),)),
        Sample((np.array([[0.5, np.nan, 1.5], [np.nan, 2.0, -0.3]]),), {"dim": 1}), Sample((rand(rng, 3, 4), ))]),
    GradInfo("nanmean", lambda x, **k: x.nanmean(**k), lambda rng: [
        Sample((np.array([[0.5, np.nan, 1.5], [np.nan, 2.0, -0.3]]),)),
        Sample((np.array([[0.5, np.nan, 1.5], [np.nan, 2.0, -0.3]]),), {"dim": 0, "keepdim": True})], cuda=False),
    GradInfo("cumsum", lambda x, *a, **k: ag.cumsum(x, *a, **k), lambda rng: [
        Sample((rand(rng, 2, 4), 1)), Sample((rand(rng, 3, 2), -2)), Sample((rand(rng), 0)),
        Sample((rand(rng, 5), 0), {"dtype": ag.float64})]),
    GradInfo("cumprod", lambda x, *a: ag.cumprod(x, *a), lambda rng: [
        Sample((rand(rng, 2, 4), 1)), Sample((np.array([[0.5, 0.0, 1.5, 2.0], [0.0, 2.0, 0.0, -1.0],
                                                          [1.1, -0.7, 0.9, 0.0]]), -1)),
        Sample((rand(rng, 3, 2), 0)), Sample((rand(rng), 0)), Sample((np.array([0.0, 0.0, 1.5]), 0))]),
    GradInfo("cummax", lambda x, d: tuple(ag.cummax(x, d)), lambda rng: [
        Sample((_spread(rng, 2, 4), 1)), Sample((_spread(rng, 3, 2), -2)), Sample((rand(rng), 0))]),
    GradInfo("cummin", lambda x, d: x.cummin(d).values, lambda rng: [
        Sample((_spread(rng, 2, 4), -1)), Sample((_spread(rng, 5), 0))], cuda=False),
    GradInfo("pos_reductions_chain", lambda x: ag.prod(x, 0).logsumexp(0) + x.std() * x.amax(),
             lambda rng: [Sample((pos(rng, 3, 4),))], cuda=False),
]
