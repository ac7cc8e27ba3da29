"""``distributions.Binomial``: chi-square tests of samples (both samplers, the flip at p > 1/2, the edges) on cpu
and interpreted cuda, log_prob / entropy / moments vs SciPy, validation, gradcheck of log_prob, torch 2.13."""

import numpy as np
import pytest
from scipy import stats

import autograd as ag
import autograd.distributions as D  # noqa: N812 - torch.distributions as D

F64 = ag.float64


def _n(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_samples_follow_the_law(device):
    ag.manual_seed(5)
    if device == "cpu":
        size, cases = 10000, [(7, 0.3), (30, 0.2), (19, 0.52), (40, 0.25), (200, 0.5), (1000, 0.97), (50000, 0.001)]
    else:  # (interpreted: slow) one lane per sampler, the flipped one too
        size, cases = 500, [(9, 0.3), (60, 0.7)]
    ns = ag.tensor([float(n) for n, _ in cases], device=device)
    ps = ag.tensor([p for _, p in cases], dtype=F64, device=device)
    s = _n(D.Binomial(ns, ps).sample((size,)))  # one batch: every lane picks its own sampler
    assert s.shape == (size, len(cases)) and s.dtype == np.float64 and (s == np.floor(s)).all()
    for j, (n, p) in enumerate(cases):
        assert 0 <= s[:, j].min() and s[:, j].max() <= n
        ks = np.arange(n + 1)
        obs = np.bincount(s[:, j].astype(int), minlength=n + 1)
        exp_ = stats.binom(n, p).pmf(ks) * size
        m = exp_ > 5
        chi = ((obs[m] - exp_[m]) ** 2 / exp_[m]).sum() + (obs[~m].sum() - exp_[~m].sum()) ** 2 / max(
            exp_[~m].sum(), 1.0)
        assert stats.chi2.sf(chi, m.sum()) > 1e-3, (n, p, chi)
    edge = D.Binomial(ag.tensor([0.0, 5.0, 5.0], device=device), ag.tensor([0.4, 0.0, 1.0], device=device))
    assert _n(edge.sample((3,))).tolist() == [[0.0, 0.0, 5.0]] * 3
    assert D.Binomial(10, logits=ag.tensor([[0.0], [1.0]], device=device)).sample((2,)).shape == (2, 2, 1)


def test_log_prob_entropy_moments_match_scipy():
    n = np.array([[3.0, 10.0, 40.0]])
    p = np.array([[0.2], [0.7]])
    k = np.array([[1.0, 7.0, 0.0], [3.0, 10.0, 25.0]])
    ref = stats.binom(n, p)
    for d in (D.Binomial(ag.tensor(n), ag.tensor(p)), D.Binomial(ag.tensor(n), logits=ag.tensor(np.log(p / (1 - p))))):
        np.testing.assert_allclose(_n(d.log_prob(ag.tensor(k))), ref.logpmf(k), rtol=1e-10)
        np.testing.assert_allclose(_n(d.mean), ref.mean(), rtol=1e-12)
        np.testing.assert_allclose(_n(d.variance), ref.var(), rtol=1e-12)
        np.testing.assert_allclose(_n(d.mode), np.minimum(np.floor((n + 1) * p), n))
    extreme = D.Binomial(ag.tensor(5.0, dtype=F64), logits=ag.tensor([-800.0, 800.0], dtype=F64))
    np.testing.assert_allclose(_n(extreme.log_prob(ag.tensor([0.0, 5.0], dtype=F64))), [0.0, 0.0], atol=1e-12)
    d = D.Binomial(12, ag.tensor([0.1, 0.5, 0.93], dtype=F64))
    np.testing.assert_allclose(_n(d.entropy()), stats.binom(12, [0.1, 0.5, 0.93]).entropy(), rtol=1e-10)
    assert _n(d.enumerate_support()).shape == (13, 3) and _n(d.enumerate_support(False)).shape == (13, 1)
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `entropy`"):
        D.Binomial(ag.tensor([2.0, 3.0]), ag.tensor(0.5)).entropy()


def test_validation_and_gradcheck():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        D.Binomial(3)
    with pytest.raises(ValueError, match="total_count"):
        D.Binomial(ag.tensor(2.5), ag.tensor(0.5))
    with pytest.raises(ValueError, match="probs"):
        D.Binomial(3, ag.tensor(1.5))
    d = D.Binomial(ag.tensor([3.0, 4.0]), ag.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="support"):
        d.log_prob(ag.tensor([4.0, 1.0]))
    assert repr(d.support).startswith("IntegerInterval(lower_bound=0")
    k = ag.tensor([1.0, 3.0, 0.0], dtype=F64)
    n = ag.tensor([2.0, 6.0, 1.0], dtype=F64)
    assert ag.gradcheck(lambda p: D.Binomial(n, p).log_prob(k), (ag.tensor([0.3, 0.6, 0.8], dtype=F64,
                                                                           requires_grad=True),))
    lg = ag.tensor([-1.0, 0.4, 2.0], dtype=F64, requires_grad=True)
    assert ag.gradgradcheck(lambda lg: D.Binomial(n, logits=lg).log_prob(k), (lg,))


def test_cuda_log_prob_and_entropy_equal_cpu():
    args = (ag.tensor([9.0, 9.0]), ag.tensor([0.25, 0.8], dtype=F64))
    k = ag.tensor([2.0, 9.0], dtype=F64)
    cpu = D.Binomial(*args)
    gpu = D.Binomial(*(a.to("cuda") for a in args))
    np.testing.assert_allclose(_n(gpu.log_prob(k.to("cuda"))), _n(cpu.log_prob(k)), rtol=1e-12)
    np.testing.assert_allclose(_n(gpu.entropy()), _n(cpu.entropy()), rtol=1e-12)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    n, p, k = [3.0, 10.0, 40.0], [0.2, 0.7, 0.5], [1.0, 7.0, 22.0]
    ours = D.Binomial(ag.tensor(n, dtype=F64), ag.tensor(p, dtype=F64))
    theirs = torch.distributions.Binomial(torch.tensor(n, dtype=torch.float64), torch.tensor(p, dtype=torch.float64))
    np.testing.assert_allclose(_n(ours.log_prob(ag.tensor(k, dtype=F64))),
                               theirs.log_prob(torch.tensor(k, dtype=torch.float64)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(_n(ours.logits), theirs.logits.numpy(), rtol=1e-12)
    e = torch.distributions.Binomial(8, torch.tensor(p, dtype=torch.float64)).entropy().numpy()
    np.testing.assert_allclose(_n(D.Binomial(8, ag.tensor(p, dtype=F64)).entropy()), e, rtol=1e-12)
