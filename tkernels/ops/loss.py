"""Classification losses from logits or log-probabilities, with PyTorch's semantics, and their backward entries.

Forward entries::

    cross_entropy(logits, target, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                  axis=None, return_lse=False) -> loss | (loss, lse)
    nll_loss(log_probs, target, weight=None, *, ignore_index=-100, reduction="mean", axis=None) -> loss

``logits``/``log_probs``: floating, classes along ``axis`` (default PyTorch's: 1, or 0 for a 1-D input, so
(C,), (N, C) and (N, C, d1, ...) work as in torch; ``axis=-1`` serves (B, T, V) logits). ``target``:

- class indices: an integer Array of the input's shape without the class axis; entries equal to
  ``ignore_index`` contribute nothing; any other entry outside [0, C) raises IndexError naming it and C;
- class probabilities (cross_entropy only): a floating Array of the logits' shape (``ignore_index`` unused).

``weight``: optional per-class weights (C,). ``reduction``: "none" (per-element, the target's shape without
the class axis), "sum", or "mean" (a 0-d Array). As in PyTorch, the weighted mean divides by the sum of the
weights of the non-ignored targets (NaN when every target is ignored or the batch is empty), while with
probability targets it divides by the number of elements (N * d1 * ...). ``label_smoothing`` in [0, 1] mixes
the target with the uniform distribution (weighted like torch's ``cross_entropy_loss_label_smoothing``).
The loss has the input's dtype; float16/bfloat16 compute in float32. ``return_lse=True`` also returns the
log-sum-exp of the logits over the class axis (target-index shape; float32 for halves), which the backward
can reuse instead of recomputing it.

Backward entries (dlogits / dlog_probs with the input's shape and dtype; ``grad`` is a 0-d Array or a Python
number for "mean"/"sum", an Array of the loss's shape for "none")::

    cross_entropy_backward(grad, logits, target, weight=None, *, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0, axis=None, lse=None) -> dlogits
    nll_loss_backward(grad, log_probs, target, weight=None, *, ignore_index=-100, reduction="mean",
                      axis=None) -> dlog_probs

Backend contract (outputs allocated by the entry; ``axis`` non-negative; ``lse`` may be None; targets are
checked against [0, C) by the backend, which raises IndexError)::

    cross_entropy(out, lse, logits, target, weight, ignore_index, reduction, label_smoothing, axis)
    cross_entropy_backward(dlogits, grad, logits, target, weight, lse, ignore_index, reduction, label_smoothing,
                           axis)
    nll_loss(out, log_probs, target, weight, ignore_index, reduction, axis)
    nll_loss_backward(dlog_probs, grad, target, weight, ignore_index, reduction, axis)
"""

from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe, normalize_axis

__all__ = ["cross_entropy", "cross_entropy_backward", "nll_loss", "nll_loss_backward"]

_REDUCTIONS = ("none", "mean", "sum")


def _check(op, x, target, weight, axis, ignore_index, reduction, allow_prob, xname):
    """Validate the common arguments; returns (axis, is_prob, loss shape)."""
    # the common call in one test: (N, C) input, integer targets (N,) on its device, no weight, a reduced loss
    if (x.__class__ is Array and target.__class__ is Array and axis is None and weight is None
            and ignore_index.__class__ is int and (reduction == "mean" or reduction == "sum")):
        shape = x._shape
        if (len(shape) == 2 and shape[1] and x._dtype.kind == "f" and target._dtype.kind in "iu"
                and target._device is x._device and target._shape == shape[:1]):
            return 1, False, ()
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: {xname} must be an Array, got {describe(x)}")
    if x._dtype.kind != "f":
        raise OpTypeError(f"{op}: {xname} must be a floating array, got {describe(x)}")
    n = len(x._shape)
    if n == 0:
        raise OpValueError(f"{op}: {xname} must have a class axis, got a 0-d array {describe(x)}; expected shape "
                           f"(C,), (N, C) or (N, C, d1, ...)")
    ax = (0 if n == 1 else 1) if axis is None else normalize_axis(axis, n, op)
    shape = x._shape
    c = shape[ax]
    if c == 0:
        raise OpValueError(f"{op}: the class axis {ax} of {xname} {describe(x)} has size 0")
    if not isinstance(target, Array):
        raise OpTypeError(f"{op}: target must be an Array, got {describe(target)}")
    if target._device is not x._device and target._device != x._device:
        raise RuntimeError(f"{op}: target is on {target.device} but {xname} is on {x.device}; hint: move it with "
                           f".to()")
    lshape = shape[:ax] + shape[ax + 1:]
    k = target._dtype.kind
    if k in "iu":
        if target._shape != lshape:
            raise OpValueError(f"{op}: target {describe(target)} does not match {xname} {describe(x)}: class-index "
                               f"targets need shape {lshape} (the input's shape without the class axis {ax})"
                               + (f"; probability targets need shape {shape}" if allow_prob else ""))
        prob = False
    elif k == "f" and allow_prob:
        if target._shape != shape:
            raise OpValueError(f"{op}: floating target {describe(target)} is read as class probabilities and needs "
                               f"the shape of {xname} {shape}; hint: class indices must be integers "
                               f"(.astype(int64)) of shape {lshape}")
        prob = True
    else:
        raise OpTypeError(f"{op}: target must be an integer array of class indices"
                          + (" or a floating array of class probabilities" if allow_prob else "")
                          + f", got {describe(target)}")
    if weight is not None:
        if not isinstance(weight, Array) or weight._dtype.kind != "f":
            raise OpTypeError(f"{op}: weight must be a floating Array of shape ({c},), got {describe(weight)}")
        if weight._shape != (c,):
            raise OpValueError(f"{op}: weight {describe(weight)} must have shape ({c},): one weight per class of "
                               f"{xname} {describe(x)}")
        if weight._device is not x._device and weight._device != x._device:
            raise RuntimeError(f"{op}: weight is on {weight.device} but {xname} is on {x.device}")
    if reduction not in _REDUCTIONS:
        raise OpValueError(f"{op}: reduction must be one of 'none', 'mean', 'sum', got {reduction!r}")
    try:
        operator.index(ignore_index)
    except TypeError:
        raise OpTypeError(f"{op}: ignore_index must be an integer, got {describe(ignore_index)}") from None
    return ax, prob, (lshape if reduction == "none" else ())


