"""MultiheadAttention vs a NumPy implementation of PyTorch's multi_head_attention_forward (layouts, masks,
weights, kdim/vdim, bias_kv, zero_attn) with gradients; TransformerEncoderLayer/Encoder vs a NumPy
composition; state-dict keys as PyTorch's."""

import math

import numpy as np
import pytest

import autograd as ag
import nn

from . import nnref as npref
from .nnref import N, T, fd_grads, rand


def _additive(mask):
    if mask is None:
        return 0.0
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def mha_ref(q, k, v, P, H, batch_first=False, key_padding_mask=None, attn_mask=None, average=True,
            add_zero_attn=False):
    """(output, weights) of PyTorch's MultiheadAttention for parameters ``P`` (its state-dict names)."""
    unbatched = q.ndim == 2
    if unbatched:
        q, k, v = q[:, None], k[:, None], v[:, None]
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask[None]
    elif batch_first:
        q, k, v = (a.swapaxes(0, 1) for a in (q, k, v))
    L, B, E = q.shape
    D = E // H
    if "in_proj_weight" in P:
        wq, wk, wv = np.split(P["in_proj_weight"], 3)
    else:
        wq, wk, wv = P["q_proj_weight"], P["k_proj_weight"], P["v_proj_weight"]
    bq, bk, bv = np.split(P["in_proj_bias"], 3) if "in_proj_bias" in P else (0.0, 0.0, 0.0)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv  # (L, B, E), (S, B, E)
    mask = np.broadcast_to(_additive(attn_mask), (1, 1, 1, 1)) if attn_mask is None else _additive(attn_mask)
    kpm = None if key_padding_mask is None else _additive(key_padding_mask)  # (B, S)
    if "bias_k" in P:
        K = np.concatenate([K, np.broadcast_to(P["bias_k"], (1, B, E))])
        V = np.concatenate([V, np.broadcast_to(P["bias_v"], (1, B, E))])
    heads = lambda X: X.reshape(X.shape[0], B, H, D).transpose(1, 2, 0, 3)  # (B, H, S, D)
    Q, K, V = heads(Q), heads(K), heads(V)
    if add_zero_attn:
        K = np.concatenate([K, np.zeros((B, H, 1, D))], 2)
        V = np.concatenate([V, np.zeros((B, H, 1, D))], 2)
    S = K.shape[2]
    scores = Q @ K.swapaxes(-1, -2) / math.sqrt(D)
    if attn_mask is not None:
        m = mask if mask.ndim == 2 else mask.reshape(B, H, L, -1)
        m = np.concatenate([m, np.zeros(m.shape[:-1] + (S - m.shape[-1],))], -1)  # bias_kv/zero_attn columns
        scores = scores + m
    if kpm is not None:
        kpm = np.concatenate([kpm, np.zeros((B, S - kpm.shape[-1]))], -1)
        scores = scores + kpm[:, None, None, :]
    w = npref.softmax(scores, -1)
    out = (w @ V).transpose(2, 0, 1, 3).reshape(L, B, E) @ P["out_proj.weight"].T + P["out_proj.bias"]
    w = w.mean(1) if average else w
    if unbatched:
        return out[:, 0], w[0]
    return (out.swapaxes(0, 1) if batch_first else out), w


def _params(m):
    return {n: N(p) for n, p in m.named_parameters()}


def _randomize_biases(m):
    with ag.no_grad():
        for n, p in m.named_parameters():
            if "bias" in n or "norm" in n:
                p.copy_(T(rand(*p.shape), dtype=p.dtype))
    return m


def check_mha(m, q, k, v, ref_kw, call_kw, grads=True):
    m.double()
    _randomize_biases(m)
    names = [n for n, _ in m.named_parameters()]
    P = _params(m)
    ts = [T(a, requires_grad=True) for a in (q, k, v)]
    out, w = m(*ts, **call_kw)
    eo, ew = mha_ref(q, k, v, P, m.num_heads, m.batch_first, **ref_kw)
    np.testing.assert_allclose(N(out), eo, rtol=1e-10, atol=1e-12)
    if call_kw.get("need_weights", True):
        np.testing.assert_allclose(N(w), ew, rtol=1e-10, atol=1e-12)
    else:
        assert w is None
    if not grads:
        return
    g = rand(*eo.shape)
    out.backward(T(g))
    ref = lambda q, k, v, *ps: mha_ref(q, k, v, dict(zip(names, ps)), m.num_heads, m.batch_first, **ref_kw)[0]
    num = fd_grads(ref, [q, k, v] + [P[n] for n in names], g)
    for t, e, name in zip(ts + [dict(m.named_parameters())[n] for n in names], num, ["q", "k", "v"] + names):
        np.testing.assert_allclose(N(t.grad), e, rtol=1e-5, atol=1e-7, err_msg=name)


