"""Complex input to logsumexp, var/std, lerp and dist (torch supports their complex autograd): values against
NumPy (torch when importable), gradcheck on complex128; logsumexp of complex input is complex (it was cast to
the default float, dropping the imaginary part)."""

import numpy as np
import pytest

import autograd as ag

rng = np.random.default_rng(7)
A = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
B = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))


def _t(a):
    return ag.tensor(a, dtype=ag.complex128, requires_grad=True)


def test_logsumexp_is_complex_and_stable():
    big = A.copy()
    big[1] += 800  # exp overflows without the shift by the largest real part
    got = ag.logsumexp(ag.tensor(big), 1)
    want = np.array([np.log(np.exp(big[i] - big[i].real.max()).sum()) + big[i].real.max() for i in range(3)])
    assert got.dtype == ag.complex128
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(ag.logsumexp(ag.tensor(A), (0, 1), keepdim=True).numpy(),
                               np.log(np.exp(A).sum(keepdims=True)), rtol=1e-12)
    assert ag.gradcheck(lambda x: ag.logsumexp(x, 1), [_t(A)])
    assert ag.gradcheck(lambda x: ag.logsumexp(x, (0, 1)), [_t(A)])


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_of_complex_are_real(correction):
    v = ag.var(ag.tensor(A), 1, correction=correction)
    s = ag.std(ag.tensor(A), 0, correction=correction, keepdim=True)
    assert v.dtype == ag.float64 and s.dtype == ag.float64 and s.shape == (1, 5)
    np.testing.assert_allclose(v.numpy(), np.var(A, 1, ddof=correction), rtol=1e-12)
    np.testing.assert_allclose(s.numpy(), np.std(A, 0, ddof=correction, keepdims=True), rtol=1e-12)
    assert ag.gradcheck(lambda x: ag.var(x, 1, correction=correction), [_t(A)])
    assert ag.gradcheck(lambda x: ag.std(x, 0, correction=correction), [_t(A)])


def test_lerp_and_dist():
    np.testing.assert_allclose(ag.lerp(ag.tensor(A), ag.tensor(B), 0.3).numpy(), A + 0.3 * (B - A), rtol=1e-12)
    w = 0.25 - 0.5j
    np.testing.assert_allclose(ag.lerp(ag.tensor(A), ag.tensor(B), ag.tensor(w)).numpy(), A + w * (B - A),
                               rtol=1e-12)
    assert ag.gradcheck(lambda x, y: ag.lerp(x, y, 0.3), [_t(A), _t(B)])
    for p in (2, 1, 3, np.inf):
        np.testing.assert_allclose(ag.dist(ag.tensor(A), ag.tensor(B), p).numpy(),
                                   np.linalg.norm((A - B).reshape(-1), p), rtol=1e-12)
        np.testing.assert_allclose(ag.tensor(A.real).dist(ag.tensor(B.real[0]), p).numpy(),
                                   np.linalg.norm((A.real - B.real[0]).reshape(-1), p), rtol=1e-12)
    assert ag.gradcheck(lambda x, y: ag.dist(x, y), [_t(A), _t(B)])


def test_torch_reference():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((lambda x: ag.logsumexp(x, 1), lambda x: torch.logsumexp(x, 1)),
                         (lambda x: ag.var(x, 1), lambda x: torch.var(x, 1)),
                         (lambda x: ag.std(x, 0), lambda x: torch.std(x, 0)),
                         (lambda x: ag.lerp(x, x * 2j, 0.3), lambda x: torch.lerp(x, x * 2j, 0.3)),
                         (lambda x: ag.dist(x, x.conj()), lambda x: torch.dist(x, x.conj()))):
        x, xt = _t(A), torch.tensor(A, requires_grad=True)
        y, yt = ours(x), theirs(xt)
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
        (y.abs() if y.dtype == ag.complex128 else y).sum().backward()
        (yt.abs() if yt.is_complex() else yt).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


IDX = np.array([[0, 2], [1, 0]])
MORE = {  # the rest of the audit (tests/ARRAY_API.md) not in tests/autograd/test_complex.py's tables
    "exp2": (lambda x: ag.exp2(x), [A]),
    "sinc": (lambda x: ag.sinc(x), [A]),
    "conj_physical": (lambda x: ag.conj_physical(x), [A]),
    "addcmul": (lambda x, y: ag.addcmul(x, x, y, value=0.5), [A, B]),
    "addcdiv": (lambda x, y: ag.addcdiv(x, x, y), [A, B]),
    "scatter_add": (lambda x, s: ag.scatter_add(x, 1, ag.tensor(IDX), s), [A[:2], B[:2, :2]]),
    "take_along_dim": (lambda x: ag.take_along_dim(x, ag.tensor(IDX), 1), [A[:2]]),
    "unfold": (lambda x: x.unfold(1, 2, 1), [A]),
    "cross": (lambda x, y: ag.linalg.cross(x, y), [A[:, :3], B[:, :3]]),
    "vdot": (lambda x, y: ag.vdot(x, y), [A[0], B[0]]),
}


@pytest.mark.parametrize("name", list(MORE))
def test_gradcheck_more_ops(name):
    fn, args = MORE[name]
    assert ag.gradcheck(fn, [_t(a) for a in args], raise_exception=True)
