"""``nn.functional``: the functional forms of the layers (PyTorch's names and arguments); thin wrappers
over the differentiable ops of ``autograd``."""

from __future__ import annotations

import autograd as ag

__all__ = ["linear", "relu", "relu_", "leaky_relu", "elu", "gelu", "silu", "mish", "tanh", "sigmoid", "softplus",
           "softmax", "log_softmax"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear(): input's last dimension ({input.shape[-1]}) must match weight's in_features "
                           f"({weight.shape[-1]}); input shape {list(input.shape)}, weight shape "
                           f"{list(weight.shape)}")
    out = ag.matmul(input, weight.mT)
    return out if bias is None else out + bias


def _maybe_inplace(fn, name, input, inplace, *args, **kwargs):
    if inplace:
        return getattr(input, name + "_")(*args, **kwargs) if hasattr(input, name + "_") else \
            input.copy_(fn(input, *args, **kwargs))
    return fn(input, *args, **kwargs)


def relu(input, inplace: bool = False):
    return _maybe_inplace(ag.relu, "relu", input, inplace)


def relu_(input):
    return input.relu_()


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    out = ag.leaky_relu(input, negative_slope=negative_slope)
    return input.copy_(out) if inplace else out


def elu(input, alpha: float = 1.0, inplace: bool = False):
    out = ag.elu(input, alpha=alpha)
    return input.copy_(out) if inplace else out


def gelu(input, approximate: str = "none"):
    return ag.gelu(input, approximate=approximate)


def silu(input, inplace: bool = False):
    out = ag.silu(input)
    return input.copy_(out) if inplace else out


def mish(input, inplace: bool = False):
    out = ag.mish(input)
    return input.copy_(out) if inplace else out


def tanh(input):
    return ag.tanh(input)


def sigmoid(input):
    return ag.sigmoid(input)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    return ag.softplus(input, beta=beta, threshold=threshold)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return ag.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return ag.log_softmax(input, dim, dtype=dtype)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction!r} is not a valid value for reduction ('none', 'mean' or 'sum')")


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(f"mse_loss: using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}); this will likely lead to incorrect results due to broadcasting",
                      stacklevel=2)
    return _reduce((input - target) ** 2, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    return ag.cross_entropy(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                            label_smoothing=label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    return ag.nll_loss(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return ag.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return ag.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return ag.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return ag.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return ag.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                         return_indices=return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return ag.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input, output_size):
    return ag.adaptive_avg_pool2d(input, output_size)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return ag.dropout(input, p, training, inplace)


__all__ += ["mse_loss", "cross_entropy", "nll_loss", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
            "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "dropout"]
