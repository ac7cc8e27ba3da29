"""Backward entries of tkernels.ops convolution, pooling, resizing and attention (NumPy reference formulas and
finite differences in float64), and the semantics the OpInfo table does not pin down (PyTorch values worked
out by hand, index and divisor rules, masks, dropout)."""

import numpy as np
import pytest

import tkernels as tk
from tkernels.ops.attention import scaled_dot_product_attention, scaled_dot_product_attention_backward
from tkernels.ops.conv import (
    conv1d,
    conv1d_backward,
    conv2d,
    conv2d_backward,
    conv_transpose1d_backward,
    conv_transpose2d,
    conv_transpose2d_backward,
)
from tkernels.ops.pooling import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    interpolate,
    interpolate_backward,
    max_pool2d,
    max_pool2d_backward,
)

from .harness import fd_vjp_check
from .opinfos.ops_conv_pool import (
    ref_adaptive_avg_pool2d,
    ref_avg_pool2d,
    ref_conv1d,
    ref_conv2d,
    ref_conv_transpose1d,
    ref_conv_transpose2d,
    ref_interpolate,
    ref_max_pool2d,
    ref_sdpa,
)


def A(a, dtype=None):
    a = np.asarray(a)
    return tk.asarray(a if dtype is None else a.astype(dtype))


