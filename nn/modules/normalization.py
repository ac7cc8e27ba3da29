"""Normalization layers: ``BatchNorm1d``/``BatchNorm2d`` (running statistics), ``LayerNorm``, ``RMSNorm``,
``GroupNorm``, with PyTorch's parameters, buffers and defaults."""

from __future__ import annotations

import numbers

import autograd as ag
from tkernels.validation import OpValueError

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm", "GroupNorm"]


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._has_bias = affine and bias  # (bias=False: a learned scale without a shift, PyTorch 2.13's option)
        if affine:
            self.weight = Parameter(ag.ones(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(ag.zeros(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", ag.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ag.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", ag.tensor(0, dtype=ag.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        if input.dim() not in self._dims:
            raise OpValueError(f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in self._dims)} input (got "
                               f"{input.dim()}D input of shape {list(input.shape)})")
        factor = 0.0 if self.momentum is None else self.momentum
        count = self.training and self.track_running_stats and self.num_batches_tracked is not None
        if count and self.momentum is None:  # cumulative moving average
            factor = 1.0 / (float(self.num_batches_tracked) + 1.0)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        out = F.batch_norm(input, self.running_mean if use_stats else None,
                           self.running_var if use_stats else None, self.weight, self.bias, bn_training, factor,
                           self.eps)
        if count:  # after the op: a refused input leaves the module's state unchanged
            with ag.no_grad():
                self.num_batches_tracked.add_(1)
        return out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._has_bias}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ag.ones(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(ag.zeros(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ag.ones(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise OpValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self._has_bias = affine and bias
        if affine:
            self.weight = Parameter(ag.ones(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(ag.zeros(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self._has_bias}"


from .local_response_norm import LocalResponseNorm  # noqa: E402,F401  (PyTorch's path)
