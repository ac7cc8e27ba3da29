"""Complex autograd of autograd.linalg (PyTorch's convention, Note [complex gradients] in autograd/graph.py):
gradcheck on complex128 inputs for every function torch.linalg differentiates for complex input, with
phase-invariant losses where the result (eigen/singular vectors) is defined up to a phase; a phase-dependent
loss raises PyTorch's error; torch 2.13's gradients when importable."""

import numpy as np
import pytest

import autograd as ag

L = ag.linalg
rng = np.random.default_rng(0)
SQ = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
TALL = rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))
WIDE = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
RHS = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))


def _abs2(x):
    return (x * x.conj()).real


def _hpd(x):
    return x @ x.mH + 3 * ag.eye(3, dtype=x.dtype)


CASES = {
    "det": (lambda x: L.det(x), [SQ]),
    "slogdet_logabsdet": (lambda x: L.slogdet(x)[1], [SQ]),
    "slogdet_sign": (lambda x: L.slogdet(x)[0], [SQ]),
    "inv": (lambda x: L.inv(x), [SQ]),
    "inv_ex": (lambda x: L.inv_ex(x)[0], [SQ]),
    "matrix_power": (lambda x: L.matrix_power(x, -2), [SQ]),
    "solve": (lambda x, y: L.solve(x, y), [SQ, RHS]),
    "solve_triangular": (lambda x, y: L.solve_triangular(x.triu(), y, upper=True), [SQ, RHS]),
    "lu_factor": (lambda x: L.lu_factor(x)[0], [SQ]),
    "lu": (lambda x: L.lu(x)[1] + L.lu(x)[2], [SQ]),
    "lu_solve_adjoint": (lambda x, y: L.lu_solve(*L.lu_factor(x), y, adjoint=True), [SQ, RHS]),
    "cholesky": (lambda x: L.cholesky(_hpd(x)), [SQ]),
    "cholesky_upper": (lambda x: L.cholesky(_hpd(x), upper=True), [SQ]),
    "cholesky_ex": (lambda x: L.cholesky_ex(_hpd(x))[0], [SQ]),
    "eigvalsh": (lambda x: L.eigvalsh(x + x.mH), [SQ]),
    "eigh_vectors_abs": (lambda x: _abs2(L.eigh(x + x.mH)[1]), [SQ]),
    "svdvals_tall": (lambda x: L.svdvals(x), [TALL]),
    "svdvals_wide": (lambda x: L.svdvals(x), [WIDE]),
    "svd_u_vh": (lambda x: (lambda r: r.U @ r.Vh)(L.svd(x, full_matrices=False)), [TALL]),
    "svd_u_vh_wide": (lambda x: (lambda r: r.U @ r.Vh)(L.svd(x, full_matrices=False)), [WIDE]),
    "svd_abs_u": (lambda x: _abs2(L.svd(x)[0]), [SQ]),
    "pinv": (lambda x: L.pinv(x), [TALL]),
    "lstsq": (lambda x, y: L.lstsq(x, y)[0], [SQ, RHS]),
    "cond": (lambda x: L.cond(x), [SQ]),
    "matrix_norm_nuc": (lambda x: L.matrix_norm(x, ord="nuc"), [SQ]),
    "matrix_norm_2": (lambda x: L.matrix_norm(x, ord=2), [SQ]),
    "matrix_norm_fro": (lambda x: L.matrix_norm(x), [SQ]),
    "matrix_norm_inf": (lambda x: L.matrix_norm(x, ord=np.inf), [SQ]),
    "qr_q": (lambda x: L.qr(x)[0], [TALL]),
    "qr_r": (lambda x: L.qr(x)[1], [TALL]),
    "qr_wide": (lambda x: L.qr(x)[0] @ L.qr(x)[1], [WIDE]),
    "qr_complete": (lambda x: L.qr(x, mode="complete")[0], [SQ]),
    "multi_dot": (lambda x, y: L.multi_dot([x[0], x[1], y[0]]), [SQ, RHS]),
}


def _t(a):
    return ag.tensor(a, dtype=ag.complex128, requires_grad=True)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_complex128(name):
    fn, args = CASES[name]
    assert ag.gradcheck(fn, [_t(a) for a in args], raise_exception=True)


