"""tkernels.linalg's factorizations and solves (cholesky, solve_triangular, the LU family, solve, inv, det,
slogdet) against NumPy/SciPy and PyTorch when importable, on cpu and interpreted cuda: random, ill-conditioned,
singular, batched, broadcast, non-contiguous and empty inputs, float32/float64 (and a half)."""

import numpy as np
import pytest
import scipy.linalg as sl

import tkernels as tk

LA = tk.linalg
DEVICES = ["cpu", "cuda"]
TOL = {np.float32: 2e-4, np.float64: 1e-10}
rng = np.random.default_rng(18)


def T(a, dev):  # noqa: N802
    return tk.asarray(np.ascontiguousarray(a), device=dev)


def spd(shape, dtype=np.float64):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(x, ref, dtype=np.float64, scale=1.0):
    np.testing.assert_allclose(np.asarray(x.numpy(), np.float64), ref, rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky(dev, dtype):
    a = spd((2, 5, 5), dtype)
    ref = np.linalg.cholesky(a.astype(np.float64))
    close(LA.cholesky(T(a, dev)), ref, dtype)
    close(LA.cholesky(T(a, dev), upper=True), np.swapaxes(ref, -1, -2), dtype)
    # only the lower triangle is read; a transposed (non-contiguous) view
    junk = a + np.triu(rng.standard_normal(a.shape), 1)
    close(LA.cholesky(T(np.swapaxes(junk, -1, -2), dev).mT), ref, dtype)
    L, info = LA.cholesky_ex(T(a, dev))
    assert info.dtype == tk.int32 and info.shape == (2,) and not info.numpy().any()


@pytest.mark.parametrize("dev", DEVICES)
def test_cholesky_errors_and_info(dev):
    bad = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0]), np.diag([1.0, 1.0, 0.0])])
    assert LA.cholesky_ex(T(bad, dev)).info.numpy().tolist() == [0, 2, 3]
    msg = ("linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order 2 is not positive-definite).")
    with pytest.raises(RuntimeError) as e:
        LA.cholesky(T(bad, dev))
    assert str(e.value) == msg and isinstance(e.value, LA.LinAlgError)
    with pytest.raises(RuntimeError, match=r"^linalg.cholesky: The .*order 2 is not"):
        LA.cholesky(T(bad[1], dev))
    with pytest.raises(LA.LinAlgError, match="cholesky_ex"):
        LA.cholesky_ex(T(bad, dev), check_errors=True)
    nan = np.eye(2)
    nan[0, 0] = np.nan
    assert LA.cholesky_ex(T(nan, dev)).info.numpy().tolist() == 1
    with pytest.raises(ValueError, match="square"):
        LA.cholesky(T(np.ones((2, 3)), dev))
    with pytest.raises(TypeError, match="floating"):
        LA.cholesky(T(np.eye(2, dtype=np.int32), dev))


@pytest.mark.parametrize("dev", DEVICES)
def test_empty(dev):
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        x = tk.zeros(shape, dtype=tk.float64, device=dev)
        assert LA.cholesky(x).shape == shape and LA.inv(x).shape == shape
        assert LA.det(x).shape == shape[:-2] and LA.lu_factor(x).pivots.shape == shape[:-1]
        assert LA.solve(x, x).shape == shape
    np.testing.assert_array_equal(LA.det(tk.zeros((2, 0, 0), dtype=tk.float64, device=dev)).numpy(), [1, 1])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_triangular(dev, dtype):
    a = spd((3, 5, 5), dtype)
    b = rng.standard_normal((1, 5, 3)).astype(dtype)  # broadcast batch
    for upper in (False, True):
        tri = np.triu(a) if upper else np.tril(a)
        for unit in (False, True):
            t = tri.copy()
            if unit:
                t[..., range(5), range(5)] = 1
            x = LA.solve_triangular(T(a, dev), T(b, dev), upper=upper, unitriangular=unit)
            close(x, np.linalg.solve(t, b), dtype)
            x = LA.solve_triangular(T(a, dev), T(np.swapaxes(b, -1, -2), dev), upper=upper, left=False,
                                    unitriangular=unit)
            close(x, np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), b), -1, -2), dtype)
    with pytest.raises(ValueError, match="Incompatible"):
        LA.solve_triangular(T(a, dev), T(b[..., :4, :], dev), upper=True)
    with pytest.raises(TypeError, match="same dtype"):
        LA.solve_triangular(T(a, dev), T(b.astype(np.float16), dev), upper=True)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lu_family(dev, dtype):
    a = rng.standard_normal((2, 6, 6)).astype(dtype)
    lu, piv = LA.lu_factor(T(a, dev))
    for i in range(2):
        rl, rp = sl.lu_factor(a[i].astype(np.float64))
        close(lu[i], rl, dtype, 10)
        np.testing.assert_array_equal(piv[i].numpy(), rp + 1)
    P, L, U = LA.lu(T(a, dev))  # noqa: N806
    close(tk.matmul(tk.matmul(P, L), U), a, dtype)
    for shape in ((4, 6), (6, 4)):  # rectangular
        r = rng.standard_normal(shape).astype(dtype)
        P, L, U = LA.lu(T(r, dev))  # noqa: N806
        assert L.shape == (shape[0], 4) and U.shape == (4, shape[1])
        close(tk.matmul(tk.matmul(P, L), U), r, dtype)
    b = rng.standard_normal((6, 3)).astype(dtype)
    for left in (True, False):
        for adjoint in (False, True):
            bb = b if left else b.T
            x = LA.lu_solve(lu, piv, T(bb, dev), left=left, adjoint=adjoint)
            aa = np.swapaxes(a, -1, -2) if adjoint else a
            ref = np.linalg.solve(aa, bb) if left else np.swapaxes(np.linalg.solve(np.swapaxes(aa, -1, -2),
                                                                                     bb.T), -1, -2)
            close(x, ref, dtype, 10)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_inv_det(dev, dtype):
    a = rng.standard_normal((3, 5, 5)).astype(dtype)
    b = rng.standard_normal((3, 5, 2)).astype(dtype)
    close(LA.solve(T(a, dev), T(b, dev)), np.linalg.solve(a, b), dtype, 10)
    v = rng.standard_normal(5).astype(dtype)  # array API: a 1-D x2 is a vector
    close(LA.solve(T(a, dev), T(v, dev)), np.linalg.solve(a, v[:, None])[..., 0], dtype, 10)
    close(LA.solve(T(a, dev), T(b.transpose(0, 2, 1), dev), left=False),
          np.linalg.solve(a.transpose(0, 2, 1), b).transpose(0, 2, 1), dtype, 10)
    close(LA.inv(T(a, dev)), np.linalg.inv(a), dtype, 10)
    close(LA.inv(T(a.transpose(0, 2, 1), dev).mT), np.linalg.inv(a), dtype, 10)  # non-contiguous
    close(LA.det(T(a, dev)), np.linalg.det(a), dtype, 10)
    s, ld = LA.slogdet(T(a, dev))
    rs, rld = np.linalg.slogdet(a)
    np.testing.assert_array_equal(s.numpy(), rs)
    close(ld, rld, dtype)
    h = LA.det(T(a, dev).astype(tk.float16))  # halves compute in float32
    assert h.dtype == tk.float16


