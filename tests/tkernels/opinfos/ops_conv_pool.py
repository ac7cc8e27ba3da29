"""OpInfos of tkernels.ops convolution, pooling, resizing and attention (forward entries).

The references below are written from PyTorch's definitions (its index formulas transcribed, direct loops over
output positions in float64), independently of the implementation; the backward tests reuse them.

Tolerances: the harness hands each reference the very values the op received (float16/bfloat16 upcast
exactly to float32), so an op computing in float32 differs from it only by float32 accumulation (about
1e-6 here: at most 75 products of magnitude <= 1) and by the final rounding to the half dtype (at most
2**-11 relative for float16, 2**-8 for bfloat16). PyTorch's default tolerances (float16 rtol 1e-3, bfloat16
rtol 1.6e-2, atol 1e-5) cover both; atol is raised to 1e-4 for float16/bfloat16 results that pass through
a softmax or long sums, whose near-zero outputs carry float32 accumulation error of a few 1e-6 before rounding.
"""

import numpy as np

from tkernels.ops.attention import scaled_dot_product_attention
from tkernels.ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
from tkernels.ops.pooling import adaptive_avg_pool2d, avg_pool2d, interpolate, max_pool2d

from ..harness import FLOATS, OpInfo, Sample, make

HALF_TOLS = {"float16": (1e-3, 1e-4), "bfloat16": (1.6e-2, 1e-4)}


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _f64(*arrays):
    return [None if a is None else np.asarray(a, np.float64) for a in arrays]


# ------------------------------------------------------------------------------------------------ references
def ref_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct cross-correlation: a loop over output positions and groups."""
    x, w, b = _f64(x, w, b)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    o, cg, kh, kw = w.shape
    s, d = _pair(stride), _pair(dilation)
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":  # PyTorch: total d * (k - 1), the odd one on the bottom/right
        th, tw = d[0] * (kh - 1), d[1] * (kw - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    else:
        p = _pair(padding)
        pads = (p[0], p[0], p[1], p[1])
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    n, _, hp, wp = xp.shape
    ho, wo = (hp - d[0] * (kh - 1) - 1) // s[0] + 1, (wp - d[1] * (kw - 1) - 1) // s[1] + 1
    og = o // groups
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * s[0]:i * s[0] + d[0] * (kh - 1) + 1:d[0], j * s[1]:j * s[1] + d[1] * (kw - 1) + 1:d[1]]
            for g in range(groups):
                out[:, g * og:(g + 1) * og, i, j] = np.einsum("nckl,ockl->no", patch[:, g * cg:(g + 1) * cg],
                                                              w[g * og:(g + 1) * og])
    if b is not None:
        out += b[:, None, None]
    return out[0] if unbatched else out


def ref_conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    s, d = (1, _pair(stride)[0]), (1, _pair(dilation)[0])
    p = padding if isinstance(padding, str) else (0, _pair(padding)[0])
    return ref_conv2d(x[..., None, :], np.asarray(w)[:, :, None, :], b, s, p, d, groups)[..., 0, :]


def ref_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The scatter definition: every input pixel adds its kernel-weighted contribution to the output."""
    x, w, b = _f64(x, w, b)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    s, p, op, d = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    full = ((h - 1) * s[0] + d[0] * (kh - 1) + 1, (wd - 1) * s[1] + d[1] * (kw - 1) + 1)
    ho, wo = full[0] - 2 * p[0] + op[0], full[1] - 2 * p[1] + op[1]
    canvas = np.zeros((n, cog * groups, max(full[0], p[0] + ho), max(full[1], p[1] + wo)))
    cig = cin // groups
    for i in range(h):
        for j in range(wd):
            for g in range(groups):
                contrib = np.einsum("nc,cokl->nokl", x[:, g * cig:(g + 1) * cig, i, j], w[g * cig:(g + 1) * cig])
                canvas[:, g * cog:(g + 1) * cog, i * s[0]:i * s[0] + d[0] * (kh - 1) + 1:d[0],
                       j * s[1]:j * s[1] + d[1] * (kw - 1) + 1:d[1]] += contrib
    out = canvas[:, :, p[0]:p[0] + ho, p[1]:p[1] + wo]
    if b is not None:
        out = out + b[:, None, None]
    return out[0] if unbatched else out


