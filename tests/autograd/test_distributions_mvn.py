"""``distributions.MultivariateNormal`` (and the differentiable ``linalg.cholesky`` / ``solve_triangular`` it is
built on): log_prob / entropy vs SciPy for the three parametrizations, batch broadcasting, sample moments on cpu
and interpreted cuda, KL vs its closed form in NumPy, gradcheck, validation, torch 2.13."""

import numpy as np
import pytest
from scipy import stats

import autograd as ag
import autograd.distributions as D  # noqa: N812 - torch.distributions as D

F64 = ag.float64
RNG = np.random.default_rng(6)


def _spd(k, batch=()):
    m = RNG.standard_normal(batch + (k, k))
    return m @ np.swapaxes(m, -1, -2) + k * np.eye(k)


def _n(t):
    return t.detach().cpu().numpy()


def test_parametrizations_log_prob_entropy_match_scipy():
    k = 3
    cov = _spd(k, (2,))
    loc = RNG.standard_normal((2, k))
    x = RNG.standard_normal((4, 2, k))
    L = np.linalg.cholesky(cov)
    dists = [D.MultivariateNormal(ag.tensor(loc), covariance_matrix=ag.tensor(cov)),
             D.MultivariateNormal(ag.tensor(loc), precision_matrix=ag.tensor(np.linalg.inv(cov))),
             D.MultivariateNormal(ag.tensor(loc), scale_tril=ag.tensor(L))]
    ref = np.stack([stats.multivariate_normal(loc[b], cov[b]).logpdf(x[:, b]) for b in range(2)], 1)
    ent = [stats.multivariate_normal(loc[b], cov[b]).entropy() for b in range(2)]
    for d in dists:
        assert d.batch_shape == (2,) and d.event_shape == (k,)
        np.testing.assert_allclose(_n(d.log_prob(ag.tensor(x))), ref, rtol=1e-10)
        np.testing.assert_allclose(_n(d.entropy()), ent, rtol=1e-10)
        np.testing.assert_allclose(_n(d.scale_tril), L, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_n(d.covariance_matrix), cov, rtol=1e-10)
        np.testing.assert_allclose(_n(d.precision_matrix), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_n(d.variance), np.diagonal(cov, axis1=-2, axis2=-1), rtol=1e-10)
        np.testing.assert_array_equal(_n(d.mean), loc)
    b = D.MultivariateNormal(ag.tensor(np.zeros(k)), covariance_matrix=ag.tensor(cov))  # loc broadcast over batch
    assert b.batch_shape == (2,) and b.loc.shape == (2, k)


def test_kl_matches_the_closed_form_and_gradcheck():
    k = 3
    c1, c2 = _spd(k), _spd(k)
    m1, m2 = RNG.standard_normal(k), RNG.standard_normal(k)
    p = D.MultivariateNormal(ag.tensor(m1), covariance_matrix=ag.tensor(c1))
    q = D.MultivariateNormal(ag.tensor(m2), scale_tril=ag.tensor(np.linalg.cholesky(c2)))
    inv = np.linalg.inv(c2)
    want = 0.5 * (np.trace(inv @ c1) + (m2 - m1) @ inv @ (m2 - m1) - k + np.log(np.linalg.det(c2) /
                                                                                np.linalg.det(c1)))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), want, rtol=1e-10)
    assert abs(D.kl_divergence(p, p).item()) < 1e-12
    x = ag.tensor(RNG.standard_normal((2, k)))
    loc = ag.tensor(m1, requires_grad=True)
    a = ag.tensor(RNG.standard_normal((k, k)), requires_grad=True)
    assert ag.gradcheck(lambda loc, a: D.MultivariateNormal(loc, covariance_matrix=a @ a.mT + 3 * ag.eye(k, dtype=F64))
                        .log_prob(x), (loc, a))
    tril = ag.tensor(np.linalg.cholesky(c1), requires_grad=True)
    assert ag.gradcheck(lambda t: D.MultivariateNormal(loc.detach(), scale_tril=t.tril()).entropy(), (tril,))
    assert ag.gradcheck(lambda m, t: D.kl_divergence(D.MultivariateNormal(m, scale_tril=t.tril()), q), (loc, tril))
    ag.manual_seed(0)
    s = D.MultivariateNormal(loc, scale_tril=tril).rsample((5,))
    s.sum().backward()  # d sum(loc + L eps) / d loc = number of draws
    np.testing.assert_allclose(loc.grad.numpy(), [5.0] * k)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_samples_have_the_moments(device):
    ag.manual_seed(2)
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    loc = np.array([1.0, -2.0, 0.5])
    d = D.MultivariateNormal(ag.tensor(loc, device=device), covariance_matrix=ag.tensor(cov, device=device))
    n = 20000 if device == "cpu" else 4000  # (interpreted cuda: slow)
    s = _n(d.sample((n,)))
    assert s.shape == (n, 3)
    np.testing.assert_allclose(s.mean(0), loc, atol=4 * np.sqrt(cov.diagonal().max() / n))
    np.testing.assert_allclose(np.cov(s.T), cov, atol=8.5 / np.sqrt(n))  # (~4 standard errors of the largest)
    cpu = D.MultivariateNormal(ag.tensor(loc), covariance_matrix=ag.tensor(cov))
    x = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(_n(d.log_prob(ag.tensor(x, device=device))), _n(cpu.log_prob(ag.tensor(x))),
                               rtol=1e-12)


