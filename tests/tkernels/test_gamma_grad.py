"""``tkernels.ops.standard_gamma_grad`` (the Gamma rsample backward, one kernel launch on cuda): equal to the
composite it replaced (a transcription of the former autograd formula, ~2,000 launches on cuda) on cpu and
interpreted cuda, to SciPy's ``-d gammainc/da / pdf`` where the central difference is accurate, and on the
Wilson-Hilferty branch above a = 200; bad input refused."""

import numpy as np
import pytest
from scipy import special, stats

import autograd as ag
import tkernels as tk


def _composite(a, z):
    """The former autograd implementation (autograd/distributions/_gamma_math.py before the kernel)."""
    from autograd.distributions._gamma_math import gammainc
    from autograd.ops import clamp, exp, lgamma, log, sqrt, where

    h = clamp(1e-5 * clamp(a, min=1.0), max=a * 0.5)
    dp = (gammainc(a + h, z) - gammainc(a - h, z)) / (2.0 * h)
    logp = (a - 1.0) * log(clamp(z, min=1e-300)) - z - lgamma(a)
    exact = -dp / clamp(exp(logp), min=1e-300)
    e = 3.0 * sqrt(a) * ((z / a) ** (1.0 / 3.0) - 1.0 + 1.0 / (9.0 * a))
    w = 1.0 - 1.0 / (9.0 * a) + e / (3.0 * sqrt(a))
    dw = 1.0 / (9.0 * a * a) - e / (6.0 * a ** 1.5)
    return where(a > 200.0, w ** 3 + 3.0 * a * w * w * dw, exact)


def _cases(rng):
    a = np.concatenate([[0.05, 0.5, 1.0, 3.7, 30.0, 199.0, 250.0, 1e4], rng.uniform(0.1, 60.0, 29)])
    z = np.array([stats.gamma(x).ppf(q) for x, q in zip(a, rng.uniform(0.02, 0.98, a.size))])
    return a.reshape(37, 1), z.reshape(37, 1)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_equals_the_composite_and_scipy(device, monkeypatch):
    a, z = _cases(np.random.default_rng(4))
    A, Z = (ag.tensor(v, dtype=ag.float64, device=device) for v in (a, z))
    launches = []
    if device == "cuda":
        from tkernels.backends.triton import ops_distributions as backend

        real = backend.launch
        monkeypatch.setattr(backend, "launch", lambda k, g, *args, **m: (launches.append(k), real(k, g, *args, **m)))
    got = tk.ops.standard_gamma_grad(A._data, Z._data).numpy() if device == "cpu" else \
        tk.to_device(tk.ops.standard_gamma_grad(A._data, Z._data), "cpu").numpy()
    assert got.shape == (37, 1) and got.dtype == np.float64
    assert len(launches) == (1 if device == "cuda" else 0)
    ref = _composite(ag.tensor(a), ag.tensor(z)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    exact = a <= 200
    h = 1e-6 * np.maximum(a, 1.0)
    sp = -(special.gammainc(a + h, z) - special.gammainc(a - h, z)) / (2 * h) / stats.gamma(a).pdf(z)
    np.testing.assert_allclose(got[exact], sp[exact], rtol=2e-4)
    np.testing.assert_allclose(got[~exact], sp[~exact], rtol=2e-2)  # (the approximation's error at a >= 250)


def test_rsample_backward_uses_it_and_bad_input_is_refused():
    a = ag.tensor([0.7, 4.0], dtype=ag.float64, requires_grad=True)
    ag.manual_seed(0)
    z = ag.distributions.Gamma(a, 1.0).rsample()
    z.sum().backward()
    want = tk.ops.standard_gamma_grad(a.detach()._data, z.detach()._data).numpy()
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-12)
    empty = tk.ops.standard_gamma_grad(tk.zeros((0, 3), dtype=tk.float64), tk.zeros((0, 3), dtype=tk.float64))
    assert empty.shape == (0, 3)
    with pytest.raises(TypeError, match="standard_gamma_grad: a must be float64"):
        tk.ops.standard_gamma_grad(tk.ones(3, dtype=tk.float32), tk.ones(3, dtype=tk.float32))
    with pytest.raises(ValueError, match="standard_gamma_grad: a and z must have one shape"):
        tk.ops.standard_gamma_grad(tk.ones(3, dtype=tk.float64), tk.ones(2, dtype=tk.float64))
