"""Linear, shape layers, convolutions, pooling, Upsample, Dropout, Embedding and activations: forward and the
gradients of the input and the parameters vs NumPy references (float64), gradcheck through the modules."""

import math

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

from . import nnref as npref
from .nnref import N, T, check_module, gradcheck_module, rand


# ------------------------------------------------------------------------------------------ Linear & shape
def test_linear_forward_backward_closed_form():
    m = nn.Linear(5, 3).double()
    x = rand(4, 5)
    xt = T(x, requires_grad=True)
    out = m(xt)
    w, b = N(m.weight), N(m.bias)
    np.testing.assert_allclose(N(out), x @ w.T + b, rtol=1e-12)
    g = rand(4, 3)
    out.backward(T(g))
    np.testing.assert_allclose(N(xt.grad), g @ w, rtol=1e-12)
    np.testing.assert_allclose(N(m.weight.grad), g.T @ x, rtol=1e-12)
    np.testing.assert_allclose(N(m.bias.grad), g.sum(0), rtol=1e-12)


def test_linear_batched_nobias_and_gradcheck():
    m = nn.Linear(3, 2, bias=False)
    assert m.bias is None and list(m.state_dict()) == ["weight"]
    check_module(m, lambda x, w: x @ w.T, rand(2, 3, 3))
    gradcheck_module(nn.Linear(3, 2), rand(2, 3))
    with pytest.raises(RuntimeError, match="linear"):
        nn.Linear(3, 2)(ag.ones(2, 4))


def test_identity_flatten_unflatten():
    x = rand(2, 3, 4, 5)
    assert nn.Identity(3, foo=1)(T(x)) is not None
    np.testing.assert_array_equal(N(nn.Identity()(T(x))), x)
    np.testing.assert_array_equal(N(nn.Flatten()(T(x))), x.reshape(2, 60))
    np.testing.assert_array_equal(N(nn.Flatten(0, 2)(T(x))), x.reshape(24, 5))
    np.testing.assert_array_equal(N(nn.Unflatten(1, (3, 1))(T(x[:, :, 0, 0]))), x[:, :, 0, 0].reshape(2, 3, 1))
    xt = T(x, requires_grad=True)
    g = rand(2, 12, 5)
    nn.Flatten(1, 2)(xt).backward(T(g))
    np.testing.assert_array_equal(N(xt.grad), g.reshape(x.shape))
    xt = T(x[:, :, 0, 0], requires_grad=True)
    g = rand(2, 3, 1)
    nn.Unflatten(-1, (3, 1))(xt).backward(T(g))
    np.testing.assert_array_equal(N(xt.grad), g.reshape(2, 3))


# ------------------------------------------------------------------------------------------- convolutions
CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="same", stride=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(groups=2, padding=1),
    dict(padding="valid", bias=False),
]


@pytest.mark.parametrize("kw", CONV2D, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_conv2d_vs_numpy(kw):
    kw = dict(kw)
    bias = kw.pop("bias", True)
    k = (3, 2) if kw.get("padding") == "same" else 3
    m = nn.Conv2d(4, 2, k, bias=bias, **kw)
    x = rand(1, 4, 6, 5)
    names = ["weight", "bias"] if bias else ["weight"]
    check_module(m, lambda x, w, b=None: npref.conv2d(x, w, b, **kw), x, param_names=names)


def test_conv1d_vs_numpy_and_gradcheck():
    m = nn.Conv1d(2, 4, 3, stride=2, padding=1, dilation=1, groups=2)
    assert tuple(m.weight.shape) == (4, 1, 3)
    check_module(m, lambda x, w, b: npref.conv1d(x, w, b, stride=2, padding=1, groups=2), rand(2, 2, 7))
    gradcheck_module(nn.Conv1d(2, 2, 2, padding="same"), rand(1, 2, 5))


def test_conv2d_gradcheck_functional():
    x, w, b = T(rand(1, 2, 5, 4), True), T(rand(4, 1, 2, 2), True), T(rand(4), True)
    assert ag.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=(2, 1), groups=2),
                        (x, w, b))


@pytest.mark.parametrize("kw", [dict(stride=2, output_padding=1), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=3, padding=1, output_padding=2, dilation=1),
                                dict(groups=2, stride=1, dilation=2)])
