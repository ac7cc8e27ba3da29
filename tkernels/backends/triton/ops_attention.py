"""Scaled dot-product attention and its backward on cuda (``tkernels/kernels/attention.py``); signatures as the
NumPy backend (``tkernels/ops/attention.py``)::

    scaled_dot_product_attention(out, lse, q, k, v, attn_mask, dropout_p, is_causal, scale, generator)
    scaled_dot_product_attention_backward(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p,
                                          is_causal, scale, generator)

The fused flash-attention kernels run for head dims up to ``MAX_FUSED_DIM`` (256): causal or not, with a bool
or additive ``attn_mask`` (read in place through its broadcast strides; fully masked rows give zeros), with
dropout (its mask drawn in the kernels from the generator's Philox stream, ``generator.philox_next(B * L * S)``:
the weight at flat index ``i`` of ``(B, L, S)`` is kept when the uniform of word ``offset + i`` is >= p, as
``tkernels.ops.dropout`` draws on cuda; the backward, given the forward's generator state, draws the same words
again; the mask differs from cpu's PCG64 draw, as PyTorch's cuda and cpu masks differ). q, k, v, the mask, out and
grad are read in place through their strides whenever the broadcast batch shape collapses to three strided dims
for all of them; otherwise they are first made contiguous on the device.

Head dims past 256 take a composite of device ops (``tk.matmul``, elementwise ops, reductions, the dropout
kernel on the weights with the same Philox words; float32 for halves) that materializes the ``(B, L, S)`` scores.

The backward sums each gradient down to the shape of its ``dq``/``dk``/``dv`` (broadcast batch dims, GQA) with
the reduction kernels; a gradient whose shape is the broadcast shape is written in place when contiguous.
"""

from __future__ import annotations

import math

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.attention import (
    MASK_ADD,
    MASK_BOOL,
    MASK_NONE,
    attn_bwd_dkdv_kernel,
    attn_bwd_dq_kernel,
    attn_bwd_pre_kernel,
    attn_fwd_kernel,
)
from ._launch import INTERPRETED, collapse
from .memory import copy_, empty, fill
from .ops_dropout import PhiloxDropoutMask, _apply
from .ops_softmax import pow2, run
from .random import f64_halves, halves

MAX_FUSED_DIM = 256
# interpreted: blocks fit the test sizes (each program and each loop step costs Python time, not FLOPs)
INTERPRET_MAX_BLOCK = 64


def config(L: int, S: int, d: int, dtype) -> dict:
    """BLOCK_M, BLOCK_N (and num_warps, num_stages on a GPU) for a padded head dim ``d`` (the max of q's and v's)."""
    if INTERPRETED:
        return {"BLOCK_M": min(max(pow2(L), 16), INTERPRET_MAX_BLOCK),
                "BLOCK_N": min(max(pow2(S), 16), INTERPRET_MAX_BLOCK)}
    wide = dtype is _dt.float32 or dtype is _dt.float64
    if d <= 64 and not wide:
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}
    if d <= 128 and dtype is not _dt.float64:
        return {"BLOCK_M": 64 if wide else 128, "BLOCK_N": 64, "num_warps": 4 if wide else 8, "num_stages": 2}
    if not wide:
        return {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 1}
    # float32 past 128 and float64 past 64: tiles sized to fit sm_80's 163 KB of shared memory in the backward
    # (measured with triton.compile; tests/tkernels/cuda/test_aot.py checks every compiled spec's shared size)
    block = 16 if dtype is _dt.float64 and d > 128 else 32
    return {"BLOCK_M": block, "BLOCK_N": block, "num_warps": 4, "num_stages": 1}


def _dim(n: int) -> int:
    return max(pow2(n), 16)


def _contig(a: Array) -> Array:
    if a.is_contiguous():
        return a
    c = empty(a._shape, a._dtype, a._device)
    copy_(c, a)
    return c


