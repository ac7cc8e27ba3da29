"""Pooling and resizing with PyTorch's argument names and semantics, each with its backward entry.

Public entries (``x`` is (N, C, H, W) or, for the pools, unbatched (C, H, W); floating dtypes, half dtypes
computing in float32)::

    max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *, return_indices=False)
        -> out, or (out, indices): int64 flat indices into the H * W plane of the input, as PyTorch
    max_pool2d_backward(grad, input_shape, indices, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False) -> dx (grad scatter-added to indices)
    avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None) -> out
    avg_pool2d_backward(grad, input_shape, kernel_size, stride=None, padding=0, ceil_mode=False,
                        count_include_pad=True, divisor_override=None) -> dx
    adaptive_avg_pool2d(x, output_size) -> out      # output_size: int or pair, None keeps that input size
    adaptive_avg_pool2d_backward(grad, input_shape) -> dx
    interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None) -> out           # 4-D x only
    interpolate_backward(grad, input_shape, size=None, scale_factor=None, mode="nearest", align_corners=None,
                         recompute_scale_factor=None) -> dx

``stride`` defaults to ``kernel_size``; ``padding`` must be at most half the kernel (PyTorch's rule); output
sizes follow PyTorch's ``pooling_output_shape`` (with ``ceil_mode`` the last window must start inside the
input or its left padding). Adaptive windows are ``[floor(i * H / Ho), ceil((i + 1) * H / Ho))``.
``interpolate`` modes: ``"nearest"`` (PyTorch's legacy nearest: ``src = min(floor(dst * scale), in - 1)``),
``"nearest-exact"``, ``"bilinear"`` (``align_corners`` False by default) and ``"area"`` (adaptive average
pooling). As in PyTorch, a given ``scale_factor`` is used in the coordinate mapping (``scale = 1 /
scale_factor``) unless ``recompute_scale_factor`` is True; otherwise ``scale = in / out``.

Backend ops (4-D arrays, normalized pairs; the output shape carries ceil_mode and the sizes)::

    max_pool2d(out, indices, x, kernel_size, stride, padding, dilation)     # indices may be None
    max_pool2d_backward(dx, grad, indices, kernel_size, stride, padding, dilation)
    avg_pool2d(out, x, kernel_size, stride, padding, count_include_pad, divisor_override)
    avg_pool2d_backward(dx, grad, kernel_size, stride, padding, count_include_pad, divisor_override)
    adaptive_avg_pool2d(out, x)
    adaptive_avg_pool2d_backward(dx, grad)
    interpolate(out, x, mode, align_corners, scales)          # scales: (sh, sw) scale factors or None each
    interpolate_backward(dx, grad, mode, align_corners, scales)
"""

from __future__ import annotations

import math
import operator

from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, check_device, describe
from .conv import _empty, _float, _ints

__all__ = ["max_pool2d", "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d",
           "adaptive_avg_pool2d_backward", "interpolate", "interpolate_backward"]

_MODES = ("nearest", "nearest-exact", "bilinear", "area")


