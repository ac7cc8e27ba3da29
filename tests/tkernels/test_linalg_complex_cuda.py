"""Complex Cholesky, LU and the solves built on them on interpreted cuda (``kernels/linalg_complex.py``) against
NumPy/SciPy (LAPACK's zpotrf/zgetrf, the same pivots) and the cpu results: random, Hermitian positive-definite,
not positive-definite and singular (info codes, PyTorch's errors), NaN, ill-conditioned, batched, broadcast,
non-contiguous (transposed, conjugate-transposed, strided), empty, complex64 and complex128, and the blocked paths
past the tile (a block of 4 forced, as ``test_linalg_lu.py`` does for real dtypes)."""

import numpy as np
import pytest
import scipy.linalg as sl

import tkernels as tk

LA = tk.linalg
DTYPES = [np.complex64, np.complex128]
TOL = {np.complex64: 3e-4, np.complex128: 1e-10}
rng = np.random.default_rng(1818)


def C(shape, dt=np.complex128):  # noqa: N802
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def hpd(shape, dt=np.complex128):
    a = C(shape)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dt)


def T(a, dev="cuda"):  # noqa: N802
    return tk.asarray(np.ascontiguousarray(a), device=dev)


def close(x, ref, dt, scale=1.0):
    got = x.numpy()
    assert got.dtype in (dt, np.dtype(dt).type(0).real.dtype), (got.dtype, dt)
    np.testing.assert_allclose(got.astype(np.complex128), ref, rtol=TOL[dt] * scale, atol=TOL[dt] * scale)


def force_block(monkeypatch):
    """The blocked paths with a block of 4 (panel, row swaps, trsm, complex matmul trailing updates)."""
    import tkernels.factorizations as F  # noqa: N812
    import tkernels.solvers as S  # noqa: N812

    monkeypatch.setattr(F, "_max_block", lambda device: 4)
    monkeypatch.setattr(S, "_max_block", lambda device: 4)


@pytest.fixture(params=[False, True], ids=["tile", "blocked"])
def blocked(request, monkeypatch):
    """The one-tile kernels, or the blocked paths."""
    if request.param:
        force_block(monkeypatch)
    return request.param


@pytest.mark.parametrize("dt", DTYPES)
def test_cholesky(dt, blocked):
    h = hpd((2, 7, 7), dt)
    ref = np.linalg.cholesky(h.astype(np.complex128))
    close(LA.cholesky(T(h)), ref, dt)
    close(LA.cholesky(T(h), upper=True), np.conj(np.swapaxes(ref, -1, -2)), dt)
    # only the lower triangle and the real part of the diagonal are read; a conjugate-transposed view
    junk = (h + np.triu(C(h.shape), 1) + 1j * np.diag(rng.standard_normal(7))).astype(dt)
    close(LA.cholesky(T(np.conj(np.swapaxes(junk, -1, -2))).mH), ref, dt)
    bad = h.copy()
    bad[1, 5, 5] = -100
    assert LA.cholesky_ex(T(bad)).info.numpy().tolist() == [0, 6]
    with pytest.raises(LA.LinAlgError, match=r"^linalg.cholesky: \(Batch element 1\): .*leading minor of order 6 is"):
        LA.cholesky(T(bad))
    nan = np.eye(5, dtype=dt)
    nan[2, 2] = np.nan
    assert int(LA.cholesky_ex(T(nan)).info) == 3


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
@pytest.mark.parametrize("dt", DTYPES)
def test_lu_factor_pivots_are_lapacks(dt, blocked):
    """The LU and pivots equal SciPy's (zgetrf pivots on |re| + |im|): square, tall, wide, batched; a matrix whose
    largest modulus and largest |re| + |im| are in different rows; a zero column (info) and a NaN."""
    for shape in [(2, 7, 7), (9, 5), (5, 9)]:
        a = C(shape, dt)
        lu, piv, info = LA.lu_factor_ex(T(a))
        for i in np.ndindex(*shape[:-2]):
            rl, rp = sl.lu_factor(a[i])
            close(lu[i], rl, dt)
            assert (piv.numpy()[i] - 1 == rp[:min(shape[-2:])]).all()
        assert not info.numpy().any()
        P, L, U = LA.lu(T(a))  # noqa: N806
        close(P @ L @ U, a, dt)
    a = np.array([[0.9 + 0.9j, 1], [1.2, 2], [0.1, 1j]], dtype=dt)  # |1.2| < |0.9 + 0.9j| < 0.9 + 0.9
    a = np.concatenate([a, C((3, 1), dt)], axis=1)
    assert LA.lu_factor(T(a)).pivots.numpy().tolist() == (sl.lu_factor(a)[1] + 1).tolist() == [1, 2, 3]
    tie = np.concatenate([np.array([[1 - 1j], [2], [-2j], [1 + 1j]]), C((4, 3))], axis=1).astype(dt)
    assert int(LA.lu_factor(T(tie)).pivots.numpy()[0]) == sl.lu_factor(tie)[1][0] + 1 == 1  # |re|+|im| all 2
    sing = C((2, 7, 7), dt)
    sing[1, :, 5] = 0  # U[6, 6] exactly zero
    assert LA.lu_factor_ex(T(sing)).info.numpy().tolist() == [0, 6]
    close(LA.lu_factor_ex(T(sing)).LU[1], sl.lu_factor(sing[1], check_finite=False)[0], dt)
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): U\[6,6\] is zero"):
        LA.lu_factor(T(sing))
    nan = C((5, 5), dt)
    nan[3, 0] = np.nan
    assert (np.isnan(LA.lu_factor(T(nan)).LU.numpy()).any() and int(LA.lu_factor(T(nan)).pivots.numpy()[0]) == 4)


