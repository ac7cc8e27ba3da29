"""``InstanceNorm{1,2,3}d``: each sample's each channel normalised over its spatial positions (PyTorch's
defaults: no affine parameters, no running statistics)."""

from __future__ import annotations

import warnings

import autograd as ag
from tkernels.validation import OpValueError

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(Module):
    dims = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._has_bias = affine and bias
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
            self.register_buffer("num_batches_tracked", ag.tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise OpValueError(f"{name}: expected {self.dims + 1}D (unbatched) or {self.dims + 2}D input, got "
                               f"{input.ndim}D input of shape {list(input.shape)}")
        channels = input.shape[-self.dims - 1]
        if channels != self.num_features:
            if self.affine:
                raise OpValueError(f"{name}: expected input's size at dim={input.ndim - self.dims - 1} to match "
                                   f"num_features ({self.num_features}), but got: {channels}.")
            warnings.warn(f"{name}: input's size at dim={input.ndim - self.dims - 1} does not match num_features. "
                          f"You can silence this warning by not passing in num_features, which is not used "
                          f"because affine=False", UserWarning, stacklevel=2)
        unbatched = input.ndim == self.dims + 1
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats  # (num_batches_tracked stays 0: PyTorch)
        # (momentum=None: the running statistics stay where they are, as PyTorch passes 0.0 then)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._has_bias}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Over ``(N, C, L)`` or ``(C, L)``."""

    dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Over ``(N, C, H, W)`` or ``(C, H, W)``."""

    dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    dims = 3
