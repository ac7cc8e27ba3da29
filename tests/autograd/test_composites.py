"""PyTorch functions composed of other ops (autograd/ops/composites.py) against NumPy/SciPy references, with
gradients checked in float64; error classes as PyTorch's (RuntimeError)."""

import warnings

import numpy as np
import pytest
from scipy.spatial import distance

import autograd as ag
from autograd.gradcheck import gradcheck

RNG = np.random.default_rng(3)
NAN, INF = np.nan, np.inf


def _t(a, **kw):
    return ag.tensor(np.asarray(a), **kw)


def test_isclose_allclose_equal_match_numpy():
    a = np.array([1.0, INF, NAN, 1e-9, -INF, 2.0, NAN])
    b = np.array([1.00001, INF, NAN, 0.0, INF, 2.1, 1.0])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 1e-3, "rtol": 0.0}):
        np.testing.assert_array_equal(ag.isclose(_t(a), _t(b), **kw).numpy(), np.isclose(a, b, **kw))
    assert ag.isclose(_t([1, 2]), _t([1, 3])).tolist() == [True, False]
    x = _t(RNG.standard_normal((3, 4)))
    assert ag.allclose(x, x + 1e-9) and not ag.allclose(x, x + 1e-3) and x.allclose(x)
    assert ag.equal(x, x.clone()) and not ag.equal(x, x[:2]) and not x.equal(x + 1)
    with pytest.raises(RuntimeError):
        ag.isclose(x, x, rtol=-1.0)
    with pytest.raises(TypeError):  # (PyTorch: other must be a Tensor)
        ag.isclose(x, float("inf"))


def test_fmax_fmin_frac_heaviside():
    x = np.array([1.0, NAN, 3.0, NAN, -0.5])
    y = np.array([NAN, 2.0, 1.0, NAN, 0.5])
    np.testing.assert_array_equal(ag.fmax(_t(x), _t(y)).numpy(), np.fmax(x, y))
    np.testing.assert_array_equal(_t(x).fmin(_t(y)).numpy(), np.fmin(x, y))
    f = np.array([-1.5, 2.25, 3.0, -0.0, 7.75])
    np.testing.assert_array_equal(ag.frac(_t(f)).numpy(), np.modf(f)[0])
    h = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(ag.heaviside(_t(h), _t([0.5])).numpy(), np.heaviside(h, 0.5))
    t = _t(f.copy())
    t.frac_()
    np.testing.assert_array_equal(t.numpy(), np.modf(f)[0])
    a = _t(RNG.standard_normal(6), requires_grad=True)
    b = _t(RNG.standard_normal(6), requires_grad=True)
    assert gradcheck(ag.fmax, (a, b)) and gradcheck(ag.fmin, (a, b)) and gradcheck(ag.frac, (a * 3,))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, INF])
def test_cdist_against_scipy_and_gradients(p):
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((4, 3))
    metric = {2.0: "euclidean", 1.0: "cityblock", INF: "chebyshev"}.get(p)
    if metric is None:
        want = (np.abs(a[:, None] - b[None]) ** p).sum(-1) ** (1 / p) if p else (a[:, None] != b[None]).sum(-1)
    else:
        want = distance.cdist(a, b, metric)
    np.testing.assert_allclose(ag.cdist(_t(a), _t(b), p=p).numpy(), want, rtol=1e-12)
    batched = ag.cdist(_t(np.stack([a, a])), _t(np.stack([b, 2 * b])), p=p).numpy()
    np.testing.assert_allclose(batched[0], want, rtol=1e-12)
    if p >= 1:
        x1, x2 = _t(a, requires_grad=True), _t(b, requires_grad=True)
        assert gradcheck(lambda u, v: ag.cdist(u, v, p=p), (x1, x2))


def test_cdist_gradient_is_zero_at_coincident_points_and_errors():
    z = ag.zeros(2, 3, requires_grad=True)
    ag.cdist(z, z).sum().backward()
    assert z.grad.tolist() == [[0.0] * 3] * 2
    with pytest.raises(RuntimeError):
        ag.cdist(ag.ones(2, 3), ag.ones(2, 4))
    with pytest.raises(RuntimeError):
        ag.cdist(ag.ones(3), ag.ones(2, 3))


