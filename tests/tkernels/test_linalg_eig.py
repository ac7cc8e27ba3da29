"""tkernels.linalg.eig / eigvals vs NumPy (LAPACK's geev) on cpu and interpreted cuda (the Triton QR-algorithm
kernel): random, symmetric, defective (Jordan blocks), permutation, complex, batched, non-contiguous, empty and 1x1
inputs in float32/float64 (and halves, complex64/128). Eigenvalues are compared order-independently (an optimal
matching), eigenvectors up to the phase of each (``|v^H v_ref| = 1``), plus the residual ``A V - V diag(w)``."""

import numpy as np
import pytest

import tkernels as tk


def linear_sum_assignment(cost):
    """SciPy's optimal assignment (rows, cols) where SciPy is installed; else (the GPU machine, where the check
    collects these gpu tests without the dev extras) a greedy one: the globally closest pair first, which is the
    optimal one for eigenvalues closer to their references than to each other."""
    try:
        from scipy.optimize import linear_sum_assignment as lsa
    except ImportError:
        c = np.array(cost, dtype=np.float64)
        cols = np.empty(c.shape[0], np.intp)
        for _ in range(c.shape[0]):
            r, k = np.unravel_index(np.argmin(c), c.shape)
            cols[r] = k
            c[r, :] = np.inf
            c[:, k] = np.inf
        return np.arange(c.shape[0]), cols
    return lsa(cost)


rng = np.random.default_rng(18)
DEVICES = ["cpu", "cuda"]
EPS = {"float32": 2e-6, "float64": 1e-14}
CDT = {"float32": tk.complex64, "float64": tk.complex128}


def _match(w, ref):
    """``w`` reordered to ``ref``'s order (per matrix): the matching of least total distance."""
    w, ref = np.atleast_2d(w), np.atleast_2d(ref)
    out = np.empty_like(ref, dtype=np.complex128)
    for b in range(ref.shape[0]):
        r, c = linear_sum_assignment(np.abs(ref[b][:, None] - w[b][None, :]))
        out[b, r] = w[b, c]
    return out, [linear_sum_assignment(np.abs(ref[b][:, None] - w[b][None, :]))[1] for b in range(ref.shape[0])]


def _check(a, device, dt, tol_w=None, vectors=True, values=True):
    """eig (``vectors``) and eigvals (``values``) of ``a`` (..., n, n) on ``device`` in ``dt`` against
    np.linalg.eig in float64/complex128."""
    x = tk.asarray(a.astype(dt if np.isrealobj(a) else {"float32": np.complex64, "float64": np.complex128}[dt]),
                   device=device)
    n = a.shape[-1]
    ref = np.linalg.eigvals(a.astype(np.complex128)).reshape(-1, n)
    eps = EPS[dt]
    scale = max(np.abs(a).max(), 1e-300)
    tol_w = tol_w or 50 * n * eps * scale
    if values:
        w = tk.linalg.eigvals(x)
        assert w.dtype == CDT[dt] and w.shape == a.shape[:-1] and w.device == x.device
        got, _ = _match(w.numpy().reshape(-1, n), ref)
        np.testing.assert_allclose(got, ref, atol=tol_w, rtol=0)
    if not vectors:
        return
    w, v = tk.linalg.eig(x)
    assert w.dtype == v.dtype == CDT[dt] and v.shape == a.shape
    W, V = w.numpy().astype(np.complex128), v.numpy().astype(np.complex128)  # noqa: N806
    got, _ = _match(W.reshape(-1, n), ref)
    np.testing.assert_allclose(got, ref, atol=tol_w, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, atol=20 * eps)
    np.testing.assert_allclose(a @ V, V * W[..., None, :], atol=50 * n * eps * scale)  # backward stable
    return W, V


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_random_batched_matches_numpy_eigenvectors_up_to_phase(device, dt):
    n = 5 if dt == "float64" else 4
    a = rng.standard_normal((2, 2, n, n))
    W, V = _check(a, device, dt, values=dt == "float32")  # noqa: N806
    rw, rv = np.linalg.eig(a.reshape(-1, n, n))
    real = np.sort((W.imag == 0).sum(-1).ravel())
    assert real.tolist() == np.sort((rw.imag == 0).sum(-1)).tolist()  # as many exactly real eigenvalues
    assert not (V.imag * (W.imag == 0)[..., None, :]).any()  # and their vectors real
    for wb, vb in zip(W.reshape(-1, n), V.reshape(-1, n, n)):  # the others in exact conjugate pairs
        for k in np.flatnonzero(wb.imag):
            j = np.flatnonzero(wb == wb[k].conj())
            assert j.size and (vb[:, j[0]] == vb[:, k].conj()).all()
    for b, (wb, vb) in enumerate(zip(W.reshape(-1, n), V.reshape(-1, n, n))):
        c = linear_sum_assignment(np.abs(rw[b][:, None] - wb[None, :]))[1]
        overlap = np.abs(np.einsum("ij,ij->j", rv[b].conj(), vb[:, c]))  # |v_ref^H v| = 1: the same line
        np.testing.assert_allclose(overlap, 1.0, atol=1e3 * EPS[dt])


