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
