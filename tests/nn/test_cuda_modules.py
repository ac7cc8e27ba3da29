"""Every layer and every loss of nn on interpreted cuda gives the cpu results (forward output, gradients of the
inputs and parameters, updated buffers). The cpu results are themselves checked against NumPy references in
test_layers.py, test_norms.py, test_losses.py and test_transformer.py; here each module runs once on each device
from the same parameters and inputs, in float32 (float64 where the cuda kernels promise float64 exactly)."""

import numpy as np
import pytest

import autograd as ag
import nn

pytestmark = pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")

R = np.random.default_rng(7)


def u(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


def ints(hi, *shape):
    return R.integers(0, hi, shape).astype(np.int64)


class _First(nn.Module):
    """MultiheadAttention's output without the weights (a module with one tensor output)."""

    def __init__(self, m, causal=False):
        super().__init__()
        self.m, self.causal = m, causal

    def forward(self, x):
        n = x.shape[0] if not self.m.batch_first else x.shape[1]
        mask = ag.triu(ag.ones(n, n, dtype=ag.bool, device=x.device), diagonal=1) if self.causal else None
        return self.m(x, x, x, attn_mask=mask)[0]


def _run(m, inputs, grad_of, device):
    """Forward (a tensor or a loss), backward of a fixed weighted sum; returns the output, the input gradients,
    the parameter gradients and the buffers, as NumPy copies (a cpu tensor's numpy() shares its memory)."""
    ts = []
    for a, g in zip(inputs, grad_of):
        t = ag.tensor(a, device=device)
        ts.append(t.requires_grad_() if g else t)
    out = m(*ts)
    w = ag.tensor(np.linspace(-1.0, 1.0, max(out.numel(), 1), dtype=np.float32).reshape(out.shape),
                  dtype=out.dtype, device=device)
    (out * w).sum().backward()
    grads = [t.grad.cpu().numpy().copy() for t, g in zip(ts, grad_of) if g]
    pgrads = [(n, None if p.grad is None else p.grad.cpu().numpy().copy()) for n, p in m.named_parameters()]
    bufs = [(n, b.cpu().numpy().copy()) for n, b in m.named_buffers()]
    return out.detach().cpu().numpy().copy(), grads, pgrads, bufs


def check(make, inputs, grad_of=None, train=True, rtol=1e-4, atol=1e-5):
    grad_of = grad_of if grad_of is not None else [np.issubdtype(a.dtype, np.floating) for a in inputs]
    m = make()
    m.train(train)
    state = {k: v.clone() for k, v in m.state_dict().items()}
    ref = _run(m, inputs, grad_of, "cpu")
    m.load_state_dict(state)
    for p in m.parameters():
        p.grad = None
    m.to("cuda")
    assert all(p.device.type == "cuda" for p in m.parameters())
    got = _run(m, inputs, grad_of, "cuda")
    np.testing.assert_allclose(got[0], ref[0], rtol=rtol, atol=atol, err_msg="forward")
    for a, b in zip(got[1], ref[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="input gradient")
    for (n, a), (_, b) in zip(got[2], ref[2]):
        assert (a is None) == (b is None), n
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"gradient of {n}")
    for (n, a), (_, b) in zip(got[3], ref[3]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"buffer {n}")


LAYERS = {
    "Linear": (lambda: nn.Linear(5, 3), [u(4, 5)]),
    "Identity+Flatten": (lambda: nn.Sequential(nn.Identity(), nn.Flatten()), [u(2, 3, 4)]),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), [u(2, 6)]),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3, stride=2, padding=1), [u(2, 2, 9)]),
    "Conv2d": (lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2, dilation=1), [u(2, 4, 5, 6)]),
    "Conv2d_stride_dilation": (lambda: nn.Conv2d(2, 3, (3, 2), stride=(2, 1), padding=(2, 0), dilation=2),
                               [u(1, 2, 7, 6)]),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
                        [u(2, 3, 4, 3)]),
    "MaxPool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1), [u(2, 3, 7, 6)]),
    "MaxPool2d_ceil": (lambda: nn.MaxPool2d(2, ceil_mode=True), [u(1, 2, 5, 5)]),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [u(2, 3, 7, 6)]),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), [u(2, 3, 7, 5)]),
    "Upsample_nearest": (lambda: nn.Upsample(scale_factor=2, mode="nearest"), [u(1, 2, 3, 4)]),
    "Upsample_bilinear": (lambda: nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False), [u(1, 2, 3, 4)]),
    "Upsample_bilinear_ac": (lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                             [u(1, 2, 3, 4)]),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(5), [u(6, 5)]),
    "BatchNorm1d_3d": (lambda: nn.BatchNorm1d(3), [u(4, 3, 5)]),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), [u(4, 3, 5, 2)]),
    "LayerNorm": (lambda: nn.LayerNorm((3, 4)), [u(2, 3, 4)]),
    "RMSNorm": (lambda: nn.RMSNorm(4), [u(3, 4)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), [u(3, 4, 5)]),
    "Dropout_eval": (lambda: nn.Dropout(0.5), [u(4, 5)]),
    "Dropout_p0": (lambda: nn.Dropout(0.0), [u(4, 5)]),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=2), [ints(10, 3, 5)]),
    "Embedding_max_norm": (lambda: nn.Embedding(10, 4, max_norm=1.0), [ints(10, 7)]),
    "activations": (lambda: nn.Sequential(nn.ReLU(), nn.LeakyReLU(0.1), nn.ELU(), nn.GELU(), nn.SiLU(), nn.Mish(),
                                          nn.Tanh(), nn.Sigmoid(), nn.Softplus(beta=2.0)), [u(4, 5, lo=-3, hi=3)]),
    "GELU_tanh": (lambda: nn.GELU(approximate="tanh"), [u(4, 5, lo=-3, hi=3)]),
    "Softmax": (lambda: nn.Softmax(dim=0), [u(4, 5)]),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), [u(4, 5)]),
    "MultiheadAttention": (lambda: _First(nn.MultiheadAttention(8, 2, batch_first=True)), [u(2, 5, 8)]),
    "MultiheadAttention_causal": (lambda: _First(nn.MultiheadAttention(8, 2), causal=True), [u(5, 2, 8)]),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                   batch_first=True), [u(2, 5, 8)]),
    "TransformerEncoderLayer_norm_first": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                              norm_first=True), [u(5, 2, 8)]),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_on_cuda_matches_cpu(name):
    make, inputs = LAYERS[name]
    check(make, inputs, train=not name.startswith("Dropout_eval"))


