"""The backward engine: walks the graph from the roots in dependency order (no recursion, so 10^5-op
chains work), sums the gradients arriving at each node output, runs hooks, calls each node's ``apply``,
validates and casts what it returns, and accumulates into leaves (``backward``) or captures the gradients
of requested inputs (``grad``)."""

from __future__ import annotations

import heapq
import sys
import threading

import tkernels as tk
from tkernels.cuda import device_errors as _device_errors
from tkernels.dispatch import lookup as _lookup
from tkernels.validation import OpTypeError

from . import factory
from .grad_mode import STATE
from .graph import AccumulateGrad
from .graph import hook_result as _hook_result
from .ops._base import sum_to
from .tensor import Tensor

__all__ = ["backward", "grad", "queue_callback"]

# A leaf's first gradient becomes its ``.grad`` without a copy when nothing but the engine can reach it (see
# AccumulateGrad.accumulate): decided from exact reference counts, which CPython before 3.14 keeps for locals.
_CAN_STEAL = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_refcount = sys.getrefcount



def _as_list(x, name):
    if isinstance(x, Tensor):
        return [x]
    if x is None:
        return None
    try:
        seq = list(x)
    except TypeError:
        raise OpTypeError(f"{name}: expected a Tensor or a sequence of Tensors, got {type(x).__name__}") from None
    return seq


def _root_grads(op, outputs, grad_outputs):
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{op}: got {len(grad_outputs)} gradients for {len(outputs)} outputs; pass one "
                           f"gradient (or None) per output")
    edges, grads = [], []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(t, Tensor):
            raise OpTypeError(f"{op}: outputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does not have a "
                               f"grad_fn (shape {list(t.shape)}). Hint: did you compute it under no_grad, or "
                               f"forget requires_grad=True on the inputs?")
        if g is None:
            a = t._data
            if a._dtype.kind == "c":
                raise RuntimeError(f"{op}: grad can be implicitly created only for real scalar outputs; the output "
                                   f"is {a._dtype} (shape {list(t.shape)}). Hint: backpropagate a real loss, e.g. "
                                   f".abs().sum() or .real, or pass gradient=")
            if a.size != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar outputs; the output "
                                   f"has shape {list(t.shape)}. Hint: pass gradient= (a tensor of that shape), "
                                   f"or reduce it first (e.g. .sum())")
            dev = a._device  # tk.ones without its argument checks (the shape and dtype are an array's)
            ones = _lookup("empty", dev)(a._shape, a._dtype, dev)
            _lookup("fill", dev)(ones, 1)
            g = Tensor._wrap(ones)
        elif not isinstance(g, Tensor):
            g = factory.tensor(g, dtype=t.dtype, device=t.device)
        elif g._data._shape != t._data._shape:
            raise RuntimeError(f"{op}: mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                               f"output[{i}] has a shape of {list(t.shape)}")
        edges.append(t._edge())
        grads.append(g)
    return edges, grads


def _collect(root_nodes):
    """Dependency counts of every node reachable from the roots (iterative DFS; one dict, whose keys are
    also the nodes seen: the roots start at 0)."""
    deps = dict.fromkeys(root_nodes, 0)
    stack = list(root_nodes)
    get = deps.get
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            c = get(nxt)
            if c is None:
                deps[nxt] = 1
                stack.append(nxt)
            else:
                deps[nxt] = c + 1
    return deps


def _needed(nodes, targets):
    """The nodes from which a target node is reachable (those worth running when only ``targets`` matter)."""
    order = []
    seen = set()
    for start in nodes:
        if start in seen:
            continue
        stack = [(start, iter(start.next_functions))]
        seen.add(start)
        while stack:
            n, it = stack[-1]
            for nxt, _ in it:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, iter(nxt.next_functions)))
                    break
            else:
                stack.pop()
                order.append(n)
    needed = set(targets)
    for n in order:  # post-order: children first
        if n in needed:
            continue
        for nxt, _ in n.next_functions:
            if nxt in needed:
                needed.add(n)
                break
    return needed


