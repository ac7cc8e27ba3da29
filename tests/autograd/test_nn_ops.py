"""The fused nn ops (autograd/ops/nn_ops.py, conv_ops.py): forward values against NumPy formulas, the fused
backward (plain backward) against the composite one (create_graph=True), PyTorch's semantics and errors."""

import zlib

import numpy as np
import pytest

import autograd as ag

from .gradinfos.nn_ops import GRAD_INFOS
from .harness import as_func, build


def T(a, requires_grad=False):
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def N(t):
    return t.detach().numpy()


def _np_softmax(x, ax):
    e = np.exp(x - x.max(axis=ax, keepdims=True))
    return e / e.sum(axis=ax, keepdims=True)


RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------- fast vs composite
@pytest.mark.parametrize("info", [i for i in GRAD_INFOS if i.gradgrad], ids=[i.name for i in GRAD_INFOS
                                                                              if i.gradgrad])
def test_fused_backward_matches_composite(info):
    """A plain backward runs the fused *_backward entry; create_graph=True runs the differentiable path."""
    sample = next(iter(info.samples(np.random.default_rng(zlib.crc32(info.name.encode())))))
    args, kwargs = build(sample)
    f, ls = as_func(info, args, kwargs)
    out = f(*ls)
    go = ag.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)), requires_grad=True)
    fast = ag.grad(out, ls, go, retain_graph=True, allow_unused=True)
    slow = ag.grad(out, ls, go, create_graph=True, allow_unused=True)
    assert any(s is not None and s.requires_grad for s in slow), "create_graph=True gave no differentiable grad"
    assert all(a is None or not a.requires_grad for a in fast)
    for a, b in zip(fast, slow):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(N(a), N(b), rtol=1e-9, atol=1e-10)


# ------------------------------------------------------------------------------------- softmax family
def test_softmax_log_softmax_values_and_methods():
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(N(ag.softmax(T(x), -1)), _np_softmax(x, -1), rtol=1e-12)
    np.testing.assert_allclose(N(T(x).log_softmax(0)), np.log(_np_softmax(x, 0)), rtol=1e-12)
    np.testing.assert_allclose(N(ag.softmax(T(x))), _np_softmax(x, 0))  # PyTorch's implicit dim for 3-D
    y = T(x).float().softmax(1, dtype=ag.float64)
    assert y.dtype == ag.float64
    t = T(x, True)
    assert ag.softmax(t, 1).grad_fn.name() == "SoftmaxBackward0"
    assert ag.log_softmax(t, 1).grad_fn.name() == "LogSoftmaxBackward0"
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.softmax(t, 3)


def test_softmax_dtype_gradient_has_input_dtype():
    x = ag.tensor(RNG.standard_normal((2, 3)), dtype=ag.float32, requires_grad=True)
    y = ag.softmax(x, 1, dtype=ag.float64)
    (y * T(RNG.standard_normal((2, 3)))).sum().backward()
    assert x.grad.dtype == ag.float32


# ---------------------------------------------------------------------------------------------- norms
def test_norm_values():
    x = RNG.standard_normal((2, 4, 3))
    w, b = RNG.uniform(0.5, 1.5, 3), RNG.standard_normal(3)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(N(ag.layer_norm(T(x), 3, T(w), T(b))), (x - mu) / np.sqrt(var + 1e-5) * w + b,
                               rtol=1e-10)
    ms = (x * x).mean(-1, keepdims=True)
    np.testing.assert_allclose(N(ag.rms_norm(T(x), [3], T(w))), x / np.sqrt(ms + np.finfo(np.float64).eps) * w,
                               rtol=1e-10)
    xg = x.reshape(2, 2, 6)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(N(ag.group_norm(T(x), 2)), ref, rtol=1e-10)


