"""Gamma, Beta, Dirichlet, LogNormal, TransformedDistribution: densities, moments and entropies against SciPy;
samples by Kolmogorov-Smirnov; the reparameterized gradients against the derivatives of the means; KL against
numerical integration; gammainc against SciPy; cpu and interpreted cuda; PyTorch when importable."""

import numpy as np
import pytest
from scipy import integrate, special, stats

import autograd as ag
from autograd.distributions._gamma_math import gammainc

D = ag.distributions
T = lambda *a: ag.tensor(np.asarray(a, dtype=np.float64))  # noqa: E731


def _n(t):
    return t.detach().cpu().numpy()


def test_densities_moments_entropies_match_scipy():
    x = np.array([0.05, 0.7, 2.5, 9.0])
    g = D.Gamma(T(0.4, 1.0, 2.5, 7.0), T(1.5, 0.5, 2.0, 1.0))
    ref = stats.gamma(_n(g.concentration), scale=1 / _n(g.rate))
    np.testing.assert_allclose(_n(g.log_prob(T(*x))), ref.logpdf(x), rtol=1e-10)
    np.testing.assert_allclose(_n(g.entropy()), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(_n(g.mean), ref.mean()), np.testing.assert_allclose(_n(g.variance), ref.var())
    np.testing.assert_allclose(_n(g.cdf(T(*x))), ref.cdf(x), rtol=1e-10)
    b = D.Beta(T(0.5, 2.0, 3.0), T(0.7, 5.0, 1.0))
    ref = stats.beta(_n(b.concentration1), _n(b.concentration0))
    xb = np.array([0.1, 0.3, 0.95])
    np.testing.assert_allclose(_n(b.log_prob(T(*xb))), ref.logpdf(xb), rtol=1e-10)
    np.testing.assert_allclose(_n(b.entropy()), ref.entropy(), rtol=1e-9)
    np.testing.assert_allclose(_n(b.mean), ref.mean()), np.testing.assert_allclose(_n(b.variance), ref.var())
    c = np.array([0.5, 2.0, 3.5])
    d = D.Dirichlet(ag.tensor(c))
    v = np.array([0.2, 0.3, 0.5])
    assert d.event_shape == (3,) and d.batch_shape == ()
    np.testing.assert_allclose(d.log_prob(ag.tensor(v)).item(), stats.dirichlet(c).logpdf(v), rtol=1e-10)
    np.testing.assert_allclose(d.entropy().item(), stats.dirichlet(c).entropy(), rtol=1e-10)
    np.testing.assert_allclose(_n(d.mean), stats.dirichlet(c).mean()), np.testing.assert_allclose(
        _n(d.variance), stats.dirichlet(c).var())
    ln = D.LogNormal(T(0.3), T(0.8))
    ref = stats.lognorm(0.8, scale=np.exp(0.3))
    np.testing.assert_allclose(_n(ln.log_prob(T(0.5, 2.0))), ref.logpdf([0.5, 2.0]), rtol=1e-10)
    np.testing.assert_allclose(ln.entropy().item(), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(ln.mean.item(), ref.mean()), np.testing.assert_allclose(ln.variance.item(), ref.var())


def test_gammainc_matches_scipy():
    a = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 150.0, 199.0, 0.5, 40.0])
    z = np.array([0.01, 0.5, 3.0, 0.2, 40.0, 35.0, 140.0, 260.0, 0.0, 1e-3])
    np.testing.assert_allclose(_n(gammainc(ag.tensor(a), ag.tensor(z))), special.gammainc(a, z), rtol=1e-10,
                               atol=1e-14)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_samples_follow_the_law(device):
    ag.manual_seed(0)
    n = 4000 if device == "cuda" else 20000
    for a in (0.4, 2.5):
        s = _n(D.Gamma(ag.tensor(a, device=device), ag.tensor(2.0, device=device)).sample((n,)))
        assert s.min() > 0 and stats.kstest(s, stats.gamma(a, scale=0.5).cdf).pvalue > 1e-3
    s = _n(D.Beta(ag.tensor(2.0, device=device), ag.tensor(0.6, device=device)).sample((n,)))
    assert stats.kstest(s, stats.beta(2.0, 0.6).cdf).pvalue > 1e-3
    c = np.array([0.5, 2.0, 3.5])
    s = _n(D.Dirichlet(ag.tensor(c, device=device)).sample((n,)))
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(s.mean(0), stats.dirichlet(c).mean(), atol=0.02)
    s = _n(D.LogNormal(ag.tensor(0.3, device=device), ag.tensor(0.8, device=device)).sample((n,)))
    assert stats.kstest(s, stats.lognorm(0.8, scale=np.exp(0.3)).cdf).pvalue > 1e-3


