"""Creation functions: empty/zeros/ones/full and ``*_like``, arange, linspace, eye, meshgrid, asarray, from_numpy,
from_dlpack. Each validates, then asks the device's backend to make the memory."""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from . import dtypes as _dt
from ._complex import check_device
from .array import Array
from .device import Device, as_device
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, check_scalar_fits, describe, shape_tuple

__all__ = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like", "arange",
           "linspace", "eye", "meshgrid", "asarray", "from_numpy", "from_dlpack", "tril", "triu"]


def _resolve(dtype, device, default=None):
    d = _dt.get_default_dtype() if dtype is None and default is None else _dt.as_dtype(dtype or default)
    return d, as_device(device)


def empty(shape, *, dtype=None, device=None) -> Array:
    """An uninitialized array (default dtype: the default float dtype)."""
    d, dev = _resolve(dtype, device)
    return lookup("empty", dev)(shape_tuple("empty", shape), d, dev)


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """An array filled with ``fill_value``; the dtype is inferred from the value when not given."""
    if isinstance(fill_value, Array):
        if fill_value.size != 1:
            raise OpValueError(f"full: fill_value must be a scalar, got {describe(fill_value)}")
        fill_value = fill_value.item()
    if dtype is None:
        try:
            dtype = _dt.scalar_dtype(fill_value)
        except TypeError:
            raise OpTypeError(f"full: fill_value must be a number, got {describe(fill_value)}") from None
    d, dev = _resolve(dtype, device)
    shape = shape_tuple("full", shape)
    check_scalar_fits("full", fill_value, d)
    out = lookup("empty", dev)(shape, d, dev)
    if d.kind == "c":
        check_device("fill", out)
    lookup("fill", dev)(out, fill_value)
    return out


def zeros(shape, *, dtype=None, device=None) -> Array:
    """An array of zeros (default dtype: the default float dtype)."""
    return full(shape, 0, dtype=dtype or _dt.get_default_dtype(), device=device)


def ones(shape, *, dtype=None, device=None) -> Array:
    """An array of ones (default dtype: the default float dtype)."""
    return full(shape, 1, dtype=dtype or _dt.get_default_dtype(), device=device)


def _like(name, x):
    if not isinstance(x, Array):
        raise OpTypeError(f"{name}: expected an Array, got {describe(x)}")


