"""Complex input to linear, the convolutions and dropout (PyTorch supports their complex autograd): linear as
matmul + bias, a convolution as four real ones, dropout with one mask for both parts; gradcheck on complex128,
values and gradients against torch 2.13 when importable, nn.Linear / nn.Conv1d with complex parameters."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

rng = np.random.default_rng(11)


def c(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _t(a):
    return ag.tensor(a, dtype=ag.complex128 if np.iscomplexobj(a) else ag.float64, requires_grad=True)


CASES = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [c(3, 4), c(2, 4), c(2)]),
    "linear_real_weight": (lambda x, w: F.linear(x, w), [c(3, 4), rng.standard_normal((2, 4))]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, padding=1), [c(2, 2, 5), c(3, 2, 3), c(3)]),
    "conv1d_groups_unbatched": (lambda x, w: F.conv1d(x, w, groups=2, stride=2), [c(4, 7), c(2, 2, 3)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, dilation=1), [c(1, 2, 5, 5), c(3, 2, 3, 3), c(3)]),
    "conv2d_real_input": (lambda x, w: F.conv2d(x, w), [rng.standard_normal((1, 2, 4, 4)), c(2, 2, 2, 2)]),
    "conv_transpose1d": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2), [c(1, 2, 4), c(2, 3, 3), c(3)]),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, padding=1), [c(1, 2, 3, 3), c(2, 1, 3, 3)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    fn, args = CASES[name]
    assert ag.gradcheck(fn, [_t(a) for a in args], raise_exception=True)


def test_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    theirs = {"linear": tf.linear, "linear_real_weight": None, "conv1d": lambda x, w, b: tf.conv1d(x, w, b, padding=1),
              "conv1d_groups_unbatched": lambda x, w: tf.conv1d(x, w, groups=2, stride=2),
              "conv2d": lambda x, w, b: tf.conv2d(x, w, b, stride=2), "conv2d_real_input": None,
              "conv_transpose1d": lambda x, w, b: tf.conv_transpose1d(x, w, b, stride=2),
              "conv_transpose2d": lambda x, w: tf.conv_transpose2d(x, w, padding=1)}
    for name, (fn, args) in CASES.items():
        if theirs[name] is None:  # (torch wants one dtype for input and weight)
            continue
        ours_in = [_t(a) for a in args]
        their_in = [torch.tensor(a, requires_grad=True) for a in args]
        y, yt = fn(*ours_in), theirs[name](*their_in)
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
        y.abs().sum().backward()
        yt.abs().sum().backward()
        for a, b in zip(ours_in, their_in):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_dropout_shares_one_mask_between_the_parts():
    ag.manual_seed(0)
    x = _t(c(200, 50))
    y = F.dropout(x, 0.3, training=True)
    mask = (y.detach().real.numpy() != 0)
    assert np.array_equal(mask, y.detach().imag.numpy() != 0)
    assert 0.6 < mask.mean() < 0.8
    np.testing.assert_allclose(y.detach().numpy()[mask], x.detach().numpy()[mask] / 0.7, rtol=1e-12)
    y.real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(mask, 1 / 0.7, 0), rtol=1e-12)
    assert F.dropout(x, 0.3, training=False) is x
    with pytest.raises(ValueError, match=r"dropout probability p must be in \[0, 1\]"):
        F.dropout(x, 1.5)


def test_modules_with_complex_parameters():
    lin = nn.Linear(4, 3, dtype=ag.complex64)
    conv = nn.Conv1d(2, 3, 3, dtype=ag.complex64)
    assert lin.weight.dtype == ag.complex64 and conv.weight.dtype == ag.complex64
    x = ag.tensor(c(5, 4), dtype=ag.complex64)
    np.testing.assert_allclose(lin(x).detach().numpy(), x.numpy() @ lin.weight.detach().numpy().T
                               + lin.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
    out = conv(ag.tensor(c(1, 2, 6), dtype=ag.complex64))
    assert out.shape == (1, 3, 4) and out.dtype == ag.complex64
    out.abs().sum().backward()
    assert conv.weight.grad.dtype == ag.complex64 and lin.weight.grad is None
    w = lin.weight.detach().numpy()
    assert np.abs(w.real).max() <= 0.5 and np.abs(w.imag).max() <= 0.5 and w.imag.std() > 0.05  # both parts drawn


def test_complex_uniform_and_normal_fill_both_parts():
    u = ag.empty(20000, dtype=ag.complex128).uniform_(-1, 2).numpy()
    assert -1 <= u.real.min() and u.real.max() < 2 and -1 <= u.imag.min() and u.imag.max() < 2
    assert abs(u.real.mean() - 0.5) < 0.03 and abs(u.imag.mean() - 0.5) < 0.03
    z = ag.empty(20000, dtype=ag.complex128).normal_(1.0, 2.0).numpy()
    assert abs(z.mean() - 1.0) < 0.05 and abs(np.mean(np.abs(z - 1) ** 2) - 4.0) < 0.15  # E|z - mean|^2 = std^2
    assert abs(z.real.std() - z.imag.std()) < 0.05
