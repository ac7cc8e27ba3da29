"""OpInfos of tkernels.ops: softmax, losses, embedding and dropout, with their backward entries (the
normalizations are in ops_normalization.py).

References are independent float64 NumPy formulas (PyTorch's definitions, e.g. torch's label-smoothing and
weighted-mean rules); test_ops_norm_loss.py reuses them for the finite-difference checks of the backwards.
Array arguments that carry gradients are positional so that ``grad_args`` can name them.
"""

import warnings

import numpy as np

from tkernels.ops.activation import log_softmax, log_softmax_backward, softmax, softmax_backward
from tkernels.ops.loss import cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward
from tkernels.ops.sparse import dropout, dropout_backward, embedding, embedding_backward
from tkernels.random import Generator

from ..harness import FLOATS, OpInfo, Sample, assert_close, host, make

BWD_TOLS = {"float32": (1e-5, 1e-5)}  # sums over many rows, accumulated in float32 (as the GPU kernels do)


def _quiet(fn):
    def ref(*a, **k):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*a, **k)

    return ref


def _f(*xs):
    return [None if x is None else np.asarray(x, np.float64) for x in xs]


def _stat_np(dtype):
    return np.float32 if dtype in ("float16", "bfloat16") else np.dtype(dtype)


def _rand(rng, shape, dtype, low=-3, high=3):
    return make(rng, shape, dtype, low=low, high=high)


# ------------------------------------------------------------------------------------------------ softmax
@_quiet
def ref_softmax(x, axis=-1, dtype=None):
    (x,) = _f(x)
    if x.size == 0:
        return x.copy()
    e = np.exp(x - np.max(x, axis=axis, keepdims=True) if x.ndim else 0 * x)
    return e / np.sum(e, axis=axis if x.ndim else None, keepdims=True)


@_quiet
def ref_log_softmax(x, axis=-1, dtype=None):
    (x,) = _f(x)
    if x.size == 0:
        return x.copy()
    if x.ndim == 0:
        return x - x
    t = x - x.max(axis=axis, keepdims=True)
    return t - np.log(np.exp(t).sum(axis=axis, keepdims=True))


def ref_softmax_backward(g, y, axis):
    g, y = _f(g, y)
    return y * (g - (g * y).sum(axis=axis, keepdims=True)) if y.ndim else g * 0


def ref_log_softmax_backward(g, y, axis):
    g, y = _f(g, y)
    return g - np.exp(y) * g.sum(axis=axis, keepdims=True) if y.ndim else g * 0


SOFTMAX_CASES = [((), -1), ((0,), 0), ((1,), -1), ((7,), 0), ((3, 129), -1), ((127, 7), 0), ((129, 3), -2),
                 ((4, 5, 6), 1), ((4, 5, 6), -1), ((2, 0, 3), 1), ((2, 3, 0), 1)]


def _softmax_samples(rng, dtype):
    for shape, axis in SOFTMAX_CASES:
        yield Sample((_rand(rng, shape, dtype), axis))
    yield Sample((_rand(rng, (5, 33), dtype, -1000, 1000), -1), desc="large logits (stability)")


def _softmax_bwd_samples(log):
    def gen(rng, dtype):
        for shape, axis in SOFTMAX_CASES:
            x = _rand(rng, shape, dtype)
            y = (ref_log_softmax if log else ref_softmax)(x.astype(np.float64), axis)
            yield Sample((_rand(rng, shape, dtype), np.asarray(y).astype(x.dtype), axis))

    return gen


# ------------------------------------------------------------------------------------------------ losses
def _class_axis(z, axis):
    return (0 if z.ndim == 1 else 1) if axis is None else axis % z.ndim


@_quiet
def ref_cross_entropy(z, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, axis=None):
    """torch.nn.functional.cross_entropy, written from PyTorch's LossNLL.cpp formulas."""
    ax = _class_axis(z, axis)
    (z,) = _f(z)
    C = z.shape[ax]
    zm = z.max(axis=ax, keepdims=True) if z.size else 0
    logp = z - zm - np.log(np.exp(z - zm).sum(axis=ax, keepdims=True))
    wv = np.ones(C) if w is None else np.asarray(w, np.float64)
    wb = wv.reshape([C if i == ax else 1 for i in range(z.ndim)])
    ls = label_smoothing
    if t.dtype.kind == "f":
        q = t.astype(np.float64) * (1 - ls) + ls / C
        rows = -(logp * q * wb).sum(axis=ax)
        return _reduce(rows, reduction, rows.size)
    valid = t != ignore_index
    ts = np.where(valid, t, 0).astype(np.int64)
    picked = np.take_along_axis(logp, np.expand_dims(ts, ax), ax).squeeze(ax)
    wt = wv[ts] * valid
    nll = _reduce(np.where(valid, -picked * wt, 0), reduction, wt.sum())
    smooth = _reduce(np.where(valid, -(logp * wb).sum(axis=ax), 0), reduction, wt.sum())
    return (1 - ls) * nll + ls / C * smooth