def _batch_plan(arrays: list) -> tuple:
    """(B, B1, B2, per-operand (sb0, sb1, sb2, s_row, s_col), arrays) with the broadcast batch shape collapsed to 3
    strided dims; operands are made contiguous first when it does not collapse that far."""
    batch = arrays[0]._shape[:-2]
    for _ in range(2):
        try:
            sizes, strides = collapse(list(batch), *[list(a._strides[:-2]) for a in arrays])
        except ValueError:
            sizes = None
        if sizes is not None and all(s == 1 for s in sizes[:3]):
            B = sizes[3] * sizes[4] * sizes[5]
            st = [tuple(s[3:]) + tuple(a._strides[-2:]) for s, a in zip(strides, arrays)]
            return B, sizes[4], sizes[5], st, arrays
        arrays = [_contig(a) for a in arrays]
    raise AssertionError("contiguous operands collapse to one batch dim")


def _fused_ok(q: Array, v: Array) -> bool:
    return q._shape[-1] <= MAX_FUSED_DIM and v._shape[-1] <= MAX_FUSED_DIM


def _flags(q: Array, mask, is_causal: bool, dropout_p: float, E: int, EV: int, L: int, S: int) -> dict:
    dt = q._dtype
    meta = config(L, S, max(_dim(E), _dim(EV)), dt)
    meta.update(CAUSAL=bool(is_causal), MASK=MASK_NONE if mask is None else
                (MASK_BOOL if mask._dtype is _dt.bool else MASK_ADD), DROPOUT=dropout_p > 0,
                F64=dt is _dt.float64, HALF=dt is _dt.float16 or dt is _dt.bfloat16,
                IEEE=dt is _dt.float32 or dt is _dt.float64, BLOCK_D=_dim(E), BLOCK_DV=_dim(EV))
    return meta


def _rng_args(generator, n: int, dropout_p: float) -> tuple:
    """(dropout scale, seed, offset as int32 halves, p) for the kernels; draws ``n`` words of ``generator``."""
    if dropout_p <= 0:
        return (0, 0, 0, 0, 0, 0, 0.0)
    seed, offset = generator.philox_next(n)
    return (*f64_halves(_keep_scale(dropout_p)), *halves(seed), *halves(offset), float(dropout_p))


