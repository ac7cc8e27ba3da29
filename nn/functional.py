"""``nn.functional``: the functional forms of the layers (PyTorch's names and arguments); thin wrappers
over the differentiable ops of ``autograd``."""

from __future__ import annotations

import warnings

import autograd as ag
from autograd import amp
from tkernels.validation import OpValueError, names_op

__all__ = ["linear", "relu", "relu_", "leaky_relu", "elu", "gelu", "silu", "mish", "tanh", "sigmoid", "softplus",
           "softmax", "log_softmax"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (one fused op: the bias is the matmul's epilogue on cuda)."""
    return ag.linear(input, weight, bias)


def _maybe_inplace(fn, name, input, inplace, *args, **kwargs):
    if inplace:
        if hasattr(input, name + "_"):
            return getattr(input, name + "_")(*args, **kwargs)
        return _into(input, fn, *args, **kwargs)
    return fn(input, *args, **kwargs)


def _into(input, fn, *args, **kwargs):
    """``input.copy_(fn(input))``, for activations without an in-place kernel. When autograd records, ``fn`` is
    given a clone: its backward may need the input it saw, which the copy overwrites (``inplace=True`` then
    saves no memory, as it gives no speed: it keeps PyTorch's semantics, the input holds the result)."""
    src = input.clone() if input.requires_grad and ag.is_grad_enabled() else input
    return input.copy_(fn(src, *args, **kwargs))


def relu(input, inplace: bool = False):
    if not inplace:
        return ag.relu(input)
    return _maybe_inplace(ag.relu, "relu", input, inplace)


def relu_(input):
    return input.relu_()


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    if inplace:
        return _into(input, ag.leaky_relu, negative_slope=negative_slope)
    return ag.leaky_relu(input, negative_slope=negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _into(input, ag.elu, alpha=alpha) if inplace else ag.elu(input, alpha=alpha)


def gelu(input, approximate: str = "none"):
    return ag.gelu(input, approximate=approximate)


def silu(input, inplace: bool = False):
    return _into(input, ag.silu) if inplace else ag.silu(input)


def mish(input, inplace: bool = False):
    return _into(input, ag.mish) if inplace else ag.mish(input)


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
    (input,) = amp.fp32(input)
    return ag.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    (input,) = amp.fp32(input)
    return ag.log_softmax(input, dim, dtype=dtype)


def _legacy_reduction(size_average, reduce) -> str:
    """The ``reduction`` that PyTorch's deprecated ``size_average``/``reduce`` arguments stand for."""


    warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean'|'sum'|'none' "
                  "instead.", DeprecationWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduction(size_average, reduce, reduction):
    return reduction if size_average is None and reduce is None else _legacy_reduction(size_average, reduce)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise OpValueError(f"{reduction!r} is not a valid value for reduction ('none', 'mean' or 'sum')")


def _weighted(op, loss, weight, input, reduction):
    """PyTorch's elementwise ``weight`` of mse_loss/l1_loss (the input's shape): the weighted losses, their sum,
    or their sum over the weights' sum for "mean"."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size (weight {list(weight.shape)}, input "
                         f"{list(input.shape)})")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@names_op("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"mse_loss: using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}); this will likely lead to incorrect results due to broadcasting",
                      stacklevel=2)
    input, target = amp.fp32(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted("mse_loss", (input - target) ** 2, weight, input, reduction)
    return _reduce((input - target) ** 2, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    (input,) = amp.fp32(input)
    reduction = _reduction(size_average, reduce, reduction)
    return ag.cross_entropy(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                            label_smoothing=label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    (input,) = amp.fp32(input)
    return ag.nll_loss(input, target, weight=weight, ignore_index=ignore_index,
                       reduction=_reduction(size_average, reduce, reduction))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    input, weight, bias = amp.lower(input, weight, bias)
    return ag.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    input, weight, bias = amp.lower(input, weight, bias)
    return ag.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    input, weight, bias = amp.lower(input, weight, bias)
    return ag.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    input, weight, bias = amp.lower(input, weight, bias)
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


def _feature_dropout(op, input, p, training, inplace, batched):
    """Zero whole channels (``input[n, c]``) with probability ``p``, scaling the kept ones by ``1 / (1 - p)``.
    ``batched``: the rank of a batched input ``(N, C, *spatial)``; one less is an unbatched ``(C, *spatial)``."""
    if not 0.0 <= p <= 1.0:
        raise OpValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    nd = input.ndim
    if op == "dropout1d" and nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input of shape "
                           f"{list(input.shape)}; hint: dropout1d takes (N, C, L) or (C, L)")
    if op == "dropout2d" and nd == 3:
        warnings.warn("dropout2d: Received a 3D input and assuming that channel-wise 1D dropout behavior is desired: "
                      "the input is interpreted as shape (N, C, L), as PyTorch does; use dropout1d for that",
                      UserWarning, stacklevel=3)
        nd_batched = True
    elif nd in (batched, batched - 1):
        nd_batched = nd == batched
    else:
        warnings.warn(f"{op}: Received a {nd}D input (shape {list(input.shape)}), expected {batched - 1}D or "
                      f"{batched}D; treating it as (N, C, *)", UserWarning, stacklevel=3)
        nd_batched = True
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if nd < (2 if nd_batched else 1):
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} has no channel dimension")
    lead = 2 if nd_batched else 1
    mask_shape = tuple(input.shape[:lead]) + (1,) * (nd - lead)
    keep = ag.full(mask_shape, 1.0 - p, dtype=input.dtype, device=input.device)
    mask = ag.bernoulli(keep) / (1.0 - p) if p < 1.0 else ag.zeros(mask_shape, dtype=input.dtype,
                                                                  device=input.device)
    return _into(input, ag.mul, mask) if inplace else input * mask


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout on ``(N, C, L)`` or ``(C, L)``."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout on ``(N, C, H, W)`` or ``(C, H, W)`` (3D inputs: see the warning, PyTorch's rule)."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout on ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


__all__ += ["mse_loss", "cross_entropy", "nll_loss", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
            "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "dropout", "dropout1d", "dropout2d", "dropout3d"]


# ------------------------------------------------------------------------------ normalization, misc layers
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    (input,) = amp.fp32(input)
    return ag.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    (input,) = amp.fp32(input)
    return ag.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    (input,) = amp.fp32(input)
    return ag.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    (input,) = amp.fp32(input)
    return ag.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    return ag.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    return ag.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale=None, enable_gqa: bool = False):
    query, key, value = amp.lower(query, key, value)
    return ag.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                           enable_gqa=enable_gqa)


def pad(input, pad, mode: str = "constant", value=None):
    return ag.pad(input, pad, mode, value)


def one_hot(tensor, num_classes: int = -1):
    return ag.one_hot(tensor, num_classes)


@names_op("normalize")
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """``input / max(norm_p(input, dim), eps)``."""
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


@names_op("cosine_similarity")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    w12 = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return w12 / ((n1 * n2).clamp_min(eps * eps)).sqrt()


# ------------------------------------------------------------------------------------------------- losses
@names_op("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    input, target = amp.fp32(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted("l1_loss", (input - target).abs(), weight, input, reduction)
    return _reduce((input - target).abs(), reduction)


@names_op("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    reduction = _reduction(size_average, reduce, reduction)
    input, target = amp.fp32(input, target)
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(ag.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


@names_op("huber_loss")
def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    input, target = amp.fp32(input, target)
    d = (input - target).abs()
    loss = ag.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _clamped_log(x):
    return x.log().clamp_min(-100.0)


def _clamped_log1m(x):  # log(1 - x) as log1p(-x): 1 - 6.1e-5 is 1.0 in float16, log1p(-6.1e-5) is exact
    return (-x).log1p().clamp_min(-100.0)


class _BinaryCrossEntropy(ag.Function):
    """Pointwise ``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100, and PyTorch's gradient
    ``(x - t) / max(x (1 - x), 1e-12)``: finite at x = 0 and 1, where the chain rule through the clamp gives
    0 * inf = NaN."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        return -(target * _clamped_log(input) + (1 - target) * _clamped_log1m(input))

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        gx = g * (x - t) / (x * (1 - x)).clamp_min(1e-12) if ctx.needs_input_grad[0] else None
        gt = g * (_clamped_log1m(x) - _clamped_log(x)) if ctx.needs_input_grad[1] else None
        return gx, gt


@names_op("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    if tuple(input.shape) != tuple(target.shape):
        raise OpValueError(f"binary_cross_entropy(): using a target size ({list(target.shape)}) that is different "
                           f"to the input size ({list(input.shape)}) is deprecated. Please ensure they have the same "
                           f"size.")
    reduction = _reduction(size_average, reduce, reduction)
    input, target = amp.fp32(input, target)
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@names_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    """Numerically stable ``BCE(sigmoid(input), target)``; ``pos_weight`` weighs the positive term."""
    if tuple(input.shape) != tuple(target.shape):
        raise OpValueError(f"binary_cross_entropy_with_logits(): target size ({list(target.shape)}) must be the same "
                           f"as input size ({list(input.shape)})")
    reduction = _reduction(size_average, reduce, reduction)
    input, target = amp.fp32(input, target)
    log_sig_neg = ag.softplus(-input)  # -log(sigmoid(x)) = softplus(-x)
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@names_op("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """KL(target || exp(input)) pointwise; ``reduction="batchmean"`` divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    input, target = amp.fp32(input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = ag.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, reduction)


@names_op("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    reduction = _reduction(size_average, reduce, reduction)
    input1, input2 = amp.fp32(input1, input2)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / mag.sqrt()
    loss = ag.where(target == 1, 1 - cos, ag.where(target == -1, (cos - margin).clamp_min(0.0), 0.0 * cos))
    return _reduce(loss, reduction)


__all__ += ["layer_norm", "rms_norm", "group_norm", "batch_norm", "embedding", "interpolate",
            "scaled_dot_product_attention", "pad", "one_hot", "normalize", "cosine_similarity", "l1_loss",
            "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
            "cosine_embedding_loss"]


# ------------------------------------------------------------------------------ pixel shuffle, instance norm
def pixel_shuffle(input, upscale_factor: int):
    """``(*, C·r², H, W)`` -> ``(*, C, H·r, W·r)``."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s) (shape {list(input.shape)})")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor: int):
    """``(*, C, H·r, W·r)`` -> ``(*, C·r², H, W)``."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s) (shape {list(input.shape)})")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height ({h}) and width ({w}) to be divisible by "
                           f"downscale_factor ({r})")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each ``input[n, c]`` over its spatial positions (``(N, C, *spatial)``); with running statistics
    and ``use_input_stats``, they are updated with the batch's mean instance statistics (unbiased variance)."""
    if input.ndim < 3:
        raise OpValueError(f"instance_norm: expected an input of shape (N, C, *spatial) with at least one spatial "
                           f"dimension, got {list(input.shape)}")
    dims = tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    (x,) = amp.fp32(input)
    if use_input_stats:
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None and running_var is not None:
            n = 1
            for d in dims:
                n *= x.shape[d]
            with ag.no_grad():
                bm = mean.detach().reshape(x.shape[0], x.shape[1]).mean(0)
                bv = var.detach().reshape(x.shape[0], x.shape[1]).mean(0) * (n / max(n - 1, 1))
                running_mean.mul_(1 - momentum).add_(bm.to(running_mean.dtype) * momentum)
                running_var.mul_(1 - momentum).add_(bv.to(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise OpValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    y = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y.to(input.dtype)


__all__ += ["pixel_shuffle", "pixel_unshuffle", "instance_norm"]

from ._functional_conv3d import *  # noqa: E402,F403
from ._functional_conv3d import __all__ as _conv3d_all  # noqa: E402
from ._functional_pool import *  # noqa: E402,F403
from ._functional_pool import __all__ as _pool_all  # noqa: E402

__all__ += _conv3d_all + _pool_all

from . import _functional_activation, _functional_ctc, _functional_extra, _functional_loss, _functional_misc  # noqa: E402
from ._functional_activation import *  # noqa: E402,F401,F403
from ._functional_ctc import *  # noqa: E402,F401,F403
from ._functional_extra import *  # noqa: E402,F401,F403
from ._functional_loss import *  # noqa: E402,F401,F403
from ._functional_misc import *  # noqa: E402,F401,F403

__all__ += (_functional_activation.__all__ + _functional_ctc.__all__ + _functional_loss.__all__
            + _functional_misc.__all__ + _functional_extra.__all__)
