"""The Array: a storage, a shape, element strides, an element offset, a dtype and a device.

Views (reshape when strides allow, permute_dims, broadcast_to, squeeze, expand_dims, basic indexing...) are
computed here on the metadata alone and share the storage, whatever the device. Everything that touches
element values goes through an op entry and the dispatcher.

On ``cpu`` the storage holds a C-contiguous NumPy array (the buffer); ``_nd`` caches the NumPy view that
the metadata describes, made on first use with ``np.ndarray(buffer=...)`` (about 1 µs). On ``cuda`` the
storage holds a block of the caching allocator and ``data_ptr()`` is what kernels read.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from . import _capture
from . import dtypes as _dt
from .device import CPU, Device, as_device
from .validation import OpTypeError, OpValueError, describe, normalize_axes, normalize_axis, shape_tuple

__all__ = ["Array", "Storage"]

_F = None  # the tkernels namespace; set by tkernels/__init__.py (the operators call its public entries)


class Storage:
    """The memory behind one or more Arrays. ``data``: a NumPy array (cpu) or an allocator block (cuda)."""

    __slots__ = ("data", "nbytes", "device", "__weakref__")

    def __init__(self, data, nbytes: int, device: Device):
        self.data = data
        self.nbytes = nbytes
        self.device = device

    def __reduce_ex__(self, proto):
        # plain pickle copies the bytes (cuda: through the host); multiprocessing's ForkingPickler moves them to
        # shared memory instead (tkernels/shared_memory.py registers that reduction)
        return _rebuild_storage, (_storage_bytes(self), str(self.device))


def _storage_bytes(st: Storage) -> bytes:
    """A copy of the storage's bytes on the host."""
    if st.nbytes == 0:
        return b""
    if st.device.type == "cpu":
        import ctypes

        data = st.data
        ptr = data.__array_interface__["data"][0] if isinstance(data, np.ndarray) else data.ptr
        return ctypes.string_at(ptr, st.nbytes)
    return _F.to_numpy(Array(st, (st.nbytes,), (1,), 0, _dt.uint8, st.device)).tobytes()


def _rebuild_storage(raw: bytes, device: str) -> Storage:
    dev = as_device(device)
    nd = np.frombuffer(bytearray(raw), np.uint8)  # bytearray: writable memory of its own
    if dev.type == "cpu":
        return Storage(nd, nd.nbytes, CPU)
    return _F.to_device(Array._wrap(nd), dev)._storage


def _rebuild_array(storage: Storage, shape, strides, offset, dtype: str, device: str) -> Array:
    return Array(storage, tuple(shape), tuple(strides), offset, _dt.as_dtype(dtype), as_device(device))


_STRIDES: dict = {}