@pytest.mark.parametrize("dt, blocked", [(np.complex64, False), (np.complex128, True)],
                         ids=["tile-complex64", "blocked-complex128"])
def test_solves_inv_det(dt, blocked, monkeypatch):
    """(CPU time: the one-tile complex128 solves run in the test below and in the gradient tests
    (tests/autograd/test_linalg_complex_cuda.py), the complex64 factorizations in both paths above.)"""
    if blocked:
        force_block(monkeypatch)
    n = 6 if blocked else 7  # blocked: two blocks of 4, the second partial
    a = C((2, n, n), dt)
    b = C((2, n, 3), dt)
    ah = np.conj(np.swapaxes(a, -1, -2))
    at = T(np.swapaxes(a, -1, -2)).mT  # a transposed (non-contiguous) view
    bt = np.swapaxes(b, -1, -2)
    close(LA.solve(at, T(b)), np.linalg.solve(a, b), dt)
    close(LA.solve(at, T(b[0, :, 0])), np.linalg.solve(a, b[0, :, 0]), dt)  # a vector, broadcast
    close(LA.solve(at, T(bt), left=False), bt @ np.linalg.inv(a), dt)
    lu, piv = LA.lu_factor(at)
    close(LA.lu_solve(lu, piv, T(b)), np.linalg.solve(a, b), dt)
    close(LA.lu_solve(lu, piv, T(b), adjoint=True), np.linalg.solve(ah, b), dt)
    close(LA.lu_solve(lu, piv, T(bt), left=False), bt @ np.linalg.inv(a), dt)
    close(LA.lu_solve(lu, piv, T(bt), left=False, adjoint=True), bt @ np.linalg.inv(ah), dt)
    close(LA.inv(at), np.linalg.inv(a), dt)
    close(LA.det(at), np.linalg.det(a), dt)
    sign, logabs = LA.slogdet(at)
    rs, rl = np.linalg.slogdet(a)
    assert logabs.dtype == (tk.float32 if dt == np.complex64 else tk.float64)
    close(sign, rs, dt)
    close(logabs, rl, dt)
    close(LA.matrix_power(T(a), -3), np.linalg.matrix_power(a.astype(np.complex128), -3), dt, scale=10)
    for upper in (False, True):  # one matrix: the interpreter runs a program per matrix
        t = np.triu(a[0]) if upper else np.tril(a[0])
        t = (t + 4 * np.eye(n)).astype(dt)
        for unit in (False, True):
            tt = np.tril(t, -1) + np.triu(t, 1) + np.eye(n) if unit else t
            x = LA.solve_triangular(T(t), T(b[0]), upper=upper, unitriangular=unit)
            close(x, np.linalg.solve(tt, b[0]), dt)
            x = LA.solve_triangular(T(t), T(bt[0]), upper=upper, left=False, unitriangular=unit)
            close(x, bt[0] @ np.linalg.inv(tt), dt)
    sing = a.copy()
    sing[1, :, 3] = 0  # U[4, 4] exactly zero
    assert LA.inv_ex(T(sing)).info.numpy().tolist() == [0, 4]
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: \(Batch element 1\): The diagonal element 4 is zero"):
        LA.inv(T(sing))
    with pytest.raises(LA.LinAlgError, match="^linalg.solve: .*singular"):
        LA.solve(T(sing), T(b))
    assert LA.det(T(sing)).numpy()[1] == 0 and LA.slogdet(T(sing)).logabsdet.numpy()[1] == -np.inf


