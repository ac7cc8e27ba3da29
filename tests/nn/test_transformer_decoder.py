"""TransformerDecoderLayer, TransformerDecoder and Transformer vs NumPy references written from PyTorch's
formulas (and, when torch is installed, vs PyTorch itself from the same state_dict), on cpu and interpreted cuda."""

import math

import numpy as np
import pytest

import autograd as ag
import nn

from . import nnref as npref
from .nnref import N, T, rand
from .test_transformer import _randomize_biases, mha_ref

L_, S_, B_, E_, H_ = 3, 4, 2, 4, 2


def _sub(P, prefix):
    return {k[len(prefix):]: v for k, v in P.items() if k.startswith(prefix)}


def dec_layer_ref(x, mem, P, H, norm_first, batch_first, tgt_mask=None, mem_mask=None, tgt_kpm=None, mem_kpm=None,
                  act="relu"):
    """PyTorch's TransformerDecoderLayer: x + SA(x), x + MHA(x, memory), x + FF(x), each with a LayerNorm."""
    ln = lambda y, i: npref.layer_norm(y, (y.shape[-1],), P[f"norm{i}.weight"], P[f"norm{i}.bias"])
    sa = lambda y: mha_ref(y, y, y, _sub(P, "self_attn."), H, batch_first, key_padding_mask=tgt_kpm,
                           attn_mask=tgt_mask)[0]
    ca = lambda y: mha_ref(y, mem, mem, _sub(P, "multihead_attn."), H, batch_first, key_padding_mask=mem_kpm,
                           attn_mask=mem_mask)[0]
    a = (lambda h: np.maximum(h, 0)) if act == "relu" else npref.gelu
    ff = lambda y: a(y @ P["linear1.weight"].T + P["linear1.bias"]) @ P["linear2.weight"].T + P["linear2.bias"]
    if norm_first:
        x = x + sa(ln(x, 1))
        x = x + ca(ln(x, 2))
        return x + ff(ln(x, 3))
    x = ln(x + sa(x), 1)
    x = ln(x + ca(x), 2)
    return ln(x + ff(x), 3)


def _inputs(batch_first):
    x = rand(B_, L_, E_) if batch_first else rand(L_, B_, E_)
    mem = rand(B_, S_, E_) if batch_first else rand(S_, B_, E_)
    return x, mem


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_vs_numpy_and_gradcheck(norm_first, batch_first):
    m = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=6, dropout=0.0, batch_first=batch_first,
                                   norm_first=norm_first).double()
    _randomize_biases(m)
    P = {n: N(p) for n, p in m.named_parameters()}
    x, mem = _inputs(batch_first)
    tgt_mask = np.triu(np.ones((L_, L_), bool), 1)
    mem_mask = rand(L_, S_)
    tgt_kpm = np.array([[False, False, True], [False, False, False]])
    mem_kpm = np.array([[False, True, False, False], [False, False, False, True]])
    kw = dict(tgt_mask=ag.tensor(tgt_mask), memory_mask=T(mem_mask), tgt_key_padding_mask=ag.tensor(tgt_kpm),
              memory_key_padding_mask=ag.tensor(mem_kpm))
    out = m(T(x), T(mem), **kw)
    ref = dec_layer_ref(x, mem, P, H_, norm_first, batch_first, tgt_mask, mem_mask, tgt_kpm, mem_kpm)
    np.testing.assert_allclose(N(out), ref, rtol=1e-10, atol=1e-12)
    xt, mt = T(x, requires_grad=True), T(mem, requires_grad=True)
    assert ag.gradcheck(lambda a, b, *ps: m(a, b, **kw), (xt, mt) + tuple(m.parameters()))


def test_decoder_layer_float32_gelu_callable_activation():
    m = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=5, dropout=0.0, activation=nn.functional.gelu)
    m2 = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=5, dropout=0.0, activation="gelu")
    m2.load_state_dict(m.state_dict())
    P = {n: N(p).astype(np.float64) for n, p in m.named_parameters()}
    x, mem = _inputs(False)
    ref = dec_layer_ref(x, mem, P, H_, False, False, act="gelu")
    for mod in (m, m2):
        out = mod(T(x, dtype=ag.float32), T(mem, dtype=ag.float32))
        assert out.dtype == ag.float32
        np.testing.assert_allclose(N(out), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerDecoderLayer(E_, H_, activation="tanh")


def test_decoder_state_dict_keys_and_stack():
    layer = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=6, dropout=0.0)
    keys = set(layer.state_dict())
    for k in ("self_attn.in_proj_weight", "self_attn.out_proj.bias", "multihead_attn.in_proj_bias",
              "multihead_attn.out_proj.weight", "linear1.weight", "linear2.bias", "norm1.weight", "norm2.bias",
              "norm3.weight"):
        assert k in keys
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(E_)).double()
    _randomize_biases(dec)
    assert dec.layers[0].linear1.weight is not dec.layers[1].linear1.weight
    P = {n: N(p) for n, p in dec.named_parameters()}
    x, mem = _inputs(False)
    y = x
    for i in range(2):
        y = dec_layer_ref(y, mem, _sub(P, f"layers.{i}."), H_, False, False)
    y = npref.layer_norm(y, (E_,), P["norm.weight"], P["norm.bias"])
    np.testing.assert_allclose(N(dec(T(x), T(mem))), y, rtol=1e-10, atol=1e-12)


