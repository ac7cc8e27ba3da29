"""Views and data movement that keep values: clone, to, reshape/view, permute, transpose, expand,
squeeze/unsqueeze, flatten/unflatten, movedim, indexing (``x[key]`` and ``x[key] = v``), select, narrow,
unbind/split/chunk, diagonal. A view shares storage and version counter with its input."""

from __future__ import annotations

import numpy as np

import tkernels as tk
from tkernels.array import Array
from tkernels.validation import OpTypeError, names_op

from ..grad_mode import STATE
from ..tensor import _dim
from ._base import Node, Tensor, data, inplace, needs_grad, record, sum_to, view_result, wrap

__all__ = ["clone", "contiguous", "to_copy", "reshape", "view", "view_as", "reshape_as", "permute", "transpose",
           "swapaxes", "swapdims", "t", "T", "mT", "expand", "expand_as", "broadcast_to", "squeeze", "unsqueeze",
           "flatten", "unflatten", "movedim", "moveaxis", "getitem", "setitem", "select", "narrow", "unbind",
           "split", "chunk", "tensor_split", "diagonal", "copy_", "index_backward", "as_strided",
           "detach_copy", "alias", "index_put"]


def _shape_arg(op, shape):
    if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
        shape = shape[0]
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise OpTypeError(f"{op}(): shape must be a sequence of ints, got {shape!r}") from None


# ------------------------------------------------------------------------------------------ copies
class CloneBackward0(Node):
    def backward(self, g):
        return (g,)


def clone(input, *, memory_format=None) -> Tensor:
    out = tk.copy(input._data)
    if needs_grad(input):
        return record(CloneBackward0((input,)), out)
    return wrap(out)


def contiguous(input, memory_format=None) -> Tensor:
    return input if input._data.is_contiguous() else clone(input)


def detach_copy(input) -> Tensor:
    return wrap(tk.copy(input._data))


def alias(input) -> Tensor:
    return view_result(input, input._data, _Alias((input,)) if needs_grad(input) else None, alias)


class _Alias(Node):
    def name(self):
        return "AliasBackward0"

    def backward(self, g):
        return (g,)


class ToCopyBackward0(Node):
    def __init__(self, inp):
        super().__init__((inp,))
        self.dtype = inp.dtype
        self.device = inp.device

    def backward(self, g):
        return (to_copy(g, device=self.device, dtype=self.dtype),)


def to_copy(input, *, device=None, dtype=None, non_blocking=False, copy=False) -> Tensor:
    a = input._data
    same_dev = device is None or device == a.device
    same_dt = dtype is None or dtype == a.dtype
    if same_dev and same_dt and not copy:
        return input
    out = a
    if not same_dev:
        out = tk.to_device(out, device, non_blocking=non_blocking)
    if not same_dt:
        out = tk.astype(out, dtype)
    if out is a:
        out = tk.copy(a)
    if needs_grad(input) and out.dtype.kind in "fc":
        return record(ToCopyBackward0(input), out)
    return wrap(out)


# --------------------------------------------------------------------------------- shape views
class ViewBackward0(Node):
    def __init__(self, inp):
        super().__init__((inp,))
        self.shape = inp._data.shape

    def backward(self, g):
        if not STATE.grad_enabled and not g._requires_grad:  # no graph of the backward: the array op only
            return (wrap(tk.reshape(g._data, self.shape)),)
        return (reshape(g, self.shape),)


class UnsafeViewBackward0(ViewBackward0):
    pass


def reshape(input, *shape) -> Tensor:
    shape = _shape_arg("reshape", shape)
    a = input._data
    if shape == a.shape:
        return alias(input) if input._requires_grad else view_result(input, a, None, alias)
    out = tk.reshape(a, shape)
    track = needs_grad(input)
    if out._storage is a._storage:
        return view_result(input, out, ViewBackward0(input) if track else None, lambda b: reshape(b, shape))
    return record(UnsafeViewBackward0(input), out) if track else wrap(out)


