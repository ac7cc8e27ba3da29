"""``dz/da`` of a Gamma(a, 1) draw z at fixed quantile (``tkernels.ops.standard_gamma_grad``), one element per
lane in float64, the whole computation in one kernel: ``-(dP(a, z)/da) / p(z; a)`` with P the regularized lower
incomplete gamma function (its series below z = a + 1, its continued fraction above, ITERS terms each), dP/da by
a central difference, and Wilson-Hilferty's cube-root normal approximation above a = 200."""

import triton
import triton.language as tl

from .special import lgamma

TINY = tl.constexpr(1e-300)


@triton.jit
def _gammainc(a, z, ITERS: tl.constexpr):
    series = z < a + 1.0
    zs = tl.where(series, z, 0.0)  # each branch on its own domain (the other's values are unused)
    lga = lgamma(a, True)
    pref = a * tl.log(tl.maximum(z, TINY)) - z - lga
    term = 1.0 / a
    total = term
    for n in range(1, ITERS):
        term = term * zs / (a + n)
        total = total + term
    p_series = tl.exp(pref) * total
    zc = tl.where(series, a + 2.0, z)
    b = zc + 1.0 - a
    c = b * 0.0 + 1.0 / 1e-300
    d = 1.0 / b
    h = d
    for i in range(1, ITERS):
        fi = i * 1.0
        an = -fi * (fi - a)
        b = b + 2.0
        d = an * d + b
        d = tl.where(tl.abs(d) < 1e-300, 1e-300, d)
        c = b + an / c
        c = tl.where(tl.abs(c) < 1e-300, 1e-300, c)
        d = 1.0 / d
        h = h * d * c
    q_cf = tl.exp(a * tl.log(tl.maximum(zc, TINY)) - zc - lga) * h
    r = tl.where(series, p_series, 1.0 - q_cf)
    return tl.where(z <= 0, 0.0, tl.minimum(tl.maximum(r, 0.0), 1.0))


@triton.jit
def standard_gamma_grad_kernel(a_ptr, z_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    """``out = dz/da`` for float64 ``a`` (> 0), ``z`` (>= 0), ``out``, all contiguous of ``n`` elements."""
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    a = tl.load(a_ptr + idx, mask=mask, other=1.0).to(tl.float64)
    z = tl.load(z_ptr + idx, mask=mask, other=1.0).to(tl.float64)
    h = tl.minimum(1e-5 * tl.maximum(a, 1.0), a * 0.5)
    dp = (_gammainc(a + h, z, ITERS) - _gammainc(a - h, z, ITERS)) / (2.0 * h)
    logp = (a - 1.0) * tl.log(tl.maximum(z, TINY)) - z - lgamma(a, True)
    exact = -dp / tl.maximum(tl.exp(logp), TINY)
    sa = tl.sqrt(a)
    ratio = z / a
    cube = tl.where(ratio > 0, tl.exp(tl.log(tl.maximum(ratio, TINY)) / 3.0), 0.0)
    e = 3.0 * sa * (cube - 1.0 + 1.0 / (9.0 * a))
    w = 1.0 - 1.0 / (9.0 * a) + e / (3.0 * sa)
    dw = 1.0 / (9.0 * a * a) - e / (6.0 * a * sa)
    approx = w * w * w + 3.0 * a * w * w * dw
    tl.store(out_ptr + idx, tl.where(a > 200.0, approx, exact), mask=mask)