def test_cov_corrcoef_match_numpy():
    x = RNG.standard_normal((3, 7))
    fw = np.array([1, 2, 1, 1, 3, 1, 2])
    aw = RNG.uniform(0.1, 2.0, 7)
    np.testing.assert_allclose(ag.cov(_t(x)).numpy(), np.cov(x), rtol=1e-12)
    np.testing.assert_allclose(ag.cov(_t(x), correction=0).numpy(), np.cov(x, ddof=0), rtol=1e-12)
    np.testing.assert_allclose(ag.cov(_t(x), fweights=_t(fw), aweights=_t(aw)).numpy(),
                               np.cov(x, fweights=fw, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(ag.cov(_t(x), correction=0, aweights=_t(aw)).numpy(),
                               np.cov(x, ddof=0, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(ag.cov(_t(x[0])).numpy(), np.cov(x[0]), rtol=1e-12)
    np.testing.assert_allclose(_t(x).corrcoef().numpy(), np.corrcoef(x), rtol=1e-12)
    xf = _t(x, requires_grad=True)
    assert gradcheck(ag.cov, (xf,)) and gradcheck(ag.corrcoef, (xf,))
    with pytest.raises(RuntimeError):
        ag.cov(_t(x), fweights=_t(fw.astype(np.float64)))
    with pytest.raises(RuntimeError):
        ag.cov(ag.ones(2, 2, 2))


def test_bincount_matches_numpy():
    v = np.array([0, 1, 1, 4, 2, 1])
    w = RNG.standard_normal(6)
    got = ag.bincount(_t(v))
    assert got.dtype == ag.int64 and got.tolist() == np.bincount(v).tolist()
    np.testing.assert_allclose(ag.bincount(_t(v), weights=_t(w), minlength=9).numpy(),
                               np.bincount(v, weights=w, minlength=9))
    assert ag.bincount(_t(np.zeros(0, np.int64)), minlength=3).tolist() == [0, 0, 0]
    assert ag.bincount(_t(v), weights=_t(np.arange(6))).dtype == ag.float64
    for bad in (_t([-1, 2]), _t([1.0]), _t([[1]])):
        with pytest.raises(RuntimeError):
            ag.bincount(bad)


def test_splits_type_as_ravel():
    v = ag.arange(12.0).reshape(2, 6)
    assert [t.tolist() for t in ag.hsplit(v, 3)] == [a.tolist() for a in np.hsplit(np.arange(12.0).reshape(2, 6), 3)]
    assert [t.shape[1] for t in v.hsplit([1, 4])] == [1, 3, 2]
    assert [t.tolist() for t in v.vsplit(2)] == [[[0, 1, 2, 3, 4, 5]], [[6, 7, 8, 9, 10, 11]]]
    assert [tuple(t.shape) for t in ag.dsplit(ag.zeros(2, 2, 4), 2)] == [(2, 2, 2), (2, 2, 2)]
    assert [t.tolist() for t in ag.hsplit(ag.arange(4), 2)] == [[0, 1], [2, 3]]
    with pytest.raises(RuntimeError):
        ag.hsplit(v, 4)
    with pytest.raises(RuntimeError):
        ag.vsplit(ag.arange(3), 1)
    assert ag.ones(2).type_as(ag.tensor([1])).dtype == ag.int64
    assert v.t().ravel().tolist() == np.arange(12.0).reshape(2, 6).T.ravel().tolist()


def test_cross_default_dimension_and_gradient():
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    np.testing.assert_allclose(ag.cross(_t(a), _t(b)).numpy(), np.cross(a, b, axis=0))
    np.testing.assert_allclose(_t(a.T).cross(_t(b.T), dim=1).numpy(), np.cross(a.T, b.T))
    x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
    assert gradcheck(ag.cross, (x, y))


def test_numpy_arrays_as_operands_of_tensors():
    # PyTorch makes the array a tensor (its dtype kept): tensor * float32 array is float32, + float64 is float64
    x = ag.ones(3, requires_grad=True)
    y = x * np.arange(3.0, dtype=np.float32)
    assert y.dtype == ag.float32 and y.tolist() == [0.0, 1.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0]
    assert (ag.ones(3) + np.ones(3)).dtype == ag.float64
    assert (ag.ones(2) == np.ones(2)).tolist() == [True, True] and (ag.ones(2) < np.full(2, 3.0)).tolist() == [True] * 2
    assert (ag.ones(2) - np.ones((2, 1), np.float32)).shape == (2, 2)


def test_numpy_keyword_names_as_pytorch_accepts_them():
    x = ag.arange(6.0).reshape(2, 3)
    assert x.sum(axis=0).tolist() == [3.0, 5.0, 7.0] and ag.sum(x, axis=1, keepdims=True).shape == (2, 1)
    assert x.max(axis=1).values.tolist() == [2.0, 5.0] and x.argmax(axis=0).tolist() == [1, 1, 1]
    assert ag.cat([x, x], axis=1).shape == (2, 6) and x.mean(axis=(0, 1)).item() == 2.5
    assert x.unsqueeze(axis=0).shape == (1, 2, 3) and ag.stack([x, x], axis=2).shape == (2, 3, 2)
    assert x.softmax(axis=1).shape == (2, 3) and x.std(axis=0, keepdims=True).shape == (1, 3)
    with pytest.raises(TypeError, match="alias"):
        x.sum(dim=0, axis=1)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_nanquantile_match_numpy(interpolation):
    x = RNG.standard_normal((3, 4, 7))
    q = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    for dim in (None, 0, 2, -1):
        got = ag.quantile(_t(x), _t(q), dim=dim, interpolation=interpolation).numpy()
        np.testing.assert_allclose(got, np.quantile(x, q, axis=dim, method=interpolation), rtol=1e-12, atol=1e-12)
        got = _t(x).quantile(0.3, dim=dim, keepdim=True, interpolation=interpolation).numpy()
        np.testing.assert_allclose(got, np.quantile(x, 0.3, axis=dim, keepdims=True, method=interpolation),
                                   rtol=1e-12, atol=1e-12)
    xn = x.copy()
    xn[0, 1, 3] = xn[1, :, 2] = NAN
    xn[2, 3] = NAN
    got = ag.nanquantile(_t(xn), _t(q), dim=2, interpolation=interpolation).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy warns on the all-NaN slice)
        want = np.nanquantile(xn, q, axis=2, method=interpolation)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.isnan(ag.quantile(_t(xn), 0.5, dim=2).numpy()), np.isnan(xn).any(axis=2))


def test_quantile_errors_and_gradient():
    for bad in (lambda: ag.quantile(ag.ones(3), 1.5), lambda: ag.quantile(ag.tensor([1, 2]), 0.5),
                lambda: ag.quantile(ag.ones(3), 0.5, interpolation="x"), lambda: ag.quantile(ag.ones(0), 0.5)):
        with pytest.raises(RuntimeError):
            bad()
    z = _t(np.array([3.0, 1.0, 2.0]), requires_grad=True)
    ag.quantile(z, 0.25).backward()
    assert z.grad.tolist() == [0.0, 0.5, 0.5]
    x = _t(RNG.standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: ag.quantile(t, _t(np.array([0.2, 0.7])), dim=1), (x,))


@pytest.mark.parametrize("shape, wrap", [((5, 3), True), ((5, 3), False), ((9, 2), True), ((4, 3), True),
                                         ((2, 4), True), ((3, 3, 3), False), ((4, 4), False)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    want = np.zeros(shape)
    np.fill_diagonal(want, 7.0, wrap=wrap)
    x = ag.zeros(*shape, dtype=ag.float64)
    assert x.fill_diagonal_(7.0, wrap=wrap) is x
    np.testing.assert_array_equal(x.numpy(), want)


def test_fill_diagonal_gradient_and_errors():
    x = ag.ones(3, 3, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0)
    y.sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 2.0], [2.0, 0.0, 2.0], [2.0, 2.0, 0.0]]
    with pytest.raises(RuntimeError, match="equal length"):
        ag.zeros(2, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError):
        ag.zeros(3).fill_diagonal_(1)


def test_composites_on_views_broadcasting_and_interpreted_cuda():
    x = RNG.standard_normal((7, 5))
    t = _t(x).t()  # non-contiguous (5, 7)
    np.testing.assert_allclose(ag.quantile(t, _t(np.array([0.2, 0.9])), dim=1).numpy(),
                               np.quantile(x.T, [0.2, 0.9], axis=1), rtol=1e-12)
    a, b = RNG.standard_normal((3, 1)), RNG.standard_normal((1, 4))
    np.testing.assert_array_equal(ag.isclose(_t(a), _t(b), atol=0.5).numpy(), np.isclose(a, b, atol=0.5))
    np.testing.assert_array_equal(ag.fmax(_t(a), _t(b)).numpy(), np.fmax(a, b))
    base = ag.zeros(3, 5, dtype=ag.float64)
    base.t().fill_diagonal_(4.0)  # a transposed view: written through to its base
    want = np.zeros((3, 5))
    np.fill_diagonal(want.T, 4.0)
    np.testing.assert_array_equal(base.numpy(), want)
    xc = ag.tensor(x.astype(np.float32), device="cuda")
    np.testing.assert_allclose(ag.quantile(xc, 0.3, dim=0).cpu().numpy(), np.quantile(x, 0.3, axis=0), rtol=1e-5)
    np.testing.assert_allclose(ag.cdist(xc, xc[:2]).cpu().numpy(),
                               np.sqrt(((x[:, None] - x[None, :2]) ** 2).sum(-1)), rtol=1e-5, atol=1e-5)
    v = np.array([0, 3, 3, 1, 7])
    assert ag.bincount(ag.tensor(v, device="cuda")).cpu().tolist() == np.bincount(v).tolist()
