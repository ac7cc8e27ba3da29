"""Losses, as modules and functions, reduction none/mean/sum: values and gradients vs NumPy references written
from PyTorch's formulas (float64), gradcheck, and the edge cases (ignore_index, label smoothing with weights,
the BCE log clamp, BCEWithLogits at |x| = 100, KL's batchmean)."""

import warnings

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

from . import nnref as npref
from .nnref import N, T, fd_grads, rand

REDUCTIONS = ["none", "mean", "sum"]


def _reduce(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def check_loss(loss_fn, ref, arrays, diff=(0,), others=(), rtol=1e-7, atol=1e-9):
    """``loss_fn(*tensors, *others)`` vs ``ref(*arrays)``; the gradients of ``arrays[i]`` for i in ``diff`` vs
    finite differences of ``ref``."""
    ts = [T(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    out = loss_fn(*ts, *others)
    expect = np.asarray(ref(*arrays))
    np.testing.assert_allclose(N(out), expect, rtol=rtol, atol=atol)
    g = rand(*expect.shape)
    out.backward(T(g))
    num = fd_grads(lambda *a: ref(*a), list(arrays), g)
    for i in diff:
        np.testing.assert_allclose(N(ts[i].grad), num[i], rtol=1e-5, atol=1e-6, err_msg=f"input {i}")
    return out


# ------------------------------------------------------------------------------------------- regression
def smooth_l1(x, y, beta=1.0):
    d = np.abs(x - y)
    return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta) if beta else d


def huber(x, y, delta=1.0):
    d = np.abs(x - y)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


PAIRWISE = [
    ("mse", lambda **kw: nn.MSELoss(**kw), F.mse_loss, {}, lambda x, y: (x - y) ** 2),
    ("l1", lambda **kw: nn.L1Loss(**kw), F.l1_loss, {}, lambda x, y: np.abs(x - y)),
    ("smooth_l1", lambda **kw: nn.SmoothL1Loss(**kw), F.smooth_l1_loss, {}, smooth_l1),
    ("smooth_l1_beta", lambda **kw: nn.SmoothL1Loss(beta=0.3, **kw),
     lambda *a, **k: F.smooth_l1_loss(*a, beta=0.3, **k), {}, lambda x, y: smooth_l1(x, y, 0.3)),
    ("smooth_l1_beta0", lambda **kw: nn.SmoothL1Loss(beta=0.0, **kw),
     lambda *a, **k: F.smooth_l1_loss(*a, beta=0.0, **k), {}, lambda x, y: smooth_l1(x, y, 0.0)),
    ("huber", lambda **kw: nn.HuberLoss(**kw), F.huber_loss, {}, huber),
    ("huber_delta", lambda **kw: nn.HuberLoss(delta=0.4, **kw), lambda *a, **k: F.huber_loss(*a, delta=0.4, **k),
     {}, lambda x, y: huber(x, y, 0.4)),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,mod,fn,_,ref", PAIRWISE, ids=[p[0] for p in PAIRWISE])
def test_pairwise_losses(name, mod, fn, _, ref, reduction):
    x, y = rand(3, 4, lo=-2, hi=2), rand(3, 4, lo=-2, hi=2)
    red = lambda a, b: _reduce(ref(a, b), reduction)
    check_loss(mod(reduction=reduction), red, [x, y], diff=(0, 1))
    check_loss(lambda a, b: fn(a, b, reduction=reduction), red, [x, y], diff=(0,))


def test_regression_gradchecks():
    x, y = T(rand(2, 3), True), T(rand(2, 3), True)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        assert ag.gradcheck(lambda a, b, fn=fn: fn(a, b, reduction="none"), (x, y))
        assert ag.gradcheck(lambda a, b, fn=fn: fn(a, b), (x, y))


# -------------------------------------------------------------------------------------- cross-entropy, NLL
def nll_ref(lp, y, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """PyTorch's nll_loss and cross_entropy's label smoothing on log-probabilities (classes on dim 1, or 0
    for a (C,) input): loss = (1 - ls) * nll + ls / C * smooth, where smooth = -sum_c w_c lp_c; the mean
    divides both terms by the summed weights of the non-ignored targets."""
    ax = 0 if lp.ndim == 1 else 1
    c = lp.shape[ax]
    flat = np.moveaxis(lp, ax, -1).reshape(-1, c)
    yf = np.asarray(y).reshape(-1)
    w = np.ones(c) if weight is None else weight
    valid = yf != ignore_index
    yc = np.where(valid, yf, 0)
    nll = -flat[np.arange(len(yf)), yc] * w[yc] * valid
    smooth = -(flat * w).sum(-1) * valid
    loss = (1 - ls) * nll + ls / c * smooth
    if reduction == "none":
        return loss.reshape(np.shape(y))
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (w[yc] * valid).sum()


def ce_ref(x, y, **kw):
    return nll_ref(npref.log_softmax(x, 0 if x.ndim == 1 else 1), y, **kw)


def ce_prob_ref(x, t, weight=None, reduction="mean", ls=0.0):
    ax = 0 if x.ndim == 1 else 1
    c = x.shape[ax]
    t = t * (1 - ls) + ls / c
    wb = 1.0 if weight is None else weight.reshape([c if i == ax else 1 for i in range(x.ndim)])
    loss = -(npref.log_softmax(x, ax) * t * wb).sum(ax)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / (x.size // c)


W4 = np.array([0.5, 2.0, 1.0, 1.5])
CE_CASES = [
    ("plain", (5, 4), {}),
    ("weight", (5, 4), dict(weight=W4)),
    ("ignore", (5, 4), dict(ignore_index=2)),
    ("smooth", (5, 4), dict(ls=0.2)),
    ("smooth_weight_ignore", (5, 4), dict(ls=0.3, weight=W4, ignore_index=1)),
    ("spatial", (2, 4, 3), dict(weight=W4, ls=0.1)),
    ("spatial2d", (2, 4, 2, 3), dict(ignore_index=0)),
    ("unbatched", (4,), dict(ls=0.1)),
]


def _targets(shape, ignore_index=None):
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    y = np.asarray(npref.RNG.integers(0, c, size=tshape))
    if ignore_index is not None and y.ndim:
        y.reshape(-1)[0] = ignore_index
        y.reshape(-1)[-1] = (ignore_index + 1) % c  # never all ignored
    return y


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,shape,kw", CE_CASES, ids=[c[0] for c in CE_CASES])
def test_cross_entropy_class_indices(name, shape, kw, reduction):
    x = rand(*shape, lo=-2, hi=2)
    y = _targets(shape, kw.get("ignore_index"))
    ref = lambda x: ce_ref(x, y, reduction=reduction, **kw)
    args = dict(ignore_index=kw.get("ignore_index", -100), label_smoothing=kw.get("ls", 0.0), reduction=reduction)
    w = None if kw.get("weight") is None else T(kw["weight"])
    yt = ag.tensor(y)
    check_loss(lambda a: F.cross_entropy(a, yt, weight=w, **args), ref, [x])
    check_loss(lambda a: nn.CrossEntropyLoss(weight=w, **args)(a, yt), ref, [x])
    lp = npref.log_softmax(x, 0 if x.ndim == 1 else 1)
    nll = lambda a: nll_ref(a, y, weight=kw.get("weight"), ignore_index=args["ignore_index"], reduction=reduction)
    nargs = dict(ignore_index=args["ignore_index"], reduction=reduction)
    check_loss(lambda a: F.nll_loss(a, yt, weight=w, **nargs), nll, [lp])
    check_loss(lambda a: nn.NLLLoss(weight=w, **nargs)(a, yt), nll, [lp])


def test_cross_entropy_label_smoothing_with_weight_exact_value():
    # PyTorch: (1 - ls) * nll_mean + ls / C * sum_n(-sum_c w_c lp_nc) / sum_n w_{y_n}
    x = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 0.3]])
    y = np.array([1, 2])
    w = np.array([1.0, 2.0, 3.0])
    lp = npref.log_softmax(x, 1)
    nll = -(w[1] * lp[0, 1] + w[2] * lp[1, 2]) / (w[1] + w[2])
    smooth = -(lp * w).sum() / (w[1] + w[2])
    expect = 0.8 * nll + 0.2 / 3 * smooth
    got = F.cross_entropy(T(x), ag.tensor(y), weight=T(w), label_smoothing=0.2)
    np.testing.assert_allclose(float(got), expect, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,kw", [((4, 3), {}), ((4, 3), dict(weight=np.array([1.0, 0.5, 2.0]))),
                                      ((4, 3), dict(ls=0.25)), ((2, 3, 2), dict(ls=0.1)), ((3,), {})])
def test_cross_entropy_probabilities(shape, kw, reduction):
    x = rand(*shape, lo=-2, hi=2)
    ax = 0 if len(shape) == 1 else 1
    t = npref.softmax(rand(*shape), ax)
    w = T(kw["weight"]) if "weight" in kw else None
    ref = lambda a, b: ce_prob_ref(a, b, weight=kw.get("weight"), reduction=reduction, ls=kw.get("ls", 0.0))
    check_loss(lambda a, b: F.cross_entropy(a, b, weight=w, reduction=reduction,
                                            label_smoothing=kw.get("ls", 0.0)), ref, [x, t], diff=(0, 1))


def test_cross_entropy_gradchecks_and_all_ignored():
    x = T(rand(3, 4, 2), True)
    y = ag.tensor(np.array([[0, 1], [2, 3], [1, -100]]))
    w = T(W4)
    assert ag.gradcheck(lambda a: F.cross_entropy(a, y, weight=w, label_smoothing=0.2), (x,))
    assert ag.gradcheck(lambda a: F.nll_loss(a, y, weight=w, reduction="sum"), (x,))
    t = T(npref.softmax(rand(3, 4), 1), True)
    assert ag.gradcheck(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), (T(rand(3, 4), True), t))
    allign = F.cross_entropy(T(rand(2, 3)), ag.tensor(np.array([-100, -100])))
    assert np.isnan(float(allign))  # 0 / 0, as PyTorch


