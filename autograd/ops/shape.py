"""Shape and data movement that copies: cat/stack (and h/v/d/column_stack), flip, roll, repeat (tiling),
repeat_interleave, tile, tril/triu, broadcast_tensors, meshgrid, atleast_nd, diag_embed, rot90, unfold, pad, diff.
PyTorch's names and arguments (``dim``, ``dims``, ``diagonal=``; ``pad`` takes F.pad's tuple, last dim first)."""

from __future__ import annotations

import warnings

import numpy as np

import tkernels as tk
from tkernels.validation import OpTypeError

from ..tensor import _dim
from ._base import Node, Tensor, check_out, needs_grad, record, view_result, wrap
from .reduction import norm_dims

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "flip", "fliplr",
           "flipud", "roll", "repeat_interleave", "tile", "tril", "triu", "broadcast_tensors", "broadcast_shapes",
           "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "diag_embed", "rot90", "pad", "diff"]
METHODS = ["flip", "fliplr", "flipud", "roll", "repeat", "repeat_interleave", "tile", "tril", "triu", "diag_embed",
           "rot90", "unfold", "diff"]
INPLACE = {"tril": False, "triu": False}


def _zeros(shape, like):
    return Tensor._wrap(tk.zeros(tuple(shape), dtype=like._data.dtype, device=like._data.device))


def _tensors(op, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise OpTypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, got "
                          f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise OpTypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


def _write(op, out, r, tensors):
    check_out(op, out, tensors)
    if tuple(out.shape) == r.shape:
        tk.copy_into(out._data, r, op=op)
    else:  # PyTorch resizes out= to the result's shape
        out._data = tk.astype(r, out.dtype)
    out._version.v += 1
    return out


# ----------------------------------------------------------------------------------------- cat, stack
class CatBackward0(Node):
    def __init__(self, tensors, dim):
        super().__init__(tensors)
        self.dim = dim
        self.sizes = [t._data.shape[dim] if t._data.ndim else 0 for t in tensors]
        self.skip = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in tensors]

    def backward(self, g):
        out, start = [], 0
        for need, n, skip in zip(self.needs_input_grad, self.sizes, self.skip):
            if skip:
                out.append(_zeros((0,), g) if need else None)
                continue
            out.append(g.narrow(self.dim, start, n) if need else None)
            start += n
        return tuple(out)


