"""``Parameter``: a leaf tensor that a Module registers as a learnable weight."""

from __future__ import annotations

import tkernels as tk
from autograd.tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data, requires_grad=True)`` shares ``data``'s storage (like PyTorch)."""

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = tk.empty((0,))
        if isinstance(data, Tensor):
            data = data.detach()._data
        super().__init__(data, requires_grad=False)
        if requires_grad:
            self.requires_grad = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        p = Parameter(tk.copy(self._data), self._requires_grad)
        memo[id(self)] = p
        return p


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute (``nn.Buffer``)."""

    def __init__(self, data, *, persistent: bool = True):
        if isinstance(data, Tensor):
            data = data.detach()._data
        super().__init__(data)
        self.persistent = persistent