def ref_conv_transpose1d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return ref_conv_transpose2d(x[..., None, :], np.asarray(w)[:, :, None, :], b, (1, stride), (0, padding),
                                (0, output_padding), groups, (1, dilation))[..., 0, :]


def pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def ref_max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """PyTorch's CPU loop: scan each window in row-major order, keep `val > max or isnan(val)`."""
    x = np.asarray(x, np.float64)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    k, p, d = _pair(kernel_size), _pair(padding), _pair(dilation)
    s = k if stride is None else _pair(stride)
    n, c, h, w = x.shape
    ho, wo = pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), pool_out(w, k[1], s[1], p[1], d[1], ceil_mode)
    out = np.empty((n, c, ho, wo))
    idx = np.empty((n, c, ho, wo), np.int64)
    for i in range(ho):
        for j in range(wo):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + (k[0] - 1) * d[0] + 1, h), min(ws + (k[1] - 1) * d[1] + 1, w)
            while hs < 0:
                hs += d[0]
            while ws < 0:
                ws += d[1]
            best = np.full((n, c), -np.inf)
            arg = np.full((n, c), hs * w + ws)
            for r in range(hs, he, d[0]):
                for q in range(ws, we, d[1]):
                    v = x[:, :, r, q]
                    upd = (v > best) | np.isnan(v)
                    best = np.where(upd, v, best)
                    arg = np.where(upd, r * w + q, arg)
            out[:, :, i, j], idx[:, :, i, j] = best, arg
    if unbatched:
        out, idx = out[0], idx[0]
    return (out, idx) if return_indices else out


def ref_avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                   divisor_override=None):
    """PyTorch's avg_pool2d CPU loop, divisor rules included."""
    x = np.asarray(x, np.float64)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    k, p = _pair(kernel_size), _pair(padding)
    s = k if stride is None else _pair(stride)
    n, c, h, w = x.shape
    ho, wo = pool_out(h, k[0], s[0], p[0], 1, ceil_mode), pool_out(w, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + k[0], h + p[0]), min(ws + k[1], w + p[1])
            pool_size = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            if hs >= he or ws >= we:
                continue
            total = x[:, :, hs:he, ws:we].sum(axis=(2, 3))
            div = divisor_override or (pool_size if count_include_pad else (he - hs) * (we - ws))
            out[:, :, i, j] = total / div
    return out[0] if unbatched else out