def test_batch_norm_training_updates_running_stats_in_place():
    x = RNG.standard_normal((4, 3, 5))
    rm, rv = ag.zeros(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64)
    v0 = rm._version.v
    y = ag.batch_norm(T(x, True), rm, rv, training=True, momentum=0.2)
    mean, var = x.mean((0, 2)), x.var((0, 2))
    ref = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    np.testing.assert_allclose(N(y), ref, rtol=1e-10)
    np.testing.assert_allclose(N(rm), 0.2 * mean, rtol=1e-10)
    np.testing.assert_allclose(N(rv), 0.8 + 0.2 * x.var((0, 2), ddof=1), rtol=1e-10)  # unbiased, like PyTorch
    assert rm._version.v > v0
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    ye = ag.batch_norm(T(x), rm, rv, T([1.0, 2.0, 3.0]), None, training=False)
    np.testing.assert_allclose(N(ye), (x - N(rm)[:, None]) / np.sqrt(N(rv)[:, None] + 1e-5)
                               * np.array([1.0, 2.0, 3.0])[:, None], rtol=1e-10)


def test_batch_norm_eval_running_stats_modified_after_forward_raises():
    x = T(RNG.standard_normal((2, 3)), True)
    rm, rv = ag.zeros(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64)
    y = ag.batch_norm(x, rm, rv, training=False)
    ag.batch_norm(T(RNG.standard_normal((2, 3))), rm, rv, training=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# --------------------------------------------------------------------------------------------- losses
def _np_ce(x, t, w=None, ignore=-100, ls=0.0, reduction="mean"):
    logp = np.log(_np_softmax(x, 1))
    c = x.shape[1]
    w = np.ones(c) if w is None else w
    valid = t != ignore
    tc = np.where(valid, t, 0)
    nll = -logp[np.arange(len(t)), tc] * w[tc] * valid
    smooth = -(logp * w).sum(1) * valid
    loss = (1 - ls) * nll + ls / c * smooth
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / (w[tc] * valid).sum()


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 2},
                                {"label_smoothing": 0.3, "ignore_index": 0}])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_nll_values(kw, weighted):
    x = RNG.standard_normal((6, 4))
    t = np.array([0, 1, 2, 3, 2, 0])
    w = RNG.uniform(0.5, 2.0, 4) if weighted else None
    got = ag.cross_entropy(T(x), ag.tensor(t), None if w is None else T(w), **kw)
    np.testing.assert_allclose(N(got), _np_ce(x, t, w, kw.get("ignore_index", -100), kw.get("label_smoothing", 0.0),
                                              kw.get("reduction", "mean")), rtol=1e-10)
    if "label_smoothing" not in kw:
        lp = np.log(_np_softmax(x, 1))
        got = ag.nll_loss(T(lp), ag.tensor(t), None if w is None else T(w), **kw)
        np.testing.assert_allclose(N(got), _np_ce(x, t, w, kw.get("ignore_index", -100), 0.0,
                                                  kw.get("reduction", "mean")), rtol=1e-10)


def test_cross_entropy_probability_targets_and_target_gradient():
    x = RNG.standard_normal((3, 4))
    p = _np_softmax(RNG.standard_normal((3, 4)), 1)
    xt, pt = T(x, True), T(p, True)
    loss = ag.cross_entropy(xt, pt, label_smoothing=0.2)
    q = p * 0.8 + 0.2 / 4
    logp = np.log(_np_softmax(x, 1))
    np.testing.assert_allclose(N(loss), -(q * logp).sum() / 3, rtol=1e-10)
    loss.backward()
    np.testing.assert_allclose(N(pt.grad), -0.8 * logp / 3, rtol=1e-10)
    np.testing.assert_allclose(N(xt.grad), (_np_softmax(x, 1) - q) / 3, rtol=1e-10)


