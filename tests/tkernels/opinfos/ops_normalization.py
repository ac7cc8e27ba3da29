"""OpInfos of the normalizations of tkernels.ops (layer_norm, rms_norm, group_norm, batch_norm) and their backward
entries. References are float64 NumPy formulas; test_ops_norm_loss.py reuses them for finite-difference checks.
Weights and biases are positional so that ``grad_args`` can name them.
"""

import math

import numpy as np

from tkernels.ops.normalization import (
    batch_norm,
    batch_norm_backward,
    group_norm,
    group_norm_backward,
    layer_norm,
    layer_norm_backward,
    rms_norm,
    rms_norm_backward,
)

from ..harness import FLOATS, OpInfo, Sample
from .ops_norm_loss import BWD_TOLS, _f, _quiet, _rand, _stat_np


def _k(ns):
    return 1 if isinstance(ns, int) else len(ns)


@_quiet
def ref_layer_norm(x, ns, w=None, b=None, eps=1e-5, return_stats=False):
    x, w, b = _f(x, w, b)
    axes = tuple(range(x.ndim - _k(ns), x.ndim))
    mu, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    r = 1 / np.sqrt(var + eps)
    y = (x - mu) * r * (1 if w is None else w) + (0 if b is None else b)
    lead = x.shape[:x.ndim - _k(ns)]
    return (y, mu.reshape(lead), r.reshape(lead)) if return_stats else y


@_quiet
def ref_rms_norm(x, ns, w=None, eps=None, return_stats=False):
    eps = np.finfo(x.dtype).eps if eps is None else eps  # halves arrive as float32: their compute dtype
    x, w = _f(x, w)
    axes = tuple(range(x.ndim - _k(ns), x.ndim))
    r = 1 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    y = x * r * (1 if w is None else w)
    return (y, r.reshape(x.shape[:x.ndim - _k(ns)])) if return_stats else y


def _chan(p, ndim):
    return 1 if p is None else p.reshape((-1,) + (1,) * (ndim - 2))


