"""Cross-entropy and NLL loss from logits / log-probabilities, forward and backward, without materializing
probabilities: the class axis is walked in ``BLOCK_C`` chunks with an online max / sum-exp per lane, so
vocabularies of any size take the same code (one pass forward; backward one pass more to write the gradient).

Layout (``tkernels/backends/triton/ops_loss.py``): ``M`` rows, the class axis ``C`` long with its own stride in
every operand (``stride_zc``...), the kept axes collapsed jointly and walked by strides (``ROW_ND`` as in
``softmax.py``): logits, targets and the logits' gradient are read and written in place. Per-row outputs (loss
rows, lse, row weights) and per-row inputs (a "none" gradient) are contiguous, indexed by the row number.

Semantics follow PyTorch (``tkernels/ops/loss.py``): ``ignore_index`` rows add nothing and weigh nothing;
``weight[t]`` scales a row and sums into the mean's denominator; label smoothing ``ls`` mixes in the uniform
target, weighted. A class index outside ``[0, C)`` (other than ignore_index) is recorded by the forward kernel in
the device's error buffer (``errors.py``; the host raises the ``IndexError`` at its next synchronising call); its
row's loss and gradient are NaN, and nothing is read out of bounds (PyTorch raises a device-side assert).

Floats arrive as float64 bit patterns in int64 arguments (``ls_bits``, ``g_bits``), so float64 keeps them whole.
"""

import triton
import triton.language as tl

from . import errors
from .strided import strided_offset

_INF = tl.constexpr(float("inf"))
_SUM = tl.standard._sum_combine
_MAXIMUM = tl.standard._elementwise_max


@triton.jit
def _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, t0, t1, t2, t3, t4, t5, ROW_ND: tl.constexpr):
    if ROW_ND == 1:
        return rows * t5
    else:
        return strided_offset(rows, ks1, ks2, ks3, ks4, ks5, t0, t1, t2, t3, t4, t5)


@triton.jit
def _class_target(t_ptr, t_row, w_ptr, stride_w, row_mask, ignore_index, C, one, HAS_W: tl.constexpr):
    """(class index clamped into range, valid (not ignored) row, out-of-range row, the row's weight)."""
    t = tl.load(t_ptr + t_row, mask=row_mask, other=0).to(tl.int64)
    valid = (t != ignore_index) & row_mask
    bad = valid & ((t < 0) | (t >= C))
    tc = tl.where(valid & (bad == 0), t, 0)
    if HAS_W:
        wt = tl.load(w_ptr + tc * stride_w, mask=valid, other=0).to(one.dtype)
    else:
        wt = one
    return tc, valid, bad, tl.where(valid, wt, 0 * one)