def view(input, *shape) -> Tensor:
    if len(shape) == 1 and not isinstance(shape[0], int | np.integer | tuple | list):
        return _view_dtype(input, shape[0])
    shape = _shape_arg("view", shape)
    out = input._data.view(shape)
    return view_result(input, out, ViewBackward0(input) if needs_grad(input) else None, lambda b: view(b, shape))


def _view_dtype(input, dtype):
    raise NotImplementedError(f"view(dtype): reinterpreting {input.dtype} as {dtype} is not supported; use "
                              f".to(dtype) to convert values")


def view_as(input, other) -> Tensor:
    return view(input, tuple(other.shape))


def reshape_as(input, other) -> Tensor:
    return reshape(input, tuple(other.shape))


def flatten(input, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    a = input._data
    if a.ndim == 0:
        return reshape(input, (1,))
    out = a.flatten(start_dim, end_dim)
    return _view_or_copy(input, out, lambda b: flatten(b, start_dim, end_dim))


def unflatten(input, dim: int, sizes) -> Tensor:
    out = input._data.unflatten(dim, tuple(sizes))
    return _view_or_copy(input, out, lambda b: unflatten(b, dim, sizes))


def _view_or_copy(input, out, fn):
    track = needs_grad(input)
    if out._storage is input._data._storage:
        return view_result(input, out, ViewBackward0(input) if track else None, fn)
    return record(UnsafeViewBackward0(input), out) if track else wrap(out)


class SqueezeBackward0(ViewBackward0):
    pass


class UnsqueezeBackward0(ViewBackward0):
    pass


def squeeze(input, dim=None) -> Tensor:
    a = input._data
    if dim is not None:
        dims = (dim,) if isinstance(dim, int | np.integer) else tuple(dim)
        n = max(a.ndim, 1)
        for d in dims:
            if not -n <= d < n:
                raise IndexError(f"squeeze(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                                 f"but got {d})")
        dims = tuple(d % n for d in dims if a.ndim and a.shape[d % n] == 1)  # PyTorch: non-1 dims are kept
        out = a.squeeze(dims) if dims else a
    else:
        out = a.squeeze()
    return view_result(input, out, SqueezeBackward0(input) if needs_grad(input) else None,
                       lambda b: squeeze(b, dim))


def unsqueeze(input, dim: int) -> Tensor:
    n = input._data.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"unsqueeze(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                         f"got {dim})")
    out = input._data.expand_dims(dim % n)
    return view_result(input, out, UnsqueezeBackward0(input) if needs_grad(input) else None,
                       lambda b: unsqueeze(b, dim))


class PermuteBackward0(Node):
    def __init__(self, inp, dims):
        super().__init__((inp,))
        self.inv = tuple(int(i) for i in np.argsort(dims))

    def backward(self, g):
        return (permute(g, self.inv),)


def permute(input, *dims) -> Tensor:
    if len(dims) == 1 and not isinstance(dims[0], int | np.integer):
        dims = tuple(dims[0])
    a = input._data
    n = a.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(): dims {list(dims)} are not a permutation of the {n} dimensions of a "
                           f"tensor of shape {list(a.shape)}")
    dims = tuple(_dim(int(d), n, "permute") if n else int(d) for d in dims)
    if sorted(dims) != list(range(n)):
        raise RuntimeError(f"permute(): dims {list(dims)} are not a permutation of the {n} dimensions of a "
                           f"tensor of shape {list(a.shape)}")
    out = a.permute_dims(dims)
    return view_result(input, out, PermuteBackward0(input, dims) if needs_grad(input) else None,
                       lambda b: permute(b, dims))


class TransposeBackward0(Node):
    def __init__(self, inp, d0, d1):
        super().__init__((inp,))
        self.d = (d0, d1)

    def backward(self, g):
        return (transpose(g, *self.d),)