def test_causal_flag_and_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == ag.float32 and tuple(mask.shape) == (4, 4)
    expect = np.where(np.triu(np.ones((4, 4), bool), 1), -np.inf, 0.0)
    np.testing.assert_array_equal(N(mask), expect)
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=ag.float64).dtype == ag.float64
    m = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=6, dropout=0.0).double()
    x, mem = _inputs(False)
    a = m(T(x), T(mem), tgt_mask=nn.Transformer.generate_square_subsequent_mask(L_, dtype=ag.float64))
    b = m(T(x), T(mem), tgt_is_causal=True)
    np.testing.assert_allclose(N(a), N(b), rtol=1e-12, atol=1e-12)


def test_transformer_vs_numpy_and_errors():
    t = nn.Transformer(E_, H_, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=6, dropout=0.0).double()
    _randomize_biases(t)
    P = {n: N(p) for n, p in t.named_parameters()}
    src, tgt = rand(S_, B_, E_), rand(L_, B_, E_)
    e = _sub(P, "encoder.layers.0.")
    ln = lambda y, p: npref.layer_norm(y, (E_,), p["weight"], p["bias"])
    mem = ln(src + mha_ref(src, src, src, _sub(e, "self_attn."), H_)[0], _sub(e, "norm1."))
    mem = ln(mem + np.maximum(mem @ e["linear1.weight"].T + e["linear1.bias"], 0) @ e["linear2.weight"].T +
             e["linear2.bias"], _sub(e, "norm2."))
    mem = ln(mem, _sub(P, "encoder.norm."))
    tmask = np.where(np.triu(np.ones((L_, L_), bool), 1), -np.inf, 0.0)
    y = dec_layer_ref(tgt, mem, _sub(P, "decoder.layers.0."), H_, False, False, tgt_mask=tmask)
    y = ln(y, _sub(P, "decoder.norm."))
    out = t(T(src), T(tgt), tgt_mask=T(tmask))
    np.testing.assert_allclose(N(out), y, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="batch number"):
        t(T(rand(S_, 3, E_)), T(tgt))
    with pytest.raises(RuntimeError, match="d_model"):
        t(T(rand(S_, B_, E_ + 2)), T(rand(L_, B_, E_ + 2)))
    with pytest.raises(AssertionError, match="key_padding_mask"):
        t(T(src), T(tgt), tgt_key_padding_mask=ag.zeros(B_, L_ + 1, dtype=ag.bool))


@pytest.mark.parametrize("batch_first,norm_first", [(False, False), (True, True)])
def test_loads_pytorch_transformer_state_dict(batch_first, norm_first):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tt = torch.nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                              batch_first=batch_first, norm_first=norm_first).double().eval()
    ours = nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                          batch_first=batch_first, norm_first=norm_first).double().eval()
    sd = {k: ag.tensor(v.detach().numpy()) for k, v in tt.state_dict().items()}
    assert set(sd) == set(ours.state_dict())
    ours.load_state_dict(sd)
    src = np.random.default_rng(1).standard_normal((2, 5, 8) if batch_first else (5, 2, 8))
    tgt = np.random.default_rng(2).standard_normal((2, 4, 8) if batch_first else (4, 2, 8))
    kpm = np.array([[False] * 4 + [True], [False] * 5])
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    with torch.no_grad():
        expect = tt(torch.from_numpy(src), torch.from_numpy(tgt), tgt_mask=tmask,
                    src_key_padding_mask=torch.from_numpy(kpm), memory_key_padding_mask=torch.from_numpy(kpm)).numpy()
    got = ours(T(src), T(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(4, dtype=ag.float64),
               src_key_padding_mask=ag.tensor(kpm), memory_key_padding_mask=ag.tensor(kpm))
    np.testing.assert_allclose(N(got), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_decoder_layer_cuda_matches_cpu():
    from .test_cuda_modules import check

    class _Dec(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=6, dropout=0.0, norm_first=True)

        def forward(self, x, mem):
            return self.m(x, mem, tgt_is_causal=True)

    x, mem = _inputs(False)
    check(_Dec, [x.astype(np.float32), mem.astype(np.float32)])


def test_unbatched_decoder_layer():
    m = nn.TransformerDecoderLayer(E_, H_, dim_feedforward=6, dropout=0.0).double()
    x, mem = _inputs(False)
    P = {n: N(p) for n, p in m.named_parameters()}
    out = m(T(x[:, 0]), T(mem[:, 0]))
    np.testing.assert_allclose(N(out), dec_layer_ref(x[:, :1], mem[:, :1], P, H_, False, False)[:, 0],
                               rtol=1e-10, atol=1e-12)
    assert math.isfinite(float(out.sum()))