def H(a):
    return None if a is None else np.asarray(a.numpy(), np.float64)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ref_conv2d_backward(g, x, w, stride, padding, dilation, groups):
    """Loop over output positions: each output gradient flows back to its input window and its weights."""
    o, cg, kh, kw = w.shape
    s, d = _pair(stride), _pair(dilation)
    if padding == "same":
        th, tw = d[0] * (kh - 1), d[1] * (kw - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    else:
        p = _pair(padding)
        pads = (p[0], p[0], p[1], p[1])
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    og = o // groups
    for i in range(g.shape[2]):
        for j in range(g.shape[3]):
            rs = slice(i * s[0], i * s[0] + d[0] * (kh - 1) + 1, d[0])
            cs = slice(j * s[1], j * s[1] + d[1] * (kw - 1) + 1, d[1])
            for k in range(groups):
                co, ci = slice(k * og, (k + 1) * og), slice(k * cg, (k + 1) * cg)
                dw[co] += np.einsum("no,nckl->ockl", g[:, co, i, j], xp[:, ci, rs, cs])
                dxp[:, ci, rs, cs] += np.einsum("no,ockl->nckl", g[:, co, i, j], w[co])
    dx = dxp[:, :, pads[0]:pads[0] + x.shape[2], pads[2]:pads[2] + x.shape[3]]
    return dx, dw, g.sum(axis=(0, 2, 3))


def linear_adjoint(f, input_shape, g):
    """The adjoint of a per-plane linear map ``f`` (N, C, H, W) -> (N, C, Ho, Wo), from its response to each
    basis image: dx[n, c, i, j] = <g[n, c], f(e_ij)>."""
    h, w = input_shape[-2:]
    g4 = g.reshape((-1,) + g.shape[-2:])
    dx = np.zeros((g4.shape[0], h, w))
    for i in range(h):
        for j in range(w):
            e = np.zeros((1, 1, h, w))
            e[0, 0, i, j] = 1
            dx[:, i, j] = np.einsum("kab,ab->k", g4, f(e)[0, 0])
    return dx.reshape(input_shape)


# ---------------------------------------------------------------------------------------------- convolution
CONV_CASES = [
    dict(xs=(2, 3, 7, 9), ws=(4, 3, 3, 3), stride=1, padding=1, dilation=1, groups=1),
    dict(xs=(2, 4, 9, 7), ws=(6, 2, 3, 3), stride=2, padding=0, dilation=2, groups=2),
    dict(xs=(1, 3, 7, 7), ws=(3, 1, 5, 5), stride=1, padding=2, dilation=1, groups=3),
    dict(xs=(1, 2, 5, 6), ws=(3, 2, 4, 2), stride=1, padding="same", dilation=1, groups=1),
    dict(xs=(2, 1, 1, 1), ws=(2, 1, 1, 1), stride=1, padding=0, dilation=1, groups=1),
    dict(xs=(1, 2, 8, 7), ws=(2, 2, 3, 2), stride=(2, 3), padding=(1, 0), dilation=(1, 2), groups=1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c['xs']}-{c['ws']}-{c['padding']}-g{c['groups']}")
def test_conv2d_backward(case, rng):
    x, w, b = rng.standard_normal(case["xs"]), rng.standard_normal(case["ws"]), rng.standard_normal(case["ws"][0])
    kw = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    y = ref_conv2d(x, w, b, **kw)
    g = rng.standard_normal(y.shape)
    dx, dw, db = (H(a) for a in conv2d_backward(A(g), A(x), A(w), **kw))
    rx, rw, rb = ref_conv2d_backward(g, x, w, **kw)
    np.testing.assert_allclose(dx, rx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, rw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(db, rb, rtol=1e-10, atol=1e-10)
    fd_vjp_check(lambda x_, w_, b_: ref_conv2d(x_, w_, b_, **kw), (x, w, b), g, (dx, dw, db), (0, 1, 2),
                 msg="conv2d_backward")


def test_conv2d_backward_unbatched_needs_and_transposed_layouts(rng):
    x, w = rng.standard_normal((3, 6, 5)), rng.standard_normal((2, 3, 3, 3))
    g = rng.standard_normal((2, 6, 5))
    dx, dw, db = conv2d_backward(A(g), A(x), A(w), padding=1)
    rx, rw, rb = ref_conv2d_backward(g[None], x[None], w, 1, 1, 1, 1)
    np.testing.assert_allclose(H(dx), rx[0], atol=1e-10)
    np.testing.assert_allclose(H(dw), rw, atol=1e-10)
    np.testing.assert_allclose(H(db), rb, atol=1e-10)
    only_w = conv2d_backward(A(g).mT.mT, A(np.swapaxes(x, 1, 2).copy()).mT, A(w), padding=1,
                             needs=(False, True, False))
    assert only_w[0] is None and only_w[2] is None
    np.testing.assert_allclose(H(only_w[1]), rw, atol=1e-10)


def test_conv1d_backward(rng):
    x, w, b = rng.standard_normal((2, 3, 9)), rng.standard_normal((3, 1, 3)), rng.standard_normal(3)
    kw = dict(stride=2, padding=1, dilation=2, groups=3)
    g = rng.standard_normal(ref_conv1d(x, w, b, **kw).shape)
    grads = tuple(H(a) for a in conv1d_backward(A(g), A(x), A(w), **kw))
    assert grads[0].shape == x.shape and grads[1].shape == w.shape
    np.testing.assert_allclose(grads[2], g.sum(axis=(0, 2)), atol=1e-12)
    fd_vjp_check(lambda x_, w_, b_: ref_conv1d(x_, w_, b_, **kw), (x, w, b), g, grads, (0, 1, 2), msg="conv1d")
    xs = rng.standard_normal((3, 7))  # unbatched, "same" with an even kernel
    ws = rng.standard_normal((2, 3, 4))
    gs = rng.standard_normal((2, 7))
    grads = tuple(H(a) for a in conv1d_backward(A(gs), A(xs), A(ws), padding="same", needs=(True, True, False)))
    assert grads[2] is None
    fd_vjp_check(lambda x_, w_: ref_conv1d(x_, w_, padding="same"), (xs, ws), gs, grads[:2], (0, 1), msg="same")


CONVT_CASES = [
    dict(xs=(2, 4, 3, 5), ws=(4, 3, 3, 3), stride=2, padding=1, output_padding=1, groups=1, dilation=1),
    dict(xs=(1, 4, 4, 4), ws=(4, 2, 3, 3), stride=1, padding=0, output_padding=0, groups=2, dilation=2),
    dict(xs=(1, 3, 3, 3), ws=(3, 1, 3, 3), stride=1, padding=1, output_padding=1, groups=3, dilation=2),
    dict(xs=(2, 2, 1, 4), ws=(2, 3, 1, 3), stride=(1, 3), padding=(0, 1), output_padding=(0, 2), groups=1,
         dilation=1),
]


@pytest.mark.parametrize("case", CONVT_CASES, ids=lambda c: f"{c['xs']}-{c['ws']}-s{c['stride']}-g{c['groups']}")
def test_conv_transpose2d_backward(case, rng):
    x, w, b = rng.standard_normal(case["xs"]), rng.standard_normal(case["ws"]), rng.standard_normal(
        case["ws"][1] * case["groups"])
    kw = {k: case[k] for k in ("stride", "padding", "output_padding", "groups", "dilation")}
    y = ref_conv_transpose2d(x, w, b, **kw)
    g = rng.standard_normal(y.shape)
    dx, dw, db = (H(a) for a in conv_transpose2d_backward(A(g), A(x), A(w), **kw))
    # dx is the forward convolution of the gradient with the same weight (cropped to the input size)
    rx = ref_conv2d(g, w, None, kw["stride"], kw["padding"], kw["dilation"], kw["groups"])
    np.testing.assert_allclose(dx, rx[:, :, :x.shape[2], :x.shape[3]], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), atol=1e-10)
    fd_vjp_check(lambda x_, w_, b_: ref_conv_transpose2d(x_, w_, b_, **kw), (x, w, b), g, (dx, dw, db), (0, 1, 2),
                 msg="conv_transpose2d_backward")


def test_conv_transpose1d_backward(rng):
    x, w = rng.standard_normal((2, 3, 5)), rng.standard_normal((3, 2, 3))
    kw = dict(stride=2, padding=1, output_padding=1)
    g = rng.standard_normal(ref_conv_transpose1d(x, w, **kw).shape)
    grads = tuple(H(a) for a in conv_transpose1d_backward(A(g), A(x), A(w), **kw))
    fd_vjp_check(lambda x_, w_: ref_conv_transpose1d(x_, w_, **kw), (x, w), g, grads[:2], (0, 1), msg="convT1d")
    np.testing.assert_allclose(grads[2], g.sum(axis=(0, 2)), atol=1e-12)


def test_conv_transpose_is_the_adjoint_of_conv(rng):
    x, w = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 2, 3, 3))
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    y = conv2d(A(x), A(w), **kw)
    z = rng.standard_normal(y.shape)
    back = conv_transpose2d(A(z), A(w), stride=2, padding=1, output_padding=(0, 1), groups=2)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(H(y) * z), np.sum(x * H(back)), rtol=1e-10)


