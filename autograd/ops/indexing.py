"""Indexing with index tensors and masks: gather/scatter (add, reduce), index_select/add/copy/fill, masked_fill/
select/scatter, take, take_along_dim, put, nonzero/argwhere, one_hot. PyTorch's names and arguments (``dim``,
``index``, ``src``/``source``, ``alpha``, ``include_self``). Backward formulas are these ops again (gather ↔
scatter_add, index_select ↔ index_add, masked_select ↔ masked_scatter), so gradients of gradients work."""

from __future__ import annotations

import numpy as np

import tkernels as tk
from tkernels.validation import OpTypeError, names_op

from ._base import Node, Tensor, needs_grad, wrap
from .reduction import norm_dims

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "put",
           "nonzero", "argwhere", "one_hot"]
METHODS = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "put",
           "nonzero", "argwhere"]
# the in-place forms (generic ``inplace``): True where the backward reads the old value of self
INPLACE = {"scatter": False, "scatter_add": False, "scatter_reduce": True, "index_add": False,
           "index_copy": False, "index_fill": False, "masked_fill": False, "masked_scatter": False, "put": False}


def _zeros(shape, like):
    return Tensor._wrap(tk.zeros(tuple(shape), dtype=like._data.dtype, device=like._data.device))


def _index(op, index, name="index"):
    if not isinstance(index, Tensor):
        raise OpTypeError(f"{op}(): argument '{name}' must be Tensor, not {type(index).__name__}")
    a = index._data
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for {name}, got {a.dtype} (shape {list(a.shape)}). Hint: "
                           f"convert with .long()")
    return a


def _mask(op, mask):
    if not isinstance(mask, Tensor) or mask._data.dtype.kind != "b":
        what = f"{mask.dtype}" if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op}(): expected a bool mask tensor, got {what}. Hint: compare, e.g. x > 0")
    return mask._data


def _dim(dim, ndim):
    return norm_dims(dim, ndim)[0]


def _fit(t, shape):
    """``t`` zero-padded at the end of each dimension up to ``shape`` (a src larger than index)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    from .shape import pad

    widths = []
    for have, want in zip(reversed(tuple(t.shape)), reversed(shape)):
        widths += [0, want - have]
    return pad(t, tuple(widths))


def _err(op, e):
    msg = str(e)
    for a, b in (("axis", "dim"), ("x's", "self's"), (" x ", " self ")):
        msg = msg.replace(a, b)
    return f"{op}(): {msg}"


def _call(op, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (ValueError, TypeError) as e:
        raise RuntimeError(_err(op, e)) from None


# ------------------------------------------------------------------------------------- gather, scatter
class GatherBackward0(Node):
    def __init__(self, x, dim, index):
        super().__init__((x,))
        self.shape, self.dim, self.index = x._data.shape, dim, index

    def backward(self, g):
        return (scatter_add(_zeros(self.shape, g), self.dim, self.index, g),)


def gather(input, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` (dim 0): values along ``dim`` at ``index`` (int64, input's ndim)."""
    r = _call("gather", tk.gather, input._data, dim, _index("gather", index))
    if r.dtype.kind in "fc" and needs_grad(input):
        return GatherBackward0(input, _dim(dim, max(input.ndim, 1)), index).output(r)
    return wrap(r)


class ScatterBackward0(Node):
    def __init__(self, x, dim, index, src, add=False):
        super().__init__((x, src))
        self.dim, self.index, self.add = dim, index, add
        self.src_shape = src._data.shape if isinstance(src, Tensor) else None

    def name(self):
        return "ScatterAddBackward0" if self.add else ("ScatterBackward0" if self.src_shape is not None
                                                       else "ScatterBackward1")

    def backward(self, g):
        gi = gs = None
        if self.needs_input_grad[0]:
            gi = g if self.add else scatter(g, self.dim, self.index, 0.0)
        if self.needs_input_grad[1]:
            gs = _fit(gather(g, self.dim, self.index), self.src_shape)
        return gi, gs


