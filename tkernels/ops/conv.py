"""Convolutions with PyTorch's argument names and semantics, split into forward and backward entries like ATen.

Public entries::

    conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Array
    conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Array
    conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Array
    conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Array
    conv1d_backward(grad, x, weight, stride=1, padding=0, dilation=1, groups=1, *, needs=(True, True, True))
    conv2d_backward(grad, x, weight, stride=1, padding=0, dilation=1, groups=1, *, needs=(True, True, True))
    conv_transpose1d_backward(grad, x, weight, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                              needs=(True, True, True))
    conv_transpose2d_backward(grad, x, weight, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                              needs=(True, True, True))

Shapes: ``x`` is (N, C_in, H, W) or unbatched (C_in, H, W) (1-D: (N, C_in, L) or (C_in, L)); a convolution
``weight`` is (C_out, C_in / groups, kH, kW), a transposed one (C_in, C_out / groups, kH, kW) (PyTorch's
layouts); ``bias`` is (C_out,). ``stride``, ``padding``, ``dilation``, ``output_padding`` are ints or pairs;
``padding`` of a convolution may also be ``"valid"`` (none) or ``"same"`` (stride 1 only; when the total
``dilation * (k - 1)`` is odd the extra row/column goes to the bottom/right, as in PyTorch). x, weight and
bias must share one floating dtype; float16/bfloat16 compute in float32. The backward entries return
``(dx, dweight, dbias)`` with ``None`` where ``needs`` is False (``dbias`` is the sum of ``grad`` over batch
and space); 1-D ops run as 2-D ones with H = 1.

Backend ops (numpy for cpu, triton for cuda) always see 4-D arrays and normalized tuples; outputs are
allocated by the entry (any of dx, dweight, dbias may be None)::

    conv2d(out, x, weight, bias, stride, padding, dilation, groups)       # padding (top, bottom, left, right)
    conv2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, dilation, groups)
    conv_transpose2d(out, x, weight, bias, stride, padding, output_padding, groups, dilation)  # padding (ph, pw)
    conv_transpose2d_backward(dx, dweight, dbias, grad, x, weight, stride, padding, output_padding, groups,
                              dilation)

>>> import tkernels as tk
>>> from tkernels.ops.conv import conv2d
>>> conv2d(tk.ones((1, 1, 4, 4)), tk.ones((2, 1, 3, 3)), padding="same").shape
(1, 2, 4, 4)
"""

from __future__ import annotations

import operator

from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, check_device, describe

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "conv1d_backward", "conv2d_backward",
           "conv_transpose1d_backward", "conv_transpose2d_backward"]


# ------------------------------------------------------------------------------------------------ helpers
def _array(op: str, name: str, x) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: {name} must be an Array, got {describe(x)}")
    return x


def _float(op: str, name: str, x) -> Array:
    _array(op, name, x)
    if x.dtype.kind != "f":
        raise OpTypeError(f"{op}: {name} must have a floating dtype, got {describe(x)}; hint: convert it with "
                          f".astype(tkernels.float32)")
    return x


