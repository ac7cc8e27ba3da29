"""Discrete Fourier transforms: the array API FFT extension (2024.12), ``tkernels.fft``.

The helpers ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are composites of creation and
manipulation ops. The transforms have one backend primitive, ``fft``::

    impl(out, x, axis, n, inverse, scale, kind)    out = scale * sum_j x_j exp(sign 2 pi i j k / n) along axis

with ``sign`` + when ``inverse``; ``kind`` "c2c" (complex in and out), "r2c" (real in, the first n // 2 + 1
outputs) or "c2r" (a half spectrum in, the real transform of its Hermitian extension out, length n). Complex
operands are float32/float64 arrays on the interleaved layout ``(..., 2)`` (re, im), ``axis`` an axis of the
complex shape; the input is cut or zero-padded to ``n`` (to ``n // 2 + 1`` for "c2r"). The entries here
validate, compute the ``norm`` scale and allocate ``out``; numpy backend: ``numpy.fft``; triton: Stockham
radix-4/2, four-step and Bluestein kernels (``tkernels/backends/triton/fft.py``).

Until complex dtypes exist, the transforms are exposed on the interleaved layout only, by the private
``_c2c``, ``_r2c`` and ``_c2r`` (and their n-d forms); the public complex ``fft``, ``ifft``, ... wrap them.
"""

from __future__ import annotations

import math

from . import dtypes as _dt
from .array import Array
from .creation import arange
from .dispatch import lookup
from .manipulation import concat, roll
from .validation import as_int, describe, normalize_axes, normalize_axis

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _freq_args(op: str, n, d, dtype):
    n = as_int(op, "n", n)
    if n < 1:
        raise ValueError(f"{op}: n must be a positive integer, got {n}; hint: the number of samples of the signal")
    if isinstance(d, bool) or not isinstance(d, int | float):
        raise TypeError(f"{op}: d (the sample spacing) must be a Python float, got {describe(d)}")
    if dtype is None:
        dtype = _dt.get_default_dtype()
    dtype = _dt.as_dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"{op}: dtype must be a real floating-point dtype, got {dtype}; hint: float32 or float64")
    return n, float(d), dtype


def _scaled(k: Array, n: int, d: float, dtype) -> Array:
    """``k / (d n)`` as NumPy computes it (float64 ``k * (1 / (n d))``), then cast."""
    out = k * (1.0 / (n * d))
    return out if out.dtype is dtype else out.astype(dtype)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Array:
    """The sample frequencies of an ``n``-point DFT with spacing ``d``: ``[0, 1, ..., -(n // 2), ..., -1] / (d n)``
    (the default float dtype unless ``dtype``), on ``device``."""
    n, d, dtype = _freq_args("fftfreq", n, d, dtype)
    half = (n - 1) // 2 + 1
    k = concat([arange(0, half, dtype=_dt.float64, device=device),
                arange(-(n // 2), 0, dtype=_dt.float64, device=device)])
    return _scaled(k, n, d, dtype)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Array:
    """The sample frequencies of ``rfft`` of ``n`` points with spacing ``d``: ``[0, 1, ..., n // 2] / (d n)``."""
    n, d, dtype = _freq_args("rfftfreq", n, d, dtype)
    return _scaled(arange(0, n // 2 + 1, dtype=_dt.float64, device=device), n, d, dtype)


def _shift(op: str, x, axes, sign: int) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected an Array, got {describe(x)}; hint: convert with tkernels.asarray(...)")
    ax = normalize_axes(axes, x.ndim, op, "axes") if axes is None or isinstance(axes, list | tuple) else \
        (normalize_axis(axes, x.ndim, op, "axes"),)
    if not ax:
        return x[...] if x.ndim == 0 else roll(x, 0, axis=0)
    return roll(x, [sign * (x.shape[a] // 2) for a in ax], axis=list(ax))


def fftshift(x, /, *, axes=None) -> Array:
    """``x`` with the zero-frequency component moved to the center along ``axes`` (all by default)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, /, *, axes=None) -> Array:
    """The inverse of ``fftshift`` (they differ for odd lengths)."""
    return _shift("ifftshift", x, axes, -1)


# ---- the transforms on the interleaved layout ----

def _scale(op: str, norm, n: int, inverse: bool) -> float:
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f"{op}: norm must be one of {_NORMS}, got {norm!r}")
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _check(op: str, x, complex_in: bool) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected an Array, got {describe(x)}; hint: convert with tkernels.asarray(...)")
    if x._dtype not in (_dt.float32, _dt.float64):
        raise TypeError(f"{op}: expected float32 or float64 data, got {describe(x)}; hint: convert with "
                        f".astype(float32)")
    if complex_in and (x.ndim < 2 or x._shape[-1] != 2):
        raise ValueError(f"{op}: expected interleaved complex data of shape (..., 2), got {describe(x)}")


def _length(op: str, n, default: int) -> int:
    n = default if n is None else as_int(op, "n", n)
    if n < 1:
        raise ValueError(f"{op}: invalid number of data points ({n}) specified; hint: n must be >= 1 (an empty "
                         f"axis needs an explicit n)")
    return n


def _c2c(x: Array, n=None, axis=-1, norm="backward", inverse=False, op="fft") -> Array:
    """The complex DFT (``inverse``: its inverse) of interleaved ``x`` (..., 2) along ``axis`` of the complex
    shape, cut or zero-padded to ``n``."""
    _check(op, x, True)
    cs = x._shape[:-1]
    a = normalize_axis(axis, len(cs), op)
    n = _length(op, n, cs[a])
    out = lookup("empty", x._device)(cs[:a] + (n,) + cs[a + 1:] + (2,), x._dtype, x._device)
    if out.size:
        lookup("fft", x._device)(out, x, a, n, inverse, _scale(op, norm, n, inverse), "c2c")
    return out


def _r2c(x: Array, n=None, axis=-1, norm="backward", inverse=False, op="rfft") -> Array:
    """The first ``n // 2 + 1`` outputs (interleaved) of the DFT of real ``x`` along ``axis`` (rfft; with
    ``inverse`` the sign + and the inverse's norm: ihfft)."""
    _check(op, x, False)
    a = normalize_axis(axis, x.ndim, op)
    if x.ndim == 0:
        raise ValueError(f"{op}: expected an array of at least one dimension, got {describe(x)}")
    n = _length(op, n, x._shape[a])
    out = lookup("empty", x._device)(x._shape[:a] + (n // 2 + 1,) + x._shape[a + 1:] + (2,), x._dtype, x._device)
    if out.size:
        lookup("fft", x._device)(out, x, a, n, inverse, _scale(op, norm, n, inverse), "r2c")
    return out


def _c2r(x: Array, n=None, axis=-1, norm="backward", inverse=True, op="irfft") -> Array:
    """The real length-``n`` (default ``2 (m - 1)``) transform of the half spectrum ``x`` (interleaved, ``m``
    entries along ``axis``): irfft (``inverse``), or with the sign - and the forward norm, hfft."""
    _check(op, x, True)
    cs = x._shape[:-1]
    a = normalize_axis(axis, len(cs), op)
    n = _length(op, n, 2 * (cs[a] - 1))
    out = lookup("empty", x._device)(cs[:a] + (n,) + cs[a + 1:], x._dtype, x._device)
    if out.size:
        lookup("fft", x._device)(out, x, a, n, inverse, _scale(op, norm, n, inverse), "c2r")
    return out
