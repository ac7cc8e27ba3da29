"""The LU family and what is built on it (``tkernels.linalg``): lu_factor, lu_factor_ex, lu, lu_solve, solve,
inv, inv_ex, det, slogdet. Backend ops: ``lu_factor`` and ``solve_triangular`` (``tkernels/factorizations.py``
has their signatures); everything else is composed here of them and of elementwise ops and reductions on the
device. The entries without ``_ex`` read the info codes to raise PyTorch's errors (a host sync on cuda, as
PyTorch's ``linalg.inv``/``linalg.solve``); ``det``/``slogdet`` never raise (a singular matrix has det 0).
``solve``, ``inv_ex``, ``det``, ``slogdet`` and ``lu_solve`` go through one backend op each (``linalg_solve``,
``linalg_inv_ex``, ``linalg_det``, ``linalg_slogdet``, ``linalg_lu_solve``): NumPy's batched LAPACK on cpu
(``backends/numpy/linalg_direct.py``), on cuda the compositions ``_*_composed`` below of the LU and triangular
solve kernels (registered by ``backends/triton/linalg_direct.py``).
"""

from __future__ import annotations

from typing import NamedTuple

from . import dtypes as _dt
from .array import Array
from .dispatch import lookup
from .factorizations import _check, _empty, _max_block, _pair, _raise_info, _trsm
from .validation import OpTypeError, OpValueError, broadcast_shapes, describe

__all__: list[str] = []

_HALF = (_dt.float16, _dt.bfloat16)


class LUFactorResult(NamedTuple):
    LU: Array
    pivots: Array


class LUFactorExResult(NamedTuple):
    LU: Array
    pivots: Array
    info: Array


class LUResult(NamedTuple):
    P: Array
    L: Array
    U: Array


class InvExResult(NamedTuple):
    inverse: Array
    info: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


def _lu_into(lu: Array, piv: Array, info: Array, x: Array, pivot: bool = True) -> None:
    dev = x._device
    block = _max_block(dev)
    if block is None or max(x._shape[-2:]) <= block:
        if pivot:
            lookup("lu_factor", dev)(lu, piv, info, x)
        else:  # (the keyword only when set: a backend without it still serves the pivoting LU)
            lookup("lu_factor", dev)(lu, piv, info, x, pivot=False)
        return
    _blocked_lu(lu, piv, info, x, block, pivot)


def _blocked_lu(lu: Array, piv: Array, info: Array, x: Array, block: int, pivot: bool = True) -> None:
    """Right-looking blocked LU with partial pivoting (LAPACK's getrf), in place on ``lu`` (a copy of ``x``):
    per panel of ``block`` columns, its factorization (backend ``lu_panel``: any height, the pivots and the
    first zero pivot into ``piv``/``info`` on the device), its row swaps applied to the other columns
    (``lu_swap_rows``), the block row ``U12 = L11^-1 A12`` (a unit-lower triangular solve) and the trailing
    update ``A22 -= L21 U12`` (matmul). Nothing is read back to the host. ``pivot=False``: the panels do no
    row exchanges (their pivots are the identity) and there are no swaps to apply."""
    from .elementwise import subtract
    from .linalg import matmul

    m, n = x._shape[-2:]
    k = min(m, n)
    dev = x._device
    copy_ = lookup("copy_", dev)
    panel, swap = lookup("lu_panel", dev), lookup("lu_swap_rows", dev)
    copy_(lu, x)
    lookup("fill", dev)(info, 0)
    for k0 in range(0, k, block):
        k1 = min(k0 + block, k)
        if pivot:
            panel(lu, piv, info, k0, k1)
        else:
            panel(lu, piv, info, k0, k1, pivot=False)
        p = piv[..., k0:k1]
        if k0 and pivot:
            swap(lu[..., k0:, :k0], p, k0, False)
        if k1 < n:
            if pivot:
                swap(lu[..., k0:, k1:], p, k0, False)
            u12 = lu[..., k0:k1, k1:]
            _trsm(u12, lu[..., k0:k1, k0:k1], u12.copy(), False, True)
            if k1 < m:
                a22 = lu[..., k1:, k1:]
                copy_(a22, subtract(a22, matmul(lu[..., k1:, k0:k1], u12)))