def ref_adaptive_avg_pool2d(x, output_size):
    x = np.asarray(x, np.float64)
    h, w = x.shape[-2:]
    os_ = output_size if isinstance(output_size, tuple | list) else (output_size, output_size)
    ho, wo = (h if os_[0] is None else os_[0]), (w if os_[1] is None else os_[1])
    out = np.zeros(x.shape[:-2] + (ho, wo))
    for i in range(ho):
        h0, h1 = (i * h) // ho, -(-((i + 1) * h) // ho)
        for j in range(wo):
            w0, w1 = (j * w) // wo, -(-((j + 1) * w) // wo)
            out[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


def _src_scale(n, o, scale_factor):
    """PyTorch's compute_scales_value: 1 / scale_factor when given, else in / out."""
    return (1.0 / scale_factor) if scale_factor else n / o


def ref_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                    recompute_scale_factor=None):
    """PyTorch's upsample CPU kernels, one output pixel at a time."""
    t = np.float64 if np.asarray(x).dtype == np.float64 else np.float32  # PyTorch's opmath type
    x = np.asarray(x, np.float64)
    h, w = x.shape[2:]
    if size is not None:
        ho, wo = _pair(size)
        sf = (None, None)
    else:
        sf = _pair(scale_factor) if isinstance(scale_factor, tuple | list) else (scale_factor, scale_factor)
        ho, wo = int(np.floor(h * sf[0])), int(np.floor(w * sf[1]))
        if recompute_scale_factor:
            sf = (None, None)
    if mode == "area":
        return ref_adaptive_avg_pool2d(x, (ho, wo))

    def nearest(dst, n, o, f):
        if mode == "nearest":
            if o == n:
                return dst
            if o == 2 * n:
                return dst >> 1
            sc = np.float32(_src_scale(n, o, f)) if f else np.float32(n) / np.float32(o)
            return min(int(np.floor(np.float32(dst) * sc)), n - 1)
        sc = np.float32(_src_scale(n, o, f)) if f else np.float32(n) / np.float32(o)
        return min(int(np.floor(np.float32((dst + 0.5) * float(sc)))), n - 1)

    def linear(dst, n, o, f):
        if align_corners:
            sc = t(n - 1) / t(o - 1) if o > 1 else t(0)
            src = sc * t(dst)
        else:
            sc = t(_src_scale(n, o, f)) if f else t(n) / t(o)
            src = max(sc * (t(dst) + t(0.5)) - t(0.5), t(0))
        i0 = min(int(np.floor(src)), n - 1)
        lam = min(max(float(src) - i0, 0.0), 1.0)
        return i0, min(i0 + 1, n - 1), lam

    out = np.zeros(x.shape[:2] + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            if mode in ("nearest", "nearest-exact"):
                out[:, :, i, j] = x[:, :, nearest(i, h, ho, sf[0]), nearest(j, w, wo, sf[1])]
            else:
                a0, a1, lh = linear(i, h, ho, sf[0])
                b0, b1, lw = linear(j, w, wo, sf[1])
                out[:, :, i, j] = ((1 - lh) * ((1 - lw) * x[:, :, a0, b0] + lw * x[:, :, a0, b1])
                                   + lh * ((1 - lw) * x[:, :, a1, b0] + lw * x[:, :, a1, b1]))
    return out


def ref_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, stats=False):
    """PyTorch's math path (with _safe_softmax: fully masked rows give zeros); stats adds the row logsumexp."""
    q, k, v = _f64(q, k, v)
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    sc = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * sc
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    masked = np.all(s == -np.inf, axis=-1, keepdims=True)
    m = np.where(masked, 0, s.max(axis=-1, keepdims=True))
    e = np.exp(s - m)
    p = np.where(masked, 0, e / np.where(masked, 1, e.sum(axis=-1, keepdims=True)))
    out = p @ v
    if not stats:
        return out
    with np.errstate(divide="ignore"):
        return out, (np.log(e.sum(axis=-1, keepdims=True)) + m)[..., 0]


# --------------------------------------------------------------------------------------------------- samples
def _conv_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype, low=-1, high=1)
    yield Sample((m(2, 3, 7, 9), m(4, 3, 3, 3), m(4)), {"padding": 1}, "3x3 pad 1 bias")
    yield Sample((m(1, 1, 1, 1), m(2, 1, 1, 1), m(2)), {}, "1x1 input and kernel")
    yield Sample((m(2, 4, 9, 7), m(6, 2, 3, 3)), {"stride": 2, "dilation": 2, "groups": 2}, "groups 2 dilation 2")
    yield Sample((m(2, 3, 7, 7), m(3, 1, 5, 5), m(3)), {"padding": 2, "groups": 3}, "depthwise 5x5")
    yield Sample((m(1, 2, 5, 6), m(3, 2, 4, 2)), {"padding": "same"}, "same, even kernel (asymmetric)")
    yield Sample((m(1, 2, 7, 5), m(2, 2, 3, 3)), {"padding": "same", "dilation": 2}, "same, dilation 2")
    yield Sample((m(2, 3, 9, 9), m(2, 3, 5, 5)), {"stride": (2, 1), "padding": (2, 0)}, "pairs")
    yield Sample((m(1, 3, 7, 7), m(2, 3, 3, 3)), {"padding": "valid", "stride": 2}, "valid stride 2")
    yield Sample((m(3, 7, 9), m(2, 3, 3, 3), m(2)), {"padding": 1}, "unbatched")
    yield Sample((m(0, 3, 5, 5), m(4, 3, 3, 3)), {}, "empty batch")


