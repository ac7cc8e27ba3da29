"""Reductions and scans: sum, prod, mean, max, min, argmax, argmin, var, std, logsumexp, any, all, count_nonzero,
cumulative_sum, cumulative_prod (and PyTorch's cumsum, cumprod), vector_norm, matrix_norm.

Array API 2024.12 names and semantics; PyTorch's dtype rules where the standard leaves a choice (integer and bool
sums, products and scans give int64, of unsigned ones uint64; mean, var, std and the norms need floating inputs,
as in PyTorch).

Each entry validates, normalizes ``axis`` to a sorted tuple of non-negative axes, allocates the output in the
reduced shape (reduced axes dropped) and calls the backend registered under the op's name:

    sum, prod, mean, logsumexp      impl(out, x, axes, compute)
    var, std                        impl(out, x, axes, compute, correction: float)
    max, min, any, all,
    count_nonzero                   impl(out, x, axes)
    argmax, argmin                  impl(out, x, axes)      # one axis, or every axis: the row-major flat index
    vector_norm                     impl(out, x, axes, compute, ord: float)
    matrix_norm                     impl(out, x, compute, ord: "fro" | "nuc" | float)   # the last two axes
    cumulative_sum, cumulative_prod impl(out, x, axis: int, compute, include_initial: bool)   # x.ndim >= 1

``compute`` is the dtype to accumulate in: float32 for float16/bfloat16 results, the result dtype otherwise.
``keepdims`` is a reshape view of that output made here, so a backend only ever writes a contiguous array of
the reduced shape. Reductions without an identity (max, min, argmax, argmin, the inf and negative vector norms)
refuse empty reductions here, so backends never see one.
"""

from __future__ import annotations

import builtins
import math

from . import dtypes as _dt
from ._complex import check_device
from .array import Array, _contiguous_strides
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, describe, normalize_axes, normalize_axis

__all__ = ["sum", "prod", "mean", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "any", "all",
           "count_nonzero", "cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "vector_norm",
           "matrix_norm"]

_F16, _BF16 = _dt.float16, _dt.bfloat16  # compared by identity: `d in (float16, bfloat16)` calls DType.__eq__
_F32 = _dt.float32
_I64 = _dt.int64
_BOOL = _dt.bool
_INF = float("inf")
_MATRIX_ORDS = ("fro", "nuc", 1.0, -1.0, 2.0, -2.0, _INF, -_INF)


# ------------------------------------------------------------------------------------------------ helpers
def _reduce_shape(op: str, x, axis):
    """(sorted non-negative axes, the shape with those axes dropped); errors name the op and ``x``."""
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}; hint: convert with tkernels.asarray(...)")
    shape = x._shape
    n = len(shape)
    if axis is None:
        return tuple(range(n)), ()
    a = axis[0] if axis.__class__ is tuple and len(axis) == 1 else axis
    if type(a) is int and -n <= a < n:  # the hot case: one axis, an int or a 1-tuple (autograd's dims)
        a %= n
        return (a,), shape[:a] + shape[a + 1:]
    try:
        axes = normalize_axes(axis, n, op)
    except (IndexError, ValueError, TypeError) as e:
        raise type(e)(f"{e}; input: {describe(x)}") from None
    return axes, tuple(s for i, s in enumerate(shape) if i not in axes)


def _keep(out: Array, x: Array, axes) -> Array:
    """``out`` (the reduced shape) viewed with size-1 dimensions where ``x`` had its reduced axes."""
    kept = tuple(1 if i in axes else s for i, s in enumerate(x._shape))
    return out._view(kept, _contiguous_strides(kept), out._offset)


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(shape, dtype, device)


def _no_complex(op: str, x: Array):
    if x._dtype.kind == "c":
        raise OpTypeError(f"{op}: complex arrays are not supported ({describe(x)}): complex numbers have no order; "
                          f"hint: apply it to real(x), imag(x) or abs(x)")


def _need_float(op: str, x: Array, complex_ok: bool = False):
    if complex_ok and x._dtype.kind == "c":
        check_device(op, x)
        return
    if x._dtype.kind == "c":
        raise OpTypeError(f"{op}: complex arrays are not supported, got {describe(x)}; hint: apply it to real(x), "
                          f"imag(x) or abs(x)")
    if x._dtype.kind != "f":
        raise OpTypeError(f"{op}: expected a floating-point array, got {describe(x)}; hint: convert with "
                          f"x.astype(tkernels.float32) first")


def _nonempty(op: str, x: Array, axes, what: str = "the operation has no identity"):
    for a in axes:
        if x._shape[a] == 0:
            raise OpValueError(f"{op}: cannot reduce over axis {a} of size 0 of {describe(x)} ({what}); hint: "
                               f"check for empty inputs, or reduce over non-empty axes")


