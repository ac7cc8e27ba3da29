"""Backward entries of softmax, the normalizations, the losses, embedding and dropout against finite differences
of the independent float64 references (harness.fd_vjp_check), and the semantics the OpInfo table cannot show:
running-stat updates, torch's loss conventions, dropout statistics and reproducibility, in-place renorm."""

import math

import numpy as np
import pytest

import tkernels as tk
from tkernels.ops.activation import log_softmax, log_softmax_backward, softmax, softmax_backward
from tkernels.ops.loss import cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward
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
from tkernels.ops.sparse import dropout, dropout_backward, embedding, embedding_backward
from tkernels.random import Generator

from .harness import fd_vjp_check
from .opinfos import ops_norm_loss as ref
from .opinfos import ops_normalization as nref

LN2, LN3 = math.log(2), math.log(3)


def A(v, dtype=None):
    return None if v is None else tk.asarray(np.asarray(v, dtype))


def N(a):
    return None if a is None else a.numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _fd(f, args, grad_out, grads, wrt, msg):
    fd_vjp_check(f, args, grad_out, [N(g) for g in grads], wrt, rtol=1e-6, atol=1e-9, msg=msg)


# ------------------------------------------------------------------------------- backward vs finite differences
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,axis", [((5, 7), -1), ((5, 7), 0), ((2, 3, 4), 1), ((1,), 0)])
def test_softmax_backward_fd(rng, log, shape, axis):
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    fwd, bwd, rf = (log_softmax, log_softmax_backward, ref.ref_log_softmax) if log else (
        softmax, softmax_backward, ref.ref_softmax)
    y = fwd(A(x), axis)
    _fd(lambda x: rf(x, axis), [x], g, [bwd(A(g), y, axis)], [0], f"log={log} {shape} {axis}")


@pytest.mark.parametrize("shape,ns,affine", [((5, 7), 7, True), ((3, 4, 5), (4, 5), True), ((6, 9), 9, False),
                                             ((8,), 8, True)])
def test_layer_norm_backward_fd(rng, shape, ns, affine):
    p = (ns,) if isinstance(ns, int) else ns
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    w, b = (rng.normal(size=p), rng.normal(size=p)) if affine else (None, None)
    _, mean, rstd = layer_norm(A(x), ns, A(w), A(b), return_stats=True)
    grads = layer_norm_backward(A(g), A(x), mean, rstd, A(w), ns, needs=(True, True, affine))
    if affine:
        _fd(lambda x, w, b: nref.ref_layer_norm(x, ns, w, b), [x, w, b], g, grads, [0, 1, 2], "layer_norm")
    else:
        assert grads[1] is None and grads[2] is None
        _fd(lambda x: nref.ref_layer_norm(x, ns), [x], g, grads[:1], [0], "layer_norm")


@pytest.mark.parametrize("shape,ns", [((5, 7), 7), ((3, 4, 5), (4, 5))])
def test_rms_norm_backward_fd(rng, shape, ns):
    p = (ns,) if isinstance(ns, int) else ns
    x, g, w = rng.normal(size=shape), rng.normal(size=shape), rng.normal(size=p)
    _, rstd = rms_norm(A(x), ns, A(w), 1e-6, return_stats=True)
    grads = rms_norm_backward(A(g), A(x), rstd, A(w), ns)
    _fd(lambda x, w: nref.ref_rms_norm(x, ns, w, 1e-6), [x, w], g, grads, [0, 1], "rms_norm")


@pytest.mark.parametrize("shape,G", [((3, 6, 5), 3), ((2, 4, 2, 3), 2), ((2, 4), 4)])
def test_group_norm_backward_fd(rng, shape, G):
    c = (shape[1],)
    x, g, w, b = rng.normal(size=shape), rng.normal(size=shape), rng.normal(size=c), rng.normal(size=c)
    _, mean, rstd = group_norm(A(x), G, A(w), A(b), return_stats=True)
    grads = group_norm_backward(A(g), A(x), mean, rstd, A(w), G)
    _fd(lambda x, w, b: nref.ref_group_norm(x, G, w, b), [x, w, b], g, grads, [0, 1, 2], "group_norm")


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_backward_fd(rng, training, shape):
    c = (shape[1],)
    x, g, w, b = rng.normal(size=shape), rng.normal(size=shape), rng.normal(size=c), rng.normal(size=c)
    rm, rv = rng.normal(size=c), rng.uniform(0.5, 2, c)
    _, sm, si = batch_norm(A(x), None if training else A(rm), None if training else A(rv), A(w), A(b), training,
                           return_stats=True)
    grads = batch_norm_backward(A(g), A(x), A(w), A(rm), A(rv), sm, si, training)
    f = lambda x, w, b: nref.ref_batch_norm(x, rm, rv, w, b, training)  # noqa: E731
    _fd(f, [x, w, b], g, grads, [0, 1, 2], f"batch_norm training={training}")


