"""The NumPy backend's convolutions against the previous implementation (pixel-major im2col, kept here as the
reference): equal within float32 rounding on random inputs at odd sizes, strides, padding (asymmetric "same"),
dilation, groups (depthwise), 1-D, transposed, non-contiguous inputs, batch 1, one channel, empty batch, float32
and float64; each in the layout its shape picks and forced into either of the two ("image" and "nhwc")."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import tkernels as tk
from tkernels.ops.conv import (
    conv1d,
    conv1d_backward,
    conv2d,
    conv2d_backward,
    conv_transpose2d,
    conv_transpose2d_backward,
)


# ------------------------------------------------------------------ the previous implementation (reference)
def _pad(x, top, bottom, left, right):
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))


def _cols(xp, g, kh, kw, s, d, ho, wo):
    n, c = xp.shape[:2]
    cg = c // g
    s0, s1, s2, s3 = xp.strides
    win = as_strided(xp, (n, g, cg, ho, wo, kh, kw),
                     (s0, s1 * cg, s1, s2 * s[0], s3 * s[1], s2 * d[0], s3 * d[1]), writeable=False)
    return win.transpose(1, 0, 3, 4, 2, 5, 6).reshape(g, n * ho * wo, cg * kh * kw)


def _grad_t(gr, g):
    n, o, ho, wo = gr.shape
    return gr.reshape(n, g, o // g, ho * wo).transpose(1, 2, 0, 3).reshape(g, o // g, n * ho * wo)


def _wmat(w, g):
    o, cg, kh, kw = w.shape
    return w.reshape(g, o // g, cg * kh * kw)


def _conv(xp, w, g, s, d, ho, wo, bias=None):
    n = xp.shape[0]
    o, _, kh, kw = w.shape
    y = np.matmul(_cols(xp, g, kh, kw, s, d, ho, wo), _wmat(w, g).transpose(0, 2, 1))
    if bias is not None:
        y = y + bias.reshape(g, 1, o // g)
    return y.reshape(g, n, ho, wo, o // g).transpose(1, 0, 4, 2, 3).reshape(n, o, ho, wo)


def _col2im(gt, w, g, s, d, canvas, crop, ho, wo):
    o, cg, kh, kw = w.shape
    n, c, hc, wc = canvas
    dcols = np.matmul(_wmat(w, g).transpose(0, 2, 1), gt).reshape(g, cg, kh, kw, n, ho, wo)
    acc = np.zeros((n, g, cg, hc, wc), dcols.dtype)
    he, we = s[0] * (ho - 1) + 1, s[1] * (wo - 1) + 1
    for i in range(kh):
        for j in range(kw):
            r, q = i * d[0], j * d[1]
            acc[:, :, :, r:r + he:s[0], q:q + we:s[1]] += dcols[:, :, i, j].transpose(2, 0, 1, 3, 4)
    t, left, h, wd = crop
    return acc.reshape(n, c, hc, wc)[:, :, t:t + h, left:left + wd]


def prev_conv2d(x, w, b, s, pads, d, g):
    pt, pb, pl, pr = pads
    ho = (x.shape[2] + pt + pb - d[0] * (w.shape[2] - 1) - 1) // s[0] + 1
    wo = (x.shape[3] + pl + pr - d[1] * (w.shape[3] - 1) - 1) // s[1] + 1
    return _conv(_pad(x, *pads), w, g, s, d, ho, wo, b)


def prev_conv2d_backward(gr, x, w, s, pads, d, g):
    n, _, ho, wo = gr.shape
    _, c, h, wd = x.shape
    gt = _grad_t(gr, g)
    pt, pb, pl, pr = pads
    dx = _col2im(gt, w, g, s, d, (n, c, h + pt + pb, wd + pl + pr), (pt, pl, h, wd), ho, wo)
    dw = np.matmul(gt, _cols(_pad(x, *pads), g, w.shape[2], w.shape[3], s, d, ho, wo)).reshape(w.shape)
    return dx, dw, gr.sum(axis=(0, 2, 3))


def prev_conv_transpose2d(x, w, b, s, p, op_, g, d):
    n, _, h, wd = x.shape
    c_out = w.shape[1] * g
    ho = (h - 1) * s[0] - 2 * p[0] + d[0] * (w.shape[2] - 1) + op_[0] + 1
    wo = (wd - 1) * s[1] - 2 * p[1] + d[1] * (w.shape[3] - 1) + op_[1] + 1
    res = _col2im(_grad_t(x, g), w, g, s, d, (n, c_out, ho + 2 * p[0], wo + 2 * p[1]), (p[0], p[1], ho, wo), h, wd)
    return res if b is None else res + b[:, None, None]


def prev_conv_transpose2d_backward(gr, x, w, s, p, g, d):
    _, _, h, wd = x.shape
    gp = _pad(gr, p[0], p[0], p[1], p[1])
    dx = _conv(gp, w, g, s, d, h, wd)
    dw = np.matmul(_grad_t(x, g), _cols(gp, g, w.shape[2], w.shape[3], s, d, h, wd)).reshape(w.shape)
    return dx, dw, gr.sum(axis=(0, 2, 3))


# ------------------------------------------------------------------------------------------------- tests
def _close(got, want, msg):
    """Equal within float rounding of sums of |terms|: scaled by the largest magnitude of the reference."""
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    eps = 1e-5 if np.float32 in (got.dtype, np.asarray(want).dtype) else 1e-12
    got, want = got.astype(np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, msg
    scale = max(np.abs(want).max(initial=0.0), 1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=eps * scale, err_msg=msg)


CASES = [  # (x shape, weight shape, stride, pads (t, b, l, r), dilation, groups)
    ((2, 3, 7, 9), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((3, 6, 11, 5), (9, 2, 3, 2), (2, 1), (0, 0, 2, 2), (2, 1), 3),
    ((1, 4, 9, 13), (4, 1, 5, 3), (3, 2), (2, 2, 1, 1), (1, 3), 4),
    ((2, 2, 6, 5), (3, 2, 4, 2), (1, 1), (1, 2, 0, 1), (1, 1), 1),  # "same" with an even kernel: asymmetric
    ((5, 1, 1, 1), (2, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 8, 12, 12), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # the ResNet-block shape, small
    ((2, 6, 9, 8), (4, 3, 3, 2), (1, 1), (2, 2, 1, 1), (2, 3), 2),  # stride 1: the input gradient as a conv
    ((1, 2, 5, 5), (2, 2, 2, 2), (1, 1), (2, 2, 2, 2), (1, 1), 1),  # padding > kernel - 1: col2im again
    ((2, 3, 5, 19), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # wide outputs
    ((2, 4, 6, 37), (6, 2, 3, 3), (1, 2), (0, 0, 1, 1), (1, 1), 2),
    ((0, 4, 5, 6), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),  # empty batch
    ((1, 1, 9, 7), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # batch 1, one channel, strided: col2im
    ((3, 6, 4, 3), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    ((2, 3, 4, 5), (4, 3, 1, 1), (1, 1), (1, 1, 2, 2), (1, 1), 1),  # 1x1 with padding: the padded chunks
    ((2, 4, 3, 3), (6, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 2),  # 1x1, no padding: the input as it lies
]


@pytest.fixture(params=["auto", "image", "nhwc", "auto-3-threads", "image-2-threads", "nhwc-2-threads"])
def layout(request, monkeypatch):
    """Each convolution in the layout the shape picks, and forced into each of the two layouts (in chunks); and
    each of them with its images split over 2 or 3 intra-op threads (``_threads.split``, whatever the size)."""
    from tkernels.backends.numpy import ops_conv

    kind, _, threads = request.param.partition("-")
    if kind != "auto":  # forced layouts also take the batch in chunks: 1 image, or a few and a rest
        monkeypatch.setattr(ops_conv, "_CHUNK_BYTES", 1)
        monkeypatch.setattr(ops_conv, "_CHUNK_MIN_PIXELS", 1 if kind == "image" else 50)
    if kind == "image":
        monkeypatch.setattr(ops_conv, "_NHWC_PIXELS", 0)
    elif kind == "nhwc":
        monkeypatch.setattr(ops_conv, "_NHWC_PIXELS", 1 << 30)
        monkeypatch.setattr(ops_conv, "_NHWC_MIN_K", 0)
    monkeypatch.setenv("TKERNELS_NUM_THREADS", threads.partition("-")[0] or "1")
    if threads:
        monkeypatch.setattr(ops_conv, "_SPLIT_MIN_MACS", 0)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}-g{c[5]}")
def test_conv2d_matches_the_previous_implementation(case, dtype, layout):
    xs, ws, s, pads, d, g = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    want = prev_conv2d(x, w, b, s, pads, d, g)
    if pads[0] == pads[1] and pads[2] == pads[3]:
        padding = (pads[0], pads[2])
    else:
        padding = "same"
    got = conv2d(tk.asarray(x), tk.asarray(w), tk.asarray(b), s, padding, d, g)
    _close(got, want, f"conv2d {case}")
    gr = rng.standard_normal(want.shape).astype(dtype)
    dx, dw, db = conv2d_backward(tk.asarray(gr), tk.asarray(x), tk.asarray(w), s, padding, d, g)
    rx, rw, rb = prev_conv2d_backward(gr, x, w, s, pads, d, g)
    _close(dx, rx, f"conv2d dx {case}")
    _close(dw, rw, f"conv2d dweight {case}")
    _close(db, rb, f"conv2d dbias {case}")


def test_conv2d_non_contiguous_inputs_match(layout):
    rng = np.random.default_rng(3)
    xb = rng.standard_normal((3, 10, 7, 8)).astype(np.float32)
    wb = rng.standard_normal((5, 3, 3, 6)).astype(np.float32)
    x = xb[::2, 1::2].transpose(0, 1, 3, 2)  # (2, 5, 8, 7), strided and transposed
    w = wb.transpose(1, 0, 2, 3)[:, :, :, ::2]  # (3, 5, 3, 3), strided
    want = prev_conv2d(x, w, None, (1, 2), (1, 1, 0, 0), (1, 1), 1)
    tx = tk.asarray(xb)[::2, 1::2].permute_dims((0, 1, 3, 2))
    tw = tk.asarray(wb).permute_dims((1, 0, 2, 3))[:, :, :, ::2]
    _close(conv2d(tx, tw, None, (1, 2), (1, 0)), want, "conv2d of strided views")
    gr = rng.standard_normal(want.shape).astype(np.float32)[:, ::-1]
    dx, dw, _ = conv2d_backward(tk.asarray(gr), tx, tw, (1, 2), (1, 0))
    rx, rw, _ = prev_conv2d_backward(np.ascontiguousarray(gr), x, w, (1, 2), (1, 1, 0, 0), (1, 1), 1)
    _close(dx, rx, "conv2d dx of strided views")
    _close(dw, rw, "conv2d dweight of strided views")


def test_conv1d_matches_the_previous_implementation(layout):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 17)).astype(np.float32)
    w = rng.standard_normal((6, 2, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    want = prev_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 0, 3, 3), (1, 2), 2)[:, :, 0]
    _close(conv1d(tk.asarray(x), tk.asarray(w), tk.asarray(b), 2, 3, 2, 2), want, "conv1d")
    gr = rng.standard_normal(want.shape).astype(np.float32)
    dx, dw, db = conv1d_backward(tk.asarray(gr), tk.asarray(x), tk.asarray(w), 2, 3, 2, 2)
    rx, rw, rb = prev_conv2d_backward(gr[:, :, None], x[:, :, None], w[:, :, None], (1, 2), (0, 0, 3, 3), (1, 2),
                                      2)
    _close(dx, rx[:, :, 0], "conv1d dx")
    _close(dw, rw[:, :, 0], "conv1d dweight")
    _close(db, rb, "conv1d dbias")


TCASES = [  # (x shape, weight shape (C_in, C_out/g, kh, kw), stride, padding, output_padding, groups, dilation)
    ((2, 4, 5, 6), (4, 3, 3, 3), (2, 2), (1, 1), (1, 0), 1, (1, 1)),
    ((1, 6, 7, 4), (6, 1, 2, 5), (1, 3), (0, 2), (0, 2), 3, (2, 1)),
    ((3, 2, 3, 3), (2, 2, 3, 3), (1, 1), (1, 1), (0, 0), 1, (1, 1)),
    ((2, 4, 5, 6), (4, 2, 3, 2), (1, 1), (1, 0), (1, 1), 2, (2, 2)),
    ((1, 2, 4, 4), (2, 3, 2, 2), (1, 1), (2, 2), (0, 0), 1, (1, 1)),  # padding > kernel - 1: col2im
    ((1, 2, 3, 17), (2, 2, 3, 3), (2, 1), (1, 1), (1, 0), 1, (1, 1)),  # wide inputs
    ((1, 2, 3, 18), (2, 3, 3, 2), (1, 1), (0, 1), (0, 0), 1, (1, 1)),
    ((0, 4, 3, 3), (4, 2, 3, 3), (2, 2), (1, 1), (1, 1), 2, (1, 1)),  # empty batch
]


@pytest.mark.parametrize("case", TCASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}-g{c[5]}")
def test_conv_transpose2d_matches_the_previous_implementation(case, layout):
    xs, ws, s, p, op_, g, d = case
    rng = np.random.default_rng(11)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[1] * g).astype(np.float32)
    want = prev_conv_transpose2d(x, w, b, s, p, op_, g, d)
    got = conv_transpose2d(tk.asarray(x), tk.asarray(w), tk.asarray(b), s, p, op_, g, d)
    _close(got, want, f"conv_transpose2d {case}")
    gr = rng.standard_normal(want.shape).astype(np.float32)
    dx, dw, db = conv_transpose2d_backward(tk.asarray(gr), tk.asarray(x), tk.asarray(w), s, p, op_, g, d)
    rx, rw, rb = prev_conv_transpose2d_backward(gr, x, w, s, p, g, d)
    _close(dx, rx, f"conv_transpose2d dx {case}")
    _close(dw, rw, f"conv_transpose2d dweight {case}")
    _close(db, rb, f"conv_transpose2d dbias {case}")


# ------------------------------------------------- max pooling (planes-last for small planes, NCHW for large since)
def prev_max_pool2d(xv, k, s, p, d, ho, wo):
    """The previous NCHW loop over kernel offsets (values and PyTorch's flat indices)."""
    n, c, h, w = xv.shape
    hc = max(h + 2 * p[0], (ho - 1) * s[0] + d[0] * (k[0] - 1) + 1)
    wc = max(w + 2 * p[1], (wo - 1) * s[1] + d[1] * (k[1] - 1) + 1)
    xp = np.full((n, c, hc, wc), -np.inf, xv.dtype)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = xv
    best = np.full((n, c, ho, wo), -np.inf, xv.dtype)
    r0 = np.arange(ho)[:, None] * s[0] - p[0]
    c0 = np.arange(wo)[None, :] * s[1] - p[1]
    arg = np.empty((n, c, ho, wo), np.int64)
    arg[...] = np.where(r0 < 0, r0 % d[0], r0) * w + np.where(c0 < 0, c0 % d[1], c0)
    for i in range(k[0]):
        for j in range(k[1]):
            v = xp[:, :, i * d[0]:i * d[0] + s[0] * (ho - 1) + 1:s[0], j * d[1]:j * d[1] + s[1] * (wo - 1) + 1:s[1]]
            upd = (v > best) | np.isnan(v)
            np.copyto(best, v, where=upd)
            np.copyto(arg, (r0 + i * d[0]) * w + (c0 + j * d[1]), where=upd)
    return best, arg


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), ceil_mode=True),
                                dict(kernel_size=3, stride=1, padding=1, dilation=1),
                                dict(kernel_size=(12, 11), stride=1, padding=(2, 3)),  # > 127 offsets
                                dict(kernel_size=(3, 2)), dict(kernel_size=(2, 4), stride=(2, 4)),
                                dict(kernel_size=(9, 8)), dict(kernel_size=3, ceil_mode=True)], ids=str)
