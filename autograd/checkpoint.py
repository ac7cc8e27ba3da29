"""Activation checkpointing: trade compute for memory by recomputing a region's activations in backward.

``checkpoint(fn, *args)`` returns ``fn(*args)``; the graph behind the result keeps only what the region's
nodes need *from outside* it (its inputs, parameters), not the activations computed inside it. When backward
first needs one of them, the region is run again with gradient recording on and the random state of
``tkernels.random`` restored (so dropout draws the same masks), and the recomputed values are handed to the
original nodes. Gradients are those of the function run without checkpointing, parameters used inside ``fn`` (closed
over, not passed) get theirs too, and inputs need not require grad.

Two modes, as in PyTorch:
- ``use_reentrant=False`` (default): the region is recorded as usual and its nodes' saved tensors are
  replaced by handles that recompute on first use (PyTorch's non-reentrant checkpoint, matched by creation
  order). Nested checkpoints, keyword arguments, any output structure and double backward work.
- ``use_reentrant=True``: the region runs under ``no_grad`` and one ``CheckpointFunctionBackward`` node
  recomputes it and runs a nested backward. Only positional arguments; it records nothing when no input
  requires grad (parameters inside then get no gradient: a warning says so); not twice differentiable.

>>> y = checkpoint(block, x)        # block(x) with its activations recomputed in backward
>>> autograd.graph.saved_tensors_report(y.sum())   # shows what remains saved
"""

from __future__ import annotations

import warnings

import tkernels.random as _rng
from tkernels import _capture

