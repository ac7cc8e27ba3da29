"""``nn.functional`` losses beyond the fused ones (margin, multi-label, triplet, Poisson and Gaussian NLL):
composites of differentiable autograd ops, with PyTorch's documented formulas and reductions."""

from __future__ import annotations

import math

import autograd as ag
from autograd import amp
from tkernels.validation import OpTypeError, OpValueError, names_op

from .functional import _reduce, _reduction

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multilabel_margin_loss", "multi_margin_loss", "pairwise_distance", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss"]


def _softplus(z):
    """``log(1 + exp(z))`` without overflow: ``max(z, 0) + log1p(exp(-|z|))``."""
    return z.clamp_min(0.0) + (-z.abs()).exp().log1p()


def _same_shape(op, **tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise OpValueError(f"{op}: expected inputs of the same shape, got "
                           + ", ".join(f"{k} of shape {list(s)}" for k, s in shapes.items()))


@names_op("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss: All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
                           f"target: {list(target.shape)}")
    input1, input2 = amp.fp32(input1, input2)
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


@names_op("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (PyTorch adds both terms for
    other target values)."""
    reduction = _reduction(size_average, reduce, reduction)
    (input,) = amp.fp32(input)
    margin_part = ag.where(target != 1, (margin - input).clamp_min(0.0), 0.0)
    self_part = ag.where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)


@names_op("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction(size_average, reduce, reduction)
    _same_shape("soft_margin_loss", input=input, target=target)
    input, target = amp.fp32(input, target)
    return _reduce(_softplus(-target * input), reduction)


def _class_dim_check(op, input, target):
    if input.ndim not in (1, 2):
        raise OpValueError(f"{op}: expected an input of shape (C) or (N, C), got {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise OpValueError(f"{op}: target of shape {list(target.shape)} must have the input's shape "
                           f"{list(input.shape)}")


@names_op("multilabel_soft_margin_loss")
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean"):
    """``-mean_c(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` per sample, ``weight`` (C,) per class."""
    reduction = _reduction(size_average, reduce, reduction)
    _class_dim_check("multilabel_soft_margin_loss", input, target)
    input, target = amp.fp32(input, target)
    # log sigmoid(x) = -softplus(-x), log sigmoid(-x) = -softplus(x)
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    c = input.shape[-1]
    return _reduce(loss.sum(-1) / c, reduction)


@names_op("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``sum_{j in y} sum_{i not in y} max(0, 1 - (x[j] - x[i])) / C``; ``target`` holds the class indices of
    ``y``, ended by the first -1."""
    reduction = _reduction(size_average, reduce, reduction)
    _class_dim_check("multilabel_margin_loss", input, target)
    if target.dtype.kind == "f":
        raise OpTypeError(f"multilabel_margin_loss: target must hold class indices (an integer dtype), got "
                          f"{target.dtype}")
    (input,) = amp.fp32(input)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    y = target if target.ndim == 2 else target.unsqueeze(0)
    c = x.shape[1]
    if x.shape[0] and c and bool(((y < -1) | (y >= c)).any()):
        raise RuntimeError(f"multilabel_margin_loss: target values must lie in [-1, {c - 1}] (input of shape "
                           f"{list(input.shape)})")
    # dense (N, C, C) pairs: fine for the class counts this loss is used with (memory N * C^2)
    valid = ag.cumsum(y < 0, 1) == 0  # before the first -1
    hot = ag.one_hot(y.clamp_min(0), c) * valid.unsqueeze(-1)  # (N, K, C)
    count = hot.sum(1).to(x.dtype)  # times class j is listed (PyTorch counts repeats)
    is_target = (count > 0).to(x.dtype)
    hinge = (1.0 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0.0)  # [n, j, i]
    loss = (hinge * count.unsqueeze(2) * (1.0 - is_target).unsqueeze(1)).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.squeeze(0), reduction)


@names_op("multi_margin_loss")
def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                      reduce=None, reduction: str = "mean"):
    """``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`` per sample (p is 1 or 2)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise OpValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got p={p}")
    if input.ndim not in (1, 2):
        raise OpValueError(f"multi_margin_loss: expected an input of shape (C) or (N, C), got {list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    y = target.reshape(-1)
    if y.shape[0] != x.shape[0]:
        raise OpValueError(f"multi_margin_loss: inconsistent target size {list(target.shape)} for input of shape "
                           f"{list(input.shape)}")
    (x,) = amp.fp32(x)
    c = x.shape[1]
    xy = x.gather(1, y.unsqueeze(1))
    z = (margin - xy + x).clamp_min(0.0)
    if p == 2:
        z = z * z
    z = z * (1 - ag.one_hot(y, c).to(x.dtype))
    if weight is not None:
        if weight.ndim != 1 or weight.shape[0] != c:
            raise OpValueError(f"multi_margin_loss: weight of shape {list(weight.shape)} must be ({c},) for input of "
                               f"shape {list(input.shape)}")
        z = z * weight[y].unsqueeze(1)
    loss = z.sum(1) / c
    return _reduce(loss if input.ndim == 2 else loss.squeeze(0), reduction)


@names_op("pairwise_distance")
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``||x1 - x2 + eps||_p`` over the last dimension (broadcasting)."""
    return ((x1 - x2) + eps).norm(p, -1, keepdim=keepdim)


def _triplet(op, anchor, positive, negative, dist, margin, swap, reduction):
    nd = {anchor.ndim, positive.ndim, negative.ndim}
    if len(nd) > 1:
        raise RuntimeError(f"{op}: The anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {list(anchor.shape)}, positive {list(positive.shape)}, "
                           f"negative {list(negative.shape)}")
    if margin <= 0:
        raise OpValueError(f"{op}: margin must be greater than 0, got {margin}")
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ag.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0.0), reduction)


@names_op("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-norm distance."""
    reduction = _reduction(size_average, reduce, reduction)
    anchor, positive, negative = amp.fp32(anchor, positive, negative)
    return _triplet("triplet_margin_loss", anchor, positive, negative,
                    lambda a, b: pairwise_distance(a, b, p, eps), margin, swap, reduction)


@names_op("triplet_margin_with_distance_loss")
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """The triplet loss with any ``distance_function(x1, x2)`` (default: ``pairwise_distance``)."""
    dist = distance_function if distance_function is not None else pairwise_distance
    return _triplet("triplet_margin_with_distance_loss", anchor, positive, negative, dist, margin, swap, reduction)


@names_op("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """``exp(x) - t x`` (log_input) or ``x - t log(x + eps)``; ``full`` adds Stirling's ``t log t - t +
    0.5 log(2 pi t)`` where ``t > 1``."""
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise OpValueError(f"poisson_nll_loss: {reduction!r} is not a valid value for reduction")
    input, target = amp.fp32(input, target)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = ag.where(target > 1, target, 1.0)  # the term is 0 for t <= 1: keep log's argument >= 1 there
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + ag.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


@names_op("gaussian_nll_loss")
def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """``0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log(2 pi)`` if full); ``var``
    has the input's shape, or one dimension less, or a 1 in one dimension, or is a float."""
    if isinstance(var, int | float):
        if var < 0:
            raise OpValueError("gaussian_nll_loss: var has negative entry/entries")
        var = ag.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif var.numel() and bool((var < 0).any()):
        raise OpValueError("gaussian_nll_loss: var has negative entry/entries")
    ish, vsh = tuple(input.shape), tuple(var.shape)
    if vsh != ish:
        if ish[:-1] == vsh:
            var = var.unsqueeze(-1)
        elif not (len(ish) == len(vsh) and [v for i, v in zip(ish, vsh) if i != v] == [1]):
            raise OpValueError(f"gaussian_nll_loss: var is of incorrect size {list(vsh)} for input of shape "
                               f"{list(ish)}; hint: var has the input's shape, one dimension less, or a 1 in "
                               f"one dimension")
    if reduction not in ("none", "mean", "sum"):
        raise OpValueError(f"gaussian_nll_loss: {reduction!r} is not valid")
    input, target, var = amp.fp32(input, target, var)
    var = var + (var.clamp_min(eps) - var).detach()  # clamped in value, the gradient passes as if unclamped
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
