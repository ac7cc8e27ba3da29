"""Fused scaled dot-product attention, forward and backward (flash attention 2, after Triton's fused-attention
tutorial), for any sequence lengths and head dims up to 256.

The host (``tkernels/backends/triton/ops_attention.py``) flattens the broadcast batch shape to ``B`` entries split
in three strided dimensions (``b0, b1, b2`` of sizes ``B / (B1 * B2), B1, B2``): each operand is read in place
through its own batch, row and feature strides (broadcast dims have stride 0). ``out``, ``lse``, ``delta`` and the
gradients are contiguous ``(B, rows, features)``. Feature dims are padded to a power of two >= 16
(``BLOCK_D`` for q/k, ``BLOCK_DV`` for v) with masked loads: padded lanes read 0 and are never stored.

Forward: one program per ``BLOCK_M`` query rows of one batch entry walks the keys ``BLOCK_N`` at a time with an
online softmax (running row max ``m``, running sum ``l``, output accumulator rescaled by ``exp(m_old - m_new)``),
then writes ``out = acc / l`` and ``lse = m + log(l)``. ``CAUSAL`` keeps key ``j <= i`` (PyTorch's top-left
aligned ``tril(ones(L, S))``) and stops the walk at the diagonal. ``MASK`` reads an explicit mask tile through
its strides (bool: selects; additive: added to the scaled scores); a row masked so far keeps ``m = -inf`` and
subtracts 0 instead, and a fully masked row ends with ``l = 0``: zeros and ``lse = -inf`` (PyTorch's
``_safe_softmax``). ``DROPOUT`` drops weights after the row sums (``lse`` is that of the undropped softmax) with
the keep mask of ``tkernels.kernels.dropout``'s Philox stream at the flat index ``(b * L + i) * S + j`` of the
weights, and scales the output by ``1 / (1 - p)``; the backward kernels regenerate the same mask.

Backward (no atomics, deterministic): ``attn_bwd_pre_kernel`` computes ``delta = rowsum(dO * O)``;
``attn_bwd_dkdv_kernel`` owns ``BLOCK_N`` keys and walks the query blocks, recomputing ``P^T = exp(K Q^T * scale -
lse)`` and accumulating ``dV += P^T dO`` and ``dK += dS^T Q`` with ``dS = P * (dO V^T - delta)``;
``attn_bwd_dq_kernel`` owns ``BLOCK_M`` queries and walks the keys, accumulating ``dQ += dS K``. With dropout
``dV`` takes the dropped, scaled weights and ``dO V^T`` is dropped and scaled before ``dS`` (``delta`` is still
``rowsum(dO * O)``); fully masked rows (``lse = -inf``) give ``P = 0``.

Precision: products accumulate in float32 (``F64``: float64). Score products of float32 (and float64) inputs are
IEEE (``input_precision="ieee"``, no TF32). Halves multiply on tensor cores in their own dtype; the float32
probabilities (and dS) enter the second product as a sum of two halves (``hi = p.to(half)``, ``lo = (p - hi)
.to(half)``, two dots), which keeps ~22 bits of them instead of 11 (8 for bfloat16): results match the float32
reference to the tolerance of one rounding of the output.
"""

import triton
import triton.language as tl

from .random import f64_of, join64, philox, uniform_f32

MASK_NONE, MASK_BOOL, MASK_ADD = 0, 1, 2  # the MASK constexpr