def _ints(op: str, name: str, value, n: int, minimum: int) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints as an ``n``-tuple, each at least ``minimum``."""
    try:
        t = (operator.index(value),) * n if not isinstance(value, list | tuple) else tuple(map(operator.index,
                                                                                               value))
    except TypeError:
        raise OpTypeError(f"{op}: {name} must be an int or a sequence of {n} ints, got {value!r}") from None
    if len(t) != n:
        raise OpValueError(f"{op}: {name} must be an int or a sequence of {n} ints, got {value!r}")
    if any(v < minimum for v in t):
        raise OpValueError(f"{op}: {name} must be {'positive' if minimum else 'non-negative'}, got {value!r}")
    return t


def _groups(op: str, groups) -> int:
    try:
        g = operator.index(groups)
    except TypeError:
        g = 0
    if isinstance(groups, bool) or g < 1:
        raise OpValueError(f"{op}: groups must be a positive integer, got {groups!r}")
    return g


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(shape, dtype, device)


def _batched(op: str, x: Array, nd: int) -> tuple[Array, bool]:
    """``x`` as a batched 4-D view ((C, ...) gains N = 1; 1-D gains H = 1) and whether it was unbatched."""
    if x.ndim not in (nd + 1, nd + 2):
        names = ("(C, L)", "(N, C, L)") if nd == 1 else ("(C, H, W)", "(N, C, H, W)")
        raise OpValueError(f"{op}: expected a {nd + 1}-D {names[0]} or {nd + 2}-D {names[1]} input, got "
                           f"{describe(x)}")
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.expand_dims(0)
    if nd == 1:
        x = x.expand_dims(2)
    return x, unbatched


def _weight4(op: str, w: Array, nd: int, what: str) -> Array:
    if w.ndim != nd + 2:
        raise OpValueError(f"{op}: weight must be {nd + 2}-D {what}, got {describe(w)}")
    return w.expand_dims(2) if nd == 1 else w


def _geom(op: str, nd: int, stride, padding, dilation, output_padding=None):
    """Normalized 2-D (stride, padding, dilation[, output_padding]); 1-D values get a leading 1 (or 0)."""
    def two(name, v, minimum, fill):
        t = _ints(op, name, v, nd, minimum)
        return t if nd == 2 else (fill,) + t

    s = two("stride", stride, 1, 1)
    d = two("dilation", dilation, 1, 1)
    p = padding if isinstance(padding, str) else two("padding", padding, 0, 0)
    if output_padding is None:
        return s, p, d
    return s, p, d, two("output_padding", output_padding, 0, 0)


def _check_dtypes(op: str, x: Array, weight: Array, bias, c_out: int):
    if weight.dtype is not x.dtype:
        raise OpTypeError(f"{op}: x and weight must have the same dtype, got x {describe(x)} and weight "
                          f"{describe(weight)}; hint: convert one with .astype()")
    if bias is not None:
        _array(op, "bias", bias)
        if bias.dtype is not x.dtype:
            raise OpTypeError(f"{op}: bias must have the dtype of x ({x.dtype}), got {describe(bias)}")
        if bias.shape != (c_out,):
            raise OpValueError(f"{op}: bias must have shape ({c_out},) (one value per output channel), got "
                               f"{describe(bias)}")
        check_device(op, x, weight, bias)
    else:
        check_device(op, x, weight)


def _pick(needs, op: str) -> tuple[bool, bool, bool]:
    try:
        a, b, c = (bool(n) for n in needs)
    except (TypeError, ValueError):
        raise OpValueError(f"{op}: needs must be three booleans (dx, dweight, dbias), got {needs!r}") from None
    return a, b, c


# -------------------------------------------------------------------------------------------- convolution
def _conv_setup(op, nd, x, weight, bias, stride, padding, dilation, groups):
    """Validate a convolution; returns (x4, w4, stride, pads4, dilation, groups, out4 shape, unbatched)."""
    _float(op, "x", x)
    _float(op, "weight", weight)
    x4, unbatched = _batched(op, x, nd)
    w4 = _weight4(op, weight, nd, "(C_out, C_in / groups, " + ("kL)" if nd == 1 else "kH, kW)"))
    g = _groups(op, groups)
    n, c, h, w = x4.shape
    c_out, cg, kh, kw = w4.shape
    _check_dtypes(op, x, weight, bias, c_out)
    if c % g:
        raise OpValueError(f"{op}: groups={g} does not divide the {c} input channels of x {describe(x)}")
    if cg * g != c:
        raise OpValueError(f"{op}: x has {c} input channels ({describe(x)}) but weight {describe(weight)} expects "
                           f"C_in = weight.shape[1] * groups = {cg} * {g} = {cg * g}")
    if c_out % g:
        raise OpValueError(f"{op}: groups={g} does not divide the {c_out} output channels of weight "
                           f"{describe(weight)}")
    s, p, d = _geom(op, nd, stride, padding, dilation)
    ek = (d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1)
    if isinstance(p, str):
        if p == "valid":
            pads = (0, 0, 0, 0)
        elif p == "same":
            if s != (1, 1):
                raise OpValueError(f"{op}: padding='same' is not supported for strided convolutions (stride="
                                   f"{stride!r}); hint: give the padding as numbers")
            th, tw = ek[0] - 1, ek[1] - 1
            pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
        else:
            raise OpValueError(f"{op}: padding must be 'valid', 'same', an int or a sequence of ints, got {p!r}")
    else:
        pads = (p[0], p[0], p[1], p[1])
    hp, wp = h + pads[0] + pads[1], w + pads[2] + pads[3]
    if ek[0] > hp or ek[1] > wp:
        sizes = f"({wp})" if nd == 1 else f"({hp} x {wp})"
        ks = f"({ek[1]})" if nd == 1 else f"({ek[0]} x {ek[1]})"
        raise OpValueError(f"{op}: the padded input size per channel {sizes} is smaller than the dilated kernel "
                           f"size {ks} (x {describe(x)}, weight {describe(weight)}, padding={padding!r}, "
                           f"dilation={dilation!r}); hint: pad more or use a smaller kernel")
    out4 = (n, c_out, (hp - ek[0]) // s[0] + 1, (wp - ek[1]) // s[1] + 1)
    return x4, w4, s, pads, d, g, out4, unbatched


def _unview(a: Array, nd: int, unbatched: bool) -> Array:
    """Undo ``_batched`` on a 4-D result."""
    if nd == 1:
        a = a.squeeze(2)
    return a.squeeze(0) if unbatched else a


def _conv(op, nd, x, weight, bias, stride, padding, dilation, groups):
    x4, w4, s, pads, d, g, out4, unbatched = _conv_setup(op, nd, x, weight, bias, stride, padding, dilation,
                                                         groups)
    out = _empty(out4, x.dtype, x.device)
    lookup("conv2d", x.device)(out, x4, w4, bias, s, pads, d, g)
    return _unview(out, nd, unbatched)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Array:
    """2-D cross-correlation of (N, C_in, H, W) or (C_in, H, W) ``x`` with (C_out, C_in/groups, kH, kW)
    ``weight``, plus ``bias`` (C_out,); PyTorch's ``conv2d`` (``padding`` may be "valid" or "same")."""
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Array:
    """1-D cross-correlation of (N, C_in, L) or (C_in, L) ``x`` with (C_out, C_in/groups, kL) ``weight``;
    PyTorch's ``conv1d``."""
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


