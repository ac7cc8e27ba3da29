"""Gradient rows for sorting and selection (autograd/ops/searching.py). Values are distinct: at ties the
chosen element (and so the gradient) jumps."""

import numpy as np

import autograd as ag

from ..harness import GradInfo, Sample, rand
from .reduction import _spread

_TIES2 = np.array([0.4, 1.3, 1.3, 2.0])  # lower median 1.3 appears twice: the gradient splits evenly


def _v(t):
    return t.values


GRAD_INFOS = [
    GradInfo("sort", lambda x, *a, **k: ag.sort(x, *a, **k).values, lambda rng: [
        Sample((_spread(rng, 2, 4),)), Sample((_spread(rng, 3, 2), 0), {"descending": True}),
        Sample((rand(rng),)), Sample((_spread(rng, 2, 3, 2), -2, True))]),
    GradInfo("sort_tuple", lambda x: tuple(x.sort(descending=True, stable=True)),
             lambda rng: [Sample((_spread(rng, 5),))]),
    GradInfo("msort", lambda x: ag.msort(x), lambda rng: [Sample((_spread(rng, 5, 3),))]),
    GradInfo("topk", lambda x, *a, **k: ag.topk(x, *a, **k).values, lambda rng: [
        Sample((_spread(rng, 2, 4), 2)), Sample((_spread(rng, 3, 2), 3, 0), {"largest": False}),
        Sample((_spread(rng, 2, 5), 4), {"sorted": False}), Sample((rand(rng), 1)),
        Sample((_spread(rng, 6), 0))]),
    GradInfo("kthvalue", lambda x, *a, **k: _v(ag.kthvalue(x, *a, **k)), lambda rng: [
        Sample((_spread(rng, 2, 4), 2)), Sample((_spread(rng, 3, 2), 3, 0), {"keepdim": True}),
        Sample((rand(rng), 1))]),
    GradInfo("median", lambda x: ag.median(x), lambda rng: [
        Sample((_spread(rng, 2, 4),)), Sample((_spread(rng, 4, 2),)), Sample((rand(rng),))]),
    GradInfo("median_ties", lambda x: x.median(), lambda rng: [Sample((_TIES2,))], gradgrad=False),
    GradInfo("median_dim", lambda x, *a, **k: _v(ag.median(x, *a, **k)), lambda rng: [
        Sample((_spread(rng, 2, 4), 1)), Sample((_spread(rng, 3, 2), -2), {"keepdim": True}),
        Sample((rand(rng), 0))]),
    GradInfo("nanmedian", lambda x, *a: ag.nanmedian(x, *a), lambda rng: [
        Sample((np.array([[0.5, np.nan, 1.5, -0.2], [np.nan, 2.0, -0.3, 0.1]]),)),
        Sample((_spread(rng, 3, 4),))]),
    GradInfo("nanmedian_dim", lambda x, d: ag.nanmedian(x, d).values, lambda rng: [
        Sample((np.array([[0.5, np.nan, 1.5, -0.2], [np.nan, 2.0, -0.3, 0.1]]), 1)),
        Sample((_spread(rng, 3, 4), 0))]),
]