@pytest.mark.parametrize("dev", DEVICES)
def test_singular_and_ill_conditioned(dev):
    sing = np.stack([np.eye(3), np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])])
    assert LA.inv_ex(T(sing, dev)).info.numpy().tolist() == [0, 3]
    assert LA.lu_factor_ex(T(sing, dev)).info.numpy().tolist() == [0, 3]
    with pytest.raises(LA.LinAlgError) as e:
        LA.inv(T(sing, dev))
    assert str(e.value) == ("linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion could not "
                            "be completed because the input matrix is singular.")
    with pytest.raises(LA.LinAlgError, match=r"^linalg.solve: The solver failed because the input matrix is "
                                             r"singular.$"):
        LA.solve(T(sing[1], dev), T(np.ones(3), dev))
    with pytest.raises(LA.LinAlgError, match=r"linalg.lu_factor: \(Batch element 1\): U\[3,3\] is zero"):
        LA.lu_factor(T(sing, dev))
    np.testing.assert_array_equal(LA.det(T(sing, dev)).numpy(), [1, 0])
    s, ld = LA.slogdet(T(sing, dev))
    assert s.numpy().tolist() == [1, 0] and ld.numpy().tolist() == [0, -np.inf]
    hilb = sl.hilbert(7)  # cond ~ 5e8: float64 still solves it to ~1e-7 relative
    x = LA.solve(T(hilb, dev), T(hilb @ np.ones(7), dev)).numpy()
    np.testing.assert_allclose(x, np.ones(7), rtol=1e-5)
    close(LA.det(T(hilb, dev)), np.linalg.det(hilb), np.float64, 1e-3)


def test_against_torch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((2, 4, 4))
    p = spd((2, 4, 4))
    close(LA.cholesky(T(p, "cpu")), torch.linalg.cholesky(torch.tensor(p)).numpy())
    lu, piv = torch.linalg.lu_factor(torch.tensor(a))
    mine = LA.lu_factor(T(a, "cpu"))
    close(mine.LU, lu.numpy())
    np.testing.assert_array_equal(mine.pivots.numpy(), piv.numpy())
    P, L, U = torch.linalg.lu(torch.tensor(a))  # noqa: N806
    for x, r in zip(LA.lu(T(a, "cpu")), (P, L, U)):
        close(x, r.numpy())
    b = rng.standard_normal((2, 4, 3))
    close(LA.lu_solve(mine.LU, mine.pivots, T(b, "cpu"), adjoint=True),
          torch.linalg.lu_solve(lu, piv, torch.tensor(b), adjoint=True).numpy())