def _smoothing(op, label_smoothing) -> float:
    try:
        ls = float(label_smoothing)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: label_smoothing must be a number, got {describe(label_smoothing)}") from None
    if not 0.0 <= ls <= 1.0:
        raise OpValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    return ls


def _grad(op, grad, x, shape):
    """A 0-d Array or a Python number for reduced losses, an Array of the loss's shape otherwise."""
    if isinstance(grad, Array):
        if grad._shape != shape:
            raise OpValueError(f"{op}: grad {describe(grad)} must have the loss's shape {shape}")
        if grad._dtype.kind != "f":
            raise OpTypeError(f"{op}: grad must be a floating array, got {describe(grad)}")
        if grad._device is not x._device and grad._device != x._device:
            raise RuntimeError(f"{op}: grad is on {grad.device} but the input is on {x.device}")
        return grad
    if shape == () and isinstance(grad, int | float) and not isinstance(grad, bool):
        return float(grad)
    raise OpTypeError(f"{op}: grad must be an Array of shape {shape}" + (" or a Python number" if shape == () else "")
                      + f", got {describe(grad)}")


def cross_entropy(logits, target, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                  axis=None, return_lse=False):
    """Cross-entropy between ``softmax(logits, axis)`` and the target (class indices or probabilities).

    >>> import tkernels as tk
    >>> from tkernels.ops.loss import cross_entropy
    >>> float(cross_entropy(tk.asarray([[0.0, 0.0]]), tk.asarray([1])))  # log(2)
    0.6931471824645996
    """
    op = "cross_entropy"
    ax, _, oshape = _check(op, logits, target, weight, axis, ignore_index, reduction, True, "logits")
    ls = _smoothing(op, label_smoothing) if label_smoothing else 0.0
    dev = logits._device
    empty = lookup("empty", dev)
    out = empty(oshape, logits._dtype, dev)
    lse = None
    if return_lse:
        d = logits._dtype
        lse = empty(logits._shape[:ax] + logits._shape[ax + 1:], _dt.float32 if d.itemsize == 2 else d, dev)
    lookup(op, dev)(out, lse, logits, target, weight, int(ignore_index), reduction, ls, ax)
    return (out, lse) if return_lse else out


def cross_entropy_backward(grad, logits, target, weight=None, *, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0, axis=None, lse=None) -> Array:
    """Gradient of ``cross_entropy`` with respect to the logits; ``lse`` from ``return_lse=True`` is reused."""
    op = "cross_entropy_backward"
    ax, _, oshape = _check(op, logits, target, weight, axis, ignore_index, reduction, True, "logits")
    grad = _grad(op, grad, logits, oshape)
    ls = _smoothing(op, label_smoothing) if label_smoothing else 0.0
    dev = logits._device
    if lse is not None:
        ss = logits._shape[:ax] + logits._shape[ax + 1:]
        if not (isinstance(lse, Array) and lse._shape == ss and lse._dtype.kind == "f"
                and (lse._device is dev or lse._device == dev)):
            raise OpValueError(f"{op}: lse must be the floating Array of shape {ss} returned by "
                               f"cross_entropy(..., return_lse=True), got {describe(lse)}")
    out = lookup("empty", dev)(logits._shape, logits._dtype, dev)
    lookup(op, dev)(out, grad, logits, target, weight, lse, int(ignore_index), reduction, ls, ax)
    return out


def nll_loss(log_probs, target, weight=None, *, ignore_index=-100, reduction="mean", axis=None) -> Array:
    """Negative log-likelihood of the target classes: ``-weight[t] * log_probs[..., t, ...]``, reduced."""
    op = "nll_loss"
    ax, _, oshape = _check(op, log_probs, target, weight, axis, ignore_index, reduction, False, "log_probs")
    dev = log_probs._device
    out = lookup("empty", dev)(oshape, log_probs._dtype, dev)
    lookup(op, dev)(out, log_probs, target, weight, int(ignore_index), reduction, ax)
    return out


def nll_loss_backward(grad, log_probs, target, weight=None, *, ignore_index=-100, reduction="mean",
                      axis=None) -> Array:
    """Gradient of ``nll_loss`` with respect to ``log_probs`` (only its shape and dtype are read)."""
    op = "nll_loss_backward"
    ax, _, oshape = _check(op, log_probs, target, weight, axis, ignore_index, reduction, False, "log_probs")
    grad = _grad(op, grad, log_probs, oshape)
    dev = log_probs._device
    out = lookup("empty", dev)(log_probs._shape, log_probs._dtype, dev)
    lookup(op, dev)(out, grad, target, weight, int(ignore_index), reduction, ax)
    return out
