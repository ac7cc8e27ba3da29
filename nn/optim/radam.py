"""RAdam (Liu et al. 2019: Adam with a rectified adaptive learning rate), PyTorch's single-tensor arithmetic op by
op: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g²``, ``rho_inf = 2 / (1 - beta2) - 1``,
``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``; when ``rho_t > 5``
``p -= m / (1 - beta1^t) * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t`` with the rectification
``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``, else (the first steps)
``p -= m / (1 - beta1^t) * lr``. ``weight_decay`` adds ``wd * p`` to ``g``, or with ``decoupled_weight_decay``
(RAdamW) scales ``p`` by ``1 - lr wd`` first; ``maximize`` negates ``g``.

``foreach`` and ``capturable`` are accepted for PyTorch's signature; every path runs the single-tensor step."""

from __future__ import annotations

import math

import autograd as ag
import tkernels as tk

from ._checks import check_betas, check_nonneg
from .optimizer import Optimizer

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_nonneg(("learning rate", lr), ("epsilon value", eps))
        check_betas(betas)
        check_nonneg(("weight_decay value", weight_decay))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            lr, wd = g["lr"], g["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in g["params"]:
                if p.grad is None:
                    continue
                pa = p._data
                grad = tk.negative(p.grad._data) if g["maximize"] else p.grad._data
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0), exp_avg=ag.zeros_like(p), exp_avg_sq=ag.zeros_like(p))
                step = self._next_step(st)
                if wd != 0:
                    if g["decoupled_weight_decay"]:
                        tk.multiply(pa, 1 - lr * wd, out=pa)
                    else:
                        grad = tk.add(grad, tk.multiply(pa, wd))
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                tk.lerp(m, grad, 1 - beta1, out=m)
                tk.multiply(v, beta2, out=v)
                tk.add(v, tk.multiply(tk.multiply(grad, grad), 1 - beta2), out=v)
                bc2 = 1 - beta2**step
                update = tk.multiply(tk.divide(m, 1 - beta1**step), lr)
                rho_t = rho_inf - 2 * step * beta2**step / bc2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = tk.divide(bc2**0.5, tk.add(tk.sqrt(v), g["eps"]))
                    update = tk.multiply(tk.multiply(update, adaptive), rect)
                tk.subtract(pa, update, out=pa)
                p._version.v += 1
        return loss
