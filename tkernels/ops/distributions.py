"""Kernel-level pieces of the distributions' samplers.

Entries::

    standard_gamma_grad(a, z) -> dz_da
        a (> 0) and z (>= 0, a Gamma(a, 1) draw): float64 Arrays of one shape on one device; dz_da (float64, that
        shape) is the derivative of the draw with respect to a at fixed quantile (the implicit reparameterization
        gradient): ``-(dP(a, z)/da) / p(z; a)``, P the regularized lower incomplete gamma function (series below
        z = a + 1, continued fraction above, 120 terms each, float64), dP/da by a central difference with step
        ``min(1e-5 max(a, 1), a / 2)``; above a = 200 Wilson-Hilferty's cube-root normal approximation
        ``z = a w^3``. One kernel launch on cuda.

Backend contract (output allocated by the entry, inputs contiguous)::

    standard_gamma_grad(out, a, z)
"""

from __future__ import annotations

from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe

__all__ = ["standard_gamma_grad"]

GAMMA_GRAD_ITERS = 120  # series terms / continued-fraction steps (enough for a <= 200 in float64)


def standard_gamma_grad(a: Array, z: Array) -> Array:
    """``dz/da`` of Gamma(a, 1) draws ``z`` (float64), elementwise."""
    op = "standard_gamma_grad"
    for name, x in (("a", a), ("z", z)):
        if not isinstance(x, Array):
            raise OpTypeError(f"{op}: {name} must be an Array, got {describe(x)}")
        if x.dtype.name != "float64":
            raise OpTypeError(f"{op}: {name} must be float64, got {describe(x)}; hint: convert with .astype(float64)")
    if a.shape != z.shape:
        raise OpValueError(f"{op}: a and z must have one shape, got {describe(a)} and {describe(z)}")
    if a.device != z.device:
        raise RuntimeError(f"{op}: a is on {a.device} but z is on {z.device}")
    dev = a.device
    out = lookup("empty", dev)(a.shape, a.dtype, dev)
    if a.size:
        lookup(op, dev)(out, a.contiguous(), z.contiguous())
    return out
