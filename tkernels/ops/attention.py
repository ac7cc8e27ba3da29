"""Scaled dot-product attention with PyTorch's semantics, and its backward entry (flash-attention style).

Public entries::

    scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, *,
                                 enable_gqa=False, generator=None, return_stats=False)
        -> out, or with return_stats (out, lse, rng_state)
    scaled_dot_product_attention_backward(grad, q, k, v, out, lse, attn_mask=None, dropout_p=0.0,
                                          is_causal=False, scale=None, *, enable_gqa=False, rng_state=None,
                                          needs=(True, True, True)) -> (dq, dk, dv), None where not needed

Shapes: q (..., L, E), k (..., S, E), v (..., S, Ev) with batch dims that broadcast (PyTorch's math path);
out (..., L, Ev) in q's dtype (q, k and v share one floating dtype; halves compute in float32). With
``enable_gqa`` the head dim (-3) of q may be a multiple of k's and v's (grouped-query attention: query head h
reads key/value head ``h // (Hq // Hk)``). ``attn_mask`` broadcasts to (..., L, S): a bool mask says which
positions take part (True), a float mask (float32 or q's dtype) is added to the scores. ``is_causal`` keeps
the top-left aligned lower triangle ``tril(ones(L, S))`` and excludes ``attn_mask``. ``scale`` defaults to
``1 / sqrt(E)``. Rows whose scores are all -inf (fully masked) give zeros, as PyTorch's math backend does
since 2.5 (``_safe_softmax``), with ``lse = -inf`` and zero gradients.

``return_stats`` also returns ``lse``, the log-sum-exp of each row of the scaled, masked scores ((..., L),
float32; float64 for float64 inputs so that float64 gradient checks stay exact), and ``rng_state``: the
generator state taken before the dropout mask was drawn (``None`` when ``dropout_p == 0``). Dropout drops
attention probabilities with probability ``dropout_p`` (from ``generator``, default
``tkernels.random.default_generator``) and scales the rest by ``1 / (1 - dropout_p)``; the backward entry
redraws the same mask from ``rng_state``.

Backend ops (q, k, v, mask broadcast to one batch shape B by views; GQA is a broadcast over a split head dim;
the backward reduces each gradient to the shape of its ``dq``/``dk``/``dv`` output)::

    scaled_dot_product_attention(out, lse, q, k, v, attn_mask, dropout_p, is_causal, scale, generator)
    scaled_dot_product_attention_backward(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p,
                                          is_causal, scale, generator)
"""

from __future__ import annotations

import math

from .. import _capture
from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..random import Generator, _gen
from ..validation import OpTypeError, OpValueError, broadcast_shapes, check_device, describe
from .conv import _empty, _float, _pick

__all__ = ["scaled_dot_product_attention", "scaled_dot_product_attention_backward"]