def _add(a, b):
    if a is None:
        return b
    if a.__class__.is_sparse is True or b.__class__.is_sparse is True:
        return _sparse_add(a, b)
    return a + b


def _sparse_add(a, b):
    """The sum of two gradients of which one or both are sparse COO (``Embedding(sparse=True)``): sparse + sparse
    stays sparse (indices concatenated, coalesced when it lands in ``.grad``), with a dense one it is dense."""
    if a.__class__.is_sparse is True and b.__class__.is_sparse is True:
        return a + b
    return (a.to_dense() if a.__class__.is_sparse is True else a) + (b.to_dense() if b.__class__.is_sparse is True
                                                                     else b)


def _fix_grad(node, i, g, meta):
    """Make gradient ``g`` for input ``i`` of ``node`` match the input's shape and dtype."""
    shape, dtype, _ = meta
    if g._data.shape != shape:
        try:
            g = sum_to(g, shape)
        except Exception:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g.shape)} but expected shape compatible with {list(shape)}") from None
    if g.dtype != dtype:
        g = g.to(dtype)
    return g


def _anomaly_check(node, outs):
    for i, g in enumerate(outs):
        if g is None or g.__class__.is_sparse is True or g._data.dtype.kind not in "fc":
            continue
        a = g._data
        if bool(tk.all(tk.isfinite(a))):
            continue
        kind = "nan" if bool(tk.any(tk.isnan(a))) else "inf"
        raise RuntimeError(f"Function '{node.name()}' returned {kind} values in its {i}th output."
                           + _forward_trace(node))


def _forward_trace(node):
    if node._trace is None:
        return ""
    return ("\nTraceback of forward call that created " + node.name() + " (anomaly mode):\n"
            + "".join(node._trace).rstrip())


class _Pass(threading.local):
    depth = 0         # backward passes running on this thread (nested: a backward inside a hook or Function)
    callbacks = None  # what queue_callback queued during the outermost one


_PASS = _Pass()


def queue_callback(fn) -> None:
    """Run ``fn()`` once the current (outermost) backward pass has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``): what DistributedDataParallel waits for its gradient
    all-reduces in. Only valid from inside a backward pass (a hook)."""
    if _PASS.depth == 0:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a tensor hook during "
                           "backward")
    _PASS.callbacks.append(fn)


def run(outputs, grad_outputs, retain_graph, create_graph, inputs=None, capture=False, allow_unused=False,
        op="backward"):
    p = _PASS
    if p.depth == 0:
        p.callbacks = []
    p.depth += 1
    try:
        res = _run(outputs, grad_outputs, retain_graph, create_graph, inputs, capture, allow_unused, op)
        if p.depth == 1:
            cbs = p.callbacks
            while cbs:  # a callback may queue another
                cbs.pop(0)()
        return res
    finally:
        p.depth -= 1
        if p.depth == 0:
            p.callbacks = None


