"""Normalization layers as kernel-level ops: layer_norm, rms_norm, group_norm, batch_norm, each with a backward
entry (ATen's ``native_*_norm`` / ``native_*_norm_backward`` split).

Forward entries (``x`` floating; the result has ``x.dtype``; weight/bias/running stats may have another
floating dtype, e.g. float32 parameters with a bfloat16 ``x``)::

    layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, return_stats=False)
        -> y | (y, mean, rstd)           normalizes over the last len(normalized_shape) axes;
                                         weight, bias: shape normalized_shape; mean, rstd: x.shape[:-k]
    rms_norm(x, normalized_shape, weight=None, eps=None, *, return_stats=False)
        -> y | (y, rstd)                 y = x * rsqrt(mean(x^2) + eps) * weight; eps=None is the machine
                                         epsilon of the compute dtype (float32 for halves), as torch.rms_norm
    group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, return_stats=False)
        -> y | (y, mean, rstd)           x: (N, C, *); C divisible by num_groups; weight, bias: (C,);
                                         mean, rstd: (N, num_groups)
    batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5,
               *, return_stats=False)
        -> y | (y, save_mean, save_invstd)
                                         x: (N, C, *); per-channel statistics over N and the spatial axes.
                                         training: batch statistics (biased variance); running_mean and
                                         running_var, when given, are updated IN PLACE with momentum and the
                                         unbiased variance; save_mean, save_invstd: (C,).
                                         eval: running statistics (required); save_mean, save_invstd: None.

Statistics (mean, rstd, save_*) are float32 for float16/bfloat16 ``x``, else ``x.dtype``.

Backward entries: ``needs`` says which gradients to compute (ATen's ``output_mask``); a gradient that is not
needed, or whose parameter is None, is returned as None. ``dx`` has ``x.dtype``, ``dweight`` the weight's dtype,
``dbias`` the weight's dtype (``x.dtype`` without weight)::

    layer_norm_backward(grad, x, mean, rstd, weight, normalized_shape, *, needs=(True, True, True))
        -> (dx, dweight, dbias)
    rms_norm_backward(grad, x, rstd, weight, normalized_shape, *, needs=(True, True)) -> (dx, dweight)
    group_norm_backward(grad, x, mean, rstd, weight, num_groups, *, needs=(True, True, True))
        -> (dx, dweight, dbias)
    batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps=1e-5,
                        *, needs=(True, True, True)) -> (dx, dweight, dbias)
                                         training reads save_mean/save_invstd; eval reads the running stats.

Backend contract (outputs allocated by the entry; None for outputs not wanted; ``k`` the number of normalized
axes; compute in float64 when ``x`` or a parameter is float64, else float32)::

    layer_norm(out, mean, rstd, x, weight, bias, k, eps)
    layer_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, k)
    rms_norm(out, rstd, x, weight, k, eps)
    rms_norm_backward(dx, dweight, grad, x, rstd, weight, k)
    group_norm(out, mean, rstd, x, weight, bias, num_groups, eps)
    group_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, num_groups)
    batch_norm(out, save_mean, save_invstd, x, running_mean, running_var, weight, bias, training, momentum, eps)
    batch_norm_backward(dx, dweight, dbias, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        training, eps)
"""

from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe, shape_tuple

__all__ = ["layer_norm", "layer_norm_backward", "rms_norm", "rms_norm_backward", "group_norm",
           "group_norm_backward", "batch_norm", "batch_norm_backward"]


def _float(op, name, x) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: {name} must be an Array, got {describe(x)}")
    if x._dtype.kind != "f":
        raise OpTypeError(f"{op}: {name} must be a floating array, got {describe(x)}; hint: convert with "
                          f".astype(float32)")
    return x


def _param(op, name, v, shape, x):
    """None, or a floating Array of ``shape`` on x's device."""
    if v is None:
        return None
    _float(op, name, v)
    if v._shape != shape:
        raise OpValueError(f"{op}: {name} must have shape {shape} to match x {describe(x)}, got {describe(v)}")
    if v._device != x._device:
        raise RuntimeError(f"{op}: {name} is on {v.device} but x is on {x.device}; hint: move it with .to()")
    return v