L_, S_, B_, E_, H_ = 3, 4, 2, 4, 2


def _qkv(batch_first=False, kdim=E_, vdim=E_, unbatched=False):
    lay = (lambda n: (n, E_)) if unbatched else ((lambda n: (B_, n, E_)) if batch_first else (lambda n: (n, B_, E_)))
    q = rand(*lay(L_))
    k = rand(*lay(S_)[:-1], kdim)
    v = rand(*lay(S_)[:-1], vdim)
    return q, k, v


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_layouts_and_weights(batch_first, need_weights, average):
    m = nn.MultiheadAttention(E_, H_, batch_first=batch_first)
    check_mha(m, *_qkv(batch_first), dict(average=average),
              dict(need_weights=need_weights, average_attn_weights=average))


def test_mha_unbatched():
    m = nn.MultiheadAttention(E_, H_)
    kpm = np.array([False, False, True, False])
    check_mha(m, *_qkv(unbatched=True), dict(key_padding_mask=kpm), dict(key_padding_mask=ag.tensor(kpm)))


MASKS = {
    "bool_attn": lambda: dict(attn_mask=np.array([[False, True, False, False], [False, False, True, True],
                                                  [True, False, False, False]])),
    "float_attn": lambda: dict(attn_mask=rand(L_, S_)),
    "3d_float_attn": lambda: dict(attn_mask=rand(B_ * H_, L_, S_)),
    "kpm": lambda: dict(key_padding_mask=np.array([[False, False, True, False], [True, False, False, False]])),
    "kpm_and_float": lambda: dict(key_padding_mask=np.array([[False, True, False, False], [False] * 3 + [True]]),
                                  attn_mask=rand(L_, S_)),
}


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("name", list(MASKS))
def test_mha_masks(name, need_weights):
    masks = MASKS[name]()
    m = nn.MultiheadAttention(E_, H_)
    call = {k: ag.tensor(v) for k, v in masks.items()}
    check_mha(m, *_qkv(), masks, dict(call, need_weights=need_weights), grads=need_weights)


def test_mha_kdim_vdim_bias_kv_zero_attn():
    assert list(nn.MultiheadAttention(E_, H_).state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                                "out_proj.bias"]
    assert list(nn.MultiheadAttention(E_, H_, bias=False).state_dict()) == ["in_proj_weight", "out_proj.weight"]
    m = nn.MultiheadAttention(E_, H_, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    assert list(m.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                    "bias_v", "out_proj.weight", "out_proj.bias"]
    assert tuple(m.k_proj_weight.shape) == (E_, 3) and tuple(m.bias_k.shape) == (1, 1, E_)
    kpm = np.array([[False, False, True, False], [True, False, False, False]])
    check_mha(m, *_qkv(True, 3, 5), dict(key_padding_mask=kpm, add_zero_attn=True),
              dict(key_padding_mask=ag.tensor(kpm)))


def test_mha_is_causal_matches_explicit_mask():
    # (before: with a key_padding_mask and no attn_mask, the is_causal hint was silently dropped)
    m = nn.MultiheadAttention(E_, H_).double()
    x = T(rand(L_, B_, E_))
    causal = np.triu(np.ones((L_, L_), dtype=bool), 1)
    ref, _ = m(x, x, x, attn_mask=ag.tensor(causal))
    got, _ = m(x, x, x, attn_mask=ag.tensor(causal), is_causal=True)
    np.testing.assert_allclose(N(got), N(ref), rtol=1e-12)
    got, w = m(x, x, x, is_causal=True)  # PyTorch needs the mask as well; here the hint alone builds it
    np.testing.assert_allclose(N(got), N(ref), rtol=1e-12)
    assert np.all(N(w)[:, causal] == 0)
    kpm = ag.tensor(np.array([[False, False, True], [False, False, False]]))
    ref, _ = m(x, x, x, attn_mask=ag.tensor(causal), key_padding_mask=kpm)
    for need in (True, False):
        got, _ = m(x, x, x, key_padding_mask=kpm, is_causal=True, need_weights=need)
        np.testing.assert_allclose(N(got), N(ref), rtol=1e-12)


def test_mha_gradcheck_and_errors():
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True).double()
    x = T(rand(2, 1, 4), True)
    ps = tuple(m.parameters())
    mask = ag.tensor(np.array([[0.0, -1.0, 0.5], [0.2, 0.0, 0.0]]))
    assert ag.gradcheck(lambda x, *p: m(x, x, x, attn_mask=mask[:, :2])[0], (x,) + ps)
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=ag.zeros(3, 3, dtype=ag.float64))
    with pytest.raises(AssertionError, match="key_padding_mask"):
        m(x, x, x, key_padding_mask=ag.zeros(2, 2, dtype=ag.bool))


