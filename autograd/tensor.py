"""``Tensor``: a tkernels Array plus what autograd needs (``requires_grad``, ``grad``, ``grad_fn``, a version
counter shared with views). Operators and methods call the differentiable functions of ``autograd.ops``;
most methods are installed from there by ``autograd.methods`` (one definition per op)."""

from __future__ import annotations

import weakref

import numpy as np

import tkernels as tk
from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.device import as_device
from tkernels.validation import OpTypeError

from . import graph as _graph
from .grad_mode import STATE

__all__ = ["Tensor"]

_ops = None  # autograd.ops, set by autograd/__init__.py
_engine = None  # autograd.engine, imported on the first backward()


class _VC:
    """A version counter, shared by a tensor and its views; in-place writes bump it."""

    __slots__ = ("v",)

    def __init__(self):
        self.v = 0

    # PyTorch's ``x._version`` is an int: compare, convert and print like one (``.v`` is the value).
    __hash__ = object.__hash__

    def __int__(self):
        return self.v

    __index__ = __int__

    def __eq__(self, other):
        return self.v == other if isinstance(other, int) else self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return self.v < int(other)

    def __le__(self, other):
        return self.v <= int(other)

    def __gt__(self, other):
        return self.v > int(other)

    def __ge__(self, other):
        return self.v >= int(other)

    def __repr__(self):
        return str(self.v)


def _as_dtype(d):
    return d if isinstance(d, _dt.DType) else _dt.as_dtype(d)


def _legacy_data(args, device, name, dtype=None) -> Array:
    if len(args) == 1 and isinstance(args[0], Tensor | Array) and dtype is None:
        data = args[0]._data if isinstance(args[0], Tensor) else args[0]
        return data if device is None else data.to(device)
    dtype = _dt.get_default_dtype() if dtype is None else dtype
    if not args or (len(args) == 1 and isinstance(args[0], Size)):  # Size: defined below, looked up at call time
        shape = args[0] if args else (0,)
        return tk.zeros(tuple(shape), dtype=dtype, device=device)
    if all(isinstance(a, int | np.integer) and not isinstance(a, bool) for a in args):
        if len(args) > 1 or not isinstance(args[0], np.ndarray):
            if any(a < 0 for a in args):
                raise RuntimeError(f"{name}(): negative dimension in sizes {list(args)}")
            return tk.zeros(tuple(int(a) for a in args), dtype=dtype, device=device)
    if len(args) != 1:
        raise OpTypeError(f"{name}(): expected sizes (ints) or one sequence of data, got "
                          f"{', '.join(type(a).__name__ for a in args)}; hint: ag.tensor(data, dtype=...) builds a "
                          f"tensor from data with its own dtype")
    data = args[0]
    if isinstance(data, Tensor | Array):
        return tk.astype(data._data if isinstance(data, Tensor) else data, dtype).to(device or data.device)
    if isinstance(data, str | bytes | dict) or data is None:
        raise OpTypeError(f"{name}(): new(): data must be a sequence (got {type(data).__name__})")
    return tk.asarray(data, dtype=dtype, device=device)


