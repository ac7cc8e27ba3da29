"""layer_norm, rms_norm, group_norm and batch_norm (forward and backward) on NumPy; see
``tkernels.ops.normalization`` for the contract. Every op views its input as rows (or (N, C, S) blocks),
computes in float32 (float64 when an operand is float64) and writes the results into the entry's outputs."""

from __future__ import annotations

import functools
import math

import numpy as np

from ...dispatch import register
from . import _threads
from ._util import accumulate_dtype as _compute
from ._util import npv


def _as(a, cd, shape=None):
    """The NumPy values of an Array (or None) in the compute dtype, optionally reshaped."""
    if a is None:
        return None
    v = npv(a)
    if shape is not None:
        v = v.reshape(shape)
    return v.astype(cd, copy=False)


def _put(dst, values) -> None:
    """Write ``values`` into the Array ``dst`` (skipped when ``dst`` is None), casting to its dtype."""
    if dst is not None:
        o = npv(dst)
        np.copyto(o, values.reshape(o.shape), casting="unsafe")


def _rows(x, k):
    """(rows, row length) of ``x`` normalized over its last ``k`` axes."""
    return math.prod(x.shape[:x.ndim - k]), math.prod(x.shape[x.ndim - k:])


# ------------------------------------------------------------------------------------------------ layer_norm
@functools.lru_cache(maxsize=64)
def _ones(n: int, cd: np.dtype) -> np.ndarray:
    v = np.ones(n, cd)
    v.flags.writeable = False
    return v


# rows up to this long are summed by a GEMV (BLAS accumulates a dot product in a few SIMD lanes: error growing with
# n / lanes, against NumPy's pairwise sum's log n; equal at these lengths); longer ones by NumPy
_GEMV_MAX = 4096


def _row_mean(a: np.ndarray) -> np.ndarray:
    """Means of the rows of a 2-D array as an (m, 1) column: a GEMV with ones, then the division by n (NumPy's
    mean reduces short rows one at a time: (1024, 64) float32, 25 us against 3 us on 1 core)."""
    if a.shape[1] > _GEMV_MAX:
        return a.mean(axis=1, keepdims=True)
    s = a @ _ones(a.shape[1], a.dtype)
    s /= a.dtype.type(a.shape[1])
    return s[:, None]


def _col_sum(a: np.ndarray) -> np.ndarray:
    """Sums of the columns of a 2-D array (a GEMV with ones; NumPy's axis-0 sum also adds the rows one by one)."""
    return _ones(a.shape[0], a.dtype) @ a


def _target(dst, cd, m, n):
    """The (m, n) NumPy view of ``dst`` to compute in directly (its dtype is the compute dtype), or None."""
    o = npv(dst)
    if o.dtype == cd and o.flags.c_contiguous:
        return o.reshape(m, n)
    return None


@register("layer_norm", "numpy")
def layer_norm(out, mean, rstd, x, weight, bias, k, eps) -> None:
    cd = _compute(x, weight, bias)
    m, n = _rows(x, k)
    if m * n == 0:
        _put(mean, np.full(m, np.nan, cd))
        _put(rstd, np.full(m, np.nan, cd))
        return
    a = _as(x, cd, (m, n))
    mu = _row_mean(a)
    tgt = _target(out, cd, m, n)
    y = np.subtract(a, mu, out=tgt)
    sq = y * y
    r = _row_mean(sq)
    r += cd.type(eps)
    np.sqrt(r, out=r)
    np.divide(cd.type(1.0), r, out=r)
    y *= r
    if weight is not None:
        y *= _as(weight, cd, n)
    if bias is not None:
        y += _as(bias, cd, n)
    if tgt is None:
        _put(out, y)
    _put(mean, mu)
    _put(rstd, r)