def test_cross_entropy_spatial_targets():
    x = RNG.standard_normal((2, 3, 2, 2))
    t = RNG.integers(0, 3, (2, 2, 2))
    ref = _np_ce(np.moveaxis(x, 1, -1).reshape(-1, 3), t.reshape(-1), reduction="none").reshape(2, 2, 2)
    np.testing.assert_allclose(N(ag.cross_entropy(T(x), ag.tensor(t), reduction="none")), ref, rtol=1e-10)
    assert ag.cross_entropy(T(x, True), ag.tensor(t)).grad_fn.name() == "CrossEntropyLossBackward0"


# ---------------------------------------------------------------------------------- embedding, dropout
@pytest.mark.parametrize("kw", [{"padding_idx": 1}, {"scale_grad_by_freq": True},
                                {"padding_idx": -2, "scale_grad_by_freq": True}])
def test_embedding_padding_and_freq(kw):
    idx = np.array([[0, 1, 2], [2, 2, 1]])
    w = RNG.standard_normal((4, 3))
    wt = T(w, True)
    out = ag.embedding(ag.tensor(idx), wt, **kw)
    np.testing.assert_allclose(N(out), w[idx])
    g = RNG.standard_normal((2, 3, 3))
    ref = np.zeros((4, 3))
    counts = np.bincount(idx.ravel(), minlength=4)
    for i, row in zip(idx.ravel(), g.reshape(-1, 3)):
        ref[i] += row / (counts[i] if kw.get("scale_grad_by_freq") else 1)
    if "padding_idx" in kw:
        ref[kw["padding_idx"] % 4] = 0
    fast = ag.grad(out, wt, T(g), retain_graph=True)[0]
    slow = ag.grad(out, wt, T(g), create_graph=True)[0]
    np.testing.assert_allclose(N(fast), ref, rtol=1e-12)
    np.testing.assert_allclose(N(slow), ref, rtol=1e-12)
    assert ag.gradgradcheck(lambda w: ag.embedding(ag.tensor(idx), w, **kw), (wt,))


