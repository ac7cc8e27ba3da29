"""SparseAdam: PyTorch's signature, checks and ``state_dict`` layout; ``step`` raises, because it needs sparse
gradients (Adam's update applied to the rows an ``nn.Embedding(sparse=True)`` lookup touched) and the project has
no sparse tensors yet. PyTorch's SparseAdam raises the same way on the dense gradients that are all we have."""

from __future__ import annotations

import autograd as ag

from ._checks import check_betas
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
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
                if p.grad is not None:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam instead (SparseAdam "
                        "needs sparse gradients, and this project has no sparse tensors yet: nn.Embedding(sparse="
                        "True) does not exist yet)")
        return loss
