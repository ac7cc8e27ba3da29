"""Pooling and resizing on NumPy (signatures in ``tkernels/ops/pooling.py``).

Window ops (max/avg pooling and their gradients) loop over the kH * kW kernel offsets, each a strided slice
of a padded canvas covering every window (ceil_mode windows included); adaptive pooling and resizing are
separable, so they are two small matmuls with (out, in) weight matrices per axis. Half dtypes compute in
float32.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...dispatch import register
from ._util import HALF_NP, npv


def _c(x) -> np.ndarray:
    v = npv(x)
    return v.astype(np.float32) if v.dtype in HALF_NP else v


def _canvas(x: np.ndarray, fill, p, k, s, d, ho: int, wo: int) -> np.ndarray:
    """``x`` padded by ``p`` with ``fill``, extended right/bottom so that every window fits."""
    n, c, h, w = x.shape
    hc = max(h + 2 * p[0], (ho - 1) * s[0] + d[0] * (k[0] - 1) + 1)
    wc = max(w + 2 * p[1], (wo - 1) * s[1] + d[1] * (k[1] - 1) + 1)
    if hc == h and wc == w:
        return x
    xp = np.full((n, c, hc, wc), fill, x.dtype)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    return xp


def _offsets(k, s, d, ho, wo):
    """(kernel index, row slice, column slice) of each kernel offset in the canvas."""
    he, we = s[0] * (ho - 1) + 1, s[1] * (wo - 1) + 1
    for i in range(k[0]):
        for j in range(k[1]):
            r, q = i * d[0], j * d[1]
            yield i * k[1] + j, slice(r, r + he, s[0]), slice(q, q + we, s[1])


def _canvas_last(x: np.ndarray, fill, p, k, s, d, ho: int, wo: int) -> np.ndarray:
    """``_canvas`` of ``x`` laid out planes-last, (Hc, Wc, N, C): each kernel offset's slice then has
    N * C contiguous values per pixel instead of inner runs of Wo strided values."""
    n, c, h, w = x.shape
    hc = max(h + 2 * p[0], (ho - 1) * s[0] + d[0] * (k[0] - 1) + 1)
    wc = max(w + 2 * p[1], (wo - 1) * s[1] + d[1] * (k[1] - 1) + 1)
    if hc == h and wc == w:
        return np.ascontiguousarray(x.transpose(2, 3, 0, 1))
    xp = np.full((hc, wc, n, c), fill, x.dtype)
    xp[p[0]:p[0] + h, p[1]:p[1] + w] = x.transpose(2, 3, 0, 1)
    return xp


# planes up to this many pixels are pooled planes-last; larger ones in place (NCHW), where the transposing copy
# would cost more than all the compares (32x64x32x32: 11.8 ms to transpose, 0.7 ms for the 2x2 maxima)
_PLANES_LAST_MAX = 256


# non-overlapping windows (stride = kernel, no padding or dilation) are pooled as tiles, without a canvas
_TILED = True


def _tiled(out, indices, xv: np.ndarray, k) -> None:
    """``max_pool2d`` into the Arrays ``out`` and ``indices`` (or None) of windows that tile ``xv`` (stride =
    kernel, no padding or dilation, each window inside the input): the (N, C, Ho, kH, Wo, kW) view of the
    windows, reduced first over the kW columns of each window row (views whose elements are kW apart: one long
    strided run each), then over its kH rows. The first maximum wins, and a NaN wins over the earlier values,
    within a row and then between rows: the window-order rule of the offset loop (the same values and indices).
    No copy of the input: 32x64x32x32, 2x2 with indices 7.4 -> 5.4 ms, without 1.9 -> 1.6 ms (one shared core)."""
    n, c, ho, wo = out.shape
    kh, kw = k
    sn, sc, sh, sw = xv.strides
    tiles = as_strided(xv, (n, c, ho, kh, wo, kw), (sn, sc, sh * kh, sh, sw * kw, sw), writeable=False)
    rows = np.array(tiles[..., 0])  # (N, C, Ho, kH, Wo): the maximum of each window row
    if indices is None:
        for j in range(1, kw):
            np.maximum(rows, tiles[..., j], out=rows)
        best = np.array(rows[:, :, :, 0])
        for i in range(1, kh):
            np.maximum(best, rows[:, :, :, i], out=best)
        np.copyto(npv(out), best, casting="unsafe")
        return
    it = np.int8 if kh * kw < 127 else np.int64
    nan = bool(np.isnan(xv).any())
    col = np.zeros(rows.shape, it)  # the winning column of each window row
    upd = np.empty(rows.shape, bool)
    for j in range(1, kw):
        v = tiles[..., j]
        np.greater(v, rows, out=upd)
        if nan:
            upd |= np.isnan(v)
        np.maximum(col, np.multiply(upd, it(j), dtype=it), out=col)  # later columns are larger: max keeps them
        np.maximum(rows, v, out=rows)  # NaN sticks, as its column does
    best = np.array(rows[:, :, :, 0])
    win = np.array(col[:, :, :, 0])  # the winning kernel offset i * kW + j
    upd = np.empty(best.shape, bool)
    for i in range(1, kh):
        v = rows[:, :, :, i]
        np.greater(v, best, out=upd)
        if nan:
            upd |= np.isnan(v)
        code = col[:, :, :, i] + it(i * kw)
        code -= win  # win += upd * (code - win): 5 us where np.where / masked copyto of int8 take 115-190 us
        code *= upd
        win += code
        np.maximum(best, v, out=best)
    w = xv.shape[3]
    idx = np.take(np.array([i * w + j for i in range(kh) for j in range(kw)], np.int64), win)
    idx += (np.arange(ho) * (kh * w)).reshape(ho, 1) + np.arange(wo) * kw
    np.copyto(npv(indices), idx)
    np.copyto(npv(out), best, casting="unsafe")


@register("max_pool2d", "numpy")
def max_pool2d(out, indices, x, kernel_size, stride, padding, dilation) -> None:
    # planes-last for small planes: the per-offset compares stream N*C values per pixel (64x32x8x8, 2x2, with
    # indices: 1.3 ms -> 0.23 ms on one shared core)
    xv = _c(x)
    n, c, ho, wo = out.shape
    last = xv.shape[2] * xv.shape[3] <= _PLANES_LAST_MAX
    k = tuple(kernel_size)
    if (_TILED and tuple(stride) == k and not any(padding) and tuple(dilation) == (1, 1)
            and ho * k[0] <= xv.shape[2] and wo * k[1] <= xv.shape[3] and (indices is None or not last)):
        # (with indices, small planes stay planes-last: 64x32x8x8, 2x2: 0.41 ms vs 0.44 ms tiled)
        _tiled(out, indices, xv, k)
        return
    if last:
        xp = _canvas_last(xv, -np.inf, padding, kernel_size, stride, dilation, ho, wo)
        best = np.full((ho, wo, n, c), -np.inf, xv.dtype)
    else:
        xp = _canvas(xv, -np.inf, padding, kernel_size, stride, dilation, ho, wo)
        best = np.full((n, c, ho, wo), -np.inf, xv.dtype)

    def window(rs, cs):
        return xp[rs, cs] if last else xp[:, :, rs, cs]

    def store(dst, a):
        np.copyto(npv(dst), a.transpose(2, 3, 0, 1) if last else a, casting="unsafe")

    if indices is None:
        for _, rs, cs in _offsets(kernel_size, stride, dilation, ho, wo):
            np.maximum(best, window(rs, cs), out=best)  # propagates NaN, like PyTorch
        store(out, best)
        return
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    w = xv.shape[3]
    r0 = (np.arange(ho) * sh - ph).reshape((ho, 1, 1, 1) if last else (ho, 1))
    c0 = (np.arange(wo) * sw - pw).reshape((1, wo, 1, 1) if last else (1, wo))
    # start at the window's first valid element (PyTorch's choice when every valid element is -inf)
    first = np.where(r0 < 0, r0 % dh, r0) * w + np.where(c0 < 0, c0 % dw, c0)
    # the winning kernel offset + 1 per output (0: nothing beat -inf), kept with maximum(): offsets are visited
    # in increasing order and a later one wins only when strictly greater (or NaN), so the newest winner is the
    # largest (masked copyto/where cost 10x more); made flat indices once at the end by a table lookup
    kk = kernel_size[0] * kernel_size[1]
    it = np.int8 if kk < 127 else np.int64
    win = np.zeros(best.shape, it)
    nan = bool(np.isnan(xv).any())
    upd = np.empty(best.shape, bool)
    for t, rs, cs in _offsets(kernel_size, stride, dilation, ho, wo):
        v = window(rs, cs)
        np.greater(v, best, out=upd)
        if nan:
            upd |= np.isnan(v)  # PyTorch's rule: the first maximum; a later NaN replaces it
        np.maximum(best, v, out=best)  # NaN sticks, as the indices do
        np.maximum(win, np.multiply(upd, it(t + 1), dtype=it), out=win)
    delta = np.array([0] + [i * dh * w + j * dw for i in range(kernel_size[0]) for j in range(kernel_size[1])],
                     np.int64)
    idx = np.take(delta, win)
    idx += r0 * w + c0
    if not win.all():
        idx = np.where(win == 0, first, idx)
    store(indices, idx)  # a fresh int64 from the entry
    store(out, best)


@register("max_pool2d_backward", "numpy")
def max_pool2d_backward(dx, grad, indices, kernel_size, stride, padding, dilation) -> None:
    n, c, h, w = dx.shape
    idx = npv(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= h * w):
        raise IndexError(f"max_pool2d_backward: indices must lie in [0, {h * w}) (flat positions in the {h} x {w} "
                         f"input plane), got values in [{idx.min()}, {idx.max()}]")
    # one unbuffered add per output into the zeroed planes (repeated indices accumulate, as in PyTorch): 26 us
    # vs 52 us for a float64 bincount at 64x32x8x8, 2x2, one core
    flat = idx.reshape(n * c, -1) + (np.arange(n * c, dtype=np.int64) * (h * w))[:, None]
    g = _c(grad)
    out = npv(dx)
    direct = out.dtype == g.dtype and out.flags.c_contiguous  # dx is fresh from the entry: accumulate in place
    acc = out.reshape(-1) if direct else np.empty(n * c * h * w, g.dtype)
    acc.fill(0)
    np.add.at(acc, flat.reshape(-1), g.reshape(-1))
    if not direct:
        np.copyto(out, acc.reshape(n, c, h, w), casting="unsafe")


def _avg_divisor(h, w, ho, wo, k, s, p, count_include_pad, divisor_override, dtype):
    """PyTorch's per-window divisor (ho, wo)."""
    if divisor_override is not None:
        return np.asarray(divisor_override, dtype)
    sizes = []
    for size, o, kk, ss, pp in ((h, ho, k[0], s[0], p[0]), (w, wo, k[1], s[1], p[1])):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, size + pp)
        sizes.append(end - start if count_include_pad else np.minimum(end, size) - np.maximum(start, 0))
    return (sizes[0][:, None] * sizes[1][None, :]).astype(dtype)


