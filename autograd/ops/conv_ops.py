"""Convolutions, pooling and resizing with PyTorch's functional signatures (what ``nn.functional`` calls).

Forward and plain backward are the fused ``tkernels.ops`` entries. Under ``create_graph=True``: convolutions
recompute their forward as a composite (pad + gather of the windows + matmul; the transposed one as matmul +
scatter-add) and differentiate it (``nn_ops.composite_grad``); the pools and ``interpolate`` are linear in
their input, so their backward is a node of its own whose backward is the forward op again (the adjoint pair),
and max pooling's backward is a scatter-add at the saved indices.
"""

from __future__ import annotations

import functools

import numpy as np

import tkernels as tk
from tkernels.ops.conv import _conv_setup, _convt_setup
from tkernels.validation import OpValueError

from .. import factory
from ..grad_mode import STATE
from ._base import Node, needs_grad, wrap
from .linalg import matmul
from .nn_ops import _arr, _opt, composite_grad
from .views import index_put

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
           "adaptive_avg_pool2d", "interpolate"]
METHODS = []


# ----------------------------------------------------------------------------------------- convolution
def _as4(t, nd, unbatched):
    if unbatched:
        t = t.unsqueeze(0)
    return t.unsqueeze(2) if nd == 1 else t


def _from4(t, nd, unbatched):
    if nd == 1:
        t = t.squeeze(2)
    return t.squeeze(0) if unbatched else t


def _window_index(k, d, n_out, s):
    """(k, n_out) input positions ``i * s + j * d`` read by output ``i`` and kernel tap ``j``."""
    return (np.arange(k) * d)[:, None] + (np.arange(n_out) * s)[None, :]


