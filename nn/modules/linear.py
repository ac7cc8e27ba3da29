"""``Linear``, ``Identity``, ``Flatten``, ``Unflatten``."""

from __future__ import annotations

import math

import autograd as ag
from tkernels.validation import OpValueError

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Linear", "Identity", "Flatten", "Unflatten", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, like PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``, both initialized from
    U(-1/sqrt(in_features), 1/sqrt(in_features)) like PyTorch."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise OpValueError(f"Linear: in_features and out_features must be non-negative, got {in_features}, "
                               f"{out_features}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ag.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ag.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        p = self._parameters
        if self.__class__ is Linear and "weight" in p and "bias" in p:
            # self.weight is a failed attribute lookup then Module.__getattr__: 1.3 µs each (2-core CI machine);
            # a plain Linear's weight and bias live in _parameters (a subclass may define them otherwise)
            return F.linear(input, p["weight"], p["bias"])
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for the output projection of ``MultiheadAttention`` (a plain ``Linear`` here: there is
    no quantization to opt out of); scripts and checkpoints refer to it."""


from .bilinear import Bilinear  # noqa: E402,F401  (PyTorch's path: nn.modules.linear.Bilinear)