def _conv1d_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype, low=-1, high=1)
    yield Sample((m(2, 3, 9), m(4, 3, 3), m(4)), {"padding": 1})
    yield Sample((m(3, 7), m(2, 3, 4)), {"padding": "same"}, "unbatched same even kernel")
    yield Sample((m(2, 3, 9), m(3, 1, 3)), {"stride": 2, "dilation": 2, "groups": 3})


def _convt_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype, low=-1, high=1)
    yield Sample((m(2, 4, 3, 5), m(4, 3, 3, 3), m(3)), {"stride": 2, "padding": 1, "output_padding": 1})
    yield Sample((m(1, 4, 4, 4), m(4, 2, 3, 3)), {"groups": 2, "dilation": 2})
    yield Sample((m(3, 2, 2), m(3, 2, 1, 1), m(2)), {}, "unbatched 1x1")
    yield Sample((m(1, 2, 1, 7), m(2, 1, 1, 3)), {"stride": (1, 3), "output_padding": (0, 2)}, "H 1")
    yield Sample((m(1, 3, 3, 3), m(3, 1, 3, 3)), {"stride": 1, "padding": 1, "output_padding": 1, "dilation": 2,
                                                  "groups": 3}, "depthwise, output_padding < dilation")


def _convt1d_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype, low=-1, high=1)
    yield Sample((m(2, 3, 5), m(3, 2, 3), m(2)), {"stride": 2, "padding": 1, "output_padding": 1})
    yield Sample((m(3, 4), m(3, 1, 2)), {"groups": 3}, "unbatched depthwise")


def _max_pool_samples(return_indices):
    def gen(rng, dtype):
        m = lambda *s: make(rng, s, dtype)
        kw = {"return_indices": True} if return_indices else {}
        yield Sample((m(2, 3, 7, 9), 3, 2, 1), kw, "3x3 stride 2 pad 1")
        yield Sample((m(1, 2, 7, 7), 2), dict(kw, ceil_mode=True), "ceil_mode partial window")
        yield Sample((m(1, 2, 7, 7), 3, 2, 1), dict(kw, ceil_mode=True), "ceil_mode with padding")
        yield Sample((m(2, 1, 9, 9), 3, 1, 0, 2), kw, "dilation 2")
        yield Sample((m(3, 5, 5), (2, 3), (1, 2)), kw, "unbatched, pairs")
        yield Sample((m(1, 2, 1, 7), (1, 3)), kw, "H 1")
        yield Sample((m(1, 1, 1, 1), 1), kw, "1x1")

    return gen


def _avg_pool_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype)
    yield Sample((m(2, 3, 7, 9), 3, 2, 1), {}, "3x3 stride 2 pad 1")
    yield Sample((m(2, 3, 7, 9), 3, 2, 1), {"count_include_pad": False})
    yield Sample((m(1, 2, 7, 7), 3, 2, 1), {"ceil_mode": True})
    yield Sample((m(1, 2, 7, 7), 3, 2, 1), {"ceil_mode": True, "count_include_pad": False})
    yield Sample((m(1, 2, 8, 7), 2), {"ceil_mode": True}, "ceil_mode, no padding")
    yield Sample((m(1, 2, 5, 5), 3, 1, 1), {"divisor_override": 5})
    yield Sample((m(3, 5, 7), (2, 3)), {}, "unbatched, pairs")
    yield Sample((m(1, 1, 1, 1), 1), {}, "1x1")


def _adaptive_samples(rng, dtype):
    for size in ((3, 4), (5, None), 1, (7, 9), (10, 11), (2, 1)):
        yield Sample((make(rng, (2, 3, 7, 9), dtype), size), {}, f"to {size}")
    yield Sample((make(rng, (3, 5, 5), dtype), 3), {}, "unbatched")