@triton.jit(do_not_specialize=["ignore_index", "ls_bits"])
def ce_fwd_kernel(z_ptr, t_ptr, w_ptr, loss_ptr, lse_ptr, rw_ptr, err_ptr, M, C, ignore_index, ls_bits,
                  stride_zc, stride_tc, stride_w,
                  ks1, ks2, ks3, ks4, ks5, zt0, zt1, zt2, zt3, zt4, zt5, tt0, tt1, tt2, tt3, tt4, tt5,
                  PROB: tl.constexpr, NLL: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr,
                  STORE_LSE: tl.constexpr, STORE_RW: tl.constexpr, F64: tl.constexpr, ROW_ND: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_M, BLOCK_C], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_C], 0, tl.float32)
    one = tl.reduce(zero, 1, _SUM, keep_dims=True) + 1  # a [BLOCK_M, 1] column of ones
    ls = ls_bits.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    z_row = _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, zt0, zt1, zt2, zt3, zt4, zt5, ROW_ND)
    t_row = _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, tt0, tt1, tt2, tt3, tt4, tt5, ROW_ND)
    cols = tl.arange(0, BLOCK_C).to(tl.int64)[None, :]
    if not PROB:
        tc, valid, bad, wt = _class_target(t_ptr, t_row, w_ptr, stride_w, row_mask, ignore_index, C, one, HAS_W)
        zt = tl.load(z_ptr + (z_row + tc * stride_zc), mask=valid, other=0).to(zero.dtype)
        errors.record_error(err_ptr, bad, tl.load(t_ptr + t_row, mask=bad, other=0), rows,
                            errors.CROSS_ENTROPY + NLL, C)  # NLL_LOSS is CROSS_ENTROPY + 1
    if NLL:
        loss = -wt * zt
    else:
        # one pass over the classes, per lane: running max m, s = sum exp(z - m), and the sums smoothing or
        # probability targets need
        m = zero - _INF
        s = zero
        sz = zero  # sum of w_c z_c (smoothing) / of wq_c z_c (probabilities)
        sw = zero  # sum of w_c (smoothing) / of wq_c (probabilities)
        sn = zero  # NaN once a lane met a NaN logit (tl.maximum drops NaN: the row's lse must be NaN, as on cpu)
        for c0 in range(0, C, BLOCK_C):
            c = c0 + cols
            cmask = c < C
            mask = row_mask & cmask
            v = tl.load(z_ptr + (z_row + c * stride_zc), mask=mask, other=-_INF).to(zero.dtype)
            m_new = tl.maximum(m, v)
            s = s * tl.where(m == -_INF, zero, tl.exp(m - m_new)) + tl.where(v == -_INF, zero, tl.exp(v - m_new))
            m = m_new
            sn = sn + tl.where(v != v, v, zero)
            vz = tl.where(mask, v, zero)
            if HAS_W:
                wc = tl.load(w_ptr + c * stride_w, mask=cmask, other=0).to(zero.dtype) + zero
            else:
                wc = tl.where(mask, zero + 1, zero)
            if PROB:
                q = tl.load(t_ptr + (t_row + c * stride_tc), mask=mask, other=0).to(zero.dtype)
                if SMOOTH:
                    q = tl.where(mask, q * (1 - ls) + ls / C, zero)
                wc = wc * q
            if PROB or SMOOTH:
                sz = sz + wc * vz
                sw = sw + wc
        mx = tl.reduce(m, 1, _MAXIMUM, keep_dims=True)
        log_s = tl.log(tl.reduce(tl.where(m == -_INF, zero, s * tl.exp(m - mx)), 1, _SUM, keep_dims=True))
        log_s = log_s + tl.reduce(sn, 1, _SUM, keep_dims=True)
        if PROB:  # lse * sum(wq) - sum(wq z)
            loss = (mx + log_s) * tl.reduce(sw, 1, _SUM, keep_dims=True) - tl.reduce(sz, 1, _SUM, keep_dims=True)
        else:
            loss = wt * ((mx - zt) + log_s)  # lse - z[t], without a large intermediate
            if SMOOTH:  # sum_c w_c (lse - z_c)
                smooth = (mx + log_s) * tl.reduce(sw, 1, _SUM, keep_dims=True) - tl.reduce(sz, 1, _SUM,
                                                                                          keep_dims=True)
                loss = (1 - ls) * loss + (ls / C) * smooth
        if STORE_LSE:
            tl.store(lse_ptr + rows, (mx + log_s).to(lse_ptr.dtype.element_ty), mask=row_mask)
    if not PROB:
        loss = tl.where(valid, loss, 0 * one)  # an ignored row of inf logits must not give NaN
        loss = tl.where(bad, loss + float("nan"), loss)
        if STORE_RW:
            tl.store(rw_ptr + rows, wt.to(rw_ptr.dtype.element_ty), mask=row_mask)
    tl.store(loss_ptr + rows, loss.to(loss_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def loss_sum_kernel(x_ptr, w_ptr, out_ptr, M, MEAN: tl.constexpr, HAS_W: tl.constexpr, F64: tl.constexpr,
                    BLOCK: tl.constexpr):
    """One program: ``out = sum(x) / sum(w)`` (``MEAN`` with ``HAS_W``), ``sum(x) / M`` (``MEAN``), or ``sum(x)``;
    in a fixed order (deterministic). 0 / 0 is NaN, as PyTorch's mean over nothing."""
    if F64:
        zero = tl.full([1, BLOCK], 0, tl.float64)
    else:
        zero = tl.full([1, BLOCK], 0, tl.float32)
    acc = zero
    wacc = zero
    offs = tl.arange(0, BLOCK).to(tl.int64)[None, :]
    for i0 in range(0, M, BLOCK):
        i = i0 + offs
        acc = acc + tl.load(x_ptr + i, mask=i < M, other=0).to(zero.dtype)
        if HAS_W:
            wacc = wacc + tl.load(w_ptr + i, mask=i < M, other=0).to(zero.dtype)
    tot = tl.reduce(acc, 1, _SUM, keep_dims=True)
    if MEAN:
        if HAS_W:
            tot = tot / tl.reduce(wacc, 1, _SUM, keep_dims=True)
        else:
            tot = tot / M
    tl.store(out_ptr + offs, tot.to(out_ptr.dtype.element_ty), mask=offs < 1)


@triton.jit(do_not_specialize=["ignore_index", "ls_bits", "g_bits"])
def ce_bwd_kernel(z_ptr, t_ptr, w_ptr, lse_ptr, g_ptr, den_ptr, d_ptr, M, C, ignore_index, ls_bits, g_bits,
                  stride_zc, stride_tc, stride_w, stride_dc,
                  ks1, ks2, ks3, ks4, ks5, zt0, zt1, zt2, zt3, zt4, zt5, tt0, tt1, tt2, tt3, tt4, tt5,
                  dt0, dt1, dt2, dt3, dt4, dt5,
                  PROB: tl.constexpr, NLL: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr,
                  HAS_LSE: tl.constexpr, G_MODE: tl.constexpr, MEAN: tl.constexpr, F64: tl.constexpr,
                  ROW_ND: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    # G_MODE: 0 the gradient is g_bits (a float64 bit pattern), 1 a 0-d array at g_ptr, 2 one value per row.
    # MEAN: divide by the mean's denominator, den_ptr[0] (the sum of the row weights), or M for probabilities.
    if F64:
        zero = tl.full([BLOCK_M, BLOCK_C], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_C], 0, tl.float32)
    one = tl.reduce(zero, 1, _SUM, keep_dims=True) + 1
    ls = ls_bits.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    z_row = _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, zt0, zt1, zt2, zt3, zt4, zt5, ROW_ND)
    t_row = _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, tt0, tt1, tt2, tt3, tt4, tt5, ROW_ND)
    d_row = _row_offsets(rows, ks1, ks2, ks3, ks4, ks5, dt0, dt1, dt2, dt3, dt4, dt5, ROW_ND)
    cols = tl.arange(0, BLOCK_C).to(tl.int64)[None, :]
    if G_MODE == 0:
        g = one * g_bits.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
    elif G_MODE == 1:
        g = one * tl.load(g_ptr).to(zero.dtype)
    else:
        g = tl.load(g_ptr + rows, mask=row_mask, other=0).to(zero.dtype)
    if MEAN:
        if PROB:
            den = one * M
        else:
            den = one * tl.load(den_ptr).to(zero.dtype)
        g = tl.where(den != 0, g / den, 0 * one)  # nothing to average: a zero gradient, as the NumPy backend
    if not PROB:
        tc, valid, bad, wt = _class_target(t_ptr, t_row, w_ptr, stride_w, row_mask, ignore_index, C, one, HAS_W)
        g = tl.where(valid, g, 0 * one)
        a = g * wt * (1 - ls)  # d = a (p - onehot(t)) + b (W p - w), b = g ls / C
        b = g * (ls / C)
    if not NLL:
        if HAS_LSE:
            lse = tl.load(lse_ptr + rows, mask=row_mask, other=0).to(zero.dtype)
        if (not HAS_LSE) or PROB or (SMOOTH and HAS_W):  # a first pass for what is not known yet
            m = zero - _INF
            s = zero
            sw = zero
            for c0 in range(0, C, BLOCK_C):
                c = c0 + cols
                cmask = c < C
                mask = row_mask & cmask
                if not HAS_LSE:
                    v = tl.load(z_ptr + (z_row + c * stride_zc), mask=mask, other=-_INF).to(zero.dtype)
                    m_new = tl.maximum(m, v)
                    s = s * tl.where(m == -_INF, zero, tl.exp(m - m_new)) + tl.where(v == -_INF, zero,
                                                                                     tl.exp(v - m_new))
                    m = m_new
                if HAS_W:
                    wc = tl.load(w_ptr + c * stride_w, mask=cmask, other=0).to(zero.dtype) + zero
                else:
                    wc = tl.where(mask, zero + 1, zero)
                if PROB:
                    q = tl.load(t_ptr + (t_row + c * stride_tc), mask=mask, other=0).to(zero.dtype)
                    if SMOOTH:
                        q = tl.where(mask, q * (1 - ls) + ls / C, zero)
                    wc = wc * q
                sw = sw + wc
            if not HAS_LSE:
                mx = tl.reduce(m, 1, _MAXIMUM, keep_dims=True)
                lse = mx + tl.log(tl.reduce(tl.where(m == -_INF, zero, s * tl.exp(m - mx)), 1, _SUM,
                                            keep_dims=True))
            wsum = tl.reduce(sw, 1, _SUM, keep_dims=True)
        if not PROB:
            if SMOOTH:
                if HAS_W:
                    coef = a + b * wsum
                else:
                    coef = a + b * C
            else:
                coef = a
    for c0 in range(0, C, BLOCK_C):
        c = c0 + cols
        cmask = c < C
        mask = row_mask & cmask
        if NLL:
            d = tl.where(c == tc, -a, zero)
        else:
            p = tl.exp(tl.load(z_ptr + (z_row + c * stride_zc), mask=mask, other=0).to(zero.dtype) - lse)
            if PROB:
                if HAS_W:
                    wc = tl.load(w_ptr + c * stride_w, mask=cmask, other=0).to(zero.dtype)
                else:
                    wc = zero + 1
                q = tl.load(t_ptr + (t_row + c * stride_tc), mask=mask, other=0).to(zero.dtype)
                if SMOOTH:
                    q = q * (1 - ls) + ls / C
                d = g * (p * wsum - wc * q)
            else:
                d = p * coef - tl.where(c == tc, a, zero)
                if SMOOTH:
                    if HAS_W:
                        d = d - b * tl.load(w_ptr + c * stride_w, mask=cmask, other=0).to(zero.dtype)
                    else:
                        d = d - b
        if not PROB:
            d = tl.where(bad, d + float("nan"), d)
        tl.store(d_ptr + (d_row + c * stride_dc), d.to(d_ptr.dtype.element_ty), mask=mask)
