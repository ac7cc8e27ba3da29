"""Scaled dot-product attention on NumPy (signatures in ``tkernels/ops/attention.py``): batched matmuls over the
broadcast batch dims, a stable softmax (row max subtracted; fully masked rows give zeros), dropout from the
Generator's PCG64 stream, and the flash-attention backward formulas (P from the saved log-sum-exp)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import HALF_NP, npv


def _c(x) -> np.ndarray:
    v = npv(x)
    return v.astype(np.float32) if v.dtype in HALF_NP else v


def _scores(q, k, mask, is_causal: bool, scale: float) -> np.ndarray:
    """Scaled scores (..., L, S) with masked positions at -inf (bool mask, causal) or the float mask added."""
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s *= s.dtype.type(scale)
    if is_causal:
        L, S = s.shape[-2:]
        s = np.where(np.tri(L, S, dtype=bool), s, -np.inf)
    elif mask is not None:
        m = npv(mask)
        if m.dtype == np.bool_:
            s = np.where(m, s, -np.inf)
        else:
            s += m.astype(s.dtype, copy=False)
    return s


def _softmax(s: np.ndarray):
    """(p, lse) along the last axis; rows that are all -inf give p = 0 and lse = -inf."""
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(m == -np.inf, 0, m)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.log(total) + m
    e /= np.where(total == 0, 1, total)
    return e, lse[..., 0]


def _keep(generator, shape, p: float, dtype) -> np.ndarray:
    """The dropout multiplier: 0 with probability p, else 1 / (1 - p) (drawn the same way in the backward)."""
    u = generator._np.random(shape, dtype=np.float32)
    return np.where(u >= p, dtype.type(1.0 / (1.0 - p)) if p < 1 else dtype.type(0), dtype.type(0))


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
    np.copyto(npv(out), np.matmul(p, vv), casting="unsafe")
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
        p = np.exp(s - np.where(row == -np.inf, np.inf, row))  # fully masked rows: exp(-inf) = 0
    keep = _keep(generator, p.shape, dropout_p, p.dtype) if dropout_p > 0 else None
    if dv is not None:
        pd = p if keep is None else p * keep
        _store_reduced(dv, np.matmul(np.swapaxes(pd, -1, -2), g))
    if dq is None and dk is None:
        return
    dp = np.matmul(g, np.swapaxes(vv, -1, -2))
    if keep is not None:
        dp *= keep
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    ds *= ds.dtype.type(scale)
    if dq is not None:
        _store_reduced(dq, np.matmul(ds, kv))
    if dk is not None:
        _store_reduced(dk, np.matmul(np.swapaxes(ds, -1, -2), qv))
