"""Argument checks shared by every public entry; messages name the op, the arguments and a hint (DESIGN §10)."""

from __future__ import annotations

import builtins
import math
import operator

__all__ = ["check_scalar_fits", "describe", "normalize_axis", "normalize_axes", "broadcast_shapes", "check_device",
           "as_int", "check_dtype_kind", "shape_tuple", "ZeroDivisionError", "NegativeIntegerPowerError",
           "integer_division_by_zero", "negative_integer_power", "names_op", "LinAlgError", "OpValueError",
           "OpTypeError", "OpIndexError"]


class OpValueError(RuntimeError, ValueError):
    """An op refused the shapes or values of its arguments: PyTorch raises RuntimeError there (a PyTorch program
    catches ``except RuntimeError``), Python and the array API standard ValueError; this is both."""


class OpIndexError(RuntimeError, IndexError):
    """An index out of range inside an op's argument (gather, scatter, embedding, nll targets) or a reduction of an
    empty dimension: PyTorch raises RuntimeError for most of these (IndexError for some), Python IndexError; this
    is both."""


class OpTypeError(RuntimeError, TypeError):
    """An op refused the dtypes or kinds of its arguments: PyTorch's RuntimeError (``result type Float can't be
    cast to the desired output type Long``), Python's TypeError; this is both."""


class ZeroDivisionError(RuntimeError, builtins.ZeroDivisionError):  # noqa: A001 - named after PyTorch's message
    """An integer ``floor_divide``/``remainder`` by zero: PyTorch raises ``RuntimeError: ZeroDivisionError``;
    this is both that RuntimeError and Python's ZeroDivisionError (what ``5 // 0`` raises)."""


class LinAlgError(RuntimeError):
    """A factorization failed on the values of its input (PyTorch's ``torch.linalg.LinAlgError``); defined here,
    below the backends, so that a backend can raise it (LAPACK's non-convergence on cpu)."""


class NegativeIntegerPowerError(RuntimeError, ValueError):
    """Integers to negative integer powers: PyTorch's RuntimeError, and the ValueError NumPy (and this library
    before) raises."""


def names_op(op: str):
    """Decorator for a composite: an error raised inside it (a TypeError, ValueError, IndexError or RuntimeError)
    whose message does not name ``op`` is raised again, same class, with ``op`` in front, so the message names
    the op the user called (DESIGN §10), not the one the composite calls."""
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (TypeError, ValueError, IndexError, RuntimeError) as e:
                msg = str(e)
                if op in msg:
                    raise
                try:
                    renamed = type(e)(f"{op}(): {msg}")
                except Exception:  # noqa: BLE001 - a class that takes other arguments keeps its message
                    raise e from None
                raise renamed.with_traceback(e.__traceback__) from None

        return wrapper

    return deco


def integer_division_by_zero(op: str, x1, x2) -> ZeroDivisionError:
    """The error of an integer ``op`` whose divisor ``x2`` holds a zero (``x1``, ``x2``: Arrays or scalars)."""
    held = " holds a zero" if hasattr(x2, "shape") else ""
    return ZeroDivisionError(f"ZeroDivisionError: {op}: integer division by zero (x1: {describe(x1)}, x2: "
                             f"{describe(x2)}{held}); hint: an integer quotient by zero is undefined: "
                             f"mask the zeros first (where(x2 == 0, 1, x2)) or compute in a float dtype "
                             f"(astype), where x / 0 is inf or nan")


def negative_integer_power(op: str, x1, x2) -> NegativeIntegerPowerError:
    """The error of an integer ``pow`` whose exponent ``x2`` holds a negative value."""
    held = " holds a negative value" if hasattr(x2, "shape") else ""
    return NegativeIntegerPowerError(f"{op}: Integers to negative integer powers are not allowed (x1: "
                                     f"{describe(x1)}, x2: {describe(x2)}{held}); hint: "
                                     f"use a float base (astype a float dtype) or non-negative exponents")


def describe(x) -> str:
    """A short description of an argument for error messages: shape, dtype and device for arrays."""
    t = type(x)
    if t.__module__.startswith(("tkernels", "autograd", "nn")) and hasattr(x, "shape") and hasattr(x, "device"):
        return f"{t.__name__}(shape={tuple(x.shape)}, dtype={x.dtype}, device={x.device})"
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # NumPy and other foreign arrays
        return f"{t.__name__}(shape={tuple(x.shape)}, dtype={x.dtype})"
    text = repr(x)
    return f"{t.__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def as_int(op: str, name: str, value) -> int:
    """``operator.index`` with an error naming the op and the argument."""
    try:
        return operator.index(value)
    except TypeError:
        raise OpTypeError(f"{op}: {name} must be an integer, got {type(value).__name__} {value!r}") from None


