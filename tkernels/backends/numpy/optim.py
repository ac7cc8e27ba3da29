"""Fused optimizer steps on cpu: in-place NumPy ufuncs with ``out=`` and one scratch array per tensor, in the
order of the per-parameter reference (nn/optim), so float32/float64 results are bit-identical to it. Python float
scalars meet float32 arrays as float32 (NEP 50), as in the elementwise backend. float16/bfloat16 tensors compute
in float32 copies stored back once per step (rounded to nearest even)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import HALF_NP, npv

_F32 = np.dtype(np.float32)


def _compute(a):
    """(array to compute on, array to store back into or None)."""
    v = npv(a)
    if v.dtype in HALF_NP:
        return v.astype(_F32), v
    return v, None


def _store(pairs) -> None:
    for c, dst in pairs:
        if dst is not None:
            np.copyto(dst, c, casting="unsafe")


def _grad(g, p, wd, maximize, tmp):
    """The gradient after maximize and coupled weight decay (a new array when either applies; grads stay)."""
    if maximize:
        g = np.negative(g)
        if wd != 0:
            np.multiply(p, wd, out=tmp)
            g += tmp
    elif wd != 0:
        g2 = np.multiply(p, wd)
        g2 += g  # p * wd + g == g + p * wd (addition is commutative in IEEE arithmetic)
        g = g2
    return g


@register("adam_step", "numpy")
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, w1, beta2, w2, eps, weight_decay, decay,
              step_size, bc2_sqrt, maximize) -> None:
    for i, pa in enumerate(params):
        p, p_dst = _compute(pa)
        g = npv(grads[i])
        if p_dst is not None:
            g = g.astype(_F32)
        m, m_dst = _compute(exp_avgs[i])
        v, v_dst = _compute(exp_avg_sqs[i])
        tmp = np.empty_like(p)
        g = _grad(g, p, weight_decay, maximize, tmp)
        if decay != 1.0:
            p *= decay
        np.subtract(g, m, out=tmp)  # lerp(m, g, w1) = m + w1 * (g - m)
        tmp *= w1
        m += tmp
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= w2
        v += tmp
        if max_exp_avg_sqs is not None:
            x, x_dst = _compute(max_exp_avg_sqs[i])
            np.maximum(x, v, out=x)
            np.sqrt(x, out=tmp)
            if x_dst is not None:
                np.copyto(x_dst, x, casting="unsafe")
        else:
            np.sqrt(v, out=tmp)
        tmp /= bc2_sqrt
        tmp += eps
        np.divide(m, tmp, out=tmp)
        tmp *= step_size
        p -= tmp
        if p_dst is not None:
            _store(((p, p_dst), (m, m_dst), (v, v_dst)))


@register("sgd_step", "numpy")
def sgd_step(params, grads, momentum_buffers, lr, momentum, damp_w, weight_decay, nesterov, maximize,
             first_step) -> None:
    for i, pa in enumerate(params):
        p, p_dst = _compute(pa)
        g = npv(grads[i])
        if p_dst is not None:
            g = g.astype(_F32)
        tmp = np.empty_like(p)
        g = _grad(g, p, weight_decay, maximize, tmp)
        if momentum_buffers is not None:
            b, b_dst = _compute(momentum_buffers[i])
            if first_step:
                np.copyto(b, g)
            else:
                b *= momentum
                if damp_w != 1.0:
                    np.multiply(g, damp_w, out=tmp)
                    b += tmp
                else:
                    b += g
            if b_dst is not None:
                np.copyto(b_dst, b, casting="unsafe")
            if nesterov:
                np.multiply(b, momentum, out=tmp)
                g = g + tmp
            else:
                g = b
        np.multiply(g, lr, out=tmp)
        p -= tmp
        if p_dst is not None:
            np.copyto(p_dst, p, casting="unsafe")
