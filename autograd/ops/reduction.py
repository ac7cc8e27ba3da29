"""Reductions with PyTorch names and arguments (``dim``, ``keepdim``, ``dtype``): sum, mean, prod, max/min
(named tuples with ``dim``), amax/amin, arg-reductions, var/std, logsumexp, any/all, norms, nan-reductions and
the cumulative ops (cumsum, cumprod, cummax, cummin)."""

from __future__ import annotations

import builtins as _b
import collections
import math
import sys
import types

import tkernels as tk
from tkernels.validation import OpIndexError, OpTypeError, OpValueError, names_op

from ..grad_mode import STATE
from . import elementwise as _ew
from ._base import Node, Tensor, needs_grad, wrap

__all__ = ["sum", "mean", "unreduce", "norm_dims", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
           "aminmax", "var", "std", "var_mean", "std_mean", "logsumexp", "any", "all", "count_nonzero", "norm",
           "nansum", "nanmean", "cumsum", "cumprod", "cummax", "cummin", "dist", "return_types"]

METHODS = ["prod", "max", "min", "amax", "amin", "argmax", "argmin", "aminmax", "var", "std", "logsumexp", "any",
           "all", "count_nonzero", "norm", "nansum", "nanmean", "cumsum", "cumprod", "cummax", "cummin", "dist"]


def _rt(name, fields=("values", "indices")):
    t = collections.namedtuple(name, fields)
    t.__module__ = "autograd.return_types"
    return t


# PyTorch's torch.return_types: named tuples of multi-output ops
return_types = types.SimpleNamespace(**{n: _rt(n) for n in (
    "max", "min", "cummax", "cummin", "sort", "topk", "kthvalue", "median", "nanmedian", "mode")})
return_types.aminmax = _rt("aminmax", ("min", "max"))


def _public_caller() -> str:
    """The name of the public op that is validating a dim: the nearest caller without a leading underscore
    (only on the error path; the helpers between the op and ``norm_dims`` need not thread its name through)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_name.startswith("_"):
        f = f.f_back
    return f.f_code.co_name if f is not None else "dim"


def norm_dims(dim, ndim, op=None):
    """PyTorch's ``dim`` argument as a sorted tuple of non-negative axes (None: all)."""
    if dim is None:
        return None
    if isinstance(dim, int):
        dims = (dim,)
    else:
        dims = tuple(dim)
        if not dims:
            return None
    n = _b.max(ndim, 1)
    out = []
    for d in dims:
        d = int(d)
        if not -n <= d < n:
            raise IndexError(f"{op or _public_caller()}(): Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {d})")
        out.append(d % n)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(out))