def test_conv_same_padding_puts_the_odd_row_at_the_end(rng):
    x, w = rng.standard_normal((1, 1, 5, 5)), rng.standard_normal((1, 1, 4, 4))
    out = H(conv2d(A(x), A(w), padding="same"))
    explicit = ref_conv2d(np.pad(x, ((0, 0), (0, 0), (1, 2), (1, 2))), w)  # total 3: 1 before, 2 after
    np.testing.assert_allclose(out, explicit, atol=1e-12)
    assert H(conv2d(A(x), A(w), padding="valid")).shape == (1, 1, 2, 2)
    np.testing.assert_allclose(H(conv1d(A(x[0, :, 0]), A(w[:, :, 0]))), ref_conv2d(x[:, :, :1], w[:, :, :1])[0, :, 0],
                               atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_half_backward_computes_in_float32(dtype, rng):
    x, w = rng.uniform(-1, 1, (2, 3, 6, 6)), rng.uniform(-1, 1, (4, 3, 3, 3))
    g = rng.uniform(-1, 1, (2, 4, 6, 6))
    xs, ws, gs = (A(a, np.float32).astype(dtype) for a in (x, w, g))
    got = conv2d_backward(gs, xs, ws, padding=1)
    ref = ref_conv2d_backward(*(H(a) for a in (gs, xs, ws)), 1, 1, 1, 1)
    tol = 1e-3 if dtype == "float16" else 1.6e-2  # one rounding of a float32 result (sums of <= 72 products)
    for a, r in zip(got, ref):
        assert a.dtype == dtype
        np.testing.assert_allclose(H(a), r, rtol=tol, atol=tol * np.abs(r).max())


# -------------------------------------------------------------------------------------------------- pooling
def test_max_pool2d_backward(rng):
    x = rng.standard_normal((2, 3, 7, 9))
    for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, ceil_mode=True),
               dict(kernel_size=3, stride=1, dilation=2)):
        out, idx = max_pool2d(A(x), **kw, return_indices=True)
        _, ridx = ref_max_pool2d(x, **kw, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), ridx)
        g = rng.standard_normal(out.shape)
        dx = H(max_pool2d_backward(A(g), x.shape, idx, **kw))
        ref = np.zeros((6, 63))
        np.add.at(ref, (np.arange(6)[:, None], ridx.reshape(6, -1)), g.reshape(6, -1))  # overlapping windows add
        np.testing.assert_allclose(dx, ref.reshape(x.shape), atol=1e-12)
        fd_vjp_check(lambda x_, kw=kw: ref_max_pool2d(x_, **kw), (x,), g, (dx,), (0,), msg=f"max_pool2d {kw}")
    xu = rng.standard_normal((3, 5, 5))  # unbatched
    out, idx = max_pool2d(A(xu), 2, return_indices=True)
    g = rng.standard_normal(out.shape)
    dx = H(max_pool2d_backward(A(g), xu.shape, idx, 2))
    fd_vjp_check(lambda x_: ref_max_pool2d(x_, 2), (xu,), g, (dx,), (0,), msg="unbatched")