def transpose(input, dim0: int, dim1: int) -> Tensor:
    a = input._data
    n = max(a.ndim, 1)
    for d in (dim0, dim1):
        if not -n <= d < n:
            raise IndexError(f"transpose(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
    if a.ndim == 0:
        return alias(input)
    out = a.swapaxes(dim0, dim1)
    return view_result(input, out, TransposeBackward0(input, dim0, dim1) if needs_grad(input) else None,
                       lambda b: transpose(b, dim0, dim1))


swapaxes = swapdims = transpose


def t(input) -> Tensor:
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D "
                           f"(shape {list(input.shape)}). Hint: use transpose(dim0, dim1) or .mT")
    return input if input._data.ndim < 2 else transpose(input, 0, 1)


def T(input) -> Tensor:  # noqa: N802
    n = input._data.ndim
    return permute(input, tuple(range(n - 1, -1, -1)))


def mT(input) -> Tensor:  # noqa: N802
    if input._data.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{input._data.ndim}-D tensor.")
    return transpose(input, -2, -1)




def movedim(input, source, destination) -> Tensor:
    a = input._data
    n = a.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_dim(s, n, "movedim") for s in src]
    dst = [_dim(d, n, "movedim") for d in dst]
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim(): repeated dim in source {src} or destination {dst}")
    if n == 0:  # dim 0 / -1 of a 0-d tensor: nothing moves
        return permute(input, ())
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, tuple(order))


moveaxis = movedim


class ExpandBackward0(Node):
    def __init__(self, inp):
        super().__init__((inp,))
        self.shape = inp._data.shape

    def backward(self, g):
        return (sum_to(g, self.shape),)