def _forward_fused(out, lse, q, k, v, mask, dropout_p, is_causal, scale, generator) -> None:
    L, E = q._shape[-2:]
    S, EV = v._shape[-2:]
    ops = [q, k, v] if mask is None else [q, k, v, mask]
    B, B1, B2, st, ops = _batch_plan(ops)
    q, k, v = ops[:3]
    sm = st[3] if mask is not None else (0,) * 5
    meta = _flags(q, mask, is_causal, dropout_p, E, EV, L, S)
    if lse is None:  # the kernel always writes the statistics (B * L floats)
        lse = empty(q._shape[:-2] + (L,), _acc(q), q.device)
    run(attn_fwd_kernel, (B, -(-L // meta["BLOCK_M"])), q, k, v, ops[-1], out, lse, L, S, E, EV, B1, B2,
        *f64_halves(scale), *_rng_args(generator, B * L * S, dropout_p), *st[0], *st[1], *st[2], *sm, **meta)


# ------------------------------------------------------------------------------------------- composite path
def _acc(q: Array):
    return _dt.float64 if q._dtype is _dt.float64 else _dt.float32


def _scores(q, k, mask, is_causal: bool, scale: float) -> Array:
    """Scaled scores (B..., L, S) in the accumulator dtype, masked positions at -inf (bool, causal) or the float
    mask added."""
    import tkernels as tk

    acc = _acc(q)
    s = tk.matmul(q.astype(acc, copy=False), k.astype(acc, copy=False).mT) * scale
    L, S = s.shape[-2:]
    if is_causal:
        keep = tk.arange(S, device=q.device) <= tk.arange(L, device=q.device).reshape((L, 1))
        return tk.where(keep, s, -math.inf)
    if mask is not None:
        if mask._dtype is _dt.bool:
            return tk.where(mask, s, -math.inf)
        return s + mask.astype(acc, copy=False)
    return s


def _softmax(s: Array):
    """(p, lse) along the last axis; all -inf rows give p = 0 and lse = -inf (PyTorch's _safe_softmax)."""
    import tkernels as tk

    m = tk.max(s, axis=-1, keepdims=True)
    m = tk.where(m == -math.inf, 0.0, m)
    e = tk.exp(s - m)
    total = tk.sum(e, axis=-1, keepdims=True)
    lse = tk.log(total) + m
    return e / tk.where(total == 0, 1.0, total), lse.reshape(lse.shape[:-1])


def _dropout_mask(generator, shape, p: float, device) -> PhiloxDropoutMask:
    n = 1
    for s in shape:
        n *= s
    seed, offset = generator.philox_next(n)
    return PhiloxDropoutMask(seed, offset, tuple(shape), float(p), device)


def _keep_scale(p: float) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


def _forward_composite(out, lse, q, k, v, mask, dropout_p, is_causal, scale, generator) -> None:
    import tkernels as tk

    p, row_lse = _softmax(_scores(q, k, mask, is_causal, scale))
    if dropout_p > 0:
        p = _apply(p, _dropout_mask(generator, p.shape, dropout_p, q.device), _keep_scale(dropout_p))
    copy_(out, tk.matmul(p, v.astype(p.dtype, copy=False)))
    if lse is not None:
        copy_(lse, row_lse)


@register("scaled_dot_product_attention", "triton")
def scaled_dot_product_attention(out, lse, q, k, v, attn_mask, dropout_p, is_causal, scale, generator) -> None:
    S = k._shape[-2]
    if out.size == 0 and (lse is None or lse.size == 0):
        return
    if S == 0:  # nothing to attend to: zeros, lse = -inf
        fill(out, 0.0)
        if lse is not None:
            fill(lse, -math.inf)
        return
    if _fused_ok(q, v):
        _forward_fused(out, lse, q, k, v, attn_mask, dropout_p, is_causal, float(scale), generator)
    else:
        _forward_composite(out, lse, q, k, v, attn_mask, dropout_p, is_causal, scale, generator)


# ---------------------------------------------------------------------------------------------- backward
def _store_reduced(dst: Array | None, full: Array) -> None:
    """Write a gradient computed over the broadcast batch shape, summed down to ``dst``'s shape."""
    import tkernels as tk

    if dst is None or full is dst:
        return
    extra = full.ndim - dst.ndim
    axes = tuple(range(extra)) + tuple(extra + i for i, (a, b) in enumerate(zip(dst._shape, full._shape[extra:]))
                                       if a == 1 and b != 1)
    if axes:
        full = tk.sum(full, axis=axes, keepdims=True).reshape(dst._shape)
    copy_(dst, full)


def _grad_buffer(dst: Array | None, shape, acc, device) -> Array | None:
    """Where the kernel writes a gradient: ``dst`` itself when it is contiguous of the broadcast shape; a buffer of
    ``dst``'s dtype when it has that shape only; else a buffer of the accumulator dtype, summed down later."""
    if dst is None:
        return None
    if tuple(dst._shape) == tuple(shape):
        return dst if dst.is_contiguous() else empty(tuple(shape), dst._dtype, device)
    return empty(tuple(shape), acc, device)


def _backward_fused(dq, dk, dv, grad, q, k, v, out, lse, mask, dropout_p, is_causal, scale, generator) -> None:
    L, E = q._shape[-2:]
    S, EV = v._shape[-2:]
    batch = q._shape[:-2]
    dev = q.device
    if lse is None:  # recompute the statistics (the output goes to a scratch buffer; lse does not see dropout)
        lse = empty(batch + (L,), _acc(q), dev)
        _forward_fused(empty(batch + (L, EV), q._dtype, dev), lse, q, k, v, mask, 0.0, is_causal, scale, None)
    lse = _contig(lse)
    ops = [q, k, v, grad, out] if mask is None else [q, k, v, grad, out, mask]
    B, B1, B2, st, ops = _batch_plan(ops)
    q, k, v, grad, out = ops[:5]
    sq, sk, sv, sg, so = st[:5]
    sm = st[5] if mask is not None else (0,) * 5
    meta = _flags(q, mask, is_causal, dropout_p, E, EV, L, S)
    acc = _acc(q)
    gq = _grad_buffer(dq, batch + (L, E), acc, dev)
    gk = _grad_buffer(dk, batch + (S, E), acc, dev)
    gv = _grad_buffer(dv, batch + (S, EV), acc, dev)
    if gk is not None or gq is not None:
        delta = empty(batch + (L,), acc, dev)
        run(attn_bwd_pre_kernel, (B, -(-L // meta["BLOCK_M"])), out, grad, delta, L, EV, B1, B2, *so, *sg,
            F64=meta["F64"], BLOCK_M=meta["BLOCK_M"], BLOCK_DV=meta["BLOCK_DV"])
    else:
        delta = lse
    args = (L, S, E, EV, B1, B2, *f64_halves(scale), *_rng_args(generator, B * L * S, dropout_p), *sq, *sk, *sv, *sm,
            *sg)
    if gk is not None or gv is not None:
        run(attn_bwd_dkdv_kernel, (B, -(-S // meta["BLOCK_N"])), q, k, v, ops[-1], grad, lse, delta, _or(gk, lse),
            _or(gv, lse), *args, HAS_DK=gk is not None, HAS_DV=gv is not None, **meta)
    if gq is not None:
        run(attn_bwd_dq_kernel, (B, -(-L // meta["BLOCK_M"])), q, k, v, ops[-1], grad, lse, delta, gq, *args, **meta)
    for d, g in ((dq, gq), (dk, gk), (dv, gv)):
        _store_reduced(d, g)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _or(a, b):
    return b if a is None else a


def _backward_composite(dq, dk, dv, grad, q, k, v, out, lse, mask, dropout_p, is_causal, scale, generator) -> None:
    import tkernels as tk

    acc = _acc(q)
    s = _scores(q, k, mask, is_causal, scale)
    if lse is None:
        p, _ = _softmax(s)
    else:
        row = lse.astype(acc, copy=False).expand_dims(-1)
        p = tk.exp(s - tk.where(row == -math.inf, math.inf, row))  # fully masked rows: exp(-inf) = 0
    keep = None
    if dropout_p > 0:
        keep = _dropout_mask(generator, p.shape, dropout_p, q.device)
    g = grad.astype(acc, copy=False)
    if dv is not None:
        pd = p if keep is None else _apply(p, keep, _keep_scale(dropout_p))
        _store_reduced(dv, tk.matmul(pd.mT, g))
    if dq is None and dk is None:
        return
    dp = tk.matmul(g, v.astype(acc, copy=False).mT)
    if keep is not None:
        dp = _apply(dp, keep, _keep_scale(dropout_p))
    ds = p * (dp - tk.sum(dp * p, axis=-1, keepdims=True)) * scale
    if dq is not None:
        _store_reduced(dq, tk.matmul(ds, k.astype(acc, copy=False)))
    if dk is not None:
        _store_reduced(dk, tk.matmul(ds.mT, q.astype(acc, copy=False)))


@register("scaled_dot_product_attention_backward", "triton")
def scaled_dot_product_attention_backward(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p, is_causal,
                                          scale, generator) -> None:
    L, S = q._shape[-2], k._shape[-2]
    batch = q._shape[:-2]
    if L == 0 or S == 0 or _numel(batch) == 0:  # no pair of positions interacts: zero gradients
        for d in (dq, dk, dv):
            if d is not None and d.size:
                fill(d, 0.0)
        return
    if _fused_ok(q, v):
        _backward_fused(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p, is_causal, float(scale),
                        generator)
    else:
        _backward_composite(dq, dk, dv, grad, q, k, v, out, lse, attn_mask, dropout_p, is_causal, scale, generator)
