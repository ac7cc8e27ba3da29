"""tkernels.linalg.eig / eigvals on interpreted cuda past the one-tile kernel: ``eig_large_kernel`` (the same
algorithm on a global-memory scratch in tiles) against NumPy (LAPACK's geev). The interpreter runs a kernel op by
op, so most cases force the large kernel onto small matrices with small pieces (``SMALL_MAX = 0``, tiles of 2-4 and
vector blocks of 2-8: several per row, the last one ragged); one case is a real 65 x 65 matrix on the default
dispatch, and the ``gpu`` tests (bench.gpu_check) take dense matrices up to 256 x 256 on compiled kernels."""

import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.triton import linalg_eig as backend

from .test_linalg_eig import _check, _match, linear_sum_assignment

rng = np.random.default_rng(1818)


@pytest.fixture
def tiles(monkeypatch):
    """Every size through eig_large_kernel, with ``tiles(t, vec)``: TILE x TILE tiles and VEC vectors (VEC = t when
    not given)."""
    monkeypatch.setattr(backend, "SMALL_MAX", 0)

    def set_tile(t, vec=None):
        monkeypatch.setattr(backend, "LARGE_TILE", t)
        monkeypatch.setattr(backend, "LARGE_VEC", vec)

    set_tile(4)
    return set_tile


def _launched(monkeypatch):
    names = []
    real = backend._launch

    def record(kernel, *args, **meta):
        names.append(kernel.fn.__name__ if hasattr(kernel, "fn") else kernel.__name__)
        return real(kernel, *args, **meta)

    monkeypatch.setattr(backend, "_launch", record)
    return names


def test_random_real_batched_transposed_and_conjugate_pairs(tiles, monkeypatch):
    names = _launched(monkeypatch)
    a = rng.standard_normal((2, 7, 7))
    x = tk.asarray(a, device="cuda").mT[:, 1:, 1:]  # a transposed view of a batch: 6 x 6, two tiles of 4
    ref = a.transpose(0, 2, 1)[:, 1:, 1:]
    w, v = tk.linalg.eig(x)
    assert set(names) == {"eig_large_kernel"} and w.dtype == v.dtype == tk.complex128
    W, V = w.numpy(), v.numpy()  # noqa: N806
    rw = np.linalg.eigvals(ref)
    np.testing.assert_allclose(_match(W, rw)[0], rw, atol=1e-12)
    np.testing.assert_allclose(ref @ V, V * W[..., None, :], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, atol=1e-14)
    assert np.sort((W.imag == 0).sum(-1)).tolist() == np.sort((rw.imag == 0).sum(-1)).tolist()
    assert not (V.imag * (W.imag == 0)[..., None, :]).any()  # real eigenpairs exactly real
    for wb, vb in zip(W, V):  # the others in exact conjugate pairs with conjugate vectors
        for k in np.flatnonzero(wb.imag):
            j = np.flatnonzero(wb == wb[k].conj())
            assert j.size and (vb[:, j[0]] == vb[:, k].conj()).all()
    tiles(2, 8)
    _check(rng.standard_normal((5, 5)), "cuda", "float32", vectors=False)


def test_complex_input_and_eigenvectors_up_to_phase(tiles):
    tiles(2, 4)
    c = rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))
    W, V = _check(c, "cuda", "float64", values=False)  # noqa: N806
    rw, rv = np.linalg.eig(c)
    col = linear_sum_assignment(np.abs(rw[:, None] - W[None, :]))[1]
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->j", rv.conj(), V[:, col])), 1.0, atol=1e-12)
    top = np.abs(V).argmax(0)
    assert not V[top, np.arange(5)].imag.any() and (V[top, np.arange(5)].real > 0).all()  # zgeev's phase
    _check(c[:4, :4], "cuda", "float32")


def test_structured_defective_symmetric_and_scaled_inputs(tiles):
    s = rng.standard_normal((5, 5))
    W, V = _check(s + s.T, "cuda", "float64", values=False)  # noqa: N806
    assert not W.imag.any() and not V.imag.any()
    np.testing.assert_allclose(np.abs(V.T @ V), np.eye(5), atol=1e-12)
    jordan = 2.0 * np.eye(5) + np.diag(np.ones(4), 1)  # defective: eigenvalues to ~eps^(1/5)
    _check(jordan.T.copy(), "cuda", "float64", tol_w=1e-2, values=False)
    _check(np.roll(np.eye(5), 1, axis=0), "cuda", "float64", values=False)  # unit circle: exceptional shifts
    repeated = np.diag([3.0, 3.0, -1.0, 3.0, -1.0])
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    _check(q @ repeated @ q.T, "cuda", "float64", values=False)  # repeated (non-defective) eigenvalues
    for a in (np.zeros((5, 5)), 1e-150 * rng.standard_normal((5, 5))):
        _check(a, "cuda", "float64", values=False)
    b = rng.standard_normal((5, 5))  # badly scaled: D^-1 B D, found by balancing
    d = 10.0 ** np.arange(0, 15, 3)
    w = tk.linalg.eigvals(tk.asarray((b * d[None, :] / d[:, None]).astype(np.float32), device="cuda"))
    ref = np.linalg.eigvals(b)
    np.testing.assert_allclose(_match(w.numpy(), ref)[0], ref[None], atol=2e-5 * np.abs(b).max())