def scatter(input, dim: int, index, src=None, value=None, *, reduce=None) -> Tensor:
    """A copy of ``input`` with ``out[index[i][j]][j] = src[i][j]`` (dim 0); ``src`` a tensor of input's dtype
    or a number (``value=``). ``reduce='add'|'multiply'`` combines instead of storing (see scatter_reduce)."""
    if src is None:
        src = value
    if src is None:
        raise OpTypeError("scatter() missing required argument 'src' (a tensor) or 'value' (a number)")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
        if not isinstance(src, Tensor):
            src = Tensor._wrap(tk.full(index._data.shape, src, dtype=input._data.dtype, device=input._data.device))
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    ia = _index("scatter", index)
    is_t = isinstance(src, Tensor)
    r = _call("scatter", tk.scatter, input._data, dim, ia, src._data if is_t else src)
    if r.dtype.kind in "fc" and needs_grad(input, src):
        return ScatterBackward0(input, _dim(dim, max(input.ndim, 1)), index, src).output(r)
    return wrap(r)


def scatter_add(input, dim: int, index, src) -> Tensor:
    """A copy of ``input`` with ``src`` summed in at ``index`` along ``dim`` (repeated indices accumulate)."""
    if not isinstance(src, Tensor):
        raise OpTypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    r = _call("scatter_add", tk.scatter_add, input._data, dim, _index("scatter_add", index), src._data)
    if r.dtype.kind in "fc" and needs_grad(input, src):
        return ScatterBackward0(input, _dim(dim, max(input.ndim, 1)), index, src, add=True).output(r)
    return wrap(r)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _scatter_rounds(x, dim, index, src, combine, include_self):
    """``x`` with ``src`` combined in at ``index`` by ``combine`` (an elementwise tkernels op), one round per
    multiplicity: round k takes the k-th src element aimed at each target, so no round writes a place twice."""
    out = tk.copy(x) if x.ndim else tk.reshape(tk.copy(x), (1,))
    if index.size == 0:
        return tk.reshape(out, x.shape)
    ishape = index.shape if index.ndim else (1,)
    xshape = out.shape
    stride = [int(np.prod(xshape[k + 1:])) for k in range(len(xshape))]
    dev = x.device
    lin = tk.multiply(tk.reshape(tk.astype(index, tk.int64), ishape), stride[dim])
    for k, n in enumerate(ishape):
        if k != dim:
            ar = tk.arange(n, dtype=tk.int64, device=dev) if n else tk.zeros((0,), dtype=tk.int64, device=dev)
            lin = tk.add(lin, tk.reshape(tk.multiply(ar, stride[k]), tuple(n if j == k else 1
                                                                            for j in range(len(ishape)))))
    lin = tk.reshape(lin, (-1,))
    s = src if src.ndim else tk.reshape(src, (1,))
    vals = tk.reshape(s._basic_index(tuple(slice(0, n) for n in ishape)), (-1,))
    order = tk.argsort(lin, stable=True)
    lin, vals = tk.take(lin, order), tk.take(vals, order)
    rank = tk.subtract(tk.arange(lin.shape[0], dtype=tk.int64, device=dev), tk.searchsorted(lin, lin, side="left"))
    flat = tk.reshape(out, (-1,))
    for k in range(int(tk.max(rank).item()) + 1):
        sel = tk.equal(rank, k)
        t, v = tk.masked_select(lin, sel), tk.masked_select(vals, sel)
        if k or include_self:
            v = tk.astype(combine(tk.take(flat, t), v), flat.dtype)
        tk.index_put_(flat, (t,), v)
    return tk.reshape(out, x.shape)


def _scatter_reduce_fwd(x, dim, index, src, reduce, include_self):
    if reduce in ("sum", "mean"):
        base = x if include_self else tk.scatter(x, dim, index, 0)
        r = tk.scatter_add(base, dim, index, src)
        if reduce == "sum":
            return r
        cnt = tk.scatter_add(tk.full(x.shape, 1 if include_self else 0, dtype=x.dtype, device=x.device), dim,
                             index, tk.ones(index.shape, dtype=x.dtype, device=x.device))
        cnt = tk.where(tk.equal(cnt, 0), tk.ones((), dtype=x.dtype, device=x.device), cnt)
        return tk.divide(r, cnt) if x.dtype.kind == "f" else tk.floor_divide(r, cnt)
    combine = {"prod": tk.multiply, "amax": tk.maximum, "amin": tk.minimum}[reduce]
    return _scatter_rounds(x, dim, index, src, combine, include_self)


