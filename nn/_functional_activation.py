"""``nn.functional`` activations beyond the fused ones: composites of differentiable autograd ops (on cuda they
run through the existing Triton elementwise kernels), with PyTorch's formulas and its gradients at the kinks."""

from __future__ import annotations

import autograd as ag
from tkernels.validation import OpValueError, names_op

from .functional import _into, leaky_relu, softmax

__all__ = ["prelu", "rrelu", "rrelu_", "selu", "selu_", "celu", "celu_", "glu", "hardtanh", "hardtanh_", "relu6",
           "hardswish", "hardsigmoid", "logsigmoid", "softsign", "softmin", "tanhshrink", "threshold", "threshold_",
           "hardshrink", "softshrink"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _apply(fn, input, inplace, *args):
    return _into(input, fn, *args) if inplace else fn(input, *args)


@names_op("prelu")
def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``; ``weight`` has 1 or C (= ``input.shape[1]``) elements."""
    n = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or n not in (1, channels):
        raise RuntimeError(f"prelu: weight of shape {list(weight.shape)} does not fit input of shape "
                           f"{list(input.shape)}; hint: weight has 1 element or input.shape[1] = {channels}")
    w = weight.reshape((n,) + (1,) * (input.ndim - 2)) if n > 1 else weight.reshape(())
    return ag.where(input > 0, input, w * input)  # slope w at 0, as PyTorch


def _rrelu(input, lower, upper, training):
    if not 0.0 <= lower <= upper:
        raise OpValueError(f"rrelu: expected 0 <= lower <= upper, got lower={lower}, upper={upper}")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    # one slope per element drawn from U(lower, upper), a constant of the graph (PyTorch's training form)
    slope = ag.rand(tuple(input.shape), dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return ag.where(input >= 0, input, input * slope)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Leaky ReLU with random slopes ``U(lower, upper)`` per element in training, ``(lower + upper) / 2`` else."""
    return _apply(_rrelu, input, inplace, lower, upper, training)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, True)


def _selu(x):
    return _SELU_SCALE * ag.elu(x, alpha=_SELU_ALPHA)


def selu(input, inplace: bool = False):
    """``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with PyTorch's constants."""
    return _apply(_selu, input, inplace)


def selu_(input):
    return selu(input, True)


def _celu(x, alpha):
    if alpha == 0:
        raise OpValueError("celu: alpha must not be 0 (the formula divides by it)")
    return alpha * ag.elu(x / alpha, alpha=1.0)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _apply(_celu, input, inplace, alpha)


def celu_(input, alpha: float = 1.0):
    return celu(input, alpha, True)


def glu(input, dim: int = -1):
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu: does not support scalars (0-d input); hint: give at least a 1-d tensor")
    d = dim % input.ndim if -input.ndim <= dim < input.ndim else None
    if d is None:
        raise IndexError(f"glu: dim {dim} is out of range for an input of shape {list(input.shape)}")
    if input.shape[d] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size {input.shape[d]} "
                           f"(input of shape {list(input.shape)})")
    a, b = input.chunk(2, d)
    return a * ag.sigmoid(b)


def _hardtanh(x, min_val, max_val):
    if min_val > max_val:
        raise OpValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    # clamp, with PyTorch's gradient: 1 strictly inside (min_val, max_val), 0 on the bounds too
    return ag.where(x <= min_val, min_val, ag.where(x >= max_val, max_val, x))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """``clamp(x, min_val, max_val)``."""
    return _apply(_hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace: bool = False):
    """``min(max(0, x), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _hardsigmoid(x):
    return ag.where(x <= -3.0, 0.0, ag.where(x >= 3.0, 1.0, x / 6.0 + 0.5))  # gradient 0 at +-3, as PyTorch


def hardsigmoid(input, inplace: bool = False):
    """``relu6(x + 3) / 6``."""
    return _apply(_hardsigmoid, input, inplace)


def _hardswish(x):
    return ag.where(x <= -3.0, 0.0, ag.where(x >= 3.0, x, x * (x + 3.0) / 6.0))  # gradient 0 at -3, 1 at 3


def hardswish(input, inplace: bool = False):
    """``x * relu6(x + 3) / 6``."""
    return _apply(_hardswish, input, inplace)


class _LogSigmoid(ag.Function):
    """``min(x, 0) - log1p(exp(-|x|))`` (no overflow for any x) with the smooth gradient ``sigmoid(-x)``: the
    kinks of min and abs cancel in value but not in their subgradients at 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp_max(0.0) - (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ag.sigmoid(-x)


def logsigmoid(input):
    """``log(sigmoid(x))``."""
    return _LogSigmoid.apply(input)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1.0)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``softmax(-x, dim)``."""
    return softmax(-input, dim, dtype=dtype)


def softmax2d(input):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` (dim -3)."""
    if input.ndim not in (3, 4):
        raise OpValueError(f"Softmax2d: expected a 3D or 4D input (C, H, W) or (N, C, H, W), got shape "
                           f"{list(input.shape)}")
    return softmax(input, -3)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - ag.tanh(input)


def _threshold(x, threshold, value):
    return ag.where(x > threshold, x, value)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """``x if x > threshold else value``."""
    return _apply(_threshold, input, inplace, threshold, value)


def threshold_(input, threshold: float, value: float):
    return _apply(_threshold, input, True, threshold, value)


def hardshrink(input, lambd: float = 0.5):
    """``x if |x| > lambd else 0``."""
    return ag.where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd: float = 0.5):
    """``x - lambd if x > lambd, x + lambd if x < -lambd, else 0``."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}")
    return ag.where(input > lambd, input - lambd, ag.where(input < -lambd, input + lambd, 0.0))
