"""``LocalResponseNorm`` (PyTorch's path ``nn.modules.normalization``, which imports it)."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["LocalResponseNorm"]


class LocalResponseNorm(Module):
    """``x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta`` on ``(N, C, *)``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
