"""tkernels.linalg qr / eigh / eigvalsh and the composed functions (pinv, matrix_rank, lstsq, cross, diagonal,
matrix_transpose, trace, vander, norm, householder_product) vs NumPy on cpu and interpreted cuda: random,
ill-conditioned, rank-deficient, batched, non-contiguous and empty inputs; the namespace."""

import numpy as np
import pytest

import tkernels as tk

rng = np.random.default_rng(11)
DEVICES = ["cpu", "cuda"]
TOL = {"float64": 1e-10, "float32": 2e-4, "float16": 2e-2}


def on(a, device, dtype="float64"):
    return tk.asarray(np.ascontiguousarray(a).astype(dtype), device=device)


def back(x):
    return x.to("cpu").astype(tk.float64).numpy()


def test_namespace_lists_exactly_the_api():
    names = {"cross", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "lstsq", "matmul",
             "matrix_norm", "matrix_rank", "matrix_transpose", "norm", "outer", "pinv", "qr", "svd", "svdvals",
             "tensordot", "trace", "vander", "vecdot", "vector_norm",
             "LinAlgError", "cholesky", "cholesky_ex", "solve_triangular", "det", "inv", "inv_ex", "lu", "lu_factor",
             "lu_factor_ex", "lu_solve", "slogdet", "solve", "cond", "matrix_power", "multi_dot"}
    assert set(tk.linalg.__all__) == names and set(dir(tk.linalg)) == names
    assert not hasattr(tk.linalg, "functools") and not hasattr(tk.linalg, "lookup")
    assert not hasattr(tk, "qr") and tk.matmul is tk.linalg.matmul


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_qr_modes_shapes_and_values(device, dtype):
    t = TOL[dtype]
    for shape in [(5, 3), (3, 5), (2, 4, 4)]:
        a = rng.standard_normal(shape)
        x = on(a, device, dtype)
        ref = np.asarray(back(x))
        for mode in ("reduced", "complete"):
            q, r = tk.linalg.qr(x, mode=mode)
            rq, rr = np.linalg.qr(ref, mode=mode)
            assert q.shape == rq.shape and r.shape == rr.shape and q.dtype == x.dtype
            np.testing.assert_allclose(back(q) @ back(r), ref, atol=t * 10)
            np.testing.assert_allclose(np.abs(back(r)), np.abs(rr), atol=t * 10)
            eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
            np.testing.assert_allclose(np.swapaxes(back(q), -1, -2) @ back(q), eye, atol=t * 10)
            assert np.all(np.tril(back(r), -1) == 0)
        q, r = tk.linalg.qr(x, mode="r")
        assert q.shape == (0,) and r.shape == np.linalg.qr(ref, mode="r").shape