def _result_dtype(op: str, x: Array, dtype) -> _dt.DType:
    """sum/prod/scans: the ``dtype`` asked for, else floats keep theirs, signed ints and bool give int64 and
    unsigned ints uint64 (the array API: the unsigned type as wide as the default integer; PyTorch gives int64
    for uint8, the same bits, and autograd asks for int64 explicitly)."""
    if dtype is None:
        d = x._dtype
        return d if d.kind in "fc" else (_dt.uint64 if d.kind == "u" else _I64)
    try:
        return _dt.as_dtype(dtype)
    except TypeError as e:
        raise OpTypeError(f"{op}: invalid dtype {dtype!r} for {describe(x)}: {e}") from None


def _accumulate(op: str, x, axis, dtype, keepdims) -> Array:
    axes, shape = _reduce_shape(op, x, axis)
    rd = _result_dtype(op, x, dtype)
    dev = x._device
    if rd.kind == "c" or x._dtype.kind == "c":
        check_device(op, x, dtype=rd)
    out = lookup("empty", dev)(shape, rd, dev)
    lookup(op, dev)(out, x, axes, _F32 if rd is _F16 or rd is _BF16 else rd)
    return _keep(out, x, axes) if keepdims else out


# ------------------------------------------------------------------------------------------ reductions
def sum(x, /, *, axis=None, dtype=None, keepdims=False) -> Array:  # noqa: A001
    """Sum over ``axis`` (an int, a tuple of ints, or None for all). Floats keep their dtype (half inputs
    accumulate in float32), signed ints and bool give int64 like PyTorch, unsigned ints uint64 (the array API's
    rule); ``dtype`` casts the input first.
    The sum of nothing is 0.

    >>> tk.sum(tk.asarray([[1, 2], [3, 4]]), axis=0)
    Array([4, 6], dtype=int64, device=cpu)
    """
    return _accumulate("sum", x, axis, dtype, keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False) -> Array:
    """Product over ``axis``; dtype rules as ``sum``. The product of nothing is 1."""
    return _accumulate("prod", x, axis, dtype, keepdims)


def mean(x, /, *, axis=None, keepdims=False) -> Array:
    """Arithmetic mean over ``axis`` of a floating array (ints are refused, as in PyTorch); NaN when empty."""
    axes, shape = _reduce_shape("mean", x, axis)
    _need_float("mean", x, complex_ok=True)
    d, dev = x._dtype, x._device
    out = lookup("empty", dev)(shape, d, dev)
    lookup("mean", dev)(out, x, axes, _F32 if d is _F16 or d is _BF16 else d)
    return _keep(out, x, axes) if keepdims else out


def _extremum(op: str, x, axis, keepdims) -> Array:
    axes, shape = _reduce_shape(op, x, axis)
    _no_complex(op, x)
    _nonempty(op, x, axes)
    d, dev = x._dtype, x._device
    out = lookup("empty", dev)(shape, d, dev)
    lookup(op, dev)(out, x, axes)
    return _keep(out, x, axes) if keepdims else out


