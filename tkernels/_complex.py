"""Complex arrays: ``real``, ``imag``, ``conj``, ``view_as_real``, ``view_as_complex``, ``complex``, ``polar``,
``angle``, and the guard that names complex ops without a cuda kernel yet.

A complex64 element is two float32 values side by side (real, imaginary), complex128 two float64: so
``real(x)``, ``imag(x)`` and ``view_as_real(x)`` are views of the same storage with doubled strides (no copy, on
every device, as in PyTorch), and ``view_as_complex`` is the inverse view of a ``(..., 2)`` float array whose last
dimension is contiguous. ``conj`` makes a new array (PyTorch's lazy conjugate bit has no counterpart here).
"""

from __future__ import annotations

from . import dtypes as _dt
from .array import Array
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, describe

__all__ = ["real", "imag", "conj", "view_as_real", "view_as_complex", "complex", "polar", "angle"]

# complex ops whose cuda (triton) kernels exist; the others refuse complex arrays on cuda with
# NotImplementedError (never a host round trip). The cuda backend adds op names here as it gains kernels.
CUDA_COMPLEX_OPS: set[str] = set()


def check_device(op: str, *arrays, dtype=None) -> None:
    """NotImplementedError when one of ``arrays`` is a complex array (or ``dtype``, the result's, is complex) on a
    device whose backend has no complex kernel for ``op`` yet (cuda, until its kernels land)."""
    if op in CUDA_COMPLEX_OPS:
        return
    for a in arrays:
        if isinstance(a, Array) and a._device.type != "cpu" and (a._dtype.kind == "c" or dtype is not None
                                                                  and dtype.kind == "c"):
            d = a._dtype if a._dtype.kind == "c" else dtype
            raise NotImplementedError(f"{op}: {d} on {a._device.type} is not implemented yet (got "
                                      f"{describe(a)}); hint: compute on cpu with .to('cpu'), or in real "
                                      f"arithmetic on view_as_real(x)")


def _check(op, x):
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")


def _component(x: Array, part: int) -> Array:
    rd = _dt.to_real(x._dtype)
    return Array(x._storage, x._shape, tuple(2 * s for s in x._strides), 2 * x._offset + part, rd, x._device)


def real(x, /) -> Array:
    """The real part: a view for complex arrays (float32 for complex64), the input itself for real ones."""
    _check("real", x)
    return _component(x, 0) if x._dtype.kind == "c" else x


def imag(x, /) -> Array:
    """The imaginary part: a view for complex arrays; zeros of the same shape and dtype for real ones."""
    _check("imag", x)
    if x._dtype.kind == "c":
        return _component(x, 1)
    from .creation import zeros_like

    return zeros_like(x)


def conj(x, /) -> Array:
    """The complex conjugate (a new array); real arrays: the input itself (as ``torch.conj``)."""
    _check("conj", x)
    if x._dtype.kind != "c":
        return x
    check_device("conj", x)
    out = lookup("empty", x._device)(x._shape, x._dtype, x._device)
    lookup("conj", x._device)(out, x)
    return out


def view_as_real(x, /) -> Array:
    """A complex array of shape ``s`` as a real view of shape ``(*s, 2)`` (real, imaginary) (PyTorch)."""
    _check("view_as_real", x)
    if x._dtype.kind != "c":
        raise OpTypeError(f"view_as_real: expected a complex array, got {describe(x)}; hint: "
                          f"view_as_complex goes the other way")
    return Array(x._storage, (*x._shape, 2), (*(2 * s for s in x._strides), 1), 2 * x._offset,
                 _dt.to_real(x._dtype), x._device)


def view_as_complex(x, /) -> Array:
    """A float32/float64 array of shape ``(*s, 2)`` as a complex64/complex128 view of shape ``s`` (PyTorch): the
    last dimension must have stride 1, the other strides and the offset must be even."""
    _check("view_as_complex", x)
    if x._dtype not in (_dt.float32, _dt.float64):
        raise OpTypeError(f"view_as_complex: expected a float32 or float64 array, got {describe(x)}")
    if not x._shape or x._shape[-1] != 2:
        raise OpValueError(f"view_as_complex: the last dimension must have size 2 (real, imaginary), got "
                           f"{describe(x)}")
    if x._strides[-1] != 1:
        raise OpValueError(f"view_as_complex: the last dimension must have stride 1, got strides {x._strides} "
                           f"({describe(x)}); hint: call .contiguous() first")
    if x._offset % 2 or any(s % 2 for s in x._strides[:-1]):
        raise OpValueError(f"view_as_complex: the other strides {x._strides[:-1]} and the offset {x._offset} must "
                           f"be even ({describe(x)}); hint: call .contiguous() first")
    return Array(x._storage, x._shape[:-1], tuple(s // 2 for s in x._strides[:-1]), x._offset // 2,
                 _dt.to_complex(x._dtype), x._device)


def complex(real, imag, /) -> Array:  # noqa: A001 - PyTorch's name
    """``real + 1j * imag`` from two float32 or float64 arrays of one dtype (broadcast), as ``torch.complex``."""
    return _pair("complex", real, imag)


def polar(abs, angle, /) -> Array:  # noqa: A002 - PyTorch's names
    """``abs * (cos(angle) + 1j * sin(angle))`` from two float32 or float64 arrays of one dtype (``torch.polar``)."""
    return _pair("polar", abs, angle)


def _pair(op, a, b):
    if not isinstance(a, Array) or not isinstance(b, Array):
        raise OpTypeError(f"{op}: expected two Arrays, got {describe(a)} and {describe(b)}")
    if a._dtype is not b._dtype or a._dtype not in (_dt.float32, _dt.float64):
        raise OpTypeError(f"{op}: expected two float32 or two float64 arrays (one dtype), got {describe(a)} and "
                          f"{describe(b)}")
    if a._device != b._device:
        raise RuntimeError(f"{op}: expected both arrays on one device, got {describe(a)} and {describe(b)}")
    from .validation import broadcast_shapes

    shape = broadcast_shapes(a._shape, b._shape, op=op)
    out = lookup("empty", a._device)(shape, _dt.to_complex(a._dtype), a._device)
    re, im = _component(out, 0), _component(out, 1)
    if op == "complex":
        lookup("copy_", a._device)(re, a.broadcast_to(shape))
        lookup("copy_", a._device)(im, b.broadcast_to(shape))
    else:
        from . import elementwise as _el

        _el.multiply(a, _el.cos(b), out=re)
        _el.multiply(a, _el.sin(b), out=im)
    return out


def angle(x, /) -> Array:
    """The argument of each element (``atan2(imag, real)``; real arrays: 0 or pi, NaN kept, as ``torch.angle``);
    the result is real (float32 for complex64; integers give the default float dtype)."""
    _check("angle", x)
    from . import elementwise as _el

    if x._dtype.kind == "c":
        return _el.atan2(_component(x, 1), _component(x, 0))
    xf = x if x._dtype.kind == "f" else x.astype(_dt.get_default_dtype())
    from .creation import zeros_like

    z = zeros_like(xf)
    pi = _el.where(_el.less(xf, 0), _el.add(z, 3.141592653589793), z)
    return _el.where(_el.isnan(xf), xf, pi)