@triton.jit
def _batch_offset(b, B1, B2, s0, s1, s2):
    """Offset of flat batch entry ``b`` in an operand of batch strides (s0, s1, s2) over sizes (., B1, B2)."""
    t = b // B2
    return (t // B1) * s0 + (t % B1) * s1 + (b % B2) * s2


@triton.jit
def _dot(a, b, acc, IEEE: tl.constexpr):
    # out_dtype stated: Triton 3.6 defaults it to float32 and rejects a float64 accumulator
    if IEEE:
        return tl.dot(a, b, acc, input_precision="ieee", out_dtype=acc.dtype)
    else:
        return tl.dot(a, b, acc, out_dtype=acc.dtype)


@triton.jit
def _dot_wide(p, x, acc, HALF: tl.constexpr, IEEE: tl.constexpr):
    """``acc + p @ x`` for ``p`` in the accumulator dtype and ``x`` in the input dtype (halves: p split in two)."""
    if HALF:
        hi = p.to(x.dtype)
        lo = (p - hi.to(p.dtype)).to(x.dtype)
        acc = tl.dot(hi, x, acc)
        return tl.dot(lo, x, acc)
    else:
        return _dot(p.to(x.dtype), x, acc, IEEE)


@triton.jit
def _mask_scores(s, valid, m_ptrs, MASK: tl.constexpr):
    """Scores with the explicit mask applied (``MASK`` 1: bool, selects; 2: additive) and the positions that are
    not ``valid`` (tails, causal) at -inf."""
    if MASK == 1:
        valid = valid & (tl.load(m_ptrs, mask=valid, other=0) != 0)
    if MASK == 2:
        s = s + tl.load(m_ptrs, mask=valid, other=0).to(s.dtype)
    return tl.where(valid, s, float("-inf"))


@triton.jit
def _keep(seed_lo, seed_hi, ctr_lo, ctr_hi, idx, p):
    """Dropout's keep mask of the weights at flat indices ``idx`` (int64) of ``(B, L, S)``: the uniform of word
    ``offset + idx`` of the Philox stream is >= p (the stream of ``tkernels.kernels.dropout``)."""
    ctr = (join64(ctr_lo, ctr_hi) >> 2) + (idx >> 2)
    c0 = ctr.to(tl.uint32)
    c1 = (ctr >> 32).to(tl.uint32)
    k0 = tl.to_tensor(seed_lo).to(tl.uint32, bitcast=True)
    k1 = tl.to_tensor(seed_hi).to(tl.uint32, bitcast=True)
    r0, r1, r2, r3 = philox(c0, c1, c0 * 0, c0 * 0, k0, k1)
    sel = idx & 3
    w = tl.where(sel == 0, r0, tl.where(sel == 1, r1, tl.where(sel == 2, r2, r3)))
    return uniform_f32(w) >= p


@triton.jit
def _scale_of(lo, hi, F64: tl.constexpr):
    """A float64 scalar passed as its bit pattern's int32 halves, in the accumulator dtype."""
    s = f64_of(lo, hi)
    if F64:
        return s
    else:
        return s.to(tl.float32)


_RNG = ["scale_lo", "scale_hi", "drop_lo", "drop_hi", "seed_lo", "seed_hi", "ctr_lo", "ctr_hi"]


@triton.jit(do_not_specialize=_RNG)
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, m_ptr, o_ptr, lse_ptr, L, S, E, EV, B1, B2, scale_lo, scale_hi,
                    drop_lo, drop_hi, seed_lo, seed_hi, ctr_lo, ctr_hi, p_drop,
                    sqb0, sqb1, sqb2, sqm, sqd, skb0, skb1, skb2, skn, skd, svb0, svb1, svb2, svn, svd,
                    smb0, smb1, smb2, smm, smn,
                    CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, F64: tl.constexpr,
                    HALF: tl.constexpr, IEEE: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    if F64:
        zero_mn = tl.zeros([BLOCK_M, BLOCK_N], tl.float64)
        acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float64)
    else:
        zero_mn = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    scale = _scale_of(scale_lo, scale_hi, F64)
    pid_m = tl.program_id(1)
    b = tl.program_id(0).to(tl.int64)
    rows = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    q_base = q_ptr + _batch_offset(b, B1, B2, sqb0, sqb1, sqb2)
    k_base = k_ptr + _batch_offset(b, B1, B2, skb0, skb1, skb2)
    v_base = v_ptr + _batch_offset(b, B1, B2, svb0, svb1, svb2)
    m_rows = m_ptr + _batch_offset(b, B1, B2, smb0, smb1, smb2) + rows[:, None] * smm
    row_ok = rows < L
    q = tl.load(q_base + rows[:, None] * sqm + d[None, :] * sqd, mask=row_ok[:, None] & (d[None, :] < E), other=0)
    m_i = tl.max(zero_mn, 1) - float("inf")
    l_i = tl.sum(zero_mn, 1)
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    else:
        hi = S
    for n0 in range(0, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        col_ok = cols < S
        kt = tl.load(k_base + cols[None, :] * skn + d[:, None] * skd, mask=col_ok[None, :] & (d[:, None] < E),
                     other=0)
        s = _dot(q, kt, zero_mn, IEEE) * scale
        valid = col_ok[None, :] & row_ok[:, None]  # [BLOCK_M, BLOCK_N]; padded rows: all -inf, never stored
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        s = _mask_scores(s, valid, m_rows + cols[None, :] * smn, MASK)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if MASK != 0:  # a row masked so far has m = -inf: subtract 0 instead (its p are exp(-inf) = 0)
            m_new = tl.where(m_new == float("-inf"), 0, m_new)
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            p = tl.where(_keep(seed_lo, seed_hi, ctr_lo, ctr_hi, (b * L + rows[:, None]) * S + cols[None, :], p_drop),
                         p, 0)
        vb = tl.load(v_base + cols[:, None] * svn + dv[None, :] * svd, mask=col_ok[:, None] & (dv[None, :] < EV),
                     other=0)
        acc = _dot_wide(p, vb, acc * alpha[:, None], HALF, IEEE)
        m_i = m_new
    if MASK != 0:  # fully masked rows: zeros and lse = -inf (PyTorch's _safe_softmax)
        m_i = tl.where(l_i == 0, float("-inf"), m_i)
        l_safe = tl.where(l_i == 0, 1, l_i)
    else:
        l_safe = l_i
    acc = acc / l_safe[:, None]
    if DROPOUT:
        acc = acc * _scale_of(drop_lo, drop_hi, F64)
    tl.store(o_ptr + b * L * EV + rows[:, None] * EV + dv[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None] & (dv[None, :] < EV))
    tl.store(lse_ptr + b * L + rows, (m_i + tl.log(l_safe)).to(lse_ptr.dtype.element_ty), mask=row_ok)


@triton.jit
def attn_bwd_pre_kernel(o_ptr, g_ptr, delta_ptr, L, EV, B1, B2, sob0, sob1, sob2, som, sod,
                        sgb0, sgb1, sgb2, sgm, sgd, F64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_DV: tl.constexpr):
    """``delta[b, i] = sum_d O[b, i, d] * dO[b, i, d]`` in the accumulator dtype."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    dv = tl.arange(0, BLOCK_DV)
    mask = (rows[:, None] < L) & (dv[None, :] < EV)
    o = tl.load(o_ptr + _batch_offset(b, B1, B2, sob0, sob1, sob2) + rows[:, None] * som + dv[None, :] * sod,
                mask=mask, other=0)
    g = tl.load(g_ptr + _batch_offset(b, B1, B2, sgb0, sgb1, sgb2) + rows[:, None] * sgm + dv[None, :] * sgd,
                mask=mask, other=0)
    if F64:
        t = o.to(tl.float64) * g.to(tl.float64)
    else:
        t = o.to(tl.float32) * g.to(tl.float32)
    tl.store(delta_ptr + b * L + rows, tl.sum(t, 1), mask=rows < L)


@triton.jit
def _safe_lse(lse, MASK: tl.constexpr):
    """Fully masked rows (lse = -inf) give p = exp(-inf - inf) = 0."""
    if MASK != 0:
        return tl.where(lse == float("-inf"), float("inf"), lse)
    else:
        return lse


@triton.jit(do_not_specialize=_RNG)
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, m_ptr, g_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, L, S, E, EV, B1, B2,
                         scale_lo, scale_hi, drop_lo, drop_hi, seed_lo, seed_hi, ctr_lo, ctr_hi, p_drop,
                         sqb0, sqb1, sqb2, sqm, sqd, skb0, skb1, skb2, skn, skd, svb0, svb1, svb2, svn, svd,
                         smb0, smb1, smb2, smm, smn, sgb0, sgb1, sgb2, sgm, sgd,
                         CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, HAS_DK: tl.constexpr,
                         HAS_DV: tl.constexpr, F64: tl.constexpr, HALF: tl.constexpr, IEEE: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                         BLOCK_DV: tl.constexpr):
    """dK and dV of ``BLOCK_N`` keys (transposed tiles: keys along dim 0, queries along dim 1)."""
    if F64:
        zero_nm = tl.zeros([BLOCK_N, BLOCK_M], tl.float64)
        dk_acc = tl.zeros([BLOCK_N, BLOCK_D], tl.float64)
        dv_acc = tl.zeros([BLOCK_N, BLOCK_DV], tl.float64)
    else:
        zero_nm = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
        dk_acc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
        dv_acc = tl.zeros([BLOCK_N, BLOCK_DV], tl.float32)
    scale = _scale_of(scale_lo, scale_hi, F64)
    drop_scale = _scale_of(drop_lo, drop_hi, F64)
    pid_n = tl.program_id(1)
    b = tl.program_id(0).to(tl.int64)
    cols = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < S
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    q_base = q_ptr + _batch_offset(b, B1, B2, sqb0, sqb1, sqb2)
    g_base = g_ptr + _batch_offset(b, B1, B2, sgb0, sgb1, sgb2)
    m_cols = m_ptr + _batch_offset(b, B1, B2, smb0, smb1, smb2) + cols[:, None] * smn
    kb = tl.load(k_ptr + _batch_offset(b, B1, B2, skb0, skb1, skb2) + cols[:, None] * skn + d[None, :] * skd,
                 mask=col_ok[:, None] & (d[None, :] < E), other=0)
    vb = tl.load(v_ptr + _batch_offset(b, B1, B2, svb0, svb1, svb2) + cols[:, None] * svn + dv[None, :] * svd,
                 mask=col_ok[:, None] & (dv[None, :] < EV), other=0)
    if CAUSAL:
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M  # queries i < j see nothing of key j
    else:
        lo = 0
    for m0 in range(lo, L, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
        row_ok = rows < L
        qt = tl.load(q_base + rows[None, :] * sqm + d[:, None] * sqd, mask=row_ok[None, :] & (d[:, None] < E),
                     other=0)
        lse = _safe_lse(tl.load(lse_ptr + b * L + rows, mask=row_ok, other=0).to(zero_nm.dtype), MASK)
        valid = col_ok[:, None] & row_ok[None, :]
        if CAUSAL:
            valid = valid & (cols[:, None] <= rows[None, :])
        st = _mask_scores(_dot(kb, qt, zero_nm, IEEE) * scale, valid, m_cols + rows[None, :] * smm, MASK)
        pt = tl.exp(st - lse[None, :])
        gb = tl.load(g_base + rows[:, None] * sgm + dv[None, :] * sgd, mask=row_ok[:, None] & (dv[None, :] < EV),
                     other=0).to(kb.dtype)
        if DROPOUT:
            keep = _keep(seed_lo, seed_hi, ctr_lo, ctr_hi, (b * L + rows[None, :]) * S + cols[:, None], p_drop)
        if HAS_DV:
            if DROPOUT:
                dv_acc = _dot_wide(tl.where(keep, pt * drop_scale, 0), gb, dv_acc, HALF, IEEE)
            else:
                dv_acc = _dot_wide(pt, gb, dv_acc, HALF, IEEE)
        if HAS_DK:
            delta = tl.load(delta_ptr + b * L + rows, mask=row_ok, other=0)
            dpt = _dot(vb, tl.trans(gb), zero_nm, IEEE)
            if DROPOUT:
                dpt = tl.where(keep, dpt * drop_scale, 0)
            dk_acc = _dot_wide(pt * (dpt - delta[None, :]), tl.trans(qt), dk_acc, HALF, IEEE)
    if HAS_DK:
        tl.store(dk_ptr + b * S * E + cols[:, None] * E + d[None, :], (dk_acc * scale).to(dk_ptr.dtype.element_ty),
                 mask=col_ok[:, None] & (d[None, :] < E))
    if HAS_DV:
        tl.store(dv_ptr + b * S * EV + cols[:, None] * EV + dv[None, :], dv_acc.to(dv_ptr.dtype.element_ty),
                 mask=col_ok[:, None] & (dv[None, :] < EV))


@triton.jit(do_not_specialize=_RNG)
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, m_ptr, g_ptr, lse_ptr, delta_ptr, dq_ptr, L, S, E, EV, B1, B2,
                       scale_lo, scale_hi, drop_lo, drop_hi, seed_lo, seed_hi, ctr_lo, ctr_hi, p_drop,
                       sqb0, sqb1, sqb2, sqm, sqd, skb0, skb1, skb2, skn, skd, svb0, svb1, svb2, svn, svd,
                       smb0, smb1, smb2, smm, smn, sgb0, sgb1, sgb2, sgm, sgd,
                       CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, F64: tl.constexpr,
                       HALF: tl.constexpr, IEEE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    """dQ of ``BLOCK_M`` queries."""
    if F64:
        zero_mn = tl.zeros([BLOCK_M, BLOCK_N], tl.float64)
        dq_acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float64)
    else:
        zero_mn = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        dq_acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    scale = _scale_of(scale_lo, scale_hi, F64)
    drop_scale = _scale_of(drop_lo, drop_hi, F64)
    pid_m = tl.program_id(1)
    b = tl.program_id(0).to(tl.int64)
    rows = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < L
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    k_base = k_ptr + _batch_offset(b, B1, B2, skb0, skb1, skb2)
    v_base = v_ptr + _batch_offset(b, B1, B2, svb0, svb1, svb2)
    m_rows = m_ptr + _batch_offset(b, B1, B2, smb0, smb1, smb2) + rows[:, None] * smm
    qb = tl.load(q_ptr + _batch_offset(b, B1, B2, sqb0, sqb1, sqb2) + rows[:, None] * sqm + d[None, :] * sqd,
                 mask=row_ok[:, None] & (d[None, :] < E), other=0)
    gb = tl.load(g_ptr + _batch_offset(b, B1, B2, sgb0, sgb1, sgb2) + rows[:, None] * sgm + dv[None, :] * sgd,
                 mask=row_ok[:, None] & (dv[None, :] < EV), other=0).to(qb.dtype)
    lse = _safe_lse(tl.load(lse_ptr + b * L + rows, mask=row_ok, other=0).to(zero_mn.dtype), MASK)
    delta = tl.load(delta_ptr + b * L + rows, mask=row_ok, other=0)
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    else:
        hi = S
    for n0 in range(0, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        col_ok = cols < S
        kt = tl.load(k_base + cols[None, :] * skn + d[:, None] * skd, mask=col_ok[None, :] & (d[:, None] < E),
                     other=0)
        vt = tl.load(v_base + cols[None, :] * svn + dv[:, None] * svd, mask=col_ok[None, :] & (dv[:, None] < EV),
                     other=0)
        valid = row_ok[:, None] & col_ok[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        s = _mask_scores(_dot(qb, kt, zero_mn, IEEE) * scale, valid, m_rows + cols[None, :] * smn, MASK)
        p = tl.exp(s - lse[:, None])
        dp = _dot(gb, vt, zero_mn, IEEE)
        if DROPOUT:
            keep = _keep(seed_lo, seed_hi, ctr_lo, ctr_hi, (b * L + rows[:, None]) * S + cols[None, :], p_drop)
            dp = tl.where(keep, dp * drop_scale, 0)
        dq_acc = _dot_wide(p * (dp - delta[:, None]), tl.trans(kt), dq_acc, HALF, IEEE)
    tl.store(dq_ptr + b * L * E + rows[:, None] * E + d[None, :], (dq_acc * scale).to(dq_ptr.dtype.element_ty),
             mask=row_ok[:, None] & (d[None, :] < E))
