"""autograd.onnx.export: every nn layer family and the example models, checked by onnx.checker (full_check, in
export) and run in onnxruntime on cpu against eager at sizes other than the traced ones."""

import os
import sys

import numpy as np
import pytest

import autograd as ag
import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from char_gpt import GPT  # noqa: E402
from train_digits import make_model  # noqa: E402

RUNTIME_OPSETS = [17, 18, 20, 23]  # what onnxruntime runs here (newer opsets: checker only, below)


def _ort(model, feeds):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _check(model, make, dyn=(0,), opsets=(18,), atol=1e-5, n_in=1):
    """Export ``model`` traced on ``make(2)``, run it on ``make(5)`` in onnxruntime, compare with eager."""
    model.eval()
    x = make(3)
    x = x if isinstance(x, tuple) else (x,)
    names = [f"x{i}" for i in range(len(x))]
    del n_in
    for opset in opsets:
        proto = ag.onnx.export(model, x, None, input_names=names, dynamic_axes={n: list(dyn) for n in names},
                               opset_version=opset)
        x2 = make(5)
        x2 = x2 if isinstance(x2, tuple) else (x2,)
        got = _ort(proto, {n: t.numpy() for n, t in zip(names, x2)})
        with ag.no_grad():
            want = model(*x2)
        want = [w for w in _flat(want) if w is not None]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=atol, err_msg=f"opset {opset}")
    return proto


def _flat(r):
    return [x for o in r for x in _flat(o)] if isinstance(r, tuple | list) else [r]


def _img(c, h=8, w=8):
    return lambda n: ag.randn(n, c, h, w)


def _seq(c, length=7):
    return lambda n: ag.randn(n, c, length)


# name -> (module factory, input maker for a batch size, dynamic axes of the inputs)
LAYERS = {
    "linear": (lambda: nn.Linear(6, 4), lambda n: ag.randn(n, 6), (0,)),
    "linear_3d": (lambda: nn.Linear(6, 4, bias=False), lambda n: ag.randn(n, 3, 6), (0, 1)),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), _seq(3), (0,)),
    "conv2d_same_groups": (lambda: nn.Conv2d(4, 6, 3, padding="same", groups=2, dilation=2), _img(4), (0,)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), _seq(3), (0,)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), _img(3), (0,)),
    "maxpool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1), _img(2), (0,)),
    "avgpool2d": (lambda: nn.AvgPool2d(2, count_include_pad=False, padding=1), _img(2), (0,)),
    "adaptive_avgpool2d": (lambda: nn.AdaptiveAvgPool2d((2, 4)), _img(2), (0,)),
    "global_avgpool2d": (lambda: nn.AdaptiveAvgPool2d(1), _img(2), (0,)),
    "batchnorm2d": (lambda: nn.BatchNorm2d(3), _img(3), (0,)),
    "batchnorm1d": (lambda: nn.BatchNorm1d(3), lambda n: ag.randn(n, 3), (0,)),
    "layernorm": (lambda: nn.LayerNorm((4, 5)), lambda n: ag.randn(n, 4, 5), (0,)),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), _img(4), (0,)),
    "rmsnorm": (lambda: nn.RMSNorm(5), lambda n: ag.randn(n, 3, 5), (0, 1)),
    "instancenorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), _img(3), (0,)),
    "activations": (lambda: nn.Sequential(nn.ReLU(), nn.Linear(5, 5), nn.GELU(), nn.Linear(5, 5), nn.SiLU(),
                                          nn.Mish(), nn.LeakyReLU(0.2), nn.ELU(0.5), nn.Tanh(), nn.Sigmoid(),
                                          nn.Softplus(beta=2.0), nn.GELU("tanh")),
                    lambda n: ag.randn(n, 5) * 3, (0,)),
    "softmax": (lambda: nn.Sequential(nn.Softmax(dim=-1)), lambda n: ag.randn(n, 3, 5), (0, 1)),
    "log_softmax": (lambda: nn.LogSoftmax(dim=1), lambda n: ag.randn(n, 5), (0,)),
    "embedding": (lambda: nn.Embedding(11, 4), lambda n: ag.randint(0, 11, (n, 3)), (0, 1)),
    "dropout_eval": (lambda: nn.Sequential(nn.Dropout(0.5), nn.Dropout2d(0.3)), _img(2), (0,)),
    "flatten_unflatten": (lambda: nn.Sequential(nn.Flatten(), nn.Unflatten(1, (4, 16))), _img(1), (0,)),
    "identity": (lambda: nn.Sequential(nn.Identity(), nn.Linear(3, 2)), lambda n: ag.randn(n, 3), (0,)),
    "zeropad2d": (lambda: nn.ZeroPad2d((1, 2, 0, 1)), _img(2), (0,)),
    "reflectionpad1d": (lambda: nn.ReflectionPad1d(2), _seq(2), (0,)),
    "replicationpad2d": (lambda: nn.ReplicationPad2d(1), _img(2), (0,)),
    "constantpad1d": (lambda: nn.ConstantPad1d((2, 1), 0.5), _seq(2), (0,)),
    "pixelshuffle": (lambda: nn.Sequential(nn.PixelShuffle(2), nn.PixelUnshuffle(2)), _img(8, 3, 5), (0,)),
    "upsample_nearest": (lambda: nn.Upsample(scale_factor=2, mode="nearest"), _img(2, 3, 4), (0,)),
    "upsample_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), _img(2, 3, 4), (0,)),
    "multihead_attention": (lambda: _SelfAttention(nn.MultiheadAttention(8, 2, batch_first=True)),
                            lambda n: ag.randn(n, 5, 8), (0, 1)),
    "multihead_attention_weights_mask": (lambda: _MaskedAttention(nn.MultiheadAttention(8, 2)),
                                         lambda n: (ag.randn(n + 2, n, 8), ag.arange(n + 2) >= n + 1), (0, 1)),
    "transformer_encoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                                     batch_first=True), 2),
                            lambda n: ag.randn(n, 5, 8), (0, 1)),
    "rnn_tanh": (lambda: nn.RNN(3, 4, num_layers=2), lambda n: ag.randn(n + 1, n, 3), (0, 1)),
    "rnn_relu_bidirectional": (lambda: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True, bias=False),
                               lambda n: ag.randn(n + 1, n, 3), (0, 1)),
    "lstm": (lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True),
             lambda n: ag.randn(n, n + 2, 3), (0, 1)),
    "lstm_hx": (lambda: _WithState(nn.LSTM(3, 4, num_layers=2)), lambda n: (ag.randn(n + 1, n, 3),
                                                                            ag.randn(2, n, 4), ag.randn(2, n, 4)),
                (0, 1)),
    "gru": (lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True), lambda n: ag.randn(n + 1, n, 3), (0, 1)),
    "gru_hx": (lambda: _WithState(nn.GRU(3, 4, batch_first=True)), lambda n: (ag.randn(n, n + 1, 3),
                                                                             ag.randn(1, n, 4)), (0, 1)),
    "rnn_unrolled_in_a_loop": (lambda: _Cell(nn.LSTMCell(3, 4)), lambda n: ag.randn(n, 3), (0,)),
}


