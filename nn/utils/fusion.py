"""Folding an eval-mode batch norm into the convolution or linear layer before it (PyTorch's
``nn.utils.fuse_conv_bn_eval`` / ``fuse_linear_bn_eval`` and their ``*_weights`` forms): one layer computing
``bn(layer(x))`` with the norm's running statistics, for inference."""

from __future__ import annotations

import copy

import autograd as ag

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _scale(bn_rm, bn_rv, bn_eps, bn_w, bn_b, dtype):
    w = ag.ones_like(bn_rm) if bn_w is None else bn_w
    b = ag.zeros_like(bn_rm) if bn_b is None else bn_b
    return (w * (bn_rv + bn_eps).rsqrt()).to(dtype), w, b


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The (weight, bias) Parameters of the convolution followed by the batch norm (running statistics)."""
    with ag.no_grad():
        scale, _, b = _scale(bn_rm, bn_rv, bn_eps, bn_w, bn_b, conv_w.dtype)
        conv_b = ag.zeros_like(bn_rm) if conv_b is None else conv_b
        shape = [1] * conv_w.dim()
        shape[1 if transpose else 0] = -1
        fused_w = conv_w * scale.reshape(shape)
        fused_b = ((conv_b - bn_rm) * scale + b).to(conv_w.dtype)
    return (Parameter(fused_w, requires_grad=conv_w.requires_grad),
            Parameter(fused_b, requires_grad=conv_b.requires_grad))


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` (in eval mode, as ``bn``) with ``bn`` folded in."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval: the batch norm has no running statistics")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The (weight, bias) Parameters of the linear layer followed by the batch norm (running statistics)."""
    with ag.no_grad():
        scale, _, b = _scale(bn_rm, bn_rv, bn_eps, bn_w, bn_b, linear_w.dtype)
        linear_b = ag.zeros_like(bn_rm) if linear_b is None else linear_b
        fused_w = linear_w * scale.unsqueeze(-1)
        fused_b = ((linear_b - bn_rm) * scale + b).to(linear_w.dtype)
    return (Parameter(fused_w, requires_grad=linear_w.requires_grad),
            Parameter(fused_b, requires_grad=linear_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (in eval mode, as ``bn``) with ``bn`` folded in."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