from . import graph as _graph
from .engine import backward as _backward
from .function import Function, once_differentiable
from .grad_mode import STATE, enable_grad
from .tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
               context_fn=None, determinism_check: str = "default", debug: bool = False, **kwargs):
    """``function(*args, **kwargs)`` whose intermediate activations are recomputed in backward instead of
    being kept. ``preserve_rng_state``: restore the random state for the recomputation (dropout matches)."""
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if preserve_rng_state and STATE.grad_enabled:
        _capture.refuse("checkpoint", "preserve_rng_state=True restores the random state on the host for the "
                        "recomputation, which a replay would not do again",
                        "pass preserve_rng_state=False when the function draws no random numbers")
    if context_fn is not None:
        raise NotImplementedError("checkpoint: context_fn is not supported")
    if use_reentrant:
        if kwargs:
            raise ValueError("checkpoint(use_reentrant=True): unexpected keyword arguments "
                             f"{', '.join(kwargs)}; pass them positionally or use use_reentrant=False")
        if STATE.grad_enabled and not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            warnings.warn("checkpoint(use_reentrant=True): none of the inputs have requires_grad=True; gradients "
                          "of parameters inside the function will be None. Hint: use use_reentrant=False",
                          stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if not STATE.grad_enabled:
        return function(*args, **kwargs)
    rng = _rng.get_state() if preserve_rng_state else None
    start = next(_graph._SEQ)
    out = function(*args, **kwargs)
    end = next(_graph._SEQ)
    nodes = _region_nodes(out, start, end)
    if nodes:
        _Region(function, args, kwargs, rng, nodes)
    return out


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (a list of callables, or a module with ``children()``) one after the other, in
    ``segments`` checkpointed segments; the last segment is not checkpointed (its output is needed anyway)."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError(f"checkpoint_sequential: unexpected keyword arguments {', '.join(kwargs)}")
    if hasattr(functions, "children"):
        functions = list(functions.children())
    functions = list(functions)
    if not 1 <= segments <= max(1, len(functions)):
        raise ValueError(f"checkpoint_sequential: segments must be in [1, {len(functions)}], got {segments}")

    def run(start, stop):
        def forward(x):
            for f in functions[start:stop]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    stop = 0
    for start in range(0, size * (segments - 1), size):
        stop = start + size
        input = checkpoint(run(start, stop), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(stop, len(functions))(input)


# ------------------------------------------------------------------------------------ non-reentrant
def _tensors(out, acc):
    if isinstance(out, Tensor):
        acc.append(out)
    elif isinstance(out, tuple | list):
        for o in out:
            _tensors(o, acc)
    elif isinstance(out, dict):
        for o in out.values():
            _tensors(o, acc)
    return acc


def _region_nodes(out, start, end):
    """The nodes created between sequence numbers ``start`` and ``end`` behind ``out``, in creation order."""
    stack = [t._grad_fn for t in _tensors(out, []) if t._grad_fn is not None]
    seen = set()
    nodes = []
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or not start < n._seq < end:
            continue
        seen.add(id(n))
        nodes.append(n)
        stack.extend(e[0] for e in n.next_functions)
    nodes.sort(key=lambda n: n._seq)
    return nodes


class _Deferred:
    """Stands for a saved tensor of a checkpointed region until the region is recomputed."""

    __slots__ = ("region", "inner")
    array = None  # nothing held: the memory ledger counts no bytes for it

    def __init__(self, region):
        self.region = region
        self.inner = None

    def unpack(self, node):
        if self.inner is None:
            self.region.recompute()
        return self.inner.unpack(node)


class _Region:
    """The recipe for a checkpointed region: function, inputs (with their versions), random state, and the
    handles that replaced its nodes' saved tensors (one list per node with saved tensors, in creation order)."""

    def __init__(self, fn, args, kwargs, rng, nodes):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng = rng
        self.versions = [(i, a._version.v) for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.slots = []  # per node with saved tensors: (type, [(index, handle)])
        for n in nodes:
            if not n._saved:
                continue
            handles = []
            for j, s in enumerate(n._saved):
                if isinstance(s, _graph.SavedTensor):  # a nested checkpoint's handles stay theirs
                    h = _Deferred(self)
                    n._saved[j] = h
                    handles.append((j, h))
            self.slots.append((type(n), handles))

    def recompute(self):
        for i, v in self.versions:
            a = self.args[i]
            if a._version.v != v:
                raise RuntimeError(f"checkpoint: argument {i} of the checkpointed function "
                                   f"[{a.dtype} {list(a.shape)}] has been modified by an inplace operation after "
                                   f"the forward pass (version {a._version.v}; expected version {v}), so it cannot "
                                   f"be recomputed. Hint: clone() the tensor before modifying it in place")
        cur = _rng.get_state() if self.rng is not None else None
        if self.rng is not None:
            _rng.set_state(self.rng)
        try:
            with enable_grad():
                start = next(_graph._SEQ)
                out = self.fn(*self.args, **self.kwargs)
                end = next(_graph._SEQ)
        finally:
            if cur is not None:
                _rng.set_state(cur)
        new = [n for n in _region_nodes(out, start, end) if n._saved]
        if [type(n) for n in new] != [t for t, _ in self.slots]:
            raise RuntimeError(f"checkpoint: recomputing the checkpointed function recorded different operations "
                               f"than its forward pass ({[t.__name__ for t, _ in self.slots]} then "
                               f"{[type(n).__name__ for n in new]}). Hint: the function must do the same thing "
                               f"each time it is called (no data-dependent branches on values that change, no "
                               f"state updated by the call)")
        for (_, handles), n in zip(self.slots, new):
            for j, h in handles:
                h.inner = n._saved[j]
        self.slots = ()  # the handles own the recomputed values now; they go with the nodes' release


# ---------------------------------------------------------------------------------------- reentrant
class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng = _rng.get_state() if preserve_rng_state else None
        ctx.set_materialize_grads(False)
        ctx.template = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        return run_function(*args)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = []
        for i, a in enumerate(ctx.template):
            if a is None:
                t = next(saved).detach()
                if ctx.needs_input_grad[i + 2]:
                    t.requires_grad_()
                a = t
            inputs.append(a)
        cur = _rng.get_state() if ctx.rng is not None else None
        if ctx.rng is not None:
            _rng.set_state(ctx.rng)
        try:
            with enable_grad():
                out = ctx.run_function(*inputs)
        finally:
            if cur is not None:
                _rng.set_state(cur)
        outs = out if isinstance(out, tuple) else (out,)
        sel = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o._requires_grad and g is not None]
        if not sel:
            raise RuntimeError("checkpoint: none of the outputs of the checkpointed function requires grad; this "
                               "checkpoint() is not necessary")
        _backward([o for o, _ in sel], [g for _, g in sel])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in inputs)