def _same_as_x(op, name, g, x):
    _float(op, name, g)
    if g._shape != x._shape:
        raise OpValueError(f"{op}: {name} {describe(g)} must have the shape of x {describe(x)}")
    if g._device != x._device:
        raise RuntimeError(f"{op}: {name} is on {g.device} but x is on {x.device}")
    return g


def _stat_dtype(d: _dt.DType) -> _dt.DType:
    return _dt.float32 if d.itemsize == 2 else d


def _needs(op, needs, n):
    try:
        out = tuple(bool(v) for v in needs)
    except TypeError:
        out = ()
    if len(out) != n:
        raise OpValueError(f"{op}: needs must be a sequence of {n} booleans, got {needs!r}")
    return out


def _eps(op, eps) -> float:
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: eps must be a number, got {describe(eps)}") from None
    if not e >= 0:
        raise OpValueError(f"{op}: eps must be non-negative, got {eps}")
    return e


def _normalized(op, x, normalized_shape):
    ns = shape_tuple(op, normalized_shape)
    k = len(ns)
    if k == 0:
        raise OpValueError(f"{op}: normalized_shape must have at least one dimension, got ()")
    if x.ndim < k or x._shape[x.ndim - k:] != ns:
        raise OpValueError(f"{op}: normalized_shape {ns} does not match the trailing dimensions of x {describe(x)}; "
                           f"expected x.shape[-{k}:] == {ns}")
    return ns, k


# ------------------------------------------------------------------------------------------------ layer_norm
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, return_stats=False):
    """Normalize over the trailing ``normalized_shape`` axes (biased variance), then scale and shift.

    >>> import tkernels as tk
    >>> from tkernels.ops.normalization import layer_norm
    >>> layer_norm(tk.asarray([[1.0, 3.0]]), 2)
    Array([[-0.999995,  0.999995]], dtype=float32, device=cpu)
    """
    op = "layer_norm"
    _float(op, "x", x)
    ns, k = _normalized(op, x, normalized_shape)
    weight = _param(op, "weight", weight, ns, x)
    bias = _param(op, "bias", bias, ns, x)
    dev = x._device
    empty = lookup("empty", dev)
    out = empty(x._shape, x._dtype, dev)
    mean = rstd = None
    if return_stats:
        sd, ss = _stat_dtype(x._dtype), x._shape[:x.ndim - k]
        mean, rstd = empty(ss, sd, dev), empty(ss, sd, dev)
    lookup(op, dev)(out, mean, rstd, x, weight, bias, k, _eps(op, eps))
    return (out, mean, rstd) if return_stats else out


def layer_norm_backward(grad, x, mean, rstd, weight, normalized_shape, *, needs=(True, True, True)):
    """Gradients of ``layer_norm`` from the saved ``mean``/``rstd``: ``(dx, dweight, dbias)``."""
    op = "layer_norm_backward"
    _float(op, "x", x)
    _same_as_x(op, "grad", grad, x)
    ns, k = _normalized(op, x, normalized_shape)
    ss = x._shape[:x.ndim - k]
    _param(op, "mean", mean, ss, x)
    _param(op, "rstd", rstd, ss, x)
    if mean is None or rstd is None:
        raise OpValueError(f"{op}: mean and rstd are required (from layer_norm(..., return_stats=True))")
    weight = _param(op, "weight", weight, ns, x)
    nx, nw, nb = _needs(op, needs, 3)
    dev = x._device
    empty = lookup("empty", dev)
    pd = x._dtype if weight is None else weight._dtype
    dx = empty(x._shape, x._dtype, dev) if nx else None
    dw = empty(ns, pd, dev) if nw and weight is not None else None
    db = empty(ns, pd, dev) if nb else None
    if dx is not None or dw is not None or db is not None:
        lookup(op, dev)(dx, dw, db, grad, x, mean, rstd, weight, k)
    return dx, dw, db