@names_op("expand")
def expand(input, *sizes) -> Tensor:
    sizes = _shape_arg("expand", sizes)
    a = input._data
    if len(sizes) < a.ndim:
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({a.ndim}), shape {list(a.shape)}")
    lead = len(sizes) - a.ndim
    if any(s < 0 for s in sizes[:lead]) or any(s < -1 for s in sizes):
        raise RuntimeError(f"expand(): the expanded size {list(sizes)} of a tensor of shape {list(a.shape)} has a "
                           f"negative size (-1 is allowed only for existing dimensions, to keep their size)")
    target = tuple(a.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    out = a.broadcast_to(target)
    return view_result(input, out, ExpandBackward0(input) if needs_grad(input) else None,
                       lambda b: expand(b, target))


def expand_as(input, other) -> Tensor:
    return expand(input, tuple(other.shape))


def broadcast_to(input, size) -> Tensor:
    return expand(input, tuple(size))


class AsStridedBackward0(Node):
    def __init__(self, inp, size, stride, offset):
        super().__init__((inp,))
        self.args = (inp._data.shape, tuple(size), tuple(stride), offset)

    def backward(self, g):
        shape, size, stride, offset = self.args
        n = int(np.prod(shape))
        lin = np.lib.stride_tricks.as_strided(np.arange(n, dtype=np.int64)[offset:] if n else np.zeros(0, np.int64),
                                              size, tuple(s * 8 for s in stride))
        idx = Tensor._wrap(tk.asarray(np.ascontiguousarray(lin).reshape(-1), device=g.device))
        from .indexing import index_add

        z = Tensor._wrap(tk.zeros((n,), dtype=g._data.dtype, device=g._data.device))
        return (index_add(z, 0, idx, g.reshape(-1)).reshape(shape),)


def as_strided(input, size, stride, storage_offset=None) -> Tensor:
    a = input._data
    off = a.storage_offset() if storage_offset is None else storage_offset
    if not a.is_contiguous():
        raise RuntimeError("as_strided(): only supported on contiguous tensors here; call .contiguous() first")
    out = a._view(tuple(size), tuple(stride), off)
    node = AsStridedBackward0(input, size, stride, off - a.storage_offset()) if needs_grad(input) else None
    return view_result(input, out, node, lambda b: as_strided(b, size, stride, storage_offset))


# ---------------------------------------------------------------------------------------- indexing
def _key(key):
    """Tensors in an index become their Arrays; is the key basic (a view)?"""
    if type(key) is not tuple:
        key = (key,)
    out = []
    basic = True
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
            basic = False
        elif not (k is None or k is Ellipsis or type(k) is slice or type(k) is int):
            if isinstance(k, Array | list | np.ndarray | bool | np.bool_):
                basic = False
            elif hasattr(k, "__index__"):
                k = k.__index__()
            else:
                basic = False
        out.append(k)
    return tuple(out), basic


def _split_ints(key):
    """PyTorch applies integer indices as ``select`` before advanced indexing (NumPy would broadcast them
    with the index arrays: ``x[0, :, [1, 2]]`` has shape (3, 2, 5) in PyTorch, (2, 3, 5) in NumPy for x of
    shape (2, 3, 4, 5)). A key mixing ints with index arrays becomes (basic key, advanced key on its result);
    None when there is nothing to split."""
    has_int = has_adv = False
    for k in key:
        if type(k) is int:
            has_int = True
        elif isinstance(k, bool | np.bool_):
            return None
        elif not (k is None or k is Ellipsis or type(k) is slice):
            has_adv = True
    if not (has_int and has_adv):
        return None
    k1, k2 = [], []
    for k in key:
        if type(k) is int:
            k1.append(k)
        elif k is None:
            k1.append(None)
            k2.append(slice(None))
        elif k is Ellipsis or type(k) is slice:
            k1.append(k)
            k2.append(slice(None) if type(k) is slice else k)
        else:
            nd = getattr(k, "ndim", None)
            if nd is None:
                nd = np.ndim(k)
            kind = k.dtype.kind if hasattr(k, "dtype") else np.asarray(k).dtype.kind
            k1.extend([slice(None)] * (nd if kind == "b" else 1))
            k2.append(k)
    return tuple(k1), tuple(k2)


class _IndexNode(Node):
    def __init__(self, inp, key, basic):
        super().__init__((inp,))
        self.shape = inp._data.shape
        self.key = key
        self.basic = basic

    def name(self):
        return ("SliceBackward0" if self.basic else "IndexBackward0")

    def backward(self, g):
        return (index_backward(g, self.shape, self.key, self.basic),)


def getitem(input, key) -> Tensor:
    k, basic = _key(key)
    if not basic and (two := _split_ints(k)) is not None:
        return getitem(getitem(input, two[0]), two[1])
    a = input._data
    out = a._basic_index(k) if basic else a[k]
    track = needs_grad(input)
    if basic:
        return view_result(input, out, _IndexNode(input, k, True) if track else None, lambda b: getitem(b, k))
    return record(_IndexNode(input, k, False), out) if track else wrap(out)


class IndexBackwardBackward(Node):
    def __init__(self, g, key):
        super().__init__((g,))
        self.key = key

    def name(self):
        return "IndexBackwardBackward0"

    def backward(self, gg):
        return (getitem(gg, self.key),)


def _index_add_flat(gflat, lin, n):
    z = tk.zeros((n,), dtype=gflat._data.dtype, device=gflat._data.device)
    tk.index_add_(z, 0, lin._data, gflat._data)
    return z


def index_backward(g, shape, key, basic) -> Tensor:
    """The gradient of ``x[key]`` with respect to ``x`` (zeros with ``g`` put or accumulated at ``key``)."""
    ga = g._data
    if basic:
        z = tk.zeros(shape, dtype=ga.dtype, device=ga.device)
        tk.copy_into(z._basic_index(key), ga)
    else:
        n = int(np.prod(shape))
        lin = tk.arange(n, dtype=tk.int64, device=ga.device).reshape(shape)[key]
        z = _index_add_flat(Tensor._wrap(tk.reshape(ga, (-1,))), Tensor._wrap(tk.reshape(lin, (-1,))), n)
        z = z.reshape(shape)
    if needs_grad(g):
        return record(IndexBackwardBackward(g, key), z)
    return wrap(z)


class IndexPutBackward0(Node):
    def __init__(self, inp, key, values, accumulate):
        super().__init__((inp, values))
        self.key = key
        self.accumulate = accumulate
        self.vshape = values._data.shape if isinstance(values, Tensor) else None

    def backward(self, g):
        gi = gv = None
        if self.needs_input_grad[0]:
            gi = g if self.accumulate else index_put(g, self.key, 0.0)
        if self.needs_input_grad[1]:
            gv = sum_to(getitem(g, self.key), self.vshape)
        return gi, gv


def index_put(input, key, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``x[key] = values`` (``accumulate``: ``+=`` with repeated indices summed)."""
    k, basic = _key(key)
    out = tk.copy(input._data)
    v = data(values)
    if isinstance(v, Array) and v.device != out.device:
        raise RuntimeError(f"index_put(): values are on {v.device} but the tensor is on {out.device}")
    if accumulate:
        if basic:
            tk.copy_into(out._basic_index(k), tk.add(out._basic_index(k), v))
        else:
            n = int(np.prod(out.shape))
            lin = tk.arange(n, dtype=tk.int64, device=out.device).reshape(out.shape)[k]
            va = tk.astype(v, out.dtype) if isinstance(v, Array) else tk.full((), v, dtype=out.dtype,
                                                                               device=out.device)
            vb = tk.reshape(tk.broadcast_to(va, lin.shape), (-1,))
            tk.index_add_(tk.reshape(out, (-1,)), 0, tk.reshape(lin, (-1,)), vb)
    elif basic:
        tk.copy_into(out._basic_index(k), v, op="index_put")
    else:
        tk.setitem_advanced(out, k, v)
    if needs_grad(input, values):
        return record(IndexPutBackward0(input, k, values, accumulate), out)
    return wrap(out)


def setitem(input, key, value) -> None:
    """``x[key] = value``: an in-place write (through a view for basic keys)."""
    k, basic = _key(key)
    if not basic and (two := _split_ints(k)) is not None:
        return setitem(getitem(input, two[0]), two[1], value)
    if not needs_grad(input, value):
        v = data(value)
        if basic:
            tk.copy_into(input._data._basic_index(k), v, op="setitem")
        else:
            tk.setitem_advanced(input._data, k, v)
        input._version.v += 1
        return
    if basic:
        copy_(getitem(input, k), value)
    else:
        inplace("setitem", input, lambda old, v: index_put(old, k, v), value, needs_old=False)


def copy_(input, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved) into ``input`` in place."""
    def fn(old, s):
        if not isinstance(s, Tensor):
            s = Tensor._wrap(tk.full(old._data.shape, s, dtype=old.dtype, device=old.device))
        s = to_copy(s, device=old.device, dtype=old.dtype, non_blocking=non_blocking)
        return expand(s, tuple(old.shape)) if tuple(s.shape) != tuple(old.shape) else s
    if not needs_grad(input, src):
        tk.copy_into(input._data, data(src), op="copy_")
        input._version.v += 1
        return input
    return inplace("copy_", input, fn, src, needs_old=False)


def select(input, dim: int, index: int) -> Tensor:
    n = input._data.ndim
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, n, "select")
    return getitem(input, (slice(None),) * d + (int(index),))


def narrow(input, dim: int, start: int, length: int) -> Tensor:
    """A view of ``length`` elements of ``dim`` from ``start`` (negative: counted from the end), PyTorch's checks:
    ``x.narrow(1, -2, 2)`` is ``x[:, -2:]``."""
    shape = list(input._data.shape)
    if not shape:
        raise RuntimeError(f"narrow() cannot be applied to a 0-dim tensor (shape {shape}); hint: reshape it to 1-d "
                           f"first (x.reshape(1)), or use the tensor itself")
    d = _dim(dim, len(shape), "narrow")
    start, length, size = int(start), int(length), shape[d]
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length} (dim {dim} of a tensor of shape "
                           f"{shape})")
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of [{-size}, {size}], but got "
                         f"{start}) for dim {dim} of size {size} of a tensor of shape {shape}")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}) of dim "
                           f"{dim} of a tensor of shape {shape}; hint: length can be at most {size - start} there")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


