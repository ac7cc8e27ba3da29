"""Complex QR, SVD and Hermitian eigh on (interpreted) cuda: cqr_kernel / csvd_kernel (tkernels/kernels/
qr_complex.py, svd_complex.py) and what is composed of them (pinv, matrix_rank, lstsq, matrix_norm, cond, norm,
householder_product), against NumPy/LAPACK on cpu (and torch 2.13 when importable): random, rank-deficient,
degenerate eigenvalues, batched, non-contiguous, empty, complex64 and complex128."""

import numpy as np
import pytest

import tkernels as tk

L = tk.linalg
rng = np.random.default_rng(1818)


def _c(shape, dt=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def _tol(dt):
    return dict(rtol=1e-4, atol=3e-5) if dt == np.complex64 else dict(rtol=1e-10, atol=1e-12)


def _n(x):
    return x.to("cpu").numpy()


def _cu(a):
    return tk.asarray(a, device="cuda")


def _h(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _close(got, want, dt):
    got = _n(got) if isinstance(got, tk.Array) else got
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, **_tol(dt))


def _unitary(q, dt, cols=True):
    g = _h(q) @ q if cols else q @ _h(q)
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(g.shape[-1]), g.shape), **_tol(dt))


def test_qr_equals_lapack_factors(dt=np.complex128):
    """Q and R elementwise equal to zgeqrf/zungqr's (NumPy): the same reflectors, R's diagonal real."""
    base = _c((2, 6, 5), dt)
    cases = [_c((5, 3), dt), _c((3, 5), dt), base, base[:, ::2, 1:], np.swapaxes(base, -1, -2)]
    for i, a in enumerate(cases):
        x = _cu(a) if i < 3 else (_cu(base)[:, ::2, 1:] if i == 3 else _cu(base).mT)  # views on the device
        for mode in ("reduced", "complete"):
            q, r = L.qr(x, mode=mode)
            qn, rn = np.linalg.qr(a, mode=mode)
            _close(q, qn, dt)
            _close(r, rn, dt)
            np.testing.assert_array_equal(_n(r), np.triu(_n(r)))
            assert np.all(np.diagonal(_n(r), axis1=-2, axis2=-1).imag == 0)
        q, r = L.qr(x, mode="r")
        assert q.shape == (0,) and q.dtype == (tk.complex64 if dt == np.complex64 else tk.complex128)
        _close(r, np.linalg.qr(a, mode="r"), dt)


def test_qr_rank_deficient_and_empty():
    a = _c((5, 4))
    a[:, 2] = a[:, 0] * (2 - 1j)  # rank 3
    a[:, 3] = 0
    q, r = L.qr(_cu(a))
    np.testing.assert_allclose(_n(q) @ _n(r), a, atol=1e-12)
    _unitary(_n(q), np.complex128)
    q, r = L.qr(_cu(a).broadcast_to((2, 5, 4)))  # a batch of stride 0
    np.testing.assert_allclose(_n(q) @ _n(r), np.broadcast_to(a, (2, 5, 4)), atol=1e-12)
    for shape, mode in (((0, 3), "reduced"), ((3, 0), "complete"), ((2, 0, 3, 3), "reduced")):
        q, r = L.qr(_cu(np.zeros(shape, np.complex64)), mode=mode)
        qn, rn = np.linalg.qr(np.zeros(shape, np.complex64), mode=mode)
        assert q.shape == qn.shape and r.shape == rn.shape and q.dtype == tk.complex64
        np.testing.assert_array_equal(_n(q), qn)


def test_svd_and_svdvals(dt=np.complex128):
    base = _c((2, 5, 4), dt)
    defic = _c((4, 4), dt)
    defic[:, 3] = defic[:, 0] * (1 - 2j) + defic[:, 1]  # rank 3
    cases = [(_c((5, 3), dt), None), (base, None), (defic, None),
             (np.swapaxes(base, -1, -2)[:, ::2], lambda: _cu(base).mT[:, ::2])]
    for a, view in cases:
        x = view() if view else _cu(a)
        sn = np.linalg.svd(a, compute_uv=False)
        _close(L.svdvals(x), sn, dt)
        for full in (True, False):
            u, s, vh = (_n(t) for t in L.svd(x, full_matrices=full))
            k = s.shape[-1]
            _close(s, sn, dt)
            np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, **_tol(dt))
            assert u.shape == a.shape[:-1] + ((a.shape[-2],) if full else (k,))
            _unitary(u, dt)  # also where a singular value is 0 (the kernel's orthonormal completion)
            _unitary(vh, dt, cols=False)