@pytest.mark.parametrize("layout", ["planes-last", "nchw", "tiled"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "transposed-view"])
def test_max_pool2d_matches_the_previous_implementation(kw, layout, strided, monkeypatch):
    from tkernels.backends.numpy import ops_pooling
    from tkernels.ops.pooling import max_pool2d

    # "tiled" (stride = kernel, no padding or dilation, windows inside the input) is taken where it applies
    # and the planes are large; the other two force the offset loop in either layout
    monkeypatch.setattr(ops_pooling, "_PLANES_LAST_MAX", 1 << 30 if layout == "planes-last" else 0)
    monkeypatch.setattr(ops_pooling, "_TILED", layout == "tiled")

    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 5, 9, 8)).astype(np.float32)
    x[0, 0, :3, :3] = -np.inf  # windows of -inf only: the first valid element
    x[1, 2, 4, 4] = x[1, 2, 4, 5] = np.nan  # NaN wins, the later one
    x[1, 3, 0, :] = np.nan  # several NaN in a window, in both of its rows
    x[1, 3, 1, 1:3] = np.nan
    x[2, 1] = np.round(x[2, 1])  # ties: the first
    x[2, 2] = np.round(x[2, 2] * 0.5)
    xa = tk.asarray(x)
    if strided:  # the same values in a non-contiguous view (channels-last memory)
        xa = tk.asarray(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute_dims((0, 3, 1, 2))
        assert not xa.numpy().flags.c_contiguous
    out, idx = max_pool2d(xa, return_indices=True, **kw)
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    s = kw.get("stride", k)
    s = s if isinstance(s, tuple) else (s, s)
    p, d = kw.get("padding", 0), kw.get("dilation", 1)
    p, d = (p, p) if isinstance(p, int) else p, (d, d) if isinstance(d, int) else d
    want, warg = prev_max_pool2d(x, k, s, p, d, *out.shape[2:])
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), warg)
    np.testing.assert_array_equal(max_pool2d(xa, **kw).numpy(), want)