class _SplitNode(Node):
    _materialize = True

    def __init__(self, inp, dim, name):
        super().__init__((inp,))
        self.dim = dim
        self._name = name

    def name(self):
        return self._name

    def backward(self, *grads):
        from .shape import cat, stack

        if self._name == "UnbindBackward0":
            return (stack(list(grads), self.dim),)
        return (cat(list(grads), self.dim),)


def _multi_view(input, arrays, dim, name, key_of):
    track = needs_grad(input)
    node = _SplitNode(input, dim, name) if track else None
    outs = []
    for i, arr in enumerate(arrays):
        t = wrap(arr) if node is None else node.output(arr, i)
        key = key_of(i)
        base = input._base if input._base is not None else input
        pf = input._view_fn
        t._view_fn = (lambda b, key=key: getitem(b, key)) if pf is None else \
            (lambda b, key=key, pf=pf: getitem(pf(b), key))
        t._base = base
        t._version = input._version
        t._view_ver = input._version.v
        outs.append(t)
    return tuple(outs)


def unbind(input, dim: int = 0) -> tuple:
    a = input._data
    n = a.ndim
    if n == 0:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    d = dim % n
    arrays = [a._basic_index((slice(None),) * d + (i,)) for i in range(a.shape[d])]
    return _multi_view(input, arrays, d, "UnbindBackward0", lambda i: (slice(None),) * d + (i,))