class ScatterReduceBackward0(Node):
    def __init__(self, x, dim, index, src, reduce, include_self):
        super().__init__((x, src))
        self.args = (dim, index, reduce, include_self)
        self.src_shape = src._data.shape

    def backward(self, g):
        dim, index, reduce, include_self = self.args
        ishape = tuple(index.shape)
        if reduce in ("prod", "amax", "amin"):
            x, src, result = self.saved_tensors
            src = src[tuple(slice(0, n) for n in ishape)] if tuple(src.shape) != ishape and src.ndim else src
        if reduce == "sum":
            gi, gs = g, gather(g, dim, index)
        elif reduce == "mean":
            ones = Tensor._wrap(tk.ones(ishape, dtype=g._data.dtype, device=g._data.device))
            n = scatter_add((_zeros(g.shape, g) + 1.0) if include_self else _zeros(g.shape, g), dim, index, ones)
            n = n.masked_fill(n == 0, 1.0).detach()
            gi, gs = g / n, gather(g, dim, index) / gather(n, dim, index)
        elif reduce == "prod":
            masked_self = x.masked_fill(x == 0, 1.0)
            gi = g * scatter_reduce(masked_self, dim, index, src, "prod", include_self=include_self) / masked_self
            src_zero = src == 0
            nz = gather(scatter_add(_zeros(x.shape, g), dim, index, src_zero.to(g.dtype)), dim, index)
            single = src_zero & (nz == 1)
            masked_src_result = scatter_reduce(x, dim, index, src.masked_fill(single, 1.0), "prod",
                                               include_self=include_self)
            from .elementwise import where

            gs = where(single, gather(g * masked_src_result, dim, index),
                       gather(g * result, dim, index) / src.masked_fill(src_zero, 1.0))
        else:
            value = gather(result, dim, index)
            self_is = (x == result)
            src_is = (src == value)
            n = scatter_add(self_is.to(g.dtype), dim, index, src_is.to(g.dtype)).detach()
            gd = g / n
            gi = gd.masked_fill(~self_is, 0.0)
            gs = gather(gd, dim, index).masked_fill(~src_is, 0.0)
        if not include_self:
            gi = scatter(gi, dim, index, 0.0)
        return (gi if self.needs_input_grad[0] else None,
                _fit(gs, self.src_shape) if self.needs_input_grad[1] else None)


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True) -> Tensor:
    """A copy of ``input`` with the ``src`` values aimed at each place (by ``index`` along ``dim``) reduced
    into it: ``reduce`` one of sum, prod, mean, amax, amin; ``include_self=False`` leaves input's value out
    of places that receive some src value."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be one of {', '.join(_REDUCES)}, got "
                           f"{reduce!r}")
    if not isinstance(src, Tensor):
        raise OpTypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    ia = _index("scatter_reduce", index)
    x = input._data
    if reduce not in ("sum", "mean"):  # validation (shapes, dtypes, bounds) by the plain scatter entry first
        _call("scatter_reduce", tk.scatter_add, x, dim, ia, src._data)
    d = _dim(dim, max(x.ndim, 1))
    r = _call("scatter_reduce", _scatter_reduce_fwd, x, d, ia, src._data, reduce, include_self)
    if r.dtype.kind in "fc" and needs_grad(input, src):
        node = ScatterReduceBackward0(input, d, index, src, reduce, include_self)
        out = node.output(r)
        if reduce in ("prod", "amax", "amin"):
            node.save(input, src, outputs=(out,))
        return out
    return wrap(r)


# ------------------------------------------------------------------------------------------ index_*
class IndexSelectBackward0(Node):
    def __init__(self, x, dim, index):
        super().__init__((x,))
        self.shape, self.dim, self.index = x._data.shape, dim, index

    def backward(self, g):
        return (index_add(_zeros(self.shape, g), self.dim, self.index, g),)


def index_select(input, dim: int, index) -> Tensor:
    """The slices of ``input`` at the 1-D (or 0-d) ``index`` along ``dim``."""
    r = _call("index_select", tk.index_select, input._data, dim, _index("index_select", index))
    if r.dtype.kind in "fc" and needs_grad(input):
        return IndexSelectBackward0(input, _dim(dim, max(input.ndim, 1)), index).output(r)
    return wrap(r)


class IndexAddBackward0(Node):
    def __init__(self, x, dim, index, source, alpha):
        super().__init__((x, source))
        self.dim, self.index, self.alpha = dim, index, alpha
        self.src_shape = source._data.shape

    def backward(self, g):
        gs = None
        if self.needs_input_grad[1]:
            gs = index_select(g, self.dim, self.index)
            if self.alpha != 1:
                gs = gs * self.alpha
            gs = gs.reshape(self.src_shape)
        return (g if self.needs_input_grad[0] else None), gs


def index_add(input, dim: int, index, source, *, alpha=1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` slices added at ``index`` along ``dim`` (repeats sum)."""
    if not isinstance(source, Tensor):
        raise OpTypeError(f"index_add(): argument 'source' must be Tensor, not {type(source).__name__}")
    r = _call("index_add", tk.index_add, input._data, dim, _index("index_add", index), source._data, alpha=alpha)
    if r.dtype.kind in "fc" and needs_grad(input, source):
        return IndexAddBackward0(input, _dim(dim, max(input.ndim, 1)), index, source, alpha).output(r)
    return wrap(r)


