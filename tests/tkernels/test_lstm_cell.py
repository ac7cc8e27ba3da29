"""The fused LSTM cell (tkernels/ops/rnn.py, autograd/ops/rnn.py) against a NumPy reference of PyTorch's
formulas: odd sizes, every float dtype, an empty batch, strided inputs, cpu and interpreted cuda; gradcheck and
gradgradcheck in float64; bad shapes and dtypes refused naming the op."""

import numpy as np
import pytest

import autograd as ag
import tkernels as tk
from autograd.gradcheck import gradcheck, gradgradcheck
from autograd.ops.rnn import lstm_cell as ag_lstm_cell
from tkernels.ops.rnn import lstm_cell, lstm_cell_backward

DEVICES = ["cpu", "cuda"]
TOL = {"float64": 1e-12, "float32": 3e-6, "float16": 2e-3, "bfloat16": 2e-2}


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _ref(gi, gh, c, dh, dc):
    z = gi + gh
    H = c.shape[1]
    i, f, g, o = _sig(z[:, :H]), _sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), _sig(z[:, 3 * H:])
    cn = f * c + i * g
    tc = np.tanh(cn)
    h = o * tc
    dct = dc + dh * o * (1 - tc**2)
    dg = np.concatenate([dct * g * i * (1 - i), dct * c * f * (1 - f), dct * i * (1 - g**2), dh * tc * o * (1 - o)],
                        1)
    return h, cn, dg, dct * f


def _data(B, H, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 2 for s in ((B, 4 * H), (B, 4 * H), (B, H), (B, H), (B, H))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("B, H", [(3, 5), (1, 1), (7, 33), (0, 4)])
def test_forward_and_backward_match_the_formulas(device, dtype, B, H):
    gi, gh, c, dh, dc = _data(B, H)
    d = getattr(tk, dtype)
    rounded = [tk.asarray(a, dtype=d).astype(tk.float64).numpy() for a in (gi, gh, c, dh, dc)]
    want = _ref(*rounded)
    A = [tk.asarray(a, dtype=d, device=device) for a in (gi, gh, c, dh, dc)]
    h, cn = lstm_cell(A[0], A[1], A[2])
    dg, dcp = lstm_cell_backward(A[3], A[4], A[0], A[1], A[2], cn)
    for got, w in zip((h, cn, dg, dcp), want):
        assert got.dtype == d and got.shape == w.shape
        np.testing.assert_allclose(got.astype(tk.float64).numpy(), w, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_missing_gradients_and_strided_inputs(device):
    gi, gh, c, dh, dc = _data(4, 6, seed=1)
    big = np.zeros((4, 48))
    big[:, ::2] = gi
    A = lambda a: tk.asarray(a, device=device)  # noqa: E731
    strided = A(big)[:, ::2]
    h, cn = lstm_cell(strided, A(gh), A(c))
    want = _ref(gi, gh, c, dh, dc)
    np.testing.assert_allclose(h.numpy(), want[0], rtol=1e-6, atol=1e-6)
    dg, dcp = lstm_cell_backward(None, A(dc), strided, A(gh), A(c), cn)
    ref = _ref(gi, gh, c, np.zeros_like(dh), dc)
    np.testing.assert_allclose(dg.numpy(), ref[2], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dcp.numpy(), ref[3], rtol=1e-6, atol=1e-6)
    dg, dcp = lstm_cell_backward(A(dh), None, A(gi), A(gh), A(c), cn)
    ref = _ref(gi, gh, c, dh, np.zeros_like(dc))
    np.testing.assert_allclose(dg.numpy(), ref[2], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_gradcheck_and_gradgradcheck(device):
    rng = np.random.default_rng(2)
    # two rows on interpreted cuda (the same kernel path; each perturbed element is a few interpreted launches:
    # ~150 s of CI at three rows), three on cpu
    b = 2 if str(device).startswith("cuda") else 3
    args = [ag.tensor(rng.standard_normal(s), dtype=ag.float64, device=device, requires_grad=True)
            for s in ((b, 8), (b, 8), (b, 2))]
    assert gradcheck(lambda a, b, c: ag_lstm_cell(a, b, c), args)
    assert gradgradcheck(lambda a, b, c: ag_lstm_cell(a, b, c), args)
    h, c = ag_lstm_cell(*args)
    assert type(h.grad_fn).__name__ == "ThnnFusedLstmCellBackward0" and h.grad_fn is c.grad_fn
    c.sum().backward()  # only one of the two outputs used
    assert args[2].grad is not None


def test_bad_arguments_name_the_op():
    x = tk.zeros((2, 8))
    with pytest.raises(ValueError, match=r"lstm_cell: expected gi and gh of shape \(B, 4H\)"):
        lstm_cell(x, x, tk.zeros((2, 3)))
    with pytest.raises(TypeError, match="lstm_cell: gi, gh and c must share a dtype"):
        lstm_cell(x, x.astype(tk.float64), tk.zeros((2, 2)))
    with pytest.raises(TypeError, match="lstm_cell: c must be floating"):
        lstm_cell(x, x, tk.zeros((2, 2), dtype=tk.int64))