@pytest.mark.parametrize("dev", DEVICES)
def test_matrix_power_multi_dot_cond(dev):
    a = rng.standard_normal((2, 4, 4)) + 3 * np.eye(4)
    for n in (0, 1, 3, -2):
        close(LA.matrix_power(T(a, dev), n), np.linalg.matrix_power(a, n), np.float64, 100)
    ms = [rng.standard_normal(3), rng.standard_normal((3, 5)), rng.standard_normal((5, 2)), rng.standard_normal(2)]
    close(LA.multi_dot([T(m, dev) for m in ms]), np.linalg.multi_dot(ms))
    ms[-1] = rng.standard_normal((2, 6))
    close(LA.multi_dot([T(m, dev) for m in ms]), np.linalg.multi_dot(ms))
    for p in (None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1):
        close(LA.cond(T(a, dev), p), np.linalg.cond(a, p), np.float64, 1e3)
    assert LA.cond(T(np.ones((2, 2)), dev), 1).numpy() == np.inf
    with pytest.raises(ValueError, match="multi_dot"):
        LA.multi_dot([T(ms[1], dev)])
    with pytest.raises(TypeError, match="matrix_power: n must be an int"):
        LA.matrix_power(T(a, dev), 1.5)


@pytest.mark.parametrize("dev", DEVICES)
def test_blocked_paths(dev, monkeypatch):
    """The blocked Cholesky and triangular solves (matmul trailing updates) with a block of 4 forced, on an 11 x 11
    batch: the same factors and solutions, the failing minor's order offset by its block."""
    import tkernels.factorizations as F  # noqa: N812
    import tkernels.solvers as S  # noqa: N812

    monkeypatch.setattr(F, "_max_block", lambda device: 4)
    monkeypatch.setattr(S, "_max_block", lambda device: 4)
    p = spd((2, 11, 11))
    close(LA.cholesky(T(p, dev)), np.linalg.cholesky(p))
    close(LA.cholesky(T(p, dev), upper=True), np.swapaxes(np.linalg.cholesky(p), -1, -2))
    bad = p.copy()
    bad[1, 6, 6] = -100
    assert LA.cholesky_ex(T(bad, dev)).info.numpy().tolist() == [0, 7]
    b = rng.standard_normal((2, 11, 3))
    for upper in (False, True):
        t = np.triu(p) if upper else np.tril(p)
        close(LA.solve_triangular(T(t, dev), T(b, dev), upper=upper), np.linalg.solve(t, b))
        x = LA.solve_triangular(T(t, dev), T(np.swapaxes(b, -1, -2), dev), upper=upper, left=False)
        close(x, np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), b), -1, -2))


@pytest.mark.parametrize("dev", DEVICES)
def test_blocked_lu(dev, monkeypatch):
    """The blocked LU (panel kernel, row swaps, trsm, matmul trailing update) with a block of 4 forced: the same
    LU and pivots as SciPy's getrf on square, tall and wide, batched, non-contiguous, ill-conditioned and singular
    matrices crossing the block boundary; lu, lu_solve (both sides, adjoint), solve, inv, det, slogdet on it."""
    import tkernels.factorizations as F  # noqa: N812
    import tkernels.solvers as S  # noqa: N812

    monkeypatch.setattr(F, "_max_block", lambda device: 4)
    monkeypatch.setattr(S, "_max_block", lambda device: 4)
    for shape in [(2, 11, 11), (13, 6), (6, 13)]:
        a = rng.standard_normal(shape)
        lu, piv = LA.lu_factor(T(a, dev))
        for i in np.ndindex(*shape[:-2]):
            rl, rp = sl.lu_factor(a[i])
            close(lu[i], rl)
            assert (piv.numpy()[i] - 1 == rp[:min(shape[-2:])]).all()
        P, L, U = LA.lu(T(a, dev))  # noqa: N806
        close(P @ L @ U, a)
    a = rng.standard_normal((2, 11, 11))
    at = T(np.swapaxes(a, -1, -2), dev).mT  # a transposed (non-contiguous) view
    b = rng.standard_normal((2, 11, 3))
    close(LA.solve(at, T(b, dev)), np.linalg.solve(a, b))
    lu, piv = LA.lu_factor(at)
    close(LA.lu_solve(lu, piv, T(b, dev), adjoint=True), np.linalg.solve(np.swapaxes(a, -1, -2), b))
    bt = np.swapaxes(b, -1, -2)
    close(LA.lu_solve(lu, piv, T(bt, dev), left=False), bt @ np.linalg.inv(a))
    close(LA.inv(at), np.linalg.inv(a))
    close(LA.det(at), np.linalg.det(a))
    close(LA.slogdet(at).logabsdet, np.linalg.slogdet(a)[1])
    u, _, vt = np.linalg.svd(rng.standard_normal((11, 11)))
    ill = (u * np.logspace(0, -9, 11)) @ vt  # condition number 1e9
    close(LA.solve(T(ill, dev), T(ill @ b[0], dev)), b[0], scale=1e7)
    sing = a.copy()
    sing[1, :, 6] = 0  # a zero column: U[7, 7] is exactly zero
    assert LA.lu_factor_ex(T(sing, dev)).info.numpy().tolist() == [0, 7]
    assert LA.det(T(sing, dev)).numpy()[1] == 0
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): U\[7,7\] is zero"):
        LA.lu_factor(T(sing, dev))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(T(sing, dev))