class _SelfAttention(nn.Module):
    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class _MaskedAttention(nn.Module):
    """Sequence-first attention with a key padding mask, returning the averaged weights too."""

    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, x, pad):
        return self.mha(x, x, x, key_padding_mask=pad.unsqueeze(0).expand(x.shape[1], -1))


class _WithState(nn.Module):
    """An RNN given its initial state: the output and the final states, flat."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h, c=None):
        out, state = self.rnn(x, (h, c) if c is not None else h)
        return (out, *state) if isinstance(state, tuple) else (out, state)


class _Cell(nn.Module):
    """A cell stepped three times by Python: unrolled while tracing."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x):
        h, c = self.cell(x)
        for _ in range(2):
            h, c = self.cell(x, (h, c))
        return h + c


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_family_runs_in_onnxruntime(name):
    factory, make, dyn = LAYERS[name]
    ag.manual_seed(0)
    m = factory()
    if name.startswith("batchnorm"):  # non-trivial running statistics
        m.train()
        with ag.no_grad():
            m(make(8) * 2 + 1)
    _check(m, make, dyn)


@pytest.mark.parametrize("opset", RUNTIME_OPSETS)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_digits_models(kind, opset):
    ag.manual_seed(0)
    _check(make_model(kind), lambda n: ag.rand(n, 1, 8, 8), (0,), opsets=(opset,))


@pytest.mark.parametrize("opset", RUNTIME_OPSETS)
def test_char_gpt_dynamic_batch_and_sequence(opset):
    ag.manual_seed(0)
    g = GPT(vocab_size=13, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.1)
    lengths = iter([8, 5, 8, 11])

    def make(n):
        return ag.randint(0, 13, (n, next(lengths)))
    proto = _check(g, make, (0, 1), opsets=(opset,))
    assert {d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim} == {"x0_dynamic_axes_1",
                                                                                      "x0_dynamic_axes_2"}


