"""The batched cpu factorizations (backends/numpy/_lu_batched.py, linalg_direct.py) against LAPACK called per
matrix (SciPy): LU factors, pivots and info identical to getrf on random, singular (exact zero pivots),
ill-conditioned, batched, non-contiguous and empty inputs, float32/float64/complex; the one-call solve/inv/det/
slogdet and the batched Cholesky with PyTorch's errors naming the failing batch element; ``pivot=False`` on cpu
and interpreted cuda (the one-tile and the blocked kernels)."""

import numpy as np
import pytest
import scipy.linalg as sl

import tkernels as tk

LA = tk.linalg
rng = np.random.default_rng(1803)
TOL = {np.float32: 1e-4, np.complex64: 1e-4, np.float64: 1e-11, np.complex128: 1e-11}


def T(a, dev="cpu"):  # noqa: N802
    return tk.asarray(np.ascontiguousarray(a), device=dev)


def rand(shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def getrf_ref(a):
    """LAPACK's getrf per matrix: (LU, 1-based pivots, info)."""
    flat = a.reshape(-1, *a.shape[-2:])
    k = min(a.shape[-2:])
    getrf = sl.lapack.get_lapack_funcs("getrf", (flat,))
    res = [getrf(m) for m in flat]
    lu = np.array([r[0] for r in res]).reshape(a.shape)
    piv = np.array([r[1][:k] + 1 for r in res], np.int32).reshape(a.shape[:-2] + (k,))
    info = np.array([r[2] for r in res], np.int32).reshape(a.shape[:-2])
    return lu, piv, info


def check_getrf(x, a, dtype, scale=1.0):
    lu, piv, info = LA.lu_factor_ex(x)
    rl, rp, ri = getrf_ref(a)
    np.testing.assert_array_equal(piv.numpy(), rp)
    np.testing.assert_array_equal(info.numpy(), ri)
    np.testing.assert_allclose(lu.numpy(), rl, rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


# batches of small matrices take the batch-vectorised LU; a single one or larger ones LAPACK per matrix
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(41, 5, 5), (3, 2, 16, 16), (6, 3, 7), (6, 7, 3), (1, 9, 9), (2, 20, 20),
                                   (5, 1, 1)])
def test_lu_factor_matches_getrf(dtype, shape):
    a = rand(shape, dtype)
    check_getrf(T(a), a, dtype)
    check_getrf(T(np.swapaxes(a, -1, -2)).mT, a, dtype)  # a transposed (non-contiguous) view


def test_lu_factor_singular_ill_conditioned_empty():
    sing = np.stack([np.eye(4), np.zeros((4, 4)), np.diag([1.0, 0, 2, 0]),
                     np.array([[1.0, 2, 3, 4], [2, 4, 6, 8], [1, 0, 1, 0], [0, 1, 1, 1]]),
                     np.outer(np.arange(1.0, 5), np.arange(1.0, 5)), np.triu(np.ones((4, 4)), 1)])
    for dtype in (np.float64, np.float32):
        s = sing.astype(dtype)
        check_getrf(T(s), s, dtype)
        assert LA.lu_factor_ex(T(s)).info.numpy().tolist() == [0, 1, 2, 3, 2, 1]
    hilb = np.stack([sl.hilbert(n) for n in (8, 8, 8)]) * np.array([1.0, -1, 1e-3])[:, None, None]
    check_getrf(T(hilb), hilb, np.float64, 1e5)  # cond ~ 1e10: the same pivots, factors to ~cond * eps
    for shape in ((0, 4, 4), (3, 0, 0), (2, 0, 3)):
        lu, piv, info = LA.lu_factor_ex(T(np.zeros(shape)))
        assert lu.shape == shape and piv.shape == shape[:-1] and info.shape == shape[:-2]


