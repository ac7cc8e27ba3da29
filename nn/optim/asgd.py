"""ASGD (Polyak & Juditsky 1992: averaged SGD, with Bottou's step-size schedule), PyTorch's single-tensor arithmetic
op by op: ``p = p (1 - lambd eta) - eta g``; the average ``ax = p`` while ``mu == 1``, then
``ax += (p - ax) mu``; then ``eta = lr / (1 + lambd lr t)^alpha`` and ``mu = 1 / max(1, t - t0)``
(``weight_decay`` adds ``wd * p`` to ``g``; ``maximize`` negates ``g``). State: ``step``, ``eta``, ``mu`` (0-d
tensors of the scalar dtype on the parameter's device, as in PyTorch) and ``ax``.

``foreach`` and ``capturable`` are accepted for PyTorch's signature; every path runs the single-tensor step."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from ._checks import check_nonneg
from .optimizer import Optimizer
from .rmsprop import _grad

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        check_nonneg(("learning rate", lr), ("weight_decay value", weight_decay))
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            lr, lambd = g["lr"], g["lambd"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                pa = p._data
                grad = _grad(p, g)
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0, device=p.device), eta=ag.tensor(float(lr), device=p.device),
                              mu=ag.tensor(1.0, device=p.device), ax=ag.zeros_like(p))
                step = self._next_step(st)
                eta = float(st["eta"].item())
                tk.multiply(pa, 1 - lambd * eta, out=pa)
                tk.add(pa, tk.multiply(grad, -eta), out=pa)
                ax = st["ax"]._data
                mu = float(st["mu"].item())
                if mu != 1:
                    tk.add(ax, tk.multiply(tk.subtract(pa, ax), mu), out=ax)
                else:
                    tk.copy_into(ax, pa)
                st["ax"]._version.v += 1
                for name, val in (("eta", lr / ((1 + lambd * lr * step) ** g["alpha"])),
                                  ("mu", 1 / max(1, step - g["t0"]))):
                    tk.copy_into(st[name]._data, val)
                    st[name]._version.v += 1
                p._version.v += 1
        return loss