def lu_factor_ex(x, /, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """``(LU, pivots, info)``: ``P A = L U`` by partial pivoting (LAPACK's getrf) of the (..., M, N) matrices:
    L (unit diagonal, not stored) below the diagonal of LU, U on and above; pivots (..., min(M, N)) int32,
    1-based (row ``i`` was swapped with row ``pivots[i] - 1``, in order); info 0 or the 1-based index of the
    first zero on U's diagonal. ``pivot=False``: ``A = L U`` without row exchanges, pivots ``1..K`` (the
    identity); a zero pivot gives its index as info and, as PyTorch's, inf/NaN in the factors (its column is
    divided by it). PyTorch has ``pivot=False`` on cuda only (its cpu raises); here both devices have it."""
    _check("lu_factor_ex", x, square=False)
    *batch, m, n = x._shape
    d, dev = x._dtype, x._device
    lu = _empty(x._shape, d, dev)
    piv = _empty(tuple(batch) + (min(m, n),), _dt.int32, dev)
    info = _empty(batch, _dt.int32, dev)
    if info.size and min(m, n):
        _lu_into(lu, piv, info, x, bool(pivot))
    elif info.size:
        lookup("fill", dev)(info, 0)
    if check_errors:
        _raise_info("lu_factor_ex", info, _zero_u)
    return LUFactorExResult(lu, piv, info)


def _zero_u(code: int) -> str:
    return (f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you still "
            f"want to perform the factorization, consider calling linalg.lu(A, pivot) or "
            f"linalg.lu_factor_ex(A, pivot)")


def lu_factor(x, /, *, pivot: bool = True) -> LUFactorResult:
    """``(LU, pivots)`` of ``lu_factor_ex`` (``pivot=False`` on cpu and cuda); an error when some U has a zero on
    its diagonal."""
    _check("lu_factor", x, square=False)
    lu, piv, info = lu_factor_ex(x, pivot=pivot)
    _raise_info("lu_factor", info, _zero_u)
    return LUFactorResult(lu, piv)


def _eye_like(n: int, batch, dtype, device) -> Array:
    from .creation import eye
    return eye(n, dtype=dtype, device=device).broadcast_to(tuple(batch) + (n, n))


def _apply_pivots(b: Array, piv: Array, inverse: bool) -> Array:
    """``P_l b`` (LAPACK's swaps in order) or, ``inverse``, ``P_l^T b``: a unit-lower solve with the identity."""
    n = b._shape[-2]
    batch = broadcast_shapes(b._shape[:-2], piv._shape[:-1])
    out = _empty(batch + b._shape[-2:], b._dtype, b._device)
    eye = _eye_like(n, batch, b._dtype, b._device)
    _trsm(out, eye, b.broadcast_to(out._shape), False, True, piv.broadcast_to(batch + (n,)), 2 if inverse else 1)
    return out


def lu(x, /, *, pivot: bool = True) -> LUResult:
    """``(P, L, U)`` with ``A = P @ L @ U``: P (..., M, M) a permutation, L (..., M, K) unit lower and U
    (..., K, N) upper triangular, K = min(M, N). ``pivot=False`` (cpu and cuda; PyTorch's cpu raises): ``A = L U``
    without row exchanges and P empty (shape (0,)), as PyTorch's."""
    from .creation import tril, triu

    _check("lu", x, square=False)
    lu_, piv, _ = lu_factor_ex(x, pivot=pivot)
    *batch, m, n = x._shape
    k = min(m, n)
    d, dev = x._dtype, x._device
    eye = _eye_like(m, batch, d, dev)
    if not pivot:  # PyTorch's: an empty P
        P = _empty((0,), d, dev)  # noqa: N806
    elif m and eye.size:
        if k < m:  # a tall matrix: rows k.. are not swapped (pivots of their own index)
            from .creation import arange
            from .manipulation import concat
            rest = arange(k + 1, m + 1, dtype=_dt.int32, device=dev).broadcast_to(tuple(batch) + (m - k,))
            piv = concat([piv, rest], axis=-1)
        P = _apply_pivots(eye, piv, False).mT if k else eye  # noqa: N806 - (P_l I)^T
        P = P.contiguous()  # noqa: N806
    else:
        P = _empty(tuple(batch) + (m, m), d, dev)  # noqa: N806
    L = tril(lu_[..., :, :k], k=-1)  # noqa: N806
    if L.size:
        from .elementwise import add
        L = add(L, _eye_like(m, batch, d, dev)[..., :, :k])  # noqa: N806
    U = triu(lu_[..., :k, :])  # noqa: N806
    return LUResult(P, L, U)


def lu_solve(LU, pivots, B, /, *, left: bool = True, adjoint: bool = False) -> Array:  # noqa: N803
    """PyTorch's ``linalg.lu_solve``: ``X`` with ``A X = B`` (``left``) or ``X A = B``, ``A^H`` for A when
    ``adjoint``, from ``(LU, pivots)`` of ``lu_factor``. Batch dimensions broadcast."""
    _check("lu_solve", LU)
    _pair("lu_solve", LU, B, ("LU", "B"))
    if not isinstance(pivots, Array) or pivots._dtype != _dt.int32 or pivots._shape[-1:] != LU._shape[-1:]:
        raise OpTypeError(f"linalg.lu_solve: pivots must be the int32 (..., {LU._shape[-1]}) pivots of lu_factor, "
                          f"got {describe(pivots)}")
    n = LU._shape[-1]
    if B.ndim < 2 or B._shape[-2 if left else -1] != n:
        raise OpValueError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {describe(B)})")
    if not left:  # X A = B  <=>  A^H X^H = B^H (A^T X^T = B^T for real matrices)
        return _adj(lu_solve(LU, pivots, _adj(B), left=True, adjoint=not adjoint))
    batch = broadcast_shapes(LU._shape[:-2], pivots._shape[:-1], B._shape[:-2], op="linalg.lu_solve")
    out = _empty(batch + B._shape[-2:], LU._dtype, LU._device)
    if out.size == 0:
        return out
    a = LU.broadcast_to(batch + (n, n))
    p = pivots.broadcast_to(batch + (n,))
    b = B.broadcast_to(out._shape)
    lookup("linalg_lu_solve", LU._device)(out, a, p, b, bool(adjoint))
    return out