# ------------------------------------------------------------------------------------ TransformerEncoderLayer
def layer_ref(x, P, H, norm_first, act, batch_first, src_mask=None, kpm=None, prefix=""):
    p = {k[len(prefix):]: v for k, v in P.items() if k.startswith(prefix)}
    sa_p = {k[len("self_attn."):]: v for k, v in p.items() if k.startswith("self_attn.")}
    ln = lambda y, i: npref.layer_norm(y, (y.shape[-1],), p[f"norm{i}.weight"], p[f"norm{i}.bias"])
    sa = lambda y: mha_ref(y, y, y, sa_p, H, batch_first, key_padding_mask=kpm, attn_mask=src_mask)[0]
    a = np.maximum if act == "relu" else None
    ff = lambda y: ((a(y @ p["linear1.weight"].T + p["linear1.bias"], 0) if act == "relu" else
                     npref.gelu(y @ p["linear1.weight"].T + p["linear1.bias"])) @ p["linear2.weight"].T +
                    p["linear2.bias"])
    if norm_first:
        x = x + sa(ln(x, 1))
        return x + ff(ln(x, 2))
    x = ln(x + sa(x), 1)
    return ln(x + ff(x), 2)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_vs_numpy(norm_first, act, batch_first):
    m = nn.TransformerEncoderLayer(E_, H_, dim_feedforward=6, dropout=0.0, activation=act, batch_first=batch_first,
                                   norm_first=norm_first).double()
    _randomize_biases(m)
    names = [n for n, _ in m.named_parameters()]
    P = _params(m)
    x = rand(B_, L_, E_) if batch_first else rand(L_, B_, E_)
    mask = rand(L_, L_)
    kpm = np.array([[False, False, True], [False, False, False]])
    xt = T(x, requires_grad=True)
    out = m(xt, src_mask=T(mask), src_key_padding_mask=ag.tensor(kpm))
    ref = lambda x, *ps: layer_ref(x, dict(zip(names, ps)), H_, norm_first, act, batch_first, mask, kpm)
    np.testing.assert_allclose(N(out), ref(x, *[P[n] for n in names]), rtol=1e-10, atol=1e-12)
    g = rand(*x.shape)
    out.backward(T(g))
    num = fd_grads(ref, [x] + [P[n] for n in names], g)
    np.testing.assert_allclose(N(xt.grad), num[0], rtol=1e-5, atol=1e-7)
    params = dict(m.named_parameters())
    for n, e in zip(names, num[1:]):
        np.testing.assert_allclose(N(params[n].grad), e, rtol=1e-5, atol=1e-7, err_msg=n)


def test_encoder_layer_dropout_train_eval_and_keys():
    m = nn.TransformerEncoderLayer(E_, H_, dim_feedforward=8, dropout=0.5)
    assert list(m.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
        "norm2.weight", "norm2.bias"]
    assert tuple(m.linear1.weight.shape) == (8, E_)
    x = T(rand(L_, B_, E_), dtype=ag.float32)
    ag.manual_seed(0)
    a = N(m(x))
    ag.manual_seed(1)
    assert not np.allclose(N(m(x)), a)  # dropout is active in training
    m.eval()
    np.testing.assert_array_equal(N(m(x)), N(m(x)))
    P = {k: v.astype(np.float64) for k, v in _params(m).items()}
    np.testing.assert_allclose(N(m(x)), layer_ref(N(x).astype(np.float64), P, H_, False, "relu", False), rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


def test_encoder_stacks_deep_copies():
    layer = nn.TransformerEncoderLayer(E_, H_, dim_feedforward=6, dropout=0.0, norm_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(E_)).double()
    keys = list(enc.state_dict())
    assert keys[:2] == ["layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias"]
    assert keys[-2:] == ["norm.weight", "norm.bias"] and len(keys) == 2 * 12 + 2
    l0, l1 = enc.layers
    assert l0 is not l1 and l0 is not layer and l0.linear1.weight is not l1.linear1.weight
    np.testing.assert_array_equal(N(l0.linear1.weight), N(l1.linear1.weight))  # copies of one layer
    with ag.no_grad():
        l1.linear1.weight.add_(1.0)
    assert not np.allclose(N(l0.linear1.weight), N(l1.linear1.weight))
    _randomize_biases(enc)
    P = _params(enc)
    x = rand(L_, B_, E_)
    mask = rand(L_, L_)
    y = x
    for i in range(2):
        y = layer_ref(y, P, H_, True, "relu", False, mask, prefix=f"layers.{i}.")
    y = npref.layer_norm(y, (E_,), P["norm.weight"], P["norm.bias"])
    np.testing.assert_allclose(N(enc(T(x), mask=T(mask))), y, rtol=1e-10, atol=1e-12)
    assert ag.gradcheck(lambda x: enc(x, mask=T(mask[:2, :2])), (T(rand(2, 1, E_), True),), fast_mode=True)