def empty_like(x, /, *, dtype=None, device=None) -> Array:
    _like("empty_like", x)
    return empty(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def zeros_like(x, /, *, dtype=None, device=None) -> Array:
    _like("zeros_like", x)
    return full(x.shape, 0, dtype=dtype or x.dtype, device=device or x.device)


def ones_like(x, /, *, dtype=None, device=None) -> Array:
    _like("ones_like", x)
    return full(x.shape, 1, dtype=dtype or x.dtype, device=device or x.device)


def full_like(x, /, fill_value, *, dtype=None, device=None) -> Array:
    _like("full_like", x)
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=device or x.device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Array:
    """Values from ``start`` to ``stop`` (exclusive) by ``step``; int64 for integer arguments."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Array):
            v = v.item()
        if not isinstance(v, builtins.int | builtins.float | np.integer | np.floating):
            raise OpTypeError(f"arange: {name} must be a number, got {describe(v)}")
    if step == 0:
        raise OpValueError("arange: step must be nonzero")
    if dtype is None:
        ints = all(isinstance(v, builtins.int | np.integer) for v in (start, stop, step))
        dtype = _dt.int64 if ints else _dt.get_default_dtype()
    n = max(0, math.ceil((stop - start) / step))
    d, dev = _resolve(dtype, device)
    return lookup("arange", dev)(n, start, step, d, dev)


def linspace(start, stop, /, num: int, *, dtype=None, device=None, endpoint: bool = True) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    num = operator.index(num)
    if num < 0:
        raise OpValueError(f"linspace: num must be non-negative, got {num}")
    d, dev = _resolve(dtype, device)
    return lookup("linspace", dev)(float(start), float(stop), num, builtins.bool(endpoint), d, dev)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None, device=None) -> Array:
    """A 2-D array with ones on diagonal ``k``."""
    n_rows = operator.index(n_rows)
    n_cols = n_rows if n_cols is None else operator.index(n_cols)
    if n_rows < 0 or n_cols < 0:
        raise OpValueError(f"eye: sizes must be non-negative, got {n_rows}, {n_cols}")
    d, dev = _resolve(dtype, device)
    return lookup("eye", dev)(n_rows, n_cols, operator.index(k), d, dev)


def tril(x, /, *, k: int = 0) -> Array:
    """Zero the elements above diagonal ``k`` of the last two dimensions."""
    return _tri("tril", x, k)


def triu(x, /, *, k: int = 0) -> Array:
    """Zero the elements below diagonal ``k`` of the last two dimensions."""
    return _tri("triu", x, k)


def _tri(op, x, k):
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    if x.ndim < 2:
        raise OpValueError(f"{op}: needs at least 2 dimensions, got {describe(x)}")
    out = lookup("empty", x.device)(x.shape, x.dtype, x.device)
    lookup(op, x.device)(out, x, operator.index(k))
    return out


def meshgrid(*arrays, indexing: str = "xy") -> list[Array]:
    """Coordinate grids from 1-D arrays (views, via broadcast_to), ``indexing`` "xy" or "ij"."""
    if len(arrays) == 1 and isinstance(arrays[0], list | tuple):
        arrays = tuple(arrays[0])
    if indexing not in ("xy", "ij"):
        raise OpValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        if not isinstance(a, Array) or a.ndim != 1:
            raise OpValueError(f"meshgrid: expected 1-D arrays, got {describe(a)}")
    if len({a.dtype for a in arrays}) > 1 or len({a.device for a in arrays}) > 1:
        raise OpTypeError(f"meshgrid: arrays must share dtype and device, got "
                          f"{', '.join(describe(a) for a in arrays)}")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = a.shape[0]
        out.append(a.reshape(shape).broadcast_to(tuple(sizes)))
    return out


# ------------------------------------------------------------------------------------------- asarray
def _infer_host(obj, d):
    """A NumPy array for a scalar, nested sequence or array-like: Python numbers go straight to ``d`` (the
    requested dtype) or, without one, to the dtype PyTorch infers (bool, int64, the default float)."""
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, builtins.bool | builtins.int | builtins.float | builtins.complex | np.generic):
        if d is None:
            return np.asarray(obj) if isinstance(obj, np.generic) else _dt.literal(obj, _dt.scalar_dtype(obj))
        return _dt.literal(obj, d)
    if isinstance(obj, range):  # (torch.tensor(range(3)): the ints)
        obj = list(obj)
    if isinstance(obj, list | tuple):
        if any(isinstance(e, Array) for e in _flat(obj)):
            obj = _nested_to_numpy(obj)
        try:
            if d is not None:
                return _dt.literal(obj, d)
            nd = np.asarray(obj)
        except (TypeError, ValueError) as e:
            if str(e).startswith("asarray: "):  # a value the dtype cannot hold
                raise
            if isinstance(e, ValueError) and "inhomogeneous" in str(e):
                raise OpValueError(f"asarray: cannot make an array from a ragged nested sequence ({e}); every "
                                   f"sub-list at one depth must have the same length") from None
            raise OpTypeError(f"asarray: cannot make an array{'' if d is None else f' of {d}'} from "
                              f"{describe(obj)} ({e}); expected numbers") from None
        if nd.dtype == np.uint64 or nd.dtype == object:  # Python ints beyond int64 (and maybe floats)
            flat = list(_flat(obj))
            if not all(isinstance(e, builtins.int | builtins.float | np.number) for e in flat):
                return nd  # not numbers: refused below
            if not any(isinstance(e, builtins.float | np.floating) for e in flat):
                for e in flat:  # ints only: int64, as in PyTorch, which cannot hold them
                    check_scalar_fits("asarray", e, _dt.int64)
            return _dt.literal(obj, _dt.get_default_dtype())  # with a float: the default float dtype
        if nd.dtype == np.complex128 and _dt.default_complex() is _dt.complex64:  # Python complex numbers: the
            return nd.astype(np.complex64)  # default complex dtype, as torch.tensor
        if nd.dtype == np.float64 and not any(  # Python floats: the default float dtype, like torch.tensor (float64
                isinstance(e, np.ndarray | np.floating) and e.dtype == np.float64 for e in _flat(obj)):  # holds them
            return nd.astype(_dt.get_default_dtype().numpy)  # exactly: the one rounding); NumPy float64s stay
        return nd
    if hasattr(obj, "__array__"):
        return np.asarray(obj)
    raise OpTypeError(f"asarray: cannot make an array from {describe(obj)}; expected an Array, a NumPy array, "
                      f"a Python scalar or a nested sequence")


def _flat(seq):
    for e in seq:
        if isinstance(e, list | tuple):
            yield from _flat(e)
        else:
            yield e


def _nested_to_numpy(seq):
    return [(_nested_to_numpy(e) if isinstance(e, list | tuple) else
             (e.numpy() if isinstance(e, Array) else e)) for e in seq]


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> Array:
    """An Array from an Array, a NumPy array, a Python scalar, a nested sequence, or a DLPack object.

    ``copy=None`` copies only when needed, ``copy=True`` always, ``copy=False`` never (ValueError if it must).
    NumPy arrays on cpu are shared, not copied, unless a dtype change or ``copy=True`` asks for it.
    """
    d = None if dtype is None else _dt.as_dtype(dtype)
    if isinstance(obj, Array):
        x = obj
        if device is not None and as_device(device) != x.device:
            if copy is False:
                raise OpValueError(f"asarray: moving {describe(x)} to {device} needs a copy (copy=False)")
            x, copy = x.to(device), None
        if d is not None and d != x.dtype:
            if copy is False:
                raise OpValueError(f"asarray: converting {describe(x)} to {d} needs a copy (copy=False)")
            x, copy = x.astype(d), None
        return x.copy() if copy else x
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        x = from_dlpack(obj)
        return asarray(x, dtype=d, device=device, copy=copy)
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__cuda_array_interface__"):  # zero-copy, keeps obj alive
        x = lookup("from_cuda_array_interface", Device("cuda"))(obj)
        return asarray(x, dtype=d, device=device, copy=copy)
    nd = _infer_host(obj, d)
    if nd.dtype not in _dt._by_np:
        if nd.dtype == np.float64 or nd.dtype.kind not in "biuf":
            raise OpTypeError(f"asarray: unsupported dtype {nd.dtype} of {type(obj).__name__}; supported: "
                              f"{', '.join(x.name for x in _dt.all_dtypes)}")
        raise OpTypeError(f"asarray: unsupported dtype {nd.dtype}; supported: "
                          f"{', '.join(x.name for x in _dt.all_dtypes)}")
    fresh = nd is not obj
    if d is not None and nd.dtype != d.numpy:
        if copy is False:
            raise OpValueError(f"asarray: converting {nd.dtype} to {d} needs a copy (copy=False)")
        nd = nd.astype(d.numpy)
        fresh = True
    elif copy and not fresh:
        nd = nd.copy()
        fresh = True
    dev = as_device(device)
    if dev.type == "cpu":
        return Array._wrap(nd) if fresh else Array._from_numpy_view(nd)
    if copy is False:
        raise OpValueError(f"asarray: putting host data on {dev} needs a copy (copy=False)")
    return Array._wrap(np.array(nd, order="C")).to(dev)


def from_numpy(nd: np.ndarray, /) -> Array:
    """A cpu Array sharing memory with a NumPy array (zero-copy, like ``torch.from_numpy``)."""
    if not isinstance(nd, np.ndarray):
        raise OpTypeError(f"from_numpy: expected a numpy.ndarray, got {describe(nd)}")
    if nd.dtype not in _dt._by_np:
        raise OpTypeError(f"from_numpy: unsupported dtype {nd.dtype}; supported: "
                          f"{', '.join(x.name for x in _dt.all_dtypes)}")
    return Array._from_numpy_view(nd)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An Array sharing memory with any DLPack producer (NumPy on the host; GPU producers with tkernels.cuda)."""
    dev_type, _ = x.__dlpack_device__()
    if int(dev_type) == 1:  # kDLCPU
        nd = np.from_dlpack(x, copy=copy)
        out = from_numpy(nd) if nd.dtype in _dt._by_np else asarray(nd)
        return out if device is None else out.to(device)
    return lookup("from_dlpack", Device("cuda"))(x, device=device, copy=copy)
