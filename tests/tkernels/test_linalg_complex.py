"""tkernels.linalg on complex64/complex128 matrices (cpu: LAPACK's complex routines through NumPy/SciPy) against
NumPy, batched and non-contiguous (complex on cuda: test_linalg_complex_cuda.py for Cholesky, LU and the solves,
test_linalg_complex_decomp_cuda.py for qr/svd/eigh)."""

import numpy as np
import pytest

import tkernels as tk

L = tk.linalg
DTYPES = [np.complex64, np.complex128]


def _c(rng, shape, dt):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-5) if dt == np.complex64 else dict(rtol=1e-10, atol=1e-12)


def _close(got, want, dt):
    got = got.numpy()
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, **_tol(dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_factorizations_and_solves_match_numpy(dt):
    rng = np.random.default_rng(3)
    a = _c(rng, (2, 5, 5), dt)
    h = (a @ np.conj(np.swapaxes(a, -1, -2)) + 5 * np.eye(5)).astype(dt)
    b = _c(rng, (2, 5, 3), dt)
    bl = _c(rng, (2, 3, 5), dt)
    A, H, B, BL = tk.asarray(a), tk.asarray(h), tk.asarray(b), tk.asarray(bl)
    ah = np.conj(np.swapaxes(a, -1, -2))
    _close(L.cholesky(H), np.linalg.cholesky(h), dt)
    _close(L.cholesky(H, upper=True), np.conj(np.swapaxes(np.linalg.cholesky(h), -1, -2)), dt)
    hl = np.tril(h) + np.triu(np.full_like(h, 7 - 3j), 1)  # only the lower triangle is read
    _close(L.cholesky(tk.asarray(hl)), np.linalg.cholesky(h), dt)
    _close(L.det(A), np.linalg.det(a), dt)
    sign, logabs = L.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    _close(sign, rs, dt)
    _close(logabs, rl, dt)  # a real logabsdet
    _close(L.inv(A), np.linalg.inv(a), dt)
    _close(L.inv_ex(A)[0], np.linalg.inv(a), dt)
    _close(L.matrix_power(A, -3), np.linalg.matrix_power(a, -3), dt)
    _close(L.matrix_power(A, 4), np.linalg.matrix_power(a, 4), dt)
    _close(L.solve(A, B), np.linalg.solve(a, b), dt)
    _close(L.solve(A, BL, left=False), bl @ np.linalg.inv(a), dt)
    lu, piv = L.lu_factor(A)
    _close(L.lu_solve(lu, piv, B, adjoint=True), np.linalg.solve(ah, b), dt)
    _close(L.lu_solve(lu, piv, BL, left=False, adjoint=True), bl @ np.linalg.inv(ah), dt)
    p, lo, up = L.lu(A)
    _close(tk.matmul(tk.matmul(p, lo), up), a, dt)
    u = np.triu(a)
    _close(L.solve_triangular(tk.asarray(u), B, upper=True), np.linalg.solve(u, b), dt)
    _close(L.solve_triangular(tk.asarray(u), BL, upper=True, left=False), bl @ np.linalg.inv(u), dt)
    # non-contiguous: the conjugate transpose as a view
    _close(L.det(A.mT), np.linalg.det(np.swapaxes(a, -1, -2)), dt)
    _close(L.inv(A[:, ::2, ::2]), np.linalg.inv(a[:, ::2, ::2]), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_a_non_positive_definite_hermitian_matrix_gets_pytorchs_error_and_info(dt):
    h = np.array([[2, 1 + 1j], [1 - 1j, 0.5]], dtype=dt)  # minor of order 2: 1 - 2 < 0
    with pytest.raises(tk.linalg.LinAlgError, match=r"leading minor of order 2 is not positive-definite"):
        L.cholesky(tk.asarray(h))
    assert int(L.cholesky_ex(tk.asarray(h))[1]) == 2
    with pytest.raises(tk.linalg.LinAlgError, match="singular"):
        L.inv(tk.asarray(np.array([[1, 1j], [1j, -1]], dtype=dt)))
    s, logabs = L.slogdet(tk.asarray(np.array([[1, 1j], [1j, -1]], dtype=dt)))
    assert complex(s) == 0 and float(logabs) == -np.inf


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm_of_complex_matrices_is_real(dt, ord):  # noqa: A002
    rng = np.random.default_rng(4)
    a = _c(rng, (3, 4, 6), dt)
    got = tk.linalg.matrix_norm(tk.asarray(a), ord=ord, keepdims=True)
    want = np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=True)
    assert got.shape == (3, 1, 1)
    _close(got, want, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_decompositions_match_numpy(dt):
    rng = np.random.default_rng(5)
    a = _c(rng, (2, 6, 4), dt)
    h = a[:, :4] + np.conj(np.swapaxes(a[:, :4], -1, -2))
    _close(L.eigvalsh(tk.asarray(h)), np.linalg.eigvalsh(h), dt)
    w, v = L.eigh(tk.asarray(h))
    _close(tk.matmul(tk.matmul(v, tk.asarray(np.eye(4, dtype=dt)) * w[..., None, :]), v.mH), h, dt)
    _close(L.svdvals(tk.asarray(a)), np.linalg.svd(a, compute_uv=False), dt)
    q, r = L.qr(tk.asarray(a))
    _close(tk.matmul(q, r), a, dt)
    _close(L.pinv(tk.asarray(a)), np.linalg.pinv(a), dt)
    assert L.matrix_rank(tk.asarray(a)).numpy().tolist() == [4, 4]
    _close(L.cond(tk.asarray(a[:, :4])), np.linalg.cond(a[:, :4]), dt)