@pytest.mark.parametrize("device", DEVICES)
def test_qr_rank_deficient_strided_and_empty(device):
    a = rng.standard_normal((7, 2)) @ rng.standard_normal((2, 4))  # rank 2
    a[:, 3] = 0
    x = on(a.T, device).mT  # a transposed (non-contiguous) view
    q, r = tk.linalg.qr(x)
    np.testing.assert_allclose(back(q) @ back(r), a, atol=1e-12)
    np.testing.assert_allclose(np.abs(back(r)), np.abs(np.linalg.qr(a)[1]), atol=1e-12)
    for big in (1e30, 1e-30):  # float32 sums of squares would overflow / underflow without the kernel's scaling
        q, r = tk.linalg.qr(on(a * big, device, "float32"))
        np.testing.assert_allclose(back(q) @ back(r) / big, a, atol=1e-5)
    q, r = tk.linalg.qr(on(np.zeros((2, 0, 3)), device), mode="complete")
    assert q.shape == (2, 0, 0) and r.shape == (2, 0, 3)
    q, r = tk.linalg.qr(on(np.zeros((3, 0)), device), mode="complete")
    np.testing.assert_array_equal(back(q), np.eye(3))
    with pytest.raises(ValueError, match="qr: mode"):
        tk.linalg.qr(x, mode="full")
    with pytest.raises(ValueError, match="qr: expected an array of at least 2"):
        tk.linalg.qr(on(np.ones(3), device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_eigh_and_eigvalsh(device, dtype):
    t = TOL[dtype]
    a = rng.standard_normal((3, 5, 5))
    s = a + np.swapaxes(a, -1, -2)
    s[1] = np.diag([1e6, 1.0, 1e-6, -3.0, 2.0])  # ill-conditioned and already diagonal
    s[2] = np.eye(5)  # a fivefold eigenvalue
    for uplo, src in (("L", np.tril(s)), ("U", np.triu(s))):  # only the named triangle is read
        x = on(src, device, dtype)
        w, v = tk.linalg.eigh(x, UPLO=uplo)
        rw = np.linalg.eigvalsh(s)
        scale = np.abs(rw).max(-1, keepdims=True)
        np.testing.assert_allclose(back(w) / scale, rw / scale, atol=t * 10)
        vv = back(v)
        np.testing.assert_allclose(np.swapaxes(vv, -1, -2) @ vv, np.broadcast_to(np.eye(5), vv.shape), atol=t * 10)
        np.testing.assert_allclose((vv * back(w)[..., None, :]) @ np.swapaxes(vv, -1, -2) / scale[..., None],
                                   s / scale[..., None], atol=t * 10)
        np.testing.assert_allclose(back(tk.linalg.eigvalsh(x, UPLO=uplo)) / scale, rw / scale, atol=t * 10)
    w, v = tk.linalg.eigh(on(np.zeros((2, 0, 0)), device))
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    with pytest.raises(ValueError, match="eigh: expected square"):
        tk.linalg.eigh(on(np.ones((2, 3)), device))
    with pytest.raises(ValueError, match="UPLO"):
        tk.linalg.eigvalsh(on(np.ones((2, 2)), device), UPLO="X")


@pytest.mark.parametrize("device", DEVICES)
def test_pinv_matrix_rank_lstsq(device):
    a = rng.standard_normal((2, 6, 4))
    a[1] = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))  # rank 2
    x = on(a, device)
    np.testing.assert_allclose(back(tk.linalg.pinv(x)), np.linalg.pinv(a), atol=1e-10)
    np.testing.assert_allclose(back(tk.linalg.pinv(x.mT)), np.linalg.pinv(np.swapaxes(a, 1, 2)), atol=1e-10)
    np.testing.assert_array_equal(back(tk.linalg.matrix_rank(x)), [4, 2])
    np.testing.assert_array_equal(back(tk.linalg.matrix_rank(x, atol=1e9)), [0, 0])
    h = a[0].T @ a[0]
    np.testing.assert_allclose(back(tk.linalg.pinv(on(h, device), hermitian=True)), np.linalg.pinv(h), atol=1e-10)
    assert int(back(tk.linalg.matrix_rank(on(h, device), hermitian=True))) == 4
    b = rng.standard_normal((2, 6, 3))
    r = tk.linalg.lstsq(x, on(b, device))
    for i in range(2):
        sol, res, rank, sv = np.linalg.lstsq(a[i], b[i], rcond=None)
        np.testing.assert_allclose(back(r.solution)[i], sol, atol=1e-10)
        assert int(back(r.rank)[i]) == rank
        np.testing.assert_allclose(back(r.singular_values)[i], sv, atol=1e-10)
    # one matrix is rank-deficient: empty on every device (PyTorch's rule)
    assert r.residuals.shape == (0,)
    r = tk.linalg.lstsq(x[:1], on(b[:1], device))
    np.testing.assert_allclose(back(r.residuals)[0], np.linalg.lstsq(a[0], b[0], rcond=None)[1], atol=1e-10)
    with pytest.raises(ValueError, match="lstsq: driver"):
        tk.linalg.lstsq(x, on(b, device), driver="gelsy")


@pytest.mark.parametrize("device", DEVICES)
def test_cross_diagonal_trace_transpose_vander_norm_householder(device):
    u, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 1))
    np.testing.assert_allclose(back(tk.linalg.cross(on(u, device), on(w, device), axis=-2)),
                               np.cross(u, np.broadcast_to(w, u.shape), axis=-2), atol=1e-12)
    with pytest.raises(ValueError, match="cross: axis"):
        tk.linalg.cross(on(u, device), on(u, device))
    m = rng.standard_normal((2, 4, 5))
    x = on(m, device)
    for k in (0, 2, -1, 9):
        np.testing.assert_allclose(back(tk.linalg.diagonal(x, offset=k)), np.diagonal(m, k, -2, -1))
        np.testing.assert_allclose(back(tk.linalg.trace(x, offset=k)), np.trace(m, k, axis1=-2, axis2=-1),
                                   atol=1e-12)
    assert tk.linalg.trace(tk.ones((3, 3), dtype=tk.int32, device=device)).dtype == tk.int64
    assert tk.linalg.matrix_transpose(x).shape == (2, 5, 4)
    v = rng.standard_normal(4)
    np.testing.assert_allclose(back(tk.linalg.vander(on(v, device))), np.vander(v, increasing=True), atol=1e-12)
    assert tk.linalg.vander(on(v, device), N=0).shape == (4, 0)
    for ordr, axis in ((None, None), (3, 1), ("fro", (0, 2)), (1, (2, 1)), ("nuc", (-2, -1)), (-np.inf, (0, 1))):
        np.testing.assert_allclose(back(tk.linalg.norm(x, ordr, axis)), np.linalg.norm(m, ordr, axis), atol=1e-10)
    np.testing.assert_allclose(back(tk.linalg.norm(x, 2, (1, 2), keepdims=True)),
                               np.linalg.norm(m, 2, (1, 2), keepdims=True), atol=1e-10)
    h, tau = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3))
    want = []
    for b in range(2):
        q = np.eye(5)
        for i in range(3):
            vi = np.tril(h[b], -1)[:, i] + np.eye(5, 3)[:, i]
            q = q @ (np.eye(5) - tau[b, i] * np.outer(vi, vi))
        want.append(q[:, :3])
    np.testing.assert_allclose(back(tk.linalg.householder_product(on(h, device), on(tau, device))), want,
                               atol=1e-12)


