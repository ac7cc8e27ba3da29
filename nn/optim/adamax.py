"""Adamax (Kingma & Ba 2015, §7.1: Adam with the infinity norm), PyTorch's single-tensor arithmetic op by op:
``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``
(``weight_decay`` adds ``wd * p`` to ``g``; ``maximize`` negates ``g``).

``foreach`` and ``capturable`` are accepted for PyTorch's signature; every path runs the single-tensor step."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from ._checks import check_betas, check_nonneg
from .optimizer import Optimizer
from .rmsprop import _grad

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        check_nonneg(("learning rate", lr), ("epsilon value", eps))
        check_betas(betas)
        check_nonneg(("weight_decay value", weight_decay))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = _grad(p, g)
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0), exp_avg=ag.zeros_like(p), exp_inf=ag.zeros_like(p))
                step = self._next_step(st)
                m, u = st["exp_avg"]._data, st["exp_inf"]._data
                tk.lerp(m, grad, 1 - beta1, out=m)
                tk.multiply(u, beta2, out=u)
                tk.maximum(u, tk.add(tk.abs(grad), g["eps"]), out=u)
                clr = g["lr"] / (1 - beta1**step)
                tk.subtract(p._data, tk.multiply(tk.divide(m, u), clr), out=p._data)
                p._version.v += 1
        return loss