@pytest.mark.parametrize("dt", DTYPES)
def test_same_as_cpu_ill_conditioned_broadcast_and_empty(dt):
    u, _, vh = np.linalg.svd(C((7, 7)))
    ill = ((u * np.logspace(0, -3 if dt == np.complex64 else -9, 7)) @ vh).astype(dt)
    b = C((3, 7, 2), dt)
    lu_cpu, lu_gpu = LA.lu_factor(T(ill, "cpu")), LA.lu_factor(T(ill))
    assert (lu_cpu.pivots.numpy() == lu_gpu.pivots.numpy()).all()
    scale = 1 if dt == np.complex64 else 1e3  # rounding grows with the condition number (1e3, 1e9)
    close(lu_gpu.LU, lu_cpu.LU.numpy(), dt, scale=scale)
    close(LA.slogdet(T(ill)).logabsdet, LA.slogdet(T(ill, "cpu")).logabsdet.numpy(), dt, scale=scale)
    close(LA.solve(T(ill), T(ill @ b)), b, dt, scale=1 if dt == np.complex64 else 1e4)
    strided = T(C((2, 10, 11), dt))[:, ::2, 1::2]  # a strided view broadcast against b's batch
    close(LA.solve(strided[None], T(b[:, None, :5])), np.linalg.solve(strided.numpy()[None], b[:, None, :5]), dt)
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        x = tk.zeros(shape, dtype=tk.complex64 if dt == np.complex64 else tk.complex128, device="cuda")
        assert LA.cholesky(x).shape == shape and LA.inv(x).shape == shape and LA.solve(x, x).shape == shape
        assert LA.det(x).shape == shape[:-2] and LA.lu_factor(x).pivots.shape == shape[:-1]


@pytest.mark.parametrize("dt", DTYPES)
def test_tril_triu(dt):
    """The complex triangles on cuda (the real kernel on each part view): offsets, a transposed view, a batch."""
    a = C((2, 4, 5), dt)
    x = T(a)
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(tk.tril(x, k=k).numpy(), np.tril(a, k))
        np.testing.assert_array_equal(tk.triu(x.mT, k=k).numpy(), np.triu(np.swapaxes(a, -1, -2), k))


@pytest.mark.parametrize("dt", DTYPES)
def test_lu_no_pivot(dt, blocked):
    """``pivot=False``: A = L U with identity pivots, the same factors as cpu's; past an exact zero pivot (built
    from small Gaussian-integer factors, so elimination is exact) info names it and the finished columns stay
    finite, as on cpu."""
    n = 7
    L0 = np.tril(rng.integers(-1, 2, (3, n, n)) + 1j * rng.integers(-1, 2, (3, n, n)), -1) + np.eye(n)  # noqa: N806
    U0 = np.triu(rng.integers(-1, 2, (3, n, n)) + 1j * rng.integers(-1, 2, (3, n, n)), 1) + np.eye(n)  # noqa: N806
    U0[1, 5, 5] = 0
    a = (L0 @ U0).astype(dt)
    lu, piv, info = LA.lu_factor_ex(T(a), pivot=False)
    clu, cpiv, cinfo = LA.lu_factor_ex(T(a, "cpu"), pivot=False)
    assert info.numpy().tolist() == cinfo.numpy().tolist() == [0, 6, 0]
    np.testing.assert_array_equal(piv.numpy(), np.broadcast_to(np.arange(1, n + 1, dtype=np.int32), (3, n)))
    np.testing.assert_array_equal(piv.numpy(), cpiv.numpy())
    got, ref = lu.numpy(), np.tril(L0, -1) + U0
    np.testing.assert_array_equal(got[[0, 2]], ref[[0, 2]].astype(dt))  # exact: Gaussian integers throughout
    np.testing.assert_array_equal(got[1][:, :5], ref[1][:, :5].astype(dt))
    assert not np.isfinite(got[1][6:, 5]).any() and not np.isfinite(clu.numpy()[1][6:, 5]).any()
    w = (C((2, 5, 4)) + 3 * np.eye(5, 4)).astype(dt)  # tall, random: equal to cpu's to rounding
    P, L, U = LA.lu(T(w), pivot=False)  # noqa: N806
    assert P.shape == (0,)
    cL, cU = LA.lu(T(w, "cpu"), pivot=False)[1:]  # noqa: N806
    close(L, cL.numpy(), dt)
    close(U, cU.numpy(), dt)
    close(tk.matmul(L, U), w, dt)