# tensor-op mappings, one function each: name -> (fn, input makers for a batch size)
def _x(*shape):
    return lambda n: ag.randn(n, *shape)


def _pos(*shape):
    return lambda n: ag.rand(n, *shape) + 0.5


OPS = {
    "arith": (lambda x, y: (x + y * 2 - 1.5) / (y.abs() + 1) + 3 - x - (2 * x) ** 2, (_x(3), _x(3))),
    "rsub_rdiv_pow": (lambda x: (1 - x) + 2 / (x.abs() + 1) + x.pow(3) + 2 ** x, (_x(3),)),
    "add_alpha_sub": (lambda x, y: ag.add(x, y, alpha=2) - ag.sub(x, y, alpha=0.5), (_x(3), _x(1))),
    "unary": (lambda x: x.exp() + x.sin() + x.cos() + x.tanh() + x.sigmoid() + x.relu() + x.erf() + x.neg()
              + x.floor() + x.ceil() + x.sign() + x.abs().sqrt() + x.abs().add(1).rsqrt() + x.square()
              + x.abs().log1p() + x.expm1() + x.abs().add(1).log() + x.abs().add(1).log2()
              + x.abs().add(1).reciprocal() + x.atan(), (_x(4),)),
    "clamp": (lambda x: x.clamp(-0.5, 0.5) + x.clamp_min(0.1) + x.clamp_max(0.2) + x.clamp(min=0), (_x(4),)),
    "compare_where": (lambda x, y: ag.where(x > y, x, y) + ag.where((x <= 0) & (y != 0), 1.0, 0.0)
                      + (x == x).float() + (x >= 0.5).float() + (x < y).logical_not().float(), (_x(4), _x(4))),
    "floor_divide_remainder": (lambda x: (x * 3) // 2 + (x * 3) % 2 + ag.remainder(x, -1.5), (_x(4),)),
    "maximum_minimum": (lambda x, y: ag.maximum(x, y) - ag.minimum(x, y), (_x(4), _x(4))),
    "masked_fill": (lambda x: x.masked_fill(x < 0, -1.0), (_x(3, 4),)),
    "reshape_view_permute": (lambda x: x.reshape(x.shape[0], 2, 6).permute(2, 0, 1).transpose(0, 1)
                             .contiguous().view(-1, 12), (_x(3, 4),)),
    "t_T_mT": (lambda x: x.mT + x.transpose(-1, -2), (_x(3, 3),)),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(1).unsqueeze(-1).squeeze(-1).squeeze(1) + x[:, None, :].squeeze(),
                          (_x(4),)),
    "expand_repeat": (lambda x: x[:, :1].expand(-1, 4) + x.repeat(1, 2)[:, :4] + x.expand_as(x), (_x(4),)),
    "cat_stack_split_chunk": (lambda x: ag.cat([*x.split(2, dim=1), x], dim=1) + ag.stack(x.chunk(2, 1), -1)
                              .flatten(1).repeat(1, 2), (_x(4),)),
    "unbind": (lambda x: sum(x.unbind(1)), (_x(3, 2),)),
    "getitem": (lambda x: x[:, 1:3] + x[:, -2:, ...][..., ::1] + x[:, 0:1] * x[:, 2, None], (_x(4, 5),)),
    "getitem_negative_step_flip": (lambda x: x.flip(1) + x[:, 0].unsqueeze(1), (_x(4),)),
    "getitem_tensor_index": (lambda x, i: x[:, i], (_x(6), lambda n: ag.tensor([0, 3, 5, 3]))),
    "index_select_gather": (lambda x: x.index_select(1, ag.tensor([2, 0])).sum(1, keepdim=True)
                            + x.gather(1, ag.zeros(x.shape[0], 2, dtype=ag.int64)).sum(1, keepdim=True), (_x(3),)),
    "narrow_select": (lambda x: x.narrow(1, 1, 2) + x.select(1, 0).unsqueeze(1), (_x(4),)),
    "tril_triu": (lambda x: x.tril() + x.triu(1), (_x(4, 4),)),
    "reductions": (lambda x: x.sum() + x.mean(1).sum() + x.amax(-1).sum() + x.amin(1).sum() + x.prod(1).sum()
                   + x.var(1).sum() + x.std(1, keepdim=True).sum() + ag.logsumexp(x, 1).sum() + x.norm(dim=1).sum(),
                   (_x(5),)),
    "max_min_dim": (lambda x: x.max(1).values + x.min(1)[0] + x.argmax(1).float() + x.argmin(-1).float()
                    + x.max() + x.max(1, keepdim=True)[1].squeeze(1).float(), (_x(5),)),
    "all_any": (lambda x: (x > 0).all(1).float() + (x > 0).any(1).float(), (_x(5),)),
    "cumsum": (lambda x: x.cumsum(1), (_x(5),)),
    "matmul_bmm": (lambda x, y: ag.matmul(x, y.transpose(1, 2)) + ag.bmm(x, y.transpose(1, 2)), (_x(3, 4), _x(3, 4))),
    "factories": (lambda x: x + ag.zeros(x.shape[0], 3) + ag.ones_like(x) + ag.full((x.shape[0], 1), 2.0)
                  + ag.arange(3).float() + x.new_zeros(x.shape) + ag.zeros_like(x), (_x(3),)),
    "casts": (lambda x: (x * 4).long().float() + (x > 0).to(ag.float32) + x.double().float(), (_x(3),)),
    "one_hot_embedding_bag": (lambda i: F_one_hot(i), (lambda n: ag.randint(0, 5, (n, 3)),)),
    "pad_sdpa_mask": (lambda q, m: F_sdpa(q, m), (_x(2, 4, 8), lambda n: ag.rand(4, 4) > 0.3)),
}


