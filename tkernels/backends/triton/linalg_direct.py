"""``linalg_solve``, ``linalg_inv_ex``, ``linalg_det``, ``linalg_slogdet`` and ``linalg_lu_solve`` on cuda
(signatures: ``tkernels/backends/numpy/linalg_direct.py``): the compositions of ``tkernels/solvers.py`` of the
LU and triangular solve kernels (one-tile and blocked), on the device throughout. The cpu backend has one LAPACK
call over the whole batch for each instead."""

from __future__ import annotations

from ...dispatch import register


@register("linalg_solve", "triton")
def linalg_solve(out, info, a, b) -> None:
    from ...solvers import _solve_composed
    _solve_composed(out, info, a, b)


@register("linalg_inv_ex", "triton")
def linalg_inv_ex(out, info, a) -> None:
    from ...solvers import _inv_composed
    _inv_composed(out, info, a)


@register("linalg_det", "triton")
def linalg_det(out, a) -> None:
    from ...solvers import _det_composed
    _det_composed(out, a)


@register("linalg_slogdet", "triton")
def linalg_slogdet(sign, logabsdet, a) -> None:
    from ...solvers import _slogdet_composed
    _slogdet_composed(sign, logabsdet, a)


@register("linalg_lu_solve", "triton")
def linalg_lu_solve(out, lu, piv, b, adjoint: bool) -> None:
    from ...solvers import _lu_solve_composed
    _lu_solve_composed(out, lu, piv, b, adjoint)
