"""Padding layers: ``{Reflection,Replication,Zero,Constant,Circular}Pad{1,2,3}d`` over ``F.pad``. ``padding``
is an int (every side) or a tuple ``(left, right[, top, bottom[, front, back]])`` of 2 × the layer's
dimensions, as in PyTorch; inputs are batched ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``."""

from __future__ import annotations

from tkernels.validation import OpValueError

from .. import functional as F
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Reflection", "Replication", "Zero", "Constant", "Circular")
           for n in (1, 2, 3)]


class _Pad(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        n = 2 * self.dims
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * n
        padding = tuple(padding)
        if len(padding) != n or not all(isinstance(p, int) for p in padding):
            raise OpValueError(f"{type(self).__name__}: padding must be an int or a tuple of {n} ints, got "
                               f"{padding!r}")
        self.padding = padding
        self.value = value

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise OpValueError(f"{name}: expected a {self.dims + 1}D (unbatched) or {self.dims + 2}D (batched) input, "
                               f"got shape {list(input.shape)}")
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self.mode == "constant" and
                                    type(self).__name__.startswith("Constant") else "")


class ReflectionPad1d(_Pad):
    """Pads the last 1 dimension(s) (reflect)."""

    mode, dims = "reflect", 1


class ReflectionPad2d(_Pad):
    """Pads the last 2 dimension(s) (reflect)."""

    mode, dims = "reflect", 2


class ReflectionPad3d(_Pad):
    """Pads the last 3 dimension(s) (reflect)."""

    mode, dims = "reflect", 3


class ReplicationPad1d(_Pad):
    """Pads the last 1 dimension(s) (replicate)."""

    mode, dims = "replicate", 1


class ReplicationPad2d(_Pad):
    """Pads the last 2 dimension(s) (replicate)."""

    mode, dims = "replicate", 2


class ReplicationPad3d(_Pad):
    """Pads the last 3 dimension(s) (replicate)."""

    mode, dims = "replicate", 3


class ZeroPad1d(_Pad):
    """Pads the last 1 dimension(s) with zeros."""

    mode, dims = "constant", 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(_Pad):
    """Pads the last 2 dimension(s) with zeros."""

    mode, dims = "constant", 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(_Pad):
    """Pads the last 3 dimension(s) with zeros."""

    mode, dims = "constant", 3

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ConstantPad1d(_Pad):
    """Pads the last 1 dimension(s) with ``value``."""

    mode, dims = "constant", 1

    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad2d(_Pad):
    """Pads the last 2 dimension(s) with ``value``."""

    mode, dims = "constant", 2

    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad3d(_Pad):
    """Pads the last 3 dimension(s) with ``value``."""

    mode, dims = "constant", 3

    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class CircularPad1d(_Pad):
    """Pads the last 1 dimension(s) (circular)."""

    mode, dims = "circular", 1


class CircularPad2d(_Pad):
    """Pads the last 2 dimension(s) (circular)."""

    mode, dims = "circular", 2


class CircularPad3d(_Pad):
    """Pads the last 3 dimension(s) (circular)."""

    mode, dims = "circular", 3