def unreduce(g: Tensor, shape, dims, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back over ``shape`` (differentiable)."""
    if not STATE.grad_enabled and not g._requires_grad:
        # no graph of the backward (the common case): the same views of the array, without the autograd view
        # layer (version sharing, re-creation closures) that only in-place writes through them would need
        a = g._data
        if not keepdim and shape:
            a = a.expand_dims(tuple(sorted(range(len(shape)) if dims is None else dims)))
        return wrap(a.broadcast_to(tuple(shape)))
    if not keepdim and shape:
        dims = range(len(shape)) if dims is None else dims
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return g.expand(tuple(shape))


class SumBackward0(Node):
    def __init__(self, x, dims, keepdim):
        super().__init__((x,))
        self.shape = x._data.shape
        self.dims = dims
        self.keepdim = keepdim

    def backward(self, g):
        return (unreduce(g, self.shape, self.dims, self.keepdim),)


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A001
    a = input._data
    dims = norm_dims(dim, a.ndim)
    if dtype is None and a.dtype.kind in "biu":
        dtype = tk.int64
    if a.ndim == 0:
        r = tk.astype(a, dtype) if dtype is not None else tk.copy(a)
    else:
        r = tk.sum(a, axis=dims, keepdims=keepdim, dtype=dtype)
    if r.dtype.kind in "fc" and needs_grad(input):
        return SumBackward0(input, dims, keepdim).output(r)
    return wrap(r)


class MeanBackward0(SumBackward0):
    def backward(self, g):
        n = 1
        for i, s in enumerate(self.shape):
            if self.dims is None or i in self.dims:
                n *= s
        return (unreduce(g / _b.max(n, 1) if n else g * float("nan"), self.shape, self.dims, self.keepdim),)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    a = input._data
    if dtype is not None:
        a = tk.astype(a, dtype)
        input = input.to(dtype)
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {a.dtype}. Hint: call .float() first or pass dtype=")
    dims = norm_dims(dim, a.ndim)
    r = tk.copy(a) if a.ndim == 0 else tk.mean(a, axis=dims, keepdims=keepdim)
    if needs_grad(input):
        return MeanBackward0(input, dims, keepdim).output(r)
    return wrap(r)


def _numel(shape, dims):
    n = 1
    for i, s in enumerate(shape):
        if dims is None or i in dims:
            n *= s
    return n


def _keep_shape(shape, dims):
    return tuple(1 if dims is None or i in dims else s for i, s in enumerate(shape))


def _int_dim(op, dim, ndim):
    if isinstance(dim, tuple | list):
        if len(dim) != 1:
            raise OpTypeError(f"{op}(): argument 'dim' must be int, got {dim!r}")
        dim = dim[0]
    return norm_dims(int(dim), ndim)[0]


def _float_only(op, a):
    if a.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point input, got {a.dtype} (shape {list(a.shape)}). "
                           f"Hint: call .float() first")


# --------------------------------------------------------------------------------------- scatter-add
def _put(src, shape, dim, idx):
    """``zeros(shape).scatter_add(dim, idx, src)`` for an int64 Array ``idx`` (indexing's differentiable
    scatter_add: its backward is gather, so gradients of gradients work)."""
    from .indexing import scatter_add

    if tuple(src.shape) != tuple(idx.shape):
        src = src.expand(tuple(idx.shape))
    zeros = wrap(tk.zeros(shape, dtype=src._data.dtype, device=src._data.device))
    return scatter_add(zeros, dim, Tensor._wrap(idx), src)


class IndicesBackward(Node):
    """Outputs chosen from the input by ``indices`` along ``dim`` (max/min/median with dim, sort, topk,
    kthvalue, cummax...): the gradient goes back to the chosen positions (accumulated where repeated)."""

    def __init__(self, x, dim, idx, name):
        super().__init__((x,))
        self.shape, self.dim, self.idx, self._name = x._data.shape, dim, idx, name

    def name(self):
        return self._name

    def backward(self, g):
        if g.ndim != len(self.idx.shape):
            g = g.unsqueeze(self.dim)
        return (_put(g, self.shape, self.dim, self.idx),)


def select_result(input, values, idx, dim, keepdim, name, rtype):
    """``rtype(values, indices)`` for a reduction along ``dim`` that picks ``idx`` (Arrays)."""
    if values.dtype.kind in "fc" and needs_grad(input):
        node = IndicesBackward(input, dim, idx if keepdim else idx.unsqueeze(dim), name)
        v = node.output(values)
    else:
        v = wrap(values)
    return rtype(v, wrap(idx))


def evenly(g, x, out, dims, keepdim):
    """``g`` split evenly among the elements of ``x`` equal to the reduced ``out`` (NaN matches NaN), like
    PyTorch's amax/amin/max()/median() backward."""
    xa = x._data
    ob = tk.reshape(out._data, _keep_shape(xa.shape, dims))
    mask = tk.logical_or(tk.equal(xa, ob), tk.logical_and(tk.isnan(xa), tk.isnan(ob)))
    w = tk.astype(mask, xa.dtype)
    w = tk.divide(w, tk.sum(w, axis=dims, keepdims=True)) if xa.ndim else w
    return unreduce(g, xa.shape, dims, keepdim) * wrap(w)


class EvenlyBackward(Node):
    def __init__(self, x, dims, keepdim, name):
        super().__init__((x,))
        self.dims, self.keepdim, self._name = dims, keepdim, name

    def name(self):
        return self._name

    def backward(self, g):
        x, out = self.saved_tensors
        return (evenly(g, x, out, self.dims, self.keepdim),)


def _evenly_result(input, r, dims, keepdim, name):
    if r.dtype.kind in "fc" and needs_grad(input):
        node = EvenlyBackward(input, dims, keepdim, name)
        out = node.output(r)
        node.save(input, outputs=(out,))
        return out
    return wrap(r)


# ------------------------------------------------------------------------------- max / min / amax / amin
def _extreme(op, input, dims, keepdim, is_max, name):
    a = input._data
    if a.ndim == 0:
        r = tk.copy(a)
    else:
        if a.size == 0 and (dims is None or _b.any(a.shape[d] == 0 for d in dims)):
            raise OpIndexError(f"{op}(): expected a non-empty input to reduce (shape {list(a.shape)}, "
                               f"dim {dims}); the reduction has no identity. Hint: use a dim that is not empty")
        r = (tk.max if is_max else tk.min)(a, axis=dims, keepdims=keepdim)
    return _evenly_result(input, r, dims, keepdim, name)


def _minmax_dim(op, input, dim, keepdim, is_max):
    a = input._data
    if a.ndim == 0:
        _int_dim(op, dim, 0)
        v, i = _minmax_dim(op, input.reshape(1), 0, False, is_max)
        return getattr(return_types, op)(v, i)
    d = _nonempty_dim(op, a, dim)
    values = (tk.max if is_max else tk.min)(a, axis=d, keepdims=keepdim)
    idx = (tk.argmax if is_max else tk.argmin)(a, axis=d, keepdims=keepdim)
    return select_result(input, values, idx, d, keepdim, "MaxBackward0" if is_max else "MinBackward0",
                         getattr(return_types, op))


def max(input, dim=None, keepdim: bool = False):  # noqa: A001
    """``max(x)``: the largest element (0-d); ``max(x, dim, keepdim)``: named tuple ``(values, indices)``;
    ``max(x, other)``: elementwise ``maximum``."""
    if isinstance(dim, Tensor):
        return _ew.maximum(input, dim)
    if dim is None:
        return _extreme("max", input, None, False, True, "MaxBackward1")
    return _minmax_dim("max", input, dim, keepdim, True)


def min(input, dim=None, keepdim: bool = False):  # noqa: A001
    """``min(x)``, ``min(x, dim, keepdim)`` → ``(values, indices)``, or elementwise ``minimum(x, other)``."""
    if isinstance(dim, Tensor):
        return _ew.minimum(input, dim)
    if dim is None:
        return _extreme("min", input, None, False, False, "MinBackward1")
    return _minmax_dim("min", input, dim, keepdim, False)


def amax(input, dim=(), keepdim: bool = False):
    """Largest values over ``dim`` (all by default); the gradient is split evenly among ties."""
    return _extreme("amax", input, norm_dims(dim, input._data.ndim), keepdim, True, "AmaxBackward0")


def amin(input, dim=(), keepdim: bool = False):
    """Smallest values over ``dim`` (all by default); the gradient is split evenly among ties."""
    return _extreme("amin", input, norm_dims(dim, input._data.ndim), keepdim, False, "AminBackward0")


def aminmax(input, *, dim=None, keepdim: bool = False):
    """Named tuple ``(min, max)`` over ``dim`` (all by default)."""
    d = None if dim is None else _int_dim("aminmax", dim, input._data.ndim)
    return return_types.aminmax(amin(input, () if d is None else d, keepdim),
                                amax(input, () if d is None else d, keepdim))


def _nonempty_dim(op, a, dim):
    """``dim`` normalized for a reduction without an identity (max, min, argmax, argmin): only the reduced dim
    must be non-empty (PyTorch: argmax of shape (3, 0, 2) over dim 0 is an empty (0, 2) result)."""
    d = _int_dim(op, dim, a.ndim)
    if a.shape[d] == 0:
        raise OpIndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (input shape {list(a.shape)}, "
                           f"dtype {a.dtype}, device {a.device}); the reduction has no identity. Hint: reduce over a "
                           f"non-empty dim, or check for empty inputs first")
    return d


def _arg(op, input, dim, keepdim, fn):
    a = input._data
    if a.ndim == 0:
        if dim is not None:
            _int_dim(op, dim, 0)
        return wrap(tk.zeros((), dtype=tk.int64, device=a.device))
    if dim is not None:
        d = _nonempty_dim(op, a, dim)
    elif a.size == 0:
        raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0 (input shape "
                         f"{list(a.shape)}, dtype {a.dtype}, device {a.device}). Hint: pass a dim of non-zero size")
    else:
        d = None
    return wrap(tk.astype(fn(a, axis=d, keepdims=keepdim), tk.int64, copy=False))


def argmax(input, dim=None, keepdim: bool = False):
    """Index of the largest value (over the flattened input without ``dim``); int64, no gradient."""
    return _arg("argmax", input, dim, keepdim, tk.argmax)


def argmin(input, dim=None, keepdim: bool = False):
    """Index of the smallest value (over the flattened input without ``dim``); int64, no gradient."""
    return _arg("argmin", input, dim, keepdim, tk.argmin)


# ------------------------------------------------------------------------------------------------- prod
def _prod_grad(x, g, out, d, keepdim):
    """Gradient of ``prod(x, d)``: ``g * out / x`` without zeros, else the product of the other elements
    (formed as a product over an (n, n) matrix so it stays differentiable)."""
    shape = tuple(x.shape)
    gu = unreduce(g, shape, (d,), keepdim)
    if not tk.any(tk.equal(x._data, 0)).item():
        return gu * unreduce(out, shape, (d,), keepdim) / x
    n = shape[d]
    ar = tk.arange(n, dtype=tk.int64, device=x._data.device)
    diag = wrap(tk.equal(tk.reshape(ar, (n, 1)), tk.reshape(ar, (1, n))))
    others = prod(_ew.where(diag, 1.0, x.movedim(d, -1).unsqueeze(-2)), -1)
    return gu * others.movedim(-1, d)


class ProdBackward0(Node):
    def __init__(self, x, dim, keepdim):
        super().__init__((x,))
        self.dim, self.keepdim = dim, keepdim

    def name(self):
        return "ProdBackward0" if self.dim is None else "ProdBackward1"

    def backward(self, g):
        x, out = self.saved_tensors
        if self.dim is None:
            return (_prod_grad(x.reshape(-1), g.reshape(()), out.reshape(()), 0, False).reshape(tuple(x.shape)),)
        return (_prod_grad(x, g, out, self.dim, self.keepdim),)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product of the elements (over ``dim``); integer inputs give int64. The gradient is exact with zeros."""
    a = input._data
    if dtype is None and a.dtype.kind in "biu":
        dtype = tk.int64
    d = None if dim is None else _int_dim("prod", dim, a.ndim)
    if a.ndim == 0:
        r = tk.astype(a, dtype) if dtype is not None else tk.copy(a)
    else:
        r = tk.prod(a, axis=d, keepdims=keepdim, dtype=dtype)
    if r.dtype.kind in "fc" and a.dtype.kind in "fc" and needs_grad(input):
        node = ProdBackward0(input, d if a.ndim else None, keepdim)
        out = node.output(r)
        node.save(input, outputs=(out,))
        return out
    return wrap(r)


# -------------------------------------------------------------------------------------------- var / std
def _var_args(op, input, dim, unbiased, correction):
    if isinstance(dim, bool):  # var(x, False): the `unbiased` overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): cannot specify both 'unbiased' and 'correction'. Hint: correction=0 is "
                           f"unbiased=False, correction=1 is unbiased=True")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    a = input._data
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"{op}(): std and var only support floating point and complex dtypes, got {a.dtype} "
                           f"(shape {list(a.shape)}). Hint: call .float() first")
    return norm_dims(dim, a.ndim), float(correction)


class VarBackward0(Node):
    def __init__(self, x, dims, keepdim, correction, std):
        super().__init__((x,))
        self.dims, self.keepdim, self.c, self.std = dims, keepdim, correction, std
        self.n = _numel(x._data.shape, dims)

    def name(self):
        return "StdBackward0" if self.std else "VarBackward0"

    def backward(self, g):
        x, out = self.saved_tensors
        if self.std:  # d std = d var / (2 std); PyTorch's convention: 0 where std == 0
            zero = _ew.eq(out, 0.0)
            g = _ew.where(zero, 0.0, g / (_ew.where(zero, 1.0, out) * 2.0))
        dof = self.n - self.c
        scale = 2.0 / dof if dof != 0 else math.inf
        xc = x - x.mean(self.dims, keepdim=True) if x.ndim else x * 0.0
        return (unreduce(g, tuple(x.shape), self.dims, self.keepdim) * xc * scale,)


def _var_std(op, input, dim, unbiased, keepdim, correction):
    dims, c = _var_args(op, input, dim, unbiased, correction)
    a = input._data
    if a.dtype.kind == "c":  # PyTorch's: the mean of |z - mean|^2 = var(real) + var(imag), real (differentiable)
        from .complex_ops import imag, real
        v = var(real(input), dims, keepdim=keepdim, correction=c) + var(imag(input), dims, keepdim=keepdim,
                                                                          correction=c)
        if op == "var":
            return v
        from .elementwise import sqrt
        return sqrt(v)
    fn = tk.std if op == "std" else tk.var
    r = fn(a if a.ndim else tk.reshape(a, (1,)), axis=dims, correction=c, keepdims=keepdim)
    if a.ndim == 0:
        r = tk.reshape(r, ())
    if needs_grad(input):
        node = VarBackward0(input, dims, keepdim, c, op == "std")
        out = node.output(r)
        node.save(input, outputs=(out,))
        return out
    return wrap(r)


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Variance over ``dim`` with ``correction`` (default 1: Bessel's; ``unbiased=False`` is 0)."""
    return _var_std("var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Standard deviation over ``dim`` with ``correction`` (default 1); the gradient is 0 where it is 0."""
    return _var_std("std", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim``."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


# ------------------------------------------------------------------------------------------- logsumexp
class LogsumexpBackward0(Node):
    def __init__(self, x, dims, keepdim):
        super().__init__((x,))
        self.dims, self.keepdim = dims, keepdim

    def backward(self, g):
        x, out = self.saved_tensors
        if not STATE.grad_enabled and not g._requires_grad:
            # no graph of the backward: the same arithmetic on the arrays (broadcasting the reduced ones)
            xa, oa, ga = x._data, out._data, g._data
            if not self.keepdim and xa._shape:
                ax = tuple(sorted(range(len(xa._shape)) if self.dims is None else self.dims))
                oa, ga = oa.expand_dims(ax), ga.expand_dims(ax)
            return (wrap(tk.multiply(ga, tk.exp(tk.subtract(xa, oa)))),)
        shape = tuple(x.shape)
        return (unreduce(g, shape, self.dims, self.keepdim) * (x - unreduce(out, shape, self.dims,
                                                                            self.keepdim)).exp(),)


def logsumexp(input, dim, keepdim: bool = False):
    """``log(sum(exp(x), dim))`` computed stably; integer inputs are promoted to the default float dtype."""
    a = input._data
    if a.dtype.kind == "c":  # log(sum(exp(z))) (holomorphic), shifted by the largest real part for stability
        return _complex_logsumexp(input, norm_dims(dim, a.ndim), keepdim)
    if a.dtype.kind != "f":
        input = input.to(tk.get_default_dtype())
        a = input._data
    dims = norm_dims(dim, a.ndim)
    r = tk.copy(a) if a.ndim == 0 else tk.logsumexp(a, axis=dims, keepdims=keepdim)
    if needs_grad(input):
        node = LogsumexpBackward0(input, dims, keepdim)
        out = node.output(r)
        node.save(input, outputs=(out,))
        return out
    return wrap(r)


def _complex_logsumexp(input, dims, keepdim):
    """``log(sum(exp(z)))`` of complex ``z`` through differentiable ops: ``m + log(sum(exp(z - m)))`` with ``m``
    the largest real part (a constant; 0 where it is not finite), as PyTorch computes it."""
    from .complex_ops import real
    from .elementwise import exp, log

    if not dims:
        return input * 1
    m = wrap(tk.max(real(input)._data, axis=dims, keepdims=True))
    m = wrap(tk.where(tk.isfinite(m._data), m._data, 0.0))
    r = log(sum(exp(input - m), dims, keepdim=True)) + m
    return r if keepdim else r.squeeze(dims)


# -------------------------------------------------------------------------------- boolean and counting
def any(input, dim=None, keepdim: bool = False):  # noqa: A001
    """True where any element over ``dim`` is nonzero (bool, no gradient)."""
    a = input._data
    return wrap(tk.any(a, axis=norm_dims(dim, a.ndim), keepdims=keepdim))


def all(input, dim=None, keepdim: bool = False):  # noqa: A001
    """True where every element over ``dim`` is nonzero (bool, no gradient)."""
    a = input._data
    return wrap(tk.all(a, axis=norm_dims(dim, a.ndim), keepdims=keepdim))


def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (int64)."""
    a = input._data
    return wrap(tk.astype(tk.count_nonzero(a, axis=norm_dims(dim, a.ndim)), tk.int64, copy=False))


@names_op("nansum")
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum treating NaN as zero (NaN positions get no gradient)."""
    if input._data.dtype.kind == "f":
        input = _ew.where(wrap(tk.isnan(input._data)), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Mean of the non-NaN elements over ``dim``."""
    if dtype is not None:
        input = input.to(dtype)
    a = input._data
    _float_only("nanmean", a)
    dims = norm_dims(dim, a.ndim)
    keep = tk.logical_not(tk.isnan(a))
    cnt = tk.sum(keep, axis=dims, keepdims=keepdim, dtype=a.dtype) if a.ndim else tk.astype(keep, a.dtype)
    return nansum(input, dim, keepdim) / wrap(cnt)


# ------------------------------------------------------------------------------------------------- norms
class LinalgVectorNormBackward0(Node):
    _holomorphic = False  # a real result: its formula, with sgn(z) = z / |z|, is already the complex gradient

    def __init__(self, x, p, dims, keepdim):
        super().__init__((x,))
        self.p, self.dims, self.keepdim = p, dims, keepdim

    def backward(self, g):
        x, out = self.saved_tensors
        p, dims, keepdim, shape = self.p, self.dims, self.keepdim, tuple(x.shape)
        gu = unreduce(g, shape, dims, keepdim)
        if p == 0:
            return (gu * 0.0,)
        if p == 1:
            return (x.sign() * gu,)
        if math.isinf(p):
            return (x.sign() * evenly(g, x.abs(), out, dims, keepdim),)
        ou = unreduce(out, shape, dims, keepdim)
        zero = _ew.eq(ou, 0.0)
        safe = _ew.where(zero, 1.0, ou)  # no inf/nan anywhere, also in double backward
        if p == 2:
            return (x * _ew.where(zero, 0.0, gu / safe),)
        xz = _ew.eq(x, 0.0)
        scaled = x.sign() * _ew.where(xz, 0.0, _ew.where(xz, 1.0, x.abs()) ** (p - 1))
        return (scaled * _ew.where(zero, 0.0, gu / safe ** (p - 1)),)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all by default); ``ord`` may be inf, -inf, 0 or any float.
    The gradient at a zero norm is 0 (PyTorch's convention)."""
    if dtype is not None:
        x = x.to(dtype)
    a = x._data
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point tensor as input, got {a.dtype} "
                           f"(shape {list(a.shape)}). Hint: call .float() or pass dtype=")
    if isinstance(ord, str):
        raise OpValueError(f"linalg.vector_norm: ord must be a number, got {ord!r}. Hint: use "
                           f"linalg.matrix_norm for 'fro' and 'nuc'")
    p = float(ord)
    dims = norm_dims(dim, a.ndim)
    if a.size == 0 and p < 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           f"operation does not have an identity")
    src = a if a.ndim else tk.reshape(a, (1,))
    r = tk.vector_norm(src, axis=dims, keepdims=keepdim, ord=p)
    if a.ndim == 0:
        r = tk.reshape(r, ())
    if needs_grad(x):
        node = LinalgVectorNormBackward0(x, p, dims, keepdim)
        out = node.output(r)
        node.save(x, outputs=(out,))
        return out
    return wrap(r)


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """``torch.norm``: a vector p-norm over ``dim`` (all by default); ``'fro'`` is the 2-norm."""
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            if dim is None and input.ndim != 2:
                raise RuntimeError(f"norm(): p='nuc' without dim expects a tensor with 2 dimensions, but got "
                                   f"{input.ndim} dimensions (shape {list(input.shape)}). Hint: pass dim=(-2, -1)")
            if dim is not None and (isinstance(dim, int) or len(dim) != 2):
                raise RuntimeError(f"norm(): p='nuc' needs dim to be a 2-tuple, got {dim!r}")
            from ..linalg import matrix_norm  # (autograd.linalg imports this module)
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
        raise RuntimeError(f"norm(): unsupported p={p!r} with dim={dim!r}. Hint: p is a number, 'fro' or 'nuc'")
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def dist(input, other, p=2):  # noqa: A002
    """``torch.dist``: the p-norm of ``input - other`` (broadcast) over all elements (real for complex input)."""
    return vector_norm(input - other, p, None, False)


# ------------------------------------------------------------------------------------------ cumulative
class FlipBackward0(Node):
    def __init__(self, x, dims):
        super().__init__((x,))
        self.dims = dims

    def backward(self, g):
        return (flip_(g, self.dims),)


def flip_(x, dims):
    """``x.flip(dims)`` (internal, differentiable)."""
    r = tk.flip(x._data, axis=dims)
    if needs_grad(x):
        return FlipBackward0(x, dims).output(r)
    return wrap(r)


class CumsumBackward0(Node):
    def __init__(self, x, dim):
        super().__init__((x,))
        self.dim = dim

    def backward(self, g):
        d = self.dim
        return (flip_(cumsum(flip_(g, d), d), d),)


def _scan_0d(fn, input, dim, **kw):
    _int_dim(fn.__name__, dim, 0)
    r = fn(input.reshape(1), 0, **kw)
    return tuple(t.reshape(()) for t in r) if isinstance(r, tuple) else r.reshape(())


def cumsum(input, dim, *, dtype=None):
    """Running sums along ``dim``; integer and bool inputs give int64."""
    a = input._data
    if a.ndim == 0:
        return _scan_0d(cumsum, input, dim, dtype=dtype)
    d = _int_dim("cumsum", dim, a.ndim)
    if dtype is None and a.dtype.kind in "biu":
        dtype = tk.int64
    r = tk.cumsum(a, d, dtype=dtype)
    if r.dtype.kind in "fc" and a.dtype.kind in "fc" and needs_grad(input):
        return CumsumBackward0(input, d).output(r)
    return wrap(r)


def _cumprod_grad(x, g, out, d):
    """Gradient of ``cumprod(x, d)``: a reversed cumsum over ``x`` without zeros; with zeros,
    ``prod_{j<k} x_j * sum_{i>=k} g_i prod_{k<j<=i} x_j`` over (n, n) matrices (differentiable, O(n^2))."""
    if not tk.any(tk.equal(x._data, 0)).item():
        return flip_(cumsum(flip_(g * out, d), d), d) / x
    n = x.shape[d]
    ar = tk.arange(n, dtype=tk.int64, device=x._data.device)
    k, j = tk.reshape(ar, (n, 1)), tk.reshape(ar, (1, n))
    row = x.movedim(d, -1).unsqueeze(-2)  # [..., k, j] = x_j
    left = prod(_ew.where(wrap(tk.less(j, k)), row, 1.0), -1)
    tri = cumprod(_ew.where(wrap(tk.greater(j, k)), row, 1.0), -1)
    upper = wrap(tk.astype(tk.greater_equal(j, k), x._data.dtype))
    right = (tri * upper * g.movedim(d, -1).unsqueeze(-2)).sum(-1)
    return (left * right).movedim(-1, d)


class CumprodBackward0(Node):
    def __init__(self, x, dim):
        super().__init__((x,))
        self.dim = dim

    def backward(self, g):
        x, out = self.saved_tensors
        return (_cumprod_grad(x, g, out, self.dim),)


def cumprod(input, dim, *, dtype=None):
    """Running products along ``dim``; the gradient is exact with zeros in the input."""
    a = input._data
    if a.ndim == 0:
        return _scan_0d(cumprod, input, dim, dtype=dtype)
    d = _int_dim("cumprod", dim, a.ndim)
    if dtype is None and a.dtype.kind in "biu":
        dtype = tk.int64
    r = tk.cumprod(a, d, dtype=dtype)
    if r.dtype.kind in "fc" and a.dtype.kind in "fc" and needs_grad(input):
        node = CumprodBackward0(input, d)
        out = node.output(r)
        node.save(input, outputs=(out,))
        return out
    return wrap(r)


def _cum_extreme(a, d, is_max):
    """Running max/min along ``d`` and the index of the last element equal to it (NaN wins), by a
    Hillis-Steele scan: log2(n) whole-array steps, no per-element loop."""
    v = tk.moveaxis(a, d, -1)
    n = v.shape[-1]
    idx = tk.broadcast_to(tk.arange(n, dtype=tk.int64, device=a.device), v.shape)
    cmp = tk.greater_equal if is_max else tk.less_equal
    s = 1
    while s < n:
        vl, vr, il, ir = v[..., :-s], v[..., s:], idx[..., :-s], idx[..., s:]
        right = tk.logical_or(cmp(vr, vl), tk.isnan(vr)) if a.dtype.kind == "f" else cmp(vr, vl)
        v = tk.concat([v[..., :s], tk.where(right, vr, vl)], axis=-1)
        idx = tk.concat([idx[..., :s], tk.where(right, ir, il)], axis=-1)
        s *= 2
    return tk.moveaxis(v, -1, d), tk.moveaxis(idx, -1, d)


def _cum_op(op, input, dim, is_max):
    a = input._data
    if a.ndim == 0:
        _int_dim(op, dim, 0)
        v, i = _cum_op(op, input.reshape(1), 0, is_max)
        return getattr(return_types, op)(v.reshape(()), i.reshape(()))
    d = _int_dim(op, dim, a.ndim)
    v, idx = _cum_extreme(a, d, is_max) if a.size else (tk.copy(a), tk.zeros(a.shape, dtype=tk.int64,
                                                                             device=a.device))
    v, idx = tk.copy(v), tk.copy(idx)
    name = "CummaxBackward0" if is_max else "CumminBackward0"
    return select_result(input, v, idx, d, True, name, getattr(return_types, op))


def cummax(input, dim):
    """Named tuple ``(values, indices)``: running maximum along ``dim`` and where it was (last among ties)."""
    return _cum_op("cummax", input, dim, True)


def cummin(input, dim):
    """Named tuple ``(values, indices)``: running minimum along ``dim`` and where it was (last among ties)."""
    return _cum_op("cummin", input, dim, False)