def test_against_torch_when_importable():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 6, 4))
    tq, tr = torch.linalg.qr(torch.from_numpy(a))
    q, r = tk.linalg.qr(on(a, "cpu"))
    np.testing.assert_allclose(back(q), tq.numpy(), atol=1e-12)
    np.testing.assert_allclose(back(r), tr.numpy(), atol=1e-12)
    h = torch.from_numpy(a[..., :3])
    tau = torch.from_numpy(rng.standard_normal((3, 2)))
    np.testing.assert_allclose(back(tk.linalg.householder_product(on(h.numpy(), "cpu"), on(tau.numpy(), "cpu"))),
                               torch.linalg.householder_product(h, tau).numpy(), atol=1e-12)
    np.testing.assert_allclose(back(tk.linalg.vander(on(a[0, 0], "cpu"), N=3)),
                               torch.linalg.vander(torch.from_numpy(a[0, 0]), N=3).numpy(), atol=1e-12)


def test_qr_kernel_walks_columns_in_several_row_blocks(monkeypatch):
    """BLOCK_R below the column length (as on a GPU past 64/512 rows): every walk spans several blocks."""
    from tkernels.backends.triton import linalg_qr

    monkeypatch.setattr(linalg_qr, "TILE", 4)
    linalg_qr._plan.cache_clear()
    try:
        a = rng.standard_normal((2, 9, 6))
        for mode in ("reduced", "complete"):
            q, r = tk.linalg.qr(on(a, "cuda"), mode=mode)
            rq, rr = np.linalg.qr(a, mode=mode)
            np.testing.assert_allclose(back(q), rq, atol=1e-12)
            np.testing.assert_allclose(back(r), rr, atol=1e-12)
        w = tk.linalg.eigvalsh(on(a[:, :6] + np.swapaxes(a[:, :6], 1, 2), "cuda", "float16"))
        assert w.dtype == tk.float16
        np.testing.assert_allclose(back(w), np.linalg.eigvalsh(back(on(a[:, :6] + np.swapaxes(a[:, :6], 1, 2),
                                                                        "cpu", "float16"))), atol=2e-2 * 8)
    finally:
        linalg_qr._plan.cache_clear()


def test_complex_decompositions_on_cpu():
    c = rng.standard_normal((2, 5, 3)) + 1j * rng.standard_normal((2, 5, 3))
    x = tk.asarray(c)
    u, s, vh = tk.linalg.svd(x, full_matrices=False)
    assert s.dtype == tk.float64 and u.dtype == tk.complex128
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), c, atol=1e-12)
    q, r = tk.linalg.qr(x)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), c, atol=1e-12)
    h = c[:, :3] + np.conj(np.swapaxes(c[:, :3], -1, -2))
    w, v = tk.linalg.eigh(tk.asarray(h))
    assert w.dtype == tk.float64 and v.dtype == tk.complex128
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(h), atol=1e-12)
    assert tk.linalg.eigvalsh(tk.asarray(h.astype(np.complex64))).dtype == tk.float32
    np.testing.assert_allclose(tk.linalg.pinv(x).numpy(), np.linalg.pinv(c), atol=1e-12)
    np.testing.assert_allclose(tk.linalg.pinv(tk.asarray(h), hermitian=True).numpy(),
                               np.linalg.pinv(h, hermitian=True), atol=1e-12)
    np.testing.assert_array_equal(tk.linalg.matrix_rank(x).numpy(), [3, 3])
    b = rng.standard_normal((2, 5, 2)) + 1j * rng.standard_normal((2, 5, 2))
    res = tk.linalg.lstsq(x, tk.asarray(b))
    sol, resid, _, _ = np.linalg.lstsq(c[1], b[1], rcond=None)
    np.testing.assert_allclose(res.solution.numpy()[1], sol, atol=1e-12)
    assert res.residuals.dtype == tk.float64
    np.testing.assert_allclose(res.residuals.numpy()[1], resid, atol=1e-12)
    q, r = tk.linalg.qr(x.to("cuda"))  # the cuda kernel (tests/tkernels/test_linalg_complex_decomp_cuda.py)
    np.testing.assert_allclose(r.to("cpu").numpy(), np.linalg.qr(c)[1], atol=1e-12)


def test_cuda_qr_of_a_negative_zero_pivot_column_has_lapacks_signs():
    """dgeqrf's beta = -sign(alpha) |.| takes the sign bit of a -0.0 alpha (a positive beta), as NumPy's R; the
    kernel's ``alpha >= 0`` gave R = -(NumPy's R) for ``[[-0.0, 1], [1, 2]]`` (a valid QR, not cpu's)."""
    for dt, tol in ((np.float32, 1e-6), (np.float64, 1e-14)):
        a = np.array([[[-0.0, 1.0], [1.0, 2.0]], [[0.0, 1.0], [1.0, 2.0]]], dt)
        q, r = (t.numpy() for t in tk.linalg.qr(tk.asarray(a, device="cuda")))
        qn, rn = np.linalg.qr(a)
        np.testing.assert_allclose(r, rn, rtol=tol, atol=tol)
        np.testing.assert_allclose(q, qn, rtol=tol, atol=tol)