def _conv_backward(op, nd, grad, x, weight, stride, padding, dilation, groups, needs):
    nx, nw, nb = _pick(needs, op)
    x4, w4, s, pads, d, g, out4, unbatched = _conv_setup(op, nd, x, weight, None, stride, padding, dilation,
                                                         groups)
    _float(op, "grad", grad)
    expected = _unview_shape(out4, nd, unbatched)
    if grad.shape != expected:
        raise OpValueError(f"{op}: grad {describe(grad)} does not match the output shape {expected} of the "
                           f"convolution of x {describe(x)} with weight {describe(weight)}")
    check_device(op, grad, x, weight)
    g4 = grad.expand_dims(0) if unbatched else grad
    if nd == 1:
        g4 = g4.expand_dims(2)
    dev = x.device
    dx = _empty(x4.shape, x.dtype, dev) if nx else None
    dw = _empty(w4.shape, weight.dtype, dev) if nw else None
    db = _empty((w4.shape[0],), weight.dtype, dev) if nb else None
    lookup("conv2d_backward", dev)(dx, dw, db, g4, x4, w4, s, pads, d, g)
    return (None if dx is None else _unview(dx, nd, unbatched),
            None if dw is None else (dw.squeeze(2) if nd == 1 else dw), db)


def _unview_shape(shape4, nd, unbatched):
    shape = shape4[:2] + shape4[3:] if nd == 1 else shape4
    return shape[1:] if unbatched else shape


def conv2d_backward(grad, x, weight, stride=1, padding=0, dilation=1, groups=1, *, needs=(True, True, True)):
    """Gradients of ``conv2d`` for ``grad`` (the output's shape): ``(dx, dweight, dbias)``, None where
    ``needs`` is False."""
    return _conv_backward("conv2d_backward", 2, grad, x, weight, stride, padding, dilation, groups, needs)


def conv1d_backward(grad, x, weight, stride=1, padding=0, dilation=1, groups=1, *, needs=(True, True, True)):
    """Gradients of ``conv1d``: ``(dx, dweight, dbias)``, None where ``needs`` is False."""
    return _conv_backward("conv1d_backward", 1, grad, x, weight, stride, padding, dilation, groups, needs)