@pytest.mark.parametrize("device", DEVICES)
def test_sizes_1_to_7_and_complex_input(device):
    for n in (1, 2, 3, 7):
        _check(rng.standard_normal((n, n)), device, "float64", values=n < 7)
    c = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    for dt in ("float64", "float32"):
        _check(c, device, dt)


@pytest.mark.parametrize("device", DEVICES)
def test_symmetric_defective_and_structured_inputs(device):
    s = rng.standard_normal((5, 5))
    W, V = _check(s + s.T, device, "float64", values=False)  # noqa: N806
    assert not W.imag.any() and not V.imag.any()  # real eigenpairs are real, exactly, as LAPACK's
    np.testing.assert_allclose(np.abs(V.conj().T @ V), np.eye(5), atol=1e-12)  # distinct: orthonormal
    n = 4
    jordan = 2.0 * np.eye(n) + np.diag(np.ones(n - 1), 1)
    for a in (jordan, jordan.T.copy(), np.diag(np.ones(n - 1), -1)):  # defective: eigenvalues to ~eps^(1/n)
        _check(a, device, "float64", tol_w=1e-3)
        _check(a, device, "float32", tol_w=1e-1, values=False)
    perm = np.roll(np.eye(5), 1, axis=0)  # unit-modulus eigenvalues: the exceptional shifts' case
    _check(perm, device, "float64", values=False)
    for a in (np.zeros((3, 3)), np.eye(3), np.outer(rng.standard_normal(3), rng.standard_normal(3)),
              1e-150 * rng.standard_normal((3, 3)), 1e150 * rng.standard_normal((3, 3))):
        _check(a, device, "float64", values=False)


@pytest.mark.parametrize("device", DEVICES)
def test_badly_scaled_input_is_balanced(device):
    """D^-1 B D with D = diag(1, 1e3, ..., 1e12): the eigenvalues are B's; without balancing float32 lost them
    entirely (an error of 23 on the cuda kernel before it balanced; LAPACK's geev balances too)."""
    b = rng.standard_normal((5, 5))
    d = 10.0 ** np.arange(0, 15, 3)
    a = b * d[None, :] / d[:, None]
    ref = np.linalg.eigvals(b)
    for dt, tol in (("float64", 1e-12), ("float32", 2e-5)):
        w, v = tk.linalg.eig(tk.asarray(a.astype(dt), device=device))
        np.testing.assert_allclose(_match(w.numpy(), ref)[0], ref[None], atol=tol * np.abs(b).max())
        V = v.numpy().astype(np.complex128)  # noqa: N806
        np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0, atol=1e-6)
        np.testing.assert_allclose(a @ V, V * w.numpy()[None, :], atol=tol * 100)