def test_max_pool2d_index_rules():
    x = np.array([[[[1.0, 3.0, 3.0], [0.0, -1.0, 2.0], [5.0, 5.0, 0.0]]]])
    out, idx = max_pool2d(A(x), 2, 1, return_indices=True)
    np.testing.assert_array_equal(out.numpy()[0, 0], [[3, 3], [5, 5]])
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[1, 1], [6, 7]])  # ties: the first in window order
    x[0, 0, 1, 1] = np.nan
    out, idx = max_pool2d(A(x), 2, 1, return_indices=True)
    assert np.isnan(out.numpy()).all() and (idx.numpy() == 4).all()  # NaN propagates and wins
    ninf = np.full((1, 1, 2, 2), -np.inf)
    out, idx = max_pool2d(A(ninf), 2, 2, padding=1, return_indices=True)
    assert (out.numpy() == -np.inf).all()
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[0, 1], [2, 3]])  # the first valid element, not padding
    assert idx.dtype == tk.int64


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=2, padding=1, divisor_override=3)], ids=str)
def test_avg_pool2d_backward(kw, rng):
    x = rng.standard_normal((2, 2, 7, 6))
    g = rng.standard_normal(ref_avg_pool2d(x, **kw).shape)
    dx = H(avg_pool2d_backward(A(g), x.shape, **kw))
    np.testing.assert_allclose(dx, linear_adjoint(lambda e: ref_avg_pool2d(e, **kw), x.shape, g), atol=1e-12)
    fd_vjp_check(lambda x_: ref_avg_pool2d(x_, **kw), (x,), g, (dx,), (0,), msg=f"avg_pool2d {kw}")


