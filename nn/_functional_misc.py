"""``nn.functional`` layers beyond the fused ones: bilinear, embedding_bag, alpha dropout, channel_shuffle,
unfold/fold (im2col/col2im), local_response_norm; composites of differentiable autograd ops."""

from __future__ import annotations

import warnings

import numpy as np

import autograd as ag
from autograd import amp
from tkernels.validation import OpTypeError, OpValueError, names_op

from .functional import _into, interpolate

__all__ = ["bilinear", "embedding_bag", "alpha_dropout", "feature_alpha_dropout", "channel_shuffle",
           "native_channel_shuffle", "unfold", "fold", "local_response_norm", "upsample", "upsample_nearest",
           "upsample_bilinear"]


@names_op("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = x1 @ weight[o] @ x2 + bias[o]``; weight (out, in1, in2), inputs (*, in1) and (*, in2)."""
    if weight.ndim != 3 or input1.ndim == 0 or input2.ndim == 0 or input1.shape[-1] != weight.shape[1] \
            or input2.shape[-1] != weight.shape[2] or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear: input1 {list(input1.shape)}, input2 {list(input2.shape)} and weight "
                           f"{list(weight.shape)} do not fit; hint: input1 (*, in1), input2 (*, in2), weight "
                           f"(out, in1, in2)")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"bilinear: bias of shape {list(bias.shape)} must be ({weight.shape[0]},)")
    input1, input2, weight, bias = amp.lower(input1, input2, weight, bias)
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    o, i1, i2 = weight.shape
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then the dot with x2: two GEMM-shaped steps
    t = (x1 @ weight.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, o)


def _bag_ids(op, input, offsets, include_last_offset):
    """Flat indices (M,), the bag of each (M,) and the number of bags, for the 2-D and the 1-D + offsets forms."""
    dev = input.device
    if input.ndim == 2:
        if offsets is not None:
            raise OpValueError(f"{op}: if input is 2D, then offsets has to be None (input of shape "
                               f"{list(input.shape)})")
        b, length = input.shape
        return input.reshape(-1), ag.arange(b, device=dev).repeat_interleave(length), b
    if input.ndim != 1:
        raise OpValueError(f"{op}: input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise OpValueError(f"{op}: offsets has to be a 1D Tensor but got None (a 1-D input needs offsets)")
    if offsets.ndim != 1:
        raise OpValueError(f"{op}: offsets has to be a 1D Tensor, got shape {list(offsets.shape)}")
    nb = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    if nb < 0:
        raise OpValueError(f"{op}: include_last_offset needs at least one offset")
    m = input.shape[0]
    bag = ag.searchsorted(offsets.to(ag.int64), ag.arange(m, device=dev), right=True) - 1
    return input, bag, nb


@names_op("embedding_bag")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx=None):
    """Sums, means or maxes of bags of embeddings: ``input`` (B, L) holds B bags of L indices, or ``input`` (M,)
    with ``offsets`` (B,) the start of each bag; ``padding_idx`` entries are left out; empty bags give zeros."""
    op = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise OpValueError(f"{op}: mode has to be one of sum, mean or max, got {mode!r}")
    if weight.ndim != 2:
        raise OpValueError(f"{op}: weight has to be a 2D Tensor, got shape {list(weight.shape)}")
    if input.dtype.kind == "f":
        raise OpTypeError(f"{op}: input must hold indices (an integer dtype), got {input.dtype}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"{op}: per_sample_weights was not None. per_sample_weights is only supported "
                                      f"for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise OpValueError(f"{op}: per_sample_weights of shape {list(per_sample_weights.shape)} must have the "
                               f"input's shape {list(input.shape)}")
    num, dim = weight.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise OpValueError(f"{op}: padding_idx must be within the number of embeddings ({num}), got {padding_idx}")
        padding_idx = padding_idx % num
    flat, bag, nb = _bag_ids(op, input, offsets, include_last_offset)
    emb = ag.embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)  # (M, D)
    keep = (bag >= 0) & (bag < nb)
    if padding_idx is not None:
        keep = keep & (flat != padding_idx)
    bag = ag.where(keep, bag, 0)
    dt = emb.dtype
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.reshape(-1, 1).to(dt)
    zeros = ag.zeros(nb, dim, dtype=dt, device=weight.device)
    if mode == "max":
        src = ag.where(keep.unsqueeze(1), emb, float("-inf"))
        out = zeros.scatter_reduce(0, bag.unsqueeze(1).expand(-1, dim), src, "amax", include_self=False)
        counts = ag.zeros(nb, dtype=ag.int64, device=weight.device).index_add(0, bag, keep.to(ag.int64))
        return ag.where(counts.unsqueeze(1) > 0, out, 0.0)
    out = zeros.index_add(0, bag, emb * keep.unsqueeze(1).to(dt))
    if mode == "mean":
        counts = ag.zeros(nb, dtype=dt, device=weight.device).index_add(0, bag, keep.to(dt))
        out = out / counts.clamp_min(1.0).unsqueeze(1)
    return out


_ALPHA_PRIME = 1.7580993408473766  # SELU's scale * alpha: the value a dropped unit takes is -this


