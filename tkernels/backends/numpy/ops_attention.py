"""Scaled dot-product attention on NumPy (signatures in ``tkernels/ops/attention.py``): batched matmuls over the
broadcast batch dims, a stable softmax (row max subtracted; fully masked rows give zeros), dropout from the
Generator's PCG64 stream, and the flash-attention backward formulas (P from the saved log-sum-exp).

The (..., L, S) scores are one temporary that the softmax and the backward transform in place; the causal mask is
one cached (L, S) boolean broadcast over batch and heads, and products whose result has the shape and dtype of
their destination are written into it (no copy)."""

from __future__ import annotations

import functools

import numpy as np

from ...dispatch import register
from ._util import HALF_NP, max_last, npv


def _c(x) -> np.ndarray:
    v = npv(x)
    return v.astype(np.float32) if v.dtype in HALF_NP else v


def _scores(q, k, mask, is_causal: bool, scale: float) -> np.ndarray:
    """Scaled scores (..., L, S) with masked positions at -inf (bool mask, causal) or the float mask added."""
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s *= s.dtype.type(scale)
    if is_causal:
        np.copyto(s, -np.inf, where=_above_diagonal(*s.shape[-2:]))
    elif mask is not None:
        m = npv(mask)
        if m.dtype == np.bool_:
            s = np.where(m, s, -np.inf)
        else:
            s += m.astype(s.dtype, copy=False)
    return s


@functools.lru_cache(maxsize=16)
def _above_diagonal(L: int, S: int) -> np.ndarray:  # noqa: N803
    """The positions the causal mask hides: j > i (top-left aligned, as PyTorch's is_causal), read-only."""
    m = ~np.tri(L, S, dtype=bool)
    m.flags.writeable = False
    return m


def _row_sums(a: np.ndarray) -> np.ndarray:
    """Sums over the last axis, kept as a length-1 axis: a batched GEMV with ones (NumPy's sum over 64-wide rows
    of (16, 4, 64, 64) float32: 85 us, this 15 us on 1 core). Rows past 4096 keys: NumPy's pairwise sum (BLAS's
    error grows with the length over its SIMD lanes)."""
    if a.shape[-1] > 4096:
        return a.sum(axis=-1, keepdims=True)
    return np.matmul(a, np.ones((a.shape[-1], 1), a.dtype))


def _softmax(s: np.ndarray):
    """(p, lse) along the last axis, p computed in place of ``s``; rows that are all -inf give p = 0 and
    lse = -inf."""
    m = max_last(s, keepdims=True) if s.shape[-1] else s.max(axis=-1, keepdims=True, initial=-np.inf)
    np.copyto(m, 0, where=m == -np.inf)
    s -= m
    np.exp(s, out=s)
    total = _row_sums(s)
    with np.errstate(divide="ignore"):
        lse = np.log(total) + m
    np.copyto(total, 1, where=total == 0)
    s /= total
    return s, lse[..., 0]


def _keep(generator, shape, p: float, dtype) -> np.ndarray:
    """The dropout multiplier: 0 with probability p, else 1 / (1 - p) (drawn the same way in the backward)."""
    u = generator._np.random(shape, dtype=np.float32)
    return np.where(u >= p, dtype.type(1.0 / (1.0 - p)) if p < 1 else dtype.type(0), dtype.type(0))


def _matmul_into(dst, a: np.ndarray, b: np.ndarray) -> None:
    """``dst = a @ b``: written by the GEMM when ``dst`` has the product's shape and dtype, else reduced and cast."""
    d = npv(dst)
    if d.dtype == a.dtype == b.dtype and d.shape == np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (
            a.shape[-2], b.shape[-1]):
        np.matmul(a, b, out=d)
    else:
        _store_reduced(dst, np.matmul(a, b))


def _store_reduced(dst, full: np.ndarray) -> None:
    """Write a gradient computed over the broadcast batch shape, summed down to ``dst``'s shape."""
    shape = dst.shape
    extra = full.ndim - len(shape)
    if extra:
        full = full.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (a, b) in enumerate(zip(shape, full.shape)) if a == 1 and b != 1)
    if axes:
        full = full.sum(axis=axes, keepdims=True)
    np.copyto(npv(dst), full, casting="unsafe")


@register("scaled_dot_product_attention", "numpy")
def scaled_dot_product_attention(out, lse, q, k, v, attn_mask, dropout_p, is_causal, scale, generator) -> None:
    qv, kv, vv = _c(q), _c(k), _c(v)
    p, row_lse = _softmax(_scores(qv, kv, attn_mask, is_causal, scale))
    if dropout_p > 0:
        p *= _keep(generator, p.shape, dropout_p, p.dtype)
    _matmul_into(out, p, vv)
    if lse is not None:
        np.copyto(npv(lse), row_lse, casting="unsafe")


@register("scaled_dot_product_attention_backward", "numpy")
def scaled_dot_product_attention_backward(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p, is_causal,
                                          scale, generator) -> None:
    qv, kv, vv, g = _c(q), _c(k), _c(v), _c(grad)
    s = _scores(qv, kv, attn_mask, is_causal, scale)
    if lse is None:
        p, _ = _softmax(s)
    else:
        row = npv(lse).astype(s.dtype)[..., None]
        s -= np.where(row == -np.inf, np.inf, row)  # fully masked rows: exp(-inf) = 0
        p = np.exp(s, out=s)
    keep = _keep(generator, p.shape, dropout_p, p.dtype) if dropout_p > 0 else None
    if dv is not None:
        pd = p if keep is None else p * keep
        _matmul_into(dv, np.swapaxes(pd, -1, -2), g)
    if dq is None and dk is None:
        return
    dp = np.matmul(g, np.swapaxes(vv, -1, -2))
    if keep is not None:
        dp *= keep
    ds = dp
    o = None if out is None else npv(out)
    if o is not None and o.dtype == p.dtype and o.shape == g.shape:
        # rowsum(dp p) = rowsum(grad out) (out = (p keep) v): an (..., L, Ev) product instead of (..., L, S), as
        # the flash-attention backward computes it (16x4x64x64, 16 wide: 174 -> ~25 us); float32 rounding apart
        ds -= _row_sums(g * o)
    else:  # out kept in a half dtype (or not given): from p itself
        ds -= _row_sums(dp * p)
    # ds = p (dp - rowsum(dp p)) scale, in place of dp
    ds *= p
    ds *= ds.dtype.type(scale)
    if dq is not None:
        _matmul_into(dq, ds, kv)
    if dk is not None:
        _matmul_into(dk, np.swapaxes(ds, -1, -2), qv)
