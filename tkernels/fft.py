"""Discrete Fourier transforms: the array API FFT extension (2024.12), ``tkernels.fft``.

The helpers ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are composites of creation and
manipulation ops. The transforms have one backend primitive, ``fft``, a 1-D transform along one axis::

    impl(out, x, axis, n, inverse, scale, hermitian)    out_k = scale * sum_j x_j exp(sign 2 pi i j k / n)

with ``sign`` + when ``inverse``, ``x`` cut or zero-padded to ``n``. ``x`` is complex (complex64/complex128) or
real (float32/float64: a real input, rfft's and ihfft's); ``out`` is complex and holds the first
``out.shape[axis]`` outputs (all ``n``, or ``n // 2 + 1`` for rfft and ihfft). With ``hermitian`` (irfft, hfft)
``x`` is a half spectrum (its first ``n // 2 + 1`` entries are used) and ``out`` the real length-``n`` transform
of its Hermitian extension. The n-d forms apply it axis by axis (the norm of each axis multiplies into the
norm of the whole). The entries validate, compute the ``norm`` scale and allocate; the numpy backend calls
``numpy.fft``; the triton one runs Stockham radix-4/2, four-step and Bluestein kernels on the interleaved view
of complex data (``tkernels/backends/triton/fft.py``).
"""


import math as _math

from . import dtypes as _dt
from .array import Array as _Array
from .creation import arange as _arange
from .dispatch import lookup as _lookup
from .manipulation import concat as _concat
from .manipulation import roll as _roll
from .validation import OpTypeError as _OpTypeError
from .validation import OpValueError as _OpValueError
from .validation import as_int as _as_int
from .validation import describe as _describe
from .validation import normalize_axes as _normalize_axes
from .validation import normalize_axis as _normalize_axis

_C = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128, _dt.complex64: _dt.complex64,
      _dt.complex128: _dt.complex128}

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _freq_args(op: str, n, d, dtype):
    n = _as_int(op, "n", n)
    if n < 1:
        raise _OpValueError(f"{op}: n must be a positive integer, got {n}; hint: the number of samples of the signal")
    if isinstance(d, bool) or not isinstance(d, int | float):
        raise _OpTypeError(f"{op}: d (the sample spacing) must be a Python float, got {_describe(d)}")
    if dtype is None:
        dtype = _dt.get_default_dtype()
    dtype = _dt.as_dtype(dtype)
    if dtype.kind != "f":
        raise _OpTypeError(f"{op}: dtype must be a real floating-point dtype, got {dtype}; hint: float32 or float64")
    return n, float(d), dtype


