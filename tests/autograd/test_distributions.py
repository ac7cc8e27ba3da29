"""autograd.distributions (issue 15, item 5, the part without log-gamma): log_prob, cdf, entropy, mean and
variance against scipy.stats; sample shapes and moments; reparameterized gradients (gradcheck with a fixed
seed); KL divergences against their closed forms and a Monte Carlo estimate; argument and support validation;
interpreted cuda; PyTorch's values when torch is importable."""

import numpy as np
import pytest
from scipy import stats

import autograd as ag
from autograd import distributions as D  # noqa: N812

RNG = np.random.default_rng(0)


def _t(x, dev="cpu"):
    return ag.tensor(np.asarray(x, dtype=np.float64), device=dev)


def _np(t):
    return t.detach().cpu().numpy()


CONT = [
    ("Normal", lambda: (RNG.standard_normal(4), RNG.uniform(0.5, 2, 4)), lambda a, b: stats.norm(a, b),
     lambda: RNG.standard_normal(4) * 2),
    ("Laplace", lambda: (RNG.standard_normal(4), RNG.uniform(0.5, 2, 4)), lambda a, b: stats.laplace(a, b),
     lambda: RNG.standard_normal(4) * 2),
    ("Exponential", lambda: (RNG.uniform(0.5, 3, 4),), lambda r: stats.expon(scale=1 / r),
     lambda: RNG.uniform(0, 3, 4)),
    ("Uniform", lambda: (np.full(4, -1.0), RNG.uniform(0.5, 2, 4)), lambda lo, hi: stats.uniform(lo, hi - lo),
     lambda: RNG.uniform(-1, 0.5, 4)),
]


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("name,params,ref,values", CONT, ids=[c[0] for c in CONT])
def test_continuous_against_scipy(dev, name, params, ref, values):
    p = params()
    d = getattr(D, name)(*[_t(v, dev) for v in p])
    r = ref(*p)
    x = values()
    np.testing.assert_allclose(_np(d.log_prob(_t(x, dev))), r.logpdf(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(d.cdf(_t(x, dev))), r.cdf(x), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(_np(d.entropy()), r.entropy(), rtol=1e-10)
    np.testing.assert_allclose(_np(d.mean), r.mean(), rtol=1e-10)
    np.testing.assert_allclose(_np(d.variance), r.var(), rtol=1e-10)
    np.testing.assert_allclose(_np(d.stddev), r.std(), rtol=1e-10)
    ag.manual_seed(1)
    s = d.sample((20000,))
    assert s.shape == (20000, 4) and d.batch_shape == (4,) and d.event_shape == ()
    sn = _np(s)
    np.testing.assert_allclose(sn.mean(0), r.mean(), atol=5 * np.sqrt(r.var() / 20000).max())
    np.testing.assert_allclose(sn.var(0), r.var(), rtol=0.1)
    assert stats.kstest(sn[:, 0], r.cdf if np.ndim(r.mean()) == 0 else
                        (lambda v: ref(*[q[0] for q in p]).cdf(v))).pvalue > 1e-4


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Exponential", "Uniform"])
def test_rsample_is_differentiable(name):
    args = {"Normal": (0.3, 1.2), "Laplace": (0.3, 1.2), "Exponential": (1.5,), "Uniform": (-0.5, 2.0)}[name]
    params = [ag.tensor([a, a + 0.1], dtype=ag.float64, requires_grad=True) for a in args]

    def f(*ps):
        ag.manual_seed(5)  # the same noise at every evaluation
        return getattr(D, name)(*ps).rsample((3,))

    assert ag.gradcheck(f, tuple(params))
    assert getattr(D, name).has_rsample


def test_bernoulli():
    p = RNG.uniform(0.05, 0.95, 5)
    for d in (D.Bernoulli(probs=_t(p)), D.Bernoulli(logits=_t(np.log(p / (1 - p))))):
        x = (RNG.random(5) < 0.5).astype(np.float64)
        np.testing.assert_allclose(_np(d.log_prob(_t(x))), stats.bernoulli(p).logpmf(x), rtol=1e-9)
        np.testing.assert_allclose(_np(d.entropy()), stats.bernoulli(p).entropy(), rtol=1e-9)
        np.testing.assert_allclose(_np(d.probs), p, rtol=1e-9)
        np.testing.assert_allclose(_np(d.variance), p * (1 - p), rtol=1e-9)
    ag.manual_seed(0)
    s = _np(D.Bernoulli(probs=_t(p)).sample((20000,)))
    assert set(np.unique(s)) <= {0.0, 1.0}
    np.testing.assert_allclose(s.mean(0), p, atol=0.02)
    assert D.Bernoulli(probs=_t([0.3])).enumerate_support().tolist() == [[0.0], [1.0]]
    assert D.Bernoulli(logits=_t([0.3, -1.0])).enumerate_support().tolist() == [[0.0, 0.0], [1.0, 1.0]]


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_categorical_and_one_hot(dev):
    probs = RNG.uniform(0.1, 1, (3, 4))
    d = D.Categorical(probs=_t(probs, dev))
    pn = probs / probs.sum(-1, keepdims=True)
    x = np.array([0, 3, 2])
    np.testing.assert_allclose(_np(d.log_prob(ag.tensor(x, device=dev))), np.log(pn[np.arange(3), x]), rtol=1e-10)
    np.testing.assert_allclose(_np(d.entropy()), stats.entropy(pn, axis=-1), rtol=1e-10)
    logits = D.Categorical(logits=_t(np.log(probs), dev))
    np.testing.assert_allclose(_np(logits.probs), pn, rtol=1e-10)
    # log_prob broadcasts a value batch against the distribution batch
    assert d.log_prob(ag.tensor([[0], [1]], device=dev)).shape == (2, 3)
    ag.manual_seed(2)
    s = d.sample((30000,))
    assert s.shape == (30000, 3) and s.dtype == ag.int64
    freq = np.stack([(_np(s) == k).mean(0) for k in range(4)], -1)
    np.testing.assert_allclose(freq, pn, atol=0.015)
    assert d.mode.tolist() == pn.argmax(-1).tolist()
    assert np.isnan(_np(d.mean)).all() and d.support.upper_bound == 3
    oh = D.OneHotCategorical(probs=_t(probs, dev))
    v = oh.sample((5,))
    assert v.shape == (5, 3, 4) and (_np(v).sum(-1) == 1).all() and oh.event_shape == (4,)
    np.testing.assert_allclose(_np(oh.log_prob(v)), _np(d.log_prob(v.argmax(-1))), rtol=1e-12)
    np.testing.assert_allclose(_np(oh.mean), pn, rtol=1e-10)


def test_policy_gradient_pattern():
    """REINFORCE: sample an action, -log_prob(action) * reward backpropagates into the logits."""
    logits = ag.tensor([[0.1, 0.5, -0.2]], dtype=ag.float64, requires_grad=True)
    dist = D.Categorical(logits=logits)
    action = ag.tensor([1])
    (-dist.log_prob(action) * 2.0).sum().backward()
    p = np.exp(_np(logits)) / np.exp(_np(logits)).sum()
    np.testing.assert_allclose(_np(logits.grad), 2.0 * (p - np.eye(3)[1]), rtol=1e-10)


def test_independent():
    base = D.Normal(_t(RNG.standard_normal((2, 3))), _t(RNG.uniform(0.5, 1.5, (2, 3))))
    d = D.Independent(base, 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = _t(RNG.standard_normal((2, 3)))
    np.testing.assert_allclose(_np(d.log_prob(x)), _np(base.log_prob(x)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(_np(d.entropy()), _np(base.entropy()).sum(-1), rtol=1e-12)
    assert d.rsample((4,)).shape == (4, 2, 3) and d.has_rsample
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        D.Independent(base, 3)


def _mc_kl(p, q, n=200000):
    ag.manual_seed(3)
    x = p.sample((n,))
    return _np(p.log_prob(x) - q.log_prob(x)).mean(0)


def test_kl_divergences():
    mu1, s1, mu2, s2 = 0.3, 0.8, -0.4, 1.7
    kl = D.kl_divergence(D.Normal(_t(mu1), _t(s1)), D.Normal(_t(mu2), _t(s2)))
    assert float(kl) == pytest.approx(np.log(s2 / s1) + (s1 ** 2 + (mu1 - mu2) ** 2) / (2 * s2 ** 2) - 0.5, rel=1e-12)
    pairs = [(D.Laplace(_t(0.2), _t(0.7)), D.Laplace(_t(-0.5), _t(1.3))),
             (D.Exponential(_t(1.5)), D.Exponential(_t(0.6))),
             (D.Uniform(_t(0.0), _t(1.0)), D.Uniform(_t(-1.0), _t(2.0))),
             (D.Bernoulli(probs=_t(0.3)), D.Bernoulli(probs=_t(0.6)))]
    for p, q in pairs:
        assert float(D.kl_divergence(p, q)) == pytest.approx(float(_mc_kl(p, q)), abs=0.01), type(p).__name__
    pc, qc = RNG.dirichlet(np.ones(4)), RNG.dirichlet(np.ones(4))
    kl = D.kl_divergence(D.Categorical(probs=_t(pc)), D.Categorical(probs=_t(qc)))
    assert float(kl) == pytest.approx((pc * np.log(pc / qc)).sum(), rel=1e-10)
    zero = D.kl_divergence(D.Categorical(probs=_t([0.0, 1.0])), D.Categorical(probs=_t([0.5, 0.5])))
    assert float(zero) == pytest.approx(np.log(2))
    assert float(D.kl_divergence(D.Uniform(_t(-1.0), _t(2.0)), D.Uniform(_t(0.0), _t(1.0)))) == np.inf
    ind = D.kl_divergence(D.Independent(D.Normal(_t([0.0, 1.0]), _t([1.0, 1.0])), 1),
                          D.Independent(D.Normal(_t([0.0, 0.0]), _t([1.0, 1.0])), 1))
    assert float(ind) == pytest.approx(0.5)
    with pytest.raises(NotImplementedError, match="no KL\\(p \\|\\| q\\) is implemented for p of type Normal"):
        D.kl_divergence(D.Normal(_t(0.0), _t(1.0)), D.Laplace(_t(0.0), _t(1.0)))


def test_validation():
    with pytest.raises(ValueError, match="Expected parameter scale .* to satisfy the constraint GreaterThan"):
        D.Normal(_t([0.0]), _t([-1.0]))
    with pytest.raises(ValueError, match="Expected value argument .* to be within the support"):
        D.Exponential(_t(1.0)).log_prob(_t(-1.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        D.Bernoulli(probs=_t(0.5), logits=_t(0.0))
    with pytest.raises(ValueError, match="to satisfy the constraint Interval"):
        D.Bernoulli(probs=_t(1.5))
    with pytest.raises(ValueError, match="within the support"):
        D.Categorical(probs=_t([0.5, 0.5])).log_prob(ag.tensor([2]))
    D.Normal(_t([0.0]), _t([-1.0]), validate_args=False)  # allowed when asked
    assert D.Normal(0.0, 1.0).log_prob(_t(0.0)).dtype == ag.float64


def test_same_as_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(5)
    t64 = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    for ours, theirs in [(D.Normal(_t(0.2), _t(1.3)), torch.distributions.Normal(t64(0.2), t64(1.3))),
                         (D.Laplace(_t(0.2), _t(1.3)), torch.distributions.Laplace(t64(0.2), t64(1.3)))]:
        np.testing.assert_allclose(_np(ours.log_prob(_t(x))), theirs.log_prob(torch.tensor(x)).numpy(), rtol=1e-12)
    lg = RNG.standard_normal(4)
    np.testing.assert_allclose(_np(D.Categorical(logits=_t(lg)).entropy()),
                               torch.distributions.Categorical(logits=torch.tensor(lg)).entropy().numpy(), rtol=1e-12)