@register("avg_pool2d", "numpy")
def avg_pool2d(out, x, kernel_size, stride, padding, count_include_pad, divisor_override) -> None:
    xv = _c(x)
    _, _, ho, wo = out.shape
    xp = _canvas(xv, 0, padding, kernel_size, stride, (1, 1), ho, wo)
    acc = np.zeros(out.shape, xv.dtype)
    for _, rs, cs in _offsets(kernel_size, stride, (1, 1), ho, wo):
        acc += xp[:, :, rs, cs]
    acc /= _avg_divisor(*xv.shape[2:], ho, wo, kernel_size, stride, padding, count_include_pad, divisor_override,
                        xv.dtype)
    np.copyto(npv(out), acc, casting="unsafe")


@register("avg_pool2d_backward", "numpy")
def avg_pool2d_backward(dx, grad, kernel_size, stride, padding, count_include_pad, divisor_override) -> None:
    g = _c(grad)
    n, c, h, w = dx.shape
    _, _, ho, wo = g.shape
    gd = g / _avg_divisor(h, w, ho, wo, kernel_size, stride, padding, count_include_pad, divisor_override, g.dtype)
    hc = max(h + 2 * padding[0], (ho - 1) * stride[0] + kernel_size[0])
    wc = max(w + 2 * padding[1], (wo - 1) * stride[1] + kernel_size[1])
    acc = np.zeros((n, c, hc, wc), g.dtype)
    for _, rs, cs in _offsets(kernel_size, stride, (1, 1), ho, wo):
        acc[:, :, rs, cs] += gd
    np.copyto(npv(dx), acc[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w], casting="unsafe")


