"""``eig`` on NumPy: LAPACK's geev through np.linalg.eig (signature: ``tkernels/linalg_eig.py``)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import npv


@register("eig", "numpy")
def eig(w, v, info, x, compute) -> None:
    a = npv(x)
    target = np.complex128 if compute.numpy == np.float64 else np.complex64
    a = a.astype(target if a.dtype.kind == "c" else compute.numpy, copy=False)
    finite = np.isfinite(a).all(axis=(-2, -1))
    codes = np.where(finite, 0, -1).astype(np.int32)
    a = np.where(finite[..., None, None], a, 0)  # geev on non-finite input does not return: those report -1
    try:
        if v is None:
            np.copyto(npv(w), np.linalg.eigvals(a), casting="unsafe")
        else:
            rw, rv = np.linalg.eig(a)
            np.copyto(npv(w), rw, casting="unsafe")
            np.copyto(npv(v), rv, casting="unsafe")
    except np.linalg.LinAlgError:
        codes = np.where(codes == 0, 1, codes).astype(np.int32)
    np.copyto(npv(info), codes)
