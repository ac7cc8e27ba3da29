"""The LSTM cell's pointwise part (``tkernels/ops/rnn.py``), one kernel for forward and backward: each program
takes BLOCK elements of the (B, H) state; element (b, j) reads its four gates at ``b * 4H + k * H + j`` of both
projections. The backward recomputes the gates from ``gi + gh`` (four loads, a few exponentials) rather than
reading stored activations: less memory, and the same reads the forward made."""

import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    # tanh(x) = 1 - 2 / (exp(2x) + 1): exact limits at ±inf (exp overflows to inf, or underflows to 0)
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.jit
def lstm_cell_kernel(gi_ptr, gh_ptr, c_ptr, cn_ptr, h_ptr, dh_ptr, dc_ptr, dg_ptr, dcp_ptr, n, H,
                     BWD: tl.constexpr, HAS_DH: tl.constexpr, HAS_DC: tl.constexpr, F64: tl.constexpr,
                     BLOCK: tl.constexpr):
    """Forward (BWD=False): ``cn = f c + i g``, ``h = o tanh(cn)`` into ``cn_ptr``, ``h_ptr``. Backward: from
    ``dh``/``dc`` (HAS_DH/HAS_DC: else zero) and the saved ``c``, ``cn``, the pre-activation gradients into
    ``dg_ptr`` (B, 4H) and ``dcp = dc_total f`` into ``dcp_ptr``. Pointers a mode does not read are any of the
    others. Computes in float64 with F64, else float32."""
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    row = idx // H
    col = idx - row * H
    base = row * 4 * H + col
    ct = tl.float64 if F64 else tl.float32
    zi = tl.load(gi_ptr + base, mask=mask, other=0).to(ct) + tl.load(gh_ptr + base, mask=mask, other=0).to(ct)
    zf = (tl.load(gi_ptr + base + H, mask=mask, other=0).to(ct)
          + tl.load(gh_ptr + base + H, mask=mask, other=0).to(ct))
    zg = (tl.load(gi_ptr + base + 2 * H, mask=mask, other=0).to(ct)
          + tl.load(gh_ptr + base + 2 * H, mask=mask, other=0).to(ct))
    zo = (tl.load(gi_ptr + base + 3 * H, mask=mask, other=0).to(ct)
          + tl.load(gh_ptr + base + 3 * H, mask=mask, other=0).to(ct))
    i = _sigmoid(zi)
    f = _sigmoid(zf)
    g = _tanh(zg)
    o = _sigmoid(zo)
    c = tl.load(c_ptr + idx, mask=mask, other=0).to(ct)
    if not BWD:
        cn = f * c + i * g
        tl.store(cn_ptr + idx, cn.to(cn_ptr.dtype.element_ty), mask=mask)
        tl.store(h_ptr + idx, (o * _tanh(cn)).to(h_ptr.dtype.element_ty), mask=mask)
    else:
        tc = _tanh(tl.load(cn_ptr + idx, mask=mask, other=0).to(ct))
        zero = c * 0
        dh = tl.load(dh_ptr + idx, mask=mask, other=0).to(ct) if HAS_DH else zero
        dc = tl.load(dc_ptr + idx, mask=mask, other=0).to(ct) if HAS_DC else zero
        dc = dc + dh * o * (1 - tc * tc)
        ty = dg_ptr.dtype.element_ty
        tl.store(dg_ptr + base, (dc * g * i * (1 - i)).to(ty), mask=mask)
        tl.store(dg_ptr + base + H, (dc * c * f * (1 - f)).to(ty), mask=mask)
        tl.store(dg_ptr + base + 2 * H, (dc * i * (1 - g * g)).to(ty), mask=mask)
        tl.store(dg_ptr + base + 3 * H, (dh * tc * o * (1 - o)).to(ty), mask=mask)
        tl.store(dcp_ptr + idx, (dc * f).to(dcp_ptr.dtype.element_ty), mask=mask)
