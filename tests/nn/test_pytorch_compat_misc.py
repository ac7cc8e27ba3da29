"""Behaviours of PyTorch's nn API found missing by differential runs against PyTorch 2.13 (the expected values are
PyTorch's): container protocols, ConvTranspose's output_size, InstanceNorm's counters."""

from collections import OrderedDict

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812


def test_parameter_dict_sorts_a_plain_dict_and_keeps_ordered_inputs():
    def p():
        return nn.Parameter(ag.ones(1))

    assert list(nn.ParameterDict({"b": p(), "a": p()}).keys()) == ["a", "b"]
    assert list(nn.ParameterDict(parameters=[("b", p()), ("a", p())]).keys()) == ["b", "a"]
    assert list(nn.ParameterDict(OrderedDict(b=p(), a=p())).keys()) == ["b", "a"]
    d = nn.ParameterDict()
    d.update({"z": p(), "y": p()})
    assert list(d.keys()) == ["y", "z"]
    assert list(nn.ModuleDict(modules={"y": nn.ReLU(), "x": nn.Tanh()}).keys()) == ["y", "x"]


def test_sequential_pop_and_repetition():
    relu, tanh = nn.ReLU(), nn.Tanh()
    s = nn.Sequential(relu, tanh)
    twice = s * 2
    assert [m for m in twice] == [relu, tanh, relu, tanh] and len(2 * s) == 4
    assert twice.pop(1) is tanh and [m for m in twice] == [relu, relu, tanh]
    assert list(twice._modules) == ["0", "1", "2"]
    s *= 3
    assert len(s) == 6
    with pytest.raises(ValueError):
        s * 0


@pytest.mark.parametrize("cls, shape, size, want", [
    (nn.ConvTranspose2d, (1, 2, 4, 4), [8, 8], (1, 3, 8, 8)),
    (nn.ConvTranspose2d, (1, 2, 4, 4), (1, 3, 7, 8), (1, 3, 7, 8)),
    (nn.ConvTranspose1d, (2, 2, 5), [10], (2, 3, 10)),
    (nn.ConvTranspose3d, (1, 2, 3, 3, 3), [6, 5, 6], (1, 3, 6, 5, 6)),
    (nn.ConvTranspose2d, (2, 4, 4), [7, 8], (3, 7, 8)),  # unbatched
])
def test_conv_transpose_output_size(cls, shape, size, want):
    m = cls(2, 3, 3, stride=2, padding=1)
    x = ag.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    y = m(x, output_size=size)
    assert tuple(y.shape) == want
    n = len(want) - (2 if len(shape) == len(want) and len(shape) == m._n + 2 else 1)
    pad = tuple(w - ((i - 1) * 2 - 2 + 2 + 1) for w, i in zip(want[-n:], shape[-n:]))
    f = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[m._n]
    ref = f(x, m.weight, m.bias, m.stride, m.padding, pad, m.groups, m.dilation)
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())


@pytest.mark.parametrize("size", [[9, 9], [5, 5], [1, 2, 3]])
def test_conv_transpose_output_size_out_of_range(size):
    with pytest.raises(ValueError):
        nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)(ag.zeros(1, 2, 4, 4), output_size=size)


def test_instance_norm_running_stats_leave_num_batches_tracked_at_zero():
    m = nn.InstanceNorm2d(3, track_running_stats=True)
    m(ag.tensor(np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype(np.float32)))
    assert m.num_batches_tracked.item() == 0
    assert not np.allclose(m.running_mean.numpy(), 0)  # (the running statistics did move)


class _WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.extra = {"v": 1}

    def get_extra_state(self):
        return dict(self.extra)

    def set_extra_state(self, state):
        self.extra = state


def test_extra_state_is_saved_and_restored():
    a, b = _WithExtra(), _WithExtra()
    a.extra = {"v": 7}
    sd = a.state_dict()
    assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"] and sd["_extra_state"] == {"v": 7}
    b.load_state_dict(sd)
    assert b.extra == {"v": 7}
    assert list(nn.Sequential(_WithExtra()).state_dict()) == ["0._extra_state", "0.lin.weight", "0.lin.bias"]
    with pytest.raises(RuntimeError, match="Missing key"):
        b.load_state_dict({k: v for k, v in sd.items() if k != "_extra_state"})
    assert "_extra_state" not in nn.Linear(2, 2).state_dict()
    with pytest.raises(RuntimeError, match="Unexpected key"):
        nn.Linear(2, 2).load_state_dict({**nn.Linear(2, 2).state_dict(), "_extra_state": 1})


def test_instance_norm_momentum_none_keeps_the_running_statistics():
    m = nn.InstanceNorm1d(2, track_running_stats=True, momentum=None).double()
    m(ag.randn(4, 2, 6).double())
    assert m.running_mean.tolist() == [0.0, 0.0] and m.running_var.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("make, keys, text", [
    (lambda: nn.BatchNorm2d(3, bias=False), ["weight", "running_mean", "running_var", "num_batches_tracked"],
     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"),
    (lambda: nn.GroupNorm(1, 3, bias=False), ["weight"], "GroupNorm(1, 3, eps=1e-05, affine=True, bias=False)"),
    (lambda: nn.InstanceNorm2d(3, affine=True, bias=False), ["weight"],
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=False)"),
    (lambda: nn.SyncBatchNorm(3, bias=False), ["weight", "running_mean", "running_var", "num_batches_tracked"],
     "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"),
    (lambda: nn.BatchNorm2d(3, affine=False), ["running_mean", "running_var", "num_batches_tracked"],
     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=True)"),
])
def test_norms_without_a_bias(make, keys, text):
    # PyTorch 2.13's bias= option: a learned scale, no shift (its state-dict keys and reprs)
    m = make()
    assert list(m.state_dict()) == keys and repr(m) == text
    if m.weight is not None:
        x = ag.tensor(np.random.default_rng(2).standard_normal((2, 3, 4, 4)).astype(np.float32))
        with ag.no_grad():
            m.weight.fill_(2.0)
        y = m(x)
        y.sum().backward()
        assert m.bias is None and m.weight.grad is not None
        np.testing.assert_allclose(y.detach().numpy().mean(), 0.0, atol=1e-5)  # (no shift)


def test_module_compile_in_place_keeps_the_values_and_the_gradients():
    def make():
        ag.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    eager, compiled = make(), make()
    compiled.compile()
    x = ag.tensor(np.random.default_rng(4).standard_normal((5, 4)).astype(np.float32))
    with ag.no_grad():
        for _ in range(3):  # (warm-up, recording, replay)
            np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-6, atol=1e-7)
    opts = [nn.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled)]
    for _ in range(4):
        losses = []
        for m, opt in zip((eager, compiled), opts):
            loss = m(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-6
    assert list(compiled.state_dict()) == list(eager.state_dict())