def test_ill_conditioned_companion_matrix_stays_real(tiles):
    tiles(4, 2)
    n = 9
    a = np.diag(np.ones(n - 1), -1)
    a[0] = -np.poly(np.arange(1.0, n + 1))[1:]
    w = tk.linalg.eigvals(tk.asarray(a, device="cuda")).numpy()
    assert not w.imag.any()
    np.testing.assert_allclose(np.sort(w.real), np.arange(1.0, n + 1), rtol=1e-7)


def test_errors_and_non_convergence(tiles, monkeypatch):
    a = np.eye(5)
    a[3, 1] = np.inf
    with pytest.raises(RuntimeError, match=r"torch.linalg.eig: input tensor should not contain infs or NaNs. "
                                           r"\(Batch element 1\)"):
        tk.linalg.eig(tk.asarray(np.stack([np.eye(5), a]), device="cuda"))
    monkeypatch.setattr(backend, "max_iterations", lambda n: 1)
    with pytest.raises(tk.linalg.LinAlgError, match=r"linalg.eigvals: The algorithm failed to converge .*"
                                                    r"\(error code: [2-5]\)"):
        tk.linalg.eigvals(tk.asarray(np.roll(np.eye(5), 1, axis=0), device="cuda"))


def test_a_65x65_matrix_on_the_default_dispatch(monkeypatch):
    """Past eig_kernel's 64 tile: quasi-triangular (2 x 2 diagonal blocks, small couplings above), so the
    interpreter's QR iterations stay few; its eigenvalues are the blocks'."""
    names = _launched(monkeypatch)
    n = 65
    a = np.triu(rng.uniform(-0.02, 0.02, (n, n)), 2)
    for i in range(0, n - 1, 2):
        a[i:i + 2, i:i + 2] = rng.standard_normal((2, 2))
    a[-1, -1] = 0.5
    ref = np.concatenate([np.linalg.eigvals(a[i:i + 2, i:i + 2]) for i in range(0, n - 1, 2)] + [[0.5]])
    w = tk.linalg.eigvals(tk.asarray(a, device="cuda"))
    assert names == ["eig_large_kernel"] and w.shape == (n,) and w.dtype == tk.complex128
    got = _match(w.numpy(), ref)[0][0]
    np.testing.assert_allclose(got, ref, atol=1e-13)
    assert not got[ref.imag == 0].imag.any()


def test_small_edge_sizes_and_halves_through_the_large_kernel(tiles):
    for n in (1, 2, 3):
        _check(rng.standard_normal((n, n)), "cuda", "float64")
    h = tk.asarray(rng.standard_normal((3, 3)), device="cuda").astype(tk.bfloat16)
    w = tk.linalg.eigvals(h)  # computed in float32: complex64
    ref = np.linalg.eigvals(h.astype(tk.float64).numpy())
    assert w.dtype == tk.complex64
    np.testing.assert_allclose(_match(w.numpy(), ref)[0], ref[None], atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dtype", [((70, 70), "float64"), ((129, 129), "float32"), ((256, 256), "float64"),
                                         ((3, 100, 100), "complex64"), ((64, 64, 64), "float32")])
def test_large_and_batched_eig_on_a_gpu(shape, dtype):
    """What the interpreter is too slow for: dense random matrices past the 64 tile (and a batch at it) on the
    compiled kernels, against NumPy: eigenvalues (matched), unit eigenvectors and the residual A V - V diag(w)."""
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    n = shape[-1]
    eps = 2e-6 if dtype in ("float32", "complex64") else 1e-14
    x = tk.asarray(a.astype(dtype), device="cuda")
    w, v = tk.linalg.eig(x)
    W, V = w.numpy().astype(np.complex128), v.numpy().astype(np.complex128)  # noqa: N806
    ref = np.linalg.eigvals(a).reshape(-1, n)
    got = _match(W.reshape(-1, n), ref)[0]
    np.testing.assert_allclose(got, ref, atol=50 * n * eps * np.abs(a).max())
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, atol=20 * eps)
    np.testing.assert_allclose(a @ V, V * W[..., None, :], atol=50 * n * eps * np.abs(a).max())
    np.testing.assert_allclose(_match(tk.linalg.eigvals(x).numpy().reshape(-1, n), ref)[0], ref,
                               atol=50 * n * eps * np.abs(a).max())


def test_past_the_int32_offsets_is_refused(monkeypatch):
    monkeypatch.setattr(backend, "LARGE_MAX", 4)
    with pytest.raises(NotImplementedError, match=r"linalg.eig: the cuda kernel indexes .* 32-bit offsets, so "
                                                  r"matrices up to 4 x 4; got .*\(5, 5\).*cuda.*x.to\('cpu'\)"):
        tk.linalg.eigvals(tk.zeros((5, 5), device="cuda"))
