"""Batch norm, group norm and embedding renorm kernels past what the op table reaches (tests/tkernels/opinfos run
every op on small samples): channels of thousands of elements split in chunks whose partial statistics are merged
(Chan's formula), several segments per program, strided and non-collapsible layouts, running statistics that are
views, mixed parameter dtypes, empty batches, and embedding renorm with repeated rows and every norm type.

Results on cuda are compared with the cpu backend (itself checked against NumPy references by the op table). Chunks
are forced at small sizes by lowering ``CHANNEL_CHUNK``/``CHANNEL_TILE`` of the backend.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.ops.normalization import batch_norm, batch_norm_backward, group_norm, group_norm_backward
from tkernels.ops.sparse import embedding

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

if tkc.is_available():
    from tkernels.backends.triton import ops_norm
else:  # pragma: no cover - the module is skipped
    ops_norm = None

TOL = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2)}
RNG = np.random.default_rng(0)


def nd(a) -> np.ndarray | None:
    return None if a is None else a.to("cpu").numpy().astype(np.float64)


def both(fn, *args, mutated=(), **kwargs):
    """``fn`` on cuda and on cpu (Array arguments moved; ``mutated`` ones, by position, copied first): the results
    then the mutated arguments, as float64 NumPy, for each device."""
    out = {}
    for dev in ("cuda", "cpu"):
        a = [(x.to(dev).copy() if i in mutated else x.to(dev)) if isinstance(x, tk.Array) else x
             for i, x in enumerate(args)]
        r = fn(*a, **kwargs)
        rs = r if isinstance(r, tuple) else (r,)
        assert all(x is None or x.device.type == dev for x in rs)
        out[dev] = [nd(x) for x in rs] + [nd(a[i]) for i in mutated]
    return out["cuda"], out["cpu"]


def check(fn, *args, dtype="float32", mutated=(), tol=None, **kwargs):
    got, want = both(fn, *args, mutated=mutated, **kwargs)
    rtol, atol = tol or TOL[dtype]
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return got


def arr(shape, dtype="float32", low=-3.0, high=3.0):
    return tk.asarray(RNG.uniform(low, high, shape), device="cuda").astype(dtype)


@pytest.fixture
def chunked(monkeypatch):
    """Segments split into chunks of 2048 elements walked in tiles of 1024: partials merged across programs."""
    monkeypatch.setattr(ops_norm, "CHANNEL_CHUNK", 2048)
    monkeypatch.setattr(ops_norm, "CHANNEL_TILE", 1024)


def test_batch_norm_training_merges_chunk_statistics(chunked):
    """5200 elements a channel in 3 chunks (the last one short), far from zero: no cancellation in the variance."""
    x = arr((4, 2, 1300), low=99.0, high=101.0)
    rm, rv = arr((2,)), arr((2,), low=0.5, high=2.0)
    w, b = arr((2,)), arr((2,))
    # y's atol: one ulp of x (~100) in the mean, times |w| * invstd (~5)
    y, sm, si, rm1, rv1 = check(batch_norm, x, rm, rv, w, b, True, 0.3, 1e-5, return_stats=True, mutated=(1, 2),
                                tol=(2e-5, 1e-4))
    xs = nd(x).transpose(1, 0, 2).reshape(2, -1)
    np.testing.assert_allclose(sm, xs.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(si, 1 / np.sqrt(xs.var(axis=1) + 1e-5), rtol=2e-4)
    np.testing.assert_allclose(rv1, 0.7 * nd(rv) + 0.3 * xs.var(axis=1, ddof=1), rtol=2e-4)
    g = arr((4, 2, 1300))
    sm, si = (tk.asarray(v, device="cuda").astype("float32") for v in (sm, si))
    for training in (True, False):
        check(batch_norm_backward, g, x, w, rm, rv, sm, si, training)


def test_group_norm_chunks_and_many_segments_per_program(chunked):
    x = arr((2, 4, 23, 29))  # 2 groups of 1334 elements: 2 chunks each; per channel 1334 elements: 1 chunk
    w, b = arr((4,)), arr((4,))
    y, mean, rstd = check(group_norm, x, 2, w, b, return_stats=True)
    g = arr((2, 4, 23, 29))
    check(group_norm_backward, g, x, tk.asarray(mean, device="cuda").astype("float32"),
          tk.asarray(rstd, device="cuda").astype("float32"), w, 2)
    x = arr((5, 12, 7))  # 60 segments of 7: tiles of several segments, the last tile partly past the end
    _, mean, rstd = check(group_norm, x, 12, None, arr((12,)), return_stats=True)
    check(group_norm_backward, arr((5, 12, 7)), x, tk.asarray(mean, device="cuda").astype("float32"),
          tk.asarray(rstd, device="cuda").astype("float32"), arr((12,)), 12, needs=(True, False, True))


@pytest.mark.parametrize("layout", ["channels_last", "sliced", "not_collapsible"])
def test_strided_layouts(layout):
    base = arr((4, 5, 6, 7))
    if layout == "channels_last":
        x = arr((4, 6, 7, 5)).permute_dims((0, 3, 1, 2))  # (N, C, H, W) view of an NHWC array: strides, no copy
    elif layout == "sliced":
        x = base[::2, :, 1:, ::3]
    else:
        x = base.permute_dims((0, 1, 3, 2))  # the spatial axes do not collapse: copied to contiguous first
    c = x.shape[1]
    rm, rv, w, b = arr((c,)), arr((c,), low=0.5, high=2.0), arr((c,)), arr((c,))
    _, sm, si, _, _ = check(batch_norm, x, rm, rv, w, b, True, 0.1, 1e-5, return_stats=True, mutated=(1, 2))
    check(batch_norm, x, rm, rv, w, None, False)
    g = arr(x.shape)  # contiguous; and one transposed through its spatial axes
    gs = arr((x.shape[0], c, x.shape[3], x.shape[2])).permute_dims((0, 1, 3, 2))
    sm, si = (tk.asarray(v, device="cuda").astype("float32") for v in (sm, si))
    for gg in (g, gs):
        check(batch_norm_backward, gg, x, w, rm, rv, sm, si, True)
        check(batch_norm_backward, gg, x, w, rm, rv, sm, si, False, needs=(True, False, True))
    _, mean, rstd = check(group_norm, x, 5, w, b, return_stats=True)
    check(group_norm_backward, gs, x, tk.asarray(mean, device="cuda").astype("float32"),
          tk.asarray(rstd, device="cuda").astype("float32"), w, 5)


def test_running_stats_views_are_updated_in_place():
    x = arr((6, 3, 5))
    stats = arr((3, 2))
    rm, rv = stats[:, 0], stats[:, 1]  # strided views into one buffer
    rm_want = 0.9 * nd(rm) + 0.1 * nd(x).mean(axis=(0, 2))
    rv_want = 0.9 * nd(rv) + 0.1 * nd(x).transpose(1, 0, 2).reshape(3, -1).var(axis=1, ddof=1)
    batch_norm(x, rm, rv, training=True)
    np.testing.assert_allclose(nd(stats), np.stack([rm_want, rv_want], axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("xd,pd", [("bfloat16", "float32"), ("float16", "float16"), ("float32", "float64")])
def test_mixed_parameter_dtypes(xd, pd):
    x = arr((5, 4, 9), xd)
    rm, rv, w, b = arr((4,), pd), arr((4,), pd, 0.5, 2.0), arr((4,), pd), arr((4,), pd)
    tol = "float32" if xd == "float32" else xd
    _, sm, si, _, _ = check(batch_norm, x, rm, rv, w, b, True, 0.1, 1e-5, return_stats=True, mutated=(1, 2),
                            dtype=tol)
    r = batch_norm(x, None, None, w, b, True, return_stats=True)
    assert r[0].dtype == x.dtype and r[1].dtype == (tk.float32 if xd != "float32" else x.dtype)
    check(batch_norm, x, rm, rv, w, b, False, dtype=tol)
    dx, dw, db = check(batch_norm_backward, x, x, w, rm, rv, r[1], r[2], True, dtype=tol)
    _, mean, rstd = group_norm(x, 2, w, b, return_stats=True)
    check(group_norm, x, 2, w, b, dtype=tol)
    check(group_norm_backward, x, x, mean, rstd, w, 2, dtype=tol)


def test_empty_batches():
    x = tk.empty((0, 3, 4), device="cuda")
    rm, rv = arr((3,)), arr((3,))
    y, sm, si, rm1, rv1 = check(batch_norm, x, rm, rv, None, None, True, return_stats=True, mutated=(1, 2))
    assert y.shape == (0, 3, 4) and np.all(sm == 0) and np.allclose(si, 1 / math.sqrt(1e-5))
    np.testing.assert_array_equal(rm1, nd(rm))
    check(batch_norm_backward, x, x, arr((3,)), rm, rv, arr((3,)), arr((3,)), True)
    _, mean, rstd = check(group_norm, x, 3, return_stats=True)
    assert mean.shape == (0, 3)
    check(group_norm_backward, x, x, arr((0, 3)), arr((0, 3)), arr((3,)), 3)


def test_gpu_plan_covers_every_element(monkeypatch):
    """The GPU tiling (computed here, nothing launched): chunks of whole tiles that cover each segment exactly."""
    monkeypatch.setattr(ops_norm, "INTERPRETED", False)
    for R, L in ((3, 1 << 22), (64, 50176), (2048, 36), (1, 1), (7, 1025), (100000, 3)):
        P, chunk, br, block = ops_norm._plan(R, L)
        assert (br, block) in ops_norm.GPU_CHANNEL_TILES
        assert chunk % block == 0 and (P - 1) * chunk < L <= P * chunk
        assert -(-R // br) * P >= min(ops_norm.CHANNEL_PROGRAMS, -(-R // br) * -(-L // block)) * 0.9


# -------------------------------------------------------------------------------------------- embedding renorm
def _renorm(w, idx, max_norm, p):
    return embedding(w, idx, max_norm=max_norm, norm_type=p)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0])
def test_embedding_renorm_every_norm_type(p):
    w = arr((9, 70), "float32", -1.0, 1.0)
    idx = tk.asarray(np.array([[0, 3, 0], [8, 3, 5]]), device="cuda")
    m = {0.0: 40.0, -math.inf: 1e-6, math.inf: 0.5, 3.0: 2.0}.get(p, 3.0)  # below most rows' norms
    got, want = both(_renorm, w, idx, m, p, mutated=(0,))
    for g, v in zip(got, want):  # the gathered rows, the weight
        np.testing.assert_allclose(g, v, rtol=2e-6, atol=1e-7)
    assert not np.allclose(want[1], nd(w))  # rows were rescaled
    np.testing.assert_array_equal(got[1][[1, 2, 4, 6, 7]], nd(w)[[1, 2, 4, 6, 7]])  # unreferenced rows untouched


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_embedding_renorm_repeated_rows_strided_weight_long_rows(dtype):
    """Every index repeated (each row is renormalized once), a strided weight view, rows longer than a tile."""
    base = arr((40, 2, 3000), dtype)
    w = base[::3, 1]  # (14, 3000), strides (3 * 2 * 3000, 1)
    idx = tk.asarray(np.tile(np.arange(0, 14, 2), 3).astype(np.int32), device="cuda")
    got, want = both(_renorm, w, idx, 20.0, 2.0, mutated=(0,))
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got[1], want[1], rtol=rtol, atol=atol)
    np.testing.assert_allclose(np.linalg.norm(got[1][::2], axis=1), 20.0, rtol=1e-2 if dtype == "bfloat16" else 1e-8)
    np.testing.assert_array_equal(got[1][1::2], nd(w)[1::2])
