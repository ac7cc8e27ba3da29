"""Padding layers, PixelShuffle/Unshuffle and InstanceNorm (issue 15) against NumPy references of PyTorch's
formulas, gradcheck in float64, interpreted cuda, and torch's module paths."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

DEVICES = ["cpu", "cuda"]
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "constant": "constant"}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("kind", ["Reflection", "Replication", "Zero", "Constant", "Circular"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_padding_layers(dev, kind, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, 3) + (4,) * n).astype(np.float32)
    pad = tuple(int(v) for v in rng.integers(0, 3, 2 * n))
    cls = getattr(nn, f"{kind}Pad{n}d")
    layer = cls(pad, 1.5) if kind == "Constant" else cls(pad)
    out = layer(ag.tensor(x, device=dev))
    width = [(0, 0), (0, 0)] + [(pad[2 * (n - 1 - d)], pad[2 * (n - 1 - d) + 1]) for d in range(n)]
    mode = {"Reflection": "reflect", "Replication": "replicate", "Zero": "constant", "Constant": "constant",
            "Circular": "circular"}[kind]
    kw = {"constant_values": 1.5 if kind == "Constant" else 0.0} if mode == "constant" else {}
    np.testing.assert_array_equal(out.cpu().numpy(), np.pad(x, width, NP_MODE[mode], **kw))
    unbatched = layer(ag.tensor(x[0], device=dev))
    np.testing.assert_array_equal(unbatched.cpu().numpy(), out[0].cpu().numpy())


def test_padding_errors_and_repr():
    assert repr(nn.ReflectionPad2d(2)) == "ReflectionPad2d((2, 2, 2, 2))"
    with pytest.raises(ValueError, match="ReflectionPad2d: padding must be an int or a tuple of 4 ints"):
        nn.ReflectionPad2d((1, 2))
    with pytest.raises(ValueError, match="ZeroPad2d: expected a 3D \\(unbatched\\) or 4D"):
        nn.ZeroPad2d(1)(ag.ones(5))


@pytest.mark.parametrize("dev", DEVICES)
def test_pixel_shuffle_round_trip_and_layout(dev):
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float32).reshape(2, 8, 2, 3)
    out = nn.PixelShuffle(2)(ag.tensor(x, device=dev)).cpu().numpy()
    ref = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(out, ref)
    back = nn.PixelUnshuffle(2)(ag.tensor(out, device=dev)).cpu().numpy()
    np.testing.assert_array_equal(back, x)
    assert F.pixel_shuffle(ag.ones(3, 2, 9, 2, 2), 3).shape == (3, 2, 1, 6, 6)  # extra leading dims
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(ag.ones(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match="divisible by downscale_factor"):
        F.pixel_unshuffle(ag.ones(1, 1, 3, 4), 2)


def test_pixel_shuffle_gradcheck():
    x = ag.tensor(np.random.default_rng(0).standard_normal((1, 4, 2, 3)), requires_grad=True)
    assert ag.gradcheck(lambda t: F.pixel_shuffle(t, 2), (x,))


def _inorm_ref(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_instance_norm(dev, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, 3) + (5,) * n).astype(np.float32) * 3 + 1
    m = getattr(nn, f"InstanceNorm{n}d")(3, affine=True).to(dev)
    with ag.no_grad():
        m.weight.copy_(ag.tensor([1.0, 2.0, -1.0], device=dev))
        m.bias.copy_(ag.tensor([0.0, 0.5, 1.0], device=dev))
    out = m(ag.tensor(x, device=dev)).detach().cpu().numpy()
    shape = (1, 3) + (1,) * n
    ref = _inorm_ref(x.astype(np.float64)) * np.array([1.0, 2.0, -1.0]).reshape(shape) + \
        np.array([0.0, 0.5, 1.0]).reshape(shape)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    single = m(ag.tensor(x[0], device=dev)).detach().cpu().numpy()
    np.testing.assert_allclose(single, out[0], rtol=1e-5, atol=1e-6)


def test_instance_norm_running_stats_and_gradcheck():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 2, 6)) * 2 + 3
    m = nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5).double()
    m(ag.tensor(x))
    inst_mean = x.mean(2).mean(0)
    inst_var = x.var(2, ddof=1).mean(0)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * inst_mean, rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(), 0.5 + 0.5 * inst_var, rtol=1e-12)
    assert int(m.num_batches_tracked) == 0  # (PyTorch 2.13's InstanceNorm never counts batches)
    m.eval()
    out = m(ag.tensor(x)).numpy()
    rm, rv = m.running_mean.numpy()[None, :, None], m.running_var.numpy()[None, :, None]
    np.testing.assert_allclose(out, (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-12)
    t = ag.tensor(x[:2, :, :4], requires_grad=True)
    w = ag.tensor([1.5, -0.5], dtype=ag.float64, requires_grad=True)
    assert ag.gradcheck(lambda a, w: F.instance_norm(a, weight=w), (t, w))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(5)(ag.ones(2, 3, 4))
    with pytest.raises(ValueError, match="to match num_features \\(5\\), but got: 3"):
        nn.InstanceNorm1d(5, affine=True)(ag.ones(2, 3, 4))


def test_torch_module_paths():
    from nn.modules.activation import MultiheadAttention
    from nn.modules.batchnorm import BatchNorm2d
    from nn.modules.dropout import Dropout2d
    from nn.modules.linear import NonDynamicallyQuantizableLinear
    from nn.modules.rnn import LSTM
    from nn.modules.sparse import Embedding

    assert MultiheadAttention is nn.MultiheadAttention and Dropout2d is nn.Dropout2d and LSTM is nn.LSTM
    assert Embedding is nn.Embedding and BatchNorm2d is nn.BatchNorm2d
    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
