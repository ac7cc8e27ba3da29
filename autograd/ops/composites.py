"""PyTorch functions built from the other differentiable ops (no kernel of their own, so their gradients come
from those ops): closeness tests, NaN-ignoring extrema, frac, heaviside, cross, cdist, cov and corrcoef, bincount,
quantile, the h/v/dsplit family, type_as and ravel."""

from __future__ import annotations

import builtins

from tkernels.validation import OpTypeError, OpValueError

from ..grad_mode import no_grad
from ..tensor import Tensor
from .elementwise import (
    eq,
    gt,
    isfinite,
    isnan,
    logical_and,
    logical_or,
    maximum,
    minimum,
    sqrt,
    sub,
    trunc,
    where,
)
from .linalg import matmul
from .reduction import sum  # noqa: A004
from .views import reshape, tensor_split

__all__ = ["isclose", "allclose", "equal", "fmax", "fmin", "frac", "heaviside", "cross", "cdist", "cov", "corrcoef",
           "bincount", "hsplit", "vsplit", "dsplit", "type_as", "ravel", "quantile", "nanquantile"]
METHODS = ["isclose", "allclose", "equal", "fmax", "fmin", "frac", "heaviside", "cross", "cov", "corrcoef",
           "bincount", "hsplit", "vsplit", "dsplit", "type_as", "ravel", "quantile", "nanquantile"]
INPLACE = {"frac": False, "fmax": True, "fmin": True, "heaviside": False}


