"""Helpers every autograd op uses: is a graph needed, wrap results, record nodes, views, in-place writes,
and reducing a broadcast gradient back to an input's shape."""

from __future__ import annotations

import tkernels as tk
from tkernels.array import Array
from tkernels.validation import OpTypeError

from ..grad_mode import STATE
from ..graph import Node
from ..tensor import Tensor

__all__ = ["Node", "Tensor", "needs_grad", "wrap", "record", "data", "view_result", "sum_to", "inplace",
           "check_out", "is_float"]

_make = Tensor._make
_wrap = Tensor._wrap


def needs_grad(*args) -> bool:
    """True when grad mode is on and some Tensor among ``args`` requires grad."""
    if not STATE.grad_enabled:
        return False
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            if a._inference:
                raise RuntimeError("Inference tensors cannot be saved for backward. To work around you can make "
                                   "a clone to get a normal tensor and use it in autograd.")
            return True
    return False


wrap = _wrap  # a Tensor without history around an Array (Tensor._wrap itself: one call less per op)


def data(x):
    """The Array behind a Tensor; Python scalars and Arrays pass through."""
    return x._data if isinstance(x, Tensor) else x


def is_float(array: Array) -> bool:
    return array.dtype.kind in "fc"


def record(node: Node, array: Array) -> Tensor:
    """The output of ``node``; integer and bool results are not differentiable (no grad_fn)."""
    if array.dtype.kind not in "fc":
        return _wrap(array)
    return node.output(array, 0)


def view_result(inp: Tensor, array: Array, node, fn) -> Tensor:
    """A view of ``inp``: shares its version counter and remembers how to re-create itself from the base
    (``fn``), which in-place writes through the view and views of modified bases rely on."""
    out = _wrap(array) if node is None else node.output(array, 0)
    base = inp._base
    if base is None:
        base = inp
        out._view_fn = fn
    else:
        pf = inp._view_fn
        out._view_fn = lambda b: fn(pf(b))
    out._base = base
    out._version = inp._version
    out._view_ver = inp._version.v
    return out


def sum_to(g: Tensor, shape) -> Tensor:
    """Sum a broadcast gradient back to ``shape`` (differentiable)."""
    shape = tuple(shape)
    gs = tuple(g.shape)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"sum_to: cannot reduce a gradient of shape {list(gs)} to {list(shape)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gs[lead + i] != 1:
            dims.append(lead + i)
        elif s != gs[lead + i]:
            raise RuntimeError(f"sum_to: cannot reduce a gradient of shape {list(gs)} to {list(shape)}")
    if not STATE.grad_enabled:  # no graph of the backward: the tkernels calls without the autograd layer
        a = g._data
        if dims:
            a = tk.sum(a, axis=tuple(dims), keepdims=True)
        if lead:
            a = tk.reshape(a, shape)
        return _wrap(a)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def check_out(op: str, out, tensors) -> None:
    if out is None:
        return
    if not isinstance(out, Tensor):
        raise OpTypeError(f"{op}(): out= must be a Tensor, got {type(out).__name__}")
    if STATE.grad_enabled and (out._requires_grad or any(isinstance(t, Tensor) and t._requires_grad
                                                          for t in tensors)):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           f"but one of the arguments requires grad. Hint: use the out-of-place form, or run "
                           f"it under autograd.no_grad()")


class ViewScatterBackward(Node):
    """The base after an in-place write through one of its views: the written region's gradient goes to
    the value written, the rest to the base's previous value."""

    _holomorphic = False  # real-linear, and its view_fn may take a component (real/imag): exact as written

    def __init__(self, old_base, new_view, view_fn):
        super().__init__((old_base, new_view))
        self.view_fn = view_fn
        self.shape = tuple(old_base.shape)

    def name(self):
        return "CopySlices"

    def backward(self, g):
        from .. import factory

        gb = None
        if self.needs_input_grad[0]:
            if g._data._dtype.kind == "c":  # zero the written components (a real/imag view writes one of them)
                from .complex_ops import view_as_complex, view_as_real

                mask = factory.full(self.shape, 1 + 1j, dtype=g.dtype, device=g.device)
                self.view_fn(mask)._data_fill_(0)
                gb = view_as_complex(view_as_real(g) * view_as_real(mask))
            else:
                mask = factory.ones(self.shape, dtype=g.dtype, device=g.device)
                self.view_fn(mask)._data_fill_(0)
                gb = g * mask
        gv = self.view_fn(g) if self.needs_input_grad[1] else None
        return gb, gv


