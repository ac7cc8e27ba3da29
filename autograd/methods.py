"""Tensor methods and operators, installed from the functions of ``autograd.ops`` (an op is defined once:
``x.exp()`` *is* ``autograd.exp``), plus the in-place ``_`` variants, made generically from the out-of-place
function by ``ops._base.inplace``."""

from __future__ import annotations

import numpy as _np

from . import ops as O  # noqa: N812
from .grad_mode import STATE
from .ops import _base
from .ops import elementwise as _ew
from .tensor import Tensor

# functions whose first argument is the tensor: methods of the same name
_METHODS = [
    # elementwise
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan",
    "arctan", "atanh", "arctanh", "ceil", "floor", "trunc", "fix", "sign", "sgn", "cos", "cosh", "sin", "sinh",
    "tan", "tanh", "erf", "lgamma", "digamma", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "neg",
    "negative", "positive",
    "reciprocal", "rsqrt", "sigmoid", "sqrt", "square", "relu", "nan_to_num", "logit", "round", "isfinite",
    "isinf", "isnan", "isposinf", "isneginf", "isreal", "signbit", "logical_not", "bitwise_not", "conj",
    "resolve_conj", "resolve_neg", "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
    "floor_divide", "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "hypot", "maximum", "minimum",
    "copysign", "logaddexp", "nextafter", "xlogy", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "eq", "ne", "lt", "le", "gt", "ge",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "clamp", "clip", "clamp_min", "clamp_max",
    "lerp", "addcmul", "addcdiv", "sinc", "deg2rad", "rad2deg",
    # views and copies
    "clone", "contiguous", "reshape", "view", "view_as", "reshape_as", "permute", "transpose", "swapaxes",
    "swapdims", "t", "expand", "expand_as", "broadcast_to", "squeeze", "unsqueeze", "flatten", "unflatten",
    "movedim", "moveaxis", "select", "narrow", "unbind", "split", "chunk", "tensor_split", "diagonal",
    "as_strided", "index_put",
    # reductions and linalg
    "sum", "mean", "matmul", "mm", "bmm", "mv", "dot",
]

# in-place variants: name_ -> (function, needs the old value for backward)
_INPLACE = {
    "add": False, "sub": False, "subtract": False, "mul": True, "multiply": True, "div": True, "divide": True,
    "true_divide": True, "pow": True, "neg": False, "negative": False, "abs": True, "exp": True, "exp2": True,
    "expm1": True, "log": True, "log10": True, "log1p": True, "log2": True, "sqrt": True, "rsqrt": True,
    "sigmoid": True, "tanh": True, "relu": True, "clamp": True, "clip": True, "clamp_min": True,
    "clamp_max": True, "floor": False, "ceil": False, "round": False, "trunc": False, "fix": False, "sign": False,
    "sin": True, "cos": True, "tan": True, "sinh": True, "cosh": True, "asin": True, "acos": True, "atan": True,
    "reciprocal": True, "square": True, "lerp": True, "addcmul": True, "addcdiv": True, "erf": True,
    "lgamma": True, "digamma": True,
    "nan_to_num": True, "remainder": True, "fmod": True, "floor_divide": False, "atan2": True, "hypot": True,
    "logit": True, "copysign": True, "logical_not": False, "logical_and": False, "logical_or": False,
    "logical_xor": False, "bitwise_and": False, "bitwise_or": False, "bitwise_xor": False, "eq": False,
    "ne": False, "lt": False, "le": False, "gt": False, "ge": False, "xlogy": True, "index_put": False,
}

_SUPPORTS_OUT = set()
_OPERANDS = (Tensor, int, float, bool, _np.ndarray)  # what comparisons take (others: NotImplemented)


def _supports_out(fn):
    import inspect

    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def make_inplace(name, fn, needs_old=True):
    """``x.name_(...)``: writes ``fn(x, ...)`` into ``x``."""
    op = name + "_"
    use_out = _supports_out(fn)
    tk_fn = getattr(fn, "_tk", None)  # a binary elementwise op's tkernels entry

    def method(self, *args, **kwargs):
        if tk_fn is not None and len(args) == 1 and not kwargs and not self._inference:
            # the common case (optimizer arithmetic, masks) without a graph: what fn(self, other, out=self) does,
            # minus its layers (same tkernels call, same checks there, same version bump)
            other = args[0]
            oc = other.__class__
            tensor = oc is Tensor
            if (tensor or oc is float or oc is int) and not (
                    STATE.grad_enabled and (self._requires_grad or tensor and other._requires_grad)):
                tk_fn(self._data, other._data if tensor else other, out=self._data)
                self._version.v += 1
                return self
        if use_out and not _base.needs_grad(self, *args, *kwargs.values()) and not self._inference:
            fn(self, *args, out=self, **kwargs)
            return self
        return _base.inplace(op, self, fn, *args, needs_old=needs_old, **kwargs)

    method.__name__ = op
    method.__qualname__ = f"Tensor.{op}"
    method.__doc__ = f"In-place version of :func:`{name}`."
    return method


