"""The fused LSTM cell (``tkernels/ops/rnn.py``) on NumPy: one temporary for the gates, computed in float32 for
half dtypes (float64 for float64), as the cuda kernel computes."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import npv, quiet


def _gates(gi, gh):
    a = npv(gi)
    cd = np.float64 if a.dtype == np.float64 else np.float32
    z = a.astype(cd) + npv(gh).astype(cd)
    H = z.shape[1] // 4
    with quiet():  # exp(-x) overflows to inf for very negative x: the sigmoid is still the exact 0
        i, f, o = (1.0 / (1.0 + np.exp(-z[:, k * H:(k + 1) * H])) for k in (0, 1, 3))
    g = np.tanh(z[:, 2 * H:3 * H])
    return cd, i, f, g, o


@register("lstm_cell", "numpy")
def lstm_cell(h, c_new, gi, gh, c) -> None:
    cd, i, f, g, o = _gates(gi, gh)
    cn = f * npv(c).astype(cd) + i * g
    np.copyto(npv(c_new), cn, casting="unsafe")
    np.copyto(npv(h), o * np.tanh(cn), casting="unsafe")


@register("lstm_cell_backward", "numpy")
def lstm_cell_backward(d_gates, d_c, grad_h, grad_c, gi, gh, c, c_new) -> None:
    cd, i, f, g, o = _gates(gi, gh)
    tc = np.tanh(npv(c_new).astype(cd))
    dh = 0.0 if grad_h is None else npv(grad_h).astype(cd)
    dc = (0.0 if grad_c is None else npv(grad_c).astype(cd)) + dh * o * (1 - tc * tc)
    H = i.shape[1]
    out = np.empty((i.shape[0], 4 * H), cd)
    out[:, :H] = dc * g * i * (1 - i)
    out[:, H:2 * H] = dc * npv(c).astype(cd) * f * (1 - f)
    out[:, 2 * H:3 * H] = dc * i * (1 - g * g)
    out[:, 3 * H:] = dh * tc * o * (1 - o)
    np.copyto(npv(d_gates), out, casting="unsafe")
    np.copyto(npv(d_c), dc * f, casting="unsafe")