@pytest.mark.parametrize("name", ["det", "slogdet_logabsdet", "inv", "cholesky", "eigvalsh", "svdvals_tall", "qr_r"])
def test_gradgradcheck_complex128(name):
    fn, args = CASES[name]
    assert ag.gradgradcheck(fn, [_t(a) for a in args], raise_exception=True)


@pytest.mark.parametrize("which", ["eigh", "svd"])
def test_a_loss_that_depends_on_the_vectors_phase_raises_pytorchs_error(which):
    x = _t(SQ)
    v = L.eigh(x + x.mH)[1] if which == "eigh" else L.svd(x)[0]
    what = "eigenvectors" if which == "eigh" else "singular vectors"
    with pytest.raises(RuntimeError, match=rf"The {what} in the complex case are specified up to multiplication "
                                           rf"by e\^{{i phi}}"):
        v.real.sum().backward()  # the real parts change with the columns' phases


def test_gradients_equal_torchs():
    torch = pytest.importorskip("torch")
    tl = torch.linalg
    pairs = [
        (lambda m: m.det(), lambda m: m.det()),
        (lambda m: m.slogdet()[0] * m.slogdet()[1], lambda m: tl.slogdet(m)[0] * tl.slogdet(m)[1]),
        (lambda m: m.logdet(), lambda m: m.logdet()),
        (lambda m: L.cholesky(m @ m.mH + 3 * ag.eye(3, dtype=m.dtype)),
         lambda m: tl.cholesky(m @ m.mH + 3 * torch.eye(3, dtype=m.dtype))),
        (lambda m: L.eigvalsh(m + m.mH), lambda m: tl.eigvalsh(m + m.mH)),
        (lambda m: _abs2(L.eigh(m + m.mH)[1]), lambda m: (lambda v: (v * v.conj()).real)(tl.eigh(m + m.mH)[1])),
        (lambda m: (lambda r: r.U @ r.Vh)(L.svd(m)), lambda m: (lambda r: r.U @ r.Vh)(tl.svd(m))),
        (lambda m: L.qr(m)[0] * 2 + L.qr(m)[1], lambda m: tl.qr(m)[0] * 2 + tl.qr(m)[1]),
        (lambda m: L.inv(m), lambda m: tl.inv(m)),
    ]
    for i, (ours, theirs) in enumerate(pairs):
        x = _t(SQ)
        y = ours(x)
        r = np.random.default_rng(i)
        w = r.standard_normal(y.shape) + 1j * r.standard_normal(y.shape)  # a real loss of every output
        (y * ag.tensor(w)).real.sum().backward()
        xt = torch.tensor(SQ, dtype=torch.complex128, requires_grad=True)
        (theirs(xt) * torch.tensor(w)).real.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", [ag.float64, ag.complex128])
def test_the_top_level_names_and_methods(dtype):
    a = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 1.5]])
    if dtype == ag.complex128:
        a = a + 1j * np.array([[0, 0.3, -0.2], [-0.3, 0, 0.1], [0.2, -0.1, 0]])  # Hermitian positive-definite
    x = ag.tensor(a, dtype=dtype)
    np.testing.assert_allclose(x.det().numpy(), np.linalg.det(a), rtol=1e-12)
    want = np.log(np.linalg.det(a).astype(complex))
    np.testing.assert_allclose(ag.logdet(x).numpy(), want if dtype == ag.complex128 else want.real, rtol=1e-12)
    np.testing.assert_allclose(x.inverse().numpy(), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(ag.matrix_power(x, 3).numpy(), np.linalg.matrix_power(a, 3), rtol=1e-12)
    np.testing.assert_allclose(x.pinverse().numpy(), np.linalg.pinv(a), rtol=1e-10)
    np.testing.assert_allclose(x.cholesky().numpy(), np.linalg.cholesky(a), rtol=1e-12)
    s, la = ag.slogdet(x)
    np.testing.assert_allclose(la.numpy(), np.linalg.slogdet(a)[1], rtol=1e-12)
    assert np.isnan(float(ag.logdet(ag.tensor([[0.0, 1.0], [1.0, 0.0]]))))  # det -1: no real log
    assert float(ag.logdet(ag.tensor([[1.0, 1.0], [1.0, 1.0]]))) == -np.inf
    assert ag.gradcheck(lambda m: m.logdet(), [ag.tensor(a, dtype=dtype, requires_grad=True)])
