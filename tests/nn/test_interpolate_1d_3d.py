"""interpolate on (N, C, L) and (N, C, D, H, W) inputs (made of the 2-D resize, autograd/ops/conv_ops.py): linear
and trilinear against a NumPy reference of PyTorch's formula (separable: one 1-D resize per axis), nearest and
area against the 2-D op they reduce to, gradients in float64, cuda interpreted, PyTorch's errors."""

import numpy as np
import pytest

import autograd as ag
from autograd.gradcheck import gradcheck, gradgradcheck
from nn import functional as F  # noqa: N812

RNG = np.random.default_rng(5)


def _linear_1d(a, axis, out, align_corners):
    """PyTorch's linear resize of one axis of ``a`` to ``out`` values (the scale recomputed from the sizes)."""
    n = a.shape[axis]
    i = np.arange(out, dtype=np.float64)
    if align_corners:
        src = i * ((n - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = np.maximum((i + 0.5) * (n / out) - 0.5, 0.0)
    i0 = np.floor(src).astype(int)
    i1 = np.minimum(i0 + 1, n - 1)
    w = (src - i0).reshape([-1 if d == axis % a.ndim else 1 for d in range(a.ndim)])
    return np.take(a, i0, axis) * (1 - w) + np.take(a, i1, axis) * w


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [1, 4, 7, 13])
def test_linear_1d_matches_the_formula(size, align_corners):
    x = RNG.standard_normal((2, 3, 7))
    got = F.interpolate(ag.tensor(x), size=size, mode="linear", align_corners=align_corners).numpy()
    np.testing.assert_allclose(got, _linear_1d(x, 2, size, align_corners), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("align_corners", [False, True])
def test_trilinear_matches_the_separable_formula(align_corners):
    x = RNG.standard_normal((1, 2, 3, 4, 5))
    size = (5, 3, 8)
    want = x
    for axis, n in zip((2, 3, 4), size):
        want = _linear_1d(want, axis, n, align_corners)
    got = F.interpolate(ag.tensor(x), size=size, mode="trilinear", align_corners=align_corners).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area"])
def test_nearest_and_area_are_the_2d_op_of_a_flat_image(mode):
    x = RNG.standard_normal((2, 3, 9))
    got = F.interpolate(ag.tensor(x), size=4 if mode == "area" else 13, mode=mode).numpy()
    want = F.interpolate(ag.tensor(x[:, :, None]), size=(1, 4 if mode == "area" else 13), mode=mode).numpy()[:, :, 0]
    np.testing.assert_array_equal(got, want)
    v = RNG.standard_normal((1, 2, 4, 4, 6))
    got5 = F.interpolate(ag.tensor(v), size=(2, 2, 3), mode=mode).numpy()
    if mode == "area":  # the mean of each (2, 2, 2) block
        want5 = v.reshape(1, 2, 2, 2, 2, 2, 3, 2).mean(axis=(3, 5, 7))
        np.testing.assert_allclose(got5, want5, rtol=1e-12)
    elif mode == "nearest":
        np.testing.assert_array_equal(got5, v[:, :, ::2, ::2, ::2])


@pytest.mark.parametrize("case", [((2, 3, 5), dict(scale_factor=2.0, mode="linear")),
                                  ((2, 3, 5), dict(size=8, mode="linear", align_corners=True)),
                                  ((1, 2, 2, 3, 3), dict(scale_factor=(2.0, 1.5, 1.0), mode="trilinear")),
                                  ((1, 2, 2, 3, 3), dict(size=(3, 2, 4), mode="nearest")),
                                  ((1, 2, 4, 2, 4), dict(size=(2, 1, 2), mode="area"))])
def test_gradients(case):
    shape, kw = case
    x = ag.tensor(RNG.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda t: F.interpolate(t, **kw), (x,))
    assert gradgradcheck(lambda t: F.interpolate(t, **kw), (x,))


def test_cuda_interpreted_matches_cpu():
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    for kw in (dict(scale_factor=2, mode="trilinear"), dict(size=(2, 6, 4), mode="nearest")):
        cpu = F.interpolate(ag.tensor(x), **kw).numpy()
        gpu = F.interpolate(ag.tensor(x, device="cuda"), **kw).cpu().numpy()
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6)
    y = RNG.standard_normal((2, 3, 7)).astype(np.float32)
    np.testing.assert_allclose(F.interpolate(ag.tensor(y, device="cuda"), size=11, mode="linear").cpu().numpy(),
                               F.interpolate(ag.tensor(y), size=11, mode="linear").numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, mode", [((1, 1, 4), "bilinear"), ((1, 1, 4, 4), "linear"),
                                         ((1, 1, 2, 2, 2), "bilinear"), ((1, 1, 4), "trilinear")])
def test_a_mode_of_another_rank_is_refused_as_pytorch_does(shape, mode):
    with pytest.raises(NotImplementedError, match="needs"):
        F.interpolate(ag.zeros(*shape), scale_factor=2, mode=mode)


def test_size_of_the_wrong_length():
    with pytest.raises(ValueError):
        F.interpolate(ag.zeros(1, 1, 2, 2, 2), size=(3, 3), mode="nearest")
