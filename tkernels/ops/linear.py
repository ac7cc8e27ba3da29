"""The fused Linear op: ``act(x @ weight.T + bias) + residual`` in one kernel on cuda.

Entry::

    linear(x, weight, bias=None, *, activation=None, residual=None, out_dtype=None) -> y

``x (*, K)``, ``weight (N, K)`` (PyTorch's layout), ``bias (N,)``; ``activation`` one of ``None``, ``"relu"``,
``"gelu"`` (erf), ``"gelu_tanh"``, ``"silu"``; ``residual`` broadcastable to the result's shape ``(*, N)``.
Floating dtypes only. The product is computed in the promoted dtype of ``x`` and ``weight`` (float16/bfloat16
on tensor cores, float32 per ``tkernels.backends.matmul.allow_tf32``); bias, activation and residual are applied
to the float32 accumulator (float64 for float64 operands), with the bias and residual converted to it, and the
result is rounded once to ``out_dtype`` (default: the promoted dtype). Rounding once makes it slightly more
accurate than PyTorch's unfused ``linear`` + activation + add in half precision.

Backward entry (no activation or residual: autograd composes the gradient of those from elementwise ops)::

    linear_backward(grad, x, weight, *, needs=(True, True, True)) -> (gx, gw, gb)
        grad (*, N), x (*, K), weight (N, K): one floating dtype, one device (x may be None when gw is not
        needed, weight when gx is not). gx = grad @ weight (x's shape),
        gw = grad2.T @ x2 (N, K), gb = grad2.sum(0) (N,), grad2 and x2 being grad and x as 2-D (M, N) and (M, K)
        rows; each None where ``needs`` (for x, weight, bias) is false. Products as ``matmul`` computes them
        (halves accumulate in float32), gb as ``sum``.

Backend contract (``lookup("linear", device)``; the entry flattens ``x`` to 2-D (a view when its strides
allow), broadcasts the residual to the output and never calls it with an empty output)::

    linear(out, x, weight, bias, residual, activation)
        out (M, N) of the output dtype; x (M, K); weight (N, K); bias (N,) or None;
        residual (M, N) or None (any strides, 0 included); activation: None or one of the names above
    linear_backward(gx, gw, gb, grad, x, weight)
        gx (M, K), gw (N, K), gb (N,) or None each (not needed); grad (M, N), x (M, K) (None without gw),
        weight (N, K) (None without gx), any strides; every dimension may be 0

>>> import tkernels as tk
>>> from tkernels.ops import linear
>>> linear(tk.ones((2, 3)), tk.ones((4, 3)), tk.ones(4), activation="relu").shape
(2, 4)
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, broadcast_shapes, describe

__all__ = ["linear", "linear_backward"]

ACTIVATIONS = (None, "relu", "gelu", "gelu_tanh", "silu")


def _float_array(name: str, x, what: str, op: str = "linear") -> None:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: {name} must be an Array{what}, got {describe(x)}")
    if x._dtype.kind != "f":
        raise OpTypeError(f"{op}: {name} must have a floating dtype, got {describe(x)}; hint: convert with "
                          f".astype(float32)")


def _checked_dtype(x, weight, bias, activation, residual, out_dtype):
    """Every check of ``linear``, each with its message; returns the output dtype."""
    _float_array("x", x, "")
    _float_array("weight", weight, "")
    dev = x._device
    ws = weight._shape
    if len(ws) != 2:
        raise OpValueError(f"linear: weight must be 2-D (out_features, in_features), got {describe(weight)}")
    xs = x._shape
    if not xs:
        raise OpValueError(f"linear: x must have at least 1 dimension (*, in_features), got {describe(x)}")
    K = xs[-1]
    if K != ws[1]:
        raise OpValueError(f"linear: x has {K} features in its last dimension but weight expects {ws[1]} "
                           f"({describe(x)}, weight {describe(weight)}); hint: weight is (out_features, "
                           f"in_features), as in PyTorch")
    if weight._device != dev:
        raise RuntimeError(f"linear: expected all arrays on the same device, but x is on {x.device} and weight on "
                           f"{weight.device}; hint: move one with .to(device)")
    N = ws[0]
    if bias is not None:
        _float_array("bias", bias, " or None")
        if bias._shape != (N,):
            raise OpValueError(f"linear: bias must have shape ({N},) (out_features), got {describe(bias)}")
        if bias._device != dev:
            raise RuntimeError(f"linear: bias is on {bias.device} but x is on {x.device}")
    if activation not in ACTIVATIONS:
        raise OpValueError(f"linear: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    cd = x._dtype if x._dtype is weight._dtype else _dt._PROMO[x._dtype, weight._dtype]
    if out_dtype is None:
        od = cd
    else:
        od = _dt.as_dtype(out_dtype)
        if od.kind != "f":
            raise OpTypeError(f"linear: out_dtype must be a floating dtype, got {od}")
    if residual is not None:
        _float_array("residual", residual, " or None")
        if residual._device != dev:
            raise RuntimeError(f"linear: residual is on {residual.device} but x is on {x.device}")
        shape = xs[:-1] + (N,)
        try:
            ok = broadcast_shapes(residual._shape, shape, op="linear") == shape
        except ValueError:
            ok = False
        if not ok:
            raise OpValueError(f"linear: residual {describe(residual)} does not broadcast to the result shape {shape} "
                               f"(x {describe(x)}, weight {describe(weight)})")
    return od


def linear(x, weight, bias=None, *, activation=None, residual=None, out_dtype=None) -> Array:
    """``activation(x @ weight.T + bias) + residual``, fused (see the module docstring)."""
    # a Linear layer's call (Arrays of one floating dtype on one device, no residual, no out_dtype) passes every
    # check of _checked_dtype; this one test of it skips their function calls and device comparisons
    if (x.__class__ is Array and weight.__class__ is Array and residual is None and out_dtype is None
            and x._dtype is weight._dtype and x._dtype.kind == "f" and x._device is weight._device
            and len(weight._shape) == 2 and x._shape and x._shape[-1] == weight._shape[1]
            and (bias is None or (bias.__class__ is Array and bias._dtype.kind == "f" and bias._device is x._device
                                  and bias._shape == (weight._shape[0],)))
            and (activation is None or activation in ACTIVATIONS)):
        od = x._dtype
    else:
        od = _checked_dtype(x, weight, bias, activation, residual, out_dtype)
    dev = x._device
    xs = x._shape
    N = weight._shape[0]
    shape = xs[:-1] + (N,)
    if len(xs) == 2 and residual is None:  # nothing to reshape or broadcast
        out = lookup("empty", dev)(shape, od, dev)
        if xs[0] and N:
            lookup("linear", dev)(out, x, weight, bias, None, activation)
        return out
    M = 1
    for s in xs[:-1]:
        M *= s
    K = xs[-1]
    out = lookup("empty", dev)(shape, od, dev)
    if M == 0 or N == 0:
        return out
    x2 = x if len(xs) == 2 else x.reshape((M, K))
    r2 = None
    if residual is not None:
        r2 = residual if residual._shape == shape else residual.broadcast_to(shape)
        if len(shape) != 2:
            r2 = r2.reshape((M, N))
    o2 = out if len(shape) == 2 else out._view((M, N), (N, 1), out._offset)
    lookup("linear", dev)(o2, x2, weight, bias, r2, activation)
    return out



def _backward_checks(grad, x, weight, needs) -> None:
    if len(needs) != 3:
        raise OpValueError(f"linear_backward: needs must be three booleans (x, weight, bias), got {needs!r}")
    _float_array("grad", grad, "", "linear_backward")
    if not grad._shape:
        raise OpValueError(f"linear_backward: grad must have at least 1 dimension (*, out_features), got "
                           f"{describe(grad)}")
    for name, a, need in (("x", x, needs[1]), ("weight", weight, needs[0])):
        if a is None:
            if need:
                raise OpTypeError(f"linear_backward: {name} is needed for the gradient of "
                                  f"{'weight' if name == 'x' else 'x'}, got None")
            continue
        _float_array(name, a, " or None", "linear_backward")
        if a._dtype is not grad._dtype:
            raise OpTypeError(f"linear_backward: grad and {name} must have one dtype, got {describe(grad)} and "
                              f"{describe(a)}; hint: the forward's dtype")
        if a._device != grad._device:
            raise RuntimeError(f"linear_backward: expected all arrays on the same device, got grad on "
                               f"{grad.device} and {name} on {a.device}")
    gs = grad._shape
    if weight is not None and (len(weight._shape) != 2 or weight._shape[0] != gs[-1]):
        raise OpValueError(f"linear_backward: weight {describe(weight)} must be 2-D (out_features, in_features) "
                           f"with out_features = grad's last dimension ({describe(grad)})")
    if x is not None and (not x._shape or x._shape[:-1] != gs[:-1]
                          or (weight is not None and x._shape[-1] != weight._shape[1])):
        raise OpValueError(f"linear_backward: x {describe(x)} must have grad's shape {gs} with the last dimension "
                           f"in_features" + (f" = {weight._shape[1]}" if weight is not None else ""))


def linear_backward(grad, x, weight, *, needs=(True, True, True)) -> tuple:
    """The gradients of ``linear(x, weight, bias)`` with respect to x, weight and bias (see the module
    docstring): one backend call for the three. ``x`` may be None when weight's gradient is not needed, ``weight``
    when x's is not."""
    gs = grad._shape if grad.__class__ is Array else None
    if not (gs and grad._dtype.kind == "f" and len(needs) == 3
            and (weight.__class__ is Array and weight._dtype is grad._dtype and weight._device is grad._device
                 and len(weight._shape) == 2 and weight._shape[0] == gs[-1] if weight is not None else not needs[0])
            and (x.__class__ is Array and x._dtype is grad._dtype and x._device is grad._device and x._shape
                 and x._shape[:-1] == gs[:-1] and (weight is None or x._shape[-1] == weight._shape[1])
                 if x is not None else not needs[1])):
        _backward_checks(grad, x, weight, needs)
    nx, nw, nb = needs
    dev = grad._device
    d = grad._dtype
    N = gs[-1]
    K = weight._shape[1] if weight is not None else (x._shape[-1] if x is not None else 0)
    empty = lookup("empty", dev)
    gx = empty(gs[:-1] + (K,), d, dev) if nx else None
    gw = empty((N, K), d, dev) if nw else None
    gb = empty((N,), d, dev) if nb else None
    if len(gs) == 2:
        g2, x2, gx2 = grad, x, gx
    else:
        M = 1
        for s in gs[:-1]:
            M *= s
        g2 = grad.reshape((M, N))
        x2 = x.reshape((M, K)) if nw else None
        gx2 = None if gx is None else gx._view((M, K), (K, 1), gx._offset)
    if nx or nw or nb:
        lookup("linear_backward", dev)(gx2, gw, gb, g2, x2 if nw else None, weight if nx else None)
    return gx, gw, gb