LOSS_CONFIGS = [
    dict(reduction="mean"), dict(reduction="sum"), dict(reduction="none"),
    dict(reduction="mean", weight=True), dict(reduction="mean", ignore=True), dict(reduction="none", ignore=True),
    dict(reduction="mean", weight=True, ignore=True), dict(reduction="mean", label_smoothing=0.2),
    dict(reduction="mean", label_smoothing=0.3, weight=True, ignore=True),
    dict(reduction="none", label_smoothing=0.3, weight=True, ignore=True),
    dict(reduction="sum", label_smoothing=0.1, shape=(3, 5, 4)), dict(reduction="mean", axis=-1, shape=(2, 3, 5)),
    dict(reduction="mean", prob=True), dict(reduction="none", prob=True, weight=True, label_smoothing=0.2),
    dict(reduction="sum", prob=True, shape=(2, 5, 3)), dict(reduction="none", shape=(5,)),
]


def _loss_inputs(rng, cfg):
    shape = cfg.get("shape", (6, 5))
    axis = cfg.get("axis")
    ax = ref._class_axis(np.empty(shape), axis)
    C = shape[ax]
    z = rng.normal(size=shape) * 2
    if cfg.get("prob"):
        t = ref.ref_softmax(rng.normal(size=shape), ax)
    else:
        t = rng.integers(0, C, shape[:ax] + shape[ax + 1:])
        if cfg.get("ignore"):
            t.reshape(-1)[:2] = -100
    w = rng.uniform(0.5, 2, C) if cfg.get("weight") else None
    kw = dict(reduction=cfg["reduction"], label_smoothing=cfg.get("label_smoothing", 0.0), axis=axis)
    gshape = shape[:ax] + shape[ax + 1:] if cfg["reduction"] == "none" else ()
    return z, np.asarray(t), w, kw, rng.normal(size=gshape)