def test_svd_empty():
    for shape in ((0, 3), (3, 0), (0, 2, 2)):
        z = np.zeros(shape, np.complex128)
        u, s, vh = L.svd(_cu(z))
        un, sn, vhn = np.linalg.svd(z)
        assert (u.shape, s.shape, vh.shape) == (un.shape, sn.shape, vhn.shape) and s.dtype == tk.float64
        np.testing.assert_array_equal(_n(u), un)
        assert L.svdvals(_cu(z)).shape == sn.shape


def test_eigh_and_eigvalsh(dt=np.complex128):
    a = _c((2, 5, 5), dt)
    garbage = (a + 7j * np.tril(np.ones((5, 5)), -1) - 3j * np.eye(5)).astype(dt)  # lower part, diagonal imag: unread
    for uplo, src in (("L", a), ("U", garbage)):
        t = np.tril(src, -1) if uplo == "L" else np.triu(src, 1)
        h = (t + _h(t) + np.eye(5) * np.diagonal(src, axis1=-2, axis2=-1).real[..., None, :]).astype(dt)  # read
        x = _cu(src)
        wn = np.linalg.eigvalsh(h)
        _close(L.eigvalsh(x, UPLO=uplo), wn, dt)
        w, v = (_n(t) for t in L.eigh(x, UPLO=uplo))
        _close(w, wn, dt)
        np.testing.assert_allclose(h @ v, v * w[..., None, :], **_tol(dt))
        _unitary(v, dt)
    # degenerate eigenvalues (a triple and a double one), and a transposed view
    q = np.linalg.qr(_c((5, 5)))[0]
    h = ((q * np.array([1, 1, 1, -2, -2.0])[None]) @ _h(q)).astype(dt)
    w, v = (_n(t) for t in L.eigh(_cu(h).mT, UPLO="U"))
    ht = np.swapaxes(h, -1, -2)
    _close(w, np.array([-2, -2, 1, 1, 1.0], dtype=w.dtype), dt)
    np.testing.assert_allclose(ht @ v, v * w[None, :], **_tol(dt))
    _unitary(v, dt)


def test_eigh_empty():
    w, v = L.eigh(_cu(np.zeros((0, 0), np.complex64)))
    assert w.shape == (0,) and v.shape == (0, 0) and w.dtype == tk.float32 and v.dtype == tk.complex64
    assert L.eigvalsh(_cu(np.zeros((2, 0, 3, 3), np.complex128))).shape == (2, 0, 3)


def test_matches_torch_when_importable():
    torch = pytest.importorskip("torch")
    b = _c((2, 4, 3))
    qt, rt = torch.linalg.qr(torch.tensor(b))
    q, r = L.qr(_cu(b))
    np.testing.assert_allclose(_n(q), qt.numpy(), atol=1e-12)
    np.testing.assert_allclose(_n(r), rt.numpy(), atol=1e-12)
    np.testing.assert_allclose(_n(L.svdvals(_cu(b))), torch.linalg.svdvals(torch.tensor(b)).numpy(), atol=1e-12)
    h = b[:, :3] + _h(b[:, :3])
    np.testing.assert_allclose(_n(L.eigvalsh(_cu(h))), torch.linalg.eigvalsh(torch.tensor(h)).numpy(), atol=1e-12)
    hp = L.householder_product(_cu(b), _cu(b[:, 0, :2]))
    np.testing.assert_allclose(_n(hp), torch.linalg.householder_product(torch.tensor(b), torch.tensor(b[:, 0, :2])),
                               atol=1e-12)


def test_composed_functions_equal_cpu(dt=np.complex128):
    a = _c((2, 5, 3), dt)
    b = _c((2, 5, 2), dt)
    sq = _c((2, 3, 3), dt)
    h = sq + _h(sq)
    defic = a.copy()
    defic[..., 2] = defic[..., 0] - 1j * defic[..., 1]  # rank 2
    for fn in (lambda x, y, s, hh, d: L.pinv(x), lambda x, y, s, hh, d: L.pinv(hh, hermitian=True),
               lambda x, y, s, hh, d: L.lstsq(x, y).solution,
               lambda x, y, s, hh, d: tk.concat([L.lstsq(x, y).residuals.reshape(-1),
                                                 tk.real(L.lstsq(d, y).solution).reshape(-1)]),
               lambda x, y, s, hh, d: L.cond(s, -2),
               lambda x, y, s, hh, d: L.norm(x.mT, ord="nuc", axis=(-2, -1)),
               lambda x, y, s, hh, d: L.matrix_norm(x, ord=-2), lambda x, y, s, hh, d: L.matrix_norm(x, ord=np.inf)):
        args = (a, b, sq, h, defic)
        _close(fn(*(_cu(t) for t in args)), _n(fn(*(tk.asarray(t) for t in args))), dt)
    for x, hermitian, want in ((a, False, [3, 3]), (defic, False, [2, 2]), (h, True, [3, 3])):
        np.testing.assert_array_equal(_n(L.matrix_rank(_cu(x), hermitian=hermitian)), want)
    assert int(_n(L.lstsq(_cu(defic), _cu(b)).rank)[0]) == 2


