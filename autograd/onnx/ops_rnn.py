"""ONNX mapping of the ``rnn`` node (nn.RNN/LSTM/GRU traced as one op): one ONNX RNN/LSTM/GRU per layer, any
sequence length. PyTorch's gate blocks are reordered to ONNX's (LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h)."""

from __future__ import annotations

import numpy as np

from ..jit.graph import Ref
from .builder import register

_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _gates(w, mode):
    """Reorder the gate blocks along the first axis."""
    blocks = np.split(w, len(_ORDER[mode]), axis=0)
    return np.concatenate([blocks[i] for i in _ORDER[mode]], axis=0)


@register("rnn")
def _rnn(b, node, a):
    mode, x, hx = a["mode"], a["input"], a.get("hx")
    if a.get("proj_size"):
        b.unsupported(node, "with proj_size (LSTM projections) has no mapping")
    if a.get("training") and a.get("dropout") and a["num_layers"] > 1:
        b.unsupported(node, "with dropout in training mode has no mapping; export after model.eval()")
    if b.rank(x) != 3:
        b.unsupported(node, "on an unbatched (2-D) input has no mapping")
    weights = a["weights"]
    if not all(isinstance(w, Ref) and w.name in b.known for w in weights):
        b.unsupported(node, "with weights computed in the graph has no mapping")
    hs, layers = int(a["hidden_size"]), int(a["num_layers"])
    dirs = 2 if a["bidirectional"] else 1
    per = 4 if a["bias"] else 2  # tensors per layer and direction: w_ih, w_hh[, b_ih, b_hh]
    dt = b.dtype(x)
    h0 = c0 = None
    if mode == "LSTM" and isinstance(hx, tuple | list):
        h0, c0 = hx
    elif isinstance(hx, Ref):
        h0 = hx
    seq = b.t(x)
    if a["batch_first"]:
        seq = b.op("Transpose", seq, perm=[1, 0, 2])
    last_h, last_c = [], []
    for layer in range(layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            group = [b.known[w.name] for w in weights[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]]
            ws.append(_gates(group[0], mode))
            rs.append(_gates(group[1], mode))
            if a["bias"]:
                bs.append(np.concatenate([_gates(group[2], mode), _gates(group[3], mode)]))
        ins = [seq, b.const(np.stack(ws), dt), b.const(np.stack(rs), dt),
               b.const(np.stack(bs), dt) if bs else None, None]
        rows = b.const(np.array([layer * dirs], np.int64)), b.const(np.array([(layer + 1) * dirs], np.int64))
        zero = b.const(np.array([0], np.int64))
        ins.append(b.op("Slice", b.t(h0, dt), *rows, zero) if h0 is not None else None)
        if mode == "LSTM":
            ins.append(b.op("Slice", b.t(c0, dt), *rows, zero) if c0 is not None else None)
        attrs = {"hidden_size": hs, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "GRU":
            attrs["linear_before_reset"] = 1  # PyTorch applies the reset gate after the hidden projection
        if mode.startswith("RNN_"):
            attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
        outs = b.op(_OP[mode], *ins, n=3 if mode == "LSTM" else 2, **attrs)
        y = outs[0]  # (seq, dirs, batch, hidden) -> (seq, batch, dirs * hidden)
        seq = b.op("Reshape", b.op("Transpose", y, perm=[0, 2, 1, 3]), b.const(np.array([0, 0, -1], np.int64)))
        last_h.append(outs[1])
        if mode == "LSTM":
            last_c.append(outs[2])
    out = b.op("Transpose", seq, perm=[1, 0, 2]) if a["batch_first"] else seq
    h_n = b.op("Concat", *last_h, axis=0) if layers > 1 else b.op("Identity", last_h[0])
    if mode == "LSTM":
        c_n = b.op("Concat", *last_c, axis=0) if layers > 1 else b.op("Identity", last_c[0])
        return [out, h_n, c_n]
    return [out, h_n]
