"""GradScaler's algorithm (scale, unscale, skip on overflow, backoff and growth, state dict) and autocast's
state (the op lists are tested with the ops)."""

import math

import numpy as np
import pytest

import autograd as ag
import nn
from autograd.amp import fp32, lower


def _model():
    p = nn.Parameter(ag.tensor([1.0, -2.0]))
    return p, nn.optim.SGD([p], lr=0.1)


def test_scale_unscale_step_and_growth():
    p, opt = _model()
    scaler = nn.amp.GradScaler(init_scale=8.0, growth_interval=2)
    loss = (p * p).sum()
    scaled = scaler.scale(loss)
    assert float(scaled) == 8.0 * float(loss)
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), 8.0 * np.array([2.0, -4.0]))
    scaler.step(opt)  # unscales first
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.1 * 2.0, -2.0 + 0.1 * 4.0], rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 8.0
    opt.zero_grad()
    scaler.scale((p * p).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 16.0  # two clean steps with growth_interval=2


def test_overflow_skips_step_and_backs_off():
    p, opt = _model()
    scaler = nn.amp.GradScaler(init_scale=4.0)
    before = p.detach().numpy().copy()
    (p * math.inf).sum().backward()
    scaler.step(opt)
    np.testing.assert_array_equal(p.detach().numpy(), before)
    scaler.update()
    assert scaler.get_scale() == 2.0


def test_unscale_twice_errors_and_state_dict():
    p, opt = _model()
    scaler = nn.amp.GradScaler(init_scale=4.0)
    scaler.scale((p * p).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [2.0, -4.0])
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    other = nn.amp.GradScaler()
    other.load_state_dict(sd)
    assert other.get_scale() == 4.0 and other.state_dict() == sd
    off = nn.amp.GradScaler(enabled=False)
    assert off.scale(p) is p and off.state_dict() == {}


def test_autocast_state_and_casts():
    x = ag.ones(2, 2)
    h = ag.ones(2, dtype=ag.bfloat16)
    assert lower(x)[0] is x and fp32(h)[0] is h
    with ag.amp.autocast("cpu"):
        assert ag.amp.is_autocast_enabled("cpu") and not ag.amp.is_autocast_enabled("cuda")
        assert lower(x)[0].dtype == ag.bfloat16
        assert fp32(h)[0].dtype == ag.float32
        with ag.amp.autocast("cpu", enabled=False):
            assert lower(x)[0] is x
    assert not ag.amp.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        ag.amp.autocast("cpu", dtype=ag.float64)


def test_autocast_op_lists():
    from nn import functional as F  # noqa: N812

    x = ag.randn(4, 8, requires_grad=True)
    lin = nn.Linear(8, 3)
    with ag.autocast("cpu", dtype=ag.bfloat16):
        y = lin(x)
        z = x @ x.mT
        p = F.softmax(y, dim=-1)
        loss = F.cross_entropy(y, ag.tensor([0, 1, 2, 0]))
    assert y.dtype == ag.bfloat16 and z.dtype == ag.bfloat16
    assert p.dtype == ag.float32 and loss.dtype == ag.float32
    loss.backward()
    assert x.grad.dtype == ag.float32 and lin.weight.grad.dtype == ag.float32
    assert (x @ x.mT).dtype == ag.float32  # outside the region