@pytest.mark.parametrize("shape, dtype", [((2, 3, 20, 18), "float32"), ((2, 3, 20, 18), "float16"),
                                          ((0, 3, 20, 18), "float32"), ((1, 1, 17, 33), "float64")], ids=str)
def test_max_pool2d_tiled_by_default_matches_the_previous_implementation(shape, dtype):
    """Without forcing a layout: planes over _PLANES_LAST_MAX pixels with stride = kernel take the tiled path,
    with and without indices (half dtypes through float32, an empty batch, windows that leave rows and columns
    out)."""
    from tkernels.backends.numpy import ops_pooling
    from tkernels.ops.pooling import max_pool2d

    assert ops_pooling._TILED and shape[2] * shape[3] > ops_pooling._PLANES_LAST_MAX
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(dtype)
    if x.size:
        x[0, 0, 1, 1] = np.nan
    for k in (2, (3, 4)):
        kk = (k, k) if isinstance(k, int) else k
        out, idx = max_pool2d(tk.asarray(x), k, return_indices=True)
        ho, wo = shape[2] // kk[0], shape[3] // kk[1]
        xc = x.astype(np.float32) if dtype == "float16" else x  # half dtypes compute in float32
        want, warg = prev_max_pool2d(xc, kk, kk, (0, 0), (1, 1), ho, wo)
        assert out.shape == idx.shape == shape[:2] + (ho, wo)
        np.testing.assert_array_equal(out.numpy(), want.astype(dtype))
        np.testing.assert_array_equal(idx.numpy(), warg)
        np.testing.assert_array_equal(max_pool2d(tk.asarray(x), k).numpy(), want.astype(dtype))