def F_one_hot(i):  # noqa: N802
    from nn import functional as F  # noqa: N812

    return F.one_hot(i, 5).float() * 2


def F_sdpa(q, m):  # noqa: N802
    from nn import functional as F  # noqa: N812

    m = m | ag.eye(4, dtype=ag.bool)
    return F.scaled_dot_product_attention(q, q * 2, q + 1, attn_mask=m) + \
        F.scaled_dot_product_attention(q, q, q, attn_mask=m.float() * 0.5)


@pytest.mark.parametrize("name", list(OPS))
def test_op_mapping(name):
    fn, makers = OPS[name]
    ag.manual_seed(1)
    make = lambda n: tuple(m(n) for m in makers)  # noqa: E731
    dyn = (0,) if name not in ("getitem_tensor_index", "pad_sdpa_mask") else ()
    if name == "pad_sdpa_mask":
        make = lambda n: (makers[0](n), makers[1](n))  # noqa: E731
        dyn = (0,)
    _check_fn(fn, make, dyn)


def _check_fn(fn, make, dyn):
    x = make(3)
    names = [f"x{i}" for i in range(len(x))]
    axes = {n: list(dyn) for n, t in zip(names, x) if dyn and t.ndim and t.shape[0] == 3}
    for opset in (17, 23):
        proto = ag.onnx.export(fn, x, None, input_names=names, dynamic_axes=axes, opset_version=opset)
        x2 = make(5) if axes else x
        x2 = tuple(b if a.shape[0] == 3 else a for a, b in zip(x, x2))
        got = _ort(proto, {n: t.numpy() for n, t in zip(names, x2)})
        want = fn(*x2)
        np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"opset {opset}")


def test_every_opset_passes_the_checker():
    m = make_model("cnn").eval()
    g = GPT(vocab_size=13, block_size=16, n_layer=1, n_head=2, n_embd=8, dropout=0.0).eval()
    gru = nn.GRU(3, 4, bidirectional=True).eval()
    for opset in range(ag.onnx.MIN_OPSET, ag.onnx.max_opset() + 1):  # check_model(full_check) runs in export
        ag.onnx.export(m, (ag.randn(2, 1, 8, 8),), None, opset_version=opset)
        ag.onnx.export(g, (ag.randint(0, 13, (2, 5)),), None, opset_version=opset, dynamic_axes={"input_0": [0, 1]})
        ag.onnx.export(gru, (ag.randn(4, 2, 3),), None, opset_version=opset)


def test_opset_out_of_range():
    with pytest.raises(ValueError, match="opset_version=16 is outside the supported range"):
        ag.onnx.export(nn.Linear(2, 2), (ag.randn(1, 2),), None, opset_version=16)


def test_unsupported_op_names_op_and_opset():
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match=r"op 'cummax' .*at opset 18"):
        ag.onnx.export(lambda x: x.cummax(1).values, (ag.randn(2, 3),), None)
    m = nn.BatchNorm1d(3).train()
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match=r"'batch_norm'.*training mode.*model.eval"):
        ag.onnx.export(m, (ag.randn(4, 3),), None, training="preserve")
    ag.onnx.export(m, (ag.randn(4, 3),), None)  # the default: traced in eval mode...
    assert m.training  # ...and the mode restored
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match=r"'getitem'.*boolean mask"):
        ag.onnx.export(lambda x: x[x > 0], (ag.randn(5),), None)