class Tensor:
    """An n-dimensional array that can record the operations applied to it for reverse-mode autograd."""

    __array_priority__ = 1001
    __hash__ = object.__hash__

    _grad_fn = None
    _output_nr = 0
    _requires_grad = False
    _base = None
    _view_fn = None
    _view_ver = 0
    _hooks = None
    _post_acc_hooks = None
    _acc = None
    _inference = False
    _retains = False
    grad = None

    def __init__(self, *args, requires_grad: bool = False, device=None):
        """PyTorch's legacy constructor: ``Tensor()`` (empty), ``Tensor(2, 3)`` or ``Tensor(ag.Size([2, 3]))``
        (that shape, zero-filled), ``Tensor(data)`` (a copy as the default float dtype). A Tensor or a tkernels
        Array is wrapped as it is, sharing its memory (``ag.Tensor(array)`` is how a custom kernel's output
        becomes a Tensor)."""
        data = _legacy_data(args, device, type(self).__name__)
        self._data = data
        self._version = _VC()
        if STATE.inference:
            self._inference = True
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _make(cls, array, node, nr):
        t = object.__new__(Tensor)
        t._data = array
        t._version = _VC()
        t._grad_fn = node
        t._output_nr = nr
        t._requires_grad = True
        return t

    @classmethod
    def _wrap(cls, array):
        t = object.__new__(Tensor)
        t._data = array
        t._version = _VC()
        if STATE.inference:
            t._inference = True
        return t

    # ------------------------------------------------------------------------------------ autograd
    @property
    def grad_fn(self):
        b = self._base
        if b is not None and self._view_ver != self._version.v:
            self._regen()
        return self._grad_fn

    def _regen(self):
        """A view whose base was written in place takes its history from the base again."""
        b = self._base
        self._view_ver = self._version.v
        if b._requires_grad:
            prev = STATE.grad_enabled
            STATE.grad_enabled = True
            try:
                v = self._view_fn(b)
            finally:
                STATE.grad_enabled = prev
            if v._grad_fn is not None:
                self._grad_fn = v._grad_fn
                self._output_nr = 0
                self._requires_grad = True

    def _edge(self):
        fn = self.grad_fn
        if fn is not None:
            return (fn, self._output_nr)
        acc = self._acc() if self._acc is not None else None
        if acc is None:
            acc = _graph.AccumulateGrad(self)
            self._acc = weakref.ref(acc)
        return (acc, 0)

    @property
    def requires_grad(self) -> bool:
        b = self._base
        if b is not None and self._view_ver != self._version.v:
            self._regen()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        value = bool(value)
        if not value and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients (got "
                               f"{self.dtype}, shape {list(self.shape)})")
        if value and self._inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not "
                               "allowed. Hint: clone() it first")
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains:
            return
        node = self._grad_fn
        if node._retain is None:
            node._retain = {}
        node._retain[self._output_nr] = weakref.ref(self)
        self._retains = True

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; a non-None result replaces it.
        Returns a handle with ``remove()``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is None:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            return _graph._RemovableHandle(self._hooks, hook)
        return fn._add_pre_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return _graph._RemovableHandle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor with respect to the graph's leaves into their ``.grad``."""
        global _engine
        engine = _engine
        if engine is None:
            from . import engine as _engine
            engine = _engine
        engine.backward(self, None if gradient is None else [gradient], retain_graph, create_graph,
                        inputs if inputs is None or not isinstance(inputs, Tensor) else [inputs])

    def detach(self) -> Tensor:
        """The same data, cut from the graph (shares storage and version counter)."""
        t = Tensor._wrap(self._data)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        if self._base is not None and self._requires_grad:
            raise RuntimeError("detach_(): can't detach views in-place. Use detach() instead")
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        return Tensor._wrap(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise OpTypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data

    def _owned(self) -> Tensor:
        """A copy with its own contiguous storage (what ``.grad`` holds)."""
        return Tensor._wrap(tk.copy(self._data))

    def _accumulate_(self, other: Tensor) -> None:
        tk.add(self._data, other._data, out=self._data)
        self._version.v += 1

    def _data_fill_(self, value) -> None:
        tk.copy_into(self._data, value, op="fill_")
        self._version.v += 1

    @property
    def _version_value(self) -> int:
        return self._version.v

    # ------------------------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def device(self):
        return self._data.device

    @property
    def is_cuda(self) -> bool:
        return self._data.device.type == "cuda"

    # the other backends PyTorch names: never, here (scripts test them to pick a device)
    is_xpu = is_mps = is_meta = is_vulkan = is_ipu = is_hpu = is_mkldnn = is_quantized = property(lambda self: False)
    is_sparse = property(lambda self: False)  # (sparse COO tensors are autograd.sparse.SparseCooTensor)

    @property
    def layout(self):
        from .sparse.layout import strided

        return strided

    def to_sparse(self, sparse_dim=None):
        """This tensor in COO layout: its nonzeros (the first ``sparse_dim`` dims sparse, the rest dense values;
        default all); differentiable with respect to this tensor's values at the nonzeros."""
        from .sparse import SparseCooTensor

        n = self._data.ndim
        sd = n if sparse_dim is None else int(sparse_dim)
        if not 0 < sd <= n:
            raise RuntimeError(f"to_sparse(): sparse_dim must be in [1, {n}] for a tensor of shape {list(self.shape)}"
                               f", got {sparse_dim}")
        mask = self if sd == n else self.reshape(tuple(self.shape[:sd]) + (-1,)).ne(0).any(-1)
        idx = mask.ne(0).nonzero().t() if mask.dtype is not _dt.bool else mask.nonzero().t()
        values = self[tuple(idx[d] for d in range(sd))]
        return SparseCooTensor(idx, values, tuple(self.shape), True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None else self.to(dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        return self._data.stride(dim)

    def storage_offset(self) -> int:
        return self._data.storage_offset()

    def data_ptr(self) -> int:
        return self._data.data_ptr()

    def is_contiguous(self) -> bool:
        return self._data.is_contiguous()

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    @property
    def is_inference(self):
        return lambda: self._inference

    def get_device(self) -> int:
        d = self._data.device
        return -1 if d.type == "cpu" else d.index

    # --------------------------------------------------------------------------- host conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy view (cpu) of the data. Refused when grad is required (use ``detach()``) and for cuda
        tensors (use ``cpu()``), unless ``force=True`` (then detached, copied to the host)."""
        if force:
            return self._data.numpy()
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if self._data.device.type != "cpu":
            raise OpTypeError(f"can't convert {self._data.device} device type tensor to numpy. Use Tensor.cpu() to "
                              f"copy the tensor to host memory first.")
        return self._data.numpy()

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._data.__array__(dtype=dtype, copy=copy)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar "
                               f"(shape {list(self.shape)}). Hint: item() needs exactly one element")
        return self._data.item()  # (any shape of one element: no 0-d view needed)

    def tolist(self):
        return self._data.tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(shape {list(self.shape)})")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise OpTypeError(f"only integer tensors of a single element can be converted to an index "
                              f"(got {self.dtype}, shape {list(self.shape)})")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise OpTypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise OpTypeError("iteration over a 0-d tensor")
        return iter(_ops.unbind(self, 0))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't export a Tensor that requires grad via DLPack; use tensor.detach() first")
        return self._data.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        if self._requires_grad:
            raise RuntimeError("Can't export a Tensor that requires grad via __cuda_array_interface__; use "
                               "tensor.detach() first")
        return self._data.__cuda_array_interface__

    # ---------------------------------------------------------------------------- device and dtype
    def to(self, *args, **kwargs) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``non_blocking``, ``copy``.
        Returns ``self`` when nothing changes (unless ``copy=True``). Differentiable."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        non_blocking = kwargs.pop("non_blocking", False)
        copy = kwargs.pop("copy", False)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise OpTypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _dt.DType) or (isinstance(a, str) and a in _dt._by_name):
                dtype = a
            elif isinstance(a, (str, int)) or hasattr(a, "type"):
                device = a
            elif a is None:
                continue
            else:
                dtype = a
        return _ops.to_copy(self, device=None if device is None else as_device(device),
                            dtype=None if dtype is None else _as_dtype(dtype), non_blocking=non_blocking, copy=copy)

    def type(self, dtype=None):
        if dtype is None:
            return f"autograd.{self.dtype}"
        return self.to(dtype=dtype)

    def cuda(self, device=None, non_blocking: bool = False) -> Tensor:
        return self.to(device=as_device("cuda" if device is None else
                                        (f"cuda:{device}" if isinstance(device, int) else device)),
                       non_blocking=non_blocking)

    def cpu(self) -> Tensor:
        return self.to(device="cpu")

    def float(self) -> Tensor:  # noqa: A003
        return self.to(dtype=_dt.float32)

    def double(self) -> Tensor:
        return self.to(dtype=_dt.float64)

    def half(self) -> Tensor:
        return self.to(dtype=_dt.float16)

    def bfloat16(self) -> Tensor:
        return self.to(dtype=_dt.bfloat16)

    def long(self) -> Tensor:
        return self.to(dtype=_dt.int64)

    def int(self) -> Tensor:  # noqa: A003
        return self.to(dtype=_dt.int32)

    def short(self) -> Tensor:
        return self.to(dtype=_dt.int16)

    def char(self) -> Tensor:
        return self.to(dtype=_dt.int8)

    def byte(self) -> Tensor:
        return self.to(dtype=_dt.uint8)

    def bool(self) -> Tensor:  # noqa: A003
        return self.to(dtype=_dt.bool)

    def pin_memory(self) -> Tensor:
        t = Tensor._wrap(self._data.pin_memory())
        return t

    def is_pinned(self) -> bool:
        return self._data.is_pinned()

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from . import factory

        return factory.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                              requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        from . import factory

        return factory.zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        from . import factory

        return factory.ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        from . import factory

        return factory.empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                             requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        from . import factory

        return factory.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)

    # ------------------------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        return _format(self)

    def __str__(self) -> str:
        return _format(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment. Hint: detach() it first")
        t = type(self).__new__(type(self))
        t.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("_data", "_version", "grad")})
        t._data = tk.copy(self._data)
        t._version = _VC()
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, proto):
        # PyTorch's pickling: the data (a copy; shared memory through autograd.multiprocessing), the type (a
        # Parameter stays one), requires_grad and the Python attributes; not .grad, the graph or hooks. A non-leaf
        # loads as a leaf, as in PyTorch.
        if self._hooks:
            import warnings

            warnings.warn("pickling a Tensor drops its backward hooks (they are not serialized)", UserWarning,
                          stacklevel=2)
        return _rebuild_tensor, (type(self), self._data, self._requires_grad, _pickled_state(self))

    def share_memory_(self) -> Tensor:
        """Move the storage to shared memory (cpu; a no-op on cuda), in place, for every view of it."""
        from tkernels import shared_memory

        shared_memory.share_memory_(self._data)
        return self

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory (cuda tensors: always, as in PyTorch: CUDA IPC shares them)."""
        from tkernels import shared_memory

        return shared_memory.is_shared(self._data)


# what __init__, _wrap and autograd keep in a tensor's __dict__: not pickled (the rest, a subclass's or a user's
# attributes, is)
_UNPICKLED = frozenset(("_data", "_version", "grad", "_grad_fn", "_output_nr", "_requires_grad", "_base", "_view_fn",
                        "_view_ver", "_hooks", "_post_acc_hooks", "_acc", "_inference", "_retains"))


def _pickled_state(t) -> dict:
    return {k: v for k, v in t.__dict__.items() if k not in _UNPICKLED}


def _rebuild_tensor(cls, array, requires_grad, state):
    t = cls.__new__(cls)
    t._data = array
    t._version = _VC()
    if requires_grad:
        t._requires_grad = True
    if state:
        t.__dict__.update(state)
    return t


class Size(tuple):
    """``tensor.shape``: a tuple that prints like PyTorch's ``Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"autograd.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


def _dim(d, ndim, op):
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                         f"{d})")
    return d % n


_LINEWIDTH = 80  # (set by autograd.set_printoptions)
_THRESHOLD = 1000
_EDGEITEMS = 3
_PRECISION = 4
_SCI_MODE = None  # True/False: scientific notation forced on/off; None: chosen per tensor


class _Formatter:
    """PyTorch's element formatter: integers-valued floats print as ``1.``, others with 4 decimals, or
    in scientific notation when the magnitudes span more than 1000x (or pass 1e8, or go below 1e-4); all
    elements are right-aligned to a common width."""

    def __init__(self, nd):
        self.floating = nd.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = nd.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        lo, hi = float(absv.min()), float(absv.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        big = hi / lo > 1000.0 or hi > 1.0e8
        if self.int_mode:
            if big:
                self.sci_mode = True
                fmt = f"{{:.{_PRECISION}e}}"
                self.max_width = max(len(fmt.format(v)) for v in vals.tolist())
            else:
                self.max_width = max(len(f"{v:.0f}") + 1 for v in vals.tolist())
        else:
            self.sci_mode = big or lo < 1.0e-4
            fmt = f"{{:.{_PRECISION}e}}" if self.sci_mode else f"{{:.{_PRECISION}f}}"
            self.max_width = max(len(fmt.format(v)) for v in vals.tolist())
        if _SCI_MODE is not None and _SCI_MODE != self.sci_mode:  # (set_printoptions(sci_mode=...))
            self.sci_mode = _SCI_MODE
            if self.sci_mode:
                self.max_width = max(len(f"{v:.{_PRECISION}e}") for v in vals.tolist())
            elif self.int_mode:
                self.max_width = max(len(f"{v:.0f}") + 1 for v in vals.tolist())
            else:
                self.max_width = max(len(f"{v:.{_PRECISION}f}") for v in vals.tolist())

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                r = f"{v:{self.max_width}.{_PRECISION}e}"
            elif self.int_mode:
                r = f"{v:.0f}"
                if v == v and v not in (float("inf"), float("-inf")):
                    r += "."
            else:
                r = f"{v:.{_PRECISION}f}"
        else:
            r = str(v)
        return " " * (self.max_width - len(r)) + r


class _ComplexFormatter:
    """PyTorch's complex format: the real parts and the imaginary parts each get a ``_Formatter``; an element
    is ``real`` then the signed imaginary part and ``j`` (``1.0000+2.5000j``, ``0.-1.j``)."""

    def __init__(self, nd):
        self.re, self.im = _Formatter(nd.real), _Formatter(nd.imag)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, v) -> str:
        v = complex(v)
        im = (self.im.format(v.imag) + "j").lstrip()
        return self.re.format(v.real) + (im if im[0] in "+-" else "+" + im)  # (only the real part is padded)


def _vector_str(nd, indent, summarize, fmt):
    per_line = max(1, (_LINEWIDTH - indent) // (fmt.max_width + 2))
    if summarize and nd.shape[0] > 2 * _EDGEITEMS:
        data = ([fmt.format(v) for v in nd[:_EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in nd[-_EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in nd.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(nd, indent, summarize, fmt):
    if nd.ndim == 0:
        return fmt.format(nd.item())
    if nd.ndim == 1:
        return _vector_str(nd, indent, summarize, fmt)
    n = nd.shape[0]
    if summarize and n > 2 * _EDGEITEMS:
        slices = ([_tensor_str(nd[i], indent + 1, summarize, fmt) for i in range(_EDGEITEMS)] + ["..."]
                  + [_tensor_str(nd[i], indent + 1, summarize, fmt) for i in range(n - _EDGEITEMS, n)])
    else:
        slices = [_tensor_str(nd[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (nd.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(nd):
    """The edge elements PyTorch's formatter looks at when a large tensor is summarized."""
    if nd.ndim == 0:
        return nd
    if nd.shape[0] > 2 * _EDGEITEMS:
        nd = np.concatenate([nd[:_EDGEITEMS], nd[-_EDGEITEMS:]])
    if nd.ndim == 1:
        return nd
    return np.stack([_summarized(r) for r in nd])


def _format(t: Tensor) -> str:
    """``repr`` like PyTorch's: ``tensor([1.5000, 2.0000], device='cuda:0', grad_fn=<MulBackward0>)``."""
    a = t._data
    name = a.dtype.name
    indent = len("tensor(")
    extras = []
    if a.device.type != "cpu":
        extras.append(f"device='{a.device}'")
    default = _dt.get_default_dtype().name
    if a.size == 0:
        body = "[]"
        if a.ndim != 1:
            extras.append(f"size={tuple(a.shape)}")
        if name != default:
            extras.append(f"dtype=autograd.{name}")
    else:
        nd = a.numpy()
        if name in ("bfloat16", "float16"):
            nd = nd.astype(np.float32)
        summarize = a.size > _THRESHOLD
        part = _summarized(nd) if summarize else nd
        fmt = _ComplexFormatter(part) if nd.dtype.kind == "c" else _Formatter(part)
        body = _tensor_str(nd, indent, summarize, fmt)
        if name not in (default, "int64", "bool", _dt.default_complex().name):
            extras.append(f"dtype=autograd.{name}")
    fn = t.grad_fn
    if fn is not None:
        extras.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


_graph.Tensor = Tensor
_graph._make = Tensor._make