def _index_key(op, x, dim, index):
    """``x`` (at least 1-D), the normalized dim and the advanced-index key selecting ``index`` along it."""
    xa = x if x.ndim else tk.reshape(x, (1,))
    d = _dim(dim, xa.ndim)
    if index.ndim > 1:
        raise RuntimeError(f"{op}(): Index is supposed to be a vector, got shape {list(index.shape)}")
    return xa, d, (slice(None),) * d + (tk.reshape(index, (-1,)),)


class IndexCopyBackward0(Node):
    def __init__(self, x, dim, index, source):
        super().__init__((x, source))
        self.dim, self.index = dim, index
        self.src_shape = source._data.shape

    def backward(self, g):
        gi = index_fill(g, self.dim, self.index, 0.0) if self.needs_input_grad[0] else None
        gs = index_select(g, self.dim, self.index).reshape(self.src_shape) if self.needs_input_grad[1] else None
        return gi, gs


def index_copy(input, dim: int, index, source) -> Tensor:
    """A copy of ``input`` with the slices ``index`` along ``dim`` replaced by those of ``source``."""
    ia = _index("index_copy", index)
    if not isinstance(source, Tensor):
        raise OpTypeError(f"index_copy(): argument 'source' must be Tensor, not {type(source).__name__}")
    x = input._data
    xa, d, key = _index_key("index_copy", x, dim, ia)
    s = source._data
    want = xa.shape[:d] + (ia.size,) + xa.shape[d + 1:]
    if (s.shape if s.ndim else (1,)) != want:
        raise RuntimeError(f"index_copy(): source of shape {list(s.shape)} must have shape {list(want)} (self's "
                           f"shape {list(x.shape)} with dim {d} of the index's length {ia.size})")
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_copy(): self and source expected to have the same dtype, but got (self) "
                           f"{x.dtype} and (source) {s.dtype}")
    out = tk.copy(xa)
    tk.setitem_advanced(out, key, s if s.ndim else tk.reshape(s, (1,)))
    if not x.ndim:
        out = tk.reshape(out, ())
    if out.dtype.kind in "fc" and needs_grad(input, source):
        return IndexCopyBackward0(input, d, index, source).output(out)
    return wrap(out)


class IndexFillBackward0(Node):
    def __init__(self, x, dim, index, value):
        super().__init__((x, value))
        self.dim, self.index = dim, index

    def name(self):
        return "IndexFillBackward1" if self.needs_input_grad[1] else "IndexFillBackward0"

    def backward(self, g):
        gi = index_fill(g, self.dim, self.index, 0.0) if self.needs_input_grad[0] else None
        gv = None
        if self.needs_input_grad[1]:
            uniq = Tensor._wrap(tk.unique_values(tk.reshape(self.index._data, (-1,))))
            gv = index_select(g, self.dim, uniq).sum()
        return gi, gv