def _prepare(op, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """Validate; returns (qs, ks, vs, mask, batch, out shape, scale) where qs/ks/vs are q, k, v with the
    GQA head split (views), and batch is their broadcast batch shape."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        _float(op, name, a)
        if a.ndim < 2:
            raise OpValueError(f"{op}: {name} must have at least 2 dimensions (..., length, features), got "
                               f"{describe(a)}")
    shapes = f"q {describe(q)}, k {describe(k)}, v {describe(v)}"
    if not (q.dtype is k.dtype is v.dtype):
        raise OpTypeError(f"{op}: q, k and v must share one dtype, got {shapes}")
    check_device(op, q, k, v)
    L, E = q.shape[-2:]
    S = k.shape[-2]
    if k.shape[-1] != E:
        raise OpValueError(f"{op}: the feature sizes of q and k must match (q: (..., L, E), k: (..., S, E)), got "
                           f"{shapes}")
    if v.shape[-2] != S:
        raise OpValueError(f"{op}: k and v must have the same length S (k: (..., S, E), v: (..., S, Ev)), got "
                           f"{shapes}")
    qs, ks, vs = q, k, v
    gqa = bool(enable_gqa) and min(q.ndim, k.ndim, v.ndim) >= 3 and q.shape[-3] != k.shape[-3]
    if gqa:
        hq, hk = q.shape[-3], k.shape[-3]
        if v.shape[-3] != hk or hq % hk:
            raise OpValueError(f"{op}: with enable_gqa the number of query heads (dim -3 of q) must be a multiple of "
                               f"the key/value heads, and k and v must have the same heads, got {shapes}")
        qs = q.reshape(q.shape[:-3] + (hk, hq // hk, L, E))
        ks, vs = k.expand_dims(-3), v.expand_dims(-3)
    try:
        batch = broadcast_shapes(qs.shape[:-2], ks.shape[:-2], vs.shape[:-2], op=op)
    except ValueError:
        raise OpValueError(f"{op}: the batch dimensions of q, k and v (all but the last two) cannot be broadcast "
                           f"together: {shapes}" + ("" if gqa or enable_gqa else "; hint: for grouped-query "
                                                  "attention pass enable_gqa=True")) from None
    out_batch = batch[:-2] + (batch[-2] * batch[-1],) if gqa else batch
    mask = None
    if attn_mask is not None:
        if is_causal:
            raise OpValueError(f"{op}: attn_mask must be None when is_causal=True (the causal mask is built "
                               f"in), got {describe(attn_mask)}")
        if not isinstance(attn_mask, Array):
            raise OpTypeError(f"{op}: attn_mask must be an Array or None, got {describe(attn_mask)}")
        if attn_mask.dtype is not _dt.bool and attn_mask.dtype is not _dt.float32 and attn_mask.dtype is not q.dtype:
            raise OpTypeError(f"{op}: attn_mask must be bool, float32 or of q's dtype ({q.dtype}), got "
                              f"{describe(attn_mask)}")
        check_device(op, q, attn_mask)
        target = out_batch + (L, S)
        try:
            mask = attn_mask.broadcast_to(target)
        except ValueError:
            raise OpValueError(f"{op}: attn_mask {describe(attn_mask)} cannot be broadcast to the shape {target} of "
                               f"the attention weights (..., L, S) for {shapes}") from None
        if gqa:
            mask = mask.reshape(batch + (L, S))
    try:
        p = float(dropout_p)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: dropout_p must be a number, got {dropout_p!r}") from None
    if not 0.0 <= p <= 1.0:
        raise OpValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p!r}")
    sc = (1.0 / math.sqrt(E) if E else 1.0) if scale is None else float(scale)
    return qs, ks, vs, mask, batch, out_batch, p, sc


def _bcast(a: Array, batch) -> Array:
    return a if a.shape[:-2] == batch else a.broadcast_to(batch + a.shape[-2:])


def _lse_dtype(q: Array):
    return _dt.float64 if q.dtype is _dt.float64 else _dt.float32


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, *,
                                 enable_gqa=False, generator=None, return_stats=False):
    """``softmax(q @ k^T * scale + mask) @ v`` (PyTorch semantics); with ``return_stats`` returns
    ``(out, lse, rng_state)`` for the backward entry."""
    op = "scaled_dot_product_attention"
    qs, ks, vs, mask, batch, out_batch, p, sc = _prepare(op, q, k, v, attn_mask, dropout_p, is_causal, scale,
                                                         enable_gqa)
    dev = q.device
    L, ev = q.shape[-2], v.shape[-1]
    out = _empty(batch + (L, ev), q.dtype, dev)
    lse = _empty(batch + (L,), _lse_dtype(q), dev) if return_stats else None
    gen = state = None
    if p > 0:
        _capture.refuse(op, "with dropout_p > 0 its backward redraws the mask from a generator state taken on the "
                            "host, which a replay would not take again", "capture it with dropout_p=0.0 (eval mode)")
        gen = _gen(generator)
        state = gen.get_state()
    lookup(op, dev)(out, lse, _bcast(qs, batch), _bcast(ks, batch), _bcast(vs, batch), mask, p, bool(is_causal),
                    sc, gen)
    if out_batch != batch:
        out = out.reshape(out_batch + (L, ev))
        lse = None if lse is None else lse.reshape(out_batch + (L,))
    return (out, lse, state) if return_stats else out


def scaled_dot_product_attention_backward(grad, q, k, v, out, lse, attn_mask=None, dropout_p=0.0, is_causal=False,
                                          scale=None, *, enable_gqa=False, rng_state=None, needs=(True, True, True)):
    """Gradients ``(dq, dk, dv)`` of ``scaled_dot_product_attention`` (same arguments as the forward) for
    ``grad`` of the output's shape; ``out`` and ``lse`` (may be None: recomputed) come from the forward with
    ``return_stats=True``, and so does ``rng_state`` when ``dropout_p > 0``."""
    op = "scaled_dot_product_attention_backward"
    nq, nk, nv = _pick(needs, op)
    qs, ks, vs, mask, batch, out_batch, p, sc = _prepare(op, q, k, v, attn_mask, dropout_p, is_causal, scale,
                                                         enable_gqa)
    L, ev = q.shape[-2], v.shape[-1]
    oshape = out_batch + (L, ev)
    for name, a in (("grad", grad), ("out", out)):
        _float(op, name, a)
        if a.shape != oshape:
            raise OpValueError(f"{op}: {name} {describe(a)} does not have the output shape {oshape} of the attention "
                               f"of q {describe(q)}, k {describe(k)}, v {describe(v)}")
    check_device(op, q, grad, out)
    if lse is not None:
        _float(op, "lse", lse)
        if lse.shape != oshape[:-1]:
            raise OpValueError(f"{op}: lse {describe(lse)} must have shape {oshape[:-1]} (the forward's "
                               f"return_stats output)")
        check_device(op, q, lse)
    gen = None
    if p > 0:
        if rng_state is None:
            raise OpValueError(f"{op}: dropout_p={dropout_p} needs the rng_state returned by the forward with "
                               f"return_stats=True, to redraw its dropout mask")
        gen = Generator(0)
        gen.set_state(rng_state)
    dev = q.device
    dq = _empty(q.shape, q.dtype, dev) if nq else None
    dk = _empty(k.shape, k.dtype, dev) if nk else None
    dv = _empty(v.shape, v.dtype, dev) if nv else None
    wshape = batch + (L, ev)
    lookup(op, dev)(None if dq is None else dq.reshape(qs.shape), None if dk is None else dk.reshape(ks.shape),
                    None if dv is None else dv.reshape(vs.shape), grad.reshape(wshape), _bcast(qs, batch),
                    _bcast(ks, batch), _bcast(vs, batch), out.reshape(wshape),
                    None if lse is None else lse.reshape(wshape[:-1]), mask, p, bool(is_causal), sc, gen)
    return dq, dk, dv
