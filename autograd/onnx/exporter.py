"""``export``: trace a model (or take a ``TracedModule``), map each node to ONNX, check and write the model."""

from __future__ import annotations

import io
import os

import numpy as np

from ..jit import TracedModule, trace
from ..jit.graph import refs_in
from ..jit.module import _resolve, _target
from ..jit.tracer import NONDETERMINISTIC
from . import ops_nn, ops_reduce, ops_rnn, ops_tensor  # noqa: F401  (register the mappings)
from .builder import DEFAULT_OPSET, MIN_OPSET, SYMBOLICS, Builder, UnsupportedOperatorError

__all__ = ["export", "supported_ops", "max_opset"]


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("autograd.onnx.export needs the onnx package. Hint: pip install 'tkernels[onnx]' "
                          "(onnx, and onnxruntime to run the exports)") from None
    return onnx


def max_opset() -> int:
    """The newest default-domain opset the installed ``onnx`` package knows."""
    return _onnx().defs.onnx_opset_version()


def supported_ops() -> list:
    """The traced op names that have an ONNX mapping."""
    return sorted(SYMBOLICS)


def _fold(b, graph, state_arrays):
    """Evaluate the nodes that depend on parameters and constants only; returns the indices of those folded."""
    import autograd

    env = {n: autograd.from_numpy(np.array(a)) for n, a in state_arrays.items()}
    folded = set()
    dev = autograd.device("cpu")
    for i, node in enumerate(graph.nodes):
        refs = refs_in(node.args) + refs_in(node.kwargs)
        if node.op in NONDETERMINISTIC or not all(r.name in env for r in refs) or node.op.endswith("_") \
                or node.target.startswith(("module.", "function.")):
            continue
        with autograd.no_grad():
            r = _target(node.target)(*_resolve(node.args, env, dev), **_resolve(node.kwargs, env, dev))
        outs = node.outputs()
        vals = [r] if len(outs) == 1 and not isinstance(r, tuple | list) else list(r)
        for o, v in zip(outs, vals):
            env[o.name] = v
            b.known[o.name] = v.numpy() if hasattr(v, "numpy") else np.array(v, np.int64)
        folded.add(i)
    return folded


def _emit(b, nodes):
    """Map ``nodes`` in order; an autograd.Function node is inlined (the ops its forward ran)."""
    for node in nodes:
        outs = node.outputs()
        if node.sub is not None:
            _emit(b, node.sub)
            ends = refs_in(node.sub_out)
            if len(ends) < len(outs) or any(r.name in b.known or r.name not in b.names for r in ends):
                b.unsupported(node, "(an autograd.Function) computes its result outside the autograd ops (e.g. with "
                                    "its own kernel), so it cannot be inlined; it has no ONNX mapping")
            res = [b.names[r.name] for r in ends]
        else:
            entry = SYMBOLICS.get(node.op)
            if entry is None or b.opset < entry[1]:
                b.unsupported(node, "has no ONNX mapping" if entry is None else f"needs opset {entry[1]}")
            res = entry[0](b, node, node.bound)
            res = [res] if isinstance(res, str) else list(res)
        if len(res) < len(outs):
            raise UnsupportedOperatorError(f"autograd.onnx.export: the mapping of '{node.op}' gave {len(res)} outputs "
                                           f"for {len(outs)} (at opset {b.opset})")
        for o, r in zip(outs, res):
            b.names[o.name] = r


def _axes_spec(spec, name):
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(spec)}


