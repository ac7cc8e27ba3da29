"""Complex tensors: ``conj``, ``real``, ``imag``, ``view_as_real``, ``view_as_complex``, ``complex``, ``polar``,
``angle``, ``isreal``, ``is_complex``, and the conjugate transposes. Their forwards are not holomorphic, so
each node writes PyTorch's gradient (the conjugate Wirtinger derivative: for a real loss L of z = x + iy,
``z.grad = dL/dx + i dL/dy``) itself and sets ``_holomorphic = False`` (see Note [complex gradients] in
``autograd/graph.py``: every other node gets it from its real formula). ``real`` and ``imag`` of a complex
tensor, ``view_as_real`` and ``view_as_complex`` are views, as in PyTorch."""

from __future__ import annotations

import tkernels as tk
from tkernels.validation import OpTypeError

from ._base import Node, Tensor, needs_grad, record, view_result, wrap

__all__ = ["conj", "conj_physical", "real", "imag", "view_as_real", "view_as_complex", "complex", "polar",
           "angle", "isreal", "is_complex", "adjoint"]
METHODS = ["conj", "conj_physical", "angle", "isreal", "is_complex", "adjoint"]


def _check(op, x):
    if not isinstance(x, Tensor):
        raise OpTypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")


class ConjBackward0(Node):
    _holomorphic = False

    def __init__(self, x):
        super().__init__((x,))

    def backward(self, g):
        return (conj(g),)


def conj(input) -> Tensor:
    """The complex conjugate; a real tensor itself (``torch.conj``; tkernels has no lazy conjugate bit, so a
    complex result is a new tensor)."""
    _check("conj", input)
    a = input._data
    if a._dtype.kind != "c":
        return input
    r = tk.conj(a)
    return record(ConjBackward0(input), r) if needs_grad(input) else wrap(r)


conj_physical = conj


class RealBackward0(Node):
    _holomorphic = False

    def __init__(self, x):
        super().__init__((x,))
        self.dtype = x._data._dtype

    def backward(self, g):
        from .views import to_copy

        return (to_copy(g, dtype=self.dtype),)  # g + 0j


class ImagBackward0(RealBackward0):
    def backward(self, g):
        from .views import to_copy

        return (to_copy(g, dtype=self.dtype) * 1j,)  # 0 + g j


def real(input) -> Tensor:
    """The real part: a view of a complex tensor (float32 for complex64); a real tensor itself."""
    _check("real", input)
    a = input._data
    if a._dtype.kind != "c":
        return input
    node = RealBackward0(input) if needs_grad(input) else None
    return view_result(input, tk.real(a), node, real)


def imag(input) -> Tensor:
    """The imaginary part, a view of a complex tensor; real tensors raise, as in PyTorch."""
    _check("imag", input)
    a = input._data
    if a._dtype.kind != "c":
        raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes (got {a.dtype}, shape "
                           f"{list(a.shape)})")
    node = ImagBackward0(input) if needs_grad(input) else None
    return view_result(input, tk.imag(a), node, imag)


class ViewAsRealBackward0(Node):
    _holomorphic = False

    def __init__(self, x):
        super().__init__((x,))

    def backward(self, g):
        return (view_as_complex(g.contiguous()),)


class ViewAsComplexBackward0(Node):
    _holomorphic = False

    def __init__(self, x):
        super().__init__((x,))

    def backward(self, g):
        return (view_as_real(g),)


def view_as_real(input) -> Tensor:
    """A complex tensor of shape ``s`` as a real view of shape ``(*s, 2)``."""
    _check("view_as_real", input)
    try:
        out = tk.view_as_real(input._data)
    except TypeError:
        raise RuntimeError(f"view_as_real is only supported for complex tensors (got {input.dtype})") from None
    node = ViewAsRealBackward0(input) if needs_grad(input) else None
    return view_result(input, out, node, view_as_real)


