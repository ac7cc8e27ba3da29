"""Activations with ``inplace=True`` inside a model: the input holds the result and backward gives the gradients
of the out-of-place form (issue 15: ``Linear -> LeakyReLU(inplace) -> Linear`` raised a version error in
backward), on cpu and interpreted cuda."""

import numpy as np
import pytest

import autograd as ag
import nn

DEVICES = ["cpu", "cuda"]
LAYERS = [lambda ip: nn.ReLU(inplace=ip), lambda ip: nn.LeakyReLU(0.2, inplace=ip),
          lambda ip: nn.ELU(0.7, inplace=ip), lambda ip: nn.SiLU(inplace=ip), lambda ip: nn.Mish(inplace=ip)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("make", LAYERS, ids=["relu", "leaky_relu", "elu", "silu", "mish"])
def test_inplace_activation_in_a_model_matches_out_of_place(dev, make):
    grads = []
    for inplace in (False, True):
        ag.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 6), make(inplace), nn.Linear(6, 2)).to(dev).double()
        x = ag.tensor(np.random.default_rng(1).standard_normal((5, 3)), device=dev, requires_grad=True)
        out = m(x)
        (out * ag.arange(2, device=dev, dtype=ag.float64)).sum().backward()
        grads.append([out.detach().cpu().numpy()] + [p.grad.cpu().numpy() for p in [x, *m.parameters()]])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", LAYERS, ids=["relu", "leaky_relu", "elu", "silu", "mish"])
def test_inplace_activation_overwrites_its_input(make):
    x = ag.tensor([-1.5, -0.2, 0.0, 0.3, 2.0], dtype=ag.float64)
    expect = make(False)(x).numpy()
    y = make(True)(x)
    np.testing.assert_array_equal(x.numpy(), expect)
    np.testing.assert_array_equal(y.numpy(), expect)