def _reduce(rows, reduction, denom):
    if reduction == "none":
        return rows
    s = rows.sum()
    return np.asarray(s if reduction == "sum" else s / denom)


@_quiet
def ref_nll_loss(x, t, w=None, ignore_index=-100, reduction="mean", axis=None):
    ax = _class_axis(x, axis)
    (x,) = _f(x)
    wv = np.ones(x.shape[ax]) if w is None else np.asarray(w, np.float64)
    valid = t != ignore_index
    ts = np.where(valid, t, 0).astype(np.int64)
    picked = np.take_along_axis(x, np.expand_dims(ts, ax), ax).squeeze(ax)
    wt = wv[ts] * valid
    return _reduce(np.where(valid, -picked * wt, 0), reduction, wt.sum())


@_quiet
def ref_cross_entropy_backward(g, z, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                               axis=None):
    """d loss / d logits: for each row, sum_c coef_c (softmax - onehot(c)), coef_c the weight of -log p_c."""
    ax = _class_axis(z, axis)
    (z,) = _f(z)
    C = z.shape[ax]
    e = np.exp(z - (z.max(axis=ax, keepdims=True) if z.size else 0))
    p = e / e.sum(axis=ax, keepdims=True)
    wv = np.ones(C) if w is None else np.asarray(w, np.float64)
    wb = wv.reshape([C if i == ax else 1 for i in range(z.ndim)])
    ls = label_smoothing
    if t.dtype.kind == "f":  # coef = w * q
        coef = wb * (t.astype(np.float64) * (1 - ls) + ls / C)
        denom = z.size / C
    else:
        valid = t != ignore_index
        ts = np.where(valid, t, 0).astype(np.int64)
        onehot = np.moveaxis(np.eye(C)[ts], -1, ax)
        vb = np.expand_dims(valid, ax)
        coef = vb * ((1 - ls) * onehot * wb + ls / C * wb)
        denom = (wv[ts] * valid).sum()
    d = p * coef.sum(axis=ax, keepdims=True) - coef
    g = np.asarray(g, np.float64)
    if reduction == "none":
        return d * np.expand_dims(g, ax)
    if reduction == "mean":
        g = g / denom if denom else 0 * g
    return d * g


def ref_nll_loss_backward(g, x, t, w=None, ignore_index=-100, reduction="mean", axis=None):
    ax = _class_axis(x, axis)
    C = x.shape[ax]
    wv = np.ones(C) if w is None else np.asarray(w, np.float64)
    valid = t != ignore_index
    ts = np.where(valid, t, 0).astype(np.int64)
    coef = -np.moveaxis(np.eye(C)[ts], -1, ax) * np.expand_dims(wv[ts] * valid, ax)
    g = np.asarray(g, np.float64)
    if reduction == "none":
        return coef * np.expand_dims(g, ax)
    denom = (wv[ts] * valid).sum()
    return coef * (g / denom if reduction == "mean" and denom else g if reduction == "sum" else 0 * g)


def _targets(rng, shape, C, ignore=0.0, ignore_index=-100):
    t = rng.integers(0, C, shape)
    if ignore:
        t = np.where(rng.random(shape) < ignore, ignore_index, t)
    return np.asarray(t, np.int64)


def _probs(rng, shape, axis, dtype):
    q = ref_softmax(rng.normal(size=shape), axis)
    return np.asarray(q).astype(make(rng, (), dtype).dtype)