def normalize_axis(axis, ndim: int, op: str, name: str = "axis") -> int:
    """Wrap a negative axis; IndexError naming the op when it is out of range for ``ndim`` dimensions."""
    a = as_int(op, name, axis)
    n = max(ndim, 1)  # 0-d arrays accept axis 0 and -1, as NumPy reductions and PyTorch do
    if not -n <= a < n:
        raise IndexError(f"{op}: {name} {axis} is out of range for an array of {ndim} dimension(s) "
                         f"(expected {-n} <= {name} < {n})")
    return a % n if ndim else 0


def normalize_axes(axis, ndim: int, op: str, name: str = "axis") -> tuple[int, ...]:
    """``None`` → all axes; an int or a sequence → sorted unique non-negative axes; repeats are an error."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, list | tuple):
        out = tuple(normalize_axis(a, ndim, op, name) for a in axis)
        if ndim == 0:
            return ()
        if len(set(out)) != len(out):
            raise OpValueError(f"{op}: repeated axis in {name}={tuple(axis)}")
        return tuple(sorted(out))
    a = normalize_axis(axis, ndim, op, name)
    return () if ndim == 0 else (a,)


def shape_tuple(op: str, shape) -> tuple[int, ...]:
    """A shape from an int or a sequence of ints; negative sizes are an error."""
    if type(shape) is tuple:  # the hot case: a tuple of non-negative Python ints
        for s in shape:
            if type(s) is not int or s < 0:
                break
        else:
            return shape
    if isinstance(shape, int) or hasattr(shape, "__index__") and not hasattr(shape, "__len__"):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise OpTypeError(f"{op}: shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise OpValueError(f"{op}: negative dimension in shape {out}")
    return out


def broadcast_shapes(*shapes, op: str = "broadcast_shapes") -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of shapes; ValueError naming the op and every shape when they clash."""
    if len(shapes) == 2:  # the hot case, kept short
        a, b = shapes
        if a == b:
            return a
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if d != o:
                if o == 1:
                    out[off + i] = d
                elif d != 1:
                    raise OpValueError(f"{op}: shapes {', '.join(str(tuple(x)) for x in shapes)} cannot be "
                                       f"broadcast together: dimension {i - len(s)} is {o} in one and {d} in "
                                       f"another (sizes must match or be 1)")
    return tuple(out)


def check_device(op: str, *arrays):
    """All arrays on one device, else an error naming both devices; returns that device."""
    dev = None
    for a in arrays:
        d = a.device
        if dev is None:
            dev = d
        elif d != dev:
            raise RuntimeError(f"{op}: expected all arrays on the same device, but found {dev} and {d} "
                               f"(arguments: {', '.join(describe(x) for x in arrays)}); hint: move them "
                               f"with .to(device) first")
    return dev


def check_dtype_kind(op: str, x, kinds: str, what: str):
    """TypeError naming the op and the argument when ``x.dtype.kind`` is not one of ``kinds``."""
    if x.dtype.kind not in kinds:
        raise OpTypeError(f"{op}: expected {what}, got {describe(x)}")


_RANGES: dict = {}  # integer dtype -> (min, max): np.iinfo costs a microsecond per call


def check_scalar_fits(op: str, value, dtype) -> None:
    """A Python number stored into an integer array must be finite and in range (PyTorch raises too); a complex
    one needs a complex array."""
    if isinstance(value, complex) or getattr(value, "dtype", None) is not None and value.dtype.kind == "c":
        if dtype.kind != "c":
            raise OpTypeError(f"{op}: cannot store the complex value {value!r} in a {dtype} array; hint: take .real "
                              f"or abs() first, or use a complex dtype")
        return
    if dtype.kind not in "iu" or isinstance(value, bool):
        return
    r = _RANGES.get(dtype)
    if r is None:
        import numpy as np

        info = np.iinfo(dtype.numpy)
        r = _RANGES[dtype] = (int(info.min), int(info.max))
    if isinstance(value, float) and not math.isfinite(value):
        raise OpValueError(f"{op}: cannot store {value} in an integer array ({dtype}); hint: use a floating dtype")
    if not r[0] <= value <= r[1]:
        raise OpValueError(f"{op}: value {value} cannot be converted to {dtype} without overflow "
                           f"(range {r[0]}..{r[1]})")