def _alpha_dropout(op, input, p, training, inplace, feature):
    if not 0.0 <= p <= 1.0:
        raise OpValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{list(input.shape)}")
    if p == 1.0:
        return _into(input, ag.mul, 0.0) if inplace else input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    keep = ag.bernoulli(ag.full(shape, 1.0 - p, dtype=input.dtype, device=input.device))
    # keep the SELU fixed point (mean 0, variance 1): y = a * (x * keep + alpha' * (keep - 1)) + a * alpha' * p
    a = 1.0 / float(np.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p)))
    mul = keep * a
    add = (keep - 1.0) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p

    def fn(x):
        return x * mul + add

    return _into(input, fn) if inplace else fn(input)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps a SELU network's mean and variance: dropped units take SELU's negative saturation,
    then an affine map restores mean 0 and variance 1."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels ``input[n, c]``."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


def channel_shuffle(input, groups: int):
    """``(N, C, *)``: channels ``g * (C / g) + k`` go to ``k * g + g`` (C split in ``groups``, transposed)."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle: expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s) (shape {list(input.shape)})")
    g = int(groups)
    if g <= 0:
        raise OpValueError(f"channel_shuffle: Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"channel_shuffle: Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    return input.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def _pair(op, name, v):
    t = tuple(v) if isinstance(v, tuple | list) else (v, v)
    if len(t) != 2 or not all(isinstance(i, int | np.integer) for i in t):
        raise OpValueError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")
    return tuple(int(i) for i in t)


def _fold_args(op, kernel_size, dilation, padding, stride):
    k, d, p, s = (_pair(op, nm, v) for nm, v in (("kernel_size", kernel_size), ("dilation", dilation),
                                                ("padding", padding), ("stride", stride)))
    if min(k) <= 0 or min(d) <= 0 or min(s) <= 0 or min(p) < 0:
        raise OpValueError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
                           f"kernel_size={k}, dilation={d}, padding={p}, stride={s}")
    return k, d, p, s


def _blocks(op, size, k, d, p, s):
    out = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if min(out) <= 0:
        raise RuntimeError(f"{op}: the spatial size {tuple(size)} with kernel_size={k}, dilation={d}, padding={p}, "
                           f"stride={s} gives no block (calculated shape of the array of sliding blocks: {out})")
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: ``(N, C, H, W)`` -> ``(N, C·kh·kw, L)``, each column one sliding block (L blocks, row-major)."""
    op = "unfold"
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{op}: Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D, "
                           f"shape {list(input.shape)})")
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    oh, ow = _blocks(op, (h, w), k, d, p, s)
    if p != (0, 0):
        x = ag.pad(x, (p[1], p[1], p[0], p[0]))
    # windows of the dilated extent, then every d-th tap: (N, C, oh, ow, kh, kw)
    eh, ew = d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1
    win = x.unfold(2, eh, s[0]).unfold(3, ew, s[1])[:, :, :oh, :ow, ::d[0], ::d[1]]
    cols = win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], oh * ow)
    return cols if input.ndim == 4 else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of ``unfold``: ``(N, C·kh·kw, L)`` -> ``(N, C, H, W)``, overlapping blocks summed."""
    op = "fold"
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D, shape {list(input.shape)})")
    size = _pair(op, "output_size", output_size)
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 3 else input.unsqueeze(0)
    n, ck, length = x.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(f"{op}: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size ({kk}), but got input.size(1)={ck} (input of shape {list(input.shape)})")
    oh, ow = _blocks(op, size, k, d, p, s)
    if oh * ow != length:
        raise RuntimeError(f"{op}: Given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, "
                           f"stride={s}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={length}")
    c = ck // kk
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    # the padded-image position of every (tap, block): a constant of the shapes, built once on the host
    ki, kj = np.meshgrid(np.arange(k[0]), np.arange(k[1]), indexing="ij")
    bi, bj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    rows = ki.reshape(-1, 1) * d[0] + bi.reshape(1, -1) * s[0]
    cols = kj.reshape(-1, 1) * d[1] + bj.reshape(1, -1) * s[1]
    idx = ag.tensor((rows * wp + cols).reshape(-1).astype(np.int64), device=x.device)  # (kk * L,)
    src = x.reshape(n * c, kk * length)
    img = ag.zeros(n * c, hp * wp, dtype=x.dtype, device=x.device).index_add(1, idx, src)
    img = img.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return img if input.ndim == 3 else img.squeeze(0)


@names_op("local_response_norm")
def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """``x / (k + alpha * mean_{size neighbouring channels}(x^2))^beta`` over ``(N, C, *)``; the window is
    zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after each channel."""
    if input.ndim < 3:
        raise OpValueError(f"local_response_norm: Expected 3D or higher dimensionality input (got {input.ndim} "
                           f"dimensions, shape {list(input.shape)})")
    if size <= 0:
        raise OpValueError(f"local_response_norm: size must be positive, got {size}")
    if input.numel() == 0:
        return input
    (x,) = amp.fp32(input)
    sq = x * x
    n, c, *rest = sq.shape
    before, after = size // 2, (size - 1) // 2
    parts = [sq]
    if before:
        parts.insert(0, ag.zeros(n, before, *rest, dtype=sq.dtype, device=sq.device))
    if after:
        parts.append(ag.zeros(n, after, *rest, dtype=sq.dtype, device=sq.device))
    padded = ag.cat(parts, 1) if len(parts) > 1 else sq
    div = padded.unfold(1, size, 1).mean(-1)  # (N, C, *rest)
    return (x / (div * alpha + k) ** beta).to(input.dtype)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """Deprecated alias of ``interpolate`` (PyTorch warns the same)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", UserWarning,
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """``UpsamplingNearest2d``'s functional form (deprecated for ``interpolate(mode="nearest")``)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``UpsamplingBilinear2d``'s functional form: bilinear with ``align_corners=True`` (deprecated for
    ``interpolate``)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