def _check_write(op, self, res):
    if tuple(res.shape) != tuple(self.shape):
        raise RuntimeError(f"{op}: output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(res.shape)}")
    sk, rk = self._data.dtype.kind, res._data.dtype.kind
    if (sk in "iub" and rk == "f") or (sk == "b" and rk in "iu"):
        raise RuntimeError(f"{op}: result type {res.dtype} can't be cast to the desired output type {self.dtype} "
                           f"(in-place on a {self.dtype} tensor). Hint: use the out-of-place form")


def inplace(op: str, self: Tensor, fn, *args, needs_old: bool = True, **kwargs) -> Tensor:
    """Write ``fn(self, *args, **kwargs)`` (an out-of-place differentiable op) into ``self``.

    Without a graph to record this is a plain write. With one, ``self`` takes the history of the result;
    through a view, the base gets a ``CopySlices`` node. ``needs_old``: the op's backward uses the
    previous value of ``self`` (then a copy of it is what the op sees)."""
    if not isinstance(self, Tensor):
        raise OpTypeError(f"{op}: expected a Tensor, got {type(self).__name__}")
    if self._inference and not STATE.inference:
        raise RuntimeError(f"{op}: Inplace update to inference tensor outside InferenceMode is not allowed. "
                           f"Hint: clone() it first")
    if not needs_grad(self, *args, *kwargs.values()):
        res = fn(self, *args, **kwargs)
        _check_write(op, self, res)
        if res._data is not self._data:
            tk.copy_into(self._data, res._data, op=op)
        self._version.v += 1
        return self
    from . import views

    base = self._base
    if self._grad_fn is None and self._requires_grad and base is None:
        raise RuntimeError(f"{op}: a leaf Variable that requires grad (shape {list(self.shape)}) is being used "
                           f"in an in-place operation. Hint: wrap the update in autograd.no_grad(), or clone() "
                           f"the tensor first")
    if base is not None:
        if base._grad_fn is None and base._requires_grad:
            raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in an in-place "
                               f"operation (view shape {list(self.shape)}, base shape {list(base.shape)}). Hint: "
                               f"wrap it in autograd.no_grad() or clone() the base first")
        old_base = views.clone(base) if base._requires_grad else _wrap(tk.copy(base._data))
        res = fn(self._view_fn(old_base), *args, **kwargs)
        _check_write(op, self, res)
        tk.copy_into(self._data, res._data, op=op)
        self._version.v += 1
        node = ViewScatterBackward(old_base, res, self._view_fn)
        base._grad_fn = node
        base._output_nr = 0
        base._requires_grad = True
        node._out_meta = {0: (base._data.shape, base._data.dtype, base._data.device)}
        regen = self._view_fn(base)
        self._grad_fn = regen._grad_fn
        self._output_nr = 0
        self._requires_grad = True
        self._view_ver = self._version.v
        return self
    old = (views.clone(self) if self._requires_grad else _wrap(tk.copy(self._data))) if needs_old else self
    res = fn(old, *args, **kwargs)
    if res._grad_fn is None and res._requires_grad:  # fn returned a leaf itself (e.g. copy_ of a same-dtype
        res = views.alias(res)                         # tensor): self takes a node whose edge leads to it
    _check_write(op, self, res)
    tk.copy_into(self._data, res._data, op=op)
    self._version.v += 1
    self._grad_fn = res._grad_fn
    self._output_nr = res._output_nr
    self._requires_grad = res._requires_grad
    return self



