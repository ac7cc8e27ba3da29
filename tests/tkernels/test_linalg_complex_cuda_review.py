"""Review of the complex linalg on (interpreted) cuda: regressions found by fuzzing every public function of
tkernels.linalg on complex input against the cpu results (NumPy/LAPACK)."""

import numpy as np

import tkernels as tk

L = tk.linalg
rng = np.random.default_rng(1808)


def _c(shape, dt=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def test_tensordot_and_outer_take_complex_on_cuda():
    """Both are the complex matmul on cuda (they raised NotImplementedError while matmul and vecdot ran)."""
    for dt in (np.complex64, np.complex128):
        a, b, u, v = _c((2, 3, 4), dt), _c((3, 4), dt), _c((3,), dt), _c((2,), dt)
        tol = 1e-5 if dt == np.complex64 else 1e-12
        got = L.tensordot(tk.asarray(a, device="cuda"), tk.asarray(b, device="cuda"), axes=2).numpy()
        assert got.dtype == dt
        np.testing.assert_allclose(got, np.tensordot(a, b, axes=2), rtol=tol, atol=tol)
        w = v.real.astype(np.float32 if dt == np.complex64 else np.float64)  # complex with real: complex
        got = L.outer(tk.asarray(u, device="cuda"), tk.asarray(w, device="cuda")).numpy()
        assert got.dtype == dt
        np.testing.assert_allclose(got, np.outer(u, w), rtol=tol, atol=tol)


def test_qr_of_a_purely_imaginary_matrix_has_lapacks_signs():
    """``1j * b`` has real parts -0.0 where b < 0: zgeqrf's beta = -sign(Re alpha) |.| takes the sign of -0.0
    (positive beta), as NumPy's R; the kernel's ``Re alpha >= 0`` gave the opposite signs (a valid QR, not cpu's)."""
    b = np.array([[-1.0, 2.0, 0.5], [0.5, -1.0, 3.0], [2.0, 1.0, -1.0]])
    for dt in (np.complex64, np.complex128):
        a = (1j * b).astype(dt)
        assert np.signbit(a.real[0, 0])
        q, r = (t.numpy() for t in L.qr(tk.asarray(a, device="cuda")))
        qn, rn = np.linalg.qr(a)
        tol = 1e-5 if dt == np.complex64 else 1e-12
        np.testing.assert_allclose(r, rn, rtol=tol, atol=tol)
        np.testing.assert_allclose(q, qn, rtol=tol, atol=tol)