def _conv_composite(x4, w4, s, pads, d, groups):
    """conv2d of 4-D tensors as pad + gather of the windows + matmul (differentiable)."""
    n, c, h, w = x4.shape
    co, cg, kh, kw = w4.shape
    pt, pb, pl, pr = pads
    if any(pads):
        z = factory.zeros((n, c, h + pt + pb, w + pl + pr), dtype=x4.dtype, device=x4.device)
        x4 = index_put(z, (slice(None), slice(None), slice(pt, pt + h), slice(pl, pl + w)), x4)
    hp, wp = h + pt + pb, w + pl + pr
    ho, wo = (hp - d[0] * (kh - 1) - 1) // s[0] + 1, (wp - d[1] * (kw - 1) - 1) // s[1] + 1
    rows = _window_index(kh, d[0], ho, s[0])
    cols = _window_index(kw, d[1], wo, s[1])
    key = (slice(None), slice(None), tk.asarray(rows[:, None, :, None], device=x4.device),
           tk.asarray(cols[None, :, None, :], device=x4.device))
    win = x4[key].reshape(n, groups, cg * kh * kw, ho * wo)  # (N, C, kh, kw, Ho, Wo) -> per group
    out = matmul(w4.reshape(groups, co // groups, cg * kh * kw), win)
    return out.reshape(n, co, ho, wo)


def _convt_composite(x4, w4, s, p, op_, d, groups):
    """conv_transpose2d of 4-D tensors as matmul + scatter-add of the windows (differentiable)."""
    n, ci, h, w = x4.shape
    _, cog, kh, kw = w4.shape
    co, cig = cog * groups, ci // groups
    win = matmul(w4.reshape(groups, cig, cog * kh * kw).mT, x4.reshape(n, groups, cig, h * w))
    win = win.reshape(n, co, kh, kw, h, w)
    hf, wf = (h - 1) * s[0] + d[0] * (kh - 1) + 1 + op_[0], (w - 1) * s[1] + d[1] * (kw - 1) + 1 + op_[1]
    rows = _window_index(kh, d[0], h, s[0])
    cols = _window_index(kw, d[1], w, s[1])
    key = (slice(None), slice(None), tk.asarray(rows[:, None, :, None], device=x4.device),
           tk.asarray(cols[None, :, None, :], device=x4.device))
    full = index_put(factory.zeros((n, co, hf, wf), dtype=x4.dtype, device=x4.device), key, win, accumulate=True)
    return full[:, :, p[0]:hf - p[0], p[1]:wf - p[1]]


class ConvolutionBackward0(Node):
    def __init__(self, x, w, b, nd, transposed, args):
        super().__init__((x, w, b))
        self.nd, self.transposed, self.args = nd, transposed, args

    def backward(self, g):
        x, w = self.saved_tensors
        nx, nw, nb = self.needs_input_grad
        nd, args = self.nd, self.args
        if not STATE.grad_enabled:
            if self.transposed:
                fn = tk.ops.conv_transpose1d_backward if nd == 1 else tk.ops.conv_transpose2d_backward
            else:
                fn = tk.ops.conv1d_backward if nd == 1 else tk.ops.conv2d_backward
            return tuple(_opt(a) for a in fn(g._data, x._data, w._data, *args, needs=(nx, nw, nb)))
        unbatched = x.ndim == nd + 1
        if self.transposed:
            _, _, s, p, op_, d, groups, _, _ = _convt_setup("conv_transpose", nd, x._data, w._data, None, *args)

            def f(x, w):
                return _from4(_convt_composite(_as4(x, nd, unbatched), _as4(w, nd, False), s, p, op_, d, groups),
                              nd, unbatched)
        else:
            _, _, s, pads, d, groups, _, _ = _conv_setup("conv", nd, x._data, w._data, None, *args)

            def f(x, w):
                return _from4(_conv_composite(_as4(x, nd, unbatched), _as4(w, nd, False), s, pads, d, groups), nd,
                              unbatched)
        gx, gw = composite_grad(f, (x, w), (nx, nw), (g,))
        gb = None
        if nb:
            cdim = 0 if unbatched else 1
            gb = g.sum([i for i in range(g.ndim) if i != cdim])
        return gx, gw, gb


def _conv(tk_fn, nd, transposed, input, weight, bias, args):
    if input._data.dtype.kind == "c" or weight._data.dtype.kind == "c":
        return _complex_conv(tk_fn, nd, transposed, input, weight, bias, args)
    r = tk_fn(input._data, weight._data, _arr(bias), *args)
    if not needs_grad(input, weight, bias):
        return wrap(r)
    node = ConvolutionBackward0(input, weight, bias, nd, transposed, args)
    node.save(input, weight)
    return node.output(r)


def _complex_conv(tk_fn, nd, transposed, input, weight, bias, args):
    """A complex (transposed) convolution as four real ones (PyTorch's complex convolution):
    ``(xr * wr - xi * wi) + i (xr * wi + xi * wr)`` plus the bias, through differentiable ops (the gradients
    follow from those of the real convolutions and of real/imag/complex)."""
    from .complex_ops import complex as _complex
    from .complex_ops import imag, real

    def parts(t):
        if t._data.dtype.kind == "c":
            return real(t), imag(t)
        return t, None

    (xr, xi), (wr, wi) = parts(input), parts(weight)
    if (xr._data.dtype is not wr._data.dtype):
        raise RuntimeError(f"conv{nd}d: expected input and weight of one precision, got {input.dtype} and "
                           f"{weight.dtype}; hint: convert one with .to(...)")
    conv = functools.partial(_conv, tk_fn, nd, transposed)
    re = conv(xr, wr, None, args)
    im = None
    if xi is not None and wi is not None:
        re = re - conv(xi, wi, None, args)
    if wi is not None:
        im = conv(xr, wi, None, args)
    if xi is not None:
        im = conv(xi, wr, None, args) if im is None else im + conv(xi, wr, None, args)
    y = _complex(re, im)
    if bias is not None:
        cdim = 0 if input.ndim == nd + 1 else 1
        y = y + bias.reshape([-1] + [1] * (y.ndim - cdim - 1))
    return y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of (N, C_in, H, W) or (C_in, H, W) ``input`` with (C_out, C_in/groups, kH, kW)
    ``weight``, plus ``bias`` (C_out,); ``padding`` may be ints, ``"valid"`` or ``"same"``."""
    return _conv(tk.ops.conv2d, 2, False, input, weight, bias, (stride, padding, dilation, groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of (N, C_in, L) or (C_in, L) ``input`` with (C_out, C_in/groups, kL) ``weight``."""
    return _conv(tk.ops.conv1d, 1, False, input, weight, bias, (stride, padding, dilation, groups))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution of (N, C_in, H, W) ``input`` with (C_in, C_out/groups, kH, kW) ``weight``."""
    return _conv(tk.ops.conv_transpose2d, 2, True, input, weight, bias,
                 (stride, padding, output_padding, groups, dilation))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution of (N, C_in, L) ``input`` with (C_in, C_out/groups, kL) ``weight``."""
    return _conv(tk.ops.conv_transpose1d, 1, True, input, weight, bias,
                 (stride, padding, output_padding, groups, dilation))


# ------------------------------------------------------------------------------------------------ pooling
def _max_pool_scatter(g, indices, shape):
    """``g`` scatter-added at the flat ``indices`` into an input of ``shape`` (differentiable in g)."""
    lead = int(np.prod(shape[:-2]))
    idx = tk.reshape(indices._data, (lead, -1))
    rows = tk.reshape(tk.arange(lead, device=g.device), (lead, 1))
    z = factory.zeros((lead, shape[-2] * shape[-1]), dtype=g.dtype, device=g.device)
    return index_put(z, (rows, idx), g.reshape(lead, -1), accumulate=True).reshape(shape)


class MaxPool2DWithIndicesBackward0(Node):
    def __init__(self, x, indices, args):
        super().__init__((x,))
        self.shape, self.indices, self.args = tuple(x.shape), indices, args

    def backward(self, g):
        if not STATE.grad_enabled:
            return (wrap(tk.ops.max_pool2d_backward(g._data, self.shape, self.indices._data, *self.args)),)
        return (_max_pool_scatter(g, self.indices, self.shape),)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling of (N, C, H, W) or (C, H, W) ``input``; ``return_indices`` also gives the int64 flat
    index into the H * W plane of each maximum."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    track = needs_grad(input)
    if not (track or return_indices):
        return wrap(tk.ops.max_pool2d(input._data, *args))
    out, idx = tk.ops.max_pool2d(input._data, *args, return_indices=True)
    indices = wrap(idx)
    if track:
        out = MaxPool2DWithIndicesBackward0(input, indices, args).output(out)
    else:
        out = wrap(out)
    return (out, indices) if return_indices else out


class _LinearNode(Node):
    """The backward of an op linear in its one input: ``adjoint(g)``, itself differentiable."""

    def __init__(self, x, args):
        super().__init__((x,))
        self.args = args

    def backward(self, g):
        return (self.adjoint(g, *self.args),)


def _linear(tk_fn, cls, input, args):
    r = tk_fn(input._data, *args)
    if not needs_grad(input):
        return wrap(r)
    return cls(input, args).output(r)


class AvgPool2DBackwardBackward0(_LinearNode):
    @staticmethod
    def adjoint(gg, shape, *args):
        return avg_pool2d(gg, *args)


class AvgPool2DBackward0(_LinearNode):
    @staticmethod
    def adjoint(g, *args):
        return _linear(tk.ops.avg_pool2d_backward, AvgPool2DBackwardBackward0, g, args)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling of (N, C, H, W) or (C, H, W) ``input`` (PyTorch's divisor rules)."""
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    r = tk.ops.avg_pool2d(input._data, *args)
    if not needs_grad(input):
        return wrap(r)
    return AvgPool2DBackward0(input, (tuple(input.shape),) + args).output(r)


class AdaptiveAvgPool2DBackwardBackward0(_LinearNode):
    @staticmethod
    def adjoint(gg, shape, output_size):
        return adaptive_avg_pool2d(gg, output_size)


class AdaptiveAvgPool2DBackward0(_LinearNode):
    @staticmethod
    def adjoint(g, shape):
        r = tk.ops.adaptive_avg_pool2d_backward(g._data, shape)
        if not needs_grad(g):
            return wrap(r)
        return AdaptiveAvgPool2DBackwardBackward0(g, (shape, tuple(g.shape[-2:]))).output(r)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of (N, C, H, W) or (C, H, W) ``input`` to ``output_size`` (int or pair; None keeps that
    input size), with PyTorch's windows."""
    r = tk.ops.adaptive_avg_pool2d(input._data, output_size)
    if not needs_grad(input):
        return wrap(r)
    return AdaptiveAvgPool2DBackward0(input, (tuple(input.shape),)).output(r)


_INTERP_NAMES = {"nearest": "UpsampleNearest2D", "nearest-exact": "UpsampleNearestExact2D",
                 "bilinear": "UpsampleBilinear2D", "area": "AdaptiveAvgPool2D"}


class _InterpolateBackwardBackward(_LinearNode):
    def name(self):
        return _INTERP_NAMES[self.args[3]] + "BackwardBackward0"

    @staticmethod
    def adjoint(gg, shape, *args):
        return interpolate(gg, *args)


class _InterpolateBackward(_LinearNode):
    def name(self):
        return _INTERP_NAMES[self.args[3]] + "Backward0"

    @staticmethod
    def adjoint(g, *args):
        return _linear(tk.ops.interpolate_backward, _InterpolateBackwardBackward, g, args)


# modes by the number of spatial dims (PyTorch's): 1-D and 3-D resizes are made of 2-D ones (below)
_INTERP_MODES = {1: ("nearest", "nearest-exact", "linear", "area"), 2: ("nearest", "nearest-exact", "bilinear", "area"),
                 3: ("nearest", "nearest-exact", "trilinear", "area")}
_INTERP_LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}


def _per_dim(op, name, v, k):
    """``size`` / ``scale_factor`` as a tuple of ``k`` values (a single value repeated)."""
    if v is None:
        return None
    if isinstance(v, list | tuple):
        if len(v) != k:
            raise OpValueError(f"{op}: {name} must have {k} element(s) for a {k}-D resize, got {v!r}")
        return tuple(v)
    return (v,) * k


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of ``input`` (N, C, L), (N, C, H, W) or (N, C, D, H, W) to ``size`` or
    ``floor(n * scale_factor)``; modes ``"nearest"``, ``"nearest-exact"``, ``"area"`` and the linear one of the
    rank (``"linear"``, ``"bilinear"``, ``"trilinear"``, with ``align_corners``). The 1-D resize is the 2-D one of
    a height-1 image; the 3-D one resizes (H, W) and then D (both separable: the same weights, summed in two
    passes)."""
    if antialias:
        raise NotImplementedError(f"interpolate(): antialias=True is not supported (input shape "
                                  f"{list(input.shape)}, mode={mode!r}); hint: use antialias=False")
    k = input.dim() - 2
    if k in _INTERP_MODES and mode not in _INTERP_MODES[k] and any(mode in m for m in _INTERP_MODES.values()):
        need = next(d for d, m in _INTERP_MODES.items() if mode in m)
        raise NotImplementedError(f"interpolate(): got {k + 2}D input, but {mode} mode needs {need + 2}D input")
    if k in (1, 3):
        sizes = _per_dim("interpolate", "size", size, k)
        scales = _per_dim("interpolate", "scale_factor", scale_factor, k)
        mode2 = "bilinear" if mode == _INTERP_LINEAR[k] else mode
        if k == 1:
            r = interpolate(input.unsqueeze(2), None if sizes is None else (1, sizes[0]),
                            None if scales is None else (1.0, scales[0]), mode2, align_corners,
                            recompute_scale_factor)
            return r.squeeze(2)
        n, c, d, h, w = input.shape
        x = interpolate(input.reshape(n, c * d, h, w), None if sizes is None else sizes[1:],
                        None if scales is None else scales[1:], mode2, align_corners, recompute_scale_factor)
        h2, w2 = x.shape[2:]
        x = interpolate(x.reshape(n, c, d, h2 * w2), None if sizes is None else (sizes[0], h2 * w2),
                        None if scales is None else (scales[0], 1.0), mode2, align_corners, recompute_scale_factor)
        return x.reshape(n, c, x.shape[2], h2, w2)
    args = (size, scale_factor, mode, align_corners, recompute_scale_factor)
    r = tk.ops.interpolate(input._data, *args)
    if not needs_grad(input):
        return wrap(r)
    return _InterpolateBackward(input, (tuple(input.shape),) + args).output(r)
