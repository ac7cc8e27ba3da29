"""Adadelta (Zeiler 2012), following PyTorch's single-tensor implementation operation by operation:
``v = rho v + (1 - rho) g²``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho u + (1 - rho) delta²``,
``p -= lr * delta`` (``weight_decay`` adds ``wd * p`` to ``g``; ``maximize`` negates ``g``)."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from .optimizer import Optimizer
from .rmsprop import _grad

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            rho, eps, lr = g["rho"], g["eps"], g["lr"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = _grad(p, g)
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0), square_avg=ag.zeros_like(p), acc_delta=ag.zeros_like(p))
                self._next_step(st)
                sq, acc = st["square_avg"]._data, st["acc_delta"]._data
                tk.multiply(sq, rho, out=sq)
                tk.add(sq, tk.multiply(tk.multiply(grad, grad), 1 - rho), out=sq)
                std = tk.sqrt(tk.add(sq, eps))
                delta = tk.multiply(tk.divide(tk.sqrt(tk.add(acc, eps)), std), grad)
                tk.multiply(acc, rho, out=acc)
                tk.add(acc, tk.multiply(tk.multiply(delta, delta), 1 - rho), out=acc)
                tk.subtract(p._data, tk.multiply(delta, lr), out=p._data)
                p._version.v += 1
        return loss
