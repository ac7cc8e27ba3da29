"""nn.utils.parametrize, nn.utils.parametrizations.weight_norm/spectral_norm and the older hook-based
nn.utils.weight_norm/spectral_norm: values vs NumPy references of PyTorch's formulas, state_dict layouts,
gradients (gradcheck in float64), interpreted cuda vs cpu, and PyTorch's state dicts when torch is present."""

import warnings

import numpy as np
import pytest

import autograd as ag
import nn
from nn.utils import parametrize
from nn.utils.parametrizations import spectral_norm, weight_norm

from .nnref import N, T

R = np.random.default_rng(5)


def r(*shape):
    return R.standard_normal(shape)


class Symmetric(nn.Module):
    calls = 0

    def forward(self, x):
        Symmetric.calls += 1
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return 2.0 * x


# ------------------------------------------------------------------------------------------ parametrize
def test_register_parametrization_value_grad_and_state_dict():
    m = nn.Linear(3, 3).double()
    w0 = N(m.weight).copy()
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    orig = m.parametrizations.weight.original
    np.testing.assert_array_equal(N(orig), np.triu(w0))  # right_inverse ran at registration
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_array_equal(N(m.weight), sym)
    x = r(2, 3)
    m(T(x)).sum().backward()
    g = np.ones((2, 3)).T @ x  # d sum / d weight, then through the parametrization
    np.testing.assert_allclose(N(orig.grad), np.triu(g) + np.triu(g.T, 1), rtol=1e-12)
    assert any(p is orig for p in m.parameters())


def test_chaining_assignment_cached_and_remove():
    m = nn.Linear(3, 3).double()
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", Scale())
    assert len(m.parametrizations.weight) == 2
    orig = m.parametrizations.weight.original
    np.testing.assert_allclose(N(m.weight), 2 * (np.triu(N(orig)) + np.triu(N(orig), 1).T))
    with pytest.raises(RuntimeError, match="Scale does not implement right_inverse"):
        m.weight = T(r(3, 3))
    Symmetric.calls = 0
    with parametrize.cached():
        a, b = m.weight, m.weight
        assert a is b
    assert Symmetric.calls == 1
    m.weight  # noqa: B018 - outside cached() every access recomputes
    assert Symmetric.calls == 2
    value = N(m.weight).copy()
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and "parametrizations" not in m._modules
    assert m.weight is orig and isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(N(m.weight), value)
    assert list(m.state_dict()) == ["bias", "weight"]  # re-registered last, as PyTorch


def test_assignment_through_right_inverse_and_leave_unparametrized():
    m = nn.Linear(3, 3).double()
    parametrize.register_parametrization(m, "weight", Symmetric())
    a = r(3, 3)
    m.weight = T(a)
    np.testing.assert_array_equal(N(m.parametrizations.weight.original), np.triu(a))
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(N(m.weight), np.triu(a))