def _tensor(op, name, x):
    if not isinstance(x, Tensor):
        raise OpTypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (bool); equal values (infinities too) are close,
    NaN only to NaN with ``equal_nan``."""
    _tensor("isclose", "input", input)
    _tensor("isclose", "other", other)
    if rtol < 0 or atol < 0:
        raise OpValueError(f"isclose(): rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    with no_grad():
        same = eq(input, other)
        if input.dtype.kind in "iub" and other.dtype.kind in "iub" and rtol == 0 and atol == 0:
            return same
        a = input if input.dtype.kind in "fc" else input.double()
        b = other.to(a.dtype) if other.dtype.kind not in "fc" else other
        near = logical_and(logical_and(isfinite(a), isfinite(b)), sub(a, b).abs() <= atol + rtol * b.abs())
        close = logical_or(same, near)
        if equal_nan:
            close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (``isclose``)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and the same elements."""
    _tensor("equal", "input", input)
    _tensor("equal", "other", other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    with no_grad():
        return builtins.bool(eq(input, other).all().item())


def fmax(input, other, *, out=None) -> Tensor:
    """The elementwise maximum ignoring NaN (NaN only where both are NaN)."""
    r = where(isnan(other), input, where(isnan(input), other, maximum(input, other)))
    return r if out is None else out.copy_(r)


def fmin(input, other, *, out=None) -> Tensor:
    """The elementwise minimum ignoring NaN (NaN only where both are NaN)."""
    r = where(isnan(other), input, where(isnan(input), other, minimum(input, other)))
    return r if out is None else out.copy_(r)


def frac(input, *, out=None) -> Tensor:
    """``input - trunc(input)``: the fractional part with the sign of ``input``."""
    r = sub(input, trunc(input))
    return r if out is None else out.copy_(r)


def heaviside(input, values, *, out=None) -> Tensor:
    """0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive."""
    _tensor("heaviside", "input", input)
    if isinstance(values, Tensor) and values.dtype != input.dtype:
        raise OpTypeError(f"heaviside is not yet implemented for tensors with different dtypes (input: "
                          f"{input.dtype}, values: {values.dtype})")
    with no_grad():
        r = where(eq(input, 0), values, gt(input, 0).to(input.dtype))
    return r if out is None else out.copy_(r)


def cross(input, other, dim=None, *, out=None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (by default the first dimension of size 3, PyTorch's legacy
    rule; ``autograd.linalg.cross`` takes the last)."""
    from .. import linalg

    if dim is None:
        shape = input.shape if len(input.shape) >= len(other.shape) else other.shape
        dims = [d for d, n in enumerate(shape) if n == 3]
        if not dims:
            raise OpValueError(f"cross(): no dimension of size 3 in input {tuple(input.shape)}")
        dim = dims[0] - len(shape)
    r = linalg.cross(input, other, dim=dim)
    return r if out is None else out.copy_(r)


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distances between the rows of ``x1`` (*, P, M) and of ``x2`` (*, R, M): (*, P, R). Computed
    from the differences (the gradient is 0 at coincident points, as PyTorch's); ``compute_mode`` is accepted."""
    from .. import linalg

    _tensor("cdist", "x1", x1)
    _tensor("cdist", "x2", x2)
    if x1.dim() < 2 or x2.dim() < 2 or x1.shape[-1] != x2.shape[-1]:
        raise OpValueError(f"cdist only supports at least 2D tensors with the same number of columns, got x1 "
                           f"{tuple(x1.shape)} and x2 {tuple(x2.shape)}")
    if p < 0:
        raise OpValueError(f"cdist only supports non-negative p values, got {p}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (*, P, R, M)
    return linalg.vector_norm(diff, ord=p, dim=-1)


def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance of the variables in the rows of ``input`` (observations in the columns; a 1-D input is one
    variable), NumPy's and PyTorch's formula with integer frequency and real observation weights."""
    _tensor("cov", "input", input)
    if input.dim() > 2:
        raise OpValueError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.unsqueeze(0) if input.dim() < 2 else input
    if x.dtype.kind not in "fc":
        x = x.float()
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is not None:
            if wt.dim() != 1 or wt.shape[0] != n:
                raise OpValueError(f"cov(): expected {name} to be a 1-D tensor of {n} observations, got shape "
                                   f"{tuple(wt.shape)}")
            if name == "fweights" and wt.dtype.kind not in "iu":
                raise OpTypeError(f"cov(): expected fweights to have an integral dtype, got {wt.dtype}")
            wt = wt.to(x.dtype)
            w = wt if w is None else w * wt
    if w is None:
        avg = x.mean(1, keepdim=True)
        fact = n - correction
    else:
        w_sum = sum(w)
        avg = sum(x * w, 1, keepdim=True) / w_sum
        if correction == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - correction
        else:
            fact = w_sum - correction * sum(w * aweights.to(x.dtype)) / w_sum
    xc = x - avg
    xw = xc if w is None else xc * w
    c = matmul(xc, xw.conj().transpose(0, 1) if x.dtype.kind == "c" else xw.transpose(0, 1))
    r = c / fact
    return r.reshape(()) if input.dim() < 2 else r


def corrcoef(input) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalized), clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = sqrt(c.diagonal())
    r = c / d.unsqueeze(1) / d.unsqueeze(0)
    return r.clamp(-1, 1) if r.dtype.kind == "f" else r


def bincount(input, weights=None, minlength: int = 0) -> Tensor:
    """Counts (int64; the sum of ``weights`` instead when given) of each value of the 1-D non-negative integer
    ``input``; ``max(input) + 1`` bins, at least ``minlength``."""
    from .. import factory

    _tensor("bincount", "input", input)
    if input.dim() != 1 or input.dtype.kind not in "iu":
        raise OpValueError(f"bincount only supports 1-d non-negative integral inputs, got {input.dtype} of shape "
                           f"{tuple(input.shape)}")
    if minlength < 0:
        raise OpValueError(f"bincount(): minlength should be >= 0, got {minlength}")
    with no_grad():
        n = input.shape[0]
        if n and builtins.int(input.min().item()) < 0:
            raise OpValueError("bincount only supports 1-d non-negative integral inputs (got a negative value)")
        bins = builtins.max(minlength, builtins.int(input.max().item()) + 1 if n else 0)
        if weights is None:
            src, dt = factory.ones(n, dtype="int64", device=input.device), "int64"
        else:
            if tuple(weights.shape) != (n,):
                raise OpValueError(f"bincount(): weights should be 1-d and have the same length as input, got "
                                   f"{tuple(weights.shape)} for {n}")
            dt = weights.dtype if weights.dtype.kind == "f" else "float64"
            src = weights.to(dt)
        return factory.zeros(bins, dtype=dt, device=input.device).scatter_add_(0, input.long(), src)


def _split_along(op, input, indices_or_sections, dim):
    _tensor(op, "input", input)
    if isinstance(indices_or_sections, builtins.int):
        size = input.shape[dim]
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise OpValueError(f"{op}(): the size of dimension {dim} ({size}) is not divisible by the split size "
                               f"{indices_or_sections}")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """Split along dimension 1 (0 for a 1-D tensor)."""
    if input.dim() < 1:
        raise OpValueError("hsplit(): expected a tensor of at least 1 dimension, got a 0-d tensor")
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0)


def vsplit(input, indices_or_sections):
    """Split along dimension 0 (of a tensor of at least 2 dimensions)."""
    if input.dim() < 2:
        raise OpValueError(f"vsplit(): expected a tensor of at least 2 dimensions, got {input.dim()}")
    return _split_along("vsplit", input, indices_or_sections, 0)


def dsplit(input, indices_or_sections):
    """Split along dimension 2 (of a tensor of at least 3 dimensions)."""
    if input.dim() < 3:
        raise OpValueError(f"dsplit(): expected a tensor of at least 3 dimensions, got {input.dim()}")
    return _split_along("dsplit", input, indices_or_sections, 2)


def type_as(input, other) -> Tensor:
    """``input`` in ``other``'s dtype (``input`` itself when it already is)."""
    return input.to(_tensor("type_as", "other", other).dtype)


def ravel(input) -> Tensor:
    """The elements as one contiguous 1-D tensor."""
    return reshape(input.contiguous(), (-1,))



_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    from .. import factory

    _tensor(op, "input", input)
    if input.dtype.kind != "f":
        raise OpTypeError(f"{op}() input tensor must be either float or double dtype, got {input.dtype}")
    if interpolation not in _QUANTILE_MODES:
        raise OpValueError(f"{op}() interpolation must be one of {', '.join(_QUANTILE_MODES)}. Got '{interpolation}'")
    scalar_q = not isinstance(q, Tensor)
    if not scalar_q and q.dim() > 1:
        raise OpValueError(f"{op}() q must be a scalar or 1D tensor, got {q.dim()} dimensions")
    qt = factory.tensor([float(q)], dtype=input.dtype, device=input.device) if scalar_q else \
        q.detach().reshape(-1).to(dtype=input.dtype, device=input.device)  # (no trip through the host)
    if bool(((qt < 0) | (qt > 1)).any().item()):
        raise OpValueError(f"{op}() q values must be in the range [0, 1]")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        nd = builtins.max(input.dim(), 1)
        if not -nd <= dim < nd:
            raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                             f"{dim})")
        d = dim % nd
        x = input.reshape(1) if input.dim() == 0 else input.movedim(d, -1)
    if x.shape[-1] == 0:
        raise OpValueError(f"{op}() input tensor must be non-empty")
    vals = x.sort(dim=-1).values  # NaN last
    with no_grad():
        nan = isnan(x)
        k = (x.shape[-1] - nan.sum(-1, keepdim=True)) if ignore_nan else factory.full(
            tuple(x.shape[:-1]) + (1,), x.shape[-1], dtype="int64", device=x.device)
        pos = qt * (k.to(x.dtype) - 1).clamp_min(0)  # (..., Q)
        lo = pos.floor()
        hi = pos.ceil()
        if interpolation == "nearest":
            lo = hi = pos.round()
        w = pos - lo
        shape = tuple(vals.shape[:-1]) + (qt.shape[0],)
        lo_i, hi_i = lo.long().expand(*shape), hi.long().expand(*shape)
    v_lo = vals.gather(-1, lo_i)
    v_hi = vals.gather(-1, hi_i)
    if interpolation == "linear":
        r = v_lo.lerp(v_hi, w.expand(*shape))
    elif interpolation == "midpoint":
        r = (v_lo + v_hi) * 0.5
    elif interpolation == "higher":
        r = v_hi
    else:
        r = v_lo
    bad = (k == 0) if ignore_nan else nan.any(-1, keepdim=True)
    r = where(bad.expand(*shape), float("nan"), r)
    r = r.movedim(-1, 0)  # (Q, ...): the quantiles first, as PyTorch's
    if keepdim:
        if dim is None:
            r = r.reshape((r.shape[0],) + (1,) * input.dim())
        else:
            r = r.unsqueeze(d + 1)
    return r[0] if scalar_q else r


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None) -> Tensor:
    """The ``q``-th quantiles (a number or a 1-D tensor of them in [0, 1]) of ``input`` along ``dim`` (of all
    of it when None), with PyTorch's ``interpolation`` between the two nearest ranks; NaN where a slice holds a
    NaN. With a tensor ``q`` the quantiles come first in the result."""
    r = _quantile("quantile", input, q, dim, keepdim, interpolation, False)
    return r if out is None else out.copy_(r)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None) -> Tensor:
    """``quantile`` ignoring NaNs (NaN only for a slice of NaNs)."""
    r = _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
    return r if out is None else out.copy_(r)
