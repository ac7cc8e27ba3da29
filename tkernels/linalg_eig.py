"""The general (nonsymmetric) eigen-decomposition: ``eig`` and ``eigvals`` (``tkernels.linalg.*``), PyTorch's
``torch.linalg.eig`` / ``eigvals``.

Backend signature (one op, ``"eig"``), on square matrices in the last two axes of ``x`` (*batch, N, N)::

    impl(w, v, info, x, compute)    w: (*batch, N) complex   v: (*batch, N, N) complex or None   info: (*batch,) int32

``w`` and ``v`` are fresh contiguous complex Arrays (complex64 for float32, halves and complex64 input,
complex128 for float64 and complex128); ``v`` None: eigenvalues only. ``compute`` is the real dtype the
backend computes in (float32 for halves). ``info``: 0, -1 where a matrix holds a NaN or an infinity, or a
positive count of eigenvalues that did not converge (LAPACK's code). The entry never calls the backend with
an empty output; it reads ``info`` (a host sync on cuda, as PyTorch's eig makes) and raises PyTorch's errors.
"""

from __future__ import annotations

from typing import NamedTuple

from . import dtypes as _dt
from .array import Array
from .decompositions import _check
from .dispatch import lookup
from .factorizations import LinAlgError
from .validation import OpValueError, describe

__all__: list[str] = []  # reached as tkernels.linalg.eig / eigvals

_HALF = (_dt.float16, _dt.bfloat16)


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


def _run(op: str, x, vectors: bool):
    _check(f"linalg.{op}", x)
    if x._shape[-1] != x._shape[-2]:
        raise OpValueError(f"linalg.{op}: A must be batches of square matrices, but they are {x._shape[-2]} by "
                           f"{x._shape[-1]} matrices ({describe(x)})")
    d, dev = x._dtype, x._device
    compute = _dt.to_real(d) if d.kind == "c" else (_dt.float32 if d in _HALF else d)
    cd = _dt.to_complex(compute)
    empty = lookup("empty", dev)
    w = empty(x._shape[:-1], cd, dev)
    v = empty(x._shape, cd, dev) if vectors else None
    if w.size:
        info = empty(x._shape[:-2], _dt.int32, dev)
        lookup("eig", dev)(w, v, info, x, compute)
        _raise_info(op, info, x)
    return w, v


def _raise_info(op: str, info: Array, x: Array) -> None:
    import numpy as np

    codes = info.numpy().reshape(-1)
    bad = np.flatnonzero(codes)
    if not bad.size:
        return
    i = int(bad[0])
    batch = f" (Batch element {i})" if info.ndim else ""
    if codes[i] < 0:
        raise RuntimeError(f"torch.linalg.{op}: input tensor should not contain infs or NaNs.{batch} Got "
                           f"{describe(x)}; hint: check the input with tkernels.isfinite(x).all()")
    raise LinAlgError(f"linalg.{op}:{batch} The algorithm failed to converge because the input matrix is "
                      f"ill-conditioned or has too many repeated eigenvalues (error code: {int(codes[i])}).")


def eig(x, /) -> EigResult:
    """PyTorch's ``linalg.eig``: the eigenvalues (..., N) and the eigenvectors (the columns of (..., N, N), unit
    2-norm, largest component real) of general square matrices, ``x @ V = V @ diag(w)``. Results are complex
    (complex64 for float32, halves and complex64; complex128 for float64 and complex128), in no particular
    order (as PyTorch's: LAPACK's order on cpu). Non-finite input raises PyTorch's RuntimeError,
    non-convergence a LinAlgError. On cuda: one Triton program per matrix, any size (in registers up to 64 x 64,
    past that on a global-memory scratch in tiles)."""
    w, v = _run("eig", x, True)
    return EigResult(w, v)


def eigvals(x, /) -> Array:
    """PyTorch's ``linalg.eigvals``: the complex eigenvalues (..., N) of general square matrices (as ``eig``)."""
    return _run("eigvals", x, False)[0]
