"""Matrix decompositions of the array API linalg extension: ``svd``, ``svdvals``, ``qr``, ``eigh``, ``eigvalsh``
(as ``tkernels.linalg.*``; not in the main namespace, like the standard).

Backend signature (one op, ``"svd"``), on matrices in the last two axes of ``x`` (*batch, M, N), K = min(M, N)::

    impl(u, s, vh, x, compute)    u: (*batch, M, M or K)   s: (*batch, K)   vh: (*batch, N or K, N)

``u`` and ``vh`` are fresh contiguous Arrays of ``x``'s dtype, or both None (singular values only: ``svdvals``);
``u``'s last size tells full (``M``) from reduced (``K``) matrices. ``compute`` is float32 for halves, else the
dtype. Singular values are in descending order. The entry never calls the backend with K == 0 or an empty batch
(it fills the outputs: identities for the full factors). U's columns and Vh's rows are orthonormal (unitary)
also where singular values are 0 or at rounding noise, as PyTorch's and NumPy's: LAPACK's completion on cpu, on
cuda ``svd_complete_kernel`` (tkernels/kernels/svd_complete.py); the vectors there are any orthonormal completion
(they need not equal LAPACK's), and U S Vh reproduces x.

``"qr"``: ``impl(q, r, x, compute)`` with q (*batch, M, M or K) (None for mode ``'r'``) and r (*batch, M or K, N);
fresh contiguous Arrays, Householder QR (LAPACK's sign convention: R's diagonal as geqrf/zgeqrf leaves it, real
for complex input).
``"eigh"``: ``impl(w, v, x, upper, compute)`` with w (*batch, N) ascending, v (*batch, N, N) eigenvectors in columns
(None: ``eigvalsh``); only the lower (``upper`` False) or upper triangle of x is read. None is called with an
empty output.
"""

from __future__ import annotations

from typing import NamedTuple

from . import dtypes as _dt
from ._complex import check_device
from .array import Array
from .dispatch import lookup
from .factorizations import LinAlgError
from .validation import OpTypeError, OpValueError, describe

__all__: list[str] = []  # reached as tkernels.linalg.svd / svdvals

_HALF = (_dt.float16, _dt.bfloat16)


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


def _check(op: str, x) -> None:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}; hint: convert with tkernels.asarray(...)")
    if x.ndim < 2:
        raise OpValueError(f"{op}: expected an array of at least 2 dimensions (matrices in the last two), got "
                           f"{describe(x)}; hint: add a dimension with x[None] or x.reshape(...)")
    if x._dtype.kind == "c":  # complex: LAPACK's complex routines on cpu, the complex kernels on cuda
        check_device(op, x)
    elif x._dtype.kind != "f":
        raise OpTypeError(f"{op}: expected a floating-point array (or a complex one), got {describe(x)}; hint: "
                          f"convert with x.astype(tkernels.float32) first")


def _check_finite(op: str, x: Array, triangle: str | None = None) -> None:
    """PyTorch's LinAlgError when a matrix of ``x`` holds NaN or +-inf (in ``triangle`` 'L'/'U' and the real part
    of the diagonal only, for eigh): one isfinite pass and a bool read at the API boundary (a sync on cuda, as
    cholesky's info read), the same check and message on every device; the first failing batch element is named."""
    import tkernels as _tk

    if x.size == 0:
        return
    bad = ~_tk.isfinite(x)
    if triangle is not None:  # only the triangle read counts; of the diagonal only the real part
        n = x._shape[-1]
        keep = _tk.tril(_tk.ones((n, n), dtype=_dt.bool, device=x.device), k=-1)
        bad = bad & (keep if triangle == "L" else keep.matrix_transpose())
        diag = _tk.diagonal(x, axis1=-2, axis2=-1)
        bad_diag = ~_tk.isfinite(_tk.real(diag) if x._dtype.kind == "c" else diag)
        bad = _tk.any(bad, axis=(-2, -1)) | _tk.any(bad_diag, axis=-1)
    else:
        bad = _tk.any(bad, axis=(-2, -1))
    if not bool(_tk.any(bad)):
        return
    import numpy as np

    i = int(np.flatnonzero(bad.numpy().reshape(-1))[0])
    batch = f"(Batch element {i}): " if bad.ndim else ""
    raise LinAlgError(f"linalg.{op}: {batch}The algorithm failed to converge because the input matrix contained "
                      f"non-finite values. Got {describe(x)}; hint: check the input with "
                      f"tkernels.isfinite(x).all()")