def test_cross_entropy_module_signature_like_pytorch():
    m = nn.CrossEntropyLoss(T(W4), None, 3, None, "sum", 0.1)  # weight, size_average, ignore_index, reduce, ...
    assert (m.ignore_index, m.reduction, m.label_smoothing) == (3, "sum", 0.1)
    assert list(m.state_dict()) == ["weight"]
    m = nn.NLLLoss(None, None, 5)
    assert m.ignore_index == 5
    with pytest.warns(DeprecationWarning):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(DeprecationWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.l1_loss(T(rand(2)), T(rand(2)), reduction="avg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        x, y = rand(3), rand(3)
        np.testing.assert_allclose(N(F.mse_loss(T(x), T(y), reduce=False)), (x - y) ** 2)


# ------------------------------------------------------------------------------------------- binary
def bce_ref(x, t, w=None):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))
    return loss if w is None else loss * w


def bce_logits_ref(x, t, w=None, pw=None):
    ls = -np.logaddexp(0, -x)  # log sigmoid(x)
    lns = -np.logaddexp(0, x)  # log(1 - sigmoid(x))
    loss = -((1.0 if pw is None else pw) * t * ls + (1 - t) * lns)
    return loss if w is None else loss * w


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce(reduction):
    x = rand(3, 4, lo=0.05, hi=0.95)
    t = rand(3, 4, lo=0, hi=1)
    w = rand(4, lo=0.5, hi=2)
    check_loss(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), lambda a, b: _reduce(bce_ref(a, b),
               reduction), [x, t], diff=(0, 1))
    check_loss(lambda a: nn.BCELoss(weight=T(w), reduction=reduction)(a, T(t)),
               lambda a: _reduce(bce_ref(a, t, w), reduction), [x])


