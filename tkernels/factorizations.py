"""Factorizations and the solves built on them (``tkernels.linalg``): cholesky, cholesky_ex, solve_triangular,
lu_factor, lu_factor_ex, lu, lu_solve, solve, inv, inv_ex, det, slogdet, matrix_power, multi_dot, cond.

Backend signatures (matrices in the last two axes; ``info``/``piv`` int32; outputs fresh and contiguous)::

    cholesky(out, info, x, upper)            x: (*b, N, N) (lower triangle read)   out: (*b, N, N)   info: (*b,)
    lu_factor(lu, piv, info, x[, pivot])     x, lu: (*b, M, N)   piv: (*b, min(M, N)) 1-based   info: (*b,)
    solve_triangular(out, a, b, upper, unit, piv, pivot_mode)
                                             a: (*b, N, N)   b, out: (*b, N, K)   piv: (*b, N) or None
    lu_panel(w, piv, info, k0, k1[, pivot])  the blocked LU's panel, in place on the contiguous w (*b, M, N)
    lu_swap_rows(x, piv, offset, reverse)    laswp in place on the view x (*b, R, C), piv (*b, P)

``solve_triangular``'s operands share one batch shape (broadcast views) and may have any strides (``out`` too:
a transposed view for the right-side solves); ``pivot_mode`` 1 applies ``piv``'s row swaps to ``b`` before the
solve (``P^T B``), 2 to the solution after it in reverse order (``P X``), 0 none. ``info`` is LAPACK's: 0, the
order of the first leading minor that is not positive-definite (cholesky), the 1-based index of the first zero
pivot (LU). ``pivot`` (a keyword, passed only when False): LU without row exchanges, identity pivots, a zero
pivot's column divided by it (PyTorch's inf/NaN). Backends never raise on a failed factorization: the entries
without ``_ex`` read ``info`` (on cuda that read is a host sync, the one PyTorch's ``linalg.cholesky``/
``linalg.inv``/``linalg.solve`` also make) and raise PyTorch's error. Halves compute in float32.

Matrices larger than the cuda kernels' tile (``MAX_BLOCK``) go through blocked algorithms here, whose trailing
updates are ``matmul``: right-looking Cholesky (factor the diagonal block, solve the panel below it, subtract
its outer product), right-looking LU with partial pivoting (``solvers._blocked_lu``) and blocked
triangular solves.
"""

from __future__ import annotations

from typing import NamedTuple

from . import dtypes as _dt
from ._complex import check_device
from .array import Array
from .dispatch import lookup
from .validation import LinAlgError, OpTypeError, OpValueError, broadcast_shapes, describe

__all__: list[str] = []  # reached as tkernels.linalg.<name>

_HALF = (_dt.float16, _dt.bfloat16)


class CholeskyExResult(NamedTuple):
    L: Array
    info: Array


def _check(op: str, x, square: bool = True) -> None:
    if not isinstance(x, Array):
        raise OpTypeError(f"linalg.{op}: expected an Array, got {describe(x)}; hint: convert with "
                          f"tkernels.asarray(...)")
    if x.ndim < 2:
        raise OpValueError(f"linalg.{op}: The input tensor A must have at least 2 dimensions, got {describe(x)}; "
                           f"hint: add a dimension with x[None] or x.reshape(...)")
    if x._dtype.kind == "c":  # complex: LAPACK's complex routines on cpu; the cuda kernels are real only
        check_device(f"linalg.{op}", x)
    elif x._dtype.kind != "f":
        raise OpTypeError(f"linalg.{op}: Expected a floating point or complex tensor as input, got {describe(x)}; "
                          f"hint: convert with x.astype(tkernels.float32) first")
    if square and x._shape[-1] != x._shape[-2]:
        raise OpValueError(f"linalg.{op}: A must be batches of square matrices, but they are {x._shape[-2]} by "
                           f"{x._shape[-1]} matrices ({describe(x)})")


def _pair(op: str, a, b, names=("A", "B")) -> None:
    if not isinstance(b, Array):
        raise OpTypeError(f"linalg.{op}: expected an Array for {names[1]}, got {describe(b)}")
    if a._device != b._device:
        raise OpValueError(f"linalg.{op}: Expected all tensors to be on the same device, got {names[0]} "
                           f"{describe(a)} and {names[1]} {describe(b)}")
    if a._dtype != b._dtype:
        raise OpTypeError(f"linalg.{op}: Expected {names[0]} and {names[1]} to have the same dtype, got "
                          f"{describe(a)} and {describe(b)}; hint: convert one with .astype(...)")


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(tuple(shape), dtype, device)


