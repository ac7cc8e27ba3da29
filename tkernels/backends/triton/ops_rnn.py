"""The fused LSTM cell (``tkernels/ops/rnn.py``) on cuda: ``lstm_cell_kernel`` forward and backward, one
program per ELEMENTWISE_BLOCK elements of the state."""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.rnn import lstm_cell_kernel
from ._launch import ELEMENTWISE_BLOCK, grid1d, launch


@register("lstm_cell", "triton")
def lstm_cell(h: Array, c_new: Array, gi: Array, gh: Array, c: Array) -> None:
    n, H = c.size, c.shape[1]
    launch(lstm_cell_kernel, grid1d(n, ELEMENTWISE_BLOCK), gi, gh, c, c_new, h, c, c, c, c, n, H, BWD=False,
           HAS_DH=False, HAS_DC=False, F64=c.dtype is _dt.float64, BLOCK=ELEMENTWISE_BLOCK)


@register("lstm_cell_backward", "triton")
def lstm_cell_backward(d_gates, d_c, grad_h, grad_c, gi, gh, c, c_new) -> None:
    n, H = c.size, c.shape[1]
    launch(lstm_cell_kernel, grid1d(n, ELEMENTWISE_BLOCK), gi, gh, c, c_new, c, c if grad_h is None else grad_h,
           c if grad_c is None else grad_c, d_gates, d_c, n, H, BWD=True, HAS_DH=grad_h is not None,
           HAS_DC=grad_c is not None, F64=c.dtype is _dt.float64, BLOCK=ELEMENTWISE_BLOCK)