def test_kernels_walk_columns_in_several_row_blocks(monkeypatch):
    """BLOCK_R below the column length (as on a GPU past 64/512 rows): every walk spans several blocks."""
    from tkernels.backends.triton import linalg_qr, linalg_svd

    for mod in (linalg_qr, linalg_svd):
        monkeypatch.setattr(mod, "TILE", 4)
        mod._plan.cache_clear()
    try:
        a = _c((6, 5))
        q, r = L.qr(_cu(a), mode="complete")
        qn, rn = np.linalg.qr(a, mode="complete")
        _close(q, qn, np.complex128)
        _close(r, rn, np.complex128)
        u, s, vh = (_n(t) for t in L.svd(_cu(a).mT, full_matrices=False))  # (eigh runs the same kernel)
        _close(s, np.linalg.svd(a, compute_uv=False), np.complex128)
        np.testing.assert_allclose((u * s[None, :]) @ vh, a.T, atol=1e-12)
        _unitary(u, np.complex128)
        _unitary(vh, np.complex128, cols=False)
    finally:
        linalg_qr._plan.cache_clear()
        linalg_svd._plan.cache_clear()


def test_complex64():
    """Single precision: one batched case of each kernel path (both dtypes of every kernel are in the AOT table)."""
    dt = np.complex64
    a = _c((2, 5, 3), dt)
    q, r = L.qr(_cu(a).mT, mode="complete")
    qn, rn = np.linalg.qr(np.swapaxes(a, -1, -2), mode="complete")
    _close(q, qn, dt)
    _close(r, rn, dt)
    u, s, vh = (_n(t) for t in L.svd(_cu(a)))
    _close(s, np.linalg.svd(a, compute_uv=False), dt)
    np.testing.assert_allclose((u[..., :3] * s[..., None, :]) @ vh, a, **_tol(dt))
    _unitary(u, dt)
    _unitary(vh, dt)
    h = a[:, :3] + _h(a[:, :3])
    w, v = (_n(t) for t in L.eigh(_cu(h), UPLO="U"))
    _close(w, np.linalg.eigvalsh(h), dt)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], **_tol(dt))
    _close(L.pinv(_cu(a)), np.linalg.pinv(a), dt)


def test_householder_product_is_h_i_with_conjugate_reflectors():
    """H_i = I - tau_i v_i v_i^H (PyTorch's): on cpu and cuda equal to zungqr's Q from geqrf's reflectors."""
    from scipy.linalg import lapack

    a = _c((5, 3))
    qr, tau, _, _ = lapack.zgeqrf(a)
    want = np.linalg.qr(a)[0]
    for dev in ("cpu", "cuda"):
        got = L.householder_product(tk.asarray(qr, device=dev), tk.asarray(tau, device=dev))
        np.testing.assert_allclose(_n(got), want, atol=1e-12)
    qr64 = _c((2, 4, 3), np.complex64)
    tau64 = _c((2, 2), np.complex64)
    _close(L.householder_product(_cu(qr64), _cu(tau64)), _n(L.householder_product(tk.asarray(qr64),
                                                                                   tk.asarray(tau64))),
           np.complex64)


# ------------------------------------------------------------------------------------ real GPU sweeps
@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_gpu_sizes(dt):
    """cqr_kernel and csvd_kernel with both GPU row blocks (64 and 512) and many programs; eigh through them."""
    tol = dict(rtol=1e-3, atol=1e-3) if dt == np.complex64 else dict(rtol=1e-9, atol=1e-9)
    for a in (_c((300, 7, 5), dt), _c((3, 150, 40), dt), _c((2, 30, 100), dt)):
        q, r = (_n(t) for t in L.qr(_cu(a)))
        np.testing.assert_allclose(q @ r, a, **tol)
        if dt == np.complex128:
            _unitary(q, dt)
        u, s, vh = (_n(t) for t in L.svd(_cu(a), full_matrices=False))
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **tol)
        np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, **tol)
    a = _c((2, 96, 96), dt)
    h = a + _h(a)
    w, v = (_n(t) for t in L.eigh(_cu(h)))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), **tol)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], rtol=tol["rtol"], atol=tol["atol"] * 100)
