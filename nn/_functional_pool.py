"""1-d and 3-d pooling, adaptive max pooling, LP pooling and max unpooling, as composites over the 2-d pool kernels
and indexing ops (so they are differentiable and run on cuda through the existing Triton kernels).

1-d pools are the 2-d ones on a unit-height input. 3-d max/avg pooling is separable: pool H and W with the 2-d
kernel, then pool D with the 2-d kernel on a ``(N, C, Ho * Wo, D)`` view (PyTorch's 3-d divisor is the product of
the per-dim window sizes, and a box max is the max over depth of the plane maxima). Adaptive max pooling gathers
each dim's (variable) windows with ``index_select`` and reduces them with ``max``, one dim at a time."""

from __future__ import annotations

import math

import autograd as ag
from tkernels.validation import OpTypeError, OpValueError, names_op

from ._nd import batched, describe, ints

__all__ = ["max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_LAYOUT = {1: "L", 2: "H, W", 3: "D, H, W"}


def _float_input(op, input, nd):
    if not isinstance(input, ag.Tensor):
        raise OpTypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if not input.is_floating_point():
        raise OpTypeError(f"{op}: expected a floating-point input, got one {describe(input)}")
    return batched(op, input, nd, _LAYOUT[nd])


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape (with ceil_mode the last window must start inside the input or left pad)."""
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _geom(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """Normalized (k, s, p, d) ``nd``-tuples, validated against ``x``'s spatial sizes with ``op`` in the errors."""
    k = ints(op, "kernel_size", kernel_size, nd, 1)
    s = k if stride is None or (isinstance(stride, list | tuple) and not stride) else ints(op, "stride", stride, nd, 1)
    p = ints(op, "padding", padding, nd, 0)
    d = ints(op, "dilation", dilation, nd, 1)
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise OpValueError(f"{op}: pad should be at most half of effective kernel size, got padding={padding!r} and "
                           f"kernel_size={kernel_size!r}")
    sizes = tuple(x.shape[2:])
    out = tuple(_out_size(n, *a, ceil_mode) for n, a in zip(sizes, zip(k, s, p, d)))
    if min(out) < 1:
        raise RuntimeError(f"{op}: the output size {list(out)} is too small for the input {describe(x)} with "
                           f"kernel_size={kernel_size!r}, stride={stride!r}, padding={padding!r}, "
                           f"dilation={dilation!r}; hint: use a smaller kernel or more padding")
    return k, s, p, d


def _depth_view(y, n, c, dd):
    """(N, C * D, Ho, Wo) -> (N, C, Ho * Wo, D), the layout in which the 2-d kernels pool the depth."""
    return y.reshape(n, c, dd, -1).transpose(2, 3)


def _undo(y, unbatched):
    return y.squeeze(0) if unbatched else y


# ------------------------------------------------------------------------------------------------ 1-d pools
@names_op("max_pool1d")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling of (N, C, L) or (C, L); ``return_indices`` gives int64 positions along L."""
    op = "max_pool1d"
    x, unbatched = _float_input(op, input, 1)
    k, s, p, d = _geom(op, x, 1, kernel_size, stride, padding, dilation, ceil_mode)
    r = ag.max_pool2d(x.unsqueeze(2), (1,) + k, (1,) + s, (0,) + p, (1,) + d, ceil_mode=ceil_mode,
                      return_indices=return_indices)
    if return_indices:
        return _undo(r[0].squeeze(2), unbatched), _undo(r[1].squeeze(2), unbatched)
    return _undo(r.squeeze(2), unbatched)


@names_op("avg_pool1d")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling of (N, C, L) or (C, L) (PyTorch's divisor rules)."""
    op = "avg_pool1d"
    x, unbatched = _float_input(op, input, 1)
    k, s, p, _ = _geom(op, x, 1, kernel_size, stride, padding, 1, ceil_mode)
    y = ag.avg_pool2d(x.unsqueeze(2), (1,) + k, (1,) + s, (0,) + p, ceil_mode, count_include_pad)
    return _undo(y.squeeze(2), unbatched)


# ------------------------------------------------------------------------------------------------ 3-d pools
@names_op("max_pool3d")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling of (N, C, D, H, W) or (C, D, H, W); ``return_indices`` gives int64 flat indices into
    the D * H * W volume."""
    op = "max_pool3d"
    x, unbatched = _float_input(op, input, 3)
    k, s, p, d = _geom(op, x, 3, kernel_size, stride, padding, dilation, ceil_mode)
    n, c, dd, h, w = x.shape
    planes = ag.max_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], d[1:], ceil_mode=ceil_mode,
                           return_indices=return_indices)
    plane_vals = planes[0] if return_indices else planes
    ho, wo = plane_vals.shape[2:]
    r = ag.max_pool2d(_depth_view(plane_vals, n, c, dd), (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]),
                      ceil_mode=ceil_mode, return_indices=return_indices)
    vals = (r[0] if return_indices else r).transpose(2, 3)
    do = vals.shape[2]
    out = _undo(vals.reshape(n, c, do, ho, wo), unbatched)
    if not return_indices:
        return out
    with ag.no_grad():
        dsel = (r[1] % dd).transpose(2, 3)  # (N, C, Do, Ho * Wo): the depth of each maximum (flat is row * D + d)
        hw = planes[1].reshape(n, c, dd, ho * wo).gather(2, dsel)
        idx = (dsel * (h * w) + hw).reshape(n, c, do, ho, wo)
    return out, _undo(idx, unbatched)


@names_op("avg_pool3d")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling of (N, C, D, H, W) or (C, D, H, W) (PyTorch's divisor rules)."""
    op = "avg_pool3d"
    x, unbatched = _float_input(op, input, 3)
    k, s, p, _ = _geom(op, x, 3, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override == 0):
        raise OpValueError(f"{op}: divisor_override must be a non-zero int or None, got {divisor_override!r}")
    n, c, dd, h, w = x.shape
    plane_div = None if divisor_override is None else 1  # with an override: window sums, divided once at the end
    y = ag.avg_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, plane_div)
    ho, wo = y.shape[2:]
    y = ag.avg_pool2d(_depth_view(y, n, c, dd), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad,
                      divisor_override)
    return _undo(y.transpose(2, 3).reshape(n, c, -1, ho, wo), unbatched)