@pytest.mark.parametrize("cfg", LOSS_CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_cross_entropy_backward_fd(rng, cfg):
    z, t, w, kw, g = _loss_inputs(rng, cfg)
    dz = cross_entropy_backward(A(g), A(z), A(t), A(w), **kw)
    _fd(lambda z: ref.ref_cross_entropy(z, t, w, **kw), [z], g, [dz], [0], f"cross_entropy {cfg}")
    np.testing.assert_allclose(N(dz), ref.ref_cross_entropy_backward(g, z, t, w, **kw), rtol=1e-12, atol=1e-14)
    # the saved log-sum-exp gives the same gradient
    _, lse = cross_entropy(A(z), A(t), A(w), **kw, return_lse=True)
    np.testing.assert_allclose(N(cross_entropy_backward(A(g), A(z), A(t), A(w), **kw, lse=lse)), N(dz),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cfg", [c for c in LOSS_CONFIGS if not c.get("prob") and not c.get("label_smoothing")],
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_nll_loss_backward_fd(rng, cfg):
    z, t, w, kw, g = _loss_inputs(rng, cfg)
    kw.pop("label_smoothing")
    x = ref.ref_log_softmax(z, ref._class_axis(z, kw["axis"]))
    dx = nll_loss_backward(A(g), A(x), A(t), A(w), **kw)
    _fd(lambda x: ref.ref_nll_loss(x, t, w, **kw), [x], g, [dx], [0], f"nll_loss {cfg}")


def test_embedding_backward_fd(rng):
    w, idx = rng.normal(size=(9, 4)), rng.integers(0, 9, (3, 5))
    g = rng.normal(size=(3, 5, 4))
    dw = embedding_backward(A(g), A(idx), 9)
    _fd(lambda w: w[idx], [w], g, [dw], [0], "embedding")


def test_dropout_backward_fd(rng):
    x, g = rng.normal(size=(40, 30)), rng.normal(size=(40, 30))
    _, mask = dropout(A(x), 0.4, generator=Generator(5), return_mask=True)
    m = N(mask)
    _fd(lambda x: x * m / 0.6, [x], g, [dropout_backward(A(g), mask, 0.4)], [0], "dropout")


# ------------------------------------------------------------------------------------------------- softmax
def test_softmax_stable_and_special_values():
    np.testing.assert_allclose(N(softmax(A([1000.0, 1000.0, -1000.0]))), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(N(log_softmax(A([1000.0, 1000.0]))), [-LN2, -LN2], rtol=1e-6)
    y = N(softmax(A([[0.0, -np.inf], [-np.inf, -np.inf]])))
    assert y[0].tolist() == [1.0, 0.0] and np.isnan(y[1]).all()  # a row of -inf gives NaN, as torch
    assert softmax(A(3.0)).item() == 1.0 and log_softmax(A(3.0)).item() == 0.0


def test_softmax_dtypes():
    x = A(np.linspace(-4, 4, 10), np.float16)
    assert softmax(x).dtype == tk.float16
    y = softmax(x, dtype=tk.float32)
    assert y.dtype == tk.float32
    np.testing.assert_allclose(N(y), ref.ref_softmax(np.linspace(-4, 4, 10).astype(np.float16)), rtol=1e-6)
    assert softmax(A([1, 2, 3]), dtype="float64").dtype == tk.float64  # ints with dtype= are converted first
    dx = softmax_backward(A(np.ones(3), np.float32), A(np.full(3, 1 / 3), np.float32), 0, input_dtype=tk.float16)
    assert dx.dtype == tk.float16


# ---------------------------------------------------------------------------------------------- norms
def test_layer_norm_stats_and_mixed_dtypes(rng):
    x = A(rng.normal(size=(2, 3, 8)), ml_bf16 := tk.bfloat16.numpy)
    w = A(rng.normal(size=8), np.float32)
    y, mean, rstd = layer_norm(x, 8, w, None, return_stats=True)
    assert y.dtype == tk.bfloat16 and mean.dtype == rstd.dtype == tk.float32 and mean.shape == rstd.shape == (2, 3)
    expected = nref.ref_layer_norm(N(x).astype(np.float64), 8, N(w))
    np.testing.assert_allclose(N(y).astype(np.float64), expected, rtol=1.6e-2, atol=1e-2)
    assert N(x).dtype == ml_bf16
    dx, dw, db = layer_norm_backward(A(rng.normal(size=(2, 3, 8)), np.float32).astype(tk.bfloat16), x, mean, rstd, w,
                                     8)
    assert dx.dtype == tk.bfloat16 and dw.dtype == tk.float32 and db.dtype == tk.float32
    assert layer_norm_backward(A(np.ones((2, 8))), A(np.ones((2, 8))), A(np.zeros(2)), A(np.ones(2)), None, 8,
                               needs=(False, True, False)) == (None, None, None)


def test_rms_norm_default_eps_is_the_compute_dtype_epsilon():
    x = np.full((2, 4), 1e-2, np.float16)  # mean(x^2) = 1e-4: float16's eps (1e-3) would change the result a lot
    y = N(rms_norm(A(x), 4)).astype(np.float64)
    expected = x.astype(np.float64) / np.sqrt(np.float64(x.astype(np.float32)[0, 0]) ** 2 + np.finfo(np.float32).eps)
    np.testing.assert_allclose(y, expected, rtol=1e-3)
    x32 = np.full((1, 3), 1e-4, np.float32)
    np.testing.assert_allclose(N(rms_norm(A(x32), 3)), nref.ref_rms_norm(x32, 3), rtol=1e-5)


def test_batch_norm_running_stats_update():
    x = A([[1.0], [3.0]], np.float32)  # channel mean 2, biased var 1, unbiased var 2
    rm, rv = A([0.0], np.float32), A([1.0], np.float32)
    y, sm, si = batch_norm(x, rm, rv, training=True, momentum=0.1, eps=0.0, return_stats=True)
    np.testing.assert_allclose(N(y)[:, 0], [-1.0, 1.0])
    np.testing.assert_allclose(N(rm), [0.2])
    np.testing.assert_allclose(N(rv), [1.1])  # 0.9 * 1 + 0.1 * 2 (unbiased)
    assert N(sm).tolist() == [2.0] and N(si).tolist() == [1.0]
    # eval uses the running statistics and changes nothing
    y = batch_norm(x, rm, rv, training=False, eps=0.0)
    np.testing.assert_allclose(N(y)[:, 0], (np.array([1.0, 3.0]) - 0.2) / np.sqrt(1.1), rtol=1e-6)
    np.testing.assert_allclose(N(rm), [0.2])
    assert batch_norm(x, rm, rv, return_stats=True)[1:] == (None, None)


def test_batch_norm_running_stats_noncontiguous_float32_with_half_input(rng):
    x = rng.normal(size=(8, 3, 5)).astype(np.float16)
    buf = tk.zeros((3, 2), dtype=tk.float32)
    rm, rv = buf[:, 0], buf[:, 1]
    rv[...] = 1.0
    batch_norm(A(x), rm, rv, training=True, momentum=1.0)
    xf = x.astype(np.float64)
    np.testing.assert_allclose(N(rm), xf.mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(N(rv), xf.var(axis=(0, 2), ddof=1), rtol=1e-5)
    assert rm.dtype == tk.float32 and N(buf).shape == (3, 2)


def test_batch_norm_empty_batch_keeps_running_stats():
    rm, rv = A([0.5, 0.5]), A([2.0, 2.0])
    y = batch_norm(tk.zeros((0, 2, 3), dtype=tk.float64), rm, rv, training=True)
    assert y.shape == (0, 2, 3) and N(rm).tolist() == [0.5, 0.5] and N(rv).tolist() == [2.0, 2.0]


# ----------------------------------------------------------------------------------------------- losses
def test_cross_entropy_weighted_mean_divides_by_the_target_weights():
    z = A([[0.0, 0.0, 0.0], [0.0, 0.0, LN2]])  # -log p: row 0 class 0 = ln 3, row 1 class 2 = ln 4 - ln 2 = ln 2
    t, w = A([0, 2]), A([1.0, 2.0, 3.0])
    np.testing.assert_allclose(N(cross_entropy(z, t, w, reduction="none")), [LN3, 3 * LN2], rtol=1e-6)
    np.testing.assert_allclose(cross_entropy(z, t, w).item(), (LN3 + 3 * LN2) / 4, rtol=1e-6)
    np.testing.assert_allclose(cross_entropy(z, t, w, reduction="sum").item(), LN3 + 3 * LN2, rtol=1e-6)
    np.testing.assert_allclose(cross_entropy(z, t).item(), (LN3 + LN2) / 2, rtol=1e-6)
    np.testing.assert_allclose(nll_loss(log_softmax(z, 1), t, w).item(), (LN3 + 3 * LN2) / 4, rtol=1e-6)


def test_cross_entropy_ignore_index():
    z, w = A([[0.0, 0.0], [5.0, -5.0]]), A([1.0, 3.0])
    np.testing.assert_allclose(cross_entropy(z, A([1, -100]), w).item(), LN2, rtol=1e-6)  # 3 ln 2 / 3
    assert math.isnan(cross_entropy(z, A([-100, -100]), w).item())  # 0 / 0, as torch
    assert cross_entropy(z, A([-100, -100]), w, reduction="sum").item() == 0.0
    assert N(cross_entropy(z, A([-100, -100]), reduction="none")).tolist() == [0.0, 0.0]
    assert N(cross_entropy_backward(A(1.0), z, A([-100, -100]), w)).tolist() == [[0, 0], [0, 0]]
    np.testing.assert_allclose(cross_entropy(z, A([7, 0]), ignore_index=7).item(), math.log1p(math.exp(-10)),
                               rtol=1e-6)


def test_cross_entropy_label_smoothing_with_weights_follows_torch():
    # torch: (1 - ls) * nll + ls / C * smooth, both normalized by the weight of the (non-ignored) targets
    z, t, w = A([[0.0, 0.0]]), A([0]), A([1.0, 3.0])
    np.testing.assert_allclose(cross_entropy(z, t, w, label_smoothing=0.5).item(), 0.5 * LN2 + 0.25 * 4 * LN2,
                               rtol=1e-6)
    np.testing.assert_allclose(cross_entropy(z, t, label_smoothing=0.5).item(), LN2, rtol=1e-6)


def test_cross_entropy_probability_targets_mean_divides_by_the_batch():
    z, q, w = A([[0.0, 0.0], [0.0, 0.0]]), A([[1.0, 0.0], [0.0, 1.0]]), A([1.0, 3.0])
    np.testing.assert_allclose(cross_entropy(z, q, w).item(), 2 * LN2, rtol=1e-6)  # (ln 2 + 3 ln 2) / 2
    assert math.isnan(cross_entropy(tk.zeros((0, 3)), tk.zeros((0, 3))).item())


def test_cross_entropy_half_logits_computed_in_float32(rng):
    z = rng.normal(size=(64, 1000)).astype(np.float16) * 4
    t = rng.integers(0, 1000, 64)
    loss, lse = cross_entropy(A(z), A(t), return_lse=True)
    assert loss.dtype == tk.float16 and lse.dtype == tk.float32 and lse.shape == (64,)
    np.testing.assert_allclose(float(loss.item()), ref.ref_cross_entropy(z.astype(np.float64), t), rtol=1e-3)
    zf = z.astype(np.float64)
    np.testing.assert_allclose(N(lse), np.log(np.exp(zf).sum(axis=1)), rtol=1e-6)
    assert cross_entropy(A(z), A(t.astype(np.int32))).item() == loss.item()


# ------------------------------------------------------------------------------------------------- sparse
def test_embedding_padding_and_frequency_scaling():
    idx = A([[1, 2, 1], [0, 1, 3]])
    g = A(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    dw = N(embedding_backward(g, idx, 5, padding_idx=1))
    gn = N(g)
    assert dw[1].tolist() == [0.0] * 4 and dw[4].tolist() == [0.0] * 4
    np.testing.assert_array_equal(dw[0], gn[1, 0])
    np.testing.assert_array_equal(dw[2], gn[0, 1])
    dw = N(embedding_backward(g, idx, 5, scale_grad_by_freq=True))
    np.testing.assert_allclose(dw[1], (gn[0, 0] + gn[0, 2] + gn[1, 1]) / 3)
    np.testing.assert_array_equal(N(embedding(A(np.eye(4)), idx, padding_idx=1)), np.eye(4)[N(idx)])


def test_embedding_max_norm_renormalizes_referenced_rows_in_place():
    w0 = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    w = A(w0.copy())  # asarray shares NumPy memory
    out = embedding(w, A([0, 1, 0]), max_norm=1.0)
    wn = N(w)
    np.testing.assert_allclose(wn[0], w0[0] / (5 + 1e-7))
    np.testing.assert_array_equal(wn[1:], w0[1:])  # row 1 is short enough, row 2 is not referenced
    np.testing.assert_array_equal(N(out), wn[[0, 1, 0]])


def test_dropout_statistics_scaling_and_mask(rng):
    x = A(rng.uniform(1, 2, 100_000), np.float32)
    for p in (0.1, 0.5, 0.8):
        y, mask = dropout(x, p, generator=Generator(7), return_mask=True)
        yn, m = N(y), N(mask)
        assert abs(m.mean() - (1 - p)) < 0.01, (p, m.mean())
        assert m.dtype == np.bool_ and ((yn != 0) == m).all()
        np.testing.assert_allclose(yn[m], N(x)[m] * np.float32(1 / (1 - p)), rtol=1e-6)
        dx = N(dropout_backward(A(np.ones(100_000), np.float32), mask, p))
        np.testing.assert_allclose(dx, m / (1 - p), rtol=1e-6)


def test_dropout_reproducible_with_seeded_generator(rng):
    x = A(rng.normal(size=(33, 17)))
    a, b = N(dropout(x, 0.3, generator=Generator(11))), N(dropout(x, 0.3, generator=Generator(11)))
    np.testing.assert_array_equal(a, b)
    gen = Generator(11)
    first, second = N(dropout(x, 0.3, generator=gen)), N(dropout(x, 0.3, generator=gen))
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first != 0, second != 0)  # the stream advances
    tk.random.seed(5)
    c = N(dropout(x, 0.3))
    tk.random.seed(5)
    np.testing.assert_array_equal(N(dropout(x, 0.3)), c)


def test_dropout_identity_cases_return_the_input():
    x = A(np.arange(6.0))
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    assert dropout(x, 0.3, training=False, return_mask=True) == (x, None)
    g = A(np.ones(6))
    assert dropout_backward(g, None, 0.5) is g
    y, mask = dropout(x, 1.0, return_mask=True)
    assert N(y).tolist() == [0.0] * 6 and not N(mask).any()
    assert dropout(A(np.ones(4), np.float16), 0.5).dtype == tk.float16