def test_embedding_max_norm_renormalizes_weight_in_place():
    w = T(np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    v0 = w._version.v
    out = ag.embedding(ag.tensor([0, 1]), w, max_norm=1.0)
    np.testing.assert_allclose(N(w)[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(N(w)[2], [6.0, 8.0])  # not referenced: untouched
    np.testing.assert_allclose(N(out), N(w)[[0, 1]])
    assert w._version.v > v0


def test_dropout_semantics():
    x = T(RNG.uniform(1.0, 2.0, (50, 40)), True)
    assert ag.dropout(x, 0.5, training=False) is x
    assert ag.dropout(x, 0.0) is x
    ag.manual_seed(3)
    y = ag.dropout(x, 0.25)
    ag.manual_seed(3)
    y2 = ag.dropout(x, 0.25)
    np.testing.assert_array_equal(N(y), N(y2))
    kept = N(y) != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(N(y)[kept], N(x)[kept] / 0.75)
    y.backward(ag.ones_like(y))
    np.testing.assert_allclose(N(x.grad), kept / 0.75)
    assert y.grad_fn.name() == "NativeDropoutBackward0"
    np.testing.assert_array_equal(N(ag.dropout(x, 1.0)), 0.0)
    with pytest.raises(ValueError, match="probability"):
        ag.dropout(x, 1.5)
    z = T(RNG.uniform(1.0, 2.0, (4, 5)))
    r = ag.dropout(z, 0.5, inplace=True)
    assert r is z and ((N(z) == 0) | (N(z) >= 2.0)).all()


def test_dropout_double_backward_is_the_same_mask():
    x = T(RNG.standard_normal((6, 7)), True)
    ag.manual_seed(0)
    y = ag.dropout(x, 0.5)
    g = T(RNG.standard_normal((6, 7)), True)
    (gx,) = ag.grad(y, x, g, create_graph=True)
    assert gx.grad_fn.name() == "NativeDropoutBackwardBackward0"
    (gg,) = ag.grad(gx.sum(), g)
    np.testing.assert_allclose(N(gg), (N(y) != 0) * 2.0)


# ------------------------------------------------------------------------------------ conv and pooling
def _np_conv2d(x, w, b, s, p, d, groups):
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    ho, wo = (h - d[0] * (kh - 1) - 1) // s[0] + 1, (wd - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((n, co, ho, wo))
    for o in range(co):
        gi = o // (co // groups)
        for i in range(ho):
            for j in range(wo):
                patch = x[:, gi * cg:(gi + 1) * cg, i * s[0]:i * s[0] + d[0] * (kh - 1) + 1:d[0],
                          j * s[1]:j * s[1] + d[1] * (kw - 1) + 1:d[1]]
                out[:, o, i, j] = (patch * w[o]).sum((1, 2, 3)) + (b[o] if b is not None else 0)
    return out


def test_conv_values_and_composites():
    from autograd.ops.conv_ops import _conv_composite, _convt_composite

    x, w, b = RNG.standard_normal((2, 4, 5, 6)), RNG.standard_normal((6, 2, 3, 2)), RNG.standard_normal(6)
    ref = _np_conv2d(x, w, b, (2, 1), (1, 1), (1, 2), 2)
    np.testing.assert_allclose(N(ag.conv2d(T(x), T(w), T(b), (2, 1), 1, (1, 2), 2)), ref, rtol=1e-10)
    comp = _conv_composite(T(x), T(w), (2, 1), (1, 1, 1, 1), (1, 2), 2) + T(b).reshape(1, -1, 1, 1)
    np.testing.assert_allclose(N(comp), ref, rtol=1e-10)
    np.testing.assert_allclose(N(ag.conv1d(T(x[:, :, 0]), T(w[:, :, 0]), None, 1, 1, 1, 2)),
                               _np_conv2d(x[:, :, :1], w[:, :, :1], None, (1, 1), (0, 1), (1, 1), 2)[:, :, 0],
                               rtol=1e-10)
    # the transposed convolution is the adjoint of the convolution: <conv(x), y> == <x, conv_t(y)>
    xt = RNG.standard_normal((2, 4, 6, 5))
    wt = RNG.standard_normal((4, 3, 3, 3))
    y = ag.conv_transpose2d(T(xt), T(wt), None, stride=2, padding=1, output_padding=1, dilation=1)
    comp = _convt_composite(T(xt), T(wt), (2, 2), (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(N(comp), N(y), rtol=1e-10)
    u = RNG.standard_normal(tuple(y.shape))
    cu = ag.conv2d(T(u), T(wt), stride=2, padding=1)
    np.testing.assert_allclose((N(y) * u).sum(), (N(cu) * xt).sum(), rtol=1e-10)


def test_conv_same_padding_and_bias_grad():
    x, w = T(RNG.standard_normal((1, 2, 5, 4)), True), T(RNG.standard_normal((3, 2, 2, 3)), True)
    b = T(RNG.standard_normal(3), True)
    y = ag.conv2d(x, w, b, padding="same")
    assert tuple(y.shape) == (1, 3, 5, 4) and y.grad_fn.name() == "ConvolutionBackward0"
    g = RNG.standard_normal((1, 3, 5, 4))
    fast = ag.grad(y, (x, w, b), T(g), retain_graph=True)
    slow = ag.grad(y, (x, w, b), T(g), create_graph=True)
    for a, c in zip(fast, slow):
        np.testing.assert_allclose(N(a), N(c), rtol=1e-10)
    np.testing.assert_allclose(N(fast[2]), g.sum((0, 2, 3)), rtol=1e-12)


def test_pooling_values():
    x = RNG.standard_normal((2, 3, 4, 6))
    out, idx = ag.max_pool2d(T(x, True), 2, return_indices=True)
    ref = x.reshape(2, 3, 2, 2, 3, 2).max((3, 5))
    np.testing.assert_allclose(N(out), ref)
    assert idx.dtype == ag.int64 and idx.grad_fn is None and out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    np.testing.assert_allclose(np.take_along_axis(x.reshape(2, 3, -1), N(idx).reshape(2, 3, -1), -1).reshape(
        ref.shape), ref)
    np.testing.assert_allclose(N(ag.avg_pool2d(T(x), 2)), x.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)), rtol=1e-12)
    np.testing.assert_allclose(N(ag.adaptive_avg_pool2d(T(x), (1, 3))), x.reshape(2, 3, 4, 3, 2).mean((2, 4))[
        :, :, None], rtol=1e-12)
    up = ag.interpolate(T(x), scale_factor=2)
    np.testing.assert_allclose(N(up), x.repeat(2, 2).repeat(2, 3))
    assert ag.interpolate(T(x, True), size=(3, 3), mode="bilinear").grad_fn.name() == "UpsampleBilinear2DBackward0"
    with pytest.raises(NotImplementedError, match="antialias"):
        ag.interpolate(T(x), size=(3, 3), mode="bilinear", antialias=True)


def test_pool_double_backward_nodes():
    x = T(RNG.standard_normal((1, 2, 4, 4)), True)
    g = T(RNG.standard_normal((1, 2, 2, 2)), True)
    (gx,) = ag.grad(ag.avg_pool2d(x, 2), x, g, create_graph=True)
    assert gx.grad_fn.name() == "AvgPool2DBackwardBackward0"
    (gg,) = ag.grad((gx * x).sum(), g)
    np.testing.assert_allclose(N(gg), N(ag.avg_pool2d(x, 2)), rtol=1e-12)


# ------------------------------------------------------------------------------------------- attention
def test_sdpa_values():
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 3))
    m = RNG.random((3, 5)) > 0.4
    m[1] = False  # a fully masked row gives zeros
    s = q @ k.swapaxes(-1, -2) / 2.0
    with np.errstate(invalid="ignore"):
        p = _np_softmax(np.where(m, s, -np.inf), -1)
    ref = np.nan_to_num(p) @ v
    got = ag.scaled_dot_product_attention(T(q, True), T(k), T(v), ag.tensor(m))
    np.testing.assert_allclose(N(got), ref, rtol=1e-10, atol=1e-12)
    causal = ag.scaled_dot_product_attention(T(q), T(k[:, :3]), T(v[:, :3]), is_causal=True)
    c = np.tril(np.ones((3, 3), bool))
    ref = _np_softmax(np.where(c, q @ k[:, :3].swapaxes(-1, -2) / 2.0, -np.inf), -1) @ v[:, :3]
    np.testing.assert_allclose(N(causal), ref, rtol=1e-10)


def test_sdpa_double_backward_with_dropout_raises():
    q = T(RNG.standard_normal((2, 3)), True)
    ag.manual_seed(0)
    out = ag.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    ag.grad(out.sum(), q, retain_graph=True)  # a plain backward works
    with pytest.raises(RuntimeError, match="double backward not supported for scaled_dot_product_attention"):
        ag.grad(out.sum(), q, create_graph=True)


def test_relu_backward_is_threshold_backward():
    """PyTorch's relu gradient: 0 where the output is <= 0, the incoming gradient elsewhere, so a NaN input
    passes its gradient and an infinite gradient at a negative input gives 0 (not NaN, as g * (y > 0) would)."""
    for device in ("cpu", "cuda"):
        if device == "cuda" and not ag.cuda.is_available():
            continue
        x = ag.tensor([float("nan"), -1.0, 2.0, 0.0, -0.0], requires_grad=True, device=device)
        x.relu().backward(ag.tensor([5.0, float("inf"), 3.0, 7.0, float("nan")], device=device))
        np.testing.assert_array_equal(x.grad.cpu().numpy(), [5.0, 0.0, 3.0, 0.0, 0.0])