def test_batchnorm_eval_on_cuda_matches_cpu():
    def make():
        m = nn.BatchNorm2d(3)
        m.running_mean.copy_(ag.tensor(u(3)))
        m.running_var.copy_(ag.tensor(u(3, lo=0.5, hi=2.0)))
        return m
    check(make, [u(2, 3, 4, 4)], train=False)


class _Loss(nn.Module):
    """A loss module with a parameterless forward over (input, target[, extra])."""

    def __init__(self, loss, transform=None):
        super().__init__()
        self.loss, self.transform = loss, transform

    def forward(self, *args):
        if self.transform is not None:
            args = (self.transform(args[0]),) + args[1:]
        return self.loss(*args)


P = u(4, 3, lo=0.05, hi=0.95)
W3 = u(3, lo=0.5, hi=2.0)
LOSSES = {
    "MSELoss": (lambda: nn.MSELoss(), [u(4, 3), u(4, 3)]),
    "MSELoss_none": (lambda: nn.MSELoss(reduction="none"), [u(4, 3), u(4, 3)]),
    "L1Loss_sum": (lambda: nn.L1Loss(reduction="sum"), [u(4, 3), u(4, 3)]),
    "SmoothL1Loss": (lambda: nn.SmoothL1Loss(beta=0.5), [u(4, 3), u(4, 3)]),
    "HuberLoss": (lambda: nn.HuberLoss(delta=0.3), [u(4, 3), u(4, 3)]),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(), [u(5, 4), ints(4, 5)]),
    "CrossEntropyLoss_opts": (lambda: nn.CrossEntropyLoss(weight=ag.tensor(u(4, lo=0.5, hi=2.0)), ignore_index=1,
                                                          label_smoothing=0.1), [u(6, 4), ints(4, 6)]),
    "CrossEntropyLoss_probs": (lambda: nn.CrossEntropyLoss(reduction="none"), [u(3, 4), u(3, 4, lo=0.0, hi=0.5)]),
    "CrossEntropyLoss_2d": (lambda: nn.CrossEntropyLoss(), [u(2, 4, 3, 2), ints(4, 2, 3, 2)]),
    "NLLLoss": (lambda: _Loss(nn.NLLLoss(weight=ag.tensor(W3)), lambda x: x.log_softmax(-1)), [u(5, 3), ints(3, 5)]),
    "BCELoss": (lambda: nn.BCELoss(), [P, u(4, 3, lo=0.0, hi=1.0)]),
    "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(pos_weight=ag.tensor(W3)), [u(4, 3, lo=-3, hi=3),
                                                                                  u(4, 3, lo=0.0, hi=1.0)]),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), [np.log(P), P[::-1].copy()]),
    "KLDivLoss_log_target": (lambda: nn.KLDivLoss(reduction="sum", log_target=True), [np.log(P), np.log(P[::-1])]),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(margin=0.1), [u(4, 5), u(4, 5),
                                                                          np.array([1, -1, 1, -1], np.float32)]),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_on_cuda_matches_cpu(name):
    make, inputs = LOSSES[name]
    grad_of = [np.issubdtype(a.dtype, np.floating) for a in inputs]
    if name.startswith("CosineEmbedding"):
        grad_of[2] = False  # the ±1 labels
    check(make, inputs, grad_of)
