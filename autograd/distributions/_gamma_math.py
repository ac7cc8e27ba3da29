"""The standard gamma sampler and its reparameterization gradient, on the device, with no host loop.

Sampling: Marsaglia and Tsang's method, 16 candidates per draw evaluated at once and the first accepted one
taken (acceptance >= 95% for a >= 1: all 16 rejected has probability < 1e-20); a < 1 draws Gamma(a + 1) and
scales by U^(1/a). The gradient of a draw z with respect to the concentration a is the implicit one (Figurnov
et al. 2018): with z held at its quantile, ``dz/da = -(dP(a, z)/da) / p(z; a)``, P the regularized lower incomplete
gamma function: its series below z = a + 1 and its continued fraction above (a fixed number of float64
iterations, enough for a <= 200), dP/da by a central difference. Above a = 200 the Wilson-Hilferty cube-root
normal approximation gives it. That gradient is one op, ``tkernels.ops.standard_gamma_grad`` (one kernel launch
on cuda); ``gammainc`` here (P itself, a composite) is what ``Gamma.cdf`` uses.
"""

from __future__ import annotations

import tkernels as tk

from .. import factory as _f
from ..grad_mode import no_grad
from ..ops import argmax, clamp, exp, gather, lgamma, log, sqrt, where
from ..ops._base import Node, Tensor

_ITERS = 120  # series terms / continued-fraction steps
_TINY = 1e-300


def gammainc(a, z):
    """The regularized lower incomplete gamma function P(a, z) (float64 Tensors, a > 0, z >= 0), no gradient."""
    with no_grad():
        a, z = a.double(), z.double()
        series = z < a + 1.0
        zs = where(series, z, 0.0 * z)  # each branch on its own domain (the other's values are unused)
        pref = a * log(clamp(z, min=_TINY)) - z - lgamma(a)
        term = 1.0 / a
        total = term
        for n in range(1, _ITERS):
            term = term * zs / (a + n)
            total = total + term
        p_series = exp(pref) * total
        zc = where(series, a + 2.0, z)
        b = zc + 1.0 - a
        c = 0.0 * b + 1.0 / 1e-300
        d = 1.0 / b
        h = d
        for i in range(1, _ITERS):
            an = -i * (i - a)
            b = b + 2.0
            d = an * d + b
            d = where(d.abs() < 1e-300, 0.0 * d + 1e-300, d)
            c = b + an / c
            c = where(c.abs() < 1e-300, 0.0 * c + 1e-300, c)
            d = 1.0 / d
            h = h * d * c
        q_cf = exp(a * log(clamp(zc, min=_TINY)) - zc - lgamma(a)) * h
        r = where(series, p_series, 1.0 - q_cf)
        return where(z <= 0, 0.0 * r, clamp(r, 0.0, 1.0))


class StandardGammaBackward0(Node):
    def __init__(self, a, z):
        super().__init__((a,))
        self.a, self.z = a.detach(), z.detach()

    def backward(self, g):
        with no_grad():  # one kernel launch on cuda (tkernels/kernels/gamma_grad.py)
            d = Tensor._wrap(tk.ops.standard_gamma_grad(self.a.double()._data, self.z.double()._data)).to(g.dtype)
        return (g * d,)


def standard_gamma(a):
    """A Gamma(a, 1) draw per element of ``a`` (a float Tensor > 0), differentiable with respect to ``a``."""
    with no_grad():
        a64 = a.detach().double()
        boost = a64 < 1.0
        ab = where(boost, a64 + 1.0, a64)
        d = ab - 1.0 / 3.0
        c = 1.0 / sqrt(9.0 * d)
        shape = tuple(a.shape)
        x = _f.randn(16, *shape, dtype=a64.dtype, device=a.device)
        u = _f.rand(16, *shape, dtype=a64.dtype, device=a.device)
        v = (1.0 + c * x) ** 3
        ok = (v > 0) & (log(u) < 0.5 * x * x + d - d * v + d * log(clamp(v, min=_TINY)))
        first = argmax(ok.to(_f.get_default_dtype()), dim=0, keepdim=True)  # the first accepted candidate
        z = d * gather(v, 0, first).squeeze(0)
        ub = _f.rand(*shape, dtype=a64.dtype, device=a.device)
        z = where(boost, z * exp(log(clamp(ub, min=_TINY)) / a64), z)
        z = clamp(z.to(a.dtype), min=float(tk.finfo(a.dtype).tiny))  # (no draw is exactly 0)
    if a.requires_grad:
        return StandardGammaBackward0(a, z).output(z._data)
    return z


def lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