def _interp_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype)
    x = m(2, 3, 7, 9)
    yield Sample((x, (5, 13)), {}, "nearest size")
    yield Sample((x,), {"scale_factor": 1.5}, "nearest scale 1.5")
    yield Sample((m(1, 2, 1, 10),), {"scale_factor": (2, 0.55)}, "nearest 2x and scale 0.55 (1/scale used)")
    yield Sample((m(1, 2, 1, 10),), {"scale_factor": (1, 0.55), "recompute_scale_factor": True}, "recomputed scale")
    yield Sample((x, (10, 5)), {"mode": "nearest-exact"})
    yield Sample((x,), {"scale_factor": 1.7, "mode": "nearest-exact"})
    for ac in (None, False, True):
        yield Sample((x, (10, 5)), {"mode": "bilinear", "align_corners": ac}, f"bilinear align_corners={ac}")
    yield Sample((x,), {"scale_factor": 0.6, "mode": "bilinear"}, "bilinear scale 0.6")
    yield Sample((x,), {"scale_factor": (2.5, 1.3), "mode": "bilinear", "align_corners": True})
    yield Sample((m(1, 2, 1, 1), (1, 3)), {"mode": "bilinear", "align_corners": True}, "1x1 input")
    yield Sample((x, (1, 1)), {"mode": "bilinear", "align_corners": True}, "1x1 output")
    yield Sample((x, (3, 4)), {"mode": "area"})


def _attn_samples(rng, dtype):
    m = lambda *s: make(rng, s, dtype, low=-2, high=2)
    yield Sample((m(2, 5, 8), m(2, 7, 8), m(2, 7, 8)), {}, "L != S")
    yield Sample((m(2, 3, 4, 16), m(1, 3, 6, 16), m(3, 6, 16)), {}, "batch dims broadcast, E 16")
    yield Sample((m(2, 4, 8), m(2, 6, 8), m(2, 6, 5)), {"attn_mask": rng.random((4, 6)) < 0.7}, "bool mask")
    full = rng.random((2, 4, 6)) < 0.6
    full[0, 1] = False
    yield Sample((m(2, 4, 8), m(2, 6, 8), m(2, 6, 8)), {"attn_mask": full}, "a fully masked row")
    yield Sample((m(2, 4, 8), m(2, 6, 8), m(2, 6, 8)), {"attn_mask": m(1, 4, 6)}, "additive mask")
    yield Sample((m(1, 2, 4, 8), m(1, 2, 6, 8), m(1, 2, 6, 8)), {"is_causal": True}, "causal L < S")
    yield Sample((m(2, 6, 16), m(2, 4, 16), m(2, 4, 8)), {"is_causal": True, "scale": 0.3}, "causal L > S")
    yield Sample((m(1, 4, 3, 8), m(1, 2, 5, 8), m(1, 2, 5, 8)), {"enable_gqa": True}, "GQA")
    yield Sample((m(1, 8), m(1, 8), m(1, 3)), {}, "L = S = 1")


OP_INFOS = [
    OpInfo("ops.conv2d", conv2d, ref_conv2d, _conv_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.conv1d", conv1d, ref_conv1d, _conv1d_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.conv_transpose2d", conv_transpose2d, ref_conv_transpose2d, _convt_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.conv_transpose1d", conv_transpose1d, ref_conv_transpose1d, _convt1d_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.max_pool2d", max_pool2d, ref_max_pool2d, _max_pool_samples(False), FLOATS),
    OpInfo("ops.max_pool2d_indices", max_pool2d, ref_max_pool2d, _max_pool_samples(True), FLOATS,
           differentiable=False),
    OpInfo("ops.avg_pool2d", avg_pool2d, ref_avg_pool2d, _avg_pool_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.adaptive_avg_pool2d", adaptive_avg_pool2d, ref_adaptive_avg_pool2d, _adaptive_samples, FLOATS,
           HALF_TOLS),
    OpInfo("ops.interpolate", interpolate, ref_interpolate, _interp_samples, FLOATS, HALF_TOLS),
    OpInfo("ops.scaled_dot_product_attention", scaled_dot_product_attention, ref_sdpa, _attn_samples, FLOATS,
           HALF_TOLS, grad_args=(0, 1, 2)),
    OpInfo("ops.scaled_dot_product_attention_stats",
           lambda *a, **kw: scaled_dot_product_attention(*a, return_stats=True, **kw)[:2],
           lambda *a, **kw: ref_sdpa(*a, stats=True, **kw), _attn_samples, FLOATS, HALF_TOLS, differentiable=False),
]
