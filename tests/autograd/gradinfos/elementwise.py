"""Gradient rows for elementwise ops (autograd/ops/elementwise.py)."""

import numpy as np

import autograd as ag

from ..harness import Const, GradInfo, Sample, pos, rand


def _unary(rng, low=-1.0, high=1.0):
    return [Sample((rng.uniform(low, high, (3, 5)),)), Sample((rng.uniform(low, high, ()),)),
            Sample((rng.uniform(low, high, (7,)),))]


def _away(rng, low=-2.0, high=2.0, gap=0.2):
    x = rng.uniform(low, high, (3, 5))
    x = np.where(np.abs(x) < gap, np.sign(x + 1e-9) * gap + x, x)
    return [Sample((x,)), Sample((np.array(0.7),))]


def U(name, op=None, low=-1.0, high=1.0, samples=None, **kw):
    fn = op or getattr(ag, name)
    return GradInfo(name, fn, samples or (lambda rng: _unary(rng, low, high)), **kw)


def _binary(rng, pa=rand, pb=rand):
    return [Sample((pa(rng, 3, 4), pb(rng, 3, 4))), Sample((pa(rng, 3, 1), pb(rng, 4))),
            Sample((pa(rng), pb(rng, 2, 3))), Sample((pa(rng, 2, 3), 1.5)), Sample((0.5, pb(rng, 2, 3)))]


def B(name, op=None, pa=rand, pb=rand, **kw):
    fn = op or getattr(ag, name)
    return GradInfo(name, fn, lambda rng: _binary(rng, pa, pb), **kw)


def _nozero(rng, *shape):
    x = rand(rng, *shape)
    return np.where(np.abs(x) < 0.2, 0.5, x)


def _distinct(rng, *shape):  # values at least 0.1 apart from rand()'s of the other operand, most of the time
    return rand(rng, *shape) + 0.05


GRAD_INFOS = [
    U("abs", samples=_away), U("acos", low=-0.8, high=0.8), U("acosh", low=1.2, high=3.0),
    U("asin", low=-0.8, high=0.8), U("asinh"), U("atan"), U("atanh", low=-0.8, high=0.8),
    U("ceil", samples=_away), U("floor", samples=_away), U("trunc", samples=_away), U("round", samples=_away),
    U("sign", samples=_away), U("cos"), U("cosh"), U("sin"), U("sinh"), U("tan"), U("tanh"), U("erf"), U("exp"),
    U("exp2"), U("expm1"), U("log", low=0.2, high=2.0), U("log10", low=0.2, high=2.0),
    U("log1p", low=-0.5, high=2.0), U("log2", low=0.2, high=2.0), U("neg"), U("positive"),
    U("reciprocal", samples=_away), U("rsqrt", low=0.2, high=2.0), U("sigmoid"), U("sqrt", low=0.2, high=2.0),
    U("square"), U("relu", samples=_away), U("silu"), U("mish"), U("gelu"),
    U("gelu_tanh", lambda x: ag.gelu(x, approximate="tanh")),
    U("elu", samples=_away), U("elu_alpha", lambda x: ag.elu(x, alpha=0.5), samples=_away),
    U("leaky_relu", lambda x: ag.leaky_relu(x, negative_slope=0.2), samples=_away),
    U("softplus", lambda x: ag.softplus(x, beta=2.0, threshold=1.5), samples=_away),
    U("logit", low=0.2, high=0.8), U("logit_eps", lambda x: ag.logit(x, eps=0.3), low=0.05, high=0.95,
                                     samples=lambda rng: [Sample((np.array([0.1, 0.4, 0.5, 0.9]),))]),
    U("nan_to_num"), U("sinc", samples=_away), U("deg2rad"), U("rad2deg"),
    B("add"), B("add_alpha", lambda a, b: ag.add(a, b, alpha=2.5)), B("sub"), B("mul"),
    B("div", pb=_nozero), B("pow", pa=pos), B("atan2", pb=_nozero), B("hypot", pa=_nozero),
    B("maximum", pb=_distinct), B("minimum", pb=_distinct), B("copysign", pa=_nozero, pb=_nozero),
    B("logaddexp"), B("remainder", pa=lambda rng, *s: pos(rng, *s, low=0.1, high=0.9),
                                   pb=lambda rng, *s: pos(rng, *s, low=1.1, high=2.0)),
    B("fmod", pa=lambda rng, *s: pos(rng, *s, low=0.1, high=0.9), pb=lambda rng, *s: pos(rng, *s, low=1.1,
                                                                                           high=2.0)),
    B("xlogy", pb=pos),
    GradInfo("pow_scalar_base", lambda x: ag.pow(2.0, x), lambda rng: [Sample((rand(rng, 3, 4),))]),
    GradInfo("operators", lambda a, b: (a + b) * a - b / (a * a + 1.0) - (-a) ** 2 + 2.0 ** b @ a.mT @ a,
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)))]),
    GradInfo("where", lambda c, a, b: ag.where(c, a, b),
             lambda rng: [Sample((Const(rng.random((3, 4)) > 0.5), rand(rng, 3, 4), rand(rng, 4))),
                          Sample((Const(rng.random((3, 1)) > 0.5), rand(rng, 3, 4), 0.5))]),
    GradInfo("clamp", lambda x: ag.clamp(x, -0.5, 0.5), lambda rng: _away(rng, gap=0.05)),
    GradInfo("clamp_min", lambda x: ag.clamp(x, min=0.1), lambda rng: _away(rng, gap=0.15)),
    GradInfo("clamp_tensor", lambda x, lo, hi: ag.clamp(x, lo, hi),
             lambda rng: [Sample((np.array([-2.0, -0.3, 0.4, 2.0]), np.array([-1.0, -1.0, -1.0, -1.0]),
                                  np.array([1.0]))) ]),
    GradInfo("lerp", lambda a, b, w: ag.lerp(a, b, w),
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 4))),
                          Sample((rand(rng, 3, 4), rand(rng, 1, 4), 0.3))]),
    GradInfo("addcmul", lambda a, b, c: ag.addcmul(a, b, c, value=0.5),
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 4)))]),
    GradInfo("addcdiv", lambda a, b, c: ag.addcdiv(a, b, c, value=0.5),
             lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), pos(rng, 4)))]),
]