def test_buffer_parametrization_and_errors():
    m = nn.BatchNorm1d(3)
    parametrize.register_parametrization(m, "running_var", Scale())
    assert "parametrizations.running_var.original" in m.state_dict()
    np.testing.assert_array_equal(N(m.running_var), 2 * np.ones(3))
    assert not m.parametrizations.running_var.original.requires_grad
    with pytest.raises(ValueError, match="has no parameter or buffer named 'nope'"):
        parametrize.register_parametrization(m, "nope", Scale())
    with pytest.raises(ValueError, match="does not have a parametrization on 'weight'"):
        parametrize.remove_parametrizations(m, "weight")
    with pytest.raises(TypeError, match="must be an nn.Module"):
        parametrize.register_parametrization(m, "weight", lambda x: x)

    class Grow(nn.Module):
        def forward(self, x):
            return ag.cat([x, x])

    with pytest.raises(ValueError, match="changes the tensor from shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Grow())
    parametrize.register_parametrization(nn.Linear(2, 2), "weight", Grow(), unsafe=True)


def test_parametrized_module_deepcopy_cast_and_optimizer_step():
    import copy

    m = weight_norm(nn.Linear(3, 2))
    c = copy.deepcopy(m)
    assert type(c).__name__ == "ParametrizedLinear"
    assert c.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    x = r(4, 3)
    np.testing.assert_array_equal(N(c(T(x, dtype=ag.float32))), N(m(T(x, dtype=ag.float32))))
    m.double()
    assert m.weight.dtype == ag.float64
    v = m.parametrizations.weight.original1
    before = N(v).copy()
    opt = nn.optim.SGD(m.parameters(), lr=0.1)
    m(T(x)).sum().backward()
    opt.step()
    assert not np.allclose(N(v), before)  # the optimizer updates the originals


# ------------------------------------------------------------------------------------------ weight norm
def wn_ref(v, g, dim):
    if dim is None or dim == -1:
        return g * v / np.linalg.norm(v)
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return g * v / np.sqrt((v * v).sum(axes, keepdims=True))


@pytest.mark.parametrize("dtype,tol", [(ag.float64, 1e-12), (ag.float32, 1e-5)])
@pytest.mark.parametrize("make,dim", [(lambda: nn.Linear(4, 3), 0), (lambda: nn.Conv2d(2, 3, 2), 1),
                                      (lambda: nn.Linear(4, 3), None)])
def test_weight_norm_parametrization(make, dim, dtype, tol):
    m = make().to(dtype)
    w = N(m.weight).astype(np.float64)
    weight_norm(m, dim=dim)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g = m.parametrizations.weight.original0
    v = m.parametrizations.weight.original1
    gshape = () if dim is None else tuple(s if i == dim else 1 for i, s in enumerate(w.shape))
    assert tuple(g.shape) == gshape and g.dtype == dtype
    np.testing.assert_allclose(N(m.weight), w, rtol=tol, atol=tol)  # g = ||w||, v = w at registration
    with ag.no_grad():
        g.copy_(T(r(*gshape), dtype=dtype))
    np.testing.assert_allclose(N(m.weight), wn_ref(N(v), N(g), dim), rtol=tol, atol=tol)


def test_weight_norm_gradcheck_and_old_state_dict_layout():
    m = weight_norm(nn.Linear(3, 2).double())
    x = T(r(4, 3), requires_grad=True)
    assert ag.gradcheck(lambda a, *ps: m(a), (x,) + tuple(m.parameters()))
    old = nn.Linear(3, 2).double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(old)
    m.load_state_dict({k: v.clone() for k, v in old.state_dict().items()})
    np.testing.assert_allclose(N(m(x)), N(old(x)), rtol=1e-12)


def test_old_weight_norm_hooks():
    m = nn.Conv1d(2, 3, 2).double()
    w = N(m.weight).copy()
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(m, dim=0)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert tuple(m.weight_g.shape) == (3, 1, 1)
    with ag.no_grad():
        m.weight_g.mul_(2.0)
    x = r(1, 2, 5)
    out = m(T(x))
    np.testing.assert_allclose(N(m.weight), 2 * w, rtol=1e-12)
    out.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="cannot register two weight_norm hooks"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(N(m.weight), 2 * w, rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)


# ------------------------------------------------------------------------------------------ spectral norm
def _normalize(a, eps=1e-12):
    return a / max(np.linalg.norm(a), eps)


def test_spectral_norm_parametrization_power_iteration():
    m = spectral_norm(nn.Linear(5, 4).double())
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    sn = m.parametrizations.weight[0]
    W = N(m.parametrizations.weight.original)
    u0, v0 = N(sn._u).copy(), N(sn._v).copy()
    got = N(m.weight)  # training mode: one power iteration, u first then v
    u = _normalize(W @ v0)
    v = _normalize(W.T @ u)
    np.testing.assert_allclose(got, W / (u @ W @ v), rtol=1e-12)
    np.testing.assert_allclose(N(sn._u), u, rtol=1e-12)
    assert not np.allclose(u0, u) or np.allclose(v0, v)
    m.eval()
    before = N(sn._u).copy()
    w_eval = N(m.weight)
    np.testing.assert_array_equal(N(sn._u), before)  # eval: no update
    np.testing.assert_allclose(w_eval, W / (N(sn._u) @ W @ N(sn._v)), rtol=1e-12)
    m.train()
    for _ in range(50):
        m.weight  # noqa: B018
    np.testing.assert_allclose(np.linalg.svd(N(m.weight), compute_uv=False)[0], 1.0, rtol=1e-6)


def test_spectral_norm_dims_1d_and_gradcheck():
    m = spectral_norm(nn.ConvTranspose2d(3, 2, 2).double())  # dim 1 for transposed convolutions
    sn = m.parametrizations.weight[0]
    assert sn.dim == 1 and tuple(sn._u.shape) == (2,) and tuple(sn._v.shape) == (12,)
    m.eval()
    W = N(m.parametrizations.weight.original)
    mat = np.moveaxis(W, 1, 0).reshape(2, -1)
    np.testing.assert_allclose(N(m.weight), W / (N(sn._u) @ mat @ N(sn._v)), rtol=1e-12)
    x = T(r(1, 3, 2, 2), requires_grad=True)
    assert ag.gradcheck(lambda a, *ps: m(a), (x,) + tuple(m.parameters()))
    b = nn.Linear(2, 3).double()
    spectral_norm(b, "bias")
    np.testing.assert_allclose(N(b.bias), _normalize(N(b.parametrizations.bias.original)), rtol=1e-12)
    with pytest.raises(ValueError, match="n_power_iterations"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer named 'w'"):
        spectral_norm(nn.Linear(2, 2), "w")


def test_old_spectral_norm_hooks():
    m = nn.Linear(4, 3).double()
    nn.utils.spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    W = N(m.weight_orig)
    u0 = N(m.weight_u).copy()
    m(T(r(2, 4)))  # training forward: v first, then u (the old order)
    v = _normalize(W.T @ u0)
    u = _normalize(W @ v)
    np.testing.assert_allclose(N(m.weight), W / (u @ W @ v), rtol=1e-12)
    m.eval()
    m(T(r(2, 4)))
    np.testing.assert_allclose(N(m.weight_u), u, rtol=1e-12)
    with pytest.raises(RuntimeError, match="cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]  # re-registered last, as PyTorch
    np.testing.assert_allclose(N(m.weight), W / (u @ W @ v), rtol=1e-12)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(m)


# ------------------------------------------------------------------------------------------ torch, cuda
def test_loads_pytorch_parametrized_state_dicts():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = r(3, 5)
    for fn, ours_fn in ((torch.nn.utils.parametrizations.weight_norm, weight_norm),
                        (torch.nn.utils.parametrizations.spectral_norm, spectral_norm)):
        t = fn(torch.nn.Linear(5, 4).double()).eval()
        o = ours_fn(nn.Linear(5, 4).double()).eval()
        sd = {k: ag.tensor(v.detach().numpy()) for k, v in t.state_dict().items()}
        assert list(sd) == list(o.state_dict())
        o.load_state_dict(sd)
        with torch.no_grad():
            expect = t(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(N(o(T(x))), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
@pytest.mark.parametrize("name", ["weight_norm", "spectral_norm"])
def test_cuda_matches_cpu(name):
    from .test_cuda_modules import check

    make = {"weight_norm": lambda: weight_norm(nn.Linear(5, 3), dim=0),
            "spectral_norm": lambda: spectral_norm(nn.Conv2d(2, 3, 2))}[name]
    shape = (4, 5) if name == "weight_norm" else (1, 2, 4, 4)
    check(make, [R.uniform(-1, 1, shape).astype(np.float32)])


# ------------------------------------------------------------------------------------------ orthogonal
def _qr_pos(a):
    q, rr = np.linalg.qr(a)
    return q * np.sign(np.diag(rr))


def _householder_ref(a, tau):
    n, k = a.shape
    q = np.eye(n)
    for i in range(k):
        v = np.zeros(n)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(n) - tau[i] * np.outer(v, v))
    return q[:, :k]


def test_orthogonal_matrix_exp_with_trivialization():
    from scipy.linalg import expm

    from nn.utils.parametrizations import orthogonal

    m = nn.Linear(4, 4).double()
    w = N(m.weight).copy()
    orthogonal(m)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    np.testing.assert_allclose(N(m.weight), _qr_pos(w), atol=1e-12)  # starts at the Q of the weight
    np.testing.assert_array_equal(N(m.parametrizations.weight.original), -np.eye(4))
    x = r(4, 4)
    with ag.no_grad():
        m.parametrizations.weight.original.copy_(T(x))
    a = np.tril(x) - np.tril(x).T
    expect = N(m.parametrizations.weight[0].base) @ expm(a)
    np.testing.assert_allclose(N(m.weight), expect, atol=1e-12)
    np.testing.assert_allclose(N(m.weight) @ N(m.weight).T, np.eye(4), atol=1e-12)
    wide = orthogonal(nn.Linear(5, 3).double(), orthogonal_map="matrix_exp")  # rows orthonormal
    np.testing.assert_allclose(N(wide.weight) @ N(wide.weight).T, np.eye(3), atol=1e-12)
    orig = T(r(3, 3) * 0.3, requires_grad=True)
    mod = orthogonal(nn.Linear(3, 3).double())
    assert ag.gradcheck(lambda o: mod.parametrizations.weight[0](o), (orig,))


def test_orthogonal_cayley():
    from nn.utils.parametrizations import orthogonal

    m = orthogonal(nn.Linear(4, 4).double(), orthogonal_map="cayley")
    x = r(4, 4)
    with ag.no_grad():
        m.parametrizations.weight.original.copy_(T(x))
    a = np.tril(x) - np.tril(x).T
    q = np.linalg.solve(np.eye(4) - a / 2, np.eye(4) + a / 2)
    np.testing.assert_allclose(N(m.weight), N(m.parametrizations.weight[0].base) @ q, atol=1e-12)
    orig = T(x * 0.5, requires_grad=True)
    assert ag.gradcheck(lambda o: m.parametrizations.weight[0](o), (orig,))


def test_orthogonal_householder_without_trivialization():
    from nn.utils.parametrizations import orthogonal

    m = nn.Linear(3, 5).double()  # weight (5, 3): orthonormal columns
    w = N(m.weight).copy()
    orthogonal(m, use_trivialization=False)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    np.testing.assert_allclose(N(m.weight), _qr_pos(w), atol=1e-12)
    x = r(5, 3)
    x[np.diag_indices(3)] = -1.0
    with ag.no_grad():
        m.parametrizations.weight.original.copy_(T(x))
    a = np.tril(x, -1)
    tau = 2.0 / (1.0 + (a * a).sum(0))
    np.testing.assert_allclose(N(m.weight), -_householder_ref(a, tau), atol=1e-12)
    np.testing.assert_allclose(N(m.weight).T @ N(m.weight), np.eye(3), atol=1e-12)
    x[np.diag_indices(3)] = -1.5  # the diagonal's sign is read through .int(): keep finite differences off -1.0
    orig = T(x, requires_grad=True)
    assert ag.gradcheck(lambda o: m.parametrizations.weight[0](o), (orig,))
    m.weight = T(_qr_pos(r(5, 3)))  # assignment goes through right_inverse (a QR)
    np.testing.assert_allclose(N(m.weight).T @ N(m.weight), np.eye(3), atol=1e-12)


def test_orthogonal_errors_and_pytorch_state_dict():
    from nn.utils.parametrizations import orthogonal

    with pytest.raises(ValueError, match="expected a matrix or batch of matrices"):
        orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        orthogonal(nn.Linear(2, 2), orthogonal_map="cayley", use_trivialization=False)
    torch = pytest.importorskip("torch")
    for shape, kw in (((4, 4), {}), ((3, 5), {}), ((5, 3), dict(use_trivialization=False)),
                      ((3, 4), dict(orthogonal_map="cayley"))):
        torch.manual_seed(0)
        t = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(shape[1], shape[0]).double(), **kw)
        o = orthogonal(nn.Linear(shape[1], shape[0]).double(), **kw)
        sd = {k: ag.tensor(v.detach().numpy()) for k, v in t.state_dict().items()}
        assert list(sd) == list(o.state_dict())
        o.load_state_dict(sd)
        np.testing.assert_allclose(N(o.weight), t.weight.detach().numpy(), atol=1e-12)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_orthogonal_cuda_matches_cpu():
    from nn.utils.parametrizations import orthogonal

    from .test_cuda_modules import check

    check(lambda: orthogonal(nn.Linear(3, 3)), [R.uniform(-1, 1, (2, 3)).astype(np.float32)])
    check(lambda: orthogonal(nn.Linear(2, 3), use_trivialization=False), [R.uniform(-1, 1, (2, 2)).astype(np.float32)])
