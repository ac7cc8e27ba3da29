"""Recurrent layers (issue 15, item 1): RNN/LSTM/GRU and the cells against a NumPy reference of PyTorch's
formulas (gate order, projections, directions, layers, batch_first, unbatched input, initial states),
PackedSequence runs equal to running each sequence alone, gradcheck in float64, interpreted cuda equal to
cpu, PyTorch's parameter names and shapes, and (when torch is importable) PyTorch's outputs from the same
weights."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn.utils import rnn as R  # noqa: N812

DEVICES = ["cpu", "cuda"]


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _ref_layer(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
    """One layer and direction over a padded (T, B, H) input, in NumPy float64."""
    outs = [None] * len(x)
    for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
        gi = x[t] @ w_ih.T + (b_ih if b_ih is not None else 0)
        gh = h @ w_hh.T + (b_hh if b_hh is not None else 0)
        if mode == "LSTM":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
            if w_hr is not None:
                h = h @ w_hr.T
        elif mode == "GRU":
            ir, iz, in_ = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = _sig(ir + hr), _sig(iz + hz)
            n = np.tanh(in_ + r * hn)
            h = (1 - z) * n + z * h
        else:
            h = np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)
        outs[t] = h
    return np.stack(outs), h, c


def _ref(m, x, h0=None, c0=None):
    """The whole module (padded, time-major) in NumPy."""
    p = {n: v.detach().cpu().numpy().astype(np.float64) for n, v in m.named_parameters()}
    dirs = 2 if m.bidirectional else 1
    hid = m.proj_size or m.hidden_size
    B = x.shape[1]
    h0 = np.zeros((m.num_layers * dirs, B, hid)) if h0 is None else h0
    c0 = np.zeros((m.num_layers * dirs, B, m.hidden_size)) if c0 is None else c0
    inp, hn, cn = x, [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            s = f"_l{layer}" + ("_reverse" if d else "")
            k = layer * dirs + d
            out, h, c = _ref_layer(m.mode, inp, h0[k], c0[k], p["weight_ih" + s], p["weight_hh" + s],
                                   p.get("bias_ih" + s), p.get("bias_hh" + s), p.get("weight_hr" + s), d == 1)
            outs.append(out)
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, axis=-1)
    return inp, np.stack(hn), np.stack(cn)


CONFIGS = [("LSTM", {}), ("LSTM", dict(num_layers=2, bidirectional=True)), ("LSTM", dict(proj_size=3)),
           ("GRU", dict(num_layers=2)), ("GRU", dict(bidirectional=True, bias=False)), ("RNN", {}),
           ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True))]


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("cls,kw", CONFIGS, ids=[f"{c}-{'-'.join(k)}" for c, k in CONFIGS])
def test_against_the_numpy_reference(dev, cls, kw):
    ag.manual_seed(0)
    m = getattr(nn, cls)(4, 5, **kw).to(dev)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 3, 4)).astype(np.float32)
    dirs = 2 if m.bidirectional else 1
    h0 = rng.standard_normal((m.num_layers * dirs, 3, m.proj_size or 5)).astype(np.float32)
    c0 = rng.standard_normal((m.num_layers * dirs, 3, 5)).astype(np.float32)
    hx = (ag.tensor(h0, device=dev), ag.tensor(c0, device=dev)) if cls == "LSTM" else ag.tensor(h0, device=dev)
    out, state = m(ag.tensor(x, device=dev), hx)
    ref_out, ref_h, ref_c = _ref(m, x.astype(np.float64), h0, c0)
    tol = dict(rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(_np(out), ref_out, **tol)
    if cls == "LSTM":
        np.testing.assert_allclose(_np(state[0]), ref_h, **tol)
        np.testing.assert_allclose(_np(state[1]), ref_c, **tol)
    else:
        np.testing.assert_allclose(_np(state), ref_h, **tol)
    assert out.shape == (6, 3, dirs * (m.proj_size or 5))


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_batch_first_and_unbatched(cls):
    ag.manual_seed(0)
    m = getattr(nn, cls)(4, 5, batch_first=True)
    x = np.random.default_rng(2).standard_normal((3, 6, 4)).astype(np.float32)
    out, _ = m(ag.tensor(x))
    ref_out, _, _ = _ref(m, x.transpose(1, 0, 2).astype(np.float64))
    np.testing.assert_allclose(_np(out), ref_out.transpose(1, 0, 2), rtol=2e-5, atol=2e-6)
    m.batch_first = False
    single, state = m(ag.tensor(x[0]))  # unbatched (T, H_in)
    assert single.shape == (6, 5)
    np.testing.assert_allclose(_np(single), ref_out[:, 0], rtol=2e-5, atol=2e-6)
    h = state[0] if cls == "LSTM" else state
    assert h.shape == (1, 5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("cls,kw", [("LSTM", dict(bidirectional=True, num_layers=2)), ("GRU", dict(bidirectional=True)),
                                    ("RNN", {})])
def test_packed_equals_each_sequence_alone(dev, cls, kw):
    ag.manual_seed(0)
    m = getattr(nn, cls)(3, 4, **kw).to(dev)
    rng = np.random.default_rng(3)
    lengths = [2, 5, 1, 4]
    seqs = [ag.tensor(rng.standard_normal((n, 3)).astype(np.float32), device=dev) for n in lengths]
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [4, 3, 2, 2, 1]
    assert packed.sorted_indices.tolist() == [1, 3, 0, 2]
    out, state = m(packed)
    padded, lens = R.pad_packed_sequence(out, batch_first=True)
    assert lens.tolist() == lengths and padded.shape == (4, 5, 4 * (2 if m.bidirectional else 1))
    h_n = state[0] if cls == "LSTM" else state
    for b, s in enumerate(seqs):
        alone, st = m(s.unsqueeze(1))
        np.testing.assert_allclose(_np(padded[b, :lengths[b]]), _np(alone[:, 0]), rtol=1e-5, atol=1e-6)
        assert np.all(_np(padded[b, lengths[b]:]) == 0)
        alone_h = st[0] if cls == "LSTM" else st
        np.testing.assert_allclose(_np(h_n[:, b]), _np(alone_h[:, 0]), rtol=1e-5, atol=1e-6)


def test_gradcheck_float64():
    rng = np.random.default_rng(4)
    for cls, kw in [("LSTM", dict(proj_size=2, bidirectional=True)), ("GRU", dict(num_layers=2)),
                    ("RNN", dict(nonlinearity="tanh"))]:
        ag.manual_seed(0)
        m = getattr(nn, cls)(3, 3, **kw).double()
        params = list(m.parameters())
        x = ag.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
        dirs = 2 if m.bidirectional else 1
        h0 = ag.tensor(rng.standard_normal((m.num_layers * dirs, 2, m.proj_size or 3)), requires_grad=True)

        def f(x, h0, *ps, m=m, cls=cls):
            for p, v in zip(m.parameters(), ps):
                p.data = v.detach()
            hx = (h0, ag.zeros(h0.shape[0], 2, 3, dtype=ag.float64)) if cls == "LSTM" else h0
            out, _ = m(x, hx)
            return out
        assert ag.gradcheck(lambda x, h0: f(x, h0), (x, h0))
        out, _ = m(x)
        out.sum().backward()
        assert all(p.grad is not None and np.isfinite(_np(p.grad)).all() for p in params)


def test_gradcheck_through_a_packed_sequence():
    ag.manual_seed(0)
    m = nn.GRU(2, 3, bidirectional=True).double()
    x = ag.tensor(np.random.default_rng(5).standard_normal((4, 3, 2)), requires_grad=True)

    def f(x):
        out, h = m(R.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False))
        return R.pad_packed_sequence(out)[0], h

    assert ag.gradcheck(f, (x,))


@pytest.mark.parametrize("dev", DEVICES)
def test_cells_are_one_step_of_the_layers(dev):
    rng = np.random.default_rng(6)
    x = ag.tensor(rng.standard_normal((3, 4)).astype(np.float32), device=dev)
    for cell_cls, layer_cls in [(nn.LSTMCell, nn.LSTM), (nn.GRUCell, nn.GRU), (nn.RNNCell, nn.RNN)]:
        ag.manual_seed(0)
        cell = cell_cls(4, 5).to(dev)
        layer = layer_cls(4, 5).to(dev)
        layer.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
        out, state = layer(x.unsqueeze(0))
        got = cell(x)
        h = got[0] if cell_cls is nn.LSTMCell else got
        np.testing.assert_allclose(_np(h), _np(out[0]), rtol=1e-6, atol=1e-7)
        single = cell(x[0])  # unbatched
        h1 = single[0] if cell_cls is nn.LSTMCell else single
        np.testing.assert_allclose(_np(h1), _np(h[0]), rtol=1e-6, atol=1e-7)
    relu = nn.RNNCell(4, 5, nonlinearity="relu")
    assert (_np(relu(x.cpu())) >= 0).all()


def test_parameters_names_shapes_and_init():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0"] == (80, 5)
    assert shapes["weight_hr_l0_reverse"] == (5, 20) and shapes["weight_ih_l1"] == (80, 10)
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 5
    bound = 1 / np.sqrt(20)
    assert all(np.abs(_np(p)).max() <= bound for p in m.parameters())
    g = nn.GRU(3, 4, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert repr(nn.GRU(3, 4, num_layers=2, batch_first=True)) == "GRU(3, 4, num_layers=2, batch_first=True)"


def test_errors():
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    m = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(ag.randn(2, 1, 5))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(ag.randn(2, 1, 3, 1))
    with pytest.raises(RuntimeError, match="Expected hidden size \\[1, 2, 4\\] for h_0, got \\[1, 3, 4\\]"):
        m(ag.randn(5, 2, 3), (ag.zeros(1, 3, 4), ag.zeros(1, 2, 4)))
    with pytest.raises(TypeError, match="tuple \\(h_0, c_0\\)"):
        m(ag.randn(5, 2, 3), ag.zeros(1, 2, 4))
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        R.pack_padded_sequence(ag.randn(4, 2, 3), [2, 4])
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(ag.randn(4, 2, 3), [4, 0])


def test_padding_utilities():
    a, b, c = ag.tensor([1.0, 2.0, 3.0]), ag.tensor([4.0]), ag.tensor([5.0, 6.0])
    padded = R.pad_sequence([a, b, c], batch_first=True, padding_value=-1)
    np.testing.assert_array_equal(_np(padded), [[1, 2, 3], [4, -1, -1], [5, 6, -1]])
    left = R.pad_sequence([a, b], padding_side="left")
    np.testing.assert_array_equal(_np(left), [[1, 0], [2, 0], [3, 4]])
    packed = R.pack_sequence([a, b, c], enforce_sorted=False)
    np.testing.assert_array_equal(_np(packed.data), [1, 5, 4, 2, 6, 3])
    back = R.unpack_sequence(packed)
    assert [_np(t).tolist() for t in back] == [[1, 2, 3], [4], [5, 6]]
    out, lens = R.pad_packed_sequence(packed, total_length=5)
    assert out.shape == (5, 3) and lens.tolist() == [3, 1, 2]
    with pytest.raises(ValueError, match="total_length to be at least"):
        R.pad_packed_sequence(packed, total_length=2)


def test_same_as_pytorch_from_the_same_weights():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 3, 4))
    for cls, kw in CONFIGS:
        tm = getattr(torch.nn, cls)(4, 5, **kw).double()
        m = getattr(nn, cls)(4, 5, **kw).double()
        m.load_state_dict({k: ag.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        t_out, _ = tm(torch.tensor(x))
        out, _ = m(ag.tensor(x))
        np.testing.assert_allclose(_np(out), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