def index_fill(input, dim: int, index, value) -> Tensor:
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number or 0-d tensor)."""
    ia = _index("index_fill", index)
    x = input._data
    xa, d, key = _index_key("index_fill", x, dim, ia)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_(): only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s)")
        v = tk.astype(value._data, x.dtype) if value._data.dtype != x.dtype else value._data
    else:
        v = value
    out = tk.copy(xa)
    try:
        tk.setitem_advanced(out, key, v)
    except (ValueError, TypeError) as e:
        raise RuntimeError(_err("index_fill", e)) from None
    if not x.ndim:
        out = tk.reshape(out, ())
    if out.dtype.kind in "fc" and needs_grad(input, value):
        return IndexFillBackward0(input, d, index, value).output(out)
    return wrap(out)


# --------------------------------------------------------------------------------------------- masks
class MaskedFillBackward0(Node):
    def __init__(self, x, mask, value):
        super().__init__((x, value))
        self.mask = mask

    def name(self):
        return "MaskedFillBackward1" if self.needs_input_grad[1] else "MaskedFillBackward0"

    def backward(self, g):
        from .elementwise import where

        gi = g.masked_fill(self.mask, 0.0) if self.needs_input_grad[0] else None
        gv = where(self.mask, g, 0.0).sum() if self.needs_input_grad[1] else None
        return gi, gv


def masked_fill(input, mask, value) -> Tensor:
    """``value`` (a number or a 0-d tensor) where ``mask`` (bool, broadcasting) is true, else ``input``."""
    m = _mask("masked_fill", mask)
    x = input._data
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_(): only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s)")
        v = value._data
        if v.dtype != x.dtype:
            v = tk.astype(v, x.dtype)
    else:
        v = value
    r = _call("masked_fill", tk.masked_fill, x, m, v)
    if r.dtype.kind in "fc" and needs_grad(input, value):
        return MaskedFillBackward0(input, mask, value).output(r)
    return wrap(r)


class MaskedSelectBackward0(Node):
    def __init__(self, x, mask):
        super().__init__((x,))
        self.mask = mask
        self.shape = tk.broadcast_shapes(x._data.shape, mask._data.shape)

    def backward(self, g):
        return (masked_scatter(_zeros(self.shape, g), self.mask, g),)


def masked_select(input, mask) -> Tensor:
    """The 1-D tensor of the elements of ``input`` where ``mask`` is true (both broadcast)."""
    m = _mask("masked_select", mask)
    r = _call("masked_select", tk.masked_select, input._data, m)
    if r.dtype.kind in "fc" and needs_grad(input):
        return MaskedSelectBackward0(input, mask).output(r)
    return wrap(r)


class MaskedScatterBackward0(Node):
    def __init__(self, x, mask, source, count):
        super().__init__((x, source))
        self.mask, self.count = mask, count
        self.src_shape = source._data.shape

    def backward(self, g):
        gi = g.masked_fill(self.mask, 0.0) if self.needs_input_grad[0] else None
        gs = None
        if self.needs_input_grad[1]:
            from .shape import pad

            n = int(np.prod(self.src_shape))
            gs = pad(masked_select(g, self.mask), (0, n - self.count)).reshape(self.src_shape)
        return gi, gs


def masked_scatter(input, mask, source) -> Tensor:
    """A copy of ``input`` whose places where ``mask`` is true take the elements of ``source`` in order."""
    m = _mask("masked_scatter", mask)
    if not isinstance(source, Tensor):
        raise OpTypeError(f"masked_scatter(): argument 'source' must be Tensor, not {type(source).__name__}")
    x, s = input._data, source._data
    try:
        shape = tk.broadcast_shapes(x.shape, m.shape)
    except ValueError:
        raise RuntimeError(f"masked_scatter(): mask of shape {list(m.shape)} does not broadcast with self of shape "
                           f"{list(x.shape)}") from None
    if s.dtype != x.dtype:
        raise RuntimeError(f"masked_scatter(): expected self and source to have the same dtypes but got {x.dtype} "
                           f"and {s.dtype}")
    out = tk.copy(tk.broadcast_to(x, shape))
    mb = tk.broadcast_to(m, shape)
    k = int(tk.count_nonzero(mb).item())
    if k > s.size:
        raise RuntimeError(f"masked_scatter(): Number of elements of source ({s.size}, shape {list(s.shape)}) < "
                           f"number of ones in mask ({k})")
    if k:
        tk.setitem_advanced(out, (mb,), tk.reshape(s, (-1,))._basic_index((slice(0, k),)))
    if out.dtype.kind in "fc" and needs_grad(input, source):
        return MaskedScatterBackward0(input, mask, source, k).output(out)
    return wrap(out)


# -------------------------------------------------------------------------------- take, put, along dim
def _flat_index(idx, n):
    """A flat int64 index with negative entries counted from the end."""
    idx = tk.reshape(tk.astype(idx, tk.int64), (-1,))
    return tk.where(tk.less(idx, 0), tk.add(idx, n), idx)


class TakeBackward0(Node):
    def __init__(self, x, index):
        super().__init__((x,))
        self.shape, self.index = x._data.shape, index

    def backward(self, g):
        n = int(np.prod(self.shape))
        idx = Tensor._wrap(_flat_index(self.index._data, n))
        return (index_add(_zeros((n,), g), 0, idx, g.reshape(-1)).reshape(self.shape),)


def take(input, index) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (negative counts from the end); index's shape."""
    ia = _index("take", index)
    x = input._data
    if x.size == 0 and ia.size:
        raise IndexError(f"take(): tried to take from an empty tensor (shape {list(x.shape)})")
    r = _call("take", tk.take, x, ia)
    if r.dtype.kind in "fc" and needs_grad(input):
        return TakeBackward0(input, index).output(r)
    return wrap(r)


