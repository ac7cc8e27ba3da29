"""``autograd.jit``: tracing a function or module into a graph of ops (the one graph IR of the project, also
read by ``autograd.onnx``), like ``torch.jit.trace``; safe save/load (safetensors + a JSON graph, no pickle)."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .graph import Graph, Node, Ref, Value
from .module import TracedModule, TracingCheckError, load, run_graph
from .patching import run_traced
from .tracer import SymInt, Tracer, TracerWarning

__all__ = ["trace", "load", "TracedModule", "TracerWarning", "TracingCheckError", "Graph", "Node", "Ref", "Value",
           "SymInt", "run_graph"]


def _state(m):
    """(parameters, buffers) of a module-like object by state_dict key, or empty for a plain function."""
    params = dict(m.named_parameters()) if hasattr(m, "named_parameters") else {}
    buffers = dict(m.named_buffers()) if hasattr(m, "named_buffers") else {}
    seen = {id(t) for t in params.values()}
    return params, {k: b for k, b in buffers.items() if isinstance(b, Tensor) and id(b) not in seen}


def trace(fn_or_module, example_inputs, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-5) -> TracedModule:
    """Run ``fn_or_module(*example_inputs)`` once and record its ops into a ``TracedModule``.

    Python control flow and Python values read from tensors are frozen (a ``TracerWarning`` says when); sizes
    read with ``.shape``/``.size()`` stay symbolic, so the trace runs on other sizes where the ops allow.
    ``check_trace``: run the graph again on the example inputs (and on each tuple of ``check_inputs``) and compare
    with eager (``TracingCheckError``)."""
    inputs = example_inputs if isinstance(example_inputs, tuple | list) else (example_inputs,)
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"autograd.jit.trace: example input {i} is a {type(x).__name__}; traces take tensors. "
                            f"Hint: bind other arguments with functools.partial or a lambda")
    if not callable(fn_or_module):
        raise TypeError(f"autograd.jit.trace: expected a function or module, got {type(fn_or_module).__name__}")
    import autograd

    params, buffers = _state(fn_or_module)
    tracer = Tracer({**params, **buffers})
    for x in inputs:
        tracer.add_input(x)
    result = run_traced(tracer, fn_or_module, inputs)
    tracer.graph.output = tracer.encode(result if not isinstance(result, list) else tuple(result))
    name = type(fn_or_module).__name__ if hasattr(fn_or_module, "named_parameters") else \
        getattr(fn_or_module, "__name__", "TracedModule")
    traced = TracedModule(tracer.graph, params, buffers, name, tracer.leaves, tracer.functions)
    if check_trace:
        if tracer.nondeterministic:
            import warnings

            warnings.warn("autograd.jit.trace: the trace has nondeterministic nodes (dropout in training mode, random "
                          "sampling); check_trace skipped. Hint: trace after model.eval()", TracerWarning, stacklevel=2)
        else:
            _check(traced, inputs, result, check_tolerance)
            for other in check_inputs or ():
                other = other if isinstance(other, tuple | list) else (other,)
                with autograd.no_grad():
                    eager = fn_or_module(*other)
                _check(traced, other, eager, check_tolerance)
    return traced


def _leaves(r):
    if isinstance(r, Tensor):
        return [r]
    if isinstance(r, tuple | list):
        return [x for o in r for x in _leaves(o)]
    if isinstance(r, dict):
        return [x for o in r.values() for x in _leaves(o)]
    return []


def _check(traced, inputs, eager, tol):
    import autograd

    with autograd.no_grad():
        again = traced(*inputs)
    a, b = _leaves(eager), _leaves(again)
    if len(a) != len(b):
        raise TracingCheckError(f"autograd.jit.trace: the graph returned {len(b)} tensors, eager returned {len(a)}")
    for i, (x, y) in enumerate(zip(a, b)):
        xn, yn = x.detach().cpu().numpy(), y.detach().cpu().numpy()
        if xn.shape != yn.shape or xn.dtype != yn.dtype or not np.allclose(
                xn.astype(np.float64), yn.astype(np.float64), rtol=tol, atol=tol, equal_nan=True):
            raise TracingCheckError(
                f"autograd.jit.trace: output {i} of the traced graph (shape {list(yn.shape)}, {yn.dtype}) differs from "
                f"eager (shape {list(xn.shape)}, {xn.dtype}); max abs difference "
                f"{np.max(np.abs(xn.astype(np.float64) - yn.astype(np.float64))) if xn.shape == yn.shape else 'n/a'}. "
                f"Hint: the function depends on something the trace cannot see (Python values read from tensors, "
                f"global state, in-place writes through views); pass check_trace=False to keep the trace anyway")