def _max_block(device) -> int | None:
    if device.type == "cpu":
        return None
    from .kernels.linalg_lu import MAX_BLOCK
    return MAX_BLOCK


def _raise_info(op: str, info: Array, message) -> None:
    """Raise PyTorch's error for the first nonzero code of ``info`` (a host read: a sync on cuda)."""
    if info.size == 0:
        return
    import numpy as np

    codes = info.numpy().reshape(-1)
    bad = np.flatnonzero(codes)
    if not bad.size:
        return
    i = int(bad[0])
    batch = f"(Batch element {i}): " if info.ndim else ""
    raise LinAlgError(f"linalg.{op}: {batch}{message(int(codes[i]))}")


# ------------------------------------------------------------------------------------------------- Cholesky
def _cholesky_into(out: Array, info: Array, x: Array, upper: bool) -> None:
    n = x._shape[-1]
    dev = x._device
    block = _max_block(dev)
    if block is None or n <= block:
        lookup("cholesky", dev)(out, info, x, upper)
        return
    _blocked_cholesky(out, info, x, upper, block)


def cholesky_ex(x, /, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """``(L, info)``: the Cholesky factor of the symmetric positive-definite matrices in the last two axes (only
    the lower triangle is read; ``upper``: the upper factor ``L^T`` is returned) and the int32 codes (..., ):
    0, or the order of the first leading minor that is not positive-definite (the factor is then partial)."""
    _check("cholesky_ex", x)
    *batch, n, _ = x._shape
    d, dev = x._dtype, x._device
    out = _empty(x._shape, d, dev)
    info = _empty(batch, _dt.int32, dev)
    if info.size and n:
        _cholesky_into(out, info, x, bool(upper))
    elif info.size:
        lookup("fill", dev)(info, 0)
    if check_errors:
        _raise_info("cholesky_ex", info, _not_pd)
    return CholeskyExResult(out, info)


def _not_pd(code: int) -> str:
    return (f"The factorization could not be completed because the input is not positive-definite (the leading "
            f"minor of order {code} is not positive-definite).")


def cholesky(x, /, *, upper: bool = False) -> Array:
    """The Cholesky factor ``L`` (``x = L @ L.mH``; ``upper``: ``U = L.mH``, ``x = U.mH @ U``) of symmetric
    (Hermitian) positive-definite matrices (the lower triangle is read); a ``LinAlgError`` naming the failing
    leading minor otherwise (a host sync on cuda, as PyTorch's)."""
    _check("cholesky", x)
    out, info = cholesky_ex(x, upper=upper)
    _raise_info("cholesky", info, _not_pd)
    return out


def _blocked_cholesky(out, info, x, upper, block):
    """Right-looking blocked Cholesky: per diagonal block, its factor (the kernel), the panel below it
    ``L_ij = A_ij L_jj^-T`` (a triangular solve) and the trailing update ``A_rest -= L_ij L_ij^T`` (matmul);
    the first failing block's info, offset by its start, is kept (on the device, no host read)."""
    from .creation import tril
    from .elementwise import add, equal, greater, logical_and, subtract, where
    from .linalg import matmul

    n = x._shape[-1]
    dev = x._device
    copy_ = lookup("copy_", dev)
    cplx = x._dtype.kind == "c"  # A = L L^H: the panel solve and the update take conjugate transposes
    w = tril(x)  # a fresh work copy; only the lower triangle is read and updated
    lo = _empty(x._shape, x._dtype, dev) if cplx and upper else out.mT if upper else out
    lookup("fill", dev)(lo, 0)
    lookup("fill", dev)(info, 0)
    for j0 in range(0, n, block):
        j1 = min(j0 + block, n)
        ljj = lo[..., j0:j1, j0:j1]
        part = _empty(info._shape, _dt.int32, dev)
        fac = _empty(ljj._shape, x._dtype, dev)
        lookup("cholesky", dev)(fac, part, w[..., j0:j1, j0:j1], False)
        copy_(ljj, fac)
        copy_(info, where(logical_and(equal(info, 0), greater(part, 0)), add(part, j0), info))
        if j1 == n:
            break
        panel = lo[..., j1:, j0:j1]
        if cplx:  # X L^H = A_ij  <=>  L X^H = A_ij^H
            y = _empty(panel.mT._shape, x._dtype, dev)
            _trsm(y, fac, w[..., j1:, j0:j1].mH, False, False)
            copy_(panel, y.mH)
        else:
            _trsm(panel.mT, fac, w[..., j1:, j0:j1].mT, False, False)  # X L^T = A_ij  <=>  L X^T = A_ij^T
        copy_(w[..., j1:, j1:], subtract(w[..., j1:, j1:], matmul(panel, panel.mH)))
    if cplx and upper:
        copy_(out, lo.mH)


# ------------------------------------------------------------------------------------ triangular solves
def _trsm(out: Array, a: Array, b: Array, upper: bool, unit: bool, piv=None, mode: int = 0) -> None:
    """``out = a^-1 b`` (operands of one batch shape, any strides)."""
    dev = out._device
    n = b._shape[-2]
    if n == 0 or out.size == 0:
        return
    block = _max_block(dev)
    if block is None or n <= block:
        lookup("solve_triangular", dev)(out, a, b, upper, unit, piv, mode)
        return
    _blocked_trsm(out, a, b, upper, unit, piv, mode, block)


def _blocked_trsm(out, a, b, upper, unit, piv, mode, block):
    """Blocked substitution: per diagonal block (in solve order) ``X_j = A_jj^-1 B_j`` (the kernel), then the
    remaining rows ``B_r -= A_rj X_j`` (matmul); ``piv``'s row swaps (``mode``) by the backend ``lu_swap_rows``."""
    from .elementwise import subtract
    from .linalg import matmul

    n = a._shape[-1]
    copy_ = lookup("copy_", out._device)
    work = b.copy()  # updated in place: never the caller's array
    if mode == 1:  # P^T B: LAPACK's swaps in order, before the solve
        lookup("lu_swap_rows", out._device)(work, piv, 0, False)
    starts = list(range(0, n, block))
    for j0 in (reversed(starts) if upper else starts):
        j1 = min(j0 + block, n)
        xj = _empty(work[..., j0:j1, :]._shape, out._dtype, out._device)
        lookup("solve_triangular", out._device)(xj, a[..., j0:j1, j0:j1], work[..., j0:j1, :], upper, unit, None, 0)
        copy_(out[..., j0:j1, :], xj)
        rest = slice(0, j0) if upper else slice(j1, n)
        if rest.stop > rest.start:
            copy_(work[..., rest, :], subtract(work[..., rest, :], matmul(a[..., rest, j0:j1], xj)))
    if mode == 2:  # P X: the swaps in reverse order, after it
        lookup("lu_swap_rows", out._device)(out, piv, 0, True)


def solve_triangular(a, b, /, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Array:
    """PyTorch's ``linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False)``: ``X`` with
    ``A @ X = B`` (``left``) or ``X @ A = B``, for triangular ``A`` (only its ``upper`` or lower triangle is
    read; ``unitriangular``: its diagonal is taken as ones). Batch dimensions broadcast."""
    _check("solve_triangular", a)
    _pair("solve_triangular", a, b)
    if b.ndim < 2:
        raise OpValueError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got "
                           f"{describe(b)}")
    n = a._shape[-1]
    if b._shape[-2 if left else -1] != n:
        side = "rows" if left else "columns"
        raise OpValueError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({a._shape[-2]}x{n} and {b._shape[-2]}x{b._shape[-1]}): "
                           f"B needs {n} {side}")
    batch = broadcast_shapes(a._shape[:-2], b._shape[:-2], op="linalg.solve_triangular")
    out = _empty(batch + b._shape[-2:], a._dtype, a._device)
    if out.size == 0:
        return out
    aa = a.broadcast_to(batch + a._shape[-2:])
    bb = b.broadcast_to(batch + b._shape[-2:])
    if left:
        _trsm(out, aa, bb, bool(upper), bool(unitriangular))
    else:  # X A = B  <=>  A^T X^T = B^T
        _trsm(out.mT, aa.mT, bb.mT, not upper, bool(unitriangular))
    return out