def test_export_writes_a_file_and_constant_folding(tmp_path):
    w = ag.randn(3, 3)
    fn = lambda x: x @ (w.t() * 2)  # noqa: E731  (a captured constant and ops on it only: folded)
    p = tmp_path / "f.onnx"
    proto = ag.onnx.export(fn, (ag.randn(2, 3),), str(p), do_constant_folding=True)
    assert [n.op_type for n in proto.graph.node] == ["MatMul", "Identity"]
    loaded = onnx.load(str(p))
    onnx.checker.check_model(loaded, full_check=True)
    x = ag.randn(2, 3)
    np.testing.assert_allclose(_ort(loaded, {"input_0": x.numpy()})[0], fn(x).numpy(), rtol=1e-5, atol=1e-6)
    assert {"linear", "conv2d", "rnn", "scaled_dot_product_attention"} <= set(ag.onnx.supported_ops())
    lin = _ScaledLinear()
    tr = ag.jit.trace(lin, (ag.randn(2, 3),))
    assert [n.op for n in tr.graph.nodes] == ["t", "mul", "matmul"]  # ops on parameters stay in the trace
    kept = ag.onnx.export(tr, (ag.randn(2, 3),), None, do_constant_folding=False)
    folded = ag.onnx.export(tr, (ag.randn(2, 3),), None, do_constant_folding=True)
    assert "Mul" in [n.op_type for n in kept.graph.node] and "Mul" not in [n.op_type for n in folded.graph.node]
    for proto in (kept, folded):
        np.testing.assert_allclose(_ort(proto, {"input_0": x.numpy()})[0], lin(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


class _ScaledLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(ag.randn(2, 3))

    def forward(self, x):
        return x @ (self.weight.t() * 2.0)


def test_export_of_a_traced_module_and_bad_names():
    m = nn.Linear(2, 2)
    tr = ag.jit.trace(m, (ag.randn(1, 2),))
    proto = ag.onnx.export(tr, (ag.randn(1, 2),), None, input_names=["a"], output_names=["b"])
    assert [i.name for i in proto.graph.input] == ["a"] and [o.name for o in proto.graph.output] == ["b"]
    with pytest.raises(ValueError, match="dynamic_axes names"):
        ag.onnx.export(tr, (ag.randn(1, 2),), None, dynamic_axes={"nope": [0]})
    with pytest.raises(ValueError, match="input_names"):
        ag.onnx.export(tr, (ag.randn(1, 2),), None, input_names=["a", "b"])


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_export_of_a_cuda_model():
    ag.manual_seed(0)
    m = make_model("mlp").eval()
    x = ag.rand(3, 1, 8, 8)
    want = m(x).detach().numpy()
    m.to("cuda")
    proto = ag.onnx.export(m, (x.to("cuda"),), None, dynamic_axes={"input_0": [0]})
    np.testing.assert_allclose(_ort(proto, {"input_0": x.numpy()})[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(reduction):
    from nn import functional as F  # noqa: N812

    ag.manual_seed(0)
    w = ag.rand(5) + 0.5

    def fn(x, t):
        ce = F.cross_entropy(x, t, reduction=reduction, ignore_index=2)
        nll = F.nll_loss(F.log_softmax(x, 1), t, weight=w, reduction=reduction)
        return ce + nll + F.mse_loss(x, x * 0.5, reduction=reduction if reduction != "none" else "mean")

    _check_fn(fn, lambda n: (ag.randn(n, 5), ag.randint(0, 5, (n,))), (0,))
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match="label_smoothing"):
        ag.onnx.export(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
                       (ag.randn(3, 5), ag.randint(0, 5, (3,))), None)


@pytest.mark.parametrize("opset", [19, 23])
def test_circular_pad(opset):
    m = nn.CircularPad2d((1, 2, 2, 0))
    _check(m, _img(2, 4, 5), (0,), opsets=(opset,))
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match="circular.*opset 18"):
        ag.onnx.export(m, (ag.randn(1, 2, 4, 5),), None, opset_version=18)


def test_autograd_functions_inline_or_refuse():
    from .test_jit import _DoubleGrad, _OwnKernel

    _check_fn(lambda x: _DoubleGrad.apply(x.sin()) + 1, lambda n: (ag.randn(n, 3),), (0,))
    with pytest.raises(ag.onnx.UnsupportedOperatorError, match="'_OwnKernel'.*cannot be inlined"):
        ag.onnx.export(lambda x: _OwnKernel.apply(x) * 2, (ag.randn(3),), None)
