"""Gradient rows for the differentiable ops not covered by a family's own rows (small wrappers and aliases
whose implementation is distinct: clamp_max, float_power, rsub, atleast_*, broadcast_to, clone, contiguous,
copy_, *_as, to_copy, alias)."""

import autograd as ag

from ..harness import GradInfo, Sample, pos, rand


def _x(rng):
    return [Sample((rand(rng, 3, 4),)), Sample((rand(rng, 5),))]


def _copy_into(x):
    y = ag.zeros(tuple(x.shape), dtype=x.dtype) * 1.0
    return y.copy_(x) * 2.0


def _copy_broadcast(x):
    y = ag.zeros(2, 3, 4, dtype=x.dtype) * 1.0
    y.copy_(x)
    return y


def _gamma_args(rng):  # away from the poles at 0, -1, -2
    return [Sample((rng.uniform(0.3, 6.0, (3, 4)),)), Sample((rng.uniform(-2.8, -2.2, (5,)),))]


def _lstm(gi, gh, c):
    from autograd.ops.rnn import lstm_cell

    h, c2 = lstm_cell(gi, gh, c)
    return h + 2.0 * c2


GRAD_INFOS = [
    GradInfo("lgamma", ag.lgamma, _gamma_args),
    GradInfo("digamma", ag.digamma, _gamma_args),
    GradInfo("polygamma", lambda x: ag.polygamma(2, x), _gamma_args),
    GradInfo("lstm_cell", _lstm, lambda rng: [Sample((rand(rng, 3, 8), rand(rng, 3, 8), rand(rng, 3, 2)))]),
    GradInfo("clamp_max", lambda x: ag.clamp_max(x, 0.25), lambda rng: [Sample((rand(rng, 3, 4) + 0.013,))]),
    GradInfo("float_power", lambda a, b: ag.float_power(a, b), lambda rng: [Sample((pos(rng, 3, 4), rand(rng, 4)))]),
    GradInfo("rsub", lambda a, b: ag.rsub(a, b, alpha=2.0), lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 4)))]),
    GradInfo("atleast_1d_2d", lambda x: ag.atleast_2d(ag.atleast_1d(x)) * 2.0,
             lambda rng: [Sample((rand(rng),)), Sample((rand(rng, 3),))]),
    GradInfo("broadcast_to", lambda x: ag.broadcast_to(x, (2, 3, 4)), lambda rng: [Sample((rand(rng, 3, 1),))]),
    GradInfo("clone", lambda x: ag.clone(x) * 3.0, _x),
    GradInfo("contiguous", lambda x: x.mT.contiguous() * 1.5, lambda rng: [Sample((rand(rng, 3, 4),))]),
    GradInfo("copy_", _copy_into, _x),
    GradInfo("copy_broadcast", _copy_broadcast, lambda rng: [Sample((rand(rng, 3, 1),))]),
    GradInfo("expand_as", lambda x, y: x.expand_as(y) * y, lambda rng: [Sample((rand(rng, 1, 4), rand(rng, 3, 4)))]),
    GradInfo("reshape_as_view_as", lambda x, y: x.reshape_as(y) + x.contiguous().view_as(y) * y,
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 2, 6)))]),
    GradInfo("to_copy", lambda x: x.to(ag.float32).to(ag.float64) * x, _x, gradgrad=True, atol=1e-5, rtol=1e-3,
             eps=1e-3),
    GradInfo("alias", lambda x: ag.alias(x) * x, _x),
    GradInfo("linear", lambda x, w, b: ag.linear(x, w, b),
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 5, 4), rand(rng, 5))),
                          Sample((rand(rng, 2, 3, 4), rand(rng, 2, 4), rand(rng, 2)))]),
    GradInfo("linear_nobias", lambda x, w: ag.linear(x, w), lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 5, 4)))]),
]