def split(input, split_size_or_sections, dim: int = 0) -> tuple:
    a = input._data
    n = a.ndim
    if n == 0:
        raise RuntimeError("split(): expected at least a 1-dimensional tensor, got a 0-d one")
    d = _dim(dim, n, "split")
    size = a.shape[d]
    if isinstance(split_size_or_sections, int | np.integer):
        s = int(split_size_or_sections)
        if s <= 0 and size:
            raise RuntimeError(f"split(): split_size must be positive, got {s}")
        sizes = [min(s, size - i) for i in range(0, size, s)] if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                               f"size at dimension {d}), but got split_sizes={sizes}")
    bounds = np.cumsum([0] + sizes)
    keys = [(slice(None),) * d + (slice(int(bounds[i]), int(bounds[i + 1])),) for i in range(len(sizes))]
    arrays = [a._basic_index(k) for k in keys]
    return _multi_view(input, arrays, d, "SplitBackward0", lambda i: keys[i])


def chunk(input, chunks: int, dim: int = 0) -> tuple:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk(): expected at least a 1-dimensional tensor, got a 0-d one")
    size = input._data.shape[_dim(dim, input._data.ndim, "chunk")]
    if size == 0:  # an empty dim gives `chunks` empty chunks (PyTorch)
        return split(input, [0] * chunks, dim)
    each = -(-size // chunks)
    return split(input, max(each, 1), dim)


def tensor_split(input, indices_or_sections, dim: int = 0) -> tuple:
    a = input._data
    if a.ndim == 0:
        raise RuntimeError("tensor_split(): expected at least a 1-dimensional tensor, got a 0-d one")
    d = _dim(dim, a.ndim, "tensor_split")
    size = a.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        q, r = divmod(size, n)
        sizes = [q + 1] * r + [q] * (n - r)
    else:
        idx = [0] + [min(max(int(i), 0), size) for i in indices_or_sections] + [size]
        sizes = [max(idx[i + 1] - idx[i], 0) for i in range(len(idx) - 1)]
    return split(input, sizes, dim)


class DiagonalBackward0(Node):
    def __init__(self, inp, offset, d1, d2):
        super().__init__((inp,))
        self.args = (inp._data.shape, offset, d1, d2)

    def backward(self, g):
        shape, offset, d1, d2 = self.args
        z = Tensor._wrap(tk.zeros(shape, dtype=g._data.dtype, device=g._data.device))
        if needs_grad(g):  # differentiable: writing g through a view of zeros records a CopySlices node
            copy_(diagonal(z, offset, d1, d2), g)
            return (z,)
        tk.copy_into(diagonal(z, offset, d1, d2)._data, g._data)
        return (z,)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    out = tk.diagonal(input._data, offset=offset, axis1=dim1, axis2=dim2)
    node = DiagonalBackward0(input, offset, dim1, dim2) if needs_grad(input) else None
    if out._storage is input._data._storage:
        return view_result(input, out, node, lambda b: diagonal(b, offset, dim1, dim2))
    return record(node, out) if node is not None else wrap(out)