def test_avg_pool2d_divisor_rules():
    ones = np.ones((1, 1, 3, 3))
    np.testing.assert_allclose(H(avg_pool2d(A(ones), 2, 2, 1))[0, 0], [[0.25, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(H(avg_pool2d(A(ones), 2, 2, 1, count_include_pad=False))[0, 0], np.ones((2, 2)))
    ar = np.arange(16.0).reshape(1, 1, 4, 4)  # ceil_mode: the partial windows divide by their clipped size
    np.testing.assert_allclose(H(avg_pool2d(A(ar), 3, 2, ceil_mode=True))[0, 0], [[5.0, 6.5], [11.0, 12.5]])
    np.testing.assert_allclose(H(avg_pool2d(A(ar), 2, divisor_override=2))[0, 0], [[5.0, 9.0], [21.0, 25.0]])


@pytest.mark.parametrize("size", [(3, 4), 1, (5, None), (9, 11)], ids=str)
def test_adaptive_avg_pool2d_backward(size, rng):
    x = rng.standard_normal((2, 3, 7, 9))
    g = rng.standard_normal(ref_adaptive_avg_pool2d(x, size).shape)
    dx = H(adaptive_avg_pool2d_backward(A(g), x.shape))
    np.testing.assert_allclose(dx, linear_adjoint(lambda e: ref_adaptive_avg_pool2d(e, size), x.shape, g),
                               atol=1e-12)
    fd_vjp_check(lambda x_: ref_adaptive_avg_pool2d(x_, size), (x,), g, (dx,), (0,), msg=f"adaptive {size}")
    dxu = H(adaptive_avg_pool2d_backward(A(g[0]), x.shape[1:]))
    np.testing.assert_allclose(dxu, dx[0], atol=1e-12)


def test_adaptive_avg_pool2d_windows():
    x = np.arange(5.0).reshape(1, 1, 1, 5)  # windows [0, 2), [1, 4), [3, 5)
    np.testing.assert_allclose(H(adaptive_avg_pool2d(A(x), (1, 3)))[0, 0, 0], [0.5, 2.0, 3.5])


INTERP_CASES = [dict(size=(5, 13)), dict(scale_factor=1.5), dict(scale_factor=(2, 0.55)),
                dict(size=(10, 4), mode="nearest-exact"), dict(size=(10, 4), mode="bilinear"),
                dict(size=(10, 4), mode="bilinear", align_corners=True), dict(scale_factor=0.6, mode="bilinear"),
                dict(size=(3, 4), mode="area"), dict(scale_factor=2.5, mode="bilinear", recompute_scale_factor=True)]


@pytest.mark.parametrize("kw", INTERP_CASES, ids=str)
def test_interpolate_backward(kw, rng):
    x = rng.standard_normal((2, 2, 5, 7))
    g = rng.standard_normal(ref_interpolate(x, **kw).shape)
    dx = H(interpolate_backward(A(g), x.shape, **kw))
    np.testing.assert_allclose(dx, linear_adjoint(lambda e: ref_interpolate(e, **kw), x.shape, g), atol=1e-10)
    fd_vjp_check(lambda x_: ref_interpolate(x_, **kw), (x,), g, (dx,), (0,), msg=f"interpolate {kw}")


def test_interpolate_coordinate_rules():
    ar = np.arange(10.0).reshape(1, 1, 1, 10)
    # a given scale_factor is used as is (scale = 1 / 0.55), unless recompute_scale_factor
    np.testing.assert_array_equal(H(interpolate(A(ar), scale_factor=(1, 0.55)))[0, 0, 0], [0, 1, 3, 5, 7])
    np.testing.assert_array_equal(H(interpolate(A(ar), scale_factor=(1, 0.55), recompute_scale_factor=True))[0, 0, 0],
                                  [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(H(interpolate(A(ar), size=(1, 4), mode="nearest-exact"))[0, 0, 0], [1, 3, 6, 8])
    two = np.array([[[[0.0, 1.0]]]])
    np.testing.assert_allclose(H(interpolate(A(two), size=(1, 4), mode="bilinear"))[0, 0, 0], [0, 0.25, 0.75, 1])
    np.testing.assert_allclose(H(interpolate(A(two), size=(1, 4), mode="bilinear", align_corners=True))[0, 0, 0],
                               [0, 1 / 3, 2 / 3, 1])
    assert interpolate(A(ar, np.float32).astype("bfloat16"), scale_factor=2).dtype == tk.bfloat16


# ------------------------------------------------------------------------------------------------ attention
def ref_sdpa_backward(g, q, k, v, mask=None, scale=None):
    """The softmax-attention gradients, same batch shapes, boolean or no mask."""
    sc = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * sc
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * sc
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g


ATTN_CASES = [
    dict(qs=(2, 5, 8), ks=(2, 7, 8), vs=(2, 7, 8)),
    dict(qs=(2, 3, 4, 16), ks=(1, 3, 6, 16), vs=(3, 6, 16)),
    dict(qs=(2, 4, 8), ks=(2, 6, 8), vs=(2, 6, 5), mask="bool"),
    dict(qs=(2, 4, 8), ks=(2, 6, 8), vs=(2, 6, 8), mask="float"),
    dict(qs=(2, 6, 8), ks=(2, 4, 8), vs=(2, 4, 8), is_causal=True, scale=0.3),
    dict(qs=(1, 4, 3, 8), ks=(1, 2, 5, 8), vs=(1, 2, 5, 8), enable_gqa=True, mask="bool"),
]


@pytest.mark.parametrize("case", ATTN_CASES, ids=lambda c: f"{c['qs']}-{c['ks']}-{c.get('mask')}")
def test_sdpa_backward(case, rng):
    q, k, v = (rng.standard_normal(case[n]) for n in ("qs", "ks", "vs"))
    L, S = q.shape[-2], k.shape[-2]
    mask = None
    if case.get("mask") == "bool":
        mask = rng.random((L, S)) < 0.7
        mask[1] = False  # a fully masked row: zero output and zero gradients
    elif case.get("mask") == "float":
        mask = rng.standard_normal((1, L, S))
    kw = dict(is_causal=case.get("is_causal", False), scale=case.get("scale"), enable_gqa=case.get("enable_gqa", False))
    out, lse, state = scaled_dot_product_attention(A(q), A(k), A(v), None if mask is None else A(mask), **kw,
                                                   return_stats=True)
    ref_out, ref_lse = ref_sdpa(q, k, v, mask, **kw, stats=True)
    np.testing.assert_allclose(H(out), ref_out, atol=1e-12)
    np.testing.assert_allclose(H(lse), ref_lse, atol=1e-12)
    assert state is None and lse.dtype == tk.float64
    g = rng.standard_normal(out.shape)
    grads = scaled_dot_product_attention_backward(A(g), A(q), A(k), A(v), out, lse,
                                                  None if mask is None else A(mask), **kw)
    grads = tuple(H(a) for a in grads)
    assert [a.shape for a in grads] == [q.shape, k.shape, v.shape]
    if mask is not None and mask.dtype == bool and not kw["enable_gqa"]:
        np.testing.assert_allclose(grads[0][:, 1], 0)
        safe = mask.copy()
        safe[1] = True  # the reference formula needs finite rows; row 1's gradients are zero anyway
        live = mask.any(axis=-1)[:, None]
        rq, rk, rv = ref_sdpa_backward(np.where(live, g, 0), q, k, v, safe)
        for a, r in zip(grads, (rq, rk, rv)):
            np.testing.assert_allclose(a, r, atol=1e-10)
    if case.get("mask") is None and not kw["is_causal"] and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        for a, r in zip(grads, ref_sdpa_backward(g, q, k, v)):
            np.testing.assert_allclose(a, r, atol=1e-10)
    fd_vjp_check(lambda q_, k_, v_: ref_sdpa(q_, k_, v_, mask, **kw), (q, k, v), g, grads, (0, 1, 2),
                 msg=f"sdpa {case}")
    again = scaled_dot_product_attention_backward(A(g), A(q), A(k), A(v), out, None,
                                                  None if mask is None else A(mask), **kw, needs=(False, True, True))
    assert again[0] is None
    np.testing.assert_allclose(H(again[1]), grads[1], atol=1e-12)


def test_sdpa_plain_backward_formula(rng):
    q, k, v = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 7, 8)), rng.standard_normal((2, 7, 3))
    g = rng.standard_normal((2, 5, 3))
    out, lse, _ = scaled_dot_product_attention(A(q), A(k), A(v), return_stats=True)
    grads = scaled_dot_product_attention_backward(A(g), A(q), A(k), A(v), out, lse)
    for a, r in zip(grads, ref_sdpa_backward(g, q, k, v)):
        np.testing.assert_allclose(H(a), r, atol=1e-10)


def test_sdpa_causal_is_top_left_and_masks_agree(rng):
    q, k, v = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 4))
    causal = H(scaled_dot_product_attention(A(q), A(k), A(v), is_causal=True))
    tril = np.tril(np.ones((3, 5), bool))
    np.testing.assert_allclose(causal, H(scaled_dot_product_attention(A(q), A(k), A(v), A(tril))), atol=1e-12)
    additive = np.where(tril, 0.0, -np.inf)
    np.testing.assert_allclose(causal, H(scaled_dot_product_attention(A(q), A(k), A(v), A(additive))), atol=1e-12)
    np.testing.assert_allclose(causal[:, 0], v[:, 0], atol=1e-12)  # the first query sees the first key only
    full = np.zeros((3, 5), bool)
    out, lse, _ = scaled_dot_product_attention(A(q), A(k), A(v), A(full), return_stats=True)
    assert (H(out) == 0).all() and (H(lse) == -np.inf).all()  # PyTorch's math path (_safe_softmax): zeros


def test_sdpa_dropout(rng):
    q, k, v = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 6, 8)), rng.standard_normal((2, 6, 3))
    run = lambda p, seed: scaled_dot_product_attention(A(q), A(k), A(v), dropout_p=p,
                                                       generator=tk.random.Generator(seed), return_stats=True)
    a, lse, state = run(0.4, 7)
    b, _, _ = run(0.4, 7)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), run(0.4, 8)[0].numpy())
    np.testing.assert_allclose(H(lse), ref_sdpa(q, k, v, stats=True)[1], atol=1e-12)  # lse is before dropout
    assert (run(1.0, 7)[0].numpy() == 0).all()
    g = rng.standard_normal(a.shape)
    grads = tuple(H(t) for t in scaled_dot_product_attention_backward(A(g), A(q), A(k), A(v), a, lse, dropout_p=0.4,
                                                                      rng_state=state))
    # with the generator reseeded every call the mask is fixed, so the forward is smooth in q, k, v
    f = lambda q_, k_, v_: H(scaled_dot_product_attention(A(q_), A(k_), A(v_), dropout_p=0.4,
                                                          generator=tk.random.Generator(7)))
    fd_vjp_check(f, (q, k, v), g, grads, (0, 1, 2), msg="sdpa dropout")
    many = np.mean([H(scaled_dot_product_attention(A(q), A(k), A(v), dropout_p=0.5, generator=tk.random.Generator(s)))
                    for s in range(200)], axis=0)
    np.testing.assert_allclose(many, ref_sdpa(q, k, v), atol=0.25)  # inverted dropout keeps the mean


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_half_backward(dtype, rng):
    q, k, v = (A(rng.uniform(-1, 1, s), np.float32).astype(dtype) for s in ((2, 4, 8), (2, 6, 8), (2, 6, 8)))
    g = A(rng.uniform(-1, 1, (2, 4, 8)), np.float32).astype(dtype)
    out, lse, _ = scaled_dot_product_attention(q, k, v, return_stats=True)
    assert out.dtype == dtype and lse.dtype == tk.float32
    grads = scaled_dot_product_attention_backward(g, q, k, v, out, lse)
    ref = ref_sdpa_backward(*(H(a) for a in (g, q, k, v)))
    tol = 1e-3 if dtype == "float16" else 1.6e-2  # float32 math, one rounding of each result
    for a, r in zip(grads, ref):
        assert a.dtype == dtype
        np.testing.assert_allclose(H(a), r, rtol=tol, atol=tol * np.abs(r).max())