# ------------------------------------------------------------------------------------------ transposed
def _convt_setup(op, nd, x, weight, bias, stride, padding, output_padding, groups, dilation):
    _float(op, "x", x)
    _float(op, "weight", weight)
    if isinstance(padding, str):
        raise OpValueError(f"{op}: padding must be an int or a sequence of ints (transposed convolutions take no "
                           f"'same'/'valid'), got {padding!r}")
    x4, unbatched = _batched(op, x, nd)
    w4 = _weight4(op, weight, nd, "(C_in, C_out / groups, " + ("kL)" if nd == 1 else "kH, kW)"))
    g = _groups(op, groups)
    n, c, h, w = x4.shape
    c_in, cog, kh, kw = w4.shape
    _check_dtypes(op, x, weight, bias, cog * g)
    if c != c_in:
        raise OpValueError(f"{op}: x has {c} input channels ({describe(x)}) but the transposed weight "
                           f"{describe(weight)} expects C_in = weight.shape[0] = {c_in}")
    if c % g:
        raise OpValueError(f"{op}: groups={g} does not divide the {c} input channels of x {describe(x)}")
    s, p, d, op_ = _geom(op, nd, stride, padding, dilation, output_padding)
    for i in range(2):
        if op_[i] >= s[i] and op_[i] >= d[i]:
            raise OpValueError(f"{op}: output_padding must be smaller than either stride or dilation, got "
                               f"output_padding={output_padding!r}, stride={stride!r}, dilation={dilation!r}")
    ho = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op_[0] + 1
    wo = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op_[1] + 1
    if ho < 1 or wo < 1 or h < 1 or w < 1:
        raise OpValueError(f"{op}: the output size {(wo,) if nd == 1 else (ho, wo)} is too small (x {describe(x)}, "
                           f"weight {describe(weight)}, stride={stride!r}, padding={padding!r}); hint: reduce the "
                           f"padding")
    return x4, w4, s, p, op_, d, g, (n, cog * g, ho, wo), unbatched


def _convt(op, nd, x, weight, bias, stride, padding, output_padding, groups, dilation):
    x4, w4, s, p, op_, d, g, out4, unbatched = _convt_setup(op, nd, x, weight, bias, stride, padding,
                                                            output_padding, groups, dilation)
    out = _empty(out4, x.dtype, x.device)
    lookup("conv_transpose2d", x.device)(out, x4, w4, bias, s, p, op_, g, d)
    return _unview(out, nd, unbatched)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Array:
    """2-D transposed convolution ("deconvolution") of (N, C_in, H, W) or (C_in, H, W) ``x`` with
    (C_in, C_out/groups, kH, kW) ``weight``; PyTorch's ``conv_transpose2d`` (the gradient of conv2d w.r.t. its
    input). Output size: ``(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    return _convt("conv_transpose2d", 2, x, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Array:
    """1-D transposed convolution of (N, C_in, L) or (C_in, L) ``x`` with (C_in, C_out/groups, kL) ``weight``."""
    return _convt("conv_transpose1d", 1, x, weight, bias, stride, padding, output_padding, groups, dilation)


def _convt_backward(op, nd, grad, x, weight, stride, padding, output_padding, groups, dilation, needs):
    nx, nw, nb = _pick(needs, op)
    x4, w4, s, p, op_, d, g, out4, unbatched = _convt_setup(op, nd, x, weight, None, stride, padding,
                                                            output_padding, groups, dilation)
    _float(op, "grad", grad)
    expected = _unview_shape(out4, nd, unbatched)
    if grad.shape != expected:
        raise OpValueError(f"{op}: grad {describe(grad)} does not match the output shape {expected} of the "
                           f"transposed convolution of x {describe(x)} with weight {describe(weight)}")
    check_device(op, grad, x, weight)
    g4 = grad.expand_dims(0) if unbatched else grad
    if nd == 1:
        g4 = g4.expand_dims(2)
    dev = x.device
    dx = _empty(x4.shape, x.dtype, dev) if nx else None
    dw = _empty(w4.shape, weight.dtype, dev) if nw else None
    db = _empty((out4[1],), weight.dtype, dev) if nb else None
    lookup("conv_transpose2d_backward", dev)(dx, dw, db, g4, x4, w4, s, p, op_, g, d)
    return (None if dx is None else _unview(dx, nd, unbatched),
            None if dw is None else (dw.squeeze(2) if nd == 1 else dw), db)


def conv_transpose2d_backward(grad, x, weight, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                              needs=(True, True, True)):
    """Gradients of ``conv_transpose2d``: ``(dx, dweight, dbias)``, None where ``needs`` is False."""
    return _convt_backward("conv_transpose2d_backward", 2, grad, x, weight, stride, padding, output_padding,
                           groups, dilation, needs)


def conv_transpose1d_backward(grad, x, weight, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                              needs=(True, True, True)):
    """Gradients of ``conv_transpose1d``: ``(dx, dweight, dbias)``, None where ``needs`` is False."""
    return _convt_backward("conv_transpose1d_backward", 1, grad, x, weight, stride, padding, output_padding,
                           groups, dilation, needs)