@pytest.mark.parametrize("device", DEVICES)
def test_ill_conditioned_real_eigenvalues_stay_real(device):
    """The companion matrix of (x - 1)...(x - 10): its eigenvalues are ill-conditioned, so the complex arithmetic
    leaves imaginary parts ~1e-11, far above rounding; with no conjugate near them they are real (the cuda kernel
    once paired 6 + 1e-11j with 7 - 1e-11j and returned 7 twice)."""
    n = 10
    a = np.diag(np.ones(n - 1), -1)
    a[0] = -np.poly(np.arange(1.0, n + 1))[1:]
    w = tk.linalg.eigvals(tk.asarray(a, device=device)).numpy()
    assert not w.imag.any()
    np.testing.assert_allclose(np.sort(w.real), np.arange(1.0, n + 1), rtol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_views_halves_empty_and_1x1(device):
    a = rng.standard_normal((2, 8, 8))
    x = tk.asarray(a, device=device)
    for view, ref in ((x[:, 1:6, 2:7].mT, a[:, 1:6, 2:7].transpose(0, 2, 1)), (x[::2, ::2, 1::2], a[::2, ::2, 1::2])):
        w, v = tk.linalg.eig(view)
        np.testing.assert_allclose(ref @ v.numpy(), v.numpy() * w.numpy()[..., None, :], atol=1e-12)
        np.testing.assert_allclose(_match(w.numpy(), np.linalg.eigvals(ref))[0], np.linalg.eigvals(ref), atol=1e-12)
    c = a[:1, :4, :4] + 1j * a[1:, 4:, 4:]
    w, v = tk.linalg.eig(tk.asarray(c, device=device).mT[:, 1:, 1:])  # a complex view: strides in pairs
    ref = c.transpose(0, 2, 1)[:, 1:, 1:]
    np.testing.assert_allclose(ref @ v.numpy(), v.numpy() * w.numpy()[..., None, :], atol=1e-12)
    w = tk.linalg.eigvals(tk.broadcast_to(x[0, :3, :3], (2, 3, 3)))  # a broadcast batch (stride 0)
    np.testing.assert_array_equal(w.numpy()[0], w.numpy()[1])
    for half in (tk.float16, tk.bfloat16):  # computed in float32: complex64 results
        h = tk.asarray(a[0, :3, :3], device=device).astype(half)
        w = tk.linalg.eigvals(h)
        ref = np.linalg.eigvals(h.astype(tk.float64).numpy())
        assert w.dtype == tk.complex64
        np.testing.assert_allclose(_match(w.numpy(), ref)[0], ref[None], atol=1e-5)
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        w, v = tk.linalg.eig(tk.zeros(shape, device=device))
        assert w.shape == shape[:-1] and v.shape == shape and w.dtype == tk.complex64
        assert tk.linalg.eigvals(tk.zeros(shape, dtype=tk.float64, device=device)).dtype == tk.complex128
    w, v = tk.linalg.eig(tk.asarray([[[-3.5]]], device=device))
    assert w.numpy().tolist() == [[-3.5 + 0j]] and v.numpy().tolist() == [[[1 + 0j]]]


@pytest.mark.parametrize("device", DEVICES)
def test_errors_name_the_op(device):
    a = np.eye(3)
    a[1, 2] = np.nan
    x = tk.asarray(np.stack([np.eye(3), a]), device=device)
    for f, op in ((tk.linalg.eig, "eig"), (tk.linalg.eigvals, "eigvals")):
        with pytest.raises(RuntimeError, match=rf"torch.linalg.{op}: input tensor should not contain infs or "
                                               r"NaNs. \(Batch element 1\)"):
            f(x)
        with pytest.raises(RuntimeError, match="infs or NaNs"):
            f(tk.asarray([[np.inf, 0.0], [0.0, 1.0]], device=device))
        with pytest.raises(ValueError, match=rf"linalg.{op}: A must be batches of square matrices, but they are 2 "):
            f(tk.zeros((2, 3), device=device))
        with pytest.raises(ValueError, match=rf"linalg.{op}: expected an array of at least 2 dimensions"):
            f(tk.zeros((3,), device=device))
        with pytest.raises(TypeError, match=rf"linalg.{op}: expected a floating-point array"):
            f(tk.zeros((2, 2), dtype=tk.int32, device=device))


def test_cuda_reports_non_convergence(monkeypatch):
    from tkernels.backends.triton import linalg_eig

    monkeypatch.setattr(linalg_eig, "max_iterations", lambda n: 1)  # one QR sweep between deflations
    with pytest.raises(tk.linalg.LinAlgError, match=r"linalg.eigvals: The algorithm failed to converge because the "
                                                    r"input matrix is ill-conditioned .*\(error code: [23]\)"):
        tk.linalg.eigvals(tk.asarray(np.roll(np.eye(3), 1, axis=0), device="cuda"))  # a cyclic permutation
    # a triangular matrix needs no sweep
    t = np.triu(rng.uniform(-1, 1, (3, 3)), 1) + np.diag([5.0, 6, 7])
    np.testing.assert_allclose(np.sort(tk.linalg.eigvals(tk.asarray(t, device="cuda")).numpy()), [5, 6, 7])


def test_against_torch_when_importable():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((2, 4, 4))
    tw = torch.linalg.eigvals(torch.from_numpy(a)).numpy()
    for device in DEVICES:
        w = tk.linalg.eigvals(tk.asarray(a, device=device)).numpy()
        np.testing.assert_allclose(_match(w, tw)[0], tw, atol=1e-12)