@register("layer_norm_backward", "numpy")
def layer_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, k) -> None:
    cd = _compute(grad, x, weight)
    m, n = _rows(x, k)
    g = _as(grad, cd, (m, n))
    if dbias is not None:
        _put(dbias, _col_sum(g) if m else g.sum(axis=0))
    if dx is None and dweight is None:
        return
    if m * n == 0:
        _put(dweight, np.zeros(n, cd))
        return
    r = _as(rstd, cd, (m, 1))
    xhat = _as(x, cd, (m, n)) - _as(mean, cd, (m, 1))
    xhat *= r
    if dweight is not None:
        _put(dweight, _col_sum(g * xhat))
    if dx is not None:
        gw = g * _as(weight, cd, n) if weight is not None else g
        tgt = _target(dx, cd, m, n)
        d = np.subtract(gw, _row_mean(gw), out=tgt)
        gw = gw * xhat
        xhat *= _row_mean(gw)
        d -= xhat
        d *= r
        if tgt is None:
            _put(dx, d)


# -------------------------------------------------------------------------------------------------- rms_norm
@register("rms_norm", "numpy")
def rms_norm(out, rstd, x, weight, k, eps) -> None:
    cd = _compute(x, weight)
    m, n = _rows(x, k)
    if m * n == 0:
        _put(rstd, np.full(m, np.nan, cd))
        return
    a = _as(x, cd, (m, n))
    r = 1.0 / np.sqrt((a * a).mean(axis=1, keepdims=True) + cd.type(eps))
    y = a * r
    if weight is not None:
        y *= _as(weight, cd, n)
    _put(out, y)
    _put(rstd, r)


@register("rms_norm_backward", "numpy")
def rms_norm_backward(dx, dweight, grad, x, rstd, weight, k) -> None:
    cd = _compute(grad, x, weight)
    m, n = _rows(x, k)
    if m * n == 0:
        _put(dweight, np.zeros(n, cd))
        return
    g = _as(grad, cd, (m, n))
    r = _as(rstd, cd, (m, 1))
    xhat = _as(x, cd, (m, n)) * r
    if dweight is not None:
        _put(dweight, (g * xhat).sum(axis=0))
    if dx is not None:
        gw = g * _as(weight, cd, n) if weight is not None else g
        d = gw - xhat * (gw * xhat).mean(axis=1, keepdims=True)
        d *= r
        _put(dx, d)


# ------------------------------------------------------------------------------------------------ group_norm
def _ncs(x):
    """(N, C, S) sizes of an (N, C, *) array."""
    n, c = x.shape[0], x.shape[1]
    return n, c, math.prod(x.shape[2:])


def _per_channel(p, cd, c):
    return _as(p, cd, (1, c, 1))


@register("group_norm", "numpy")
def group_norm(out, mean, rstd, x, weight, bias, num_groups, eps) -> None:
    cd = _compute(x, weight, bias)
    n, c, s = _ncs(x)
    g = num_groups
    if x.size == 0:
        _put(mean, np.full((n, g), np.nan, cd))
        _put(rstd, np.full((n, g), np.nan, cd))
        return
    a = _as(x, cd, (n, g, -1))
    mu = a.mean(axis=2, keepdims=True)
    y = a - mu
    r = 1.0 / np.sqrt((y * y).mean(axis=2, keepdims=True) + cd.type(eps))
    y *= r
    y = y.reshape(n, c, s)
    if weight is not None:
        y *= _per_channel(weight, cd, c)
    if bias is not None:
        y += _per_channel(bias, cd, c)
    _put(out, y)
    _put(mean, mu)
    _put(rstd, r)


@register("group_norm_backward", "numpy")
def group_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, num_groups) -> None:
    cd = _compute(grad, x, weight)
    n, c, s = _ncs(x)
    g = _as(grad, cd, (n, c, s))
    if dbias is not None:
        _put(dbias, g.sum(axis=(0, 2)))
    if dx is None and dweight is None:
        return
    if x.size == 0:
        _put(dweight, np.zeros(c, cd))
        return
    G = num_groups
    r = _as(rstd, cd, (n, G, 1))
    xhat = (_as(x, cd, (n, G, -1)) - _as(mean, cd, (n, G, 1))) * r
    if dweight is not None:
        _put(dweight, (g * xhat.reshape(n, c, s)).sum(axis=(0, 2)))
    if dx is not None:
        gw = (g * _per_channel(weight, cd, c) if weight is not None else g).reshape(n, G, -1)
        d = gw - gw.mean(axis=2, keepdims=True)
        d -= xhat * (gw * xhat).mean(axis=2, keepdims=True)
        d *= r
        _put(dx, d)