def _run(outputs, grad_outputs, retain_graph, create_graph, inputs, capture, allow_unused, op):
    if retain_graph is None:
        retain_graph = create_graph
    root_edges, root_grads = _root_grads(op, outputs, grad_outputs)

    # targets: (node, nr) whose incoming gradient is captured (grad) or accumulated (backward(inputs=))
    target_edges = None
    if inputs is not None:
        target_edges = []
        for j, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError(f"{op}: inputs[{j}] (shape {list(t.shape)}) does not require grad; every "
                                   f"input must require grad")
            target_edges.append(t._edge())

    root_nodes = []
    for n, _ in root_edges:
        if n not in root_nodes:
            root_nodes.append(n)
    deps = _collect(root_nodes)
    needed = None
    capture_at = {}
    if target_edges is not None:
        for j, (n, nr) in enumerate(target_edges):
            capture_at.setdefault(n, []).append((nr, j))
        needed = _needed(root_nodes, [n for n, _ in target_edges])
        if capture:  # nodes that are only targets need not run
            runs = set()
            for n in needed:
                for nxt, _ in n.next_functions:
                    if nxt in needed and nxt is not n:
                        runs.add(n)
                        break
            needed = runs
    captured = [None] * (len(target_edges) if target_edges is not None else 0)

    # buffers: node -> list of the gradients summed so far for each of its outputs (None: none yet)
    buffers = {}
    for (n, nr), g in zip(root_edges, root_grads):
        buf = buffers.get(n)
        if buf is None:
            buf = buffers[n] = [None] * max(n._n_outputs, nr + 1)
        buf[nr] = _add(buf[nr], g)
    buf = g = root_grads = None  # the buffers hold the root gradients now (and nothing else: see steal)
    ready = [(-n._seq, i, n) for i, n in enumerate(root_nodes) if deps[n] == 0]
    heapq.heapify(ready)
    tie = len(ready)
    prev_mode = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    heappop, heappush = heapq.heappop, heapq.heappush
    backward_only = target_edges is None
    steal = _CAN_STEAL and backward_only and not create_graph
    plain = backward_only and needed is None  # no targets: every reachable node runs
    try:
        while ready:
            node = heappop(ready)[2]
            grads = buffers.pop(node, None)
            if plain and node.__class__ is AccumulateGrad and not node._pre_hooks and not node._retain:
                # the common leaf: its gradient accumulated as the general branch below does (with no hooks
                # on the node and no targets, none of that branch's other steps applies)
                if grads is not None:
                    g0 = grads[0]
                    if g0 is not None:
                        grads = None
                        sole = steal and _refcount(g0) == 2  # (see below)
                        node.accumulate(g0, create_graph, sole)
                    g0 = None
                continue
            n_out = node._n_outputs
            if grads is None:
                grads = [None] * n_out
            elif len(grads) != n_out:  # an edge to an output the node never made (kept as before: dropped)
                grads = (grads + [None] * n_out)[:n_out]
            if node._pre_hooks:
                for nr, fn in list(node._pre_hooks):
                    if nr is None:
                        r = fn(tuple(grads))
                        if r is not None:
                            grads = list(r)
                    elif grads[nr] is not None:
                        r = fn(grads[nr])
                        if r is not None:
                            grads[nr] = _hook_result(fn, grads[nr], r)
                r = None
            if node._retain:
                for nr, ref in list(node._retain.items()):
                    t = ref()
                    if t is not None and grads[nr] is not None:
                        g = grads[nr]
                        t.grad = (g if create_graph else g.detach()._owned()) if t.grad is None else t.grad + g
                t = g = None
            if not backward_only and node in capture_at:
                for nr, j in capture_at[node]:
                    g = grads[nr] if nr < len(grads) else None
                    if capture and g is not None and isinstance(node, AccumulateGrad) and node.variable._hooks:
                        for hook in node.variable._hooks:
                            r = hook(g)
                            if r is not None:
                                g = _hook_result(hook, g, r)
                    captured[j] = _add(captured[j], g) if g is not None else captured[j]
                g = r = None
            run_it = needed is None or node in needed
            if node.__class__ is AccumulateGrad or isinstance(node, AccumulateGrad):
                if run_it and (backward_only or (not capture and node in capture_at)):
                    g0 = grads[0]
                    if g0 is not None:
                        grads = None
                        # g0 is the only reference left on this path: 2 (g0 and the argument) means nobody
                        # else (a user variable, a hook, another node's buffer) can see this gradient
                        sole = steal and _refcount(g0) == 2  # (its own statement: no stack copy)
                        node.accumulate(g0, create_graph, sole)
                    g0 = None
                continue
            outs = None
            if run_it:
                if n_out == 1:
                    have = grads[0] is not None
                else:
                    have = False
                    for g in grads:
                        if g is not None:
                            have = True
                            break
            else:
                have = False
            if have:
                meta_out = node._out_meta
                if n_out != 1 and node._materialize and meta_out is not None:
                    for i, g in enumerate(grads):
                        if g is None and i in meta_out:
                            shape, dtype, device = meta_out[i]
                            grads[i] = factory.zeros(shape, dtype=dtype, device=device)
                try:
                    outs = node.apply(grads)
                except Exception as e:
                    if node._trace is not None and not getattr(e, "_ag_traced", False):
                        e.args = ((str(e.args[0]) if e.args else "") + _forward_trace(node),) + e.args[1:]
                        e._ag_traced = True
                    raise
                if outs.__class__ is not tuple and not isinstance(outs, (tuple, list)):
                    outs = (outs,)
                if len(outs) != len(node.next_functions):
                    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                                       f"(expected {len(node.next_functions)}, got {len(outs)})")
                if node._post_hooks:
                    for fn in list(node._post_hooks):
                        r = fn(tuple(outs), tuple(grads))
                        if r is not None:
                            outs = tuple(r)
                    r = None
                if STATE.anomaly and STATE.anomaly_check_nan:
                    _anomaly_check(node, outs)
            grads = None
            if not retain_graph:
                node.release()
            i = 0
            for nxt, nr in node.next_functions:
                if nxt is None:
                    i += 1
                    continue
                g = outs[i] if outs is not None else None
                i += 1
                if g is not None:
                    meta = nxt._out_meta
                    meta = meta.get(nr) if meta else None
                    if meta is not None and g.__class__.is_sparse is not True:
                        a = g._data
                        if a._shape != meta[0] or a._dtype is not meta[1]:
                            g = _fix_grad(node, i - 1, g, meta)
                        a = None
                    b = buffers.get(nxt)
                    if b is None:
                        if nr == 0 and nxt._n_outputs == 1:
                            buffers[nxt] = [g]
                        else:
                            b = buffers[nxt] = [None] * max(nxt._n_outputs, nr + 1)
                            b[nr] = g
                    else:
                        if nr >= len(b):
                            b.extend([None] * (nr + 1 - len(b)))
                        b[nr] = _add(b[nr], g)
                    b = None
                    g = None  # no stale references to gradients (AccumulateGrad counts them)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    tie += 1
                    heappush(ready, (-nxt._seq, tie, nxt))
            outs = None
    finally:
        STATE.grad_enabled = prev_mode

    if capture:
        for j, g in enumerate(captured):
            if g is None and not allow_unused:
                t = inputs[j]
                raise RuntimeError(f"grad: one of the differentiated Tensors (inputs[{j}], shape {list(t.shape)}) "
                                   f"appears to not have been used in the graph. Set allow_unused=True if this "
                                   f"is the desired behavior.")
        return tuple(captured)
    if target_edges is not None:  # backward(inputs=...) on non-leaf tensors fills their .grad
        for j, t in enumerate(inputs):
            n, nr = target_edges[j]
            if not isinstance(n, AccumulateGrad) and captured[j] is not None:
                g = captured[j]
                t.grad = (g if create_graph else g.detach()._owned()) if t.grad is None else t.grad + g
    return None


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' ``.grad`` (``autograd.backward``)."""
    outs = _as_list(tensors, "backward")
    gts = _as_list(grad_tensors, "backward") if grad_tensors is not None else None
    ins = _as_list(inputs, "backward") if inputs is not None else None
    if ins is not None and not ins:
        raise RuntimeError("backward: inputs= was given but is empty; pass the tensors to accumulate into")
    run(outs, gts, retain_graph, create_graph, inputs=ins, capture=False, op="backward")
    _device_errors.poll()  # an error a cuda kernel recorded (a bad index...) raises here, without a sync


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is left untouched)."""
    outs = _as_list(outputs, "grad")
    ins = _as_list(inputs, "grad")
    if not ins:
        raise RuntimeError("grad: inputs is empty; pass the tensors to differentiate with respect to")
    gos = _as_list(grad_outputs, "grad") if grad_outputs is not None else None
    if materialize_grads:
        allow_unused = True
    res = run(outs, gos, retain_graph, create_graph, inputs=ins, capture=True, allow_unused=allow_unused,
              op="grad")
    _device_errors.poll()
    if materialize_grads:
        res = tuple(factory.zeros_like(t) if g is None else g for g, t in zip(res, ins))
    return res