# batches of small systems are solved vectorised, a single one or larger ones by getrs per matrix
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(33, 6, 6), (6, 6), (3, 40, 40)])
def test_lu_solve_batched_pivots(dtype, shape):
    a = rand(shape, dtype)
    b = rand(shape[:-1] + (3,), dtype)
    lu, piv = LA.lu_factor(T(a))
    tol = dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(LA.lu_solve(lu, piv, T(b)).numpy(), np.linalg.solve(a, b), **tol)
    ah = np.conj(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(LA.lu_solve(lu, piv, T(b), adjoint=True).numpy(), np.linalg.solve(ah, b), **tol)
    bt = np.swapaxes(b, -1, -2)  # X A = B
    np.testing.assert_allclose(LA.lu_solve(lu, piv, T(bt), left=False).numpy(),
                               np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2), **tol)
    P, L, U = LA.lu(T(a))  # noqa: N806 - P from the composed swaps
    np.testing.assert_allclose((P.numpy() @ L.numpy() @ U.numpy()), a, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_direct_solve_inv_det_slogdet(dtype):
    a = rand((37, 5, 5), dtype) + 2 * np.eye(5, dtype=dtype)
    b = rand((37, 5, 2), dtype)
    tol = dict(rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    np.testing.assert_allclose(LA.solve(T(a), T(b)).numpy(), np.linalg.solve(a, b), **tol)
    np.testing.assert_allclose(LA.solve(T(a), T(b[0, :, 0])).numpy(), np.linalg.solve(a, b[:1, :, :1])[..., 0],
                               **tol)  # a 1-D vector, broadcast
    bt = np.swapaxes(b, -1, -2)
    np.testing.assert_allclose(LA.solve(T(a), T(bt), left=False).numpy(),
                               np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2), **tol)
    np.testing.assert_allclose(LA.inv(T(np.swapaxes(a, -1, -2)).mT).numpy(), np.linalg.inv(a), **tol)
    np.testing.assert_allclose(LA.det(T(a)).numpy(), np.linalg.det(a), **tol)
    s, ld = LA.slogdet(T(a))
    rs, rld = np.linalg.slogdet(a)
    np.testing.assert_allclose(s.numpy(), rs, **tol)
    np.testing.assert_allclose(ld.numpy(), rld, **tol)
    assert LA.det(T(a).astype(tk.float16) if dtype == np.float32 else T(a)).shape == (37,)


def test_direct_singular_batch_element():
    a = rand((40, 4, 4), np.float64) + 3 * np.eye(4)
    a[17] = np.outer([1.0, 2, 3, 4], [1.0, 0, 1, 0])  # rank 1: U[2,2] is the first zero
    a[30, :, 0] = 0  # U[1,1]
    inv, info = LA.inv_ex(T(a))
    ref = getrf_ref(a)[2]
    np.testing.assert_array_equal(info.numpy(), ref)
    assert ref[17] == 2 and ref[30] == 1
    good = np.flatnonzero(ref == 0)
    np.testing.assert_allclose(inv.numpy()[good], np.linalg.inv(a[good]), rtol=1e-10, atol=1e-10)
    assert not np.isfinite(inv.numpy()[17]).all()
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: \(Batch element 17\): The diagonal element 2 is zero"):
        LA.inv(T(a))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.solve: \(Batch element 17\): The solver failed"):
        LA.solve(T(a), T(np.ones((4, 1))))
    d = LA.det(T(a)).numpy()
    assert d[17] == 0 and d[30] == 0
    np.testing.assert_allclose(d[good], np.linalg.det(a[good]), rtol=1e-10)
    s, ld = LA.slogdet(T(a))
    assert s.numpy()[17] == 0 and ld.numpy()[30] == -np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_cholesky_batched_info(dtype):
    x = rand((30, 6, 6), dtype)
    spd = (x @ np.conj(np.swapaxes(x, -1, -2)) + 6 * np.eye(6)).astype(dtype)
    spd[7, 3, 3] = -50  # the leading minor of order 4
    spd[21, 0, 0] = 0  # order 1
    junk = spd + np.triu(rand((30, 6, 6), dtype), 1)  # the upper triangle is never read
    L, info = LA.cholesky_ex(T(junk))  # noqa: N806
    codes = np.array([sl.lapack.get_lapack_funcs("potrf", (m,))(m, lower=True)[1] for m in spd])
    np.testing.assert_array_equal(info.numpy(), codes)
    assert codes[7] == 4 and codes[21] == 1 and codes.sum() == 5
    good = codes == 0
    np.testing.assert_allclose(L.numpy()[good], np.linalg.cholesky(spd[good]), rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10)
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 7\): .*minor of order 4 is not positive-definite"):
        LA.cholesky(T(junk))


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("shape", [(3, 5, 5), (2, 4, 7), (2, 7, 4), (40, 3, 3), (2, 20, 20), (70, 66)])
def test_lu_no_pivot(dev, shape):
    m, n = shape[-2:]
    k = min(m, n)
    a = rng.standard_normal(shape) + 4 * np.eye(m, n)  # nonsingular leading minors
    lu, piv, info = LA.lu_factor_ex(T(a, dev), pivot=False)
    lu = lu.numpy()
    L = np.tril(lu[..., :, :k], -1) + np.eye(m, k)  # noqa: N806
    U = np.triu(lu[..., :k, :])  # noqa: N806
    np.testing.assert_allclose(L @ U, a, atol=1e-12 * max(m, n))
    np.testing.assert_array_equal(piv.numpy(), np.broadcast_to(np.arange(1, k + 1), shape[:-2] + (k,)))
    assert piv.dtype == tk.int32 and not info.numpy().any()
    if m == n and m <= 5:  # Doolittle by hand
        ref = a[0].copy()
        for j in range(n - 1):
            ref[j + 1:, j] /= ref[j, j]
            ref[j + 1:, j + 1:] -= np.outer(ref[j + 1:, j], ref[j, j + 1:])
        np.testing.assert_allclose(lu[0], ref, atol=1e-13)
    P, L2, U2 = LA.lu(T(a, dev), pivot=False)  # noqa: N806
    assert P.shape == (0,)  # PyTorch's: an empty P
    np.testing.assert_allclose(L2.numpy(), L, atol=1e-13)
    np.testing.assert_allclose(U2.numpy(), U, atol=1e-13)
    if dev == "cuda":  # the same factors as cpu
        np.testing.assert_allclose(lu, LA.lu_factor(T(a), pivot=False).LU.numpy(), atol=1e-12)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_lu_no_pivot_zero_pivot(dev):
    a = np.stack([np.array([[0.0, 1, 2], [1, 1, 1], [2, 0, 1]]), np.eye(3), np.array([[1.0, 2, 0], [2, 4, 1],
                                                                                    [0, 1, 1]])])
    lu, piv, info = LA.lu_factor_ex(T(a, dev), pivot=False)
    assert info.numpy().tolist() == [1, 0, 2]  # the first zero pivot, 1-based
    r = lu.numpy()
    assert np.isinf(r[0, 1, 0]) and np.isnan(r[0]).any()  # divided by the zero pivot: PyTorch's inf/NaN
    np.testing.assert_array_equal(r, LA.lu_factor_ex(T(a), pivot=False).LU.numpy())  # cpu's, NaNs in place
    assert np.isfinite(r[2][:, :1]).all() and np.isfinite(r[2][:2]).all()  # inf/NaN only from the zero pivot on
    np.testing.assert_array_equal(r[1], np.eye(3))
    np.testing.assert_array_equal(LA.lu_factor_ex(T(a, dev)).info.numpy(), [0, 0, 0])  # pivoting: nonsingular
    with pytest.raises(LA.LinAlgError, match=r"linalg.lu_factor: \(Batch element 0\): U\[1,1\] is zero"):
        LA.lu_factor(T(a, dev), pivot=False)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_solve_triangular_batched(dtype):
    a = rand((20, 7, 7), dtype) + 4 * np.eye(7, dtype=dtype)
    b = rand((1, 7, 3), dtype)  # broadcast over the batch
    for upper in (False, True):
        for unit in (False, True):
            tri = np.triu(a) if upper else np.tril(a)  # (np.linalg.solve of the triangle: SciPy's per-matrix
            if unit:  # solve_triangular costs ~20 ms a call on an oversubscribed VM, see _lu_batched.SMALL_TRSM)
                tri[..., range(7), range(7)] = 1
            ref = np.linalg.solve(tri, b)
            x = LA.solve_triangular(T(a), T(b), upper=upper, unitriangular=unit)
            np.testing.assert_allclose(x.numpy(), ref, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
            xr = LA.solve_triangular(T(a), T(np.swapaxes(b, -1, -2)), upper=upper, left=False, unitriangular=unit)
            refr = np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), b), -1, -2)
            np.testing.assert_allclose(xr.numpy(), refr, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    z = a.copy()
    z[3, 2, 2] = 0  # a zero diagonal: inf/NaN in that matrix only, as LAPACK's trtrs / the cuda kernel
    x = LA.solve_triangular(T(z), T(b), upper=False).numpy()
    assert not np.isfinite(x[3]).all() and np.isfinite(np.delete(x, 3, axis=0)).all()


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_lu_no_pivot_zero_pivot_blocked(dev):
    # A = L0 U0 with small integer factors and a unit diagonal in U0 but a 0 at 67: elimination is exact, so the
    # blocked path (70 > the 64 tile on cuda) must find L0, U0 and the zero pivot in the second panel
    n = 70
    L0 = np.tril(rng.integers(-1, 2, (2, n, n)), -1) + np.eye(n)  # noqa: N806
    U0 = np.triu(rng.integers(-1, 2, (2, n, n)), 1) + np.eye(n)  # noqa: N806
    U0[1, 66, 66] = 0
    a = L0 @ U0
    lu, piv, info = LA.lu_factor_ex(T(a, dev), pivot=False)
    assert info.numpy().tolist() == [0, 67]
    r = lu.numpy()
    np.testing.assert_array_equal(r[0], np.tril(L0[0], -1) + U0[0])
    np.testing.assert_array_equal(r[1][:, :66], (np.tril(L0[1], -1) + U0[1])[:, :66])
    np.testing.assert_array_equal(piv.numpy(), np.broadcast_to(np.arange(1, n + 1), (2, n)))


def test_batched_against_torch():
    torch = pytest.importorskip("torch")
    a = rand((30, 5, 5), np.float64)
    a[4] = np.outer(np.arange(1.0, 6), np.ones(5))  # singular: U[2,2] = 0
    lu, piv, info = LA.lu_factor_ex(T(a))
    tlu, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
    np.testing.assert_allclose(lu.numpy(), tlu.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(LA.inv_ex(T(a)).info.numpy(), torch.linalg.inv_ex(torch.tensor(a)).info.numpy())
    s = a @ np.swapaxes(a, -1, -2) + np.eye(5)
    s[9, 2, 2] = -1
    np.testing.assert_array_equal(LA.cholesky_ex(T(s)).info.numpy(),
                                  torch.linalg.cholesky_ex(torch.tensor(s)).info.numpy())
    ok = np.delete(np.arange(30), 4)
    b = rand((30, 5, 2), np.float64)
    np.testing.assert_allclose(LA.solve(T(a[ok]), T(b[ok])).numpy(),
                               torch.linalg.solve(torch.tensor(a[ok]), torch.tensor(b[ok])).numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="without pivoting"):  # what PyTorch's cpu does; ours computes it
        torch.linalg.lu_factor(torch.tensor(a), pivot=False)


def test_lu_no_pivot_complex():
    a = rand((4, 5, 5), np.complex128) + 4 * np.eye(5)
    lu, piv, info = LA.lu_factor_ex(T(a), pivot=False)  # cpu: computed
    L = np.tril(lu.numpy(), -1) + np.eye(5)  # noqa: N806
    np.testing.assert_allclose(L @ np.triu(lu.numpy()), a, atol=1e-12)
    np.testing.assert_array_equal(piv.numpy(), np.broadcast_to(np.arange(1, 6), (4, 5)))
    # (cuda: test_linalg_complex_cuda.py::test_lu_no_pivot)