def _scaled(k: _Array, n: int, d: float, dtype) -> _Array:
    """``k / (d n)`` as NumPy computes it (float64 ``k * (1 / (n d))``), then cast."""
    out = k * (1.0 / (n * d))
    return out if out.dtype is dtype else out.astype(dtype)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None) -> _Array:
    """The sample frequencies of an ``n``-point DFT with spacing ``d``: ``[0, 1, ..., -(n // 2), ..., -1] / (d n)``
    (the default float dtype unless ``dtype``), on ``device``."""
    n, d, dtype = _freq_args("fftfreq", n, d, dtype)
    half = (n - 1) // 2 + 1
    k = _concat([_arange(0, half, dtype=_dt.float64, device=device),
                _arange(-(n // 2), 0, dtype=_dt.float64, device=device)])
    return _scaled(k, n, d, dtype)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None) -> _Array:
    """The sample frequencies of ``rfft`` of ``n`` points with spacing ``d``: ``[0, 1, ..., n // 2] / (d n)``."""
    n, d, dtype = _freq_args("rfftfreq", n, d, dtype)
    return _scaled(_arange(0, n // 2 + 1, dtype=_dt.float64, device=device), n, d, dtype)


def _shift(op: str, x, axes, sign: int) -> _Array:
    if not isinstance(x, _Array):
        raise _OpTypeError(f"{op}: expected an Array, got {_describe(x)}; hint: convert with tkernels.asarray(...)")
    ax = _normalize_axes(axes, x.ndim, op, "axes") if axes is None or isinstance(axes, list | tuple) else \
        (_normalize_axis(axes, x.ndim, op, "axes"),)
    if not ax:
        return x[...] if x.ndim == 0 else _roll(x, 0, axis=0)
    return _roll(x, [sign * (x.shape[a] // 2) for a in ax], axis=list(ax))


def fftshift(x, /, *, axes=None) -> _Array:
    """``x`` with the zero-frequency component moved to the center along ``axes`` (all by default)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, /, *, axes=None) -> _Array:
    """The inverse of ``fftshift`` (they differ for odd lengths)."""
    return _shift("ifftshift", x, axes, -1)


# ---- the transforms

def _scale(op: str, norm, n: int, inverse: bool) -> float:
    if norm not in _NORMS:
        raise _OpValueError(f"{op}: norm must be one of {_NORMS}, got {norm!r}")
    if norm == "ortho":
        return 1.0 / _math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _check(op: str, x, kinds: str) -> None:
    if not isinstance(x, _Array):
        raise _OpTypeError(f"{op}: expected an Array, got {_describe(x)}; hint: convert with tkernels.asarray(...)")
    if x._dtype.kind not in kinds or x._dtype not in _C:
        want = {"c": "a complex", "f": "a real floating-point", "fc": "a floating-point"}[kinds]
        hint = "take the real part with tkernels.real(x)" if kinds == "f" and x._dtype.kind == "c" else \
            "convert with .astype(complex64) or .astype(float32)"
        raise _OpTypeError(f"{op}: expected {want} array (float32, float64, complex64, complex128 as the transform "
                           f"reads), got {_describe(x)}; hint: {hint}")
    if x.ndim == 0:
        raise _OpValueError(f"{op}: expected an array of at least one dimension, got {_describe(x)}")


def _length(op: str, n, default: int, name: str = "n") -> int:
    n = default if n is None else _as_int(op, name, n)
    if n < 1:
        raise _OpValueError(f"{op}: invalid number of data points ({n}) specified; hint: {name} must be >= 1 (an "
                            f"empty axis needs an explicit {name})")
    return n


def _one(op, x, n, axis, norm, inverse, kind) -> _Array:
    """One 1-D transform: ``kind`` "c2c" (complex out; a real x is read as complex), "r2c" (the first n // 2 + 1
    outputs of a real x), "c2r" (a half spectrum to the real length-n result)."""
    a = _normalize_axis(axis, x.ndim, op)
    L = x._shape[a]
    n = _length(op, n, 2 * (L - 1) if kind == "c2r" else L)
    scale = _scale(op, norm, n, inverse)
    size = n // 2 + 1 if kind == "r2c" else n
    dtype = _dt.to_real(_C[x._dtype]) if kind == "c2r" else _C[x._dtype]
    out = _lookup("empty", x._device)(x._shape[:a] + (size,) + x._shape[a + 1:], dtype, x._device)
    if out.size:
        _lookup("fft", x._device)(out, x, a, n, inverse, scale, kind == "c2r")
    return out


def fft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The 1-D discrete Fourier transform along ``axis``, ``x`` cut or zero-padded to ``n`` points (complex
    result; a real input is read as complex)."""
    _check("fft", x, "fc")
    return _one("fft", x, n, axis, norm, False, "c2c")


def ifft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The inverse of ``fft``: ``ifft(fft(x)) == x``."""
    _check("ifft", x, "fc")
    return _one("ifft", x, n, axis, norm, True, "c2c")


def rfft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The DFT of a real ``x``: its ``n // 2 + 1`` non-negative frequency terms (complex)."""
    _check("rfft", x, "f")
    return _one("rfft", x, n, axis, norm, False, "r2c")


def irfft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The inverse of ``rfft``: the real length-``n`` signal (default ``2 (m - 1)``) of a half spectrum."""
    _check("irfft", x, "c")
    return _one("irfft", x, n, axis, norm, True, "c2r")


def hfft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The DFT of a signal with Hermitian symmetry given by its first half ``x``: real, length ``n``."""
    _check("hfft", x, "c")
    return _one("hfft", x, n, axis, norm, False, "c2r")


def ihfft(x, /, *, n=None, axis=-1, norm="backward") -> _Array:
    """The inverse of ``hfft``: the first ``n // 2 + 1`` terms of the inverse DFT of a real ``x``."""
    _check("ihfft", x, "f")
    return _one("ihfft", x, n, axis, norm, True, "r2c")


def _axes(op: str, x, s, axes):
    """(sizes or None per axis, axes) of an n-d transform, as the standard says: ``axes`` None -> the last
    ``len(s)`` axes, or all; ``s`` None -> the input's sizes (-1 in ``s``: the input's size)."""
    if s is not None:
        s = [_as_int(op, "s", v) for v in s] if isinstance(s, list | tuple) else None
        if s is None:
            raise _OpTypeError(f"{op}: s must be a sequence of ints or None")
    if axes is None:
        axes = list(range(x.ndim - (len(s) if s is not None else x.ndim), x.ndim))
    elif isinstance(axes, list | tuple):
        axes = [_normalize_axis(a, x.ndim, op, "axes") for a in axes]
    else:
        raise _OpTypeError(f"{op}: axes must be a sequence of ints or None, got {axes!r}")
    if len(set(axes)) != len(axes):
        raise _OpValueError(f"{op}: repeated axes {tuple(axes)}")
    if s is None:
        s = [None] * len(axes)
    elif len(s) != len(axes):
        raise _OpValueError(f"{op}: s {tuple(s)} and axes {tuple(axes)} must have the same length")
    s = [None if v == -1 else v for v in s]
    return s, axes


def _nd(op, x, s, axes, norm, inverse, last) -> _Array:
    s, axes = _axes(op, x, s, axes)
    if not axes:
        return x[...]
    if last == "c2r":  # the complex axes first, then the half-spectrum axis
        for n, a in zip(s[:-1], axes[:-1]):
            x = _one(op, x, n, a, norm, inverse, "c2c")
        return _one(op, x, s[-1], axes[-1], norm, inverse, "c2r")
    x = _one(op, x, s[-1], axes[-1], norm, inverse, last)
    for n, a in zip(s[-2::-1], axes[-2::-1]):
        x = _one(op, x, n, a, norm, inverse, "c2c")
    return x


def fftn(x, /, *, s=None, axes=None, norm="backward") -> _Array:
    """The n-d DFT over ``axes`` (all by default), each cut or zero-padded to ``s``."""
    _check("fftn", x, "fc")
    return _nd("fftn", x, s, axes, norm, False, "c2c")


def ifftn(x, /, *, s=None, axes=None, norm="backward") -> _Array:
    """The inverse of ``fftn``."""
    _check("ifftn", x, "fc")
    return _nd("ifftn", x, s, axes, norm, True, "c2c")


def rfftn(x, /, *, s=None, axes=None, norm="backward") -> _Array:
    """The n-d DFT of a real ``x``: the last axis halved (``s[-1] // 2 + 1`` terms), the others full."""
    _check("rfftn", x, "f")
    return _nd("rfftn", x, s, axes, norm, False, "r2c")


def irfftn(x, /, *, s=None, axes=None, norm="backward") -> _Array:
    """The inverse of ``rfftn``: real, the last axis of length ``s[-1]`` (default ``2 (m - 1)``)."""
    _check("irfftn", x, "c")
    return _nd("irfftn", x, s, axes, norm, True, "c2r")