def prev_max_pool2d_backward(g, idx, shape):
    """The previous float64 bincount of the gradient at the flat indices (repeated ones accumulate)."""
    n, c, h, w = shape
    flat = idx.reshape(n * c, -1) + (np.arange(n * c) * (h * w))[:, None]
    return np.bincount(flat.ravel(), g.astype(np.float64).ravel(), minlength=n * c * h * w).reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=str)
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)], ids=str)
def test_max_pool2d_backward_matches_the_previous_implementation(kw, dtype):
    from tkernels.ops.pooling import max_pool2d, max_pool2d_backward

    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 7, 6)).astype(dtype)
    x[0, 0] = 1.0  # ties: one winner per window, so overlapping windows repeat indices
    _, idx = max_pool2d(tk.asarray(x), return_indices=True, **kw)
    g = rng.standard_normal(idx.shape).astype(dtype)
    got = max_pool2d_backward(tk.asarray(g), x.shape, idx, **kw)
    assert got.dtype == tk.asarray(x).dtype
    want = prev_max_pool2d_backward(g, idx.numpy(), x.shape)
    if dtype == np.float16:
        np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=2e-3, atol=2e-3)
    else:
        _close(got, want.astype(dtype), f"max_pool2d_backward {kw}")


# ------------------------------------------------------------------------ batch norm (in-place passes since)
def prev_batch_norm(a, rm, rv, w, b, training, momentum, eps):
    """The previous formulas on (N, C, S) values; returns (out, mean, invstd, new rm, new rv)."""
    if training:
        cnt = a.shape[0] * a.shape[2]
        mu = a.mean(axis=(0, 2))
        xc = a - mu[:, None]
        var = (xc * xc).mean(axis=(0, 2))
        invstd = 1.0 / np.sqrt(var + a.dtype.type(eps))
        rm = (1 - momentum) * rm + momentum * mu
        rv = (1 - momentum) * rv + momentum * var * (cnt / (cnt - 1))
    else:
        mu, invstd = rm, 1.0 / np.sqrt(rv + a.dtype.type(eps))
        xc = a - mu[:, None]
    scale = invstd if w is None else invstd * w
    xc = xc * scale[:, None]
    if b is not None:
        xc += b[:, None]
    return xc, mu, invstd, rm, rv