def test_rsample_gradients_are_the_derivatives_of_the_means():
    ag.manual_seed(1)
    a = ag.tensor(2.5, dtype=ag.float64, requires_grad=True)
    r = ag.tensor(2.0, dtype=ag.float64, requires_grad=True)
    D.Gamma(a, r).rsample((40000,)).mean().backward()  # E = a / r
    np.testing.assert_allclose([a.grad.item(), r.grad.item()], [1 / 2.0, -2.5 / 4.0], rtol=0.03)
    a = ag.tensor([0.3, 150.0, 400.0], dtype=ag.float64, requires_grad=True)
    D.Gamma(a, 1.0).rsample((20000,)).mean(0).sum().backward()  # small a (boosted), large a (the approximation)
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0, 1.0], rtol=0.03)
    c1 = ag.tensor(2.0, dtype=ag.float64, requires_grad=True)
    c0 = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    D.Beta(c1, c0).rsample((40000,)).mean().backward()  # E = c1 / (c1 + c0)
    np.testing.assert_allclose([c1.grad.item(), c0.grad.item()], [3 / 25, -2 / 25], rtol=0.05)
    c = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    D.Dirichlet(c).rsample((40000,)).mean(0)[0].backward()  # E_0 = c_0 / sum(c)
    np.testing.assert_allclose(c.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    x = ag.tensor(1.0, dtype=ag.float64, requires_grad=True)
    D.LogNormal(x, 0.5).rsample((20000,)).mean().backward()  # E = exp(mu + s^2 / 2)
    np.testing.assert_allclose(x.grad.item(), np.exp(1.0 + 0.125), rtol=0.03)


def test_kl_divergences_match_integration():
    p, q = D.Gamma(T(2.0), T(1.5)), D.Gamma(T(3.0), T(0.7))
    f = lambda x: stats.gamma(2.0, scale=1 / 1.5).pdf(x) * (stats.gamma(2.0, scale=1 / 1.5).logpdf(x)  # noqa: E731
                                                              - stats.gamma(3.0, scale=1 / 0.7).logpdf(x))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), integrate.quad(f, 0, np.inf)[0], rtol=1e-7)
    p, q = D.Beta(T(2.0), T(3.0)), D.Beta(T(0.8), T(1.7))
    f = lambda x: stats.beta(2, 3).pdf(x) * (stats.beta(2, 3).logpdf(x) - stats.beta(0.8, 1.7).logpdf(x))  # noqa: E731
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), integrate.quad(f, 0, 1)[0], rtol=1e-7)
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.5])
    ag.manual_seed(2)
    p, q = D.Dirichlet(ag.tensor(a)), D.Dirichlet(ag.tensor(b))
    s = p.sample((40000,))
    mc = (p.log_prob(s) - q.log_prob(s)).mean().item()
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), mc, rtol=0.03)


