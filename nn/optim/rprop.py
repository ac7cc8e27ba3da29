"""Rprop (Riedmiller & Braun 1993: resilient backpropagation, the variant without weight backtracking), PyTorch's
single-tensor arithmetic op by op: per element, ``s = sign(g * prev)``; ``step_size`` is multiplied by
``etaplus`` where ``s > 0``, by ``etaminus`` where ``s < 0`` (and the gradient is then taken as 0), and clamped
to ``step_sizes``; ``p -= sign(g) * step_size``; ``prev = g`` (``maximize`` negates ``g``). State: ``step``,
``prev``, ``step_size`` (starts at ``lr``).

``foreach`` and ``capturable`` are accepted for PyTorch's signature; every path runs the single-tensor step."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from .optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable: bool = False,
                 foreach=None, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            etaminus, etaplus = g["etas"]
            smin, smax = g["step_sizes"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = tk.negative(p.grad._data) if g["maximize"] else p.grad._data
                st = self.state[p]
                if not st:
                    st.update(step=ag.tensor(0.0), prev=ag.zeros_like(p), step_size=ag.full_like(p, g["lr"]))
                self._next_step(st)
                prev, size = st["prev"]._data, st["step_size"]._data
                s = tk.sign(tk.multiply(grad, prev))
                # ones_like(s) gives the factors the parameter's dtype (two Python scalars would give float32)
                factor = tk.where(tk.greater(s, 0), etaplus, tk.where(tk.less(s, 0), etaminus, tk.ones_like(s)))
                tk.clip(tk.multiply(size, factor), smin, smax, out=size)
                grad = tk.where(tk.less(s, 0), 0.0, grad)  # a sign change: no step now, and no sign memory next
                tk.subtract(p._data, tk.multiply(tk.sign(grad), size), out=p._data)
                tk.copy_into(prev, grad)
                for t in (p, st["prev"], st["step_size"]):
                    t._version.v += 1
        return loss