def test_bce_log_clamp_and_finite_gradient_at_0_and_1():
    x = T(np.array([0.0, 1.0, 0.0, 1.0]), True)
    t = T(np.array([1.0, 0.0, 0.0, 1.0]))
    loss = F.binary_cross_entropy(x, t, reduction="none")
    np.testing.assert_array_equal(N(loss), [100.0, 100.0, 0.0, 0.0])
    loss.sum().backward()
    # PyTorch's gradient: (x - t) / max(x (1 - x), 1e-12)
    np.testing.assert_allclose(N(x.grad), [-1e12, 1e12, 0.0, 0.0])
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(T(rand(3)), T(rand(3, 1)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(reduction):
    x = rand(3, 4, lo=-3, hi=3)
    t = rand(3, 4, lo=0, hi=1)
    w, pw = rand(3, 1, lo=0.5, hi=2), rand(4, lo=0.5, hi=3)
    check_loss(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
               lambda a, b: _reduce(bce_logits_ref(a, b), reduction), [x, t], diff=(0, 1))
    m = nn.BCEWithLogitsLoss(weight=T(w), reduction=reduction, pos_weight=T(pw))
    assert list(m.state_dict()) == ["weight", "pos_weight"]
    check_loss(lambda a: m(a, T(t)), lambda a: _reduce(bce_logits_ref(a, t, w, pw), reduction), [x])


def test_bce_with_logits_stable_at_100():
    x = T(np.array([100.0, -100.0, 100.0, -100.0]), True)
    t = T(np.array([0.0, 1.0, 1.0, 0.0]))
    pw = T(np.array([2.0, 3.0, 2.0, 2.0]))
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=pw)
    np.testing.assert_allclose(N(loss), [100.0, 300.0, 0.0, 0.0], atol=1e-30, rtol=1e-12)
    loss.sum().backward()
    # d/dx = (1 - t) sigmoid(x) - pw t sigmoid(-x); the composite form cancels 1 - (1 - 4e-44) to 0 where
    # PyTorch's closed form keeps 4e-44: equal to within float64 rounding of the terms
    np.testing.assert_allclose(N(x.grad), [1.0, -3.0, -2 * npref.sigmoid(-100.0), npref.sigmoid(-100.0)], rtol=1e-12,
                               atol=1e-15)
    x32 = T(np.array([100.0, -100.0], dtype=np.float32))
    assert np.all(np.isfinite(N(F.binary_cross_entropy_with_logits(x32, T(np.array([0.0, 1.0],
                                                                          dtype=np.float32)), reduction="none"))))


def test_binary_gradchecks():
    x, t = T(rand(2, 3, lo=0.1, hi=0.9), True), T(rand(2, 3, lo=0, hi=1), True)
    assert ag.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), (x, t))
    assert ag.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b), (x, t))
    pw = T(rand(3, lo=0.5, hi=2), True)
    assert ag.gradcheck(lambda a, b, p: F.binary_cross_entropy_with_logits(a, b, pos_weight=p), (x, t, pw))