def test_validation():
    loc = ag.tensor([0.0, 0.0], dtype=F64)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.MultivariateNormal(loc)
    with pytest.raises(ValueError, match="covariance_matrix"):
        D.MultivariateNormal(loc, covariance_matrix=ag.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=F64))
    with pytest.raises(ValueError, match="scale_tril"):
        D.MultivariateNormal(loc, scale_tril=ag.tensor([[1.0, 1.0], [0.0, 1.0]], dtype=F64))
    with pytest.raises(ValueError, match="does not fit loc"):
        D.MultivariateNormal(loc, covariance_matrix=ag.eye(3, dtype=F64))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    cov, loc, x = _spd(3), RNG.standard_normal(3), RNG.standard_normal((4, 3))
    ours = D.MultivariateNormal(ag.tensor(loc), precision_matrix=ag.tensor(np.linalg.inv(cov)))
    TD = torch.distributions  # noqa: N806
    theirs = TD.MultivariateNormal(torch.tensor(loc), precision_matrix=torch.tensor(np.linalg.inv(cov)))
    np.testing.assert_allclose(_n(ours.log_prob(ag.tensor(x))), theirs.log_prob(torch.tensor(x)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(_n(ours.scale_tril), theirs.scale_tril.numpy(), rtol=1e-10, atol=1e-12)
    other = TD.MultivariateNormal(torch.zeros(3, dtype=torch.float64), torch.eye(3, dtype=torch.float64))
    kl = TD.kl_divergence(theirs, other).item()
    np.testing.assert_allclose(D.kl_divergence(ours, D.MultivariateNormal(ag.zeros(3, dtype=F64),
                                                                          ag.eye(3, dtype=F64))).item(), kl, rtol=1e-10)


def test_cholesky_and_solve_triangular_are_differentiable():
    a = ag.tensor(_spd(3, (2,)), requires_grad=True)
    for upper in (False, True):
        f = lambda a, up=upper: ag.linalg.cholesky(0.5 * (a + a.mT), upper=up)  # noqa: E731
        np.testing.assert_allclose(_n(f(a)), np.linalg.cholesky(_n(a)) if not upper else
                                   np.swapaxes(np.linalg.cholesky(_n(a)), -1, -2), rtol=1e-12)
        assert ag.gradcheck(f, (a,))
    assert ag.gradgradcheck(lambda a: ag.linalg.cholesky(0.5 * (a + a.mT)), (a[0].detach().requires_grad_(),))
    t = ag.tensor(np.tril(RNG.standard_normal((3, 3))) + 3 * np.eye(3), requires_grad=True)
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                b = ag.tensor(RNG.standard_normal((2, 3, 2) if left else (2, 2, 3)), requires_grad=True)
                tt = t.mT if upper else t
                x = ag.linalg.solve_triangular(tt, b, upper=upper, left=left, unitriangular=unit)
                m = _n(tt)
                m = (np.triu(m, 1) if upper else np.tril(m, -1)) + np.eye(3) if unit else m
                want = np.linalg.solve(m, _n(b)) if left else np.swapaxes(
                    np.linalg.solve(m.T, np.swapaxes(_n(b), -1, -2)), -1, -2)
                np.testing.assert_allclose(_n(x), want, rtol=1e-10, atol=1e-12)
                if upper == left or unit:  # (gradcheck on half the combinations: every flag both ways)
                    assert ag.gradcheck(lambda a, b, up=upper, lf=left, un=unit: ag.linalg.solve_triangular(
                        a.mT if up else a, b, upper=up, left=lf, unitriangular=un), (t, b))