def prev_batch_norm_backward(g, a, w, mu, invstd, training):
    xhat = (a - mu[:, None]) * invstd[:, None]
    dw = (g * xhat).sum(axis=(0, 2))
    scale = invstd if w is None else invstd * w
    if training:
        d = g - g.mean(axis=(0, 2))[:, None]
        d -= xhat * (g * xhat).mean(axis=(0, 2))[:, None]
    else:
        d = g.copy()
    return d * scale[:, None], dw, g.sum(axis=(0, 2))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype,affine", [(np.float32, True), (np.float64, True), (np.float32, False),
                                          (np.float16, True)], ids=str)
def test_batch_norm_matches_the_previous_implementation(training, dtype, affine):
    from tkernels.ops.normalization import batch_norm, batch_norm_backward

    rng = np.random.default_rng(9)
    x = (rng.standard_normal((5, 3, 7, 6)) * 3 + 2).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    cd = np.float64 if dtype == np.float64 else np.float32
    rm0 = rng.standard_normal(3).astype(cd)
    rv0 = rng.uniform(0.5, 2, 3).astype(cd)
    w = rng.standard_normal(3).astype(cd) if affine else None
    b = rng.standard_normal(3).astype(cd) if affine else None
    trm, trv = tk.asarray(rm0.copy()), tk.asarray(rv0.copy())
    out, sm, si = batch_norm(tk.asarray(x), trm, trv, None if w is None else tk.asarray(w),
                             None if b is None else tk.asarray(b), training, 0.1, 1e-5, return_stats=True)
    a = x.astype(cd).reshape(5, 3, -1)
    want, mu, invstd, rm, rv = prev_batch_norm(a, rm0, rv0, w, b, training, 0.1, 1e-5)
    # the per-channel sums are GEMVs / dot products now (numpy's pairwise sums before): equal to rounding
    if dtype == np.float16:
        np.testing.assert_allclose(out.numpy().astype(cd), want.astype(dtype).astype(cd).reshape(x.shape),
                                   rtol=1e-3, atol=1e-3)
    else:
        _close(out, want.reshape(x.shape), "batch_norm out")
    rtol = 1e-12 if cd == np.float64 else 1e-6
    np.testing.assert_allclose(trm.numpy(), rm, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(trv.numpy(), rv, rtol=rtol)
    if training:
        np.testing.assert_allclose(sm.numpy(), mu, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(si.numpy(), invstd, rtol=rtol)
    dx, dw, db = batch_norm_backward(tk.asarray(g), tk.asarray(x), None if w is None else tk.asarray(w),
                                     tk.asarray(rm0), tk.asarray(rv0), sm if training else None,
                                     si if training else None, training, 1e-5)
    rx, rw, rb = prev_batch_norm_backward(g.astype(cd).reshape(5, 3, -1), a, w, mu, invstd, training)
    _close(dx, rx.astype(dtype).reshape(x.shape), "batch_norm dx")
    if affine:
        _close(dw, rw, "batch_norm dweight")
        _close(db, rb, "batch_norm dbias")
