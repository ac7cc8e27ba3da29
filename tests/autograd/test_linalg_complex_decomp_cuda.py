"""Complex gradients of the QR/SVD/eigh family on interpreted cuda (the complex kernels of tkernels/kernels/
qr_complex.py and svd_complex.py) equal to cpu's (LAPACK), which tests/autograd/test_linalg_complex.py
gradchecks (QR's once complex solve_triangular runs on cuda; until then its gradient names that function); the
phase-dependent losses raise PyTorch's error on cuda too; householder_product's complex gradients
(H_i = I - tau_i v_i v_i^H) gradchecked and equal to torch 2.13's when importable."""

import numpy as np
import pytest

import autograd as ag

from .test_linalg_complex import CASES, SQ, TALL, WIDE

L = ag.linalg
rng = np.random.default_rng(1819)
HP_A = rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))
HP_TAU = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))


def _values_and_projector(h):
    """Gauge-invariant outputs of eigh reading the upper triangle: the eigenvalues' sum and the first projector."""
    w, v = L.eigh(h, UPLO="U")
    c = v[..., :1]
    return w.sum() + (c * c.conj().mT).real


CASES_CUDA = {**{n: CASES[n] for n in ("eigh_vectors_abs", "svdvals_tall", "svd_u_vh", "svd_u_vh_wide", "svd_abs_u",
                                        "pinv", "lstsq", "matrix_norm_nuc")},
              "eigh_upper_values_and_projector": (lambda x: _values_and_projector(x + x.mH), [SQ]),
              "pinv_hermitian": (lambda x: L.pinv(x + x.mH, hermitian=True), [SQ]),
              "householder_product": (lambda a, t: L.householder_product(a, t), [HP_A, HP_TAU])}


def _t(a, device="cpu"):
    return ag.tensor(a, dtype=ag.complex128, requires_grad=True, device=device)


def _grads(fn, arrays, device):
    xs = [_t(a, device) for a in arrays]
    out = fn(*xs)
    w = ag.tensor(np.random.default_rng(7).standard_normal(out.shape), dtype=ag.float64, device=device)
    loss = ((out * w).real if out.dtype == ag.complex128 else out * w).sum()  # a real loss of every entry
    return [np.asarray(g._data.to("cpu").numpy()) for g in ag.grad(loss, xs)]


@pytest.mark.parametrize("name", list(CASES_CUDA))
def test_cuda_gradients_equal_cpu(name):
    fn, arrays = CASES_CUDA[name]
    for c, g in zip(_grads(fn, arrays, "cpu"), _grads(fn, arrays, "cuda")):
        assert np.abs(c).max() > 1e-3  # a gradient that could differ
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["qr_q", "qr_wide"])
def test_cuda_qr_gradients_equal_cpu(name):
    """QR's backward solves with R^H (solve_triangular): where complex solve_triangular has no cuda kernel (the
    complex triangular solve is a separate kernel of issue 18), the gradient names it; where it has, it equals
    cpu's (asserted either way)."""
    from tkernels._complex import CUDA_COMPLEX_OPS

    fn, arrays = CASES[name]
    want = _grads(fn, arrays, "cpu")
    try:
        got = _grads(fn, arrays, "cuda")
    except NotImplementedError as e:
        assert "linalg.solve_triangular: complex128 on cuda is not implemented yet" in str(e)
        assert "linalg.solve_triangular" not in CUDA_COMPLEX_OPS
        return
    for c, g in zip(want, got):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("which", ["eigh", "svd"])
def test_phase_dependent_loss_raises_on_cuda(which):
    x = _t(SQ if which == "eigh" else WIDE, "cuda")
    v = L.eigh(x + x.mH)[1] if which == "eigh" else L.svd(x, full_matrices=False)[2]
    what = "eigenvectors" if which == "eigh" else "singular vectors"
    with pytest.raises(RuntimeError, match=rf"The {what} in the complex case are specified up to multiplication "
                                           rf"by e\^{{i phi}}"):
        v.imag.sum().backward()


def test_householder_product_complex_gradcheck_and_torch():
    assert ag.gradcheck(lambda a, t: L.householder_product(a, t), [_t(HP_A), _t(HP_TAU)], raise_exception=True)
    assert ag.gradcheck(lambda a: L.householder_product(a, ag.tensor(HP_TAU[:, :1])), [_t(TALL)],
                        raise_exception=True)
    torch = pytest.importorskip("torch")
    a, t = (torch.tensor(v, requires_grad=True) for v in (HP_A, HP_TAU))
    w = np.random.default_rng(7).standard_normal((2, 4, 3))
    (torch.linalg.householder_product(a, t) * torch.tensor(w)).real.sum().backward()
    ours = _grads(lambda x, y: L.householder_product(x, y), [HP_A, HP_TAU], "cpu")
    # PyTorch's gradient of a real loss of complex input is the conjugate Wirtinger one, as ours (Note [complex
    # gradients] in autograd/graph.py)
    np.testing.assert_allclose(ours[0], a.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours[1], t.grad.numpy(), atol=1e-10)


def test_differentiable_pinv_and_lstsq_values_of_complex_input(device="cpu"):
    """The differentiable paths compose pinv from the factors' conjugate transposes (they used plain transposes:
    a wrong value for complex input; the same code runs on cuda, whose gradients test_cuda_gradients_equal_cpu
    compares)."""
    h = SQ + np.conj(np.swapaxes(SQ, -1, -2))
    rhs = rng.standard_normal((2, 4, 2)) + 1j * rng.standard_normal((2, 4, 2))
    for got, want in ((L.pinv(_t(TALL, device)), np.linalg.pinv(TALL)),
                      (L.pinv(_t(h, device), hermitian=True), np.linalg.pinv(h, hermitian=True)),
                      (L.lstsq(_t(TALL, device), _t(rhs, device)).solution,
                       np.stack([np.linalg.lstsq(TALL[i], rhs[i], rcond=None)[0] for i in range(2)]))):
        assert got.requires_grad
        np.testing.assert_allclose(got.detach().to("cpu")._data.numpy(), want, atol=1e-12)