def loss_cases(rng, dtype, prob_targets=True):
    """(logits, target, weight, kwargs, desc) covering the loss semantics."""
    R = ("none", "sum", "mean")

    def w(c):
        return _rand(rng, (c,), dtype, 0.5, 2)

    for r in R:
        yield _rand(rng, (7, 5), dtype), _targets(rng, (7,), 5), None, dict(reduction=r), f"(7, 5) {r}"
        yield _rand(rng, (129, 7), dtype), _targets(rng, (129,), 7), w(7), dict(reduction=r), f"weighted {r}"
        yield (_rand(rng, (127, 7), dtype), _targets(rng, (127,), 7, 0.3), w(7), dict(reduction=r),
               f"weighted, ignore_index {r}")
        yield (_rand(rng, (4, 6, 3), dtype), _targets(rng, (4, 3), 6, 0.3), None, dict(reduction=r),
               f"3-D, ignore_index {r}")
        yield (_rand(rng, (2, 5, 3, 4), dtype), _targets(rng, (2, 3, 4), 5, 0.2), w(5), dict(reduction=r),
               f"4-D weighted {r}")
        yield _rand(rng, (5,), dtype), _targets(rng, (), 5), None, dict(reduction=r), f"1-D logits {r}"
        yield _rand(rng, (0, 5), dtype), _targets(rng, (0,), 5), None, dict(reduction=r), f"empty batch {r}"
    yield (_rand(rng, (9, 4), dtype), _targets(rng, (9,), 4, 0.3, 2), None, dict(ignore_index=2),
           "ignore_index=2 (a real class)")
    yield _rand(rng, (6, 4), dtype), np.full(6, -100), w(4), {}, "every target ignored: NaN mean"
    yield _rand(rng, (6, 4), dtype), np.full(6, -100), w(4), dict(reduction="sum"), "every target ignored: sum"
    yield _rand(rng, (1, 1), dtype), _targets(rng, (1,), 1), None, {}, "one class"
    yield (_rand(rng, (2, 3, 7), dtype), _targets(rng, (2, 3), 7), None, dict(axis=-1),
           "axis=-1 (B, T, V) logits")
    yield _rand(rng, (8, 33), dtype, -300, 300), _targets(rng, (8,), 33), None, {}, "large logits"
    if not prob_targets:
        return
    for r in R:
        yield (_rand(rng, (7, 129), dtype), _targets(rng, (7,), 129, 0.3), w(129),
               dict(reduction=r, label_smoothing=0.1), f"label smoothing, weighted, ignore {r}")
        yield (_rand(rng, (6, 5), dtype), _targets(rng, (6,), 5), None, dict(reduction=r, label_smoothing=0.25),
               f"label smoothing {r}")
        yield (_rand(rng, (7, 5), dtype), _probs(rng, (7, 5), 1, dtype), None, dict(reduction=r),
               f"prob targets {r}")
        yield (_rand(rng, (3, 4, 5), dtype), _probs(rng, (3, 4, 5), 1, dtype), w(4),
               dict(reduction=r, label_smoothing=0.2), f"3-D weighted prob targets with smoothing {r}")
    yield _rand(rng, (0, 5), dtype), np.zeros((0, 5), make(rng, (), dtype).dtype), None, {}, "empty prob targets"
    yield (_rand(rng, (4, 3, 6), dtype), _probs(rng, (4, 3, 6), -1, dtype), None, dict(axis=-1),
           "prob targets axis=-1")


def _loss_samples(prob_targets):
    def gen(rng, dtype):
        for z, t, w, kw, desc in loss_cases(rng, dtype, prob_targets):
            if not prob_targets:  # nll_loss reads log-probabilities
                z = ref_log_softmax(z.astype(np.float64), _class_axis(z, kw.get("axis"))).astype(z.dtype)
            yield Sample((z, t, w), kw, desc)

    return gen


def _loss_bwd_samples(prob_targets):
    def gen(rng, dtype):
        for z, t, w, kw, desc in loss_cases(rng, dtype, prob_targets):
            ax = _class_axis(z, kw.get("axis"))
            gshape = z.shape[:ax] + z.shape[ax + 1:] if kw.get("reduction") == "none" else ()
            yield Sample((_rand(rng, gshape, dtype, 0.5, 2), z, t, w), kw, desc)

    return gen


# ------------------------------------------------------------------------------------------------ sparse
EMB_CASES = [((7, 5), (3,)), ((7, 5), (2, 4)), ((7, 5), ()), ((7, 5), (0,)), ((129, 127), (129,)),
             ((1, 1), (4,)), ((10, 3), (2, 3, 4))]


def _emb_samples(idx_dtype):
    def gen(rng, dtype):
        for wshape, ishape in EMB_CASES:
            yield Sample((_rand(rng, wshape, dtype), np.asarray(rng.integers(0, wshape[0], ishape), idx_dtype)))

    return gen


def ref_embedding_backward(g, idx, n, padding_idx=None, scale_grad_by_freq=False):
    (g,) = _f(g)
    flat = idx.reshape(-1).astype(np.int64)
    rows = g.reshape(flat.size, g.shape[-1])
    if scale_grad_by_freq:
        rows = rows / np.bincount(flat, minlength=n)[flat][:, None]
    out = np.zeros((n, rows.shape[1]))
    for i, r in zip(flat, rows):
        out[i] += r
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _emb_bwd_samples(rng, dtype):
    for k, (wshape, ishape) in enumerate(EMB_CASES):
        idx = np.asarray(rng.integers(0, wshape[0], ishape), np.int64)
        kw = [{}, dict(padding_idx=1), dict(scale_grad_by_freq=True), dict(padding_idx=-1, scale_grad_by_freq=True)]
        yield Sample((_rand(rng, ishape + wshape[1:], dtype), idx, wshape[0]), kw[k % 4] if wshape[0] > 1 else {})