def _eye_into(out: Array) -> None:
    """Identity matrices in every (square) matrix of ``out``."""
    n = out._shape[-1]
    dev = out._device
    lookup("copy_", dev)(out, lookup("eye", dev)(n, n, 0, out._dtype, dev).broadcast_to(out._shape))


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition ``x = U @ diag(S) @ Vh`` of the matrices in the last two axes:
    ``(U, S, Vh)`` with U (..., M, M) and Vh (..., N, N) when ``full_matrices`` (the default), else U (..., M, K)
    and Vh (..., K, N), K = min(M, N); S (..., K) in descending order. Floating inputs."""
    _check("svd", x)
    if not isinstance(full_matrices, bool):
        raise OpTypeError(f"svd: full_matrices must be a bool, got {full_matrices!r} for {describe(x)}")
    *batch, m, n = x._shape
    batch = tuple(batch)
    k = min(m, n)
    d, dev = x._dtype, x._device
    empty = lookup("empty", dev)
    u = empty(batch + (m, m if full_matrices else k), d, dev)
    s = empty(batch + (k,), _dt.to_real(d), dev)
    vh = empty(batch + (n if full_matrices else k, n), d, dev)
    if k == 0 or s.size == 0:
        if full_matrices and u.size:
            _eye_into(u)
        if full_matrices and vh.size:
            _eye_into(vh)
        return SVDResult(u, s, vh)
    _check_finite("svd", x)
    lookup("svd", dev)(u, s, vh, x, _dt.float32 if d in _HALF else d)
    return SVDResult(u, s, vh)


def svdvals(x, /) -> Array:
    """The singular values (..., min(M, N)) of the matrices in the last two axes, in descending order."""
    _check("svdvals", x)
    k = min(x._shape[-2:])
    d, dev = x._dtype, x._device
    s = lookup("empty", dev)(x._shape[:-2] + (k,), _dt.to_real(d), dev)
    if s.size:
        _check_finite("svd", x)
        lookup("svd", dev)(None, s, None, x, _dt.float32 if d in _HALF else d)
    return s


def qr(x, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition ``x = Q @ R`` of the matrices in the last two axes, Q with orthonormal columns and R
    upper triangular: ``mode='reduced'`` (the default) gives Q (..., M, K), R (..., K, N), K = min(M, N);
    ``'complete'`` Q (..., M, M), R (..., M, N); ``'r'`` (PyTorch's) only R (..., K, N) and an empty Q."""
    _check("qr", x)
    if mode not in ("reduced", "complete", "r"):
        raise OpValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r} for {describe(x)}")
    *batch, m, n = x._shape
    batch = tuple(batch)
    k = min(m, n)
    d, dev = x._dtype, x._device
    empty = lookup("empty", dev)
    rows = m if mode == "complete" else k
    q = empty((0,), d, dev) if mode == "r" else empty(batch + (m, rows), d, dev)
    r = empty(batch + (rows, n), d, dev)
    if k == 0 or r.size == 0:
        if r.size:
            lookup("fill", dev)(r, 0)
        if mode == "complete" and q.size:
            _eye_into(q)
        return QRResult(q, r)
    lookup("qr", dev)(None if mode == "r" else q, r, x, _dt.float32 if d in _HALF else d)
    return QRResult(q, r)


def _check_square(op: str, x, uplo) -> bool:
    _check(op, x)
    if x._shape[-1] != x._shape[-2]:
        raise OpValueError(f"{op}: expected square matrices in the last two dimensions, got {describe(x)}; hint: "
                           f"eigenvalues of a symmetric matrix need M == N")
    if uplo not in ("L", "U"):
        raise OpValueError(f"{op}: UPLO must be 'L' or 'U', got {uplo!r} for {describe(x)}")
    return uplo == "U"


def eigh(x, /, *, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's and PyTorch's name
    """The eigen-decomposition of the symmetric (complex: Hermitian) matrices in the last two axes:
    ``(eigenvalues, eigenvectors)`` with real eigenvalues (..., N) in ascending order and the orthonormal (unitary)
    eigenvectors in the columns of (..., N, N), ``x = V @ diag(w) @ V.mH``. Only the lower (``UPLO='L'``, the
    default) or upper triangle is read (and the real part of the diagonal)."""
    upper = _check_square("eigh", x, UPLO)
    n = x._shape[-1]
    d, dev = x._dtype, x._device
    empty = lookup("empty", dev)
    w = empty(x._shape[:-1], _dt.to_real(d), dev)
    v = empty(x._shape, d, dev)
    if w.size:
        _check_finite("eigh", x, UPLO)
        lookup("eigh", dev)(w, v, x, upper, _dt.float32 if d in _HALF else d)
    elif n == 0 and v.size:
        _eye_into(v)
    return EighResult(w, v)


def eigvalsh(x, /, *, UPLO: str = "L") -> Array:  # noqa: N803
    """The eigenvalues (..., N), ascending, of the symmetric matrices in the last two axes (triangle ``UPLO``)."""
    upper = _check_square("eigvalsh", x, UPLO)
    d, dev = x._dtype, x._device
    w = lookup("empty", dev)(x._shape[:-1], _dt.to_real(d), dev)
    if w.size:
        _check_finite("eigh", x, UPLO)
        lookup("eigh", dev)(w, None, x, upper, _dt.float32 if d in _HALF else d)
    return w
