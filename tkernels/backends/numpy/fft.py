"""``fft`` on NumPy (signature: ``tkernels/fft.py``): ``numpy.fft`` (pocketfft; single precision stays single)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import npv


@register("fft", "numpy")
def fft(out, x, axis: int, n: int, inverse: bool, scale: float, hermitian: bool) -> None:
    """``out = scale * DFT_n(x)`` along ``axis``, sign + when ``inverse`` (the first ``out.shape[axis]`` terms);
    ``hermitian``: the real transform of the Hermitian extension of the half spectrum ``x``."""
    a = npv(x)
    o = npv(out)
    if hermitian:
        r = np.fft.irfft(a, n, axis, norm="forward") if inverse else np.fft.hfft(a, n, axis)
    elif a.dtype.kind == "f" and o.shape[axis] <= n // 2 + 1:  # rfft / ihfft
        r = np.fft.rfft(a, n, axis)
        if inverse:
            r = r.conj()
    else:
        r = np.fft.ifft(a, n, axis, norm="forward") if inverse else np.fft.fft(a, n, axis)
        if r.shape[axis] != o.shape[axis]:
            r = r.take(np.arange(o.shape[axis]), axis)
    if scale != 1.0:
        r = r * scale
    np.copyto(o, r, casting="unsafe")