# -------------------------------------------------------------------------------------------------- rms_norm
def rms_norm(x, normalized_shape, weight=None, eps=None, *, return_stats=False):
    """``x * rsqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` axes."""
    op = "rms_norm"
    _float(op, "x", x)
    ns, k = _normalized(op, x, normalized_shape)
    weight = _param(op, "weight", weight, ns, x)
    sd = _stat_dtype(x._dtype)
    e = _dt.finfo(sd).eps if eps is None else _eps(op, eps)
    dev = x._device
    empty = lookup("empty", dev)
    out = empty(x._shape, x._dtype, dev)
    rstd = empty(x._shape[:x.ndim - k], sd, dev) if return_stats else None
    lookup(op, dev)(out, rstd, x, weight, k, e)
    return (out, rstd) if return_stats else out


def rms_norm_backward(grad, x, rstd, weight, normalized_shape, *, needs=(True, True)):
    """Gradients of ``rms_norm`` from the saved ``rstd``: ``(dx, dweight)``."""
    op = "rms_norm_backward"
    _float(op, "x", x)
    _same_as_x(op, "grad", grad, x)
    ns, k = _normalized(op, x, normalized_shape)
    if rstd is None:
        raise OpValueError(f"{op}: rstd is required (from rms_norm(..., return_stats=True))")
    _param(op, "rstd", rstd, x._shape[:x.ndim - k], x)
    weight = _param(op, "weight", weight, ns, x)
    nx, nw = _needs(op, needs, 2)
    dev = x._device
    empty = lookup("empty", dev)
    dx = empty(x._shape, x._dtype, dev) if nx else None
    dw = empty(ns, weight._dtype, dev) if nw and weight is not None else None
    if dx is not None or dw is not None:
        lookup(op, dev)(dx, dw, grad, x, rstd, weight, k)
    return dx, dw


# ------------------------------------------------------------------------------------------------ group_norm
def _channels(op, x):
    if x.ndim < 2:
        raise OpValueError(f"{op}: x must have shape (N, C, *) with at least 2 dimensions, got {describe(x)}")
    return x._shape[1]


def _groups(op, x, num_groups):
    c = _channels(op, x)
    try:
        g = operator.index(num_groups)
    except TypeError:
        raise OpTypeError(f"{op}: num_groups must be an integer, got {describe(num_groups)}") from None
    if g < 1 or c % g:
        raise OpValueError(f"{op}: num_groups {g} must be positive and divide the {c} channels of x {describe(x)}")
    return c, g


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, return_stats=False):
    """Normalize each of ``num_groups`` channel groups of every sample of ``x`` (N, C, *), then scale and shift
    per channel."""
    op = "group_norm"
    _float(op, "x", x)
    c, g = _groups(op, x, num_groups)
    weight = _param(op, "weight", weight, (c,), x)
    bias = _param(op, "bias", bias, (c,), x)
    dev = x._device
    empty = lookup("empty", dev)
    out = empty(x._shape, x._dtype, dev)
    mean = rstd = None
    if return_stats:
        sd, ss = _stat_dtype(x._dtype), (x._shape[0], g)
        mean, rstd = empty(ss, sd, dev), empty(ss, sd, dev)
    lookup(op, dev)(out, mean, rstd, x, weight, bias, g, _eps(op, eps))
    return (out, mean, rstd) if return_stats else out


