"""Stochastic gradient descent (momentum, dampening, Nesterov, weight decay, maximize) as PyTorch's SGD.

``step`` updates each parameter group with one fused multi-tensor ``tk.ops.sgd_step`` per device (one kernel
launch on cuda); ``foreach=False`` (without ``fused=True``) runs the per-parameter reference
``_single_tensor_step``."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from ._sparse import rows
from .optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
    _sparse_message = None  # takes sparse gradients (nn.Embedding(sparse=True)): see _sparse_param_step
    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach=None, differentiable: bool = False,
                 fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _fused_step(self, g) -> None:
        """One ``tk.ops.sgd_step`` (one kernel launch on cuda) per device of the group (and per kind of momentum
        buffer: new ones start as the gradient)."""
        mom = g["momentum"]
        buckets = {}
        lists = dev = last = None
        for p in g["params"]:
            if p.grad is None:
                continue
            if p.grad.__class__.is_sparse is True:
                self._sparse_param_step(p, g)
                continue
            pa = p._data
            first = False
            buf = None
            if mom != 0:
                st = self.state.setdefault(p, {})
                buf = st.get("momentum_buffer")
                first = buf is None
                if first:
                    buf = st["momentum_buffer"] = ag.Tensor._wrap(tk.empty_like(pa))
                else:
                    buf._version.v += 1
            if pa._device is not dev or first is not last:  # another bucket (a group has one in the common case)
                dev, last = pa._device, first
                lists = buckets.get((dev, first))
                if lists is None:
                    lists = buckets[(dev, first)] = ([], [], [] if mom != 0 else None)
            lists[0].append(pa)
            lists[1].append(p.grad._data)
            if buf is not None:
                lists[2].append(buf._data)
            p._version.v += 1
        for (_, first), lists in buckets.items():
            tk.ops.sgd_step(*lists, lr=g["lr"], momentum=mom, dampening=g["dampening"],
                            weight_decay=g["weight_decay"], nesterov=g["nesterov"], maximize=g["maximize"],
                            first_step=first)

    def _single_tensor_step(self, g) -> None:
        """The per-parameter reference (``foreach=False``): PyTorch's single-tensor arithmetic, op by op."""
        lr, mom, damp, wd = g["lr"], g["momentum"], g["dampening"], g["weight_decay"]
        for p in g["params"]:
            if p.grad is None:
                continue
            if p.grad.__class__.is_sparse is True:
                self._sparse_param_step(p, g)
                continue
            d_p = p.grad._data
            if g["maximize"]:
                d_p = tk.negative(d_p)
            if wd != 0:
                d_p = tk.add(d_p, tk.multiply(p._data, wd))
            if mom != 0:
                st = self.state.setdefault(p, {})
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = ag.Tensor._wrap(tk.copy(d_p))
                    st["momentum_buffer"] = buf
                else:
                    b = buf._data
                    tk.multiply(b, mom, out=b)
                    tk.add(b, tk.multiply(d_p, 1 - damp) if damp else d_p, out=b)
                    buf._version.v += 1
                d_p = tk.add(d_p, tk.multiply(buf._data, mom)) if g["nesterov"] else buf._data
            tk.subtract(p._data, tk.multiply(d_p, lr), out=p._data)
            p._version.v += 1

    def _sparse_param_step(self, p, g) -> None:
        """A sparse gradient (``nn.Embedding(sparse=True)``), as PyTorch's SGD takes it: without momentum and weight
        decay only its rows change; with either, its dense value enters the dense arithmetic (PyTorch's
        ``d_p.add(param)`` turns it dense; its sparse momentum buffer has the same values as the dense one kept
        here)."""
        lr, mom, wd = g["lr"], g["momentum"], g["weight_decay"]
        if mom == 0 and wd == 0:
            flat, idx, v = rows(p, p.grad)
            flat.index_add_(0, idx, v, alpha=lr if g["maximize"] else -lr)
            return
        d_p = p.grad.to_dense().to(p.dtype)._data
        if g["maximize"]:
            d_p = tk.negative(d_p)
        if wd != 0:
            d_p = tk.add(d_p, tk.multiply(p._data, wd))
        if mom != 0:
            st = self.state[p]
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = st["momentum_buffer"] = ag.Tensor._wrap(tk.copy(d_p))
            else:
                b = buf._data
                tk.multiply(b, mom, out=b)
                tk.add(b, tk.multiply(d_p, 1 - g["dampening"]) if g["dampening"] else d_p, out=b)
                buf._version.v += 1
            d_p = tk.add(d_p, tk.multiply(buf._data, mom)) if g["nesterov"] else buf._data
        tk.subtract(p._data, tk.multiply(d_p, lr), out=p._data)
        p._version.v += 1