def _lu_solve_composed(out: Array, a: Array, p: Array, b: Array, adjoint: bool) -> None:
    """``linalg_lu_solve`` of the triangular solves (operands of one batch shape, ``out`` not empty)."""
    if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
        _trsm(out, a, b, False, True, p, 1)
        _trsm(out, a, out, True, False)
    else:  # A^H = U^H L^H P^T: X = P L^-H U^-H B
        ah = _adj(a)
        _trsm(out, ah, b, False, False)
        _trsm(out, ah, out, True, True, p, 2)


def _adj(x: Array) -> Array:
    """The conjugate transpose of the matrices (the transpose of real ones: a view)."""
    return x.mH if x._dtype.kind == "c" else x.mT


def _singular(op: str):
    if op == "inv":
        return lambda c: (f"The diagonal element {c} is zero, the inversion could not be completed because the "
                          f"input matrix is singular.")
    return lambda c: "The solver failed because the input matrix is singular."


def solve(x1, x2, /, *, left: bool = True) -> Array:
    """``X`` with ``x1 @ X = x2`` (``left``; ``X @ x1 = x2`` otherwise), x1 (..., M, M) invertible; array API
    semantics: a 1-D ``x2`` of M elements is a vector (the result is one), otherwise x2 is (..., M, K); batch
    dimensions broadcast. A singular x1 raises PyTorch's error (a host sync on cuda)."""
    _check("solve", x1)
    _pair("solve", x1, x2, ("A", "B"))
    vector = x2.ndim == 1
    b = x2[:, None] if vector else x2
    if vector and not left:
        b = x2[None, :]
    if b._shape[-2 if left else -1] != x1._shape[-1]:
        raise OpValueError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({describe(x1)} and {describe(x2)})")
    a = x1 if left else x1.mT  # X A = B  <=>  A^T X^T = B^T
    bb = b if left else b.mT
    batch = broadcast_shapes(a._shape[:-2], bb._shape[:-2], op="linalg.solve")
    out = _empty(batch + bb._shape[-2:], a._dtype, a._device)
    info = _empty(batch, _dt.int32, a._device)
    if out.size:
        lookup("linalg_solve", a._device)(out, info, a.broadcast_to(batch + a._shape[-2:]), bb.broadcast_to(out._shape))
        _raise_info("solve", info, _singular("solve"))
    elif info.size:  # no right-hand sides (or 0 x 0 matrices): A is still factored for its error
        _raise_info("solve", lu_factor_ex(a).info, _singular("solve"))
    out = out if left else out.mT
    return out[..., 0] if vector and left else out[..., 0, :] if vector else out


def _solve_composed(out: Array, info: Array, a: Array, b: Array) -> None:
    """``linalg_solve`` of the LU and the triangular solves (operands of one batch shape, ``out`` not empty)."""
    lu_, piv, code = lu_factor_ex(a)
    lookup("copy_", a._device)(info, code)
    _lu_solve_composed(out, lu_, piv, b, False)


