"""Parameter initializations (``nn.init``), PyTorch's formulas; every function fills its tensor in place
without recording a graph and returns it."""

from __future__ import annotations

import math

import numpy as np

import autograd as ag
import tkernels as tk
import tkernels.random as _rnd
from tkernels.validation import OpValueError

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_",
           "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int | float):
            slope = param
        else:
            raise OpValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise OpValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    if tensor.dim() < 2:
        raise OpValueError(f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                           f"(shape {list(tensor.shape)})")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


_calculate_fan_in_and_fan_out = _fans


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise OpValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor, arr):
    with ag.no_grad():
        tk.copy_into(tensor._data, arr)
        tensor._version.v += 1
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    return _fill(tensor, tk.random.uniform(a, b, tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device,
                                           generator=generator))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    return _fill(tensor, tk.random.normal(mean, std, tuple(tensor.shape), dtype=tensor.dtype,
                                          device=tensor.device, generator=generator))


def constant_(tensor, val: float):
    return _fill(tensor, val)


def zeros_(tensor):
    return _fill(tensor, 0)


def ones_(tensor):
    return _fill(tensor, 1)


def eye_(tensor):
    if tensor.dim() != 2:
        raise OpValueError(f"Only tensors with 2 dimensions are supported (got shape {list(tensor.shape)})")
    return _fill(tensor, tk.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups: int = 1):
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise OpValueError(f"Only tensors with 3, 4, or 5 dimensions are supported (got shape {list(tensor.shape)})")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise OpValueError("dim 0 must be divisible by groups")
    out_per = shape[0] // groups
    nd = np.zeros(shape, dtype=np.float64)
    for g in range(groups):
        for i in range(min(out_per, shape[1])):
            nd[(g * out_per + i, i) + tuple(s // 2 for s in shape[2:])] = 1
    return _fill(tensor, tk.asarray(nd, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """N(mean, std²) truncated to [a, b], by inverting the normal CDF on a uniform sample."""
    from scipy.special import erfinv

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = _rnd._gen(generator)._np.uniform(2 * lo - 1, 2 * hi - 1, size=tuple(tensor.shape))
    x = np.clip(erfinv(u) * std * math.sqrt(2.0) + mean, a, b)
    return _fill(tensor, tk.asarray(x, dtype=tensor.dtype, device=tensor.device))


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample (sign-corrected), times gain."""
    if tensor.dim() < 2:
        raise OpValueError(f"Only tensors with 2 or more dimensions are supported (got shape {list(tensor.shape)})")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rnd._gen(generator)._np.standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, tk.asarray((gain * q).reshape(tuple(tensor.shape)), dtype=tensor.dtype,
                                    device=tensor.device))


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    if tensor.dim() != 2:
        raise OpValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    rng = _rnd._gen(generator)._np
    x = rng.normal(0.0, std, size=(rows, cols))
    nz = int(math.ceil(sparsity * rows))
    for c in range(cols):
        x[rng.permutation(rows)[:nz], c] = 0
    return _fill(tensor, tk.asarray(x, dtype=tensor.dtype, device=tensor.device))
