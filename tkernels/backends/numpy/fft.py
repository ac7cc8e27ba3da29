"""``fft`` on NumPy (signature: ``tkernels/fft.py``): ``numpy.fft`` (pocketfft; float32 stays single precision)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import npv


def _complex(a: np.ndarray) -> np.ndarray:
    """An interleaved (..., 2) float array as complex (complex64 for float32)."""
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float32)
    if a.strides[-1] == a.itemsize:  # (re, im) adjacent: a view
        return a.view(np.complex64 if a.dtype == np.float32 else np.complex128)[..., 0]
    return a[..., 0] + 1j * a[..., 1]


@register("fft", "numpy")
def fft(out, x, axis: int, n: int, inverse: bool, scale: float, kind: str) -> None:
    """``out = scale * DFT_n(x)`` along ``axis``, sign + when ``inverse``; "c2c", "r2c" or "c2r" as on cuda."""
    a = npv(x)
    if kind == "r2c":
        r = np.fft.rfft(a, n, axis)
        if inverse:
            r = r.conj()
    elif kind == "c2r":
        c = _complex(a)
        r = np.fft.irfft(c, n, axis, norm="forward") if inverse else np.fft.hfft(c, n, axis)
    else:
        c = _complex(a)
        r = np.fft.ifft(c, n, axis, norm="forward") if inverse else np.fft.fft(c, n, axis)
    if scale != 1.0:
        r = r * scale
    o = npv(out)
    if kind == "c2r":
        np.copyto(o, r, casting="unsafe")
    else:
        np.copyto(o[..., 0], r.real, casting="unsafe")
        np.copyto(o[..., 1], r.imag, casting="unsafe")
