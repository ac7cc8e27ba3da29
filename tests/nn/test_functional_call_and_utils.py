"""nn.utils.stateless.functional_call, get_total_norm / clip_grads_with_norm_, Module.set_submodule / to_empty,
data.StackDataset (expected values: PyTorch 2.13's on the same inputs)."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn.utils.stateless import functional_call


def test_functional_call_replaces_and_restores():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    own = m[0].weight
    x = ag.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = ag.tensor(np.full((2, 3), 0.1, np.float32), requires_grad=True)
    y = functional_call(m, {"0.weight": w}, (x,))
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [[-0.99998, -0.99998], [0.99998, 0.99998]], atol=1e-5)
    assert w.grad is not None and own.grad is None and m[0].weight is own
    m.eval()
    sd = {k: ag.full(tuple(v.shape), 0.5) for k, v in m.state_dict().items() if "num_batches" not in k}
    np.testing.assert_allclose(functional_call(m, sd, x).detach().numpy(), [[1.56065, 1.56065], [4.7426, 4.7426]],
                               atol=1e-4)
    assert m[1].running_mean is not sd["1.running_mean"]


def test_functional_call_tied_weights_strictness_and_errors():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    t = Tied()
    assert functional_call(t, {"a.weight": ag.eye(2) * 2}, (ag.ones(1, 2),)).tolist() == [[4.0, 4.0]]
    assert functional_call(t, {"a.weight": ag.eye(2) * 2, "zzz": ag.ones(1)}, ag.ones(1, 2)).tolist() == [[4.0, 4.0]]
    with pytest.raises(RuntimeError, match="unexpected"):
        functional_call(t, {"a.weight": ag.eye(2), "zzz": ag.ones(1)}, ag.ones(1, 2), strict=True)
    with pytest.raises(RuntimeError, match="missing"):
        functional_call(nn.Linear(2, 2), {"weight": ag.eye(2)}, ag.ones(1, 2), strict=True)
    with pytest.raises(ValueError, match="multiple"):
        functional_call(t, [{"a.weight": ag.eye(2)}, {"a.weight": ag.eye(2)}], ag.ones(1, 2))

    class Boom(nn.Linear):
        def forward(self, x):
            raise KeyError("boom")

    b = Boom(2, 2)
    own = b.weight
    with pytest.raises(KeyError):
        functional_call(b, {"weight": ag.eye(2)}, ag.ones(1, 2))
    assert b.weight is own


def test_total_norm_and_clipping_with_it():
    rng = np.random.default_rng(0)
    ps = [nn.Parameter(ag.tensor(rng.standard_normal(s).astype(np.float32))) for s in ((3, 4), (5,))]
    for p in ps:
        p.grad = ag.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
    grads = [p.grad for p in ps]
    t = nn.utils.get_total_norm(grads)
    assert round(t.item(), 5) == 2.76993  # (PyTorch's values on these inputs)
    assert round(nn.utils.get_total_norm(grads, norm_type=1.0).item(), 4) == 9.5416
    assert round(nn.utils.get_total_norm(grads + [None], float("inf")).item(), 5) == 1.36646
    nn.utils.clip_grads_with_norm_(ps, 1.0, t)
    assert round(nn.utils.get_total_norm([p.grad for p in ps]).item(), 4) == 1.0
    assert round(nn.utils.clip_grad_norm_(ps, 0.5).item(), 5) == 1.0
    np.testing.assert_allclose(ps[0].grad.numpy()[0], [-0.0571, 0.0743, 0.18818, -0.0232], atol=1e-5)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([ag.tensor([np.inf])], error_if_nonfinite=True)


def test_set_submodule_and_to_empty():
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU()))
    tanh = nn.Tanh()
    m.set_submodule("1.0", tanh)
    assert m[1][0] is tanh
    with pytest.raises(AttributeError):
        m.set_submodule("0.weight", nn.ReLU())
    with pytest.raises(AttributeError):
        m.set_submodule("1.5", nn.ReLU(), strict=True)
    lin = nn.Linear(2, 3)
    w = lin.weight
    assert lin.to_empty(device="cpu") is lin and lin.weight is w and tuple(w.shape) == (3, 2) and w.requires_grad


def test_stack_dataset():
    d = nn.data.StackDataset(ag.arange(4), ag.arange(4) * 2)
    assert len(d) == 4 and [t.item() for t in d[1]] == [1, 2]
    kd = nn.data.StackDataset(x=ag.arange(3), y=[5, 6, 7])
    batches = list(nn.data.DataLoader(kd, batch_size=2))
    assert batches[0]["x"].tolist() == [0, 1] and batches[1]["y"].tolist() == [7]
    with pytest.raises(ValueError):
        nn.data.StackDataset(ag.arange(3), ag.arange(4))
    with pytest.raises(ValueError):
        nn.data.StackDataset(ag.arange(3), y=ag.arange(3))
    assert len(list(nn.data.DataLoader(ag.arange(5), batch_size=2, in_order=False, pin_memory_device=""))) == 3


def test_fuse_batch_norm_into_conv_and_linear():
    ag.manual_seed(0)
    x = ag.randn(2, 3, 5, 5)
    cases = [(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), x, False),
             (nn.ConvTranspose2d(3, 4, 3), nn.BatchNorm2d(4), x, True),
             (nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4, affine=False), x, False)]
    for layer, bn, inp, transpose in cases:
        for _ in range(3):  # (running statistics away from their start)
            bn(layer(inp))
        layer.eval()
        bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        with ag.no_grad():
            np.testing.assert_allclose(fused(inp).numpy(), bn(layer(inp)).numpy(), rtol=1e-5, atol=1e-5)
        assert fused is not layer and isinstance(fused.weight, nn.Parameter) and fused.bias is not None
    lin, bn1 = nn.Linear(5, 4), nn.BatchNorm1d(4)
    y = ag.randn(6, 5)
    for _ in range(3):
        bn1(lin(y))
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_linear_bn_eval(lin, bn1)
    lin.eval()
    bn1.eval()
    with ag.no_grad():
        np.testing.assert_allclose(nn.utils.fuse_linear_bn_eval(lin, bn1)(y).numpy(), bn1(lin(y)).numpy(), rtol=1e-5,
                                   atol=1e-5)


def test_mse_and_l1_loss_with_elementwise_weights():
    from nn import functional as F  # noqa: N812

    a, b = ag.tensor([[1.0, 2.0], [3.0, 4.0]]), ag.zeros(2, 2)
    w = ag.tensor([[1.0, 3.0], [0.5, 2.0]])
    # PyTorch 2.13's values: "mean" is the weighted sum over the weights' sum
    assert abs(F.mse_loss(a, b, weight=w).item() - 7.615384578704834) < 1e-6
    assert F.mse_loss(a, b, weight=w, reduction="sum").item() == 49.5
    assert F.mse_loss(a, b, weight=w, reduction="none").tolist() == [[1.0, 12.0], [4.5, 32.0]]
    assert abs(F.l1_loss(a, b, weight=w).item() - 2.538461446762085) < 1e-6
    with pytest.raises(ValueError, match="same size"):
        F.mse_loss(a, b, weight=ag.ones(2))
