"""``tkernels.ops.linear_backward`` against the tkernels calls it replaced in autograd's Linear backward
(``matmul(grad, weight)``, ``matmul(grad2.T, x2)``, ``sum(grad2, axis=0)``): bit-equal on cpu at odd sizes,
batched (3-D) inputs, non-contiguous views, empty dimensions, every ``needs`` pattern and float dtype; the same
on (interpreted) cuda; its bad-input errors."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.ops import linear_backward

DEVICES = ["cpu"] + (["cuda"] if tkc.is_available() else [])


def _np_dtype(d):
    return np.dtype(ml_dtypes.bfloat16) if d == "bfloat16" else np.dtype(d)


def _previous(g, x, w, needs):
    """The previous formulas: LinearBackward0's tkernels calls before linear_backward."""
    nx, nw, nb = needs
    gx = tk.matmul(g, w) if nx else None
    gs = g.shape
    m = int(np.prod(gs[:-1]))  # (explicit: the previous code's reshape((-1, 0)) refused K = 0)
    g2 = g if len(gs) == 2 else g.reshape((m, gs[-1]))
    gw = tk.matmul(g2.T, x if len(x.shape) == 2 else x.reshape((m, x.shape[-1]))) if nw else None
    gb = tk.sum(g2, axis=0) if nb else None
    return gx, gw, gb


def _arrays(rng, lead, n, k, d, device, strided=False):
    nd = _np_dtype(d)
    g = rng.standard_normal(lead + (2 * n if strided else n,)).astype(nd)
    x = rng.standard_normal(lead + (k,)).astype(nd)
    w = rng.standard_normal((n, 2 * k if strided else k)).astype(nd)
    g, x, w = (tk.asarray(a, device=device) for a in (g, x, w))
    if strided:
        g, w = g[..., ::2], w[:, 1::2]
    return g, x, w


def _bits_equal(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.shape == b.shape and a.dtype == b.dtype
    an, bn = a.numpy(), b.numpy()
    it = {2: np.uint16, 4: np.uint32, 8: np.uint64}[an.dtype.itemsize]
    np.testing.assert_array_equal(np.ascontiguousarray(an).view(it), np.ascontiguousarray(bn).view(it))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("d", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("lead, n, k, strided", [((13,), 7, 5, False), ((3, 5), 11, 9, True), ((1,), 1, 1, False),
                                                 ((0,), 3, 2, False), ((4,), 0, 3, False), ((2, 3), 3, 0, False)])
def test_linear_backward_equals_the_previous_calls(device, d, lead, n, k, strided):
    rng = np.random.default_rng(7)
    g, x, w = _arrays(rng, lead, n, k, d, device, strided)
    for needs in itertools.product((True, False), repeat=3):
        got = linear_backward(g, x if needs[1] else None, w if needs[0] else None, needs=needs)
        want = _previous(g, x, w, needs)
        if device == "cpu":
            for a, b in zip(got, want):
                _bits_equal(a, b)
        else:
            for a, b in zip(got, want):
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_allclose(a.numpy().astype(np.float64), b.numpy().astype(np.float64),
                                               rtol=1e-2, atol=1e-2)


def test_linear_backward_errors():
    g, x, w = tk.ones((4, 3)), tk.ones((4, 2)), tk.ones((3, 2))
    with pytest.raises(TypeError, match="linear_backward: grad and x must have one dtype"):
        linear_backward(g, tk.ones((4, 2), dtype=tk.float64), w)
    with pytest.raises(ValueError, match="linear_backward: weight .* out_features = grad's last dimension"):
        linear_backward(g, x, tk.ones((5, 2)))
    with pytest.raises(ValueError, match="linear_backward: x .* must have grad's shape"):
        linear_backward(g, tk.ones((5, 2)), w)
    with pytest.raises(TypeError, match="linear_backward: x is needed for the gradient of weight"):
        linear_backward(g, None, w)
    with pytest.raises(ValueError, match="needs must be three booleans"):
        linear_backward(g, x, w, needs=(True, True))
    with pytest.raises(TypeError, match="linear_backward: grad must be an Array"):
        linear_backward(np.ones((4, 3)), x, w)
    with pytest.raises(TypeError, match="linear_backward: grad must have a floating dtype"):
        linear_backward(tk.ones((4, 3), dtype=tk.int64), x, w)
