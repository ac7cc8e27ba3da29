"""PReLU, RReLU, SELU, CELU, GLU, Hardtanh, ReLU6, Hardswish, Hardsigmoid, LogSigmoid, Softsign, Softmin, Softmax2d,
Tanhshrink, Threshold, Hardshrink, Softshrink (modules and nn.functional): forward vs NumPy forms of PyTorch's
documented formulas in float32 and float64, gradcheck in float64, interpreted cuda vs cpu, inplace=True under
autograd, bad arguments; PyTorch itself as an optional reference."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

R = np.random.default_rng(15)
SA, SS = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def away(x, kinks, gap=0.05):
    """``x`` with every value within ``gap`` of a kink moved ``gap`` away (finite differences need smoothness)."""
    x = x.copy()
    for k in kinks:
        near = np.abs(x - k) < gap
        x[near] = k + gap * np.where(x[near] >= k, 1.5, -1.5)
    return x


def _sm(x, d):
    e = np.exp(x - x.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


# name -> (functional call, NumPy reference, module, kinks)
OPS = {
    "selu": (F.selu, lambda x: SS * np.where(x > 0, x, SA * np.expm1(x)), nn.SELU, [0]),
    "celu": (lambda x: F.celu(x, 0.7), lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7)),
             lambda: nn.CELU(0.7), [0]),
    "glu": (lambda x: F.glu(x, 1), lambda x: x[:, :3] / (1 + np.exp(-x[:, 3:])), lambda: nn.GLU(1), []),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5),
                 lambda: nn.Hardtanh(-0.5, 1.5), [-0.5, 1.5]),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), nn.ReLU6, [0, 6]),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, nn.Hardswish, [-3, 3]),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, nn.Hardsigmoid, [-3, 3]),
    "logsigmoid": (F.logsigmoid, lambda x: -np.logaddexp(0, -x), nn.LogSigmoid, []),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), nn.Softsign, [0]),
    "softmin": (lambda x: F.softmin(x, 1), lambda x: _sm(-x, 1), lambda: nn.Softmin(1), []),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x), nn.Tanhshrink, []),
    "threshold": (lambda x: F.threshold(x, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0),
                  lambda: nn.Threshold(0.3, -2.0), [0.3]),
    "hardshrink": (lambda x: F.hardshrink(x, 0.6), lambda x: np.where(np.abs(x) > 0.6, x, 0.0),
                   lambda: nn.Hardshrink(0.6), [-0.6, 0.6]),
    "softshrink": (lambda x: F.softshrink(x, 0.6), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.6, 0.0),
                   lambda: nn.Softshrink(0.6), [-0.6, 0.6]),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x),
                   lambda: nn.RReLU(0.1, 0.3).eval(), [0]),
    "softmax2d": (nn.Softmax2d(), lambda x: _sm(x, 0), None, []),
    "prelu": (lambda x: F.prelu(x, ag.tensor([0.1, -0.2, 0.3, 0.4, 0.5, 0.6], dtype=x.dtype, device=x.device)),
              lambda x: np.where(x > 0, x, np.array([0.1, -0.2, 0.3, 0.4, 0.5, 0.6])[:, None] * x), None, [0]),
}


def _x(shape=(4, 6, 3), lo=-7.0, hi=7.0, kinks=()):
    return away(R.uniform(lo, hi, shape), kinks)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPS))
def test_forward_matches_the_formula(name, dtype):
    fn, ref, mod, kinks = OPS[name]
    x = _x(kinks=kinks).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    out = fn(ag.tensor(x))
    assert out.dtype == (ag.float32 if dtype == np.float32 else ag.float64)
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)), **tol)
    if mod is not None:
        np.testing.assert_allclose(mod()(ag.tensor(x)).numpy(), ref(x.astype(np.float64)), **tol)


@pytest.mark.parametrize("name", list(OPS))
def test_gradcheck_float64(name):
    fn, _, _, kinks = OPS[name]
    x = ag.tensor(_x((3, 6, 2), lo=-4, hi=4, kinks=kinks), requires_grad=True)
    assert ag.gradcheck(fn, (x,))


@pytest.mark.parametrize("name", ["selu", "glu", "hardswish", "logsigmoid", "softmin", "softshrink", "prelu",
                                  "threshold"])
def test_empty_batch(name):
    fn = OPS[name][0]
    out = fn(ag.zeros(0, 6, 3))
    assert tuple(out.shape) == ((0, 3, 3) if name == "glu" else (0, 6, 3))


KINKS = np.array([-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
KINK_GRADS = {  # PyTorch's gradients at the kinks (its derivative formulas; checked against torch 2.13)
    "relu6": (F.relu6, [0, 0, 0, 0, 1, 1, 0]),
    "hardtanh": (F.hardtanh, [0, 0, 0, 1, 0, 0, 0]),
    "hardsigmoid": (F.hardsigmoid, [0, 0, 1 / 6, 1 / 6, 1 / 6, 0, 0]),
    "hardswish": (F.hardswish, [0, 0, 1 / 6, 0.5, 5 / 6, 1, 1]),
    "prelu": (lambda t: F.prelu(t, ag.tensor([0.3], dtype=ag.float64)), [0.3, 0.3, 0.3, 0.3, 1, 1, 1]),
    "logsigmoid": (F.logsigmoid, 1 / (1 + np.exp(KINKS))),
    "threshold": (lambda t: F.threshold(t, 1.0, 0.0), [0, 0, 0, 0, 0, 1, 1]),
    "hardshrink": (lambda t: F.hardshrink(t, 1.0), [1, 1, 0, 0, 0, 1, 1]),
    "softshrink": (lambda t: F.softshrink(t, 1.0), [1, 1, 0, 0, 0, 1, 1]),
}


@pytest.mark.parametrize("name", list(KINK_GRADS))
def test_gradient_at_the_kinks_follows_pytorch(name):
    fn, expect = KINK_GRADS[name]
    x = ag.tensor(KINKS, requires_grad=True)
    fn(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(expect, dtype=np.float64), rtol=1e-12, atol=1e-15)


def test_logsigmoid_far_tails_and_double_backward():
    x = ag.tensor([-800.0, -40.0, 40.0, 800.0], dtype=ag.float64, requires_grad=True)
    y = F.logsigmoid(x)
    np.testing.assert_allclose(y.detach().numpy(), [-800.0, -40.0 - np.exp(-40.0), -np.exp(-40.0), 0.0], rtol=1e-15)
    (g,) = ag.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [1.0, 1.0, np.exp(-40.0), 0.0], rtol=1e-12)
    xs = ag.tensor(R.uniform(-3, 3, (5,)), requires_grad=True)
    assert ag.gradgradcheck(F.logsigmoid, (xs,))


def test_prelu_module_parameter_and_gradient():
    m = nn.PReLU(3, init=0.2).double()
    assert tuple(m.weight.shape) == (3,) and np.allclose(m.weight.detach().numpy(), 0.2)
    x = ag.tensor(away(R.uniform(-2, 2, (5, 3, 4)), [0]), requires_grad=True)
    assert ag.gradcheck(lambda x, w: F.prelu(x, w), (x, m.weight))
    one = nn.PReLU()  # one slope shared by every channel, any rank
    xs = R.uniform(-2, 2, (7,))
    np.testing.assert_allclose(one(ag.tensor(xs, dtype=ag.float32)).detach().numpy(), np.where(xs > 0, xs, 0.25 * xs),
                               rtol=1e-6)


def test_rrelu_training_slopes_lie_in_the_range():
    x = ag.tensor(-R.uniform(0.5, 2.0, (2000,)))
    ag.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = y.numpy() / x.numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03  # random, not one slope
    pos = ag.tensor(R.uniform(0.1, 2.0, (50,)))
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(), pos.numpy())
    # backward uses the slopes of the forward: d(y)/dx = slope
    xr = x.clone().requires_grad_()
    ag.manual_seed(3)
    F.rrelu(xr, 0.1, 0.3, training=True).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), slope, rtol=1e-12)
    m = nn.RReLU(0.1, 0.3)
    assert m.training and not np.allclose(m(x).numpy() / x.numpy(), 0.2)
    m.eval()
    np.testing.assert_allclose(m(x).numpy() / x.numpy(), 0.2)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_rrelu_training_on_each_device(dev):
    if dev == "cuda" and not ag.cuda.is_available():
        pytest.skip("no cuda")
    x = ag.tensor(-R.uniform(0.5, 2.0, (3, 400)), device=dev, requires_grad=True)
    y = nn.RReLU(0.2, 0.4)(x)
    y.sum().backward()
    slope = (y.detach() / x.detach()).cpu().numpy()
    assert slope.min() >= 0.2 and slope.max() <= 0.4 and slope.std() > 0.03
    np.testing.assert_allclose(x.grad.cpu().numpy(), slope, rtol=1e-12)


@pytest.mark.parametrize("name", ["hardswish", "softshrink", "logsigmoid", "threshold"])
def test_non_contiguous_input(name):
    fn, ref, _, kinks = OPS[name]
    x = _x((6, 5), kinks=kinks)
    t = ag.tensor(x).t()  # a transposed view
    assert not t.is_contiguous()
    np.testing.assert_allclose(fn(t).numpy(), ref(x.T), rtol=1e-12, atol=1e-13)


def test_softmax2d_is_a_softmax_over_channels():
    x = R.standard_normal((2, 5, 3, 4))
    np.testing.assert_allclose(nn.Softmax2d()(ag.tensor(x)).numpy(), _sm(x, 1), rtol=1e-12)
    np.testing.assert_allclose(nn.Softmax2d()(ag.tensor(x[0])).numpy(), _sm(x[0], 0), rtol=1e-12)
    with pytest.raises(ValueError, match="Softmax2d.*3D or 4D"):
        nn.Softmax2d()(ag.tensor(x[0, 0]))


INPLACE = {
    "selu": lambda ip: nn.SELU(inplace=ip), "celu": lambda ip: nn.CELU(0.5, inplace=ip),
    "hardtanh": lambda ip: nn.Hardtanh(-0.5, 0.5, inplace=ip), "relu6": lambda ip: nn.ReLU6(inplace=ip),
    "hardswish": lambda ip: nn.Hardswish(inplace=ip), "hardsigmoid": lambda ip: nn.Hardsigmoid(inplace=ip),
    "threshold": lambda ip: nn.Threshold(0.1, 20.0, inplace=ip), "rrelu": lambda ip: nn.RReLU(inplace=ip).eval(),
}


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_in_a_model_matches_out_of_place(name, dev):
    res = []
    xs = R.standard_normal((5, 3))
    for ip in (False, True):
        ag.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 6), INPLACE[name](ip), nn.Linear(6, 2)).to(dev).double()
        x = ag.tensor(xs, device=dev, requires_grad=True)
        out = m(x)
        (out * ag.arange(2, device=dev, dtype=ag.float64)).sum().backward()
        res.append([out.detach().cpu().numpy()] + [p.grad.cpu().numpy() for p in [x, *m.parameters()]])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_overwrites_its_input(name):
    x = ag.tensor([-4.0, -1.5, -0.2, 0.05, 0.3, 2.0, 7.0], dtype=ag.float64)
    expect = INPLACE[name](False)(x).numpy()
    y = INPLACE[name](True)(x)
    np.testing.assert_array_equal(x.numpy(), expect)
    np.testing.assert_array_equal(y.numpy(), expect)


def test_functional_inplace_variants():
    for fn, ref in [(F.hardtanh_, lambda v: np.clip(v, -1, 1)), (F.selu_, OPS["selu"][1]),
                    (lambda t: F.threshold_(t, 0.0, 5.0), lambda v: np.where(v > 0, v, 5.0))]:
        v = R.uniform(-3, 3, (4,))
        t = ag.tensor(v)
        fn(t)
        np.testing.assert_allclose(t.numpy(), ref(v), rtol=1e-12)


CUDA = ["selu", "celu", "glu", "hardtanh", "relu6", "hardswish", "hardsigmoid", "logsigmoid", "softsign", "softmin",
        "tanhshrink", "threshold", "hardshrink", "softshrink", "rrelu_eval", "prelu", "softmax2d"]


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
@pytest.mark.parametrize("name", CUDA)
def test_cuda_matches_cpu(name):
    fn, _, _, kinks = OPS[name]
    x = _x((3, 6, 5), kinks=kinks).astype(np.float32)
    res = []
    for dev in ("cpu", "cuda"):
        t = ag.tensor(x, device=dev, requires_grad=True)
        out = fn(t)
        w = ag.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(out.shape), device=dev)
        (out * w).sum().backward()
        assert out.device.type == dev
        res.append((out.detach().cpu().numpy(), t.grad.cpu().numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bad_arguments_name_the_op():
    x = ag.randn(4, 5)
    with pytest.raises(RuntimeError, match="glu.*even"):
        F.glu(x, 1)
    with pytest.raises(IndexError, match="glu"):
        F.glu(x, 3)
    with pytest.raises(RuntimeError, match=r"prelu.*\[3\].*\[4, 5\]"):
        F.prelu(x, ag.ones(3))
    with pytest.raises(ValueError, match="Hardtanh.*min_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError, match="hardtanh.*min_val"):
        F.hardtanh(x, 1.0, -1.0)
    with pytest.raises(RuntimeError, match="softshrink.*lambda"):
        F.softshrink(x, -0.1)
    with pytest.raises(ValueError, match="rrelu.*lower"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(ValueError, match="celu.*alpha"):
        F.celu(x, 0.0)
    with pytest.raises(ValueError, match="PReLU.*num_parameters"):
        nn.PReLU(0)


def test_module_paths_and_repr():
    import nn.modules.activation as act

    for name in ["PReLU", "RReLU", "SELU", "CELU", "GLU", "Hardtanh", "ReLU6", "Hardswish", "Hardsigmoid",
                 "LogSigmoid", "Softsign", "Softmin", "Softmax2d", "Tanhshrink", "Threshold", "Hardshrink",
                 "Softshrink"]:
        assert getattr(act, name) is getattr(nn, name)
    assert repr(nn.Hardtanh(-2.0, 2.0)) == "Hardtanh(min_val=-2.0, max_val=2.0)"
    assert repr(nn.PReLU(4)) == "PReLU(num_parameters=4)"


def test_against_torch_when_available():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x = _x((3, 6, 4), kinks=[0, 3, -3, 0.5, -0.5, 6])
    w = R.uniform(0.0, 0.5, 6)
    pairs = [(F.selu, tF.selu), (lambda t: F.celu(t, 1.3), lambda t: tF.celu(t, 1.3)), (F.glu, tF.glu),
             (F.hardtanh, tF.hardtanh), (F.relu6, tF.relu6), (F.hardswish, tF.hardswish),
             (F.hardsigmoid, tF.hardsigmoid), (F.logsigmoid, tF.logsigmoid), (F.softsign, tF.softsign),
             (lambda t: F.softmin(t, 1), lambda t: tF.softmin(t, 1)), (F.tanhshrink, tF.tanhshrink),
             (lambda t: F.threshold(t, 0.5, -1.0), lambda t: tF.threshold(t, 0.5, -1.0)),
             (F.hardshrink, tF.hardshrink), (F.softshrink, tF.softshrink), (F.rrelu, tF.rrelu),
             (lambda t: F.prelu(t, ag.tensor(w)), lambda t: tF.prelu(t, torch.tensor(w))),
             (nn.Softmax2d(), torch.nn.Softmax2d())]
    for ours, theirs in pairs:
        a = ag.tensor(x, requires_grad=True)
        b = torch.tensor(x, requires_grad=True)
        ya, yb = ours(a), theirs(b)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-12, atol=1e-14)
        ya.sum().backward()
        yb.sum().backward()
        # torch rounds celu's 1/alpha to float32 in its backward (1.6e-8 off exp(x/alpha)); ours is the formula
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-8)