def _dropout_samples(rng, dtype):
    for s in ((7,), (3, 129), (4, 5, 6), (127, 1)):
        yield Sample((_rand(rng, s, dtype),))


def _identity_samples(rng, dtype):  # dropout that returns its input: few samples (they also run on cuda)
    for s in ((7,), (3, 129)):
        yield Sample((_rand(rng, s, dtype),))


def _dropout_compare(p):
    def compare(result, expected, dtype, rtol, atol, msg):
        r = host(result).astype(np.float64)
        kept = r != 0
        assert_close(result, np.where(kept, expected, 0), dtype, rtol, atol, msg)  # kept values are x / (1 - p)
        if r.size > 100:
            assert abs(kept.mean() - (1 - p)) < 0.15, f"{msg}: kept fraction {kept.mean()}, expected {1 - p}"

    return compare


def _dropout_bwd_samples(rng, dtype):
    for s, p in (((7,), 0.5), ((3, 129), 0.1), ((4, 5, 6), 0.9), ((0,), 0.5), ((5, 3), 1.0)):
        yield Sample((_rand(rng, s, dtype), rng.random(s) >= p, p))


def _ref_dropout_bwd(g, mask, p):
    return np.asarray(g, np.float64) * mask * (0.0 if p == 1 else 1 / (1 - p))


# ------------------------------------------------------------------------------------------------ the table
OP_INFOS = [
    OpInfo("softmax", softmax, ref_softmax, _softmax_samples, FLOATS),
    OpInfo("log_softmax", log_softmax, ref_log_softmax, _softmax_samples, FLOATS),
    OpInfo("softmax_dtype_float64", lambda x, a: softmax(x, a, dtype="float64"), ref_softmax, _softmax_samples,
           FLOATS),
    OpInfo("log_softmax_dtype_float32", lambda x, a: log_softmax(x, a, dtype="float32"), ref_log_softmax,
           _softmax_samples, FLOATS, tols={"float64": (1.3e-6, 1e-5)}),
    OpInfo("softmax_backward", softmax_backward, ref_softmax_backward, _softmax_bwd_samples(False), FLOATS,
           differentiable=False),
    OpInfo("log_softmax_backward", log_softmax_backward, ref_log_softmax_backward, _softmax_bwd_samples(True),
           FLOATS, differentiable=False),
    OpInfo("cross_entropy", cross_entropy, ref_cross_entropy, _loss_samples(True), FLOATS, grad_args=(0,)),
    OpInfo("cross_entropy_backward", cross_entropy_backward, ref_cross_entropy_backward, _loss_bwd_samples(True),
           FLOATS, tols=BWD_TOLS, differentiable=False),
    OpInfo("nll_loss", nll_loss, ref_nll_loss, _loss_samples(False), FLOATS, grad_args=(0,)),
    OpInfo("nll_loss_backward", nll_loss_backward, ref_nll_loss_backward, _loss_bwd_samples(False), FLOATS,
           differentiable=False),
    OpInfo("embedding", embedding, lambda w, i: w[i], _emb_samples(np.int64), FLOATS, grad_args=(0,)),
    OpInfo("embedding_int32", embedding, lambda w, i: w[i], _emb_samples(np.int32), ("float32", "int64"),
           differentiable=False),
    OpInfo("embedding_backward", embedding_backward, ref_embedding_backward, _emb_bwd_samples, FLOATS,
           differentiable=False),
    OpInfo("dropout_eval", lambda x: dropout(x, 0.5, training=False), lambda x: x, _identity_samples, FLOATS),
    OpInfo("dropout_p0", lambda x: dropout(x, 0.0), lambda x: x, _identity_samples, FLOATS),
    OpInfo("dropout_p1", lambda x: dropout(x, 1.0), lambda x: 0 * x, _dropout_samples, FLOATS,
           differentiable=False),
    OpInfo("dropout_p0.3", lambda x: dropout(x, 0.3, generator=Generator(3)), lambda x: x / 0.7, _dropout_samples,
           FLOATS, differentiable=False, compare=_dropout_compare(0.3)),
    OpInfo("dropout_backward", dropout_backward, _ref_dropout_bwd, _dropout_bwd_samples, FLOATS,
           differentiable=False),
]
