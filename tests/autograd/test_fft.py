"""autograd.fft: forward values and vector-Jacobian products against PyTorch's torch.fft (when importable) and
against the adjoint of numpy.fft's Jacobian (always), gradcheck and gradgradcheck in complex128/float64 of every
transform and of real-to-real chains through all of them, n-d forms, the same gradients on interpreted cuda as
on cpu (a real leaf there: complex gradient accumulation on cuda is the complex cuda kernels' business).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd as ag
import tkernels.cuda as tkc

OPS = ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft")
COMPLEX_IN = ("irfft", "hfft")


def _out_len(op, L, n):
    if op in ("irfft", "hfft"):
        return n or 2 * (L - 1)
    m = n or L
    return m // 2 + 1 if op in ("rfft", "ihfft") else m


@pytest.mark.parametrize("i,op", list(enumerate(OPS * 2)))
def test_values_and_vjps_match_torch(i, op):
    """Each transform (n cut / kept / padded, every norm in turn, a complex input made by fft for irfft/hfft):
    the output and the gradient for a random complex (or real) output gradient equal PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(i)
    L = 7
    n = (None, 5, 10)[i % 3]
    norm = (None, "ortho", "forward")[(i // 3) % 3]
    xv = rng.standard_normal((3, L))
    m = _out_len(op, L, n)
    gv = rng.standard_normal((3, m))
    if op not in ("irfft", "hfft"):
        gv = gv + 1j * rng.standard_normal((3, m))
    x = ag.tensor(xv, requires_grad=True)
    y = getattr(ag.fft, op)(ag.fft.fft(x) if op in COMPLEX_IN else x, n=n, norm=norm)
    y.backward(ag.tensor(gv))
    xt = torch.tensor(xv, requires_grad=True)
    yt = getattr(torch.fft, op)(torch.fft.fft(xt) if op in COMPLEX_IN else xt, n=n, norm=norm)
    yt.backward(torch.tensor(gv))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().resolve_conj().numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.resolve_conj().numpy(), rtol=0, atol=1e-13)


@pytest.mark.parametrize("i,op", list(enumerate(OPS * 2)))
def test_vjps_match_the_adjoint_of_numpys_transform(i, op):
    """Without torch: the gradient of each transform (as above) equals Re(J^H g), J the Jacobian of the same map
    built column by column from numpy.fft (the conjugate Wirtinger convention, for a real leaf)."""
    rng = np.random.default_rng(i)
    L = 7
    n = (None, 5, 10)[i % 3]
    norm = (None, "ortho", "forward")[(i // 3) % 3]
    m = _out_len(op, L, n)

    def ref(v):
        return getattr(np.fft, op)(np.fft.fft(v) if op in COMPLEX_IN else v, n=n, norm=norm or "backward")

    jac = np.stack([ref(e) for e in np.eye(L)], axis=0)  # (L, m)
    gv = rng.standard_normal((m,)) + (0 if op in COMPLEX_IN else 1j * rng.standard_normal((m,)))
    x = ag.tensor(rng.standard_normal((L,)), requires_grad=True)
    y = getattr(ag.fft, op)(ag.fft.fft(x) if op in COMPLEX_IN else x, n=n, norm=norm)
    y.backward(ag.tensor(gv))
    np.testing.assert_allclose(x.grad.numpy(), np.real(np.conj(jac) @ gv), rtol=0, atol=1e-12)


CHAINS = {
    "rfft-irfft": lambda x: ag.fft.irfft(ag.fft.rfft(x, n=6), n=9, norm="ortho"),
    "fft-hfft": lambda x: ag.fft.hfft(ag.fft.fft(x, n=5, norm="forward"), n=7),
    "ihfft-irfft": lambda x: ag.fft.irfft(ag.fft.ihfft(x), n=4),
    "rfft-ifft-irfft": lambda x: ag.fft.irfft(ag.fft.ifft(ag.fft.rfft(x, dim=0), n=3, dim=1), n=4),
    "rfftn-irfftn": lambda x: ag.fft.irfftn(ag.fft.rfftn(x, s=(3, 4)), s=(4, 5), norm="forward"),
    "fft2-ifft2-hfft": lambda x: ag.fft.hfft(ag.fft.ifft2(ag.fft.fft2(x, s=(4, 3)), norm="ortho"), n=4),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_gradcheck_and_gradgradcheck_of_real_chains(name):
    """Real-to-real chains through every transform and backward formula: gradcheck and gradgradcheck (the
    transforms are linear: their backward is a transform, itself differentiable)."""
    f = CHAINS[name]
    x = ag.tensor(np.random.default_rng(3).standard_normal((3, 5)), requires_grad=True)
    assert ag.gradcheck(f, (x,))
    assert ag.gradgradcheck(f, (x,))


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")
def test_cuda_gradients_equal_cpu():
    """A chain through rfft, fft, irfft (power-of-two and Bluestein lengths) on cuda: forward and gradient equal
    the cpu ones."""
    xv = np.random.default_rng(5).standard_normal((2, 6))

    def run(device):
        x = ag.tensor(xv, device=device, requires_grad=True)
        y = ag.fft.irfft(ag.fft.ifft(ag.fft.rfft(x, n=8), n=5, norm="ortho"), n=7)
        (y * ag.tensor(np.arange(14.0).reshape(2, 7), device=device)).sum().backward()
        return y.detach().to("cpu").numpy(), x.grad.to("cpu").numpy()

    (yc, gc), (yg, gg) = run("cpu"), run("cuda")
    np.testing.assert_allclose(yg, yc, rtol=0, atol=1e-13)
    np.testing.assert_allclose(gg, gc, rtol=0, atol=1e-12)


def test_helpers():
    f = ag.fft.fftfreq(5, 0.5, dtype=ag.float64)
    np.testing.assert_array_equal(f.numpy(), np.fft.fftfreq(5, 0.5))
    np.testing.assert_array_equal(ag.fft.rfftfreq(6, dtype=ag.float64).numpy(), np.fft.rfftfreq(6))
    x = ag.tensor(np.arange(10.0).reshape(2, 5), requires_grad=True)
    y = ag.fft.fftshift(x, dim=1)
    np.testing.assert_array_equal(y.detach().numpy(), np.fft.fftshift(np.arange(10.0).reshape(2, 5), axes=1))
    np.testing.assert_array_equal(ag.fft.ifftshift(y, dim=1).detach().numpy(), x.detach().numpy())
    (y * ag.tensor(np.arange(10.0).reshape(2, 5))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.fft.ifftshift(np.arange(10.0).reshape(2, 5), axes=1))


@pytest.mark.parametrize("i,op", list(enumerate(OPS)))
def test_gradcheck_and_gradgradcheck_complex128(i, op):
    """Each transform on its own, complex128 inputs (float64 for rfft, ihfft), complex or real outputs: gradcheck
    and gradgradcheck (real and imaginary parts perturbed, both output parts checked), n and norm in turn."""
    rng = np.random.default_rng(20 + i)
    n = (None, 4, 9)[i % 3]
    norm = (None, "ortho", "forward")[i % 3]
    v = rng.standard_normal((2, 5))
    if op not in ("rfft", "ihfft"):
        v = v + 1j * rng.standard_normal((2, 5))
    x = ag.tensor(v, requires_grad=True)

    def f(t):
        return getattr(ag.fft, op)(t, n=n, norm=norm)

    assert ag.gradcheck(f, (x,))
    assert ag.gradgradcheck(f, (x,))


ND = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")


@pytest.mark.parametrize("op", ND)
def test_nd_values_match_torch(op):
    """The n-d and 2-d forms: default dims, chosen dims with s (cut, pad), the last two dims with s."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    v = rng.standard_normal((3, 4, 5))
    if op.startswith(("i", "h")) and op not in ("ihfftn", "ihfft2") or op in ("fftn", "fft2"):
        v = v + 1j * rng.standard_normal(v.shape)
    for kw in ({}, {"s": (3, 6), "dim": (0, 2), "norm": "ortho"}, {"s": (4, 4), "norm": "forward"}):
        got = getattr(ag.fft, op)(ag.tensor(v), **kw).numpy()
        want = getattr(torch.fft, op)(torch.tensor(v), **kw).resolve_conj().numpy()
        assert got.shape == want.shape, (op, kw)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{op} {kw}")


@pytest.mark.parametrize("op", ["fftn", "ifftn", "irfftn", "fft2", "hfftn"])
def test_nd_gradcheck_complex128(op):
    x = ag.tensor(np.random.default_rng(1).standard_normal((3, 4)) * (1 + 0.5j), requires_grad=True)
    assert ag.gradcheck(lambda t: getattr(ag.fft, op)(t, s=(4, 3), norm="ortho"), (x,))


def test_complex_leaf_vjps_match_torch():
    """Complex leaves (irfft ignores the imaginary parts of the zero and Nyquist terms: no gradient there)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    v = rng.standard_normal((2, 6)) + 1j * rng.standard_normal((2, 6))
    for op, n, m in (("fft", 8, 8), ("ifft", 4, 4), ("irfft", 10, 10), ("hfft", 7, 7)):
        g = rng.standard_normal((2, m)) + (0 if op in COMPLEX_IN else 1j * rng.standard_normal((2, m)))
        x = ag.tensor(v, requires_grad=True)
        getattr(ag.fft, op)(x, n=n).backward(ag.tensor(g))
        xt = torch.tensor(v, requires_grad=True)
        getattr(torch.fft, op)(xt, n=n).backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.resolve_conj().numpy(), rtol=0, atol=1e-13, err_msg=op)


def test_namespace_holds_only_torch_fft_names():
    names = {"fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "rfft", "irfft", "rfftn", "irfftn", "rfft2", "irfft2",
             "hfft", "ihfft", "hfftn", "ihfftn", "hfft2", "ihfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    assert set(ag.fft.__all__) == names
    assert {n for n in dir(ag.fft) if not n.startswith("_")} == names  # no helper (tk, Tensor, Node) as API
    x = ag.randn(6, dtype=ag.float64, requires_grad=True)
    assert ag.fft.rfft(x).grad_fn.name() == "FftBackward"
