"""Gradients at the points where the formula is 0/0 or NaN, as PyTorch 2.13 gives them."""

import math

import autograd as ag
from autograd.gradcheck import gradcheck


def test_clamp_gradient_is_zero_at_nan():
    x = ag.tensor([math.nan, 0.5, 2.0, -1.0], requires_grad=True)
    x.clamp(0, 1).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]
    y = ag.tensor([math.nan, 0.5], requires_grad=True)
    y.clamp(min=0).sum().backward()
    assert y.grad.tolist() == [0.0, 1.0]
    lo = ag.tensor([0.0, 0.6], requires_grad=True)
    z = ag.tensor([math.nan, 0.5], requires_grad=True)
    z.clamp(min=lo).sum().backward()
    assert z.grad.tolist() == [0.0, 0.0] and lo.grad.tolist() == [0.0, 1.0]
    w = ag.tensor([0.3, -2.0, 5.0], dtype=ag.float64, requires_grad=True)
    assert gradcheck(lambda t: t.clamp(-1.0, 1.0), (w,))


def test_atan2_gradient_is_zero_at_the_origin():
    a = ag.tensor([0.0, 0.0, 1.0], requires_grad=True)
    b = ag.tensor([0.0, -0.0, 2.0], requires_grad=True)
    ag.atan2(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, -0.0, 0.4000000059604645] and b.grad.tolist() == [-0.0, -0.0, -0.20000000298023224]
    u = ag.tensor([0.3, -1.2], dtype=ag.float64, requires_grad=True)
    v = ag.tensor([-0.7, 2.0], dtype=ag.float64, requires_grad=True)
    assert gradcheck(ag.atan2, (u, v))