def _contiguous_strides(shape) -> tuple[int, ...]:
    """Row-major element strides of ``shape`` (cached: shapes repeat in training loops)."""
    st = _STRIDES.get(shape)
    if st is not None:
        return st
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    st = tuple(reversed(strides))
    if len(_STRIDES) < 4096:
        _STRIDES[shape] = st
    return st


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class Array:
    """An n-dimensional array on a device (cpu or cuda), with NumPy/array-API semantics.

    Make one with ``tkernels.asarray``, ``zeros``, ``from_numpy``...; ``x.numpy()`` gives it back to NumPy.
    """

    __slots__ = ("_storage", "_shape", "_strides", "_offset", "_dtype", "_device", "_nd", "__weakref__")
    __array_priority__ = 1000  # ndarray (op) Array defers to Array's reflected operators
    __hash__ = object.__hash__  # identity, like torch.Tensor (== is elementwise)

    def __init__(self, storage: Storage, shape, strides, offset: int, dtype: _dt.DType, device: Device,
                 nd=None):
        self._storage = storage
        self._shape = shape
        self._strides = strides
        self._offset = offset
        self._dtype = dtype
        self._device = device
        self._nd = nd

    # -------------------------------------------------------------------------------- construction
    @classmethod
    def _wrap(cls, nd: np.ndarray, dtype: _dt.DType | None = None) -> Array:
        """A cpu Array owning a fresh NumPy result (no copy when it is C- or F-contiguous)."""
        if dtype is None:
            dtype = _dt._by_np.get(nd.dtype) or _dt.as_dtype(nd.dtype)
        shape = nd.shape
        if nd.flags.c_contiguous:
            return cls(Storage(nd, nd.nbytes, CPU), shape, _contiguous_strides(shape), 0, dtype, CPU, nd)
        if nd.flags.f_contiguous:
            isz = nd.itemsize
            return cls(Storage(nd.T, nd.nbytes, CPU), shape, tuple(s // isz for s in nd.strides), 0, dtype,
                       CPU, nd)
        return cls._from_numpy_view(nd, dtype)

    @classmethod
    def _from_numpy_view(cls, nd: np.ndarray, dtype: _dt.DType | None = None) -> Array:
        """A cpu Array sharing memory with any NumPy array (views, Fortran order, negative strides...).

        The storage is a flat view spanning the array's memory from its lowest address, so any layout whose
        strides are whole elements is described without a copy.
        """
        if dtype is None:
            dtype = _dt.as_dtype(nd.dtype)
        isz = nd.itemsize
        if nd.flags.c_contiguous:
            return cls._wrap(nd, dtype)
        if nd.size == 0 or any(s % isz for s in nd.strides):  # nothing to share, or not element strides
            return cls._wrap(np.array(nd, order="C"), dtype)
        low = nd[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in nd.strides)]
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(nd.shape, nd.strides)) // isz
        flat = np.lib.stride_tricks.as_strided(low, shape=(span,), strides=(isz,), writeable=nd.flags.writeable)
        off = (nd.__array_interface__["data"][0] - low.__array_interface__["data"][0]) // isz
        return cls(Storage(flat, span * isz, CPU), nd.shape, tuple(s // isz for s in nd.strides), off, dtype, CPU,
                   nd)

    def __reduce_ex__(self, proto):
        # the storage is pickled once per pickle (memo), so views pickled together still share it when loaded
        return _rebuild_array, (self._storage, self._shape, self._strides, self._offset, self._dtype.name,
                                str(self._device))

    def _view(self, shape, strides, offset) -> Array:
        return Array(self._storage, shape, strides, offset, self._dtype, self._device)

    def _materialize(self) -> np.ndarray:
        """The NumPy view of a cpu Array (cached)."""
        if self._device.type != "cpu":
            raise RuntimeError(f"internal: NumPy view requested for an array on {self._device}; "
                               f"use .numpy() to copy it to the host")
        isz = self._dtype.itemsize
        nd = np.ndarray(self._shape, self._dtype.numpy, self._storage.data,
                        self._offset * isz if _prod(self._shape) else 0, tuple(s * isz for s in self._strides))
        self._nd = nd
        return nd

    # ----------------------------------------------------------------------------------- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return _prod(self._shape)

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return _prod(self._shape) * self._dtype.itemsize

    def stride(self, dim: int | None = None):
        """Element strides (like ``torch.Tensor.stride``); one dimension's when ``dim`` is given."""
        if dim is None:
            return self._strides
        return self._strides[normalize_axis(dim, self.ndim, "stride", "dim")]

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides (not bytes)."""
        return self._strides

    def storage_offset(self) -> int:
        return self._offset

    def data_ptr(self) -> int:
        """Address of the first element (device address on cuda); what Triton kernels receive."""
        data = self._storage.data
        if isinstance(data, np.ndarray):
            base = data.__array_interface__["data"][0]
        else:
            base = data.ptr
        return base + self._offset * self._dtype.itemsize

    def is_contiguous(self) -> bool:
        """True when the elements are laid out in row-major order without gaps (sizes 1 ignored; empty: True)."""
        if _prod(self._shape) == 0:
            return True
        acc = 1
        for s, st in zip(reversed(self._shape), reversed(self._strides)):
            if s != 1:
                if st != acc:
                    return False
                acc *= s
        return True

    @property
    def T(self) -> Array:  # noqa: N802
        """Reverse the dimensions (the array API allows only 2-D; like NumPy, any ndim is accepted)."""
        nd = self._nd  # a cpu array passes its NumPy view's transpose on (the backend would rebuild it)
        return Array(self._storage, self._shape[::-1], self._strides[::-1], self._offset, self._dtype,
                     self._device, None if nd is None else nd.T)

    @property
    def mT(self) -> Array:  # noqa: N802
        """Swap the last two dimensions (a view)."""
        return self.matrix_transpose()

    @property
    def mH(self) -> Array:  # noqa: N802
        """The conjugate transpose of the last two dimensions (a view for real arrays)."""
        t = self.matrix_transpose()
        return _F.conj(t) if self._dtype.kind == "c" else t

    # -------------------------------------------------------------------------------------- views
    def permute_dims(self, axes) -> Array:
        """A view with the dimensions in the order ``axes``."""
        n = len(self._shape)
        if len(axes) != n:
            raise OpValueError(f"permute_dims: axes {tuple(axes)} do not match the {n} dimension(s) of "
                               f"{describe(self)}")
        ax = tuple(axes)
        if sorted(ax) != list(range(n)):  # negative, repeated or out-of-range axes: the careful path
            ax = tuple(normalize_axis(a, n, "permute_dims", "axes") for a in axes)
            if len(set(ax)) != n:
                raise OpValueError(f"permute_dims: repeated axis in axes={tuple(axes)}")
        return self._view(tuple(self._shape[a] for a in ax), tuple(self._strides[a] for a in ax), self._offset)

    def matrix_transpose(self) -> Array:
        sh, st = self._shape, self._strides
        if len(sh) < 2:
            raise OpValueError(f"matrix_transpose: needs at least 2 dimensions, got {describe(self)}")
        nd = self._nd
        return Array(self._storage, sh[:-2] + (sh[-1], sh[-2]), st[:-2] + (st[-1], st[-2]), self._offset,
                     self._dtype, self._device, None if nd is None else nd.swapaxes(-1, -2))

    def swapaxes(self, axis1: int, axis2: int) -> Array:
        n = self.ndim
        a = normalize_axis(axis1, n, "swapaxes", "axis1")
        b = normalize_axis(axis2, n, "swapaxes", "axis2")
        perm = list(range(n))
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute_dims(perm)

    def moveaxis(self, source, destination) -> Array:
        n = self.ndim
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise OpValueError(f"moveaxis: source {source} and destination {destination} differ in length")
        src = [normalize_axis(a, n, "moveaxis", "source") for a in src]
        dst = [normalize_axis(a, n, "moveaxis", "destination") for a in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise OpValueError(f"moveaxis: repeated axis in source {source} or destination {destination}")
        if n == 0:  # a 0-d array takes axis 0 and -1 (normalize_axis): nothing moves
            return self.permute_dims(())
        order = [a for a in range(n) if a not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return self.permute_dims(order)

    def broadcast_to(self, shape) -> Array:
        """A read-only-in-spirit view repeating size-1 dimensions (stride 0), NumPy rules."""
        shape = shape_tuple("broadcast_to", shape)
        n, m = len(shape), self.ndim
        if n < m:
            raise OpValueError(f"broadcast_to: cannot broadcast {describe(self)} to shape {shape} with fewer "
                               f"dimensions")
        strides = [0] * (n - m)
        for i, (s, st) in enumerate(zip(self._shape, self._strides)):
            t = shape[n - m + i]
            if s == t:
                strides.append(st)
            elif s == 1:
                strides.append(0)
            else:
                raise OpValueError(f"broadcast_to: cannot broadcast {describe(self)} to shape {shape}: "
                                   f"dimension {i} has size {s}, expected {t} or 1")
        return self._view(shape, tuple(strides), self._offset)

    def expand(self, *shape) -> Array:
        """PyTorch ``expand``: ``-1`` keeps a dimension."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        m = self.ndim
        k = len(shape) - m
        if k < 0:
            raise OpValueError(f"expand: the number of sizes {len(shape)} is smaller than the number of "
                               f"dimensions {m} of {describe(self)}")
        shape = tuple(self._shape[i - k] if s == -1 and i >= k else s for i, s in enumerate(shape))
        return self.broadcast_to(shape)

    def reshape(self, *shape, copy: bool | None = None) -> Array:
        """A view when the strides allow it (PyTorch's rule), else a contiguous copy; one ``-1`` is inferred."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        shape = self._infer_shape("reshape", shape)
        if copy is not True:
            strides = _view_strides(self._shape, self._strides, shape)
            if strides is not None:
                return self._view(shape, strides, self._offset)
            if copy is False:
                raise OpValueError(f"reshape: cannot reshape {describe(self)} to {shape} without copying "
                                   f"(copy=False)")
        c = _F.copy(self) if _prod(self._shape) else _F.empty(shape, dtype=self._dtype, device=self._device)
        return c._view(shape, _contiguous_strides(shape), c._offset)

    def view(self, *shape) -> Array:
        """Like ``reshape`` but never copies (PyTorch ``view``); a RuntimeError when the strides forbid it."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        shape = self._infer_shape("view", shape)
        strides = _view_strides(self._shape, self._strides, shape)
        if strides is None:
            raise RuntimeError(f"view: the shape {shape} is not compatible with the strides {self._strides} of "
                               f"{describe(self)}; hint: use .reshape(...) instead")
        return self._view(shape, strides, self._offset)

    def _infer_shape(self, op, shape) -> tuple[int, ...]:
        size = _prod(self._shape)
        if type(shape) is tuple and _prod(shape) == size and all(type(s) is int and s >= 0 for s in shape):
            return shape  # the hot case: an explicit, valid shape
        shape = tuple(operator.index(s) for s in shape)
        if shape.count(-1) > 1:
            raise OpValueError(f"{op}: only one dimension can be -1, got {shape}")
        if any(s < -1 for s in shape):
            raise OpValueError(f"{op}: invalid shape {shape}")
        if -1 in shape:
            rest = _prod(s for s in shape if s != -1)
            if rest == 0 or size % rest:
                raise OpValueError(f"{op}: cannot reshape {describe(self)} ({size} elements) into shape {shape}")
            shape = tuple(size // rest if s == -1 else s for s in shape)
        if _prod(shape) != size:
            raise OpValueError(f"{op}: cannot reshape {describe(self)} ({size} elements) into shape {shape} "
                               f"({_prod(shape)} elements)")
        return shape

    def flatten(self, start_axis: int = 0, end_axis: int = -1) -> Array:
        """Merge dimensions ``start_axis..end_axis`` into one (a view when possible)."""
        n = self.ndim
        if n == 0:
            return self.reshape((1,))
        a = normalize_axis(start_axis, n, "flatten", "start_axis")
        b = normalize_axis(end_axis, n, "flatten", "end_axis")
        if a > b:
            raise OpValueError(f"flatten: start_axis {start_axis} comes after end_axis {end_axis}")
        sh = self._shape
        return self.reshape(sh[:a] + (_prod(sh[a:b + 1]),) + sh[b + 1:])

    def unflatten(self, axis: int, sizes) -> Array:
        """Split dimension ``axis`` into ``sizes`` (one may be -1)."""
        n = self.ndim
        a = normalize_axis(axis, n, "unflatten")
        sizes = tuple(sizes)
        d = self._shape[a]
        if -1 in sizes:
            rest = _prod(s for s in sizes if s != -1)
            if rest == 0 or d % rest:
                raise OpValueError(f"unflatten: sizes {sizes} do not divide dimension {a} of size {d}")
            sizes = tuple(d // rest if s == -1 else s for s in sizes)
        if _prod(sizes) != d:
            raise OpValueError(f"unflatten: sizes {sizes} multiply to {_prod(sizes)}, but dimension {a} of "
                               f"{describe(self)} has size {d}")
        return self.reshape(self._shape[:a] + sizes + self._shape[a + 1:])

    def squeeze(self, axis=None) -> Array:
        """Drop size-1 dimensions (all of them, or ``axis``: an error when one is not size 1)."""
        if axis is None:
            keep = [i for i, s in enumerate(self._shape) if s != 1]
        else:
            ax = normalize_axes(axis, self.ndim, "squeeze")
            for a in ax:
                if self._shape[a] != 1:
                    raise OpValueError(f"squeeze: cannot squeeze axis {a} of size {self._shape[a]} in "
                                       f"{describe(self)}")
            keep = [i for i in range(self.ndim) if i not in ax]
        return self._view(tuple(self._shape[i] for i in keep), tuple(self._strides[i] for i in keep),
                          self._offset)

    def expand_dims(self, axis=0) -> Array:
        """Insert size-1 dimensions at ``axis`` (an int or a tuple, positions in the result)."""
        axes = axis if isinstance(axis, tuple | list) else (axis,)
        n = self.ndim + len(axes)
        ax = sorted(normalize_axis(a, n, "expand_dims") for a in axes)
        if len(set(ax)) != len(ax):
            raise OpValueError(f"expand_dims: repeated axis in {axis}")
        sh, st = list(self._shape), list(self._strides)
        for a in ax:
            sh.insert(a, 1)
            st.insert(a, st[a] * sh[a + 1] if a < len(st) else 1)
        return self._view(tuple(sh), tuple(st), self._offset)

    unsqueeze = expand_dims

    # ----------------------------------------------------------------------------------- indexing
    def __getitem__(self, key) -> Array:
        key = key if type(key) is tuple else (key,)
        for k in key:
            if not (k is None or k is Ellipsis or type(k) is slice or type(k) is int):
                if isinstance(k, Array | list | range | np.ndarray | bool | np.bool_) or (
                        hasattr(k, "__dlpack__") or hasattr(k, "__array__")) and not hasattr(k, "__index__"):
                    return _F.getitem_advanced(self, key)
        return self._basic_index(key)

    def _basic_index(self, key) -> Array:
        n = self.ndim
        consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
        if consumed > n:
            raise IndexError(f"index: too many indices for an array of {n} dimension(s): {consumed} were "
                             f"indexed (key {key!r}, {describe(self)})")
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise IndexError("index: an index can only have a single ellipsis ('...')")
        shape, strides = [], []
        off = self._offset
        d = 0
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
            elif k is Ellipsis:
                for _ in range(n - consumed):
                    shape.append(self._shape[d])
                    strides.append(self._strides[d])
                    d += 1
            elif type(k) is slice:
                size = self._shape[d]
                if k.step == 0:
                    raise OpValueError("index: slice step cannot be zero")
                start, stop, step = k.indices(size)
                length = len(range(start, stop, step))
                if length:
                    off += start * self._strides[d]
                shape.append(length)
                strides.append(self._strides[d] * step)
                d += 1
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise IndexError(f"index: only integers, slices, None, Ellipsis, and integer or boolean "
                                     f"arrays are valid indices, got {type(k).__name__} {k!r}") from None
                size = self._shape[d]
                if not -size <= i < size:
                    raise IndexError(f"index: index {i} is out of bounds for axis {d} with size {size} "
                                     f"({describe(self)})")
                off += (i % size) * self._strides[d]
                d += 1
        while d < n:
            shape.append(self._shape[d])
            strides.append(self._strides[d])
            d += 1
        return self._view(tuple(shape), tuple(strides), off)

    def __setitem__(self, key, value) -> None:
        key = key if type(key) is tuple else (key,)
        for k in key:
            if not (k is None or k is Ellipsis or type(k) is slice or type(k) is int):
                if isinstance(k, Array | list | range | np.ndarray | bool | np.bool_) or (
                        hasattr(k, "__array__") and not hasattr(k, "__index__")):
                    _F.setitem_advanced(self, key, value)
                    return
        _F.copy_into(self._basic_index(key), value, op="setitem")

    # ------------------------------------------------------------------------------ conversions
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array: a zero-copy view on cpu, a device-to-host copy on cuda."""
        if _capture.GRAPH is not None:
            _capture.check_host_read(self, "numpy")
        if self._device.type == "cpu":
            nd = self._nd
            return nd if nd is not None else self._materialize()
        return _F.to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        if copy is False and self._device.type != "cpu":
            raise OpValueError(f"__array__: a {self._device} array cannot be viewed by NumPy without a copy "
                               f"(copy=False); use copy=None or .numpy()")
        nd = self.numpy()
        if dtype is not None and np.dtype(dtype) != nd.dtype:
            if copy is False:
                raise OpValueError(f"__array__: converting {self._dtype} to {np.dtype(dtype)} needs a copy")
            return nd.astype(dtype)
        return nd.copy() if copy else nd

    def tolist(self):
        """Nested Python lists of Python scalars (a Python scalar for 0-d)."""
        nd = self.numpy()
        if self._dtype in (_dt.bfloat16,):
            nd = nd.astype(np.float32)
        return nd.tolist()

    def item(self):
        """The single element as a Python scalar."""
        if _prod(self._shape) != 1:
            raise OpValueError(f"item: only arrays with one element can be converted to a Python scalar, got "
                               f"{describe(self)}")
        nd = self.numpy()
        if self._dtype is _dt.bfloat16:  # ml_dtypes' scalar: through float32 to a Python float
            return nd.reshape(()).astype(np.float32).item()
        return nd.item()

    def __bool__(self) -> bool:
        if _prod(self._shape) != 1:
            raise OpValueError(f"__bool__: the truth value of an array with {self.size} elements is ambiguous "
                               f"({describe(self)}); hint: use any() or all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar("__float__"))

    def __int__(self) -> int:
        return int(self._scalar("__int__"))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise OpTypeError(f"__index__: only integer arrays can be used as an index, got {describe(self)}")
        return int(self._scalar("__index__"))

    def __complex__(self) -> complex:
        return complex(self._scalar("__complex__"))

    def _scalar(self, op):
        if _prod(self._shape) != 1:
            raise OpTypeError(f"{op}: only arrays with one element can be converted to Python scalars, got "
                              f"{describe(self)}")
        return self.item()

    def __len__(self) -> int:
        if not self._shape:
            raise OpTypeError(f"len() of a 0-d array ({describe(self)})")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise OpTypeError(f"iteration over a 0-d array ({describe(self)})")
        for i in range(self._shape[0]):
            yield self._basic_index((i,))

    def __array_namespace__(self, api_version=None):
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise OpValueError(f"__array_namespace__: unsupported array API version {api_version!r}")
        return sys.modules["tkernels"]

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _F.dlpack_export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return (1, 0) if self._device.type == "cpu" else (2, self._device.index or 0)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (v3) of a cuda array; cpu arrays have none (``hasattr`` is False)."""
        if self._device.type == "cpu":
            raise AttributeError("__cuda_array_interface__: only cuda arrays have one; this array is on cpu")
        from .copying import cuda_array_interface

        return cuda_array_interface(self)

    def to(self, device=None, dtype=None, *, copy: bool = False, non_blocking: bool = False) -> Array:
        """This array on ``device`` and/or as ``dtype``; itself when nothing changes and ``copy`` is False."""
        x = self
        if device is not None:
            dev = as_device(device)
            if dev != x._device:
                x = _F.to_device(x, dev, non_blocking=non_blocking)
                copy = False
        if dtype is not None:
            x = x.astype(dtype, copy=copy)
            copy = False
        return _F.copy(x) if copy else x

    def to_device(self, device, /, *, stream=None) -> Array:
        """Array API ``to_device``: this array on ``device`` (itself when already there). ``stream`` orders the
        copy on a cuda stream of the cuda device involved: a ``tkernels.cuda.Stream``, or an int as in
        ``__dlpack__`` (1: legacy default, 2: per-thread default, others: a ``CUstream``); None: the current one."""
        if device is None:
            raise OpTypeError(f"to_device: device must be a device like 'cpu' or 'cuda:0', got None (array "
                              f"{describe(self)}); hint: x.device keeps it where it is")
        return _F.to_device(self, device, stream=stream)

    def astype(self, dtype, *, copy: bool = True) -> Array:
        return _F.astype(self, dtype, copy=copy)

    def copy(self) -> Array:
        return _F.copy(self)

    def contiguous(self) -> Array:
        """Itself when row-major contiguous, else a contiguous copy."""
        return self if self.is_contiguous() else _F.copy(self)

    def pin_memory(self) -> Array:
        """A copy of this cpu array in page-locked memory (fast asynchronous copies to cuda)."""
        return _F.pin_memory(self)

    def is_pinned(self) -> bool:
        return getattr(self._storage, "pinned", False)

    def cpu(self) -> Array:
        return self.to("cpu")

    def cuda(self, device=None) -> Array:
        return self.to(Device("cuda") if device is None else Device("cuda", device) if isinstance(device, int)
                       else device)

    # ---------------------------------------------------------------------------------- printing
    def __repr__(self) -> str:
        nd = self.numpy() if self._device.type == "cpu" else _F.to_numpy(self)
        if self._dtype is _dt.bfloat16:
            nd = nd.astype(np.float32)
        body = np.array2string(nd, separator=", ", prefix="Array(", threshold=1000)
        return f"Array({body}, dtype={self._dtype}, device={self._device})"

    def __str__(self) -> str:
        nd = self.numpy() if self._device.type == "cpu" else _F.to_numpy(self)
        if self._dtype is _dt.bfloat16:
            nd = nd.astype(np.float32)
        return str(nd)

    def __format__(self, spec):
        if not self._shape:
            return format(self.item(), spec)
        return format(str(self), spec)

    # -------------------------------------------------------------------------------- operators
    def __add__(self, o):
        return _F.add(self, o)

    def __radd__(self, o):
        return _F.add(o, self)

    def __iadd__(self, o):
        return _F.add(self, o, out=self)

    def __sub__(self, o):
        return _F.subtract(self, o)

    def __rsub__(self, o):
        return _F.subtract(o, self)

    def __isub__(self, o):
        return _F.subtract(self, o, out=self)

    def __mul__(self, o):
        return _F.multiply(self, o)

    def __rmul__(self, o):
        return _F.multiply(o, self)

    def __imul__(self, o):
        return _F.multiply(self, o, out=self)

    def __truediv__(self, o):
        return _F.divide(self, o)

    def __rtruediv__(self, o):
        return _F.divide(o, self)

    def __itruediv__(self, o):
        return _F.divide(self, o, out=self)

    def __floordiv__(self, o):
        return _F.floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _F.floor_divide(o, self)

    def __ifloordiv__(self, o):
        return _F.floor_divide(self, o, out=self)

    def __mod__(self, o):
        return _F.remainder(self, o)

    def __rmod__(self, o):
        return _F.remainder(o, self)

    def __imod__(self, o):
        return _F.remainder(self, o, out=self)

    def __pow__(self, o):
        return _F.pow(self, o)

    def __rpow__(self, o):
        return _F.pow(o, self)

    def __ipow__(self, o):
        return _F.pow(self, o, out=self)

    def __matmul__(self, o):
        return _F.matmul(self, o)

    def __rmatmul__(self, o):
        return _F.matmul(o, self)

    def __imatmul__(self, o):
        return _F.matmul(self, o, out=self)

    def __and__(self, o):
        return _F.bitwise_and(self, o)

    def __rand__(self, o):
        return _F.bitwise_and(o, self)

    def __iand__(self, o):
        return _F.bitwise_and(self, o, out=self)

    def __or__(self, o):
        return _F.bitwise_or(self, o)

    def __ror__(self, o):
        return _F.bitwise_or(o, self)

    def __ior__(self, o):
        return _F.bitwise_or(self, o, out=self)

    def __xor__(self, o):
        return _F.bitwise_xor(self, o)

    def __rxor__(self, o):
        return _F.bitwise_xor(o, self)

    def __ixor__(self, o):
        return _F.bitwise_xor(self, o, out=self)

    def __lshift__(self, o):
        return _F.bitwise_left_shift(self, o)

    def __rlshift__(self, o):
        return _F.bitwise_left_shift(o, self)

    def __ilshift__(self, o):
        return _F.bitwise_left_shift(self, o, out=self)

    def __rshift__(self, o):
        return _F.bitwise_right_shift(self, o)

    def __rrshift__(self, o):
        return _F.bitwise_right_shift(o, self)

    def __irshift__(self, o):
        return _F.bitwise_right_shift(self, o, out=self)

    def __neg__(self):
        return _F.negative(self)

    def __pos__(self):
        return _F.positive(self)

    def __abs__(self):
        return _F.abs(self)

    def __invert__(self):
        return _F.bitwise_invert(self)

    def __eq__(self, o):  # noqa: D105
        return _F.equal(self, o)

    def __ne__(self, o):
        return _F.not_equal(self, o)

    def __lt__(self, o):
        return _F.less(self, o)

    def __le__(self, o):
        return _F.less_equal(self, o)

    def __gt__(self, o):
        return _F.greater(self, o)

    def __ge__(self, o):
        return _F.greater_equal(self, o)


def _view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing (old_shape, old_strides) as new_shape without a copy, or None (PyTorch's rule)."""
    if old_shape == new_shape:
        return old_strides
    numel = _prod(old_shape)
    if numel == 0 or not old_shape:
        return _contiguous_strides(new_shape)
    # group old dims into contiguous chunks and match them with new dims
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