# ------------------------------------------------------------------------------------------------ adaptive
def _adaptive_sizes(op, output_size, x, nd):
    sizes = output_size if isinstance(output_size, list | tuple) else (output_size,) * nd
    if len(sizes) != nd:
        raise OpValueError(f"{op}: output_size must be an int or a sequence of {nd} ints (or None), got "
                           f"{output_size!r}")
    out = tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(sizes))
    if any(not isinstance(v, int) or v < 1 for v in out):
        raise OpValueError(f"{op}: output_size must hold positive ints or None, got {output_size!r}")
    if 0 in x.shape[2:]:
        raise RuntimeError(f"{op}: expected an input with non-zero spatial sizes, got one {describe(x)}")
    return out


@names_op("adaptive_avg_pool1d")
def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) or (C, L) to ``output_size`` with PyTorch's adaptive windows."""
    op = "adaptive_avg_pool1d"
    x, unbatched = _float_input(op, input, 1)
    (lo,) = _adaptive_sizes(op, output_size if not isinstance(output_size, list | tuple) else tuple(output_size),
                            x, 1)
    return _undo(ag.adaptive_avg_pool2d(x.unsqueeze(2), (1, lo)).squeeze(2), unbatched)


@names_op("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (int or triple; None keeps a size)."""
    op = "adaptive_avg_pool3d"
    x, unbatched = _float_input(op, input, 3)
    do, ho, wo = _adaptive_sizes(op, output_size, x, 3)
    n, c, dd, h, w = x.shape
    y = ag.adaptive_avg_pool2d(x.reshape(n, c * dd, h, w), (ho, wo))
    y = ag.adaptive_avg_pool2d(_depth_view(y, n, c, dd), (ho * wo, do))
    return _undo(y.transpose(2, 3).reshape(n, c, do, ho, wo), unbatched)


def _windows(size, out):
    """Index table (out, kmax) of PyTorch's adaptive windows ``[floor(i*L/o), ceil((i+1)*L/o))``, each row padded
    with its last index, and the window starts."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-((-(i + 1) * size) // out) for i in range(out)]
    kmax = max(e - b for b, e in zip(starts, ends))
    table = [[min(b + j, e - 1) for j in range(kmax)] for b, e in zip(starts, ends)]
    return table, starts, kmax


def _adaptive_max(op, input, output_size, return_indices, nd):
    x, unbatched = _float_input(op, input, nd)
    outs = _adaptive_sizes(op, output_size, x, nd)
    sizes = tuple(x.shape[2:])
    v, flat = x, None
    for i in reversed(range(nd)):  # last dim first: the flat index then composes as pos * stride + inner
        dim = 2 + i
        table, starts, kmax = _windows(sizes[i], outs[i])
        index = ag.tensor(table, dtype=ag.int64, device=x.device).reshape(-1)
        g = v.index_select(dim, index)
        g = g.reshape(*g.shape[:dim], outs[i], kmax, *g.shape[dim + 1:])
        v, arg = g.max(dim + 1)
        if return_indices:
            with ag.no_grad():
                start = ag.tensor(starts, dtype=ag.int64, device=x.device).reshape(outs[i], *(1,) * (nd - 1 - i))
                pos = arg + start  # the position along this dim of each maximum
                inner = math.prod(sizes[i + 1:])
                flat = pos if flat is None else pos * inner + flat.gather(dim, pos)
    v = _undo(v, unbatched)
    return (v, _undo(flat, unbatched)) if return_indices else v


@names_op("adaptive_max_pool1d")
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of (N, C, L) or (C, L) to ``output_size`` (PyTorch's adaptive windows)."""
    return _adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


@names_op("adaptive_max_pool2d")
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of (N, C, H, W) or (C, H, W) to ``output_size``; indices are flat into H * W."""
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2)


@names_op("adaptive_max_pool3d")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size``; indices are flat into D * H * W."""
    return _adaptive_max("adaptive_max_pool3d", input, output_size, return_indices, 3)


# ------------------------------------------------------------------------------------------------ LP pools
def _lp(op, input, norm_type, kernel_size, stride, ceil_mode, nd):
    x, unbatched = _float_input(op, input, nd)
    k, s, _, _ = _geom(op, x, nd, kernel_size, stride, 0, 1, ceil_mode)
    pad1 = (1,) * (2 - nd)
    y = x.unsqueeze(2) if nd == 1 else x
    out = ag.avg_pool2d(y.pow(norm_type), pad1 + k, pad1 + s, 0, ceil_mode)
    out = (ag.sign(out) * ag.relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)
    return _undo(out.squeeze(2) if nd == 1 else out, unbatched)


@names_op("lp_pool1d")
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x ** p) ** (1 / p)`` over L (PyTorch's formula via average pooling)."""
    return _lp("lp_pool1d", input, float(norm_type), kernel_size, stride, ceil_mode, 1)


@names_op("lp_pool2d")
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x ** p) ** (1 / p)`` over H and W."""
    return _lp("lp_pool2d", input, float(norm_type), kernel_size, stride, ceil_mode, 2)


@names_op("lp_pool3d")
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x ** p) ** (1 / p)`` over D, H and W."""
    op = "lp_pool3d"
    p = float(norm_type)
    x, unbatched = _float_input(op, input, 3)
    k, s, _, _ = _geom(op, x, 3, kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(x.pow(p), k, s, 0, ceil_mode)
    out = (ag.sign(out) * ag.relu(out.abs())).mul(math.prod(k)).pow(1.0 / p)
    return _undo(out, unbatched)


# ------------------------------------------------------------------------------------------------ unpooling
def _unpool(op, input, indices, kernel_size, stride, padding, output_size, nd):
    x, unbatched = _float_input(op, input, nd)
    if not isinstance(indices, ag.Tensor) or indices.dtype != ag.int64 or tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: indices must be an int64 tensor of the input's shape {list(input.shape)} (from "
                           f"max_pool{nd}d(..., return_indices=True)), got "
                           f"{describe(indices) if isinstance(indices, ag.Tensor) else type(indices).__name__}")
    k = ints(op, "kernel_size", kernel_size, nd, 1)
    s = k if stride is None or (isinstance(stride, list | tuple) and not stride) else ints(op, "stride", stride, nd, 1)
    p = ints(op, "padding", padding, nd, 0)
    default = tuple((n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(x.shape[2:], s, p, k))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)
        out = out[-nd:] if len(out) in (nd + 1, nd + 2) else out
        if len(out) != nd:
            raise OpValueError(f"{op}: output_size must have {nd} elements (or {nd + 2} with batch and channels), got "
                               f"{output_size!r}")
        for o, dv, si in zip(out, default, s):
            if not dv - si < o < dv + si:
                raise OpValueError(f"{op}: invalid output_size {list(output_size)} (dim sizes must lie strictly "
                                   f"between {[a - b for a, b in zip(default, s)]} and "
                                   f"{[a + b for a, b in zip(default, s)]})")
    n, c = x.shape[:2]
    idx = (indices.unsqueeze(0) if unbatched else indices).reshape(n, c, -1)
    total = math.prod(out)  # an index past it fails in scatter (cpu) or as a device error (cuda): no sync here
    zeros = ag.zeros(n, c, total, dtype=x.dtype, device=x.device)
    y = zeros.scatter(2, idx, x.reshape(n, c, -1)).reshape(n, c, *out)
    return _undo(y, unbatched)


@names_op("max_unpool1d")
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool1d``: values put back at ``indices``, zeros elsewhere."""
    return _unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


@names_op("max_unpool2d")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool2d``: values put back at the flat H * W ``indices``, zeros elsewhere."""
    return _unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


@names_op("max_unpool3d")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool3d``: values put back at the flat D * H * W ``indices``, zeros elsewhere."""
    return _unpool("max_unpool3d", input, indices, kernel_size, stride, padding, output_size, 3)