def _as4(op: str, x: Array) -> tuple[Array, bool]:
    if x.ndim not in (3, 4):
        raise OpValueError(f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got {describe(x)}")
    return (x.expand_dims(0), True) if x.ndim == 3 else (x, False)


def _input_shape(op: str, input_shape) -> tuple[tuple[int, ...], tuple[int, int, int, int]]:
    try:
        shape = tuple(operator.index(s) for s in input_shape)
    except TypeError:
        raise OpTypeError(f"{op}: input_shape must be a sequence of ints, got {input_shape!r}") from None
    if len(shape) not in (3, 4) or any(s < 0 for s in shape):
        raise OpValueError(f"{op}: input_shape must be (C, H, W) or (N, C, H, W), got {input_shape!r}")
    return shape, ((1,) + shape if len(shape) == 3 else shape)


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape."""
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _pool_geom(op, shape4, kernel_size, stride, padding, dilation, ceil_mode, x_desc):
    k = _ints(op, "kernel_size", kernel_size, 2, 1)
    s = k if stride is None or (isinstance(stride, list | tuple) and len(stride) == 0) else _ints(
        op, "stride", stride, 2, 1)
    p = _ints(op, "padding", padding, 2, 0)
    d = _ints(op, "dilation", dilation, 2, 1)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise OpValueError(f"{op}: padding should be at most half of the kernel size, got padding={padding!r} and "
                           f"kernel_size={kernel_size!r} (PyTorch's rule)")
    n, c, h, w = shape4
    ho = _pool_out(h, k[0], s[0], p[0], d[0], bool(ceil_mode))
    wo = _pool_out(w, k[1], s[1], p[1], d[1], bool(ceil_mode))
    if ho < 1 or wo < 1:
        raise OpValueError(f"{op}: the output size ({ho} x {wo}) is too small for input {x_desc} with "
                           f"kernel_size={kernel_size!r}, stride={stride!r}, padding={padding!r}, "
                           f"dilation={dilation!r}; hint: use a smaller kernel or more padding")
    return k, s, p, d, (n, c, ho, wo)


def _grad_check(op, grad, expected, what):
    _float(op, "grad", grad)
    if grad.shape != expected:
        raise OpValueError(f"{op}: grad {describe(grad)} does not match the output shape {expected} of {what}")


# -------------------------------------------------------------------------------------------------- max pool
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *, return_indices=False):
    """2-D max pooling (padding counts as -inf); with ``return_indices`` also the int64 flat index into the
    H * W input plane of each maximum (the first one in window order; NaN wins, as in PyTorch)."""
    op = "max_pool2d"
    x4, unbatched = _as4(op, _float(op, "x", x))
    k, s, p, d, out4 = _pool_geom(op, x4.shape, kernel_size, stride, padding, dilation, ceil_mode, describe(x))
    dev = x.device
    out = _empty(out4, x.dtype, dev)
    idx = _empty(out4, _dt.int64, dev) if return_indices else None
    lookup("max_pool2d", dev)(out, idx, x4, k, s, p, d)
    if unbatched:
        out = out.squeeze(0)
        idx = None if idx is None else idx.squeeze(0)
    return (out, idx) if return_indices else out


def max_pool2d_backward(grad, input_shape, indices, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False) -> Array:
    """Gradient of ``max_pool2d``: ``grad`` scatter-added to ``indices`` in an array of ``input_shape``."""
    op = "max_pool2d_backward"
    shape, shape4 = _input_shape(op, input_shape)
    k, s, p, d, out4 = _pool_geom(op, shape4, kernel_size, stride, padding, dilation, ceil_mode,
                                  f"of shape {shape}")
    expected = out4[1:] if len(shape) == 3 else out4
    _grad_check(op, grad, expected, f"max_pool2d on an input of shape {shape}")
    if not isinstance(indices, Array) or indices.dtype is not _dt.int64 or indices.shape != grad.shape:
        raise OpTypeError(f"{op}: indices must be an int64 Array of the shape of grad {grad.shape} (from "
                          f"max_pool2d(..., return_indices=True)), got {describe(indices)}")
    check_device(op, grad, indices)
    dx = _empty(shape4, grad.dtype, grad.device)
    g4, i4 = (grad.expand_dims(0), indices.expand_dims(0)) if len(shape) == 3 else (grad, indices)
    lookup("max_pool2d_backward", grad.device)(dx, g4, i4, k, s, p, d)
    return dx.squeeze(0) if len(shape) == 3 else dx


# -------------------------------------------------------------------------------------------------- avg pool
def _divisor(op, divisor_override):
    if divisor_override is None:
        return None
    try:
        v = operator.index(divisor_override)
    except TypeError:
        raise OpTypeError(f"{op}: divisor_override must be an int or None, got {divisor_override!r}") from None
    if v == 0:
        raise OpValueError(f"{op}: divisor_override must not be zero")
    return v


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None) -> Array:
    """2-D average pooling (PyTorch's divisor rules: the window clipped to the padded input, or to the input
    when ``count_include_pad`` is False, or ``divisor_override``)."""
    op = "avg_pool2d"
    x4, unbatched = _as4(op, _float(op, "x", x))
    k, s, p, _, out4 = _pool_geom(op, x4.shape, kernel_size, stride, padding, 1, ceil_mode, describe(x))
    div = _divisor(op, divisor_override)
    out = _empty(out4, x.dtype, x.device)
    lookup("avg_pool2d", x.device)(out, x4, k, s, p, bool(count_include_pad), div)
    return out.squeeze(0) if unbatched else out


def avg_pool2d_backward(grad, input_shape, kernel_size, stride=None, padding=0, ceil_mode=False,
                        count_include_pad=True, divisor_override=None) -> Array:
    """Gradient of ``avg_pool2d`` for an input of ``input_shape``."""
    op = "avg_pool2d_backward"
    shape, shape4 = _input_shape(op, input_shape)
    k, s, p, _, out4 = _pool_geom(op, shape4, kernel_size, stride, padding, 1, ceil_mode, f"of shape {shape}")
    _grad_check(op, grad, out4[1:] if len(shape) == 3 else out4, f"avg_pool2d on an input of shape {shape}")
    div = _divisor(op, divisor_override)
    dx = _empty(shape4, grad.dtype, grad.device)
    lookup("avg_pool2d_backward", grad.device)(dx, grad.expand_dims(0) if len(shape) == 3 else grad, k, s, p,
                                               bool(count_include_pad), div)
    return dx.squeeze(0) if len(shape) == 3 else dx


# ---------------------------------------------------------------------------------------------- adaptive pool
def _adaptive_size(op, output_size, h, w):
    sizes = output_size if isinstance(output_size, list | tuple) else (output_size, output_size)
    if len(sizes) != 2:
        raise OpValueError(f"{op}: output_size must be an int or a pair (entries may be None), got {output_size!r}")
    out = []
    for v, full in zip(sizes, (h, w)):
        if v is None:
            out.append(full)
            continue
        try:
            v = operator.index(v)
        except TypeError:
            raise OpTypeError(f"{op}: output_size must hold ints or None, got {output_size!r}") from None
        if v < 0:
            raise OpValueError(f"{op}: output_size must be non-negative, got {output_size!r}")
        out.append(v)
    return tuple(out)


def adaptive_avg_pool2d(x, output_size) -> Array:
    """Average pooling to ``output_size`` (int or pair; None keeps the input size) with PyTorch's windows."""
    op = "adaptive_avg_pool2d"
    x4, unbatched = _as4(op, _float(op, "x", x))
    n, c, h, w = x4.shape
    if h == 0 or w == 0:
        raise OpValueError(f"{op}: expected an input with non-zero height and width, got {describe(x)}")
    out = _empty((n, c) + _adaptive_size(op, output_size, h, w), x.dtype, x.device)
    lookup("adaptive_avg_pool2d", x.device)(out, x4)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool2d_backward(grad, input_shape) -> Array:
    """Gradient of ``adaptive_avg_pool2d`` (the output size is ``grad``'s) for an input of ``input_shape``."""
    op = "adaptive_avg_pool2d_backward"
    shape, shape4 = _input_shape(op, input_shape)
    _float(op, "grad", grad)
    if grad.ndim != len(shape) or grad.shape[:-2] != shape[:-2] or 0 in shape[-2:]:
        raise OpValueError(f"{op}: grad {describe(grad)} does not match an adaptive pooling of an input of shape "
                           f"{shape} (batch and channel sizes must agree)")
    dx = _empty(shape4, grad.dtype, grad.device)
    lookup("adaptive_avg_pool2d_backward", grad.device)(dx, grad.expand_dims(0) if len(shape) == 3 else grad)
    return dx.squeeze(0) if len(shape) == 3 else dx


# ---------------------------------------------------------------------------------------------- interpolate
def _resize_args(op, in_hw, size, scale_factor, mode, align_corners, recompute_scale_factor):
    if mode not in _MODES:
        raise OpValueError(f"{op}: mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    if align_corners is not None and mode != "bilinear":
        raise OpValueError(f"{op}: align_corners can only be set with the interpolating mode 'bilinear', got "
                           f"mode={mode!r}, align_corners={align_corners!r}")
    if (size is None) == (scale_factor is None):
        raise OpValueError(f"{op}: exactly one of size and scale_factor must be given, got size={size!r} and "
                           f"scale_factor={scale_factor!r}")
    if size is not None:
        out = _ints(op, "size", size, 2, 1)
        scales = (None, None)
    else:
        sf = scale_factor if isinstance(scale_factor, list | tuple) else (scale_factor, scale_factor)
        try:
            sf = tuple(float(v) for v in sf)
        except (TypeError, ValueError):
            raise OpTypeError(f"{op}: scale_factor must be a number or a pair of numbers, got {scale_factor!r}") \
                from None
        if len(sf) != 2 or not all(v > 0 and math.isfinite(v) for v in sf):
            raise OpValueError(f"{op}: scale_factor must be a positive number or a pair of them, got "
                               f"{scale_factor!r}")
        out = tuple(math.floor(n * f) for n, f in zip(in_hw, sf))
        if min(out) < 1:
            raise OpValueError(f"{op}: scale_factor={scale_factor!r} gives the output size {out} for the input size "
                               f"{tuple(in_hw)}; input and output sizes must be positive")
        scales = (None, None) if recompute_scale_factor else sf
    if mode == "area" or (mode == "bilinear" and align_corners):
        scales = (None, None)  # these modes do not read the scale factors
    return out, scales, bool(align_corners)


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
    """Resize the spatial dims of (N, C, H, W) ``x`` to ``size`` or ``floor(H * scale_factor)``; PyTorch's
    ``interpolate`` for modes nearest, nearest-exact, bilinear and area."""
    op = "interpolate"
    _float(op, "x", x)
    if x.ndim != 4:
        raise OpValueError(f"{op}: expected a 4-D (N, C, H, W) input, got {describe(x)}; hint: add the batch "
                           f"dimension with expand_dims(0)")
    if 0 in x.shape[2:]:
        raise OpValueError(f"{op}: input and output sizes must be positive, got {describe(x)}")
    out_hw, scales, ac = _resize_args(op, x.shape[2:], size, scale_factor, mode, align_corners,
                                      recompute_scale_factor)
    out = _empty(x.shape[:2] + out_hw, x.dtype, x.device)
    lookup("interpolate", x.device)(out, x, mode, ac, scales)
    return out


def interpolate_backward(grad, input_shape, size=None, scale_factor=None, mode="nearest", align_corners=None,
                         recompute_scale_factor=None) -> Array:
    """Gradient of ``interpolate`` (same resize arguments) for an input of ``input_shape``."""
    op = "interpolate_backward"
    shape, _ = _input_shape(op, input_shape)
    if len(shape) != 4 or 0 in shape[2:]:
        raise OpValueError(f"{op}: input_shape must be (N, C, H, W) with positive H and W, got {input_shape!r}")
    out_hw, scales, ac = _resize_args(op, shape[2:], size, scale_factor, mode, align_corners,
                                      recompute_scale_factor)
    _grad_check(op, grad, shape[:2] + out_hw, f"interpolate of an input of shape {shape}")
    dx = _empty(shape, grad.dtype, grad.device)
    lookup("interpolate_backward", grad.device)(dx, grad, mode, ac, scales)
    return dx
