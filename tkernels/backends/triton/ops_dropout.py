"""Dropout on cuda without a stored mask (``tkernels.ops.sparse`` holds the contract).

The forward returns, as its ``mask``, a ``PhiloxDropoutMask``: the (seed, offset) of the Philox words it drew,
the shape, device and p. ``dropout_backward`` runs the same kernel with the same (seed, offset), so it
regenerates exactly the forward's mask (element ``i`` kept when the uniform of stream word ``offset + i`` is
>= p) and computes ``grad * mask / (1 - p)`` in one pass, with no bool array stored between the passes. A bool
Array mask (the cpu contract) is accepted too and read instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import dtypes as _dt
from ...array import Array
from ...device import Device
from ...dispatch import register
from ...kernels.dropout import dropout_kernel
from ...validation import OpTypeError, OpValueError
from ._launch import ELEMENTWISE_BLOCK, collapse, grid1d, launch
from .random import f64_halves, halves


@dataclass(frozen=True)
class PhiloxDropoutMask:
    """The cuda dropout mask as the Philox stream position that drew it (a few ints, not an array): pass it,
    unchanged, to ``tkernels.ops.dropout_backward``. ``keep()`` materializes the bool mask when one is needed."""

    seed: int
    offset: int
    shape: tuple
    p: float
    device: Device

    def keep(self) -> Array:
        """The bool Array of kept elements (regenerated on the device)."""
        from ...creation import ones

        return _apply(ones(self.shape, dtype=_dt.float32, device=self.device), self, 1.0) != 0


def _apply(x: Array, mask: PhiloxDropoutMask, scale: float) -> Array:
    """``x * keep * scale`` into a new contiguous Array of x's dtype."""
    from .memory import empty

    out = empty(x._shape, x._dtype, x._device)
    _run(out, x, mask, scale)
    return out


def _run(out: Array, x: Array, mask, scale: float) -> None:
    """``out = x * keep * scale``: keep regenerated from a PhiloxDropoutMask, or read from a bool Array."""
    n = out.size
    if n == 0:
        return
    contiguous = x.is_contiguous()
    if isinstance(mask, Array):
        sizes, (xs, ms, _) = collapse(out._shape, x._strides, mask._strides, out._strides)
        rng = (0, 0, 0, 0, 0.0)
    else:
        sizes, (xs, _) = collapse(out._shape, x._strides, out._strides)
        ms = [0] * 6
        rng = (*halves(mask.seed), *halves(mask.offset), float(mask.p))
    launch(dropout_kernel, grid1d(n, ELEMENTWISE_BLOCK), x, mask if isinstance(mask, Array) else out, out, n, *rng,
           *f64_halves(scale), *sizes[1:], *xs, *ms,
           X_CONTIGUOUS=contiguous, MASK_ARRAY=isinstance(mask, Array), F64=out.dtype is _dt.float64,
           BLOCK=ELEMENTWISE_BLOCK)


def _scale(p: float) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


@register("dropout", "triton")
def dropout(out, x, p, generator) -> PhiloxDropoutMask:
    seed, offset = generator.philox_next(x.size)
    mask = PhiloxDropoutMask(seed, offset, x.shape, float(p), x.device)
    _run(out, x, mask, _scale(p))
    return mask


@register("dropout_backward", "triton")
def dropout_backward(out, grad, mask, p) -> None:
    if isinstance(mask, Array):  # an explicit bool mask (the cpu contract; the entry checked shape and device)
        _run(out, grad, mask, _scale(p))
        return
    if not isinstance(mask, PhiloxDropoutMask):
        raise OpTypeError(f"dropout_backward: on cuda the mask must be the PhiloxDropoutMask returned by "
                          f"dropout(..., return_mask=True) or a bool Array, got {type(mask).__name__}")
    if mask.shape != grad.shape or mask.device != grad.device:
        raise OpValueError(f"dropout_backward: the mask was drawn for shape {mask.shape} on {mask.device}, but grad "
                           f"is {grad.shape} on {grad.device}; hint: pass the mask of the forward that made this grad")
    _run(out, grad, mask, _scale(p))  # the threshold is the forward's p (mask.p); the scale is the p given here