class PutBackward0(Node):
    def __init__(self, x, index, source, accumulate):
        super().__init__((x, source))
        self.index, self.accumulate = index, accumulate
        self.src_shape = source._data.shape

    def backward(self, g):
        gi = gs = None
        if self.needs_input_grad[0]:
            gi = g if self.accumulate else put(g, self.index, _zeros(self.src_shape, g))
        if self.needs_input_grad[1]:
            gs = take(g, self.index).reshape(self.src_shape)
        return gi, gs


def put(input, index, source, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with its flattened elements at ``index`` set to (``accumulate``: increased by)
    ``source``'s."""
    ia = _index("put", index)
    if not isinstance(source, Tensor):
        raise OpTypeError(f"put(): argument 'source' must be Tensor, not {type(source).__name__}")
    x, s = input._data, source._data
    if s.size != ia.size:
        raise RuntimeError(f"put(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {s.size}, index.numel() = {ia.size}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"put(): self ({x.dtype}) and source ({s.dtype}) must have the same scalar type")
    out = tk.copy(x)
    if ia.size:
        n = x.size
        flat = _flat_index(ia, n)
        lo, hi = int(tk.min(ia).item()), int(tk.max(ia).item())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"put(): index {bad} is out of bounds for a tensor of {n} elements (shape "
                             f"{list(x.shape)})")
        tk.index_put_(tk.reshape(out, (-1,)), (flat,), tk.reshape(s, (-1,)), accumulate=bool(accumulate))
    if out.dtype.kind in "fc" and needs_grad(input, source):
        return PutBackward0(input, index, source, bool(accumulate)).output(out)
    return wrap(out)


@names_op("take_along_dim")
def take_along_dim(input, indices, dim=None) -> Tensor:
    """``gather`` with broadcasting: ``indices`` and ``input`` broadcast off ``dim``; ``dim=None`` indexes the
    flattened input with the flattened indices."""
    ia = _index("take_along_dim", indices, "indices")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    x = input._data
    if x.ndim == 0:
        raise IndexError(f"take_along_dim(): Dimension specified as {dim} but tensor has no dimensions (a 0-d "
                         f"input takes dim=None only)")
    if ia.ndim != x.ndim:
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number of dimensions, but "
                           f"got {x.ndim} dimensions for input (shape {list(x.shape)}), and {ia.ndim} dimensions "
                           f"for indices (shape {list(ia.shape)})")
    d = _dim(dim, max(x.ndim, 1))
    if x.ndim:
        xs, js = list(x.shape), list(ia.shape)
        xs[d] = js[d] = 1
        try:
            b = list(tk.broadcast_shapes(tuple(xs), tuple(js)))
        except ValueError:
            raise RuntimeError(f"take_along_dim(): input of shape {list(x.shape)} and indices of shape "
                               f"{list(ia.shape)} do not broadcast off dim {d}") from None
        xb = tuple(b[:d] + [x.shape[d]] + b[d + 1:])
        jb = tuple(b[:d] + [ia.shape[d]] + b[d + 1:])
        if xb != x.shape:
            input = input.expand(xb)
        if jb != ia.shape:
            indices = indices.expand(jb)
    return gather(input, d, indices)


# ------------------------------------------------------------------------------- non-differentiable
def nonzero(input, *, as_tuple: bool = False):
    """Indices of the nonzero elements: an int64 (n, ndim) tensor, or (``as_tuple``) one 1-D tensor per dim."""
    x = input._data
    if as_tuple:
        return tuple(wrap(a) for a in tk.nonzero(x if x.ndim else tk.reshape(x, (1,))))
    return wrap(tk.argwhere(x))


def argwhere(input) -> Tensor:
    return wrap(tk.argwhere(input._data))


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """``torch.nn.functional.one_hot``: int64 ``tensor.shape + (num_classes,)`` with a 1 at each class."""
    a = tensor._data
    if a.dtype != tk.int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor (int64), got {a.dtype}")
    try:
        return wrap(tk.one_hot(a, num_classes))
    except ValueError as e:
        raise RuntimeError(f"one_hot(): {e}".replace("one_hot: ", "")) from None
