"""Smaller pieces of ``torch.nn.functional``: the in-place ``elu_``/``leaky_relu_``, the ``*_with_indices`` pooling
forms, ``gumbel_softmax``, ``pdist`` and ``conv_tbc`` (composites of differentiable ops with cpu and cuda kernels)."""

from __future__ import annotations

import autograd as ag

__all__ = ["elu_", "leaky_relu_", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "gumbel_softmax", "pdist", "conv_tbc"]


def elu_(input, alpha: float = 1.0):
    from .functional import elu

    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    from .functional import leaky_relu

    return leaky_relu(input, negative_slope, inplace=True)


def _with_indices(name):
    def fn(input, *args, **kwargs):
        from . import functional

        kwargs["return_indices"] = True
        return getattr(functional, name)(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = f"{name}_with_indices"
    fn.__doc__ = f"``{name}(..., return_indices=True)``: ``(output, indices)``."
    return fn


max_pool1d_with_indices = _with_indices("max_pool1d")
max_pool2d_with_indices = _with_indices("max_pool2d")
max_pool3d_with_indices = _with_indices("max_pool3d")
adaptive_max_pool1d_with_indices = _with_indices("adaptive_max_pool1d")
adaptive_max_pool2d_with_indices = _with_indices("adaptive_max_pool2d")
adaptive_max_pool3d_with_indices = _with_indices("adaptive_max_pool3d")


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """PyTorch's: ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise ``g = -log(E)``, E ~ Exponential(1);
    ``hard``: the one-hot of the argmax in the forward, the soft sample's gradient (straight-through)."""
    u = ag.rand(*logits.shape, dtype=logits.dtype, device=logits.device).clamp_min(1e-30)
    gumbels = -(-u.log()).log()
    y = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = ag.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


def pdist(input, p: float = 2):
    """The ``p``-norm distances between the rows of ``input`` (N, M), pairs i < j in row-major order (N(N-1)/2,)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    i, j = ag.triu_indices(n, n, 1, device=input.device)
    return (input[i] - input[j]).norm(p, dim=1)


def conv_tbc(input, weight, bias, pad: int = 0):
    """PyTorch's time-batch-channel convolution: ``input`` (T, B, C_in), ``weight`` (K, C_in, C_out), ``bias``
    (C_out,), ``pad`` zeros at both ends of T; out (T + 2 pad - K + 1, B, C_out)."""
    from .functional import conv1d

    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise RuntimeError(f"conv_tbc: expected input (T, B, C_in), weight (K, C_in, C_out) and bias (C_out,), got "
                           f"{list(input.shape)}, {list(weight.shape)} and {list(bias.shape)}")
    if weight.shape[1] != input.shape[2] or bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"conv_tbc: weight {list(weight.shape)} does not fit input {list(input.shape)} and bias "
                           f"{list(bias.shape)} (weight is (K, C_in, C_out))")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return out.permute(2, 0, 1)
