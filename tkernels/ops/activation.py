"""Softmax and log-softmax along one axis, with their backward entries (ATen's split); ReLU's backward.

Forward entries::

    softmax(x, axis=-1, *, dtype=None) -> y
    log_softmax(x, axis=-1, *, dtype=None) -> y

``x``: a floating Array of any shape, 0-d and empty included (with ``dtype`` given, any numeric Array: it is
converted first, like ``torch.softmax(x, dim, dtype=...)``). The result has ``dtype`` or else ``x.dtype``.
float16/bfloat16 compute in float32 and round once; float64 computes in float64. The row maximum is
subtracted first, so large inputs do not overflow; a row of -inf gives NaN, as in PyTorch.

Backward entries (ATen ``_softmax_backward_data`` / ``_log_softmax_backward_data``): they read the forward's
*output* ``y``, never its input::

    softmax_backward(grad, y, axis, *, input_dtype=None) -> dx       dx = y * (grad - sum(grad * y, axis))
    log_softmax_backward(grad, y, axis, *, input_dtype=None) -> dx   dx = grad - exp(y) * sum(grad, axis)

``input_dtype`` is the dtype of the forward's input (default ``y.dtype``); ``dx`` takes it.

ReLU's backward (ATen ``threshold_backward``)::

    threshold_backward(grad, y, threshold=0.0) -> dx    dx = 0 where y <= threshold, else grad

``grad`` and ``y`` (the forward's output, or its input: the same mask for relu) of one floating dtype, shape and
device; NaN in ``y`` passes its gradient, and a masked infinite or NaN gradient gives 0 (a select, not
``grad * (y > 0)``). For float16/bfloat16 the threshold is rounded to the dtype first, as comparisons promote.

Backend contract (``lookup(name, device)``; outputs allocated by the entry, ``axis`` non-negative, 0 for a
0-d array; compute in float64 when any operand is float64, else in float32)::

    softmax(out, x, axis)                  log_softmax(out, x, axis)
    softmax_backward(out, grad, y, axis)   log_softmax_backward(out, grad, y, axis)
    threshold_backward(out, grad, y, threshold, compute)    compute: float32 for halves, else the dtype

>>> import tkernels as tk
>>> from tkernels.ops.activation import softmax
>>> softmax(tk.asarray([0.0, 0.0]))
Array([0.5, 0.5], dtype=float32, device=cpu)
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe, normalize_axis

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "threshold_backward"]


def _forward(op, x, axis, dtype):
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    if dtype is None:
        rd = x._dtype
        if rd.kind != "f":
            raise OpTypeError(f"{op}: expected a floating array, got {describe(x)}; hint: pass dtype=float32 or "
                              f"convert with .astype(float32)")
    else:
        rd = _dt.as_dtype(dtype)
        if rd.kind != "f":
            raise OpTypeError(f"{op}: dtype must be a floating dtype, got {rd}")
    n = len(x._shape)
    ax = n - 1 if axis == -1 and n else normalize_axis(axis, n, op)
    dev = x._device
    out = lookup("empty", dev)(x._shape, rd, dev)
    lookup(op, dev)(out, x, ax)
    return out


def softmax(x, axis: int = -1, *, dtype=None) -> Array:
    """``exp(x) / sum(exp(x), axis)``, computed stably; result dtype ``dtype`` or ``x.dtype``."""
    return _forward("softmax", x, axis, dtype)


def log_softmax(x, axis: int = -1, *, dtype=None) -> Array:
    """``x - logsumexp(x, axis)``, computed stably; result dtype ``dtype`` or ``x.dtype``."""
    return _forward("log_softmax", x, axis, dtype)


def _backward(op, grad, y, axis, input_dtype):
    for name, a in (("grad", grad), ("y", y)):
        if not isinstance(a, Array):
            raise OpTypeError(f"{op}: {name} must be an Array, got {describe(a)}")
        if a._dtype.kind != "f":
            raise OpTypeError(f"{op}: {name} must be a floating array, got {describe(a)}")
    if grad._shape != y._shape:
        raise OpValueError(f"{op}: grad {describe(grad)} and y {describe(y)} must have the same shape (y is the "
                           f"forward's output)")
    dev = y._device
    if grad._device != dev:
        raise RuntimeError(f"{op}: grad is on {grad.device} but y is on {y.device}; hint: move them with .to()")
    rd = y._dtype if input_dtype is None else _dt.as_dtype(input_dtype)
    if rd.kind != "f":
        raise OpTypeError(f"{op}: input_dtype must be a floating dtype, got {rd}")
    n = len(y._shape)
    ax = n - 1 if axis == -1 and n else normalize_axis(axis, n, op)
    out = lookup("empty", dev)(y._shape, rd, dev)
    lookup(op, dev)(out, grad, y, ax)
    return out


def softmax_backward(grad, y, axis: int, *, input_dtype=None) -> Array:
    """Gradient of ``softmax`` from its output ``y``: ``y * (grad - sum(grad * y, axis))``."""
    return _backward("softmax_backward", grad, y, axis, input_dtype)


def log_softmax_backward(grad, y, axis: int, *, input_dtype=None) -> Array:
    """Gradient of ``log_softmax`` from its output ``y``: ``grad - exp(y) * sum(grad, axis)``."""
    return _backward("log_softmax_backward", grad, y, axis, input_dtype)


def threshold_backward(grad, y, threshold=0.0) -> Array:
    """ReLU's gradient: 0 where ``y <= threshold``, ``grad`` elsewhere (see the module docstring)."""
    op = "threshold_backward"
    if not (grad.__class__ is Array and y.__class__ is Array and grad._dtype is y._dtype and y._dtype.kind == "f"
            and grad._shape == y._shape and grad._device is y._device and threshold.__class__ is float):
        for name, a in (("grad", grad), ("y", y)):
            if not isinstance(a, Array):
                raise OpTypeError(f"{op}: {name} must be an Array, got {describe(a)}")
            if a._dtype.kind != "f":
                raise OpTypeError(f"{op}: {name} must be a floating array, got {describe(a)}")
        if grad._dtype is not y._dtype:
            raise OpTypeError(f"{op}: grad {describe(grad)} and y {describe(y)} must have one dtype")
        if grad._shape != y._shape:
            raise OpValueError(f"{op}: grad {describe(grad)} and y {describe(y)} must have the same shape")
        if grad._device != y._device:
            raise RuntimeError(f"{op}: grad is on {grad.device} but y is on {y.device}; hint: move them with .to()")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise OpTypeError(f"{op}: threshold must be a real number, got {describe(threshold)}")
        threshold = float(threshold)
    d = y._dtype
    dev = y._device
    out = lookup("empty", dev)(y._shape, d, dev)
    lookup(op, dev)(out, grad, y, threshold, _dt.float32 if d is _dt.float16 or d is _dt.bfloat16 else d)
    return out