def view_as_complex(input) -> Tensor:
    """A float32/float64 tensor of shape ``(*s, 2)`` (last dimension contiguous) as a complex view of shape ``s``."""
    _check("view_as_complex", input)
    try:
        out = tk.view_as_complex(input._data)
    except (TypeError, ValueError) as e:
        raise RuntimeError(str(e)) from None
    node = ViewAsComplexBackward0(input) if needs_grad(input) else None
    return view_result(input, out, node, view_as_complex)


class ComplexBackward0(Node):
    _holomorphic = False

    def __init__(self, a, b):
        super().__init__((a, b))

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (real(g) if na else None, imag(g) if nb else None)


class PolarBackward0(Node):
    _holomorphic = False

    def __init__(self, r, theta):
        super().__init__((r, theta))

    def backward(self, g):
        r, theta = self.saved_tensors[:2]
        w = self.saved_tensors[2]
        na, nb = self.needs_input_grad
        gc = conj(g)
        # w = r e^{i theta}: dL = Re(conj(g) e^{i theta}) dr + Re(conj(g) i w) dtheta
        ga = real(gc * complex(_cos(theta), _sin(theta))) if na else None
        gb = real(gc * w * 1j) if nb else None
        return ga, gb


def _cos(t):
    from .elementwise import cos

    return cos(t)


def _sin(t):
    from .elementwise import sin

    return sin(t)


def complex(real, imag) -> Tensor:  # noqa: A001 - PyTorch's name
    """``real + 1j * imag`` from two float32 or float64 tensors of one dtype (``torch.complex``)."""
    _check("complex", real)
    _check("complex", imag)
    try:
        r = tk.complex(real._data, imag._data)
    except TypeError as e:
        raise RuntimeError(str(e)) from None
    return record(ComplexBackward0(real, imag), r) if needs_grad(real, imag) else wrap(r)


def polar(abs, angle) -> Tensor:  # noqa: A002 - PyTorch's names
    """``abs * (cos(angle) + 1j * sin(angle))`` (``torch.polar``)."""
    _check("polar", abs)
    _check("polar", angle)
    try:
        r = tk.polar(abs._data, angle._data)
    except TypeError as e:
        raise RuntimeError(str(e)) from None
    if not needs_grad(abs, angle):
        return wrap(r)
    node = PolarBackward0(abs, angle)
    out = record(node, r)
    node.save(abs, angle, outputs=(out,))
    return out


class AngleBackward0(Node):
    _holomorphic = False

    def __init__(self, x):
        super().__init__((x,))

    def backward(self, g):
        from .elementwise import abs as _abs
        from .elementwise import eq, where

        (x,) = self.saved_tensors
        if x._data._dtype.kind != "c":
            return (g * 0.0,)
        a = _abs(x)
        # theta = atan2(y, x): z.grad = g (-y + i x) / |z|^2 = g i z / |z|^2, and 0 at z = 0 (PyTorch)
        return (where(eq(a, 0.0), 0.0, (g * 1j) * x / (a * a)),)


def angle(input) -> Tensor:
    """The argument of each element, real (``torch.angle``); for real tensors 0 or pi (NaN kept)."""
    _check("angle", input)
    r = tk.angle(input._data)
    if not needs_grad(input) or input._data._dtype.kind not in "fc":
        return wrap(r)
    node = AngleBackward0(input)
    node.save(input)
    return record(node, r)


def isreal(input) -> Tensor:
    """Whether each element is real: True for real tensors; ``imag == 0`` for complex ones."""
    _check("isreal", input)
    a = input._data
    if a._dtype.kind != "c":
        return wrap(tk.ones(a.shape, dtype=tk.bool, device=a.device))
    return wrap(tk.equal(tk.imag(a), 0))


def is_complex(input) -> bool:
    return input._data._dtype.kind == "c"


def adjoint(input) -> Tensor:
    """The conjugate transpose of the last two dimensions (a view for real tensors)."""
    from .views import mT

    return conj(mT(input))