@_quiet
def ref_group_norm(x, G, w=None, b=None, eps=1e-5, return_stats=False):
    x, w, b = _f(x, w, b)
    n = x.shape[0]
    a = x.reshape(n, G, math.prod(x.shape[1:]) // G)
    mu, var = a.mean(axis=2, keepdims=True), a.var(axis=2, keepdims=True)
    y = ((a - mu) / np.sqrt(var + eps)).reshape(x.shape) * _chan(w, x.ndim) + (0 if b is None else _chan(b, x.ndim))
    return (y, mu.reshape(n, G), 1 / np.sqrt(var.reshape(n, G) + eps)) if return_stats else y


@_quiet
def ref_batch_norm(x, rm, rv, w=None, b=None, training=False, momentum=0.1, eps=1e-5, return_stats=False):
    x, rm, rv, w, b = _f(x, rm, rv, w, b)
    axes = (0,) + tuple(range(2, x.ndim))
    if training:
        mu, var = x.mean(axis=axes), x.var(axis=axes)
    else:
        mu, var = rm, rv
    y = (x - _chan(mu, x.ndim)) / np.sqrt(_chan(var, x.ndim) + eps) * _chan(w, x.ndim)
    y = y + (0 if b is None else _chan(b, x.ndim))
    if return_stats:
        return (y, mu, 1 / np.sqrt(var + eps)) if training else (y, None, None)
    return y


def ref_bn_running(x, rm, rv, w=None, b=None, momentum=0.1, eps=1e-5):
    y = ref_batch_norm(x, rm, rv, w, b, True, momentum, eps)
    x, rm, rv = _f(x, rm, rv)
    axes = (0,) + tuple(range(2, x.ndim))
    return (y, (1 - momentum) * rm + momentum * x.mean(axis=axes),
            (1 - momentum) * rv + momentum * x.var(axis=axes, ddof=1))


def _bn_running(x, rm, rv, w=None, b=None, momentum=0.1, eps=1e-5):
    rm, rv = rm.copy(), rv.copy()  # updated in place: the harness wants its inputs unchanged
    return batch_norm(x, rm, rv, w, b, True, momentum, eps), rm, rv


def _norm_grads(g, xhat, rstd, w, axes):
    """dx of ``y = xhat * w + b`` with ``xhat`` normalized over ``axes``: rstd * (gw - E[gw] - xhat E[gw xhat])."""
    gw = g * w
    return rstd * (gw - gw.mean(axis=axes, keepdims=True) - xhat * (gw * xhat).mean(axis=axes, keepdims=True))


def ref_layer_norm_backward(g, x, mean, rstd, w, ns, needs=(True, True, True)):
    g, x, mean, rstd, w = _f(g, x, mean, rstd, w)
    k = _k(ns)
    axes, lead = tuple(range(x.ndim - k, x.ndim)), tuple(range(x.ndim - k))
    mean, rstd = mean.reshape(mean.shape + (1,) * k), rstd.reshape(rstd.shape + (1,) * k)
    xhat = (x - mean) * rstd
    dx = _norm_grads(g, xhat, rstd, 1 if w is None else w, axes) if x.size else np.zeros_like(x)
    return (dx if needs[0] else None, (g * xhat).sum(axis=lead) if needs[1] and w is not None else None,
            g.sum(axis=lead) if needs[2] else None)


def ref_rms_norm_backward(g, x, rstd, w, ns, needs=(True, True)):
    g, x, rstd, w = _f(g, x, rstd, w)
    k = _k(ns)
    axes, lead = tuple(range(x.ndim - k, x.ndim)), tuple(range(x.ndim - k))
    rstd = rstd.reshape(rstd.shape + (1,) * k)
    xhat = x * rstd
    gw = g * (1 if w is None else w)
    dx = rstd * (gw - xhat * (gw * xhat).mean(axis=axes, keepdims=True)) if x.size else np.zeros_like(x)
    return dx if needs[0] else None, (g * xhat).sum(axis=lead) if needs[1] and w is not None else None


def ref_group_norm_backward(g, x, mean, rstd, w, G, needs=(True, True, True)):
    g, x, mean, rstd, w = _f(g, x, mean, rstd, w)
    n, red = x.shape[0], (0,) + tuple(range(2, x.ndim))
    r, k = rstd.reshape(n, G, 1), math.prod(x.shape[1:]) // G
    xhat = (x.reshape(n, G, k) - mean.reshape(n, G, 1)) * r
    gw = (g * _chan(w, x.ndim)).reshape(n, G, k)
    dx = _norm_grads(gw, xhat, r, 1, (2,)).reshape(x.shape)
    return (dx if needs[0] else None,
            (g * xhat.reshape(x.shape)).sum(axis=red) if needs[1] and w is not None else None,
            g.sum(axis=red) if needs[2] else None)


def ref_batch_norm_backward(g, x, w, rm, rv, sm, si, training, eps=1e-5, needs=(True, True, True)):
    g, x, w, rm, rv, sm, si = _f(g, x, w, rm, rv, sm, si)
    red = (0,) + tuple(range(2, x.ndim))
    mu, invstd = (sm, si) if training else (rm, 1 / np.sqrt(rv + eps))
    xhat = (x - _chan(mu, x.ndim)) * _chan(invstd, x.ndim)
    wc = _chan(w, x.ndim)
    if training:
        dx = _norm_grads(g, xhat, _chan(invstd, x.ndim), wc, red)
    else:
        dx = g * wc * _chan(invstd, x.ndim)
    return (dx if needs[0] else None, (g * xhat).sum(axis=red) if needs[1] and w is not None else None,
            g.sum(axis=red) if needs[2] else None)


# (x shape, normalized_shape, with weight, with bias)
LN_CASES = [((1, 7), 7, True, True), ((7, 129), (129,), True, True), ((127, 1), 1, False, True),
            ((3, 4, 5), (4, 5), True, True), ((2, 3, 129), 129, True, False), ((0, 5), 5, True, True),
            ((5,), (5,), False, False), ((129, 7), 7, False, True), ((4, 127), 127, False, False)]


def _ln_samples(stats=False):
    def gen(rng, dtype):
        for shape, ns, hw, hb in LN_CASES:
            p = ns if isinstance(ns, tuple) else (ns,)
            yield Sample((_rand(rng, shape, dtype), ns, _rand(rng, p, dtype) if hw else None,
                          _rand(rng, p, dtype) if hb else None), dict(return_stats=True) if stats else {})
        yield Sample((_rand(rng, (3, 8), dtype), 8, None, None, 0.1), desc="eps=0.1")

    return gen


def _rms_samples(rng, dtype):
    for shape, ns, hw, _ in LN_CASES:
        p = ns if isinstance(ns, tuple) else (ns,)
        yield Sample((_rand(rng, shape, dtype), ns, _rand(rng, p, dtype) if hw else None))
    yield Sample((_rand(rng, (3, 8), dtype), 8, None, 1e-2), desc="eps=1e-2")
    yield Sample((_rand(rng, (3, 8), dtype), 8, None), dict(return_stats=True), desc="stats")


def _ln_bwd_samples(rng, dtype):
    for shape, ns, hw, hb in LN_CASES:
        x = _rand(rng, shape, dtype)
        _, mean, rstd = ref_layer_norm(x.astype(np.float64), ns, return_stats=True)
        p = ns if isinstance(ns, tuple) else (ns,)
        sd = _stat_np(dtype)
        yield Sample((_rand(rng, shape, dtype), x, mean.astype(sd), rstd.astype(sd),
                      _rand(rng, p, dtype) if hw else None, ns), dict(needs=(True, True, hb)))
    x = _rand(rng, (6, 9), dtype)
    _, mean, rstd = ref_layer_norm(x.astype(np.float64), 9, return_stats=True)
    yield Sample((_rand(rng, (6, 9), dtype), x, mean.astype(_stat_np(dtype)), rstd.astype(_stat_np(dtype)),
                  _rand(rng, (9,), dtype), 9), dict(needs=(False, True, False)), desc="dweight only")


def _rms_bwd_samples(rng, dtype):
    for shape, ns, hw, _ in LN_CASES:
        x = _rand(rng, shape, dtype)
        _, rstd = ref_rms_norm(x.astype(np.float64), ns, eps=1e-6, return_stats=True)
        p = ns if isinstance(ns, tuple) else (ns,)
        yield Sample((_rand(rng, shape, dtype), x, rstd.astype(_stat_np(dtype)),
                      _rand(rng, p, dtype) if hw else None, ns))


# (x shape, num_groups, with weight and bias)
GN_CASES = [((2, 6), 3, True), ((3, 4, 7), 2, True), ((2, 6, 5, 3), 3, False), ((1, 4, 129), 4, True),
            ((7, 1, 3), 1, True), ((0, 4, 3), 2, True), ((2, 8, 2, 2, 2), 8, False)]


def _gn_samples(rng, dtype):
    for shape, G, aff in GN_CASES:
        c = (shape[1],)
        yield Sample((_rand(rng, shape, dtype), G, _rand(rng, c, dtype) if aff else None,
                      _rand(rng, c, dtype) if aff else None))
    yield Sample((_rand(rng, (2, 4, 3), dtype), 2, None, None, 1e-3), dict(return_stats=True), desc="stats")


def _gn_bwd_samples(rng, dtype):
    for shape, G, aff in GN_CASES:
        x = _rand(rng, shape, dtype)
        _, mean, rstd = ref_group_norm(x.astype(np.float64), G, return_stats=True)
        sd = _stat_np(dtype)
        yield Sample((_rand(rng, shape, dtype), x, mean.astype(sd), rstd.astype(sd),
                      _rand(rng, (shape[1],), dtype) if aff else None, G))


BN_SHAPES = [(2, 3), (4, 5, 7), (3, 2, 4, 5), (129, 3), (2, 7, 129), (2, 4, 1, 3, 2)]


def _bn_samples(training):
    """Training rows pass no running stats (their in-place update is the batch_norm_running_stats row)."""
    def stats(rng, c, dtype):
        return (None, None) if training else (_rand(rng, c, dtype), _rand(rng, c, dtype, 0.5, 2))

    def gen(rng, dtype):
        for i, shape in enumerate(BN_SHAPES):
            c = (shape[1],)
            aff = i % 2 == 0
            yield Sample((_rand(rng, shape, dtype), *stats(rng, c, dtype), _rand(rng, c, dtype) if aff else None,
                          _rand(rng, c, dtype) if aff else None, training))
        yield Sample((_rand(rng, (4, 3, 5), dtype), *stats(rng, (3,), dtype), None, None, training, 0.3, 1e-3),
                     dict(return_stats=True), desc="stats")
        if not training:
            yield Sample((_rand(rng, (0, 3), dtype), _rand(rng, (3,), dtype), _rand(rng, (3,), dtype, 0.5, 2)),
                         desc="empty batch")

    return gen


def _bn_running_samples(rng, dtype):
    for shape in BN_SHAPES:
        c = (shape[1],)
        yield Sample((_rand(rng, shape, dtype), _rand(rng, c, dtype), _rand(rng, c, dtype, 0.5, 2),
                      _rand(rng, c, dtype), _rand(rng, c, dtype)))
    yield Sample((_rand(rng, (5, 2, 3), dtype), _rand(rng, (2,), dtype), _rand(rng, (2,), dtype, 0.5, 2)),
                 dict(momentum=0.7, eps=1e-3), desc="momentum=0.7")


def _bn_bwd_samples(training):
    def gen(rng, dtype):
        for i, shape in enumerate(BN_SHAPES):
            c = (shape[1],)
            x = _rand(rng, shape, dtype)
            rm, rv = _rand(rng, c, dtype), _rand(rng, c, dtype, 0.5, 2)
            _, sm, si = ref_batch_norm(x, rm, rv, None, None, True, return_stats=True)
            sd = _stat_np(dtype)
            w = _rand(rng, c, dtype) if i % 2 == 0 else None
            yield Sample((_rand(rng, shape, dtype), x, w, rm, rv, sm.astype(sd), si.astype(sd), training),
                         dict(needs=(True, w is not None, i != 3)))

    return gen


OP_INFOS = [
    OpInfo("layer_norm", layer_norm, ref_layer_norm, _ln_samples(), FLOATS, grad_args=(0, 2, 3)),
    OpInfo("layer_norm_stats", layer_norm, ref_layer_norm, _ln_samples(True), FLOATS, differentiable=False),
    OpInfo("layer_norm_backward", layer_norm_backward, ref_layer_norm_backward, _ln_bwd_samples, FLOATS,
           tols=BWD_TOLS, differentiable=False),
    OpInfo("rms_norm", rms_norm, ref_rms_norm, _rms_samples, FLOATS, grad_args=(0, 2)),
    OpInfo("rms_norm_backward", rms_norm_backward, ref_rms_norm_backward, _rms_bwd_samples, FLOATS,
           tols=BWD_TOLS, differentiable=False),
    OpInfo("group_norm", group_norm, ref_group_norm, _gn_samples, FLOATS, grad_args=(0, 2, 3)),
    OpInfo("group_norm_backward", group_norm_backward, ref_group_norm_backward, _gn_bwd_samples, FLOATS,
           tols=BWD_TOLS, differentiable=False),
    OpInfo("batch_norm_eval", batch_norm, ref_batch_norm, _bn_samples(False), FLOATS, grad_args=(0, 3, 4)),
    OpInfo("batch_norm_train", batch_norm, ref_batch_norm, _bn_samples(True), FLOATS, grad_args=(0, 3, 4)),
    OpInfo("batch_norm_running_stats", _bn_running, ref_bn_running, _bn_running_samples, FLOATS,
           differentiable=False),
    OpInfo("batch_norm_backward_train", batch_norm_backward, ref_batch_norm_backward, _bn_bwd_samples(True),
           FLOATS, tols=BWD_TOLS, differentiable=False),
    OpInfo("batch_norm_backward_eval", batch_norm_backward, ref_batch_norm_backward, _bn_bwd_samples(False),
           FLOATS, tols=BWD_TOLS, differentiable=False),
]
