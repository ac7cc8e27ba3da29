"""The fused LSTM cell: ``lstm_cell(gi, gh, c) -> (h, c_new)`` on ``tkernels.ops.lstm_cell`` (one kernel for
the gates, nonlinearities and state update of a step, one for its backward), with a backward written with
differentiable ops when a graph of the backward is being built (double backward)."""

from __future__ import annotations

from tkernels.ops import rnn as _rnn

from ..grad_mode import STATE
from ._base import Node, Tensor, needs_grad, wrap
from .elementwise import sigmoid, tanh
from .shape import cat

__all__ = ["lstm_cell"]


class ThnnFusedLstmCellBackward0(Node):
    _materialize = False  # an unused h or c_new gets no term

    def __init__(self, gi, gh, c):
        super().__init__((gi, gh, c))

    def backward(self, dh, dc):
        gi, gh, c, cn = self.saved_tensors
        if dh is None and dc is None:
            return None, None, None
        if STATE.grad_enabled:  # create_graph: the same formulas, recorded
            dg, dcp = _composite_backward(dh, dc, gi, gh, c)
        else:
            a, b = _rnn.lstm_cell_backward(None if dh is None else dh._data, None if dc is None else dc._data,
                                           gi._data, gh._data, c._data, cn._data)
            dg, dcp = wrap(a), wrap(b)
        na, nb, nc = self.needs_input_grad
        return (dg if na else None), (dg if nb else None), (dcp if nc else None)


def _composite_backward(dh, dc, gi, gh, c):
    i, f, g, o = (gi + gh).chunk(4, 1)
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
    tc = tanh(f * c + i * g)
    total = 0.0 if dc is None else dc
    if dh is not None:
        total = total + dh * o * (1 - tc * tc)
    if not isinstance(total, Tensor):
        total = c * 0
    do = c * 0 if dh is None else dh * tc * o * (1 - o)
    dg = cat([total * g * i * (1 - i), total * c * f * (1 - f), total * i * (1 - g * g), do], 1)
    return dg, total * f


def lstm_cell(gi, gh, c):
    """``(h, c_new)`` of one LSTM step from its projections ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T + b_hh``
    ((B, 4H), gates i, f, g, o) and the cell state ``c`` (B, H): PyTorch's formulas, one fused pass."""
    h, cn = _rnn.lstm_cell(gi._data, gh._data, c._data)
    if STATE.grad_enabled and needs_grad(gi, gh, c) and h.dtype.kind == "f":
        node = ThnnFusedLstmCellBackward0(gi, gh, c)
        ht, ct = node.output(h, 0), node.output(cn, 1)
        node.save(gi, gh, c, outputs=(ct,))
        return ht, ct
    return wrap(h), wrap(cn)


