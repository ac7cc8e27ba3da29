"""NAdam (Dozat 2016: Adam with Nesterov momentum and a momentum schedule), PyTorch's single-tensor arithmetic op
by op. With ``mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay))`` and ``P_t = mu_1 ... mu_t`` (state
``mu_product``): ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g²``,
``d = sqrt(v / (1 - beta2^t)) + eps``, ``p -= lr (1 - mu_t) / (1 - P_t) * g / d + lr mu_{t+1} / (1 - P_t mu_{t+1})
* m / d``. ``weight_decay`` adds ``wd * p`` to ``g``, or with ``decoupled_weight_decay`` (NAdamW) scales ``p`` by
``1 - lr wd`` first; ``maximize`` negates ``g``.

``foreach`` and ``capturable`` are accepted for PyTorch's signature; every path runs the single-tensor step."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from ._checks import check_betas, check_nonneg
from .optimizer import Optimizer

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        check_nonneg(("learning rate", lr), ("epsilon value", eps))
        check_betas(betas)
        check_nonneg(("weight_decay value", weight_decay), ("momentum_decay value", momentum_decay))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            lr, wd, md = g["lr"], g["weight_decay"], g["momentum_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                pa = p._data
                grad = tk.negative(p.grad._data) if g["maximize"] else p.grad._data
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0), mu_product=ag.tensor(1.0), exp_avg=ag.zeros_like(p),
                              exp_avg_sq=ag.zeros_like(p))
                step = self._next_step(st)
                if wd != 0:
                    if g["decoupled_weight_decay"]:
                        tk.multiply(pa, 1 - lr * wd, out=pa)
                    else:
                        grad = tk.add(grad, tk.multiply(pa, wd))
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
                # the product lives in a 0-d tensor of the scalar dtype (float32 by default), as in PyTorch
                prod = st["mu_product"]._data
                tk.multiply(prod, mu, out=prod)
                st["mu_product"]._version.v += 1
                mu_prod = float(prod.item())
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                tk.lerp(m, grad, 1 - beta1, out=m)
                tk.multiply(v, beta2, out=v)
                tk.add(v, tk.multiply(tk.multiply(grad, grad), 1 - beta2), out=v)
                denom = tk.add(tk.sqrt(tk.divide(v, 1 - beta2**step)), g["eps"])
                tk.add(pa, tk.multiply(tk.divide(grad, denom), -lr * (1.0 - mu) / (1.0 - mu_prod)), out=pa)
                tk.add(pa, tk.multiply(tk.divide(m, denom), -lr * mu_next / (1.0 - mu_prod * mu_next)), out=pa)
                p._version.v += 1
        return loss
