"""Recurrent layers: ``RNN`` (tanh or relu), ``LSTM`` (with ``proj_size``), ``GRU`` and their cells, with
PyTorch's parameter names, shapes, gate order and initialisation, on every device.

Gates (PyTorch's order and formulas): LSTM ``i, f, g, o``: ``c' = f c + i g``, ``h' = o tanh(c')`` (then
``h' @ W_hr^T`` with ``proj_size``); GRU ``r, z, n``: ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``,
``h' = (1 - z) n + z h``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``.

Note [how a layer runs]. The input projections of all time steps are one matmul per layer and direction
(``x @ W_ih^T + b_ih`` over the whole sequence); only the hidden projection and the gate arithmetic run per
step, as differentiable ops, so backward through time is the autograd tape's. A ``PackedSequence`` runs the
same way on its packed rows: at step ``t`` the first ``batch_sizes[t]`` sequences are active (they are sorted
by length), the others keep their state, so each sequence's final state is the one after its last step. The
per-step cell is a composite of matmul and elementwise kernels on cuda too (a fused cell kernel is future
work: issue 15 asks for one).
"""

from __future__ import annotations

import math
import numbers
import warnings

import autograd as ag
from autograd.jit.tracer import active as _tracing
from autograd.ops.rnn import lstm_cell as _fused_lstm_cell
from tkernels.validation import OpTypeError, OpValueError

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _cell(mode, gi, h, c, w_hh, b_hh, w_hr):
    """One step: ``gi`` the input projection (with ``b_ih``) of this step; returns (h', c')."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        # one fused pass for the gates and the state update, and its backward; a trace (autograd.jit, ONNX
        # export) records the op-by-op formulas, which it knows
        if gi.dtype == gh.dtype == c.dtype and _tracing() is None:
            h, c = _fused_lstm_cell(gi, gh, c)
        else:  # (mixed dtypes under autocast: the same formulas, op by op)
            i, f, g, o = (gi + gh).chunk(4, 1)
            c = ag.sigmoid(f) * c + ag.sigmoid(i) * ag.tanh(g)
            h = ag.sigmoid(o) * ag.tanh(c)
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return h, c
    if mode == "GRU":
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = ag.sigmoid(ir + hr)
        z = ag.sigmoid(iz + hz)
        n = ag.tanh(in_ + r * hn)
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (ag.tanh(pre) if mode == "RNN_TANH" else ag.relu(pre)), None


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise OpValueError(f"{name}: dropout should be a number in range [0, 1] representing the probability of an "
                               f"element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout option adds dropout after all but last recurrent layer, so non-zero "
                          f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", UserWarning, stacklevel=3)
        for what, v in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OpValueError(f"{name}: {what} must be a positive int, got {v!r}")
        if not isinstance(input_size, int) or input_size < 0:
            raise OpValueError(f"{name}: input_size must be a non-negative int, got {input_size!r}")
        if proj_size < 0:
            raise OpValueError(f"{name}: proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise OpValueError(f"{name}: proj_size has to be smaller than hidden_size ({proj_size} >= {hidden_size})")
        if proj_size and mode != "LSTM":
            raise OpValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                layer_in = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for base, shape in shapes:
                    setattr(self, base + sfx, Parameter(ag.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(base + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """PyTorch compacts cuDNN's weight buffer here; there is nothing to compact (accepted for scripts)."""

    @property
    def all_weights(self):
        """The parameters per layer and direction, in PyTorch's order (w_ih, w_hh, b_ih, b_hh, w_hr)."""
        sfxs = [f"_l{layer}" + ("_reverse" if d else "") for layer in range(self.num_layers)
                for d in range(2 if self.bidirectional else 1)]
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(sfx)] for sfx in sfxs]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    # autograd.jit records a call of this module as one "rnn" node (ONNX RNN/LSTM/GRU, any sequence length),
    # not the Python loop over time steps; _jit_spec says how to rebuild the module and what the node means
    _jit_leaf = True

    def _jit_spec(self) -> dict:
        kw = {"input_size": self.input_size, "hidden_size": self.hidden_size, "num_layers": self.num_layers,
              "bias": self.bias, "batch_first": self.batch_first, "dropout": self.dropout,
              "bidirectional": self.bidirectional}
        if self.mode == "LSTM":
            kw["proj_size"] = self.proj_size
        if self.mode.startswith("RNN_"):
            kw["nonlinearity"] = self.mode[4:].lower()
        return {"mode": self.mode, "kwargs": kw, "weights": list(self._flat_weights_names)}

    # ------------------------------------------------------------------------------------------ forward
    def _weights(self, sfx):
        get = lambda base: getattr(self, base + sfx, None)
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def forward(self, input, hx=None):
        name = type(self).__name__
        lstm = self.mode == "LSTM"
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size or self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes = input.data, [int(b) for b in input.batch_sizes.tolist()]
            if x.ndim != 2:
                raise OpValueError(f"{name}: a PackedSequence's data must be 2-D (steps, input_size), got "
                                   f"{list(x.shape)}")
            batch = batch_sizes[0] if batch_sizes else 0
            unbatched = False
        else:
            if input.ndim not in (2, 3):
                raise OpValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor of shape "
                                   f"{list(input.shape)}")
            unbatched = input.ndim == 2
            x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
            batch, batch_sizes = x.shape[1], None
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        h0, c0 = self._initial_state(name, hx, batch, unbatched, directions, real_hidden, x, packed, input)
        layer_in = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(f"_l{layer}" + ("_reverse" if d else ""))
                gi = F.linear(layer_in, w_ih, b_ih)  # every step's input projection at once
                run = self._run_packed if packed else self._run_padded
                out, h, c = run(gi, h0[k], None if c0 is None else c0[k], w_hh, b_hh, w_hr, bool(d), batch_sizes)
                outs.append(out)
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            layer_in = outs[0] if directions == 1 else ag.cat(outs, dim=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        h_n = ag.stack(h_n)
        c_n = ag.stack(c_n) if lstm else None
        if packed:
            if input.unsorted_indices is not None:
                h_n = h_n.index_select(1, input.unsorted_indices)
                c_n = c_n.index_select(1, input.unsorted_indices) if lstm else None
            output = PackedSequence(layer_in, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        else:
            output = layer_in.squeeze(1) if unbatched else (layer_in.transpose(0, 1) if self.batch_first
                                                             else layer_in)
            if unbatched:
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if lstm else None
        return output, ((h_n, c_n) if lstm else h_n)

    def _initial_state(self, name, hx, batch, unbatched, directions, real_hidden, x, packed, input):
        lstm = self.mode == "LSTM"
        rows = self.num_layers * directions
        if hx is None:
            h0 = ag.zeros(rows, batch, real_hidden, dtype=x.dtype, device=x.device)
            c0 = ag.zeros(rows, batch, self.hidden_size, dtype=x.dtype, device=x.device) if lstm else None
            return h0, c0
        if lstm:
            if not (isinstance(hx, tuple | list) and len(hx) == 2):
                raise OpTypeError(f"{name}: hx must be a tuple (h_0, c_0) for LSTM, got {type(hx).__name__}")
            h0, c0 = hx
        else:
            if isinstance(hx, tuple | list):
                raise OpTypeError(f"{name}: hx must be a Tensor for {name}, got a {type(hx).__name__}")
            h0, c0 = hx, None
        expect_h = (rows, real_hidden) if unbatched else (rows, batch, real_hidden)
        expect_c = (rows, self.hidden_size) if unbatched else (rows, batch, self.hidden_size)
        for what, t, expect in (("hx" if not lstm else "h_0", h0, expect_h), ("c_0", c0, expect_c)):
            if t is not None and tuple(t.shape) != expect:
                raise RuntimeError(f"{name}: Expected hidden size {list(expect)} for {what}, got {list(t.shape)}")
        if unbatched:
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        if packed and input.sorted_indices is not None:  # the user's order -> the packed (sorted) order
            h0 = h0.index_select(1, input.sorted_indices)
            c0 = c0.index_select(1, input.sorted_indices) if c0 is not None else None
        return h0, c0

    def _run_padded(self, gi, h, c, w_hh, b_hh, w_hr, reverse, _):
        outs = [None] * gi.shape[0]
        steps = range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])
        # every step's slice from one unbind: its backward stacks the T gradients once (gi[t] each would give
        # T full-size zero gradients, summed by the engine: O(T^2) memory traffic, most of an LSTM LM's step)
        gis = gi.unbind(0)
        for t in steps:
            h, c = _cell(self.mode, gis[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        out = ag.stack(outs) if outs else gi.new_zeros((0, h.shape[0], h.shape[1]))
        return out, h, c

    def _run_packed(self, gi, h, c, w_hh, b_hh, w_hr, reverse, batch_sizes):
        """Note [how a layer runs]: rows ``[0, b)`` of the state are the active sequences at each step."""
        outs = [None] * len(batch_sizes)
        order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
        gis = gi.split(list(batch_sizes)) if batch_sizes else ()  # one split: its backward is one cat (see above)
        for t in order:
            b = batch_sizes[t]
            hb, cb = _cell(self.mode, gis[t], h[:b], None if c is None else c[:b], w_hh, b_hh, w_hr)
            outs[t] = hb
            full = h.shape[0]
            h = hb if b == full else ag.cat([hb, h[b:]])
            if c is not None:
                c = cb if b == full else ag.cat([cb, c[b:]])
        out = ag.cat(outs) if outs else gi.new_zeros((0, h.shape[1]))
        return out, h, c


class RNN(RNNBase):
    """Elman RNN: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # PyTorch's positional order: input_size, hidden_size, num_layers, nonlinearity, ...
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise OpValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTM(RNNBase):
    """``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0)``; returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, mode, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        gates = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(ag.empty(gates, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(ag.empty(gates, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ag.empty(gates, device=device, dtype=dtype))
            self.bias_hh = Parameter(ag.empty(gates, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _check(self, input, hx):
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise OpValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead (shape "
                               f"{list(input.shape)})")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        states = hx if isinstance(hx, tuple | list) else (hx,)
        out = []
        for h in states:
            if h is None:
                h = ag.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            else:
                h = h.unsqueeze(0) if unbatched else h
                if tuple(h.shape) != (x.shape[0], self.hidden_size):
                    raise RuntimeError(f"{name}: hidden state has shape {list(h.shape)}, expected "
                                       f"{[x.shape[0], self.hidden_size]}")
            out.append(h)
        return x, out, unbatched

    def _step(self, input, hx):
        x, states, unbatched = self._check(input, hx)
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        c = states[1] if self.mode == "LSTM" else None
        h, c = _cell(self.mode, gi, states[0], c, self.weight_hh, self.bias_hh, None)
        if unbatched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return (h, c) if self.mode == "LSTM" else h


class RNNCell(RNNCellBase):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise OpValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias,
                         device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c') = cell(x, (h, c))``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, (None, None) if hx is None else hx)


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = cell(x, h)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx)
