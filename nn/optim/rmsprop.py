"""RMSprop and Adagrad, following PyTorch's single-tensor implementations operation by operation."""

from __future__ import annotations

import autograd as ag
import tkernels as tk

from ._sparse import is_sparse, rows
from .optimizer import Optimizer

__all__ = ["RMSprop", "Adagrad"]


def _grad(p, g):
    grad = p.grad._data
    if g.get("maximize"):
        grad = tk.negative(grad)
    if g["weight_decay"] != 0:
        grad = tk.add(grad, tk.multiply(p._data, g["weight_decay"]))
    return grad


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        for name, v in (("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                        ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if v < 0:
                raise ValueError(f"Invalid {name}: {v}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            alpha, eps, lr, mom = g["alpha"], g["eps"], g["lr"], g["momentum"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = _grad(p, g)
                st = self.state.get(p)
                if not st:
                    st = self.state[p] = {"step": ag.tensor(0.0), "square_avg": ag.zeros_like(p)}
                    if mom > 0:
                        st["momentum_buffer"] = ag.zeros_like(p)
                    if g["centered"]:
                        st["grad_avg"] = ag.zeros_like(p)
                self._next_step(st)
                sq = st["square_avg"]._data
                tk.multiply(sq, alpha, out=sq)
                tk.add(sq, tk.multiply(tk.multiply(grad, grad), 1 - alpha), out=sq)
                if g["centered"]:
                    ga = st["grad_avg"]._data
                    tk.lerp(ga, grad, 1 - alpha, out=ga)
                    avg = tk.sqrt(tk.subtract(sq, tk.multiply(ga, ga)))
                else:
                    avg = tk.sqrt(sq)
                avg = tk.add(avg, eps)
                if mom > 0:
                    buf = st["momentum_buffer"]._data
                    tk.multiply(buf, mom, out=buf)
                    tk.add(buf, tk.divide(grad, avg), out=buf)
                    tk.subtract(p._data, tk.multiply(buf, lr), out=p._data)
                else:
                    tk.subtract(p._data, tk.multiply(tk.divide(grad, avg), lr), out=p._data)
                p._version.v += 1
        return loss


class Adagrad(Optimizer):
    _sparse_message = None  # takes sparse gradients: only their rows are updated (PyTorch's sparse Adagrad)
    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        for name, v in (("learning rate", lr), ("lr_decay value", lr_decay), ("weight_decay value", weight_decay),
                        ("initial_accumulator_value value", initial_accumulator_value), ("epsilon value", eps)):
            if v < 0:
                raise ValueError(f"Invalid {name}: {v}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p] = {"step": ag.tensor(0.0),
                                 "sum": ag.full_like(p, g["initial_accumulator_value"])}

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if is_sparse(p.grad):
                    if g["weight_decay"] != 0:
                        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                    step = self._next_step(st)
                    _sparse_adagrad(p, st["sum"], g, g["lr"] / (1 + (step - 1) * g["lr_decay"]))
                    continue
                grad = _grad(p, g)
                step = self._next_step(st)
                clr = g["lr"] / (1 + (step - 1) * g["lr_decay"])
                s = st["sum"]._data
                tk.add(s, tk.multiply(grad, grad), out=s)
                std = tk.add(tk.sqrt(s), g["eps"])
                tk.subtract(p._data, tk.multiply(tk.divide(grad, std), clr), out=p._data)
                p._version.v += 1
        return loss


def _sparse_adagrad(p, state_sum, g, clr) -> None:
    """PyTorch's sparse Adagrad: the sum of squares and the parameter change only at the gradient's rows."""
    flat, idx, v = rows(p, p.grad)
    if g.get("maximize"):
        v = -v
    s = state_sum.view(flat.shape)
    s.index_add_(0, idx, v * v)
    std = s.index_select(0, idx).sqrt_().add_(g["eps"])
    flat.index_add_(0, idx, v / std, alpha=-clr)
