"""Complex autograd of autograd.linalg's Cholesky, LU and the solves on them on interpreted cuda: the same
complex128 gradients as on cpu (where they are gradchecked: test_linalg_complex.py), batched, through the
one-tile kernels and the blocked paths (a block of 2 forced)."""

import numpy as np
import pytest

import autograd as ag

L = ag.linalg
rng = np.random.default_rng(18)
SQ = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3)) + 2 * np.eye(3)
RHS = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))


def _hpd(x):
    return x @ x.mH + 3 * ag.eye(3, dtype=x.dtype, device=x.device)


CASES = {
    "slogdet": (lambda x: L.slogdet(x)[0] * L.slogdet(x)[1], [SQ]),
    "logdet": (lambda x: ag.logdet(x), [SQ]),
    "inv": (lambda x: L.inv(x), [SQ]),
    "matrix_power": (lambda x: L.matrix_power(x, -2), [SQ]),
    "solve": (lambda x, y: L.solve(x, y), [SQ, RHS]),
    "solve_right": (lambda x, y: L.solve(x, y.mT, left=False), [SQ, RHS]),
    "solve_triangular": (lambda x, y: L.solve_triangular(x.triu(), y, upper=True), [SQ, RHS]),
    "solve_triangular_right_unit": (lambda x, y: L.solve_triangular(x.tril(), y.mT, upper=False, left=False,
                                                                    unitriangular=True), [SQ, RHS]),
    "lu_factor": (lambda x: L.lu_factor(x)[0], [SQ]),
    "lu": (lambda x: L.lu(x)[1] + L.lu(x)[2], [SQ]),
    "lu_no_pivot": (lambda x: L.lu(x, pivot=False)[1] + L.lu(x, pivot=False)[2], [SQ]),
    "lu_factor_no_pivot": (lambda x: L.lu_factor(x, pivot=False)[0], [SQ]),
    "lu_solve_adjoint": (lambda x, y: L.lu_solve(*L.lu_factor(x), y, adjoint=True), [SQ, RHS]),
    "cholesky": (lambda x: L.cholesky(_hpd(x)), [SQ]),
    "cholesky_upper": (lambda x: L.cholesky(_hpd(x), upper=True), [SQ]),
}


def _grads(fn, arrays, device):
    args = [ag.tensor(a, dtype=ag.complex128, device=device, requires_grad=True) for a in arrays]
    y = fn(*args)
    r = np.random.default_rng(1)
    w = r.standard_normal(y.shape) + 1j * r.standard_normal(y.shape)  # a real loss of every output
    loss = (y * ag.tensor(w, dtype=y.dtype, device=device)).real.sum()
    return [g.cpu().numpy() for g in ag.grad(loss, args)]


def _same(fn, arrays):
    for gc, gg in zip(_grads(fn, arrays, "cpu"), _grads(fn, arrays, "cuda")):
        np.testing.assert_allclose(gg, gc, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_complex128_gradients_on_cuda_equal_cpu(name):
    _same(*CASES[name])


@pytest.mark.parametrize("name", ["solve", "cholesky_upper"])
def test_complex128_gradients_through_the_blocked_paths(name, monkeypatch):
    import tkernels.factorizations as F  # noqa: N812
    import tkernels.solvers as S  # noqa: N812

    monkeypatch.setattr(F, "_max_block", lambda device: 2)
    monkeypatch.setattr(S, "_max_block", lambda device: 2)
    _same(*CASES[name])


def test_det_gradient():
    """det's backward also forms PyTorch's SVD branch for singular matrices (on the device, selected by the LU's
    info without a host read): on cuda through the complex SVD kernel."""
    _same(lambda x: L.det(x), [SQ])
