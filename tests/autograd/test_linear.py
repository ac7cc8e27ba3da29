"""ag.linear (the fused op behind nn.Linear): values at odd sizes and on non-contiguous operands, gradients, the
bias broadcast, bad inputs; and ag.default_generator is the generator calls without generator= use."""

import numpy as np
import pytest

import autograd as ag


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (2, 5, 129)])
def test_values_and_grads_odd_sizes_noncontiguous(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((shape[-1], 7))  # stored transposed: weight = w.T is a non-contiguous view
    b = rng.standard_normal(7)
    xt = ag.tensor(x, requires_grad=True)
    wt = ag.tensor(w).mT.detach().requires_grad_(True)
    assert not wt.is_contiguous() or shape[-1] == 1
    bt = ag.tensor(b, requires_grad=True)
    y = ag.linear(xt, wt, bt)
    np.testing.assert_allclose(y.detach().numpy(), x @ w + b, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(y.shape)
    y.backward(ag.tensor(g))
    np.testing.assert_allclose(xt.grad.numpy(), g @ w.T, rtol=1e-12, atol=1e-12)
    g2, x2 = g.reshape(-1, 7), x.reshape(-1, shape[-1])
    np.testing.assert_allclose(wt.grad.numpy(), g2.T @ x2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy(), g2.sum(0), rtol=1e-12, atol=1e-12)


def test_no_bias_and_empty_batch():
    x = ag.zeros(0, 4)
    w = ag.ones(3, 4)
    assert tuple(ag.linear(x, w).shape) == (0, 3)


def test_bad_inputs():
    x, w = ag.ones(2, 4), ag.ones(3, 5)
    with pytest.raises(RuntimeError, match=r"linear\(\): input \[2, 4\] @ weight.T \[5, 3\]"):
        ag.linear(x, w)
    with pytest.raises(RuntimeError, match="bias"):
        ag.linear(ag.ones(2, 5), w, ag.ones(4))
    with pytest.raises(RuntimeError, match="one dtype"):
        ag.linear(ag.ones(2, 5, dtype=ag.float64), w)


def test_default_generator():
    assert isinstance(ag.default_generator, ag.Generator)
    ag.manual_seed(5)
    a = ag.rand(3)
    ag.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), ag.rand(3, generator=ag.default_generator).numpy())
