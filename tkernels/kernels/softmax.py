"""Fused softmax and log-softmax along one axis, forward and backward (one kernel family, the op a constexpr).

Layout, set up by the host (``tkernels/backends/triton/ops_softmax.py``): ``M`` rows of ``N`` elements; the row
axis of every operand has its own stride (``stride_xn``...), so any axis is read in place, and row ``m`` starts
at ``strided_offset(m, kept sizes, operand's kept strides)`` (the kept axes collapsed jointly; ``ROW_ND`` 1: a
single kept dimension, a multiply; 0: the general offset).

A program owns ``BLOCK_M`` rows. ``ONE_PASS``: a row fits in ``BLOCK_N`` and is loaded once (as in Triton's
fused-softmax tutorial). Otherwise the rows are walked in ``BLOCK_N`` chunks twice: an online pass keeps, per
lane, the running maximum and the sum of exponentials rescaled to it (forward), or the running sum
(backward); the lanes are combined; a second pass writes the result.

Operands: forward ``x_ptr`` the input; backward ``x_ptr`` the forward's output ``y`` and ``g_ptr`` the incoming
gradient. Halves are loaded and computed in fp32 (``F64``: fp64) and stored once in ``o_ptr``'s dtype.
"""

import triton
import triton.language as tl

from .strided import strided_offset

SOFTMAX = tl.constexpr(0)
LOG_SOFTMAX = tl.constexpr(1)
SOFTMAX_BWD = tl.constexpr(2)  # dx = y * (g - sum(g * y))
LOG_SOFTMAX_BWD = tl.constexpr(3)  # dx = g - exp(y) * sum(g)
OP_CODES = {"softmax": 0, "log_softmax": 1, "softmax_backward": 2, "log_softmax_backward": 3}

_INF = tl.constexpr(float("inf"))
# lanes are combined with the standard library's combine functions through tl.reduce: one NumPy call each in the
# interpreter, where every @triton.jit call (tl.sum, tl.max) costs milliseconds
_SUM = tl.standard._sum_combine
_MAXIMUM = tl.standard._elementwise_max


@triton.jit
def softmax_kernel(x_ptr, g_ptr, o_ptr, M, N, stride_xn, stride_gn, stride_on,
                   ks1, ks2, ks3, ks4, ks5, xt0, xt1, xt2, xt3, xt4, xt5, gt0, gt1, gt2, gt3, gt4, gt5,
                   ot0, ot1, ot2, ot3, ot4, ot5,
                   OP: tl.constexpr, F64: tl.constexpr, ROW_ND: tl.constexpr, ONE_PASS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    FWD: tl.constexpr = OP < 2
    if F64:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float32)
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]  # a [BLOCK_M, 1] column
    row_mask = rows < M
    if ROW_ND == 1:
        x_row = rows * xt5
        g_row = rows * gt5
        o_row = rows * ot5
    else:
        x_row = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, xt0, xt1, xt2, xt3, xt4, xt5)
        g_row = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, gt0, gt1, gt2, gt3, gt4, gt5)
        o_row = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, ot0, ot1, ot2, ot3, ot4, ot5)
    cols = tl.arange(0, BLOCK_N).to(tl.int64)[None, :]
    if FWD:
        other = -_INF  # masked lanes: exp(-inf - max) = 0 adds nothing
    else:
        other = 0.0
    if ONE_PASS:
        mask = row_mask & (cols < N)
        v = tl.load(x_ptr + (x_row + cols * stride_xn), mask=mask, other=other).to(zero.dtype)
        if FWD:
            mx = tl.reduce(v, 1, _MAXIMUM, keep_dims=True)
            t = v - mx
            e = tl.exp(t)
            s = tl.reduce(e, 1, _SUM, keep_dims=True)
            if OP == SOFTMAX:
                res = e / s
            else:
                res = t - tl.log(s)
        else:
            g = tl.load(g_ptr + (g_row + cols * stride_gn), mask=mask, other=0).to(zero.dtype)
            if OP == SOFTMAX_BWD:
                res = v * (g - tl.reduce(g * v, 1, _SUM, keep_dims=True))
            else:
                res = g - tl.exp(v) * tl.reduce(g, 1, _SUM, keep_dims=True)
        tl.store(o_ptr + (o_row + cols * stride_on), res.to(o_ptr.dtype.element_ty), mask=mask)
    else:
        # pass 1, per lane: forward, the running max m and s = sum of exp(x - m); backward, the running sum
        m = zero - _INF
        s = zero
        for n0 in range(0, N, BLOCK_N):
            n = n0 + cols
            mask = row_mask & (n < N)
            v = tl.load(x_ptr + (x_row + n * stride_xn), mask=mask, other=other).to(zero.dtype)
            if FWD:
                m_new = tl.maximum(m, v)
                # a lane that saw only -inf keeps s = 0 (exp(-inf - -inf) would be NaN); +inf or NaN poison s
                s = s * tl.where(m == -_INF, zero, tl.exp(m - m_new)) + tl.where(v == -_INF, zero, tl.exp(v - m_new))
                m = m_new
            else:
                g = tl.load(g_ptr + (g_row + n * stride_gn), mask=mask, other=0).to(zero.dtype)
                if OP == SOFTMAX_BWD:
                    s = s + g * v
                else:
                    s = s + g
        if FWD:  # the lanes combined: the row max and the row sum of exp(x - max)
            mx = tl.reduce(m, 1, _MAXIMUM, keep_dims=True)
            tot = tl.reduce(tl.where(m == -_INF, zero, s * tl.exp(m - mx)), 1, _SUM, keep_dims=True)
            if OP == LOG_SOFTMAX:
                log_tot = tl.log(tot)
        else:
            tot = tl.reduce(s, 1, _SUM, keep_dims=True)
        for n0 in range(0, N, BLOCK_N):  # pass 2: the results
            n = n0 + cols
            mask = row_mask & (n < N)
            v = tl.load(x_ptr + (x_row + n * stride_xn), mask=mask, other=other).to(zero.dtype)
            if OP == SOFTMAX:
                res = tl.exp(v - mx) / tot
            elif OP == LOG_SOFTMAX:
                res = (v - mx) - log_tot  # as the one-pass form: x - max is exact, no large intermediate
            else:
                g = tl.load(g_ptr + (g_row + n * stride_gn), mask=mask, other=0).to(zero.dtype)
                if OP == SOFTMAX_BWD:
                    res = v * (g - tot)
                else:
                    res = g - tl.exp(v) * tot
            tl.store(o_ptr + (o_row + n * stride_on), res.to(o_ptr.dtype.element_ty), mask=mask)