# ----------------------------------------------------------------------------------------------- KL
def kl_ref(inp, tgt, log_target=False):
    if log_target:
        return np.exp(tgt) * (tgt - inp)
    return np.where(tgt > 0, tgt * np.log(np.where(tgt > 0, tgt, 1.0)), 0.0) - tgt * inp


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    inp = npref.log_softmax(rand(3, 5), 1)
    tgt = npref.softmax(rand(3, 5), 1)
    if log_target:
        tgt = np.log(tgt)
    red = (lambda v: v.sum() / 3) if reduction == "batchmean" else (lambda v: _reduce(v, reduction))
    ref = lambda a, b: red(kl_ref(a, b, log_target))
    check_loss(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target), ref, [inp, tgt],
               diff=(0, 1))
    check_loss(lambda a: nn.KLDivLoss(reduction=reduction, log_target=log_target)(a, T(tgt)),
               lambda a: ref(a, tgt), [inp])


def test_kl_div_zero_target_and_gradcheck():
    inp = T(np.array([[-1.0, -2.0]]))
    tgt = T(np.array([[0.0, 1.0]]))
    np.testing.assert_allclose(float(F.kl_div(inp, tgt, reduction="sum")), 2.0)
    a, b = T(rand(2, 3), True), T(rand(2, 3, lo=0.1, hi=1), True)
    assert ag.gradcheck(lambda a, b: F.kl_div(a, b, reduction="batchmean"), (a, b))
    assert ag.gradcheck(lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True), (a, b))


# ----------------------------------------------------------------------------------- cosine embedding
def cos_emb_ref(a, b, y, margin=0.0):
    eps = 1e-12
    prod = (a * b).sum(-1)
    cos = prod / np.sqrt(((a * a).sum(-1) + eps) * ((b * b).sum(-1) + eps))
    return np.where(y == 1, 1 - cos, np.where(y == -1, np.maximum(cos - margin, 0), 0.0))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.5])
def test_cosine_embedding(reduction, margin):
    a, b = rand(6, 4), rand(6, 4)
    y = np.array([1, -1, 1, -1, -1, 1])
    yt = ag.tensor(y)
    ref = lambda p, q: _reduce(cos_emb_ref(p, q, y, margin), reduction)
    check_loss(lambda p, q: F.cosine_embedding_loss(p, q, yt, margin=margin, reduction=reduction), ref, [a, b],
               diff=(0, 1))
    check_loss(lambda p, q: nn.CosineEmbeddingLoss(margin, reduction=reduction)(p, q, yt), ref, [a, b],
               diff=(0, 1))


def test_cosine_embedding_unbatched_and_gradcheck():
    a, b = rand(4), rand(4)
    np.testing.assert_allclose(float(F.cosine_embedding_loss(T(a), T(b), ag.tensor(np.array(1)))),
                               cos_emb_ref(a, b, np.array(1)), rtol=1e-12)
    y = ag.tensor(np.array([1, -1]))
    assert ag.gradcheck(lambda p, q: F.cosine_embedding_loss(p, q, y, margin=-0.9, reduction="none"),
                        (T(rand(2, 3), True), T(rand(2, 3), True)))


def test_losses_under_autocast_are_float32():
    x = T(rand(4, 3), dtype=ag.bfloat16)
    y = T(rand(4, 3), dtype=ag.bfloat16)
    with ag.autocast("cpu", dtype=ag.bfloat16):
        for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy_with_logits,
                   lambda a, b: F.kl_div(a, b, reduction="batchmean")):
            assert fn(x, y).dtype == ag.float32
        assert F.cross_entropy(x, ag.tensor(np.array([0, 1, 2, 0]))).dtype == ag.float32
