"""The row-wise nn kernels past what the op table reaches (tests/tkernels/opinfos/ops_*.py run every op on small
samples): rows longer than a block (softmax's online path, cross-entropy's vocabulary chunks, layer norm's
chunked passes), layer-norm dweight/dbias partials across many programs, non-collapsible layouts (the contiguous
fallback), embedding backward with repeated indices and padding, half types, and out-of-range targets.

Results on cuda are compared with the cpu backend (itself checked against NumPy references by the op table).
Long rows are forced at small sizes by lowering ``MAX_ONE_PASS`` of the softmax backend (the shared row tiling).
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.ops.activation import log_softmax, log_softmax_backward, softmax, softmax_backward
from tkernels.ops.loss import cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward
from tkernels.ops.normalization import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from tkernels.ops.sparse import embedding, embedding_backward

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

if tkc.is_available():
    from tkernels.backends.triton import ops_norm, ops_softmax
else:  # pragma: no cover - the module is skipped
    ops_norm = ops_softmax = None

TOL = {"float32": (2e-5, 1e-5), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2)}
RNG = np.random.default_rng(0)


def _both(fn, *args, **kwargs):
    """``fn`` on cuda and on cpu (Array arguments moved), results as NumPy (tuples flattened, None kept)."""
    def on(dev):
        a = [x.to(dev) if isinstance(x, tk.Array) else x for x in args]
        k = {n: (v.to(dev) if isinstance(v, tk.Array) else v) for n, v in kwargs.items()}
        r = fn(*a, **k)
        rs = r if isinstance(r, tuple) else (r,)
        for x in rs:
            assert x is None or x.device.type == dev
        return [None if x is None else x.to("cpu").numpy() for x in rs]

    return on("cuda"), on("cpu")


def check(fn, *args, dtype="float32", **kwargs):
    got, want = _both(fn, *args, **kwargs)
    rtol, atol = TOL[dtype]
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return got


def arr(shape, dtype="float32", low=-3.0, high=3.0):
    return tk.asarray(RNG.uniform(low, high, shape), device="cuda").astype(dtype)


@pytest.fixture
def long_rows(monkeypatch):
    """Rows longer than 16 elements take the chunked (online) paths, in chunks of 16."""
    monkeypatch.setattr(ops_softmax, "MAX_ONE_PASS", 16)


# ------------------------------------------------------------------------------------------------ softmax
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_softmax_online_path(long_rows, dtype):
    x = arr((5, 50), dtype)
    x[1, 3] = -float("inf")  # a -inf among finite values; a row of -inf is NaN
    x[2] = -float("inf")
    x[3, 7] = 80.0  # large values: the running max is rescaled across chunks
    for fn in (softmax, log_softmax):
        check(fn, x, -1, dtype=dtype)
        check(fn, x.mT, 0, dtype=dtype)  # the axis strided, read in place
    y = softmax(x.to("cpu"), -1).to("cuda")
    g = arr((5, 50), dtype)
    check(softmax_backward, g, y, -1, dtype=dtype)
    check(log_softmax_backward, g, log_softmax(x.to("cpu"), -1).to("cuda"), -1, dtype=dtype)


def test_softmax_middle_axis_and_dtypes():
    x = arr((3, 37, 5))  # rows along a middle axis: the kept axes walked by their strides
    check(softmax, x, 1)
    check(log_softmax, tk.permute_dims(x, (2, 0, 1)), 2)
    check(softmax, x.astype("float16"), -1, dtype="float16")
    check(log_softmax, x.astype("float64"), 1, dtype="float64")
    check(lambda a: softmax(a, 0, dtype="float64"), x[:, ::3], dtype="float64")


# ------------------------------------------------------------------------------------------------ losses
def _targets(shape, c, ignore=0.3, ignore_index=-100):
    t = RNG.integers(0, c, shape)
    t = np.where(RNG.random(shape) < ignore, ignore_index, t)
    return tk.asarray(t, device="cuda")


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_vocab_chunks(long_rows, reduction):
    z = arr((9, 45))
    z[0, 5] = 300.0
    t, w = _targets((9,), 45), arr((45,), low=0.5, high=2.0)
    for weight, ls in ((None, 0.0), (w, 0.2)) if reduction != "sum" else ((w, 0.0), (None, 0.1)):
        check(cross_entropy, z, t, weight, reduction=reduction, label_smoothing=ls)
        g = arr((9,), low=0.5, high=2.0) if reduction == "none" else 1.5
        check(cross_entropy_backward, g, z, t, weight, reduction=reduction, label_smoothing=ls)
    # probability targets, with smoothing, along axis=1 of (B, C, d) logits
    z3 = arr((3, 40, 4))
    q = softmax(arr((3, 40, 4)).to("cpu"), 1).to("cuda")
    check(cross_entropy, z3, q, arr((40,), low=0.5, high=2.0), reduction=reduction, label_smoothing=0.2)
    check(cross_entropy_backward, arr((3, 4) if reduction == "none" else ()), z3, q, reduction=reduction)


def test_cross_entropy_lse_reuse_and_ignore_index(long_rows):
    z = arr((2, 6, 33)).astype("bfloat16")  # (B, T, V) logits, classes last
    t = _targets((2, 6), 33, ignore_index=3)
    loss, lse = check(lambda *a: cross_entropy(*a, axis=-1, ignore_index=3, return_lse=True), z, t, dtype="bfloat16")
    lse_dev = tk.asarray(lse, device="cuda")
    got = cross_entropy_backward(tk.asarray(np.float32(1.0), device="cuda"), z, t, axis=-1, ignore_index=3,
                                 lse=lse_dev)
    want = cross_entropy_backward(1.0, z.to("cpu"), t.to("cpu"), axis=-1, ignore_index=3)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=2e-2, atol=1e-3)


def test_nll_loss_and_empty_batches():
    x = log_softmax(arr((129, 7)), 1)
    t, w = _targets((129,), 7), arr((7,), low=0.5, high=2.0)
    for r in ("none", "sum", "mean"):
        check(nll_loss, x, t, w, reduction=r)
        check(nll_loss_backward, arr((129,)) if r == "none" else 0.5, x, t, w, reduction=r)
    every_ignored = tk.asarray(np.full(129, -100), device="cuda")
    assert np.isnan(float(cross_entropy(x, every_ignored, w)))  # 0 / 0
    assert np.all(cross_entropy_backward(1.0, x, every_ignored, w).numpy() == 0)
    assert np.isnan(float(cross_entropy(arr((0, 7)), tk.asarray(np.zeros(0, np.int64), device="cuda"))))


def test_out_of_range_target_gives_nan_and_raises_at_the_sync():
    z = arr((3, 5))
    t = tk.asarray([1, 7, 2], device="cuda")
    r = cross_entropy(z, t, reduction="none")
    with pytest.raises(IndexError, match="cross_entropy: target 7 is out of bounds for 5 classes"):
        r.numpy()
    rows = r.numpy()
    assert np.isnan(rows[1]) and np.isfinite(rows[[0, 2]]).all()
    d = cross_entropy_backward(tk.asarray(np.ones(3, np.float32), device="cuda"), z, t, reduction="none").numpy()
    assert np.isnan(d[1]).all() and np.isfinite(d[[0, 2]]).all()


# ------------------------------------------------------------------------------------------------ norms
@pytest.mark.parametrize("chunked", [False, True])
def test_layer_norm_backward_partials(monkeypatch, chunked):
    """37 rows over 4 programs: dweight/dbias are sums of per-program partials; chunked: 7 rows of 20 in chunks of
    8 over 3 programs."""
    m = 7 if chunked else 37
    if chunked:
        monkeypatch.setattr(ops_softmax, "MAX_ONE_PASS", 8)
        monkeypatch.setattr(ops_norm, "BWD_PROGRAMS", 3)
    x, w, b = arr((m, 20)), arr((20,)), arr((20,))
    y, mean, rstd = layer_norm(x.to("cpu"), 20, w.to("cpu"), b.to("cpu"), return_stats=True)
    check(lambda *a: layer_norm(*a, return_stats=True), x, 20, w, b)
    g = arr((m, 20))
    mean, rstd = mean.to("cuda"), rstd.to("cuda")
    check(layer_norm_backward, g, x, mean, rstd, w, 20)
    check(lambda *a: layer_norm_backward(*a, needs=(False, True, True)), g, x, mean, rstd, w, 20)
    check(layer_norm_backward, g, x, mean, rstd, None, 20)
    _, r = rms_norm(x.to("cpu"), 20, w.to("cpu"), return_stats=True)
    check(lambda *a: rms_norm(*a, return_stats=True), x, 20, w)
    check(rms_norm_backward, g, x, r.to("cuda"), w, 20)


def test_layer_norm_layouts_and_halves():
    x = arr((4, 6, 5))
    xt = tk.permute_dims(arr((5, 6, 4)), (2, 1, 0))  # no (rows, row) view: copied on the device first
    for v in (x, xt, x[:, ::2], arr((8, 5)).mT):
        n = v.shape[-1]
        check(layer_norm, v, n, arr((n,)), arr((n,)))
        check(rms_norm, v, (v.shape[-2], n))
    xb = x.astype("bfloat16")
    check(layer_norm, xb, (6, 5), arr((6, 5)), None, dtype="bfloat16")  # float32 parameters, bf16 x
    y, m, r = layer_norm(xb.to("cpu"), 5, return_stats=True)
    check(layer_norm_backward, arr((4, 6, 5)).astype("bfloat16"), xb, m.to("cuda"), r.to("cuda"), None, 5,
          dtype="bfloat16")


# ------------------------------------------------------------------------------------------------ embedding
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_embedding_backward_repeats_and_padding(dtype):
    idx = tk.asarray(RNG.integers(0, 6, (5, 9)), device="cuda")  # 45 lookups into 6 rows: many repeats
    g = arr((5, 9, 33), dtype)
    for kw in ({}, dict(padding_idx=2), dict(scale_grad_by_freq=True, padding_idx=-1)):
        check(embedding_backward, g, idx, 6, dtype=dtype, **kw)
    check(embedding_backward, g[:, ::2], idx[:, ::2].astype("int32"), 6, dtype=dtype)
    check(embedding, arr((6, 33), dtype)[:, ::3], idx, dtype=dtype)


# ------------------------------------------------------------------------------------------------ real GPU
@pytest.mark.gpu
def test_large_rows_on_gpu():
    x = arr((64, 100_000))
    check(softmax, x, -1)
    check(log_softmax, x, -1)
    t = _targets((64,), 100_000, ignore=0.1)
    check(cross_entropy, x, t, label_smoothing=0.1)
    check(cross_entropy_backward, 1.0, x, t)
    h = arr((4096, 4096)).astype("bfloat16")
    w = arr((4096,))
    check(layer_norm, h, 4096, w, w, dtype="bfloat16")
    _, m, r = layer_norm(h.to("cpu"), 4096, w.to("cpu"), return_stats=True)
    check(layer_norm_backward, h, h, m.to("cuda"), r.to("cuda"), w, 4096, dtype="bfloat16")
    a = embedding_backward(h, tk.asarray(RNG.integers(0, 100, 4096), device="cuda"), 100)
    b = embedding_backward(h, tk.asarray(RNG.integers(0, 100, 4096), device="cuda"), 100)
    assert a.shape == b.shape == (100, 4096)