def _fill(old, value):
    from . import factory

    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions")
        return O.expand(value.reshape(()).to(dtype=old.dtype, device=old.device), tuple(old.shape))
    return factory.full(tuple(old.shape), value, dtype=old.dtype, device=old.device)


def fill_diagonal_(self, fill_value, wrap: bool = False):
    """Fill the main diagonal in place (``x[i, i, ...] = fill_value``; all dims of one length beyond 2-D). With
    ``wrap`` a tall matrix's diagonal starts again after a skipped row every ``ncols + 1`` rows (NumPy's and
    PyTorch's rule). Differentiable as an indexed assignment."""
    from . import factory

    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must larger than 1, got a {len(shape)}-D tensor")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, got {list(shape)}")
    rows, cols = shape[0], shape[1]
    if len(shape) == 2 and wrap and rows > cols + 1:
        flat = list(range(0, rows * cols, cols + 1))  # NumPy's wrapped diagonal: flat positions ncols + 1 apart
        idx = (factory.tensor([p // cols for p in flat], device=self.device),
               factory.tensor([p % cols for p in flat], device=self.device))
    else:
        n = min(shape)
        ar = factory.arange(n, device=self.device)
        idx = (ar,) * len(shape)
    self[idx] = fill_value
    return self


# in-place versions of view ops: the tensor itself becomes the view (its data rebound, its version bumped so that
# a backward which saved it refuses rather than reading another shape)
_VIEW_INPLACE = ("squeeze", "unsqueeze", "t", "transpose", "swapdims", "swapaxes")


def _view_inplace(name):
    def method(self, *args, **kwargs):
        fn = getattr(O, name)
        if self._requires_grad and STATE.grad_enabled:
            if self._grad_fn is None and self._base is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise NotImplementedError(f"{name}_(): in-place view ops on a tensor that is part of an autograd graph "
                                      f"are not supported (shape {list(self.shape)}); hint: x = x.{name}(...)")
        from .grad_mode import no_grad

        with no_grad():
            new = fn(self, *args, **kwargs)
        self._data = new._data
        if self._view_fn is not None:  # (a view: recomputed from its base as this op of the old view)
            old = self._view_fn
            self._view_fn = lambda b: fn(old(b), *args, **kwargs)
        self._version.v += 1
        return self

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place version of :func:`{name}`: this tensor becomes the view."
    return method


def resize_(self, *sizes, memory_format=None):
    """Give the tensor the shape ``sizes`` in place: its first elements (in row-major order) are kept, new ones
    are uninitialized (zeros here); not for tensors that require grad (PyTorch refuses them too)."""
    import math as _math

    import tkernels as tk

    if len(sizes) == 1 and isinstance(sizes[0], list | tuple):
        sizes = tuple(sizes[0])
    sizes = tuple(int(n) for n in sizes)
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"resize_: negative dimension in {list(sizes)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n, have = _math.prod(sizes), self.numel()
    flat = tk.reshape(tk.copy(self._data) if not self.is_contiguous() else self._data, (-1,))
    if n <= have:
        data = tk.reshape(flat[:n], sizes)
    else:
        grown = tk.zeros((n,), dtype=self._data.dtype, device=self._data.device)
        grown[:have] = flat
        data = tk.reshape(grown, sizes)
    self._data = data
    self._version.v += 1
    return self


def fill_(self, value):
    return _base.inplace("fill_", self, _fill, value, needs_old=False)


def zero_(self):
    if not _base.needs_grad(self):
        self._data_fill_(0)
        return self
    return _base.inplace("zero_", self, _fill, 0, needs_old=False)


def _random_fill(kind):
    def method(self, *args, generator=None, **kwargs):
        import tkernels as tk

        from . import factory

        def gen(old):
            shape, dt, dev = tuple(old.shape), old.dtype, old.device
            if kind == "uniform_":
                lo, hi = (list(args) + [kwargs.get("from", 0.0), kwargs.get("to", 1.0)][len(args):])[:2]
                lo = kwargs.get("a", lo)
                hi = kwargs.get("b", hi)
                arr = tk.random.uniform(lo, hi, shape, dtype=dt, device=dev, generator=generator)
            elif kind == "normal_":
                mean, std = (list(args) + [kwargs.get("mean", 0.0), kwargs.get("std", 1.0)][len(args):])[:2]
                arr = tk.random.normal(mean, std, shape, dtype=dt, device=dev, generator=generator)
            elif kind == "bernoulli_":
                p = args[0] if args else kwargs.get("p", 0.5)
                p = p._data if isinstance(p, Tensor) else p
                arr = tk.random.bernoulli(p, shape, dtype=dt, device=dev, generator=generator)
            elif kind == "exponential_":
                lambd = args[0] if args else kwargs.get("lambd", 1.0)
                u = tk.random.rand(shape, dtype=tk.float64, device=dev, generator=generator)
                arr = tk.astype(tk.divide(tk.negative(tk.log1p(tk.negative(u))), lambd), dt)
            else:  # random_(from, to)
                lo, hi = (0, args[0]) if len(args) == 1 else (args[0], args[1])
                arr = tk.random.randint(lo, hi, shape, dtype=dt, device=dev, generator=generator)
            return factory.as_tensor(arr)
        return _base.inplace(kind, self, gen, needs_old=False)

    method.__name__ = kind
    return method


def _install():
    for n in _METHODS:
        setattr(Tensor, n, getattr(O, n))
    for mod in (O.shape, O.indexing, O.searching, O.nn_ops, O.conv_ops, O.reduction, O.linalg, O.complex_ops,
                O.linalg_toplevel, O.composites):
        for n in getattr(mod, "METHODS", ()):
            fn = getattr(mod, n)
            public = getattr(O, n, None)  # (the package's version: with NumPy's keyword names, ops/__init__.py)
            setattr(Tensor, n, public if getattr(public, "__wrapped__", None) is fn else fn)
        for n, old in getattr(mod, "INPLACE", {}).items():
            _INPLACE.setdefault(n, old)
    for n, needs_old in _INPLACE.items():
        if hasattr(O, n) and not hasattr(Tensor, n + "_"):
            setattr(Tensor, n + "_", make_inplace(n, getattr(O, n), needs_old))
    Tensor.polygamma = lambda self, n: O.polygamma(n, self)  # (torch's argument order: x.polygamma(n))
    Tensor.fill_ = fill_
    Tensor.fill_diagonal_ = fill_diagonal_
    Tensor.resize_ = resize_
    for n in _VIEW_INPLACE:
        setattr(Tensor, n + "_", _view_inplace(n))
    Tensor.zero_ = zero_
    Tensor.copy_ = O.copy_
    for kind in ("uniform_", "normal_", "bernoulli_", "exponential_", "random_"):
        setattr(Tensor, kind, _random_fill(kind))

    T = Tensor
    T.T = property(O.T)
    T.mT = property(O.mT)
    T.H = property(lambda t: O.conj(O.T(t)))
    T.mH = property(O.adjoint)
    T.real = property(O.real)
    T.imag = property(O.imag)
    T.__getitem__ = O.getitem
    T.__setitem__ = O.setitem
    T.__neg__ = O.neg
    T.__pos__ = O.positive
    T.__abs__ = O.abs
    T.__invert__ = O.bitwise_not
    T.__matmul__ = O.matmul
    T.__rmatmul__ = lambda s, o: O.matmul(o, s)
    # operators call the table's add/sub/mul (no alpha= layer) directly
    binops = {"add": _ew._add, "sub": _ew._sub, "mul": _ew._mul, "truediv": _ew._div, "floordiv": O.floor_divide,
              "mod": O.remainder, "pow": O.pow, "and": O.bitwise_and, "or": O.bitwise_or, "xor": O.bitwise_xor,
              "lshift": O.bitwise_left_shift, "rshift": O.bitwise_right_shift}
    for name, fn in binops.items():
        setattr(T, f"__{name}__", fn)  # the function itself (a method: fn(self, other)), one frame less
        setattr(T, f"__r{name}__", (lambda f: lambda s, o: f(o, s))(fn))
    inplace_of = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_", "floordiv": "floor_divide_",
                  "mod": "remainder_", "pow": "pow_", "and": "bitwise_and_", "or": "bitwise_or_",
                  "xor": "bitwise_xor_"}
    for name, meth in inplace_of.items():
        setattr(T, f"__i{name}__", (lambda m: lambda s, o: getattr(s, m)(o))(meth))
    T.__imatmul__ = lambda s, o: s.copy_(O.matmul(s, o))
    for name, fn in {"eq": O.eq, "ne": O.ne, "lt": O.lt, "le": O.le, "gt": O.gt, "ge": O.ge}.items():
        setattr(T, f"__{name}__", (lambda f: lambda s, o: f(s, o) if isinstance(o, _OPERANDS)
                                   else NotImplemented)(fn))
    T.__hash__ = object.__hash__


_install()
