"""The LSTM cell's pointwise part, fused: the epilogue of the step's two matmuls (gates, nonlinearities, state
update) in one pass, and its backward in another.

Forward entry::

    lstm_cell(gi, gh, c) -> (h, c_new)

``gi``, ``gh``: (B, 4H) the input and hidden projections of one step (biases included), gate order i, f, g, o
(PyTorch's); ``c``: (B, H) the cell state. ``i, f, o = sigmoid(.)``, ``g = tanh(.)`` of ``gi + gh``;
``c_new = f c + i g``, ``h = o tanh(c_new)``. float16/bfloat16 compute in float32 and round once; float64 in
float64.

Backward entry (it recomputes the gates from ``gi + gh`` instead of storing them)::

    lstm_cell_backward(grad_h, grad_c, gi, gh, c, c_new) -> (d_gates, d_c)

``grad_h``/``grad_c``: (B, H), either may be None (no gradient reached it); ``d_gates``: (B, 4H), the gradient of
both ``gi`` and ``gh``; ``d_c``: (B, H).

Backend contract (outputs allocated by the entry, every Array contiguous)::

    lstm_cell(h, c_new, gi, gh, c)
    lstm_cell_backward(d_gates, d_c, grad_h, grad_c, gi, gh, c, c_new)   (grad_h / grad_c may be None)
"""

from __future__ import annotations

from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe

__all__ = ["lstm_cell", "lstm_cell_backward"]


def _check(op, gi, gh, c):
    for name, a in (("gi", gi), ("gh", gh), ("c", c)):
        if not isinstance(a, Array):
            raise OpTypeError(f"{op}: {name} must be an Array, got {describe(a)}")
        if a.dtype.kind != "f":
            raise OpTypeError(f"{op}: {name} must be floating, got {describe(a)}")
    if c.ndim != 2 or gi.shape != (c.shape[0], 4 * c.shape[1]) or gh.shape != gi.shape:
        raise OpValueError(f"{op}: expected gi and gh of shape (B, 4H) and c of shape (B, H), got {describe(gi)}, "
                           f"{describe(gh)}, {describe(c)}")
    if not gi.dtype == gh.dtype == c.dtype:
        raise OpTypeError(f"{op}: gi, gh and c must share a dtype, got {gi.dtype}, {gh.dtype}, {c.dtype}")
    if not gi.device == gh.device == c.device:
        raise RuntimeError(f"{op}: gi, gh and c must be on one device, got {gi.device}, {gh.device}, {c.device}")


def lstm_cell(gi: Array, gh: Array, c: Array) -> tuple[Array, Array]:
    """``(h, c_new)`` of one LSTM step from the step's projections ``gi``, ``gh`` (B, 4H) and the state ``c``."""
    _check("lstm_cell", gi, gh, c)
    dev = c.device
    h = lookup("empty", dev)(c.shape, c.dtype, dev)
    c_new = lookup("empty", dev)(c.shape, c.dtype, dev)
    if c.size:
        lookup("lstm_cell", dev)(h, c_new, gi.contiguous(), gh.contiguous(), c.contiguous())
    return h, c_new


def lstm_cell_backward(grad_h, grad_c, gi: Array, gh: Array, c: Array, c_new: Array) -> tuple[Array, Array]:
    """``(d_gates, d_c)``: the gradients of ``gi``/``gh`` (the same) and of ``c`` from those of ``h`` and
    ``c_new`` (either may be None)."""
    _check("lstm_cell_backward", gi, gh, c)
    for name, g in (("grad_h", grad_h), ("grad_c", grad_c), ("c_new", c_new)):
        if g is not None and (not isinstance(g, Array) or g.shape != c.shape):
            raise OpValueError(f"lstm_cell_backward: {name} must be an Array of shape {c.shape}, got {describe(g)}")
    dev = c.device
    d_gates = lookup("empty", dev)(gi.shape, c.dtype, dev)
    d_c = lookup("empty", dev)(c.shape, c.dtype, dev)
    if c.size:
        lookup("lstm_cell_backward", dev)(d_gates, d_c, None if grad_h is None else grad_h.contiguous(),
                                          None if grad_c is None else grad_c.contiguous(), gi.contiguous(),
                                          gh.contiguous(), c.contiguous(), c_new.contiguous())
    return d_gates, d_c