def test_conv_transpose2d_vs_numpy(kw):
    m = nn.ConvTranspose2d(2, 4, 3, **kw)
    assert tuple(m.weight.shape) == (2, 4 // kw.get("groups", 1), 3, 3)
    x = rand(2, 2, 3, 4)
    out = check_module(m, lambda x, w, b: npref.conv_transpose2d(x, w, b, **kw), x)
    s, p, op, d = kw.get("stride", 1), kw.get("padding", 0), kw.get("output_padding", 0), kw.get("dilation", 1)
    assert out.shape[2] == (3 - 1) * s - 2 * p + d * 2 + op + 1


def test_conv_transpose2d_gradcheck():
    gradcheck_module(nn.ConvTranspose2d(2, 1, 2, stride=2, output_padding=1), rand(1, 2, 2, 2))


def test_conv_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")


# ------------------------------------------------------------------------------------------------ pooling
@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))])
def test_max_pool2d(k, s, p):
    x = rand(2, 3, 7, 6)
    check_module(nn.MaxPool2d(k, s, p), lambda x: npref.max_pool2d(x, k, s, p), x)


def test_max_pool2d_ceil_mode():
    x = rand(1, 2, 5, 5)
    ref = npref.max_pool2d(np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf), 2)
    check_module(nn.MaxPool2d(2, ceil_mode=True), lambda x: npref.max_pool2d(
        np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf), 2), x)
    assert ref.shape == (1, 2, 3, 3)


def test_max_pool2d_gradient_goes_to_the_max():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    xt = T(x, requires_grad=True)
    nn.MaxPool2d(2)(xt).sum().backward()
    expect = np.zeros((4, 4))
    expect[1::2, 1::2] = 1
    np.testing.assert_array_equal(N(xt.grad)[0, 0], expect)
    out, idx = nn.MaxPool2d(2, return_indices=True)(T(x))
    np.testing.assert_array_equal(N(idx)[0, 0], [[5, 7], [13, 15]])


@pytest.mark.parametrize("k,s,p,cip", [(2, None, 0, True), (3, 2, 1, True), (3, 2, 1, False),
                                       ((2, 3), 1, (1, 1), True)])
def test_avg_pool2d(k, s, p, cip):
    check_module(nn.AvgPool2d(k, s, p, count_include_pad=cip), lambda x: npref.avg_pool2d(x, k, s, p, cip),
                 rand(2, 2, 5, 6))


@pytest.mark.parametrize("out", [(1, 1), (2, 3), 3, (5, 4)])
def test_adaptive_avg_pool2d(out):
    check_module(nn.AdaptiveAvgPool2d(out), lambda x: npref.adaptive_avg_pool2d(x, out), rand(2, 3, 5, 7))


def test_pool_gradcheck():
    gradcheck_module(nn.AvgPool2d(2, 1, 1), rand(1, 1, 3, 3))
    gradcheck_module(nn.AdaptiveAvgPool2d((2, 2)), rand(1, 1, 3, 5))
    gradcheck_module(nn.MaxPool2d(2, 1), rand(1, 2, 3, 3))


# ----------------------------------------------------------------------------------------------- Upsample
@pytest.mark.parametrize("kw,size", [(dict(scale_factor=2), (6, 8)), (dict(size=(5, 7)), (5, 7)),
                                     (dict(scale_factor=3, mode="nearest"), (9, 12))])
def test_upsample_nearest(kw, size):
    check_module(nn.Upsample(**kw), lambda x: npref.upsample_nearest(x, size), rand(2, 2, 3, 4))


@pytest.mark.parametrize("kw,size,ac", [(dict(scale_factor=2), (6, 8), False), (dict(size=(5, 7)), (5, 7), False),
                                        (dict(size=(5, 7), align_corners=True), (5, 7), True)])
def test_upsample_bilinear(kw, size, ac):
    check_module(nn.Upsample(mode="bilinear", **kw), lambda x: npref.upsample_bilinear(x, size, ac), rand(2, 2, 3, 4))


def test_upsample_gradcheck():
    gradcheck_module(nn.Upsample(scale_factor=2, mode="bilinear"), rand(1, 1, 2, 3))