def max(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """Largest value over ``axis`` (values only; NaN propagates). An empty reduction is a ValueError."""
    return _extremum("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """Smallest value over ``axis`` (values only; NaN propagates). An empty reduction is a ValueError."""
    return _extremum("min", x, axis, keepdims)


def _arg(op: str, x, axis, keepdims) -> Array:
    if axis is not None and not hasattr(axis, "__index__"):
        raise OpTypeError(f"{op}: axis must be an int or None, got {describe(axis)} for {describe(x)}; hint: "
                          f"flatten the axes into one with reshape first")
    axes, shape = _reduce_shape(op, x, axis)
    _no_complex(op, x)
    _nonempty(op, x, axes)
    dev = x._device
    out = lookup("empty", dev)(shape, _I64, dev)
    lookup(op, dev)(out, x, axes)
    return _keep(out, x, axes) if keepdims else out


def argmax(x, /, *, axis=None, keepdims=False) -> Array:
    """int64 index of the largest value along ``axis`` (None: in the flattened array). Ties give the first
    index; NaN counts as the largest value (the first NaN wins), as in NumPy and PyTorch."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False) -> Array:
    """int64 index of the smallest value along ``axis`` (None: flattened). Ties give the first index; NaN wins."""
    return _arg("argmin", x, axis, keepdims)


def _moment(op: str, x, axis, correction, keepdims) -> Array:
    axes, shape = _reduce_shape(op, x, axis)
    _need_float(op, x)
    if isinstance(correction, Array) or not hasattr(correction, "__float__"):
        raise OpTypeError(f"{op}: correction must be a real number, got {describe(correction)}")
    d, dev = x._dtype, x._device
    out = lookup("empty", dev)(shape, d, dev)
    # float32 and bfloat16 squared deviations overflow float32 near the max (PyTorch's cpu accumulates in double),
    # so they compute in float64 on every device; float16's squares fit float32
    lookup(op, dev)(out, x, axes, _F32 if d is _F16 else _dt.float64 if d is _BF16 or d is _dt.float32 else d,
                    float(correction))
    return _keep(out, x, axes) if keepdims else out


def var(x, /, *, axis=None, correction=0.0, keepdims=False) -> Array:
    """Variance over ``axis``: ``sum((x - mean)**2) / max(N - correction, 0)`` (two-pass, stable); NaN when
    empty. Floating inputs only."""
    return _moment("var", x, axis, correction, keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims=False) -> Array:
    """Standard deviation over ``axis``: ``sqrt(var(x, axis=axis, correction=correction))``."""
    return _moment("std", x, axis, correction, keepdims)


def logsumexp(x, /, *, axis=None, keepdims=False) -> Array:
    """``log(sum(exp(x)))`` over ``axis``, computed stably (shifted by the max). A slice of -inf only gives
    -inf, an empty one -inf; ints and bool compute in the default float dtype (PyTorch)."""
    axes, shape = _reduce_shape("logsumexp", x, axis)
    if x._dtype.kind == "c":
        _need_float("logsumexp", x)
    d, dev = x._dtype, x._device
    if d.kind != "f":
        d = _dt.get_default_dtype()
    out = lookup("empty", dev)(shape, d, dev)
    lookup("logsumexp", dev)(out, x, axes, _F32 if d is _F16 or d is _BF16 else d)
    return _keep(out, x, axes) if keepdims else out


def _logical(op: str, x, axis, keepdims, dtype) -> Array:
    axes, shape = _reduce_shape(op, x, axis)
    dev = x._device
    out = lookup("empty", dev)(shape, dtype, dev)
    lookup(op, dev)(out, x, axes)
    return _keep(out, x, axes) if keepdims else out


def any(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """bool: whether any element over ``axis`` is nonzero (NaN is nonzero); False when empty."""
    return _logical("any", x, axis, keepdims, _BOOL)


def all(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """bool: whether every element over ``axis`` is nonzero (NaN is nonzero); True when empty."""
    return _logical("all", x, axis, keepdims, _BOOL)


def count_nonzero(x, /, *, axis=None, keepdims=False) -> Array:
    """int64: the number of nonzero elements over ``axis`` (NaN counts)."""
    return _logical("count_nonzero", x, axis, keepdims, _I64)


# ---------------------------------------------------------------------------------------------- scans
def _scan(op: str, impl: str, x, axis, dtype, include_initial) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}; hint: convert with tkernels.asarray(...)")
    n = x.ndim
    if axis is None:
        if n > 1:
            raise OpValueError(f"{op}: axis is required for an array of more than one dimension, got {describe(x)}; "
                               f"hint: pass axis=..., or flatten the array first")
        a = 0
    else:
        try:
            a = normalize_axis(axis, n, op)
        except (IndexError, TypeError) as e:
            raise type(e)(f"{e}; input: {describe(x)}") from None
    rd = _result_dtype(op, x, dtype)
    cd = _F32 if rd is _F16 or rd is _BF16 else rd
    dev = x._device
    if rd.kind == "c" or x._dtype.kind == "c":
        check_device(op, x, dtype=rd)
    if n == 0:  # a 0-d array scans like its one-element 1-d view (PyTorch)
        if include_initial:
            raise OpValueError(f"{op}: include_initial needs an array of at least one dimension, got {describe(x)}")
        out = lookup("empty", dev)((), rd, dev)
        lookup(impl, dev)(out._view((1,), (1,), out._offset), x._view((1,), (1,), x._offset), 0, cd, False)
        return out
    shape = x._shape
    if include_initial:
        shape = shape[:a] + (shape[a] + 1,) + shape[a + 1:]
    out = lookup("empty", dev)(shape, rd, dev)
    lookup(impl, dev)(out, x, a, cd, builtins.bool(include_initial))
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> Array:
    """Running sums along ``axis`` (required when ``x.ndim > 1``); ``include_initial`` prepends a 0, making
    that axis one longer. dtype rules as ``sum``."""
    return _scan("cumulative_sum", "cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> Array:
    """Running products along ``axis``; ``include_initial`` prepends a 1. dtype rules as ``prod``."""
    return _scan("cumulative_prod", "cumulative_prod", x, axis, dtype, include_initial)


def cumsum(x, /, axis, *, dtype=None) -> Array:
    """PyTorch's ``cumsum(input, dim, dtype=None)``: ``cumulative_sum`` along a required ``axis``."""
    return _scan("cumsum", "cumulative_sum", x, axis, dtype, False)


def cumprod(x, /, axis, *, dtype=None) -> Array:
    """PyTorch's ``cumprod(input, dim, dtype=None)``: ``cumulative_prod`` along a required ``axis``."""
    return _scan("cumprod", "cumulative_prod", x, axis, dtype, False)


# ---------------------------------------------------------------------------------------------- norms
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Array:  # noqa: A002
    """The ``ord``-norm of the vectors along ``axis`` (None: the whole array flattened): ``ord`` is any real
    number, ``inf`` (max |x|), ``-inf`` (min |x|) or 0 (the count of nonzeros). Floating inputs only; complex
    ones give the real norm of ``abs(x)`` (float32 for complex64)."""
    axes, shape = _reduce_shape("vector_norm", x, axis)
    if isinstance(x, Array) and x._dtype.kind == "c":
        from .elementwise import abs as _abs

        x = _abs(x)
    _need_float("vector_norm", x)
    if isinstance(ord, builtins.bool | str | Array) or not hasattr(ord, "__float__") or math.isnan(float(ord)):
        raise OpValueError(f"vector_norm: ord must be a real number (inf, -inf and 0 included), got "
                           f"{describe(ord)} for {describe(x)}")
    p = float(ord)
    if p == _INF or p < 0:
        _nonempty("vector_norm", x, axes, f"the {ord} norm of an empty vector is undefined")
    d, dev = x._dtype, x._device
    out = lookup("empty", dev)(shape, d, dev)
    lookup("vector_norm", dev)(out, x, axes, _F32 if d is _F16 or d is _BF16 else d, p)
    return _keep(out, x, axes) if keepdims else out


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Array:  # noqa: A002
    """The ``ord``-norm of the matrices in the last two axes: "fro" (Frobenius), "nuc" (sum of singular
    values), 2 / -2 (largest / smallest singular value), 1 / -1 (max / min column sum of |x|), inf / -inf
    (max / min row sum of |x|). Floating or complex inputs (a real result) with at least two dimensions."""
    if not isinstance(x, Array):
        raise OpTypeError(f"matrix_norm: expected an Array, got {describe(x)}; hint: convert with "
                          f"tkernels.asarray(...)")
    if x.ndim < 2:
        raise OpValueError(f"matrix_norm: expected an array of at least 2 dimensions (matrices in the last two), "
                           f"got {describe(x)}; hint: use vector_norm for vectors")
    _need_float("matrix_norm", x, complex_ok=True)
    if isinstance(ord, str):
        p = ord
    elif isinstance(ord, builtins.bool | Array) or not hasattr(ord, "__float__"):
        p = None
    else:
        p = float(ord)
    if p not in _MATRIX_ORDS:
        raise OpValueError(f"matrix_norm: unsupported ord {ord!r} for {describe(x)}; supported: 'fro', 'nuc', 1, "
                           f"-1, 2, -2, inf, -inf; hint: use vector_norm for other orders")
    m, n = x._shape[-2:]
    if (p in (2.0, -2.0) and m * n == 0) or (p in (1.0, -1.0) and n == 0) or (p in (_INF, -_INF) and m == 0):
        raise OpValueError(f"matrix_norm: the {ord} norm of an empty matrix is undefined, got {describe(x)}")
    if x._dtype.kind == "c":  # a real norm: of |x| where only the magnitudes count, of x's singular values else
        from .elementwise import abs as _abs

        if p in ("nuc", 2.0, -2.0):
            from .decompositions import svdvals

            s = svdvals(x)
            r = sum(s, axis=-1) if p == "nuc" else max(s, axis=-1) if p == 2.0 else min(s, axis=-1)
            return r[..., None, None] if keepdims else r
        x = _abs(x)
    if p in ("nuc", 2.0, -2.0):  # over the singular values: the svd entry's non-finite check (LinAlgError)
        from .decompositions import _check_finite

        _check_finite("svd", x)
    d, dev = x._dtype, x._device
    out = lookup("empty", dev)(x._shape[:-2], d, dev)
    lookup("matrix_norm", dev)(out, x, _F32 if d is _F16 or d is _BF16 else d, p)
    if keepdims:
        kept = x._shape[:-2] + (1, 1)
        return out._view(kept, _contiguous_strides(kept), out._offset)
    return out