def inv_ex(x, /, *, check_errors: bool = False) -> InvExResult:
    """``(inverse, info)`` of the (..., M, M) matrices; info 0, or the 1-based index of U's first zero
    diagonal element for a singular matrix (its inverse then holds inf/NaN)."""
    _check("inv_ex", x)
    out, info = _empty(x._shape, x._dtype, x._device), _empty(x._shape[:-2], _dt.int32, x._device)
    if x.size:
        lookup("linalg_inv_ex", x._device)(out, info, x)
    elif info.size:
        lookup("fill", x._device)(info, 0)
    if check_errors:
        _raise_info("inv_ex", info, _singular("inv"))
    return InvExResult(out, info)


def _inv_composed(out: Array, info: Array, x: Array) -> None:
    """``linalg_inv_ex`` of the LU and the triangular solves (``x`` not empty)."""
    lu_, piv, code = lu_factor_ex(x)
    lookup("copy_", x._device)(info, code)
    *batch, n, _ = x._shape
    _lu_solve_composed(out, lu_, piv, _eye_like(n, batch, x._dtype, x._device), False)


def inv(x, /) -> Array:
    """The inverse of the (..., M, M) matrices; PyTorch's error for a singular one (a host sync on cuda)."""
    _check("inv", x)
    out, info = inv_ex(x)
    _raise_info("inv", info, _singular("inv"))
    return out


def _lu_sign_diag(x: Array):
    """(diagonal of U, sign of the permutation) of ``lu_factor_ex(x)``, in float32 for halves."""
    from .creation import arange
    from .elementwise import not_equal, where
    from .manipulation import diagonal
    from .reduction import sum as _sum

    xc = x.astype(_dt.float32) if x._dtype in _HALF else x
    lu_, piv, _ = lu_factor_ex(xc)
    n = x._shape[-1]
    d = diagonal(lu_, axis1=-2, axis2=-1)
    swaps = _sum(not_equal(piv, arange(1, n + 1, dtype=_dt.int32, device=x._device)).astype(_dt.int32), axis=-1)
    odd = not_equal(swaps % 2, 0)
    sign = where(odd, -1.0, 1.0).astype(xc._dtype)
    return d, sign


def det(x, /) -> Array:
    """The determinants (...,) of the (..., M, M) matrices: the product of U's diagonal and the pivots' sign
    (0 for a singular matrix)."""

    _check("det", x)
    if x._shape[-1] == 0:
        from .creation import ones
        return ones(x._shape[:-2], dtype=x._dtype, device=x._device)
    out = _empty(x._shape[:-2], x._dtype, x._device)
    if out.size:
        lookup("linalg_det", x._device)(out, x)
    return out


def _det_composed(out: Array, x: Array) -> None:
    """``linalg_det``: the product of the LU's diagonal and the pivots' sign (``x`` not empty)."""
    from .reduction import prod

    d, sign = _lu_sign_diag(x)
    lookup("copy_", x._device)(out, (prod(d, axis=-1) * sign).astype(x._dtype))


def slogdet(x, /) -> SlogdetResult:
    """``(sign, logabsdet)``: det = sign * exp(logabsdet) of the (..., M, M) matrices, without overflow; a
    singular matrix gives sign 0 and logabsdet -inf. Complex matrices: sign is the unit complex phase of det,
    logabsdet real (float32 for complex64)."""

    _check("slogdet", x)
    real_dtype = _dt.to_real(x._dtype)  # logabsdet is real
    if x._shape[-1] == 0:
        from .creation import ones, zeros
        return SlogdetResult(ones(x._shape[:-2], dtype=x._dtype, device=x._device),
                             zeros(x._shape[:-2], dtype=real_dtype, device=x._device))
    s, la = _empty(x._shape[:-2], x._dtype, x._device), _empty(x._shape[:-2], real_dtype, x._device)
    if s.size:
        lookup("linalg_slogdet", x._device)(s, la, x)
    return SlogdetResult(s, la)


def _slogdet_composed(sign: Array, logabsdet: Array, x: Array) -> None:
    """``linalg_slogdet`` from the LU's diagonal and the pivots' sign (``x`` not empty)."""
    from .elementwise import abs as _abs
    from .elementwise import log
    from .elementwise import sign as _sign
    from .reduction import prod
    from .reduction import sum as _sum

    d, psign = _lu_sign_diag(x)
    copy_ = lookup("copy_", x._device)
    copy_(sign, (prod(_sign(d), axis=-1) * psign).astype(sign._dtype))  # complex: the product of d / |d|
    copy_(logabsdet, _sum(log(_abs(d)), axis=-1).astype(logabsdet._dtype))
