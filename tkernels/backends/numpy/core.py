"""Memory, fills, copies, ranges, triangles and advanced indexing on NumPy."""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...array import _STRIDES, Array, Storage, _contiguous_strides
from ...device import CPU
from ...dispatch import register
from ...validation import OpValueError
from ._util import npv, wrap


@register("empty", "numpy")
def empty(shape, dtype, device) -> Array:
    nd = np.empty(shape, dtype.numpy)
    strides = _STRIDES.get(shape)  # _contiguous_strides' cache, read here: one call less per allocation
    return Array(Storage(nd, nd.nbytes, CPU), shape, _contiguous_strides(shape) if strides is None else strides, 0,
                 dtype, CPU, nd)


@register("fill", "numpy")
def fill(out, value) -> None:
    npv(out)[...] = _dt.literal(value, out.dtype, "fill")


@register("copy_", "numpy")
def copy_(out, x) -> None:
    src = npv(x)
    if src.dtype.kind == "c" and out._dtype.kind != "c":  # complex -> real keeps the real part (as PyTorch,
        src = src.real  # without NumPy's ComplexWarning)
    np.copyto(npv(out), src, casting="unsafe")


@register("conj", "numpy")
def conj(out, x) -> None:
    np.conjugate(npv(x), out=npv(out))


@register("arange", "numpy")
def arange(n, start, step, dtype, device) -> Array:
    if dtype.kind in "iu":
        nd = (start + step * np.arange(n, dtype=np.int64)).astype(dtype.numpy)
    else:
        nd = (start + step * np.arange(n, dtype=np.float64)).astype(dtype.numpy)
    return wrap(nd, dtype)


@register("linspace", "numpy")
def linspace(start, stop, num, endpoint, dtype, device) -> Array:
    nd = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)
    return wrap(nd.astype(dtype.numpy) if dtype.kind == "f" else np.trunc(nd).astype(dtype.numpy), dtype)


@register("eye", "numpy")
def eye(n, m, k, dtype, device) -> Array:
    return wrap(np.eye(n, m, k, dtype=dtype.numpy), dtype)


@register("tril", "numpy")
def tril(out, x, k) -> None:
    np.copyto(npv(out), np.tril(npv(x), k))


@register("triu", "numpy")
def triu(out, x, k) -> None:
    np.copyto(npv(out), np.triu(npv(x), k))


def _np_key(key):
    return tuple(npv(k) if isinstance(k, Array) else k for k in key)


@register("getitem_advanced", "numpy")
def getitem_advanced(x, key) -> Array:
    try:
        r = npv(x)[_np_key(key)]
    except IndexError as e:
        raise IndexError(f"index: {e} (array {x.shape}, {x.dtype})") from None
    except ValueError as e:
        raise OpValueError(f"index: {e} (array {x.shape}, {x.dtype})") from None
    return wrap(np.array(r, copy=True), x.dtype)


@register("setitem_advanced", "numpy")
def setitem_advanced(x, key, value) -> None:
    v = npv(value) if isinstance(value, Array) else value
    nd = npv(x)
    k = _np_key(key)
    try:
        sel_shape = nd[k].shape
        if isinstance(v, np.ndarray):
            np.broadcast_shapes(v.shape, sel_shape)
            v = v.astype(nd.dtype, copy=False)
        else:
            v = _dt.literal(v, x.dtype, "setitem")
        nd[k] = v
    except IndexError as e:
        raise IndexError(f"setitem: {e} (array {x.shape}, {x.dtype})") from None
    except ValueError as e:
        if "step" in str(e):
            raise OpValueError(f"setitem: {e} (array {x.shape}, {x.dtype})") from None
        raise OpValueError(f"setitem: cannot assign a value of shape {np.shape(v)} to the selection of shape "
                           f"{nd[k].shape} ({e})") from None


@register("dlpack_export", "numpy")
def dlpack_export(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    nd = npv(x)
    if nd.dtype not in (np.dtype(d) for d in ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                              "int64", "float16", "float32", "float64", "complex64", "complex128")):
        raise BufferError(f"__dlpack__: NumPy cannot export {x.dtype} through DLPack; hint: convert with "
                          f".astype(float32) or use .numpy()")
    kw = {}
    if max_version is not None:
        kw["max_version"] = max_version
    if dl_device is not None:
        kw["dl_device"] = dl_device
    if copy is not None:
        kw["copy"] = copy
    return nd.__dlpack__(stream=stream, **kw)


@register("device_assert", "numpy")
def device_assert(ok, site, op, kind, bound) -> None:
    v = npv(ok)
    if not v.all():
        from ...cuda.device_errors import _exception

        pos = int(np.flatnonzero(~v.ravel())[0])
        raise _exception(kind, op, 0, pos, bound, pos)