# -------------------------------------------------------------------------------------------------- Dropout
def test_dropout_train_eval_and_seed():
    m = nn.Dropout(p=0.25)
    x = rand(40, 50) + 2.0  # never zero
    ag.manual_seed(3)
    y = N(m(T(x)))
    zeros = y == 0
    assert 0.2 < zeros.mean() < 0.3
    np.testing.assert_allclose(y[~zeros], x[~zeros] / 0.75, rtol=1e-12)
    ag.manual_seed(3)
    np.testing.assert_array_equal(N(m(T(x))), y)
    xt = T(x, requires_grad=True)
    ag.manual_seed(3)
    m(xt).backward(T(np.ones_like(x)))
    np.testing.assert_allclose(N(xt.grad), np.where(zeros, 0.0, 1 / 0.75))
    m.eval()
    xt = T(x)
    assert m(xt) is xt or np.array_equal(N(m(xt)), x)
    m.train()
    np.testing.assert_array_equal(N(nn.Dropout(1.0)(T(x))), 0 * x)
    np.testing.assert_array_equal(N(nn.Dropout(0.0)(T(x))), x)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_dropout_gradcheck_with_fixed_mask():
    def f(x):
        ag.manual_seed(5)  # the same mask at every evaluation
        return F.dropout(x, 0.4)
    assert ag.gradcheck(f, (T(rand(3, 4) + 2.0, True),))


def test_dropout_inplace():
    x = T(rand(8, 8) + 2.0)
    ag.manual_seed(1)
    y = nn.Dropout(0.5, inplace=True)(x)
    ag.manual_seed(1)
    ref = N(nn.Dropout(0.5)(T(N(x) * 0 + 1)))
    np.testing.assert_array_equal(N(y) == 0, ref == 0)
    np.testing.assert_array_equal(N(x), N(y))


# ------------------------------------------------------------------------------------------------ Embedding
def test_embedding_lookup_gradient_and_padding_idx():
    m = nn.Embedding(6, 3, padding_idx=1).double()
    np.testing.assert_array_equal(N(m.weight)[1], 0)
    idx = np.array([[0, 1, 3], [3, 5, 1]])
    out = m(ag.tensor(idx))
    w = N(m.weight)
    np.testing.assert_array_equal(N(out), w[idx])
    g = rand(2, 3, 3)
    out.backward(T(g))
    expect = np.zeros((6, 3))
    np.add.at(expect, idx, g)
    expect[1] = 0
    np.testing.assert_allclose(N(m.weight.grad), expect, rtol=1e-12)
    assert nn.Embedding(5, 2, padding_idx=-1).padding_idx == 4


def test_embedding_max_norm_renormalizes_referenced_rows():
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 0.0]])
    m = nn.Embedding.from_pretrained(T(w.copy()), max_norm=1.0)
    out = m(ag.tensor(np.array([0, 1, 0])))
    np.testing.assert_allclose(N(out), [[0.6, 0.8], [0.3, 0.4], [0.6, 0.8]], rtol=1e-6)
    np.testing.assert_allclose(N(m.weight)[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(N(m.weight)[2], [6.0, 8.0])  # not referenced: unchanged
    assert not m.weight.requires_grad


def test_embedding_scale_grad_by_freq_and_gradcheck():
    m = nn.Embedding(4, 2, scale_grad_by_freq=True).double()
    idx = np.array([0, 0, 2, 0])
    g = rand(4, 2)
    m(ag.tensor(idx)).backward(T(g))
    expect = np.zeros((4, 2))
    expect[0] = g[[0, 1, 3]].sum(0) / 3
    expect[2] = g[2]
    np.testing.assert_allclose(N(m.weight.grad), expect, rtol=1e-12)
    w = T(rand(5, 3), requires_grad=True)
    assert ag.gradcheck(lambda w: F.embedding(ag.tensor(np.array([[1, 0], [4, 1]])), w), (w,))


# ---------------------------------------------------------------------------------------------- activations
ACTS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.ELU(alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    (nn.GELU(), npref.gelu),
    (nn.GELU(approximate="tanh"), lambda x: npref.gelu(x, "tanh")),
    (nn.SiLU(), lambda x: x * npref.sigmoid(x)),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), npref.sigmoid),
    (nn.Softplus(), npref.softplus),
    (nn.Softplus(beta=2.0, threshold=3.0), lambda x: npref.softplus(x, 2.0, 3.0)),
    (nn.Softmax(dim=1), lambda x: npref.softmax(x, 1)),
    (nn.Softmax(dim=-1), lambda x: npref.softmax(x, -1)),
    (nn.Softmax(dim=0), lambda x: npref.softmax(x, 0)),
    (nn.LogSoftmax(dim=1), lambda x: npref.log_softmax(x, 1)),
    (nn.LogSoftmax(dim=-1), lambda x: npref.log_softmax(x, -1)),
]


