"""Reductions and scans on NumPy. Each impl writes into ``out``, allocated by the entry in the reduced shape
(see ``tkernels/reduction.py`` for the signatures). Inputs are widened to ``compute`` first (float32 for
float16/bfloat16, as the GPU kernels accumulate), and the result is cast to ``out``'s dtype on the way in."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import HALF_NP, lapack, npv

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _src(x, cd: np.dtype) -> np.ndarray:
    a = npv(x)
    return a if a.dtype == cd else a.astype(cd)


def _wide(x) -> np.ndarray:
    """The input as is, half floats as float32 (exact; ml_dtypes' bfloat16 max warns on NaN, float32's does not)."""
    a = npv(x)
    return a.astype(_F32) if a.dtype in HALF_NP else a


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _reduce(ufunc):
    def impl(out, x, axes, compute):
        cd = compute.numpy
        a = _src(x, cd)
        o = npv(out)
        _reduce_into(ufunc, o, a, axes, cd)

    impl.__name__ = f"numpy_{ufunc.__name__}_reduce"
    return impl


def _reduce_into(ufunc, o, a, axes, cd):
    if o.dtype == cd:
        ufunc.reduce(a, axis=axes, out=o)
    else:
        np.copyto(o, ufunc.reduce(a, axis=axes), casting="unsafe")


# (inf - inf and overflows are values, without NumPy's warning: the backend's calls run silent, __init__.py)
register("sum", "numpy")(_reduce(np.add))
register("prod", "numpy")(_reduce(np.multiply))


@register("mean", "numpy")
def mean(out, x, axes, compute):
    cd = compute.numpy
    a = _src(x, cd)
    o = npv(out)
    n = _count(a.shape, axes)
    if n == 0:  # 0 / 0: the NaN mean of an empty slice, as in PyTorch
        o[...] = np.nan
        return
    if o.dtype == cd:
        np.add.reduce(a, axis=axes, out=o)
        np.divide(o, n, out=o)
    else:
        np.copyto(o, np.add.reduce(a, axis=axes) / n, casting="unsafe")


def _extremum(ufunc):
    def impl(out, x, axes):
        a = _wide(x)
        o = npv(out)
        if o.dtype == a.dtype:
            ufunc.reduce(a, axis=axes, out=o)
        else:
            np.copyto(o, ufunc.reduce(a, axis=axes), casting="unsafe")

    impl.__name__ = f"numpy_{ufunc.__name__}_reduce"
    return impl


register("max", "numpy")(_extremum(np.maximum))  # maximum propagates NaN, like torch.amax
register("min", "numpy")(_extremum(np.minimum))


def _arg(fn):
    def impl(out, x, axes):
        a = _wide(x)
        o = npv(out)
        if len(axes) == a.ndim:  # axis=None: the index into the row-major flattened array
            o[...] = fn(a.reshape(-1))
        else:
            fn(a, axis=axes[0], out=o)

    impl.__name__ = f"numpy_{fn.__name__}"
    return impl


# NumPy's argmax and argmin return the first occurrence and treat NaN as the extreme, as PyTorch does
register("argmax", "numpy")(_arg(np.argmax))
register("argmin", "numpy")(_arg(np.argmin))


def _var(x, axes, compute, correction):
    """Two-pass variance in ``compute``: the mean first, then the sum of squared deviations."""
    cd = compute.numpy
    a = _src(x, cd)
    n = _count(a.shape, axes)
    if n == 0 or n <= correction:  # empty slices give NaN, N - correction <= 0 gives inf or NaN (PyTorch)
        return _two_pass(a, axes, n, max(n - correction, 0.0))
    return _two_pass(a, axes, n, n - correction)


def _two_pass(a, axes, n, divisor):
    d = a - np.add.reduce(a, axis=axes, keepdims=True) / n
    return np.add.reduce(d * d, axis=axes) / divisor


@register("var", "numpy")
def var(out, x, axes, compute, correction):
    # a variance past the dtype's max is inf (PyTorch), no warning
    np.copyto(npv(out), _var(x, axes, compute, correction), casting="unsafe")


@register("std", "numpy")
def std(out, x, axes, compute, correction):
    np.copyto(npv(out), np.sqrt(_var(x, axes, compute, correction)), casting="unsafe")


@register("logsumexp", "numpy")
def logsumexp(out, x, axes, compute):
    a = _src(x, compute.numpy)
    o = npv(out)
    if _count(a.shape, axes) == 0:
        o[...] = -np.inf
        return
    m = np.asarray(np.maximum.reduce(a, axis=axes, keepdims=True))
    # shifting a slice whose max is not finite by 0 keeps its exact result: all -inf → -inf, +inf → inf, NaN
    m[~np.isfinite(m)] = 0
    s = np.add.reduce(np.exp(a - m), axis=axes)
    np.copyto(o, np.log(s) + m.reshape(np.shape(s)), casting="unsafe")


@register("any", "numpy")
def any_(out, x, axes):
    np.logical_or.reduce(_wide(x), axis=axes, out=npv(out))


@register("all", "numpy")
def all_(out, x, axes):
    np.logical_and.reduce(_wide(x), axis=axes, out=npv(out))


@register("count_nonzero", "numpy")
def count_nonzero(out, x, axes):
    np.add.reduce(_wide(x) != 0, axis=axes, dtype=np.int64, out=npv(out))


# cumulative sums of float32 (float16, bfloat16, complex64) run in float64 (complex128), as PyTorch's cpu kernel
# accumulates: 100,000 steps of 0.1 end at 10000.0, not float32's 9998.56 (products stay in the compute dtype,
# as PyTorch's do)
_WIDE_SUM = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128)}


def _scan(ufunc):
    wide = _WIDE_SUM if ufunc is np.add else {}

    def impl(out, x, axis, compute, include_initial):
        cd = compute.numpy
        cd = wide.get(cd, cd)
        a = _src(x, cd)
        o = npv(out)
        if include_initial:
            lead = (slice(None),) * axis
            o[lead + (slice(0, 1),)] = ufunc.identity
            o = o[lead + (slice(1, None),)]
        _accumulate_into(ufunc, o, a, axis, cd)

    impl.__name__ = f"numpy_{ufunc.__name__}_accumulate"
    return impl


def _accumulate_into(ufunc, o, a, axis, cd):
    if o.dtype == cd:
        ufunc.accumulate(a, axis=axis, out=o)
    else:
        np.copyto(o, ufunc.accumulate(a, axis=axis), casting="unsafe")


register("cumulative_sum", "numpy")(_scan(np.add))
register("cumulative_prod", "numpy")(_scan(np.multiply))


@register("vector_norm", "numpy")
def vector_norm(out, x, axes, compute, ord):  # noqa: A002
    cd = compute.numpy
    if ord not in (1.0, 0.0, np.inf, -np.inf):  # squares / p-th powers of float32 values past ~1.8e19 overflow it
        cd = _F64
    a = np.abs(_src(x, cd))
    if ord == 2.0:
        r = np.sqrt(np.add.reduce(a * a, axis=axes))
    elif ord == 1.0:
        r = np.add.reduce(a, axis=axes)
    elif ord == np.inf:
        r = np.maximum.reduce(a, axis=axes)
    elif ord == -np.inf:
        r = np.minimum.reduce(a, axis=axes)
    elif ord == 0.0:
        r = np.add.reduce(a != 0, axis=axes, dtype=cd)
    else:
        # |0| ** negative → inf, whose sum's negative root is the exact 0
        r = np.power(np.add.reduce(np.power(a, ord), axis=axes), 1.0 / ord)
    np.copyto(npv(out), r, casting="unsafe")


def _svdvals(a: np.ndarray) -> np.ndarray:
    # (non-finite input: the entry raised PyTorch's LinAlgError)
    return lapack("matrix_norm", "singular values", np.linalg.svd, a, compute_uv=False)


@register("matrix_norm", "numpy")
def matrix_norm(out, x, compute, ord):  # noqa: A002
    a = _src(x, compute.numpy)
    if ord == "fro":
        r = np.sqrt(np.add.reduce(a * a, axis=(-2, -1)))
    elif ord == "nuc":
        r = np.add.reduce(_svdvals(a), axis=-1)
    elif ord == 2.0:
        r = np.maximum.reduce(_svdvals(a), axis=-1)
    elif ord == -2.0:
        r = np.minimum.reduce(_svdvals(a), axis=-1)
    else:  # 1 / -1: over the column sums of |x|; inf / -inf: over the row sums
        sums = np.add.reduce(np.abs(a), axis=-2 if abs(ord) == 1.0 else -1)
        r = (np.maximum if ord > 0 else np.minimum).reduce(sums, axis=-1)
    np.copyto(npv(out), r, casting="unsafe")
