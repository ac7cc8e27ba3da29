"""Stochastic gradient descent (momentum, dampening, Nesterov, weight decay, maximize) as PyTorch's SGD."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from .optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
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

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            lr, mom, damp, wd = g["lr"], g["momentum"], g["dampening"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
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
        return loss