# --------------------------------------------------------------------------- separable (out, in) weight matrices
def _adaptive_matrix(o: int, n: int, dtype) -> np.ndarray:
    """Row i averages input positions [floor(i n / o), ceil((i + 1) n / o))."""
    i = np.arange(o)
    start = i * n // o
    end = -((-(i + 1) * n) // o)
    j = np.arange(n)
    m = (j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


def _nearest_index(o: int, n: int, mode: str, scale) -> np.ndarray:
    """PyTorch's nearest source indices (float32 arithmetic, as its CPU kernels)."""
    d = np.arange(o)
    if mode == "nearest":
        if o == n:
            return d
        if o == 2 * n:
            return d >> 1
        sc = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o)
        src = np.floor(d.astype(np.float32) * sc)
    else:
        sc = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o)
        src = np.floor(((d + 0.5) * np.float64(sc)).astype(np.float32))
    return np.minimum(src.astype(np.int64), n - 1)


def _linear_matrix(o: int, n: int, align_corners: bool, scale, dtype) -> np.ndarray:
    """PyTorch's linear interpolation weights (area_pixel_compute_source_index), computed in ``dtype``."""
    t = np.dtype(dtype).type
    if align_corners:
        sc = t(n - 1) / t(o - 1) if o > 1 else t(0)
        src = np.arange(o, dtype=dtype) * sc
    else:
        sc = t(1.0 / scale) if scale else t(n) / t(o)
        src = np.maximum(sc * (np.arange(o, dtype=dtype) + t(0.5)) - t(0.5), t(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam = np.clip(src - i0, 0, 1).astype(dtype)
    i1 = np.minimum(i0 + 1, n - 1)
    m = np.zeros((o, n), dtype)
    rows = np.arange(o)
    m[rows, i0] = 1 - lam
    m[rows, i1] += lam
    return m


def _resize_matrix(o, n, mode, align_corners, scale, dtype) -> np.ndarray:
    if mode == "bilinear":
        return _linear_matrix(o, n, align_corners, scale, dtype)
    if mode == "area":
        return _adaptive_matrix(o, n, dtype)
    m = np.zeros((o, n), dtype)
    m[np.arange(o), _nearest_index(o, n, mode, scale)] = 1
    return m


def _separable(x: np.ndarray, mh: np.ndarray, mw: np.ndarray) -> np.ndarray:
    """mh @ x @ mw.T over the last two axes."""
    return np.matmul(np.matmul(mh, x), mw.T)


@register("adaptive_avg_pool2d", "numpy")
def adaptive_avg_pool2d(out, x) -> None:
    xv = _c(x)
    (h, w), (ho, wo) = xv.shape[2:], out.shape[2:]
    if ho and wo and h % ho == 0 and w % wo == 0:  # equal windows: a reshaped mean
        r = xv.reshape(xv.shape[:2] + (ho, h // ho, wo, w // wo)).mean(axis=(3, 5))
    else:
        r = _separable(xv, _adaptive_matrix(ho, h, xv.dtype), _adaptive_matrix(wo, w, xv.dtype))
    np.copyto(npv(out), r, casting="unsafe")


@register("adaptive_avg_pool2d_backward", "numpy")
def adaptive_avg_pool2d_backward(dx, grad) -> None:
    g = _c(grad)
    (h, w), (ho, wo) = dx.shape[2:], g.shape[2:]
    r = _separable(g, _adaptive_matrix(ho, h, g.dtype).T, _adaptive_matrix(wo, w, g.dtype).T)
    np.copyto(npv(dx), r, casting="unsafe")


@register("interpolate", "numpy")
def interpolate(out, x, mode, align_corners, scales) -> None:
    (h, w), (ho, wo) = x.shape[2:], out.shape[2:]
    if mode in ("nearest", "nearest-exact"):  # a gather: exact, and inf/NaN stay where they are
        hi = _nearest_index(ho, h, mode, scales[0])
        wi = _nearest_index(wo, w, mode, scales[1])
        np.copyto(npv(out), npv(x)[:, :, hi[:, None], wi[None, :]])
        return
    xv = _c(x)
    mh = _resize_matrix(ho, h, mode, align_corners, scales[0], xv.dtype)
    mw = _resize_matrix(wo, w, mode, align_corners, scales[1], xv.dtype)
    np.copyto(npv(out), _separable(xv, mh, mw), casting="unsafe")


@register("interpolate_backward", "numpy")
def interpolate_backward(dx, grad, mode, align_corners, scales) -> None:
    g = _c(grad)
    (h, w), (ho, wo) = dx.shape[2:], g.shape[2:]
    mh = _resize_matrix(ho, h, mode, align_corners, scales[0], g.dtype)
    mw = _resize_matrix(wo, w, mode, align_corners, scales[1], g.dtype)
    np.copyto(npv(dx), _separable(g, mh.T, mw.T), casting="unsafe")