def export(model, args, f=None, input_names=None, output_names=None, dynamic_axes=None, opset_version=None,
           do_constant_folding: bool = True, verbose: bool = False, training: str = "eval"):
    """Export ``model(*args)`` to ONNX at ``opset_version`` (17 through ``max_opset()``), written to ``f`` (a path or
    a binary file) when given; returns the ``onnx.ModelProto``. ``dynamic_axes``: ``{name: {axis: "dim_name"}}``
    or ``{name: [axes]}`` for inputs and outputs whose sizes may vary. ``training``: as PyTorch's TrainingMode,
    "eval" (the default: traced in eval mode, then restored), "preserve" or "training"."""
    onnx = _onnx()
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= max_opset():
        raise ValueError(f"autograd.onnx.export: opset_version={opset_version} is outside the supported range "
                         f"[{MIN_OPSET}, {max_opset()}] (the newest is what the installed onnx {onnx.__version__} "
                         f"knows). Hint: pick one in that range")
    args = args if isinstance(args, tuple | list) else (args,)
    mode = getattr(training, "name", training)
    mode = {"EVAL": "eval", "PRESERVE": "preserve", "TRAINING": "training"}.get(mode, mode)
    if mode not in ("eval", "preserve", "training"):
        raise ValueError(f"autograd.onnx.export: training={training!r}; expected 'eval', 'preserve' or 'training'")
    if isinstance(model, TracedModule):
        traced = model
    else:
        was = getattr(model, "training", None)
        want = was if mode == "preserve" or was is None else mode == "training"
        if want != was:
            model.train(want)
        try:
            traced = trace(model, tuple(args), check_trace=False)
        finally:
            if want != was:
                model.train(was)
    g = traced.graph
    b = Builder(onnx, g, opset)
    state = traced.state_dict()
    input_names = list(input_names) if input_names is not None else [f"input_{i}" for i in range(len(g.inputs))]
    if len(input_names) != len(g.inputs):
        raise ValueError(f"autograd.onnx.export: {len(input_names)} input_names for {len(g.inputs)} tensor inputs")
    for v, name in zip(g.inputs, input_names):
        b.names[v] = name
    arrays = {v: state[key].detach().cpu().numpy() for v, key in g.params.items()}
    arrays.update(g.constants)
    for v in arrays:
        b.names[v] = g.params.get(v, v)
    b.known.update(arrays)
    folded = _fold(b, g, arrays) if do_constant_folding else set()
    for v in b.known:
        b.names.setdefault(v, v)
    _emit(b, [n for i, n in enumerate(g.nodes) if i not in folded])
    outs = [r for r in refs_in(g.output)]
    output_names = list(output_names) if output_names is not None else [f"output_{i}" for i in range(len(outs))]
    if len(output_names) != len(outs):
        raise ValueError(f"autograd.onnx.export: {len(output_names)} output_names for {len(outs)} tensor outputs")
    for r, name in zip(outs, output_names):
        b.nodes.append(onnx.helper.make_node("Identity", [b.names[r.name]], [name], name=f"output/{name}"))
    dyn = dynamic_axes or {}
    unknown = set(dyn) - set(input_names) - set(output_names)
    if unknown:
        raise ValueError(f"autograd.onnx.export: dynamic_axes names {sorted(unknown)} are neither input_names "
                         f"{input_names} nor output_names {output_names}")

    def info(name, v):
        axes = _axes_spec(dyn.get(name), name)
        shape = [axes.get(i, s) for i, s in enumerate(g.values[v].shape)]
        if name in output_names and name not in dyn and dyn:  # sizes of outputs follow the dynamic inputs
            shape = [None] * len(shape)
        return onnx.helper.make_tensor_value_info(name, b.tensor_type(g.values[v].dtype), shape)

    used = {i for n in b.nodes for i in n.input}
    for v, arr in b.known.items():
        if b.names[v] in used and b.names[v] not in input_names:
            b.initializer(b.names[v], arr)
    graph = onnx.helper.make_graph(b.nodes, traced._name, [info(n, v) for n, v in zip(input_names, g.inputs)],
                                   [info(n, r.name) for n, r in zip(output_names, outs)], b.initializers)
    opsets = [onnx.helper.make_opsetid("", opset)]
    proto = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="tkernels",
                                   ir_version=onnx.helper.find_min_ir_version_for(opsets, True))
    onnx.checker.check_model(proto, full_check=True)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, str | os.PathLike):
            with open(f, "wb") as fh:
                fh.write(data)
        elif isinstance(f, io.IOBase) or hasattr(f, "write"):
            f.write(data)
    return proto