def test_transformed_distribution_and_transforms():
    T_ = D.transforms
    base = D.Normal(T(0.0), T(1.0))
    d = D.TransformedDistribution(base, [T_.AffineTransform(1.0, 2.0), T_.SigmoidTransform()])
    y = T(0.3, 0.9)
    x = (np.log(_n(y) / (1 - _n(y))) - 1.0) / 2.0  # the inverse of sigmoid(1 + 2x)
    want = stats.norm.logpdf(x) - np.log(2.0) - np.log(_n(y) * (1 - _n(y)))
    np.testing.assert_allclose(_n(d.log_prob(y)), want, rtol=1e-10)
    z = ag.tensor([-2.0, 0.5, 3.0], dtype=ag.float64)
    t = T_.TanhTransform()
    np.testing.assert_allclose(_n(t.log_abs_det_jacobian(z, t(z))), np.log(1 - np.tanh(_n(z)) ** 2), rtol=1e-10)
    np.testing.assert_allclose(_n(t.inv(t(z))), _n(z), rtol=1e-12)
    assert d.has_rsample and 0 < d.rsample((5,)).min().item() < 1


@pytest.mark.parametrize("device", ["cuda"])
def test_cuda_log_probs_equal_cpu(device):
    c = np.array([[0.5, 2.0, 3.5], [1.0, 1.0, 1.0]])
    v = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    for make, val in ((lambda dev: D.Dirichlet(ag.tensor(c, device=dev)), v),
                      (lambda dev: D.Gamma(ag.tensor(c, device=dev), 2.0), v * 3),
                      (lambda dev: D.Beta(ag.tensor(c, device=dev), 1.5), v)):
        cpu = _n(make("cpu").log_prob(ag.tensor(val)))
        gpu = _n(make(device).log_prob(ag.tensor(val, device=device)))
        np.testing.assert_allclose(gpu, cpu, rtol=1e-10)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    c, r, x = [0.4, 2.5], [1.5, 0.5], [0.7, 3.0]
    np.testing.assert_allclose(_n(D.Gamma(T(*c), T(*r)).log_prob(T(*x))),
                               td.Gamma(torch.tensor(c, dtype=torch.float64), torch.tensor(r, dtype=torch.float64)
                                        ).log_prob(torch.tensor(x, dtype=torch.float64)).numpy(), rtol=1e-10)
    p = td.Dirichlet(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    q = td.Dirichlet(torch.tensor([2.0, 2.0, 0.5], dtype=torch.float64))
    np.testing.assert_allclose(D.kl_divergence(D.Dirichlet(T(1.0, 2.0, 3.0)), D.Dirichlet(T(2.0, 2.0, 0.5))).item(),
                               td.kl_divergence(p, q).item(), rtol=1e-10)
    np.testing.assert_allclose(D.Beta(T(2.0), T(3.0)).entropy().item(),
                               td.Beta(torch.tensor(2.0, dtype=torch.float64),
                                       torch.tensor(3.0, dtype=torch.float64)).entropy().item(), rtol=1e-10)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_poisson_samples_and_log_prob(device):
    ag.manual_seed(3)
    n = 6000 if device == "cuda" else 30000
    for lam in (0.3, 4.0, 9.9, 10.0, 37.5, 1000.0):  # both samplers, and the switch between them
        s = _n(D.Poisson(ag.tensor(lam, device=device)).sample((n,)))
        assert (s == np.floor(s)).all() and s.min() >= 0
        ks = np.arange(int(lam + 10 * np.sqrt(lam) + 10))
        obs = np.bincount(s.astype(int), minlength=len(ks))[:len(ks)]
        exp_ = stats.poisson(lam).pmf(ks) * n
        m = exp_ > 5
        chi = ((obs[m] - exp_[m]) ** 2 / exp_[m]).sum()
        assert stats.chi2.sf(chi, m.sum() - 1) > 1e-3, (lam, chi)
    assert _n(D.Poisson(ag.tensor(0.0, device=device)).sample((5,))).tolist() == [0.0] * 5
    p = D.Poisson(ag.tensor([2.0, 30.0], dtype=ag.float64, device=device))
    np.testing.assert_allclose(_n(p.log_prob(ag.tensor([3.0, 25.0], dtype=ag.float64, device=device))),
                               stats.poisson([2, 30]).logpmf([3, 25]), rtol=1e-12)
    with pytest.raises(ValueError, match="support"):
        p.log_prob(ag.tensor([1.5, 2.0], dtype=ag.float64, device=device))
