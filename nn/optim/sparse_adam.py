"""SparseAdam (PyTorch's): Adam's moments and update applied only at the rows a sparse gradient holds (the rows an
``nn.Embedding(sparse=True)`` lookup touched); the other rows and their moments stay as they are. Dense gradients
are refused with PyTorch's error. Same arithmetic, in the same order, as PyTorch's ``SparseAdam.step``."""

from __future__ import annotations

import math

import autograd as ag

from ._checks import check_betas
from ._sparse import is_sparse, rows
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    _sparse_message = None

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8, maximize: bool = False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))

    @ag.no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None and not is_sparse(p.grad):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = ag.zeros_like(p)
                    st["exp_avg_sq"] = ag.zeros_like(p)
                st["step"] += 1
                flat, idx, v = rows(p, p.grad)
                if g["maximize"]:
                    v = -v
                m = st["exp_avg"].view(flat.shape)
                s = st["exp_avg_sq"].view(flat.shape)
                old_m = m.index_select(0, idx)
                m_upd = (v - old_m) * (1 - beta1)
                m.index_add_(0, idx, m_upd)
                old_s = s.index_select(0, idx)
                s_upd = (v * v - old_s) * (1 - beta2)
                s.index_add_(0, idx, s_upd)
                numer = m_upd + old_m
                denom = (s_upd + old_s).sqrt_().add_(g["eps"])
                step = st["step"]
                step_size = g["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                flat.index_add_(0, idx, numer / denom, alpha=-step_size)
        return loss
