"""Gradient clipping (PyTorch's semantics): by total norm over all parameters, or by value."""

from __future__ import annotations

import math

import autograd as ag
import tkernels as tk
from autograd.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type`` norm of all of ``tensors`` together (of their norms), as a 0-d float32 tensor (PyTorch's
    ``get_total_norm``: pass the gradients, ``[p.grad for p in params]``); None entries are skipped."""
    ts = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors if t is not None]
    # a sparse gradient (nn.Embedding(sparse=True)) counts with its coalesced values
    norm_of = [t.coalesce()._v if t.__class__.is_sparse is True else t for t in ts]
    norm_type = float(norm_type)
    if not norm_of:
        return ag.tensor(0.0)
    dev = norm_of[0].device
    with ag.no_grad():
        if norm_type == math.inf:
            norms = [tk.max(tk.abs(g._data)) if g.numel() else tk.zeros((), dtype=g._data.dtype, device=g._data.device)
                     for g in norm_of]
            total = tk.max(tk.stack([tk.astype(tk.to_device(n, dev), tk.float32) for n in norms]))
        else:
            norms = [tk.vector_norm(tk.astype(g._data, tk.float32) if g._data.dtype.itemsize < 4 else g._data,
                                    ord=norm_type) for g in norm_of]
            total = tk.vector_norm(tk.stack([tk.astype(tk.to_device(n, dev), tk.float32) for n in norms]),
                                   ord=norm_type)
        if error_if_nonfinite and not bool(tk.all(tk.isfinite(total))):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               f"so it cannot be clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
    return Tensor._wrap(total)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` in place by ``max_norm / (total_norm + 1e-6)`` when that is below 1
    (``total_norm`` from ``get_total_norm``)."""
    grads = [g._v if g.__class__.is_sparse is True else g for g in _grads(parameters)]
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else tk.asarray(float(total_norm))
    with ag.no_grad():
        coef = tk.clip(tk.divide(float(max_norm), tk.add(total, 1e-6)), None, 1.0)
        for g in grads:
            tk.multiply(g._data, tk.astype(tk.to_device(coef, g._data.device), g._data.dtype), out=g._data)
            g._version.v += 1


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale all gradients in place so that their joint ``norm_type`` norm is at most ``max_norm``; returns the
    total norm (before clipping) as a 0-d tensor (``get_total_norm`` then ``clip_grads_with_norm_``)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm([p.grad for p in parameters], norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with ag.no_grad():
        for g in _grads(parameters):
            tk.clip(g._data, -clip_value, clip_value, out=g._data)
            g._version.v += 1