# ------------------------------------------------------------------------------------------------ batch_norm
def _into(dst, cd, shape):
    """A buffer of ``shape`` in the compute dtype to compute ``dst`` in: ``dst``'s own memory when it has that
    dtype (the entries' outputs are fresh and contiguous), so no final copy is made; else a new array (then
    ``_put`` it)."""
    if dst is not None:
        o = npv(dst)
        if o.dtype == cd and o.flags.c_contiguous:
            return o.reshape(shape), True
    return np.empty(shape, cd), False


def _chan_sum(a: np.ndarray) -> np.ndarray:
    """Sums over axes 0 and 2 of an (N, C, S) array: a dot product with ones per (image, channel) row, then the
    sum over the batch (NumPy's two-axis sum: 0.31 ms against 0.12 ms for 32x64x1024 float32, one core). Each
    row's sum is one BLAS dot, whatever rows come with it, so a part of the channels (``_by_channels``) sums
    them as the whole array does (a GEMV's kernel rounds the rows of a block remainder differently)."""
    n, c, s = a.shape
    if s > _GEMV_MAX or not s:
        return a.sum(axis=(0, 2))
    return np.matmul(a[:, :, None, :], _ones(s, a.dtype)[:, None])[:, :, 0, 0].sum(axis=0)


def _chan_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sums over axes 0 and 2 of ``a * b`` for (N, C, S) arrays, without the product's temporary: one dot
    product per (image, channel) row (0.21 ms against 0.59 ms for the square and the mean of 32x64x1024)."""
    n, c, s = a.shape
    if s > _GEMV_MAX or not s:
        return np.multiply(a, b).sum(axis=(0, 2))
    return np.matmul(a[:, :, None, :], b[:, :, :, None])[:, :, 0, 0].sum(axis=0)


def _by_channels(n: int, c: int, s: int, part, name: str) -> list:
    """``part(lo, hi)`` over the channels ``[0, c)`` of an (N, C, S) batch, split over the intra-op threads when the
    batch is large (``_threads.parts_for``): every statistic and value of batch norm is per channel, so the parts
    compute what the whole call does, bit for bit, each reading its channels of every image (32x64x32x32 float32
    forward, 2 cores: 2.56 -> 1.83 ms)."""
    t = min(_threads.parts_for(n * c * s), c // 2)  # (parts of 2 channels or more: the sums over the batch
    if t < 2:  # of one channel alone would be NumPy's pairwise sum, of several a sequential one per channel)
        return [part(0, c)]
    return _threads.split_reporting(c, part, parts=t, name=name)


def _joined(parts: list) -> list:
    """The per-channel results of ``_by_channels``'s parts (tuples of arrays or None), each joined over the
    parts."""
    if len(parts) == 1:
        return list(parts[0])
    return [None if p[0] is None else np.concatenate(p) for p in zip(*parts)]


@register("batch_norm", "numpy")
def batch_norm(out, save_mean, save_invstd, x, running_mean, running_var, weight, bias, training, momentum,
               eps) -> None:
    # the normalized values are computed in place in `out` (x - mean, then scaled and shifted): two fewer
    # passes and temporaries than x - mu -> new, ... -> copy (same arithmetic, same rounding)
    cd = _compute(x, weight, bias, running_mean, running_var)
    n, c, s = _ncs(x)
    a = _as(x, cd, (n, c, s))
    cnt = n * s
    if training and cnt == 0:  # PyTorch: an empty batch leaves the running stats alone
        _put(save_mean, np.zeros(c, cd))
        _put(save_invstd, np.full(c, 1.0 / np.sqrt(eps) if eps else np.inf, cd))
        return
    w = None if weight is None else _as(weight, cd)
    b = None if bias is None else _as(bias, cd)
    if not training:
        run_mu = _as(running_mean, cd)
        run_invstd = 1.0 / np.sqrt(_as(running_var, cd) + cd.type(eps))
    xc, direct = _into(out, cd, (n, c, s))

    def part(lo, hi):
        av, xv = a[:, lo:hi], xc[:, lo:hi]
        if training:
            mu = _chan_sum(av) / cd.type(cnt)
            np.subtract(av, mu[:, None], out=xv)
            var = _chan_dot(xv, xv) / cd.type(cnt)
            invstd = 1.0 / np.sqrt(var + cd.type(eps))
        else:
            mu, var, invstd = None, None, run_invstd[lo:hi]
            np.subtract(av, run_mu[lo:hi, None], out=xv)
        xv *= (invstd if w is None else invstd * w[lo:hi])[:, None]
        if b is not None:
            xv += b[lo:hi, None]
        return mu, var, invstd

    parts = _by_channels(n, c, s, part, "batch_norm")
    if training:
        mu, var, invstd = _joined(parts)
        if running_mean is not None:
            rm = npv(running_mean)
            np.copyto(rm, (1 - momentum) * rm.astype(cd) + momentum * mu, casting="unsafe")
        if running_var is not None:
            rv = npv(running_var)
            np.copyto(rv, (1 - momentum) * rv.astype(cd) + momentum * var * (cnt / (cnt - 1)), casting="unsafe")
        _put(save_mean, mu)
        _put(save_invstd, invstd)
    if not direct:
        _put(out, xc)


@register("batch_norm_backward", "numpy")
def batch_norm_backward(dx, dweight, dbias, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        training, eps) -> None:
    # x - mean is made once and reused in place for dx (written into dx's memory), the per-channel sums are
    # GEMVs and dot products (no g * x-hat temporary), invstd folded into per-channel factors; the textbook's
    # arithmetic up to rounding (32x64x32x32: 5.6 ms -> 4.0 ms with the in-place passes, one shared core); large
    # batches by channels over the intra-op threads (``_by_channels``)
    cd = _compute(grad, x, weight)
    n, c, s = _ncs(x)
    g = _as(grad, cd, (n, c, s))
    want_sum_g = dbias is not None or (dx is not None and training and g.size)
    if dx is None and dweight is None:
        if want_sum_g:
            _put(dbias, _chan_sum(g))
        return
    if training:
        mu, invstd = _as(save_mean, cd), _as(save_invstd, cd)
    else:
        mu = _as(running_mean, cd)
        invstd = 1.0 / np.sqrt(_as(running_var, cd) + cd.type(eps))
    grad_dx = dx is not None and training and g.size
    xa = _as(x, cd, (n, c, s)) if dweight is not None or grad_dx else None
    w = None if weight is None else _as(weight, cd)
    d = direct = None
    if dx is not None:
        d, direct = _into(dx, cd, (n, c, s))

    def part(lo, hi):
        gv, isv = g[:, lo:hi], invstd[lo:hi]
        sum_g = _chan_sum(gv) if want_sum_g else None
        sum_gx = xc = None
        if xa is not None:
            # x - mean, with invstd folded into the per-channel factors (one pass fewer than making x-hat)
            xc = np.subtract(xa[:, lo:hi], mu[lo:hi, None])
            sum_gx = _chan_dot(gv, xc) * isv  # == (g * x-hat).sum(axis=(0, 2))
        if d is not None:
            dv = d[:, lo:hi]
            if grad_dx:
                np.subtract(gv, (sum_g / cd.type(n * s))[:, None], out=dv)
                xc *= (isv * sum_gx / cd.type(n * s))[:, None]  # x-hat * (g * x-hat).mean(axis=(0, 2))
                dv -= xc
            else:
                np.copyto(dv, gv)
            dv *= (isv if w is None else isv * w[lo:hi])[:, None]
        return sum_g, sum_gx

    parts = _by_channels(n, c, s, part, "batch_norm_backward")
    sum_g, sum_gx = _joined(parts)
    if dbias is not None:
        _put(dbias, sum_g)
    if dweight is not None:
        _put(dweight, sum_gx)
    if d is not None and not direct:
        _put(dx, d)
