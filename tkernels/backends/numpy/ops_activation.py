"""Softmax and log-softmax (forward and backward) on NumPy; see ``tkernels.ops.activation`` for the contract."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import max_last, npv

_F64 = np.dtype(np.float64)


def _compute(*arrays) -> np.dtype:
    """float64 when any operand is float64, else float32 (half inputs accumulate in float32)."""
    for a in arrays:
        if a.dtype.numpy == _F64:
            return _F64
    return np.dtype(np.float32)


def _views(out, *arrays):
    """NumPy views of ``out`` and ``arrays``, 0-d ones as 1-element vectors (axis 0 then exists)."""
    vs = [npv(a) for a in (out, *arrays)]
    if vs[0].ndim == 0:
        vs = [v.reshape(1) for v in vs]
    return vs


def _target(o, cd):
    """Where to compute: ``o`` itself when it has the compute dtype (fresh and contiguous), else a temporary."""
    return o if o.dtype == cd else np.empty(o.shape, cd)


def _row_max(a, axis):
    """``a.max(axis, keepdims=True)`` (the faster way over a last axis: see max_last)."""
    if axis == -1 or axis == a.ndim - 1:
        return max_last(a, keepdims=True)
    return a.max(axis, keepdims=True)


@register("softmax", "numpy")
def softmax(out, x, axis) -> None:
    if out.size == 0:
        return
    cd = _compute(x, out)
    o, a = _views(out, x)
    a = a.astype(cd, copy=False)
    t = _target(o, cd)
    with np.errstate(invalid="ignore"):  # a row of -inf gives NaN, as in PyTorch
        np.subtract(a, _row_max(a, axis), out=t)
        np.exp(t, out=t)
        t /= t.sum(axis, keepdims=True)
    if t is not o:
        np.copyto(o, t, casting="unsafe")


@register("log_softmax", "numpy")
def log_softmax(out, x, axis) -> None:
    if out.size == 0:
        return
    cd = _compute(x, out)
    o, a = _views(out, x)
    a = a.astype(cd, copy=False)
    t = _target(o, cd)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.subtract(a, _row_max(a, axis), out=t)
        t -= np.log(np.exp(t).sum(axis, keepdims=True))
    if t is not o:
        np.copyto(o, t, casting="unsafe")


@register("softmax_backward", "numpy")
def softmax_backward(out, grad, y, axis) -> None:
    if out.size == 0:
        return
    cd = _compute(grad, y, out)
    o, g, yv = _views(out, grad, y)
    g = g.astype(cd, copy=False)
    yv = yv.astype(cd, copy=False)
    t = _target(o, cd)
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(g, (g * yv).sum(axis, keepdims=True), out=t)
        t *= yv
    if t is not o:
        np.copyto(o, t, casting="unsafe")


@register("log_softmax_backward", "numpy")
def log_softmax_backward(out, grad, y, axis) -> None:
    if out.size == 0:
        return
    cd = _compute(grad, y, out)
    o, g, yv = _views(out, grad, y)
    g = g.astype(cd, copy=False)
    t = _target(o, cd)
    with np.errstate(invalid="ignore", over="ignore"):
        np.exp(yv.astype(cd, copy=False), out=t)
        t *= g.sum(axis, keepdims=True)
        np.subtract(g, t, out=t)
    if t is not o:
        np.copyto(o, t, casting="unsafe")