def group_norm_backward(grad, x, mean, rstd, weight, num_groups, *, needs=(True, True, True)):
    """Gradients of ``group_norm`` from the saved ``mean``/``rstd`` (N, num_groups): ``(dx, dweight, dbias)``."""
    op = "group_norm_backward"
    _float(op, "x", x)
    _same_as_x(op, "grad", grad, x)
    c, g = _groups(op, x, num_groups)
    if mean is None or rstd is None:
        raise OpValueError(f"{op}: mean and rstd are required (from group_norm(..., return_stats=True))")
    _param(op, "mean", mean, (x._shape[0], g), x)
    _param(op, "rstd", rstd, (x._shape[0], g), x)
    weight = _param(op, "weight", weight, (c,), x)
    nx, nw, nb = _needs(op, needs, 3)
    dev = x._device
    empty = lookup("empty", dev)
    pd = x._dtype if weight is None else weight._dtype
    dx = empty(x._shape, x._dtype, dev) if nx else None
    dw = empty((c,), pd, dev) if nw and weight is not None else None
    db = empty((c,), pd, dev) if nb else None
    if dx is not None or dw is not None or db is not None:
        lookup(op, dev)(dx, dw, db, grad, x, mean, rstd, weight, g)
    return dx, dw, db


# ------------------------------------------------------------------------------------------------ batch_norm
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5, *,
               return_stats=False):
    """Per-channel normalization of ``x`` (N, C, *) with batch statistics (training) or running ones (eval).

    In training, ``running_mean``/``running_var`` (when not None) are updated in place:
    ``r = (1 - momentum) * r + momentum * stat``, with the unbiased batch variance, as in PyTorch.
    """
    op = "batch_norm"
    _float(op, "x", x)
    c = _channels(op, x)
    running_mean = _param(op, "running_mean", running_mean, (c,), x)
    running_var = _param(op, "running_var", running_var, (c,), x)
    weight = _param(op, "weight", weight, (c,), x)
    bias = _param(op, "bias", bias, (c,), x)
    training = bool(training)
    try:
        momentum = float(momentum)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: momentum must be a number, got {describe(momentum)}") from None
    if training:
        if x.size and x.size // c == 1:
            raise OpValueError(f"{op}: expected more than 1 value per channel when training, got x {describe(x)}")
    elif running_mean is None or running_var is None:
        raise OpValueError(f"{op}: running_mean and running_var are required in evaluation mode "
                           f"(training=False); got {describe(running_mean)} and {describe(running_var)}")
    dev = x._device
    empty = lookup("empty", dev)
    out = empty(x._shape, x._dtype, dev)
    sm = si = None
    if return_stats and training:
        sd = _stat_dtype(x._dtype)
        sm, si = empty((c,), sd, dev), empty((c,), sd, dev)
    lookup(op, dev)(out, sm, si, x, running_mean, running_var, weight, bias, training, momentum, _eps(op, eps))
    return (out, sm, si) if return_stats else out


def batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps=1e-5, *,
                        needs=(True, True, True)):
    """Gradients of ``batch_norm``: ``(dx, dweight, dbias)``; training reads ``save_mean``/``save_invstd``,
    eval reads ``running_mean``/``running_var`` and ``eps``."""
    op = "batch_norm_backward"
    _float(op, "x", x)
    _same_as_x(op, "grad", grad, x)
    c = _channels(op, x)
    weight = _param(op, "weight", weight, (c,), x)
    training = bool(training)
    if training:
        if save_mean is None or save_invstd is None:
            raise OpValueError(f"{op}: save_mean and save_invstd are required when training (from "
                               f"batch_norm(..., training=True, return_stats=True))")
        _param(op, "save_mean", save_mean, (c,), x)
        _param(op, "save_invstd", save_invstd, (c,), x)
    else:
        if running_mean is None or running_var is None:
            raise OpValueError(f"{op}: running_mean and running_var are required in evaluation mode")
        _param(op, "running_mean", running_mean, (c,), x)
        _param(op, "running_var", running_var, (c,), x)
    nx, nw, nb = _needs(op, needs, 3)
    dev = x._device
    empty = lookup("empty", dev)
    pd = x._dtype if weight is None else weight._dtype
    dx = empty(x._shape, x._dtype, dev) if nx else None
    dw = empty((c,), pd, dev) if nw and weight is not None else None
    db = empty((c,), pd, dev) if nb else None
    if dx is not None or dw is not None or db is not None:
        lookup(op, dev)(dx, dw, db, grad, x, weight, running_mean, running_var, save_mean, save_invstd, training,
                        _eps(op, eps))
    return dx, dw, db
