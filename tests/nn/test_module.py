"""nn.Module: registration, iteration, modes, state dicts, hooks, repr, containers, Linear."""

import math

import numpy as np
import pytest

import autograd as ag
import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("count", ag.zeros(1))
        self.register_buffer("scratch", ag.ones(2), persistent=False)
        self.scale = nn.Parameter(ag.ones(()))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_registration_and_names():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == ["count", "scratch"]
    assert list(m.state_dict()) == ["scale", "count", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert m.fc2.bias is None
    assert isinstance(m.fc1.weight, nn.Parameter) and m.fc1.weight.requires_grad and m.fc1.weight.is_leaf
    del m.fc2
    assert "fc2" not in dict(m.named_children())


def test_shared_parameter_counted_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_assign_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.weight = ag.zeros(2, 2)
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ag.zeros(1))
    x = ag.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="non-leaf"):
        m.register_parameter("p", _nonleaf_param(x))


def _nonleaf_param(x):
    p = nn.Parameter(ag.ones(2))
    p._grad_fn = (x * 2).grad_fn
    return p


def test_linear_init_bounds_and_forward():
    ag.manual_seed(0)
    lin = nn.Linear(50, 7)
    w = lin.weight.detach().numpy()
    b = lin.bias.detach().numpy()
    bound = 1 / math.sqrt(50)
    assert w.shape == (7, 50) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound
    x = np.random.default_rng(0).standard_normal((3, 50)).astype(np.float32)
    y = lin(ag.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.ones((7, 3)) @ x, rtol=1e-5)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(7, 3.0))


def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc1.training
    m.train()
    assert m.fc2.training
    m(ag.randn(5, 4)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m(ag.randn(5, 4)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert float(m.fc1.weight.grad.abs().sum()) == 0.0
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    with ag.no_grad():
        a.count.fill_(5)
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    for (n1, p1), (n2, p2) in zip(a.state_dict().items(), b.state_dict().items()):
        assert n1 == n2
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    sd = a.state_dict()
    sd.pop("fc1.bias")
    sd["extra"] = ag.zeros(1)
    sd["fc2.weight"] = ag.zeros(5, 5)
    before = b.fc1.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    assert "size mismatch for fc2.weight" in msg
    np.testing.assert_array_equal(b.fc1.weight.detach().numpy(), before)  # nothing half-loaded
    sd.pop("fc2.weight")
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias", "fc2.weight"] and res.unexpected_keys == ["extra"]


def test_to_dtype_keeps_parameter_identity():
    m = Net()
    w = m.fc1.weight
    m.double()
    assert m.fc1.weight is w and w.dtype == ag.float64 and m.count.dtype == ag.float64
    m.float()
    assert w.dtype == ag.float32


def test_to_cuda_interpreted():
    if not ag.cuda.is_available():
        pytest.skip("no cuda")
    m = nn.Linear(3, 2)
    w = m.weight.detach().numpy().copy()
    m.to("cuda")
    assert m.weight.device.type == "cuda"
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), w)
    m.cpu()
    assert m.weight.device.type == "cpu"


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    x = ag.ones(1, 2)
    y = m(x)
    ref = (x * 2) @ m.weight.mT + m.bias + 1
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy())
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(m(x).detach().numpy(), (x @ m.weight.mT + m.bias).detach().numpy())


def test_full_backward_hook():
    m = nn.Linear(3, 2)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"] = [g.numpy() for g in grad_input]
        seen["go"] = [g.numpy() for g in grad_output]
    m.register_full_backward_hook(hook)
    x = ag.randn(4, 3, requires_grad=True)
    (m(x) * 3).sum().backward()
    np.testing.assert_allclose(seen["go"][0], np.full((4, 2), 3.0))
    np.testing.assert_allclose(seen["gi"][0], x.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 2), 3.0) @ m.weight.detach().numpy(), rtol=1e-5)


def test_repr_like_pytorch():
    m = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
    assert repr(m) == ("Sequential(\n  (0): Linear(in_features=64, out_features=256, bias=True)\n"
                       "  (1): GELU(approximate='none')\n  (2): Linear(in_features=256, out_features=10, bias=True)\n)")


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2
    seq.append(nn.Tanh())
    assert len(seq) == 4 and [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Tanh"]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(list(ml.parameters())) == 6 and ml.index(ml[1]) == 1
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([nn.Parameter(ag.ones(2)), ag.zeros(3)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    pd = nn.ParameterDict({"w": ag.ones(2)})
    assert [n for n, _ in pd.named_parameters()] == ["w"]
    with pytest.raises(IndexError):
        seq[10]


def test_apply_and_init():
    m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))

    def init_fn(mod):
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)
            nn.init.zeros_(mod.bias)
    m.apply(init_fn)
    assert all(float(p.detach().numpy().std()) == 0.0 for p in m.parameters())


def test_share_memory_moves_parameters_gradients_and_buffers_in_place():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w = m[0].weight
    m[0].weight.grad = ag.ones(2, 3)
    view = w.detach()[0]
    assert not w.is_shared()
    assert m.share_memory() is m
    tensors = list(m.parameters()) + list(m.buffers()) + [m[0].weight.grad]
    assert all(t.is_shared() for t in tensors) and m[0].weight is w  # the same Parameters, now in shared memory
    view.fill_(5.0)  # a view taken before still aliases the parameter
    assert m[0].weight[0].tolist() == [5.0, 5.0, 5.0]
