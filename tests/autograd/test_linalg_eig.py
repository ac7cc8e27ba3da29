"""autograd.linalg.eig / eigvals: values, PyTorch's backward (gradcheck and gradgradcheck in float64 and
complex128 with gauge-invariant losses), the refusal of phase-dependent losses, eigvals' gradient, cpu and
interpreted cuda, and torch 2.13's gradients when importable."""

import numpy as np
import pytest

import autograd as ag
import autograd.linalg as LA  # noqa: N812

rng = np.random.default_rng(18)


def T(a, grad=True, device="cpu"):  # noqa: N802
    return ag.tensor(a, requires_grad=grad, device=device)


def _np(t):
    return np.asarray(t.detach().to("cpu")._data.numpy())


def _invariant(x):
    """Gauge-invariant outputs: the eigenvalues, |V| (unit columns, a phase each) and the real part of the
    projector v v^H of the first column."""
    w, v = LA.eig(x)
    c = v[..., :, :1]
    return w, v.abs(), (c * c.conj().mT).real


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradcheck_real_and_complex_input(dtype):
    a = rng.standard_normal((2, 3, 3))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((2, 3, 3))
    assert ag.gradcheck(_invariant, (T(a),))
    assert ag.gradcheck(lambda x: LA.eigvals(x).real, (T(a),))


def test_gradgradcheck():
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    assert ag.gradgradcheck(lambda x: LA.eigvals(x), (T(a),))
    assert ag.gradgradcheck(_invariant, (T(a),))
    assert ag.gradgradcheck(_invariant, (T(rng.standard_normal((3, 3))),))


def test_phase_dependent_loss_is_refused_and_values_match():
    a = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    x = T(a)
    w, v = LA.eig(x)
    np.testing.assert_allclose(a @ _np(v), _np(v) * _np(w)[None, :], atol=1e-12)
    with pytest.raises(RuntimeError, match=r"linalg_eig_backward: The eigenvectors in the complex case are "
                                           r"specified up to multiplication by e\^\{i phi\}"):
        v.sum().abs().backward()
    assert not LA.eig(T(a, False)).eigenvalues.requires_grad
    with pytest.raises(RuntimeError, match=r"linalg.eig: The input tensor A must be batches of square"):
        LA.eig(T(rng.standard_normal((2, 3))))


def test_cuda_gradients_equal_cpu():
    a = rng.standard_normal((3, 3))
    grads = []
    for device in ("cpu", "cuda"):
        x = T(a, device=device)
        w, v = LA.eig(x)
        (w.real.sum() + (w * w).imag.sum() + v.abs().pow(2)[..., 0, :].sum() + v.abs()[..., 1, :].sum()).backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-10)
    x = T(a)
    LA.eigvals(x).real.sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.eye(3), atol=1e-12)  # d trace / dA


def test_cuda_gradient_past_the_solve_tile_goes_through_the_blocked_lu(monkeypatch):
    import tkernels.kernels.linalg_lu as lu

    monkeypatch.setattr(lu, "MAX_BLOCK", 4)  # as if 3x3 were past the cuda LU's tile (the real 6 x 6 system is blocked)
    a = rng.standard_normal((3, 3))
    grads = []
    for device in ("cpu", "cuda"):
        x = T(a, device=device)
        LA.eigvals(x).real.sum().backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-10)


def test_cuda_gradients_through_the_large_kernel_equal_cpu(monkeypatch):
    """eig_large_kernel (forced onto a 5 x 5 with a tile of 2; it runs past 64 x 64) gives cpu's gradients."""
    from tkernels.backends.triton import linalg_eig as backend

    monkeypatch.setattr(backend, "SMALL_MAX", 0)
    monkeypatch.setattr(backend, "LARGE_TILE", 2)
    a = rng.standard_normal((5, 5))
    grads = []
    for device in ("cpu", "cuda"):
        x = T(a, device=device)
        w, v = LA.eig(x)
        (w.real.sum() + (w * w).imag.sum() + v.abs().pow(2)[..., 0, :].sum() + v.abs()[..., 1, :].sum()).backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-10)


def test_gradients_match_torch_when_importable():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    x = T(a)
    w, v = LA.eig(x)
    (w.real.sum() + (w * w).imag.sum() + v.abs()[..., 0, :].sum()).backward()
    tx = torch.tensor(a, requires_grad=True)
    tw, tv = torch.linalg.eig(tx)
    (tw.real.sum() + (tw * tw).imag.sum() + tv.abs()[..., 0, :].sum()).backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), atol=1e-10)
