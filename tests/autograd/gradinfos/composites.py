"""Gradient rows for the composites of autograd/ops/composites.py (fmax/fmin, frac, cdist, cov, corrcoef, cross,
the split family, ravel, type_as)."""

import autograd as ag

from ..harness import GradInfo, Sample, rand


def _pair(rng):
    return [Sample((rand(rng, 3, 4), rand(rng, 4))), Sample((rand(rng, 5), rand(rng, 5)))]


def _splits(x):
    h = ag.cat([p * (i + 1.0) for i, p in enumerate(ag.hsplit(x, 2))], 1)
    v = ag.cat([p * (i + 2.0) for i, p in enumerate(ag.vsplit(x, [1]))], 0)
    d = ag.cat([p * (i + 3.0) for i, p in enumerate(ag.dsplit(x.reshape(2, 2, 4), 2))], 2).reshape(4, 4)
    return h + v + d


GRAD_INFOS = [
    GradInfo("fmax", ag.fmax, _pair),
    GradInfo("fmin", ag.fmin, _pair),
    GradInfo("frac", lambda x: ag.frac(x * 3.0), lambda rng: [Sample((rand(rng, 3, 4),))]),
    GradInfo("cdist", ag.cdist, lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 5, 3))),
                                            Sample((rand(rng, 2, 4, 3), rand(rng, 2, 5, 3)))]),
    GradInfo("cdist_p1", lambda a, b: ag.cdist(a, b, p=1.0), lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 5, 3)))],
             gradgrad=False),
    GradInfo("cov", ag.cov, lambda rng: [Sample((rand(rng, 3, 6),)), Sample((rand(rng, 6),))]),
    GradInfo("corrcoef", ag.corrcoef, lambda rng: [Sample((rand(rng, 3, 6),))], rtol=1e-2, cuda_atol=1e-3),
    GradInfo("cross", ag.cross, lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)))]),
    GradInfo("hsplit_vsplit_dsplit", _splits, lambda rng: [Sample((rand(rng, 4, 4),))]),
    GradInfo("ravel", lambda x: x.mT.ravel() * 2.0, lambda rng: [Sample((rand(rng, 3, 4),))]),
    GradInfo("quantile", lambda x: ag.quantile(x, 0.3, dim=1), lambda rng: [Sample((rand(rng, 3, 6),))]),
    GradInfo("nanquantile", lambda x: ag.nanquantile(x, 0.7), lambda rng: [Sample((rand(rng, 3, 6),))]),
    GradInfo("type_as", lambda x, y: x.type_as(y) * y, lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)))]),
]
