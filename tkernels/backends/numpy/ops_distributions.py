"""``standard_gamma_grad`` on NumPy (``tkernels.ops.distributions``): the cuda kernel's arithmetic, vectorized."""

from __future__ import annotations

import numpy as np
from scipy import special as _special

from ...dispatch import register
from ...ops.distributions import GAMMA_GRAD_ITERS
from ._util import npv

_TINY = 1e-300


def _gammainc(a, z):
    series = z < a + 1.0
    zs = np.where(series, z, 0.0)
    lga = _special.gammaln(a)
    pref = a * np.log(np.maximum(z, _TINY)) - z - lga
    term = 1.0 / a
    total = term
    for n in range(1, GAMMA_GRAD_ITERS):
        term = term * zs / (a + n)
        total = total + term
    p_series = np.exp(pref) * total
    zc = np.where(series, a + 2.0, z)
    b = zc + 1.0 - a
    c = np.full_like(b, 1.0 / 1e-300)
    d = 1.0 / b
    h = d
    for i in range(1, GAMMA_GRAD_ITERS):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < 1e-300, 1e-300, d)
        c = b + an / c
        c = np.where(np.abs(c) < 1e-300, 1e-300, c)
        d = 1.0 / d
        h = h * d * c
    q_cf = np.exp(a * np.log(np.maximum(zc, _TINY)) - zc - lga) * h
    r = np.where(series, p_series, 1.0 - q_cf)
    return np.where(z <= 0, 0.0, np.clip(r, 0.0, 1.0))


@register("standard_gamma_grad", "numpy")
def standard_gamma_grad(out, a, z) -> None:
    a, z = npv(a), npv(z)
    with np.errstate(all="ignore"):  # (lanes of the branch not taken may overflow)
        h = np.minimum(1e-5 * np.maximum(a, 1.0), a * 0.5)
        dp = (_gammainc(a + h, z) - _gammainc(a - h, z)) / (2.0 * h)
        logp = (a - 1.0) * np.log(np.maximum(z, _TINY)) - z - _special.gammaln(a)
        exact = -dp / np.maximum(np.exp(logp), _TINY)
        sa = np.sqrt(a)
        e = 3.0 * sa * (np.cbrt(z / a) - 1.0 + 1.0 / (9.0 * a))
        w = 1.0 - 1.0 / (9.0 * a) + e / (3.0 * sa)
        dw = 1.0 / (9.0 * a * a) - e / (6.0 * a * sa)
        approx = w * w * w + 3.0 * a * w * w * dw
        np.copyto(npv(out), np.where(a > 200.0, approx, exact))