@pytest.mark.parametrize("mod,ref", ACTS, ids=lambda a: repr(a) if isinstance(a, nn.Module) else "")
def test_activation_vs_numpy(mod, ref):
    x = rand(3, 4, 5, lo=-3, hi=3)
    check_module(mod, ref, x)
    gradcheck_module(mod, rand(2, 3, lo=-3, hi=3))


def test_activation_inplace_and_functional():
    x = rand(3, 4)
    t = T(x.copy())
    y = F.relu(t, inplace=True)
    np.testing.assert_array_equal(N(t), np.maximum(x, 0))
    assert y is t
    t = T(x.copy())
    nn.ReLU(inplace=True)(t)
    np.testing.assert_array_equal(N(t), np.maximum(x, 0))
    t = T(x.copy())
    F.leaky_relu(t, 0.1, inplace=True)
    np.testing.assert_allclose(N(t), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(N(F.softmax(T(x), dim=0)), npref.softmax(x, 0))
    np.testing.assert_allclose(N(F.log_softmax(T(x[0]))), npref.log_softmax(x[0], 0))  # implicit dim of 1-D: 0
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU(approximate="fast")


# -------------------------------------------------------------------------------------- default initialization
def _uniform_ok(a, bound):
    a = N(a).ravel()
    assert np.all(np.abs(a) <= bound + 1e-7), (np.abs(a).max(), bound)
    assert np.abs(a).max() > 0.8 * bound  # fills the range
    # U(-b, b) has std b/sqrt(3)
    assert abs(a.std() - bound / math.sqrt(3)) < 0.15 * bound / math.sqrt(3)


def test_default_init_linear_conv():
    m = nn.Linear(100, 60)
    _uniform_ok(m.weight, 1 / math.sqrt(100))
    _uniform_ok(m.bias, 1 / math.sqrt(100))
    c = nn.Conv2d(6, 40, (3, 5), groups=2)  # fan_in = 3 * 3 * 5
    _uniform_ok(c.weight, 1 / math.sqrt(45))
    _uniform_ok(c.bias, 1 / math.sqrt(45))
    c = nn.Conv1d(4, 50, 3)
    _uniform_ok(c.weight, 1 / math.sqrt(12))
    t = nn.ConvTranspose2d(8, 30, 3)  # weight (in, out, k, k): fan_in = size(1) * k * k = 30 * 9
    _uniform_ok(t.weight, 1 / math.sqrt(270))
    _uniform_ok(t.bias, 1 / math.sqrt(270))


def test_default_init_embedding_norms_mha():
    e = N(nn.Embedding(200, 50).weight)
    assert abs(e.mean()) < 0.03 and abs(e.std() - 1.0) < 0.03
    for m in (nn.BatchNorm2d(5), nn.LayerNorm(5), nn.GroupNorm(1, 5)):
        np.testing.assert_array_equal(N(m.weight), 1)
        np.testing.assert_array_equal(N(m.bias), 0)
    np.testing.assert_array_equal(N(nn.RMSNorm(5).weight), 1)
    mha = nn.MultiheadAttention(40, 4)
    _uniform_ok(mha.in_proj_weight, math.sqrt(6 / (40 + 120)))  # xavier_uniform on (3E, E)
    np.testing.assert_array_equal(N(mha.in_proj_bias), 0)
    np.testing.assert_array_equal(N(mha.out_proj.bias), 0)
    _uniform_ok(mha.out_proj.weight, 1 / math.sqrt(40))
    mha = nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    _uniform_ok(mha.k_proj_weight, math.sqrt(6 / (8 + 3)))


def test_init_follows_manual_seed():
    ag.manual_seed(7)
    a = N(nn.Linear(4, 3).weight)
    ag.manual_seed(7)
    np.testing.assert_array_equal(N(nn.Linear(4, 3).weight), a)


# ---------------------------------------------------------------------------------------------- repr, devices
@pytest.mark.parametrize("mod,text", [
    (lambda: nn.Conv2d(1, 16, 3, padding=1), "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"),
    (lambda: nn.Conv2d(2, 4, 3, stride=2, bias=False, groups=2),
     "Conv2d(2, 4, kernel_size=(3, 3), stride=(2, 2), groups=2, bias=False)"),
    (lambda: nn.Conv1d(2, 4, 3, padding="same"), "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same)"),
    (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1),
     "ConvTranspose2d(2, 3, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    (lambda: nn.BatchNorm2d(8),
     "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (lambda: nn.LayerNorm(16), "LayerNorm((16,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (lambda: nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (lambda: nn.Dropout(), "Dropout(p=0.5, inplace=False)"),
    (lambda: nn.Embedding(10, 3, padding_idx=0), "Embedding(10, 3, padding_idx=0)"),
    (lambda: nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (lambda: nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (lambda: nn.AdaptiveAvgPool2d((1, 1)), "AdaptiveAvgPool2d(output_size=(1, 1))"),
    (lambda: nn.Linear(3, 4), "Linear(in_features=3, out_features=4, bias=True)"),
    (lambda: nn.ReLU(), "ReLU()"),
    (lambda: nn.ReLU(inplace=True), "ReLU(inplace=True)"),
    (lambda: nn.GELU(approximate="tanh"), "GELU(approximate='tanh')"),
    (lambda: nn.LeakyReLU(0.2), "LeakyReLU(negative_slope=0.2)"),
    (lambda: nn.Softmax(dim=-1), "Softmax(dim=-1)"),
    (lambda: nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), "Upsample(scale_factor=2.0, mode='bilinear')"),
    (lambda: nn.Upsample(size=(4, 5)), "Upsample(size=(4, 5), mode='nearest')"),
])
def test_repr_like_pytorch(mod, text):
    assert repr(mod()) == text


def test_double_keeps_parameters_and_computes_in_float64():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 9, 3))
    ids = [id(p) for p in m.parameters()]
    m.double()
    assert [id(p) for p in m.parameters()] == ids
    assert all(p.dtype == ag.float64 for p in m.parameters())
    assert m(T(rand(2, 1, 5, 5))).dtype == ag.float64


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Linear(5, 3), (4, 5)),
    (lambda: nn.Sequential(nn.LayerNorm(5), nn.GELU(), nn.Softmax(-1)), (4, 5)),
    (lambda: nn.Conv2d(2, 3, 3, padding=1), (1, 2, 5, 5)),
    (lambda: nn.BatchNorm1d(5), (4, 5)),
    (lambda: nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.SiLU(), nn.ELU(), nn.LeakyReLU(0.1)), (3, 4)),
])
def test_to_cuda_matches_cpu(make, shape):
    m = make()
    x = rand(*shape).astype(np.float32)
    xr = T(x, dtype=ag.float32, requires_grad=True)
    ref_out = m(xr)
    F.mse_loss(ref_out, ag.zeros(*ref_out.shape)).backward()
    ref_grads = [N(p.grad) for p in m.parameters()]
    m.zero_grad()
    m.to("cuda")
    assert all(p.device.type == "cuda" for p in m.parameters())
    xc = T(x, dtype=ag.float32).to("cuda").requires_grad_()

    def run():
        out = m(xc)
        F.mse_loss(out, ag.zeros(*out.shape, device="cuda")).backward()
        return out
    out = run()
    assert out.device.type == "cuda"
    np.testing.assert_allclose(N(out.cpu()), N(ref_out), rtol=1e-4, atol=1e-5)
    for p, g in zip(m.parameters(), ref_grads):
        np.testing.assert_allclose(N(p.grad.cpu()), g, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(N(xc.grad.cpu()), N(xr.grad), rtol=1e-4, atol=1e-6)


def test_autocast_bf16_linear_fp32_softmax_norm_loss():
    m = nn.Linear(4, 3)
    x = T(rand(5, 4), dtype=ag.float32)
    with ag.autocast("cpu", dtype=ag.bfloat16):
        y = m(x)
        assert y.dtype == ag.bfloat16
        assert F.softmax(y, -1).dtype == ag.float32
        assert F.log_softmax(y, -1).dtype == ag.float32
        assert F.layer_norm(y, (3,)).dtype == ag.float32
        assert nn.LayerNorm(3)(y).dtype == ag.float32
        loss = F.cross_entropy(y, ag.tensor(np.array([0, 1, 2, 0, 1])))
        assert loss.dtype == ag.float32
        c = nn.Conv2d(1, 1, 2)(T(rand(1, 1, 3, 3), dtype=ag.float32))
        assert c.dtype == ag.bfloat16
    loss.backward()
    assert m.weight.grad.dtype == ag.float32
    ref = x.numpy() @ N(m.weight).T + N(m.bias)
    np.testing.assert_allclose(N(y).astype(np.float64), ref, rtol=2e-2, atol=2e-2)
    assert m(x).dtype == ag.float32  # outside the region