def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join tensors along an existing ``dim``; the dtypes of all tensors promote. 1-D empty tensors are skipped in
    the shape check (PyTorch's legacy rule), so ``cat([x, empty(0)])`` works for any ``x``, but not in the dtype
    promotion: ``cat([int64 tensor, float32 empty(0)])`` is float32, as in PyTorch."""
    tensors = _tensors("cat", tensors)
    arrays = [t._data for t in tensors]
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated (dtype "
                               f"{a.dtype}, device {a.device}). Hint: use stack, or unsqueeze it first")
    dt = tk.result_type(*(a.dtype for a in arrays))  # every tensor's dtype, the skipped ones' too
    kept = [a for a in arrays if not (a.ndim == 1 and a.shape[0] == 0)]
    if not kept:  # only legacy empties: the result is one, whatever dim says (PyTorch)
        dim = 0
    elif len(kept) != len(arrays):
        arrays = kept
    try:
        r = tk.concat(arrays, axis=dim)
    except ValueError as e:
        raise RuntimeError(f"cat(): {e}".replace("concat: ", "").replace("axis", "dim")) from None
    except IndexError as e:
        raise IndexError(f"cat(): {e}".replace("concat: ", "").replace("axis", "dim")) from None
    if r.dtype != dt:  # a skipped empty tensor widened the dtype (rare: one cast of the result)
        r = tk.astype(r, dt)
    if out is not None:
        return _write("cat", out, r, tensors)
    if r.dtype.kind in "fc" and needs_grad(*tensors):
        return CatBackward0(tensors, dim % arrays[0].ndim).output(r)
    return wrap(r)


concat = concatenate = cat


class StackBackward0(Node):
    def __init__(self, tensors, dim):
        super().__init__(tensors)
        self.dim = dim

    def backward(self, g):
        return tuple(g.select(self.dim, i) if need else None for i, need in enumerate(self.needs_input_grad))


def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join tensors of one shape along a new ``dim``; dtypes promote."""
    tensors = _tensors("stack", tensors)
    try:
        r = tk.stack([t._data for t in tensors], axis=dim)
    except ValueError as e:
        raise RuntimeError(f"stack(): {e}".replace("stack: ", "").replace("array", "tensor")) from None
    if out is not None:
        return _write("stack", out, r, tensors)
    if r.dtype.kind in "fc" and needs_grad(*tensors):
        return StackBackward0(tensors, dim % r.ndim).output(r)
    return wrap(r)


def _atleast(n, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        return tuple(_atleast(n, (t,)) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(n, (t,)) for t in tensors)
    x = tensors[0]
    nd = x._data.ndim
    if nd >= n:
        return x
    s = tuple(x.shape)
    if n == 1:
        return x.reshape(1)
    if n == 2:
        return x.reshape((1,) * (2 - nd) + s)
    return x.reshape({0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[nd])


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dimension (one tensor in: one out; several: a tuple)."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """0-d → (1, 1, 1), (N,) → (1, N, 1), (M, N) → (M, N, 1), like PyTorch."""
    return _atleast(3, tensors)


def hstack(tensors, *, out=None) -> Tensor:
    ts = [atleast_1d(t) for t in _tensors("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None) -> Tensor:
    return cat([atleast_2d(t) for t in _tensors("vstack", tensors)], 0, out=out)


def dstack(tensors, *, out=None) -> Tensor:
    return cat([atleast_3d(t) for t in _tensors("dstack", tensors)], 2, out=out)


def column_stack(tensors, *, out=None) -> Tensor:
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in _tensors("column_stack", tensors)]
    return cat(ts, 1, out=out)


# ------------------------------------------------------------------------------------------- flip, roll
class FlipBackward0(Node):
    def __init__(self, x, dims):
        super().__init__((x,))
        self.dims = dims

    def backward(self, g):
        return (flip(g, self.dims),)


def flip(input, *dims) -> Tensor:
    """A copy with the order of elements reversed along ``dims``."""
    if not dims:
        raise OpTypeError("flip() missing required argument 'dims' (a tuple of dimensions to reverse)")
    if len(dims) == 1 and isinstance(dims[0], list | tuple):
        dims = tuple(dims[0])
    n = input._data.ndim
    if n == 0:
        axes = ()
        for d in dims:
            norm_dims(d, 0)
    else:
        axes = norm_dims(dims, n)
    r = tk.flip(input._data, axis=axes) if axes else tk.copy(input._data)
    if r.dtype.kind in "fc" and needs_grad(input):
        return FlipBackward0(input, axes).output(r)
    return wrap(r)


def fliplr(input) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError(f"fliplr(): Input must be >= 2-d, got shape {list(input.shape)}")
    return flip(input, (1,))


def flipud(input) -> Tensor:
    if input._data.ndim < 1:
        raise RuntimeError("flipud(): Input must be >= 1-d, got a 0-d tensor")
    return flip(input, (0,))


class RollBackward0(Node):
    def __init__(self, x, shifts, dims):
        super().__init__((x,))
        self.shifts, self.dims = shifts, dims

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return (roll(g, neg, self.dims),)


def roll(input, shifts, dims=None) -> Tensor:
    """Shift elements along ``dims`` (wrapping around); ``dims=None`` rolls the flattened tensor."""
    shifts = tuple(int(s) for s in shifts) if isinstance(shifts, list | tuple) else int(shifts)
    if isinstance(dims, list | tuple):
        dims = tuple(int(d) for d in dims)
        if not isinstance(shifts, tuple):  # PyTorch pairs shifts with dims one to one (NumPy broadcasts)
            shifts = (shifts,)
        if len(shifts) != len(dims):
            raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, dims: "
                               f"{len(dims)}")
    elif dims is not None:
        dims = int(dims)
    elif isinstance(shifts, tuple):
        if len(shifts) != 1:
            raise RuntimeError(f"roll(): shifts {list(shifts)} need dims of the same length")
        shifts = shifts[0]
    a = input._data
    if a.size == 0:
        r = tk.copy(a)
    elif dims is None and a.ndim == 0:
        r = tk.copy(a)
    else:
        for d in (dims if isinstance(dims, tuple) else () if dims is None else (dims,)):
            norm_dims(d, a.ndim)
        r = tk.roll(a, shifts, axis=dims)
    if r.dtype.kind in "fc" and needs_grad(input):
        return RollBackward0(input, shifts, dims).output(r)
    return wrap(r)


# ------------------------------------------------------------------------------ repeat, tile, interleave
class RepeatBackward0(Node):
    def __init__(self, x, reps):
        super().__init__((x,))
        self.shape = x._data.shape
        self.reps = reps

    def backward(self, g):
        reps = self.reps
        shape = (1,) * (len(reps) - len(self.shape)) + tuple(self.shape)
        inter = tuple(v for r, s in zip(reps, shape) for v in (r, s))
        g = g.reshape(inter).sum(dim=tuple(range(0, 2 * len(reps), 2)))
        return (g.reshape(self.shape),)


def repeat(input, *sizes) -> Tensor:
    """``Tensor.repeat``: tile the tensor ``sizes[i]`` times along dimension ``i`` (``len(sizes) >= ndim``;
    extra sizes add leading dimensions). ``repeat_interleave`` repeats each element instead."""
    if len(sizes) == 1 and isinstance(sizes[0], list | tuple):
        sizes = tuple(sizes[0])
    reps = tuple(int(s) for s in sizes)
    a = input._data
    if len(reps) < a.ndim:
        raise RuntimeError(f"repeat(): Number of dimensions of repeat dims ({len(reps)}) can not be smaller than "
                           f"number of dimensions of tensor ({a.ndim}, shape {list(a.shape)})")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"repeat(): Trying to create tensor with negative dimension: repeats {list(reps)}")
    r = tk.tile(a, reps) if reps else tk.copy(a)
    if r.dtype.kind in "fc" and needs_grad(input):
        return RepeatBackward0(input, reps).output(r)
    return wrap(r)


def tile(input, dims) -> Tensor:
    """``torch.tile``: like ``repeat``, with ``dims`` padded by leading ones when shorter than ``ndim``."""
    dims = tuple(dims) if isinstance(dims, list | tuple) else (dims,)
    n = input._data.ndim
    return repeat(input, (1,) * (n - len(dims)) + tuple(int(d) for d in dims))


class RepeatInterleaveBackward0(Node):
    def __init__(self, x, dim, repeats, flat):
        super().__init__((x,))
        self.shape = x._data.shape
        self.dim = dim
        self.repeats = repeats  # an int, or the int64 Tensor of element indices (repeat_interleave of arange)
        self.flat = flat

    def backward(self, g):
        d, shape, reps = self.dim, self.shape, self.repeats
        flat_shape = (int(np.prod(shape)),) if self.flat else shape
        if isinstance(reps, int):
            s = tuple(flat_shape)
            g = g.reshape(s[:d] + (s[d], reps) + s[d + 1:]).sum(d + 1)
        else:
            from .indexing import index_add

            g = index_add(_zeros(flat_shape, g), d, reps, g)
        return (g.reshape(shape),)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element ``repeats`` times (an int or a tensor of counts) along ``dim`` (``None``: of the
    flattened tensor). ``repeat_interleave(counts)`` gives ``arange(len(counts))`` repeated by ``counts``."""
    if repeats is None:
        counts = input._data
        if counts.ndim > 1 or counts.dtype.kind not in "iu":
            raise RuntimeError(f"repeat_interleave(): repeats must be a 0-d or 1-d integer tensor, got "
                               f"{counts.dtype} of shape {list(counts.shape)}")
        idx = tk.arange(counts.size, dtype=tk.int64, device=counts.device)
        return wrap(tk.repeat(idx, tk.reshape(counts, (-1,)), axis=0))
    a = input._data
    if a.ndim == 0 and dim is not None:
        raise IndexError(f"repeat_interleave(): Dimension out of range (a 0-d input takes dim=None only, got dim "
                         f"{dim})")
    flat = dim is None
    d = 0 if flat else norm_dims(dim, a.ndim)[0]
    src = tk.reshape(a, (-1,)) if flat else a
    m = src.shape[d]
    if isinstance(repeats, Tensor):
        ra = repeats._data
        if ra.ndim > 1 or ra.dtype.kind not in "iu":
            raise RuntimeError(f"repeat_interleave(): repeats must be a 0-d or 1-d integer tensor, got "
                               f"{repeats.dtype} of shape {list(repeats.shape)}")
        if ra.size == 1:
            repeats = int(ra.reshape(()).item())
        elif ra.size != m:
            raise RuntimeError(f"repeat_interleave(): repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {ra.size} and input.size({d}) = {m}")
    if isinstance(repeats, int | np.integer):
        repeats = int(repeats)
        if repeats < 0:
            raise RuntimeError(f"repeat_interleave(): repeats can not be negative, got {repeats}")
        r = tk.repeat(src, repeats, axis=d)
        key = repeats
    else:
        r = tk.repeat(src, ra, axis=d)
        key = None
    if output_size is not None and r.shape[d] != output_size:
        raise RuntimeError(f"repeat_interleave(): output_size {output_size} does not match the total number of "
                           f"repeats {r.shape[d]}")
    if r.dtype.kind in "fc" and needs_grad(input):
        if key is None:
            idx = tk.repeat(tk.arange(m, dtype=tk.int64, device=a.device), ra, axis=0)
            key = Tensor._wrap(idx)
        return RepeatInterleaveBackward0(input, d, key, flat).output(r)
    return wrap(r)


# ----------------------------------------------------------------------------------------- tril, triu
class TrilBackward0(Node):
    def __init__(self, x, k):
        super().__init__((x,))
        self.k = k

    def backward(self, g):
        return (tril(g, self.k),)


class TriuBackward0(TrilBackward0):
    def backward(self, g):
        return (triu(g, self.k),)


def _tri(op, input, diagonal, upper):
    a = input._data
    if a.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got shape {list(a.shape)}")
    r = (tk.triu if upper else tk.tril)(a, k=int(diagonal))
    if r.dtype.kind in "fc" and needs_grad(input):
        return (TriuBackward0 if upper else TrilBackward0)(input, int(diagonal)).output(r)
    return wrap(r)


def tril(input, diagonal: int = 0) -> Tensor:
    """The lower triangle (elements on and below ``diagonal``) of the last two dims; the rest zero."""
    return _tri("tril", input, diagonal, False)


def triu(input, diagonal: int = 0) -> Tensor:
    """The upper triangle (elements on and above ``diagonal``) of the last two dims; the rest zero."""
    return _tri("triu", input, diagonal, True)


# ------------------------------------------------------------------------ broadcasting, meshgrid, diag
def broadcast_shapes(*shapes):
    from ..tensor import Size

    return Size(tk.broadcast_shapes(*(tuple(s) if isinstance(s, list | tuple) else (s,) for s in shapes)))


def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded (as views) to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    try:
        shape = tk.broadcast_shapes(*(t._data.shape for t in tensors))
    except ValueError:
        raise RuntimeError(f"broadcast_tensors(): shapes {[list(t.shape) for t in tensors]} cannot be broadcast "
                           f"together") from None
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D (or 0-d) tensors; ``indexing='ij'`` (the default, with PyTorch's warning when
    not given) or ``'xy'`` (the first two dimensions swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"meshgrid(): indexing must be one of 'xy' or 'ij', but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid(): expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if t._data.ndim > 1:
            raise RuntimeError(f"meshgrid(): expects 0D or 1D tensors, got shape {list(t.shape)} at position {i}")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    out = [t.reshape((1,) * i + (shape[i],) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(ts)]
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


class DiagEmbedBackward0(Node):
    def __init__(self, x, offset, dim1, dim2):
        super().__init__((x,))
        self.args = (offset, dim1, dim2)

    def backward(self, g):
        return (g.diagonal(*self.args),)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose ``(dim1, dim2)`` planes have the last dimension of ``input`` on diagonal ``offset``."""
    a = input._data
    if a.ndim == 0:
        raise RuntimeError("diag_embed(): input must have at least 1 dimension")
    n = a.ndim + 1
    d1, d2 = norm_dims(dim1, n)[0], norm_dims(dim2, n)[0]
    if d1 == d2:
        raise RuntimeError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    m = a.shape[-1] + abs(int(offset))
    lead = list(a.shape[:-1])
    shape = []
    for i in range(n):
        shape.append(m if i in (d1, d2) else lead.pop(0))
    r = tk.zeros(tuple(shape), dtype=a.dtype, device=a.device)
    tk.copy_into(tk.diagonal(r, offset=int(offset), axis1=d1, axis2=d2), a, op="diag_embed")
    if r.dtype.kind in "fc" and needs_grad(input):
        return DiagEmbedBackward0(input, int(offset), d1, d2).output(r)
    return wrap(r)


def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90° ``k`` times in the plane ``dims`` (from the first towards the second axis)."""
    dims = tuple(dims)
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"rot90(): expected total dims >= 2, but got total dims = {n}")
    d0, d1 = norm_dims(dims[0], n)[0], norm_dims(dims[1], n)[0]
    if d0 == d1:
        raise RuntimeError(f"rot90(): expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = "
                           f"{dims[1]}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """``torch.diff``: the ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, ``n`` times) of
    ``cat([prepend, input, append], dim)`` (dtypes promote as in cat); bool tensors differ by logical xor. As in
    PyTorch, ``n=0`` returns ``input`` and ignores ``prepend``/``append``. A composite of narrow, sub and cat:
    differentiable to any order."""
    shape = list(input._data.shape)
    if not shape:
        raise RuntimeError(f"diff expects input to be at least one-dimensional (got a 0-dim tensor of dtype "
                           f"{input.dtype}); hint: reshape it to 1-d first (x.reshape(1))")
    d = _dim(int(dim), len(shape), "diff")
    if isinstance(n, bool) or not isinstance(n, int):
        raise OpTypeError(f"diff(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    pieces = [input]
    for name, t in (("prepend", prepend), ("append", append)):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise OpTypeError(f"diff(): argument '{name}' must be Tensor, not {type(t).__name__}")
        other = list(t._data.shape)
        if len(other) != len(shape):
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as input ({name} has shape "
                               f"{other}, input {shape})")
        for i, (a, b) in enumerate(zip(shape, other)):
            if i != d and a != b:
                raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input "
                                   f"except along the differencing dimension; input.size({i}) = {a}, but got "
                                   f"tensor.size({i}) = {b} ({name} has shape {other}, input {shape}, dim {d})")
        pieces.insert(0 if name == "prepend" else len(pieces), t)
    if n == 0:
        return input
    y = cat(pieces, d) if len(pieces) > 1 else input
    for _ in range(min(n, y.shape[d])):  # each step shortens dim by one; empty after y.shape[d] steps
        m = y.shape[d] - 1
        hi, lo = y.narrow(d, 1, m), y.narrow(d, 0, m)
        y = hi != lo if y.dtype == tk.bool else hi - lo
    if y is input:  # dim was empty: an empty result, not the input itself
        y = input.narrow(d, 0, 0).clone()
    return y


class UnfoldBackward0(Node):
    def __init__(self, x, dim, size, step):
        super().__init__((x,))
        self.shape = x._data.shape
        self.args = (dim, size, step)

    def backward(self, g):
        from .indexing import index_add

        dim, size, step = self.args
        shape = self.shape if self.shape else (1,)
        if not self.shape:
            g = g.reshape(1, -1)
        windows = g.shape[dim]
        idx = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
        idx = Tensor._wrap(tk.asarray(idx, dtype=tk.int64, device=g._data.device))
        gm = g.movedim(-1, dim + 1).flatten(dim, dim + 1)  # (..., windows * size, ...) in window order
        return (index_add(_zeros(shape, g), dim, idx, gm).reshape(self.shape),)


def unfold(input, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: a view of every slice of ``size`` elements along ``dimension``, ``step`` apart, as a
    new last dimension."""
    a = input._data
    x = a if a.ndim else tk.reshape(a, (1,))
    d = norm_dims(dimension, x.ndim)[0]
    n = x.shape[d]
    if size < 0 or size > n:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    windows = (n - size) // step + 1
    st = x.strides
    shape = x.shape[:d] + (windows,) + x.shape[d + 1:] + (size,)
    strides = st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],)
    r = x._view(shape, strides, x.storage_offset())
    if a.ndim == 0:
        r = tk.reshape(r, (size,))
    node = UnfoldBackward0(input, d, size, step) if r.dtype.kind in "fc" and needs_grad(input) else None
    if r._storage is not a._storage:
        return record(node, r) if node is not None else wrap(r)
    return view_result(input, r, node, lambda b: unfold(b, dimension, size, step))


# ------------------------------------------------------------------------------------------------ pad
class ConstantPadNdBackward0(Node):
    def __init__(self, x, pad):
        super().__init__((x,))
        self.pad = pad

    def backward(self, g):
        return (pad(g, tuple(-p for p in self.pad)),)


class _PadBackward(Node):
    """reflect/replicate/circular: every output element came from one input element; gradients accumulate
    there (index_add of the flattened gradient at the padded map of input positions)."""

    def __init__(self, x, pad, mode):
        super().__init__((x,))
        self.shape = x._data.shape
        self.pad, self.mode = pad, mode

    def backward(self, g):
        from .indexing import index_add

        n = int(np.prod(self.shape))
        pos = tk.reshape(tk.arange(n, dtype=tk.int64, device=g._data.device), self.shape)
        src = Tensor._wrap(tk.reshape(tk.pad(pos, self.pad, mode=self.mode), (-1,)))
        return (index_add(_zeros((n,), g), 0, src, g.reshape(-1)).reshape(self.shape),)


class ReflectionPadBackward0(_PadBackward):
    pass


class ReplicationPadBackward0(_PadBackward):
    pass


class CircularPadBackward0(_PadBackward):
    pass


_PAD_NODES = {"reflect": ReflectionPadBackward0, "replicate": ReplicationPadBackward0,
              "circular": CircularPadBackward0}


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """``torch.nn.functional.pad``: ``pad`` = (left, right, top, bottom, ...) pairs from the LAST dimension;
    modes ``constant`` (``value``, default 0; negative pads crop), ``reflect``, ``replicate``, ``circular``."""
    pad = tuple(int(p) for p in pad)
    a = input._data
    if len(pad) % 2 or len(pad) // 2 > a.ndim:
        raise RuntimeError(f"pad(): padding length must be divisible by 2 and at most 2 * ndim = {2 * a.ndim}, got "
                           f"{len(pad)} for an input of shape {list(a.shape)}")
    if mode != "constant" and value not in (None, 0):
        raise RuntimeError(f"pad(): padding mode \"{mode}\" doesn't take in value argument")
    try:
        r = tk.pad(a, pad, mode=mode, value=0 if value is None else value)
    except ValueError as e:
        raise RuntimeError(f"pad(): {e}".replace("pad: ", "").replace("pad_width", "pad") + f" (input shape "
                           f"{list(a.shape)}, pad {list(pad)}, mode {mode!r})") from None
    if r.dtype.kind not in "fc" or not needs_grad(input):
        return wrap(r)
    if mode == "constant":
        return ConstantPadNdBackward0(input, pad).output(r)
    return _PAD_NODES[mode](input, pad, mode).output(r)
