"""Elementwise epilogues of ``linear``: ``act(x @ W.T + b) + residual`` is one kernel of the backends (the matmul
kernel's epilogue), so a recorded ``linear`` whose output only an activation or a residual ``add`` reads, and that
nothing keeps after the step, takes that op into its own launch: one kernel and one round trip of the output less.
(An activation is folded on cuda only, where the epilogue computes it with the same formulas; a training step keeps
the pre-activation for the backward, so there it is the residual adds that fold.)"""

from __future__ import annotations

from .capture import Call
from .schedule import _barrier, _call_arrays

__all__ = ["fold_linear_epilogues"]

_ACTS = {"relu": "relu", "silu": "silu", "gelu": "gelu"}


def _same(v, out) -> bool:
    """``v`` reads ``out``'s elements in order (a reshaped view of the same contiguous memory)."""
    return (v.__class__ is out.__class__ and v._storage is out._storage and v._offset == out._offset
            and v.size == out.size and v._dtype is out._dtype and v.is_contiguous() and out.is_contiguous())


def _as(a, like):
    """``a`` (contiguous) viewed with ``like``'s shape."""
    shape = like._shape
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return a._view(shape, tuple(reversed(strides)), a._offset)


def _epilogue(c, out, act, res, device_type):
    """(activation, residual, new out) when call ``c`` can be ``linear``'s epilogue, else None."""
    args = c.args
    if act is None and res is None and c.op in _ACTS and len(args) == 3 and device_type == "cuda":
        o, v, compute = args
        approx = c.kwargs.get("approximate", "none") if c.op == "gelu" else "none"
        if (set(c.kwargs) <= {"approximate"} and hasattr(v, "_storage") and _same(v, out) and compute is out._dtype
                and o._dtype is out._dtype and o.is_contiguous() and o.size == out.size):
            return ("gelu_tanh" if approx == "tanh" else _ACTS[c.op]), None, o
    if res is None and c.op == "add" and len(args) == 4 and not c.kwargs:
        o, x1, x2, compute = args
        for v, r in ((x1, x2), (x2, x1)):
            if (hasattr(v, "_storage") and hasattr(r, "_storage") and _same(v, out) and compute is out._dtype
                    and o._dtype is out._dtype and o.is_contiguous() and o.size == out.size
                    and r._dtype is out._dtype and r.is_contiguous() and r._shape == o._shape
                    and r._storage is not out._storage and o._storage is not out._storage):
                return act, r, o
    return None


def fold_linear_epilogues(calls, live) -> list:
    """``calls`` with foldable epilogues of ``linear`` moved into it (``live``: storages kept after the step)."""
    calls = list(calls)
    access: dict = {}
    for i, c in enumerate(calls):
        for a in _call_arrays(c):
            access.setdefault(id(a._storage), set()).add(i)
    blocking = {i for i, c in enumerate(calls) if _barrier(c).touches_all}
    for i in range(len(calls)):
        c = calls[i]
        if c is None or c.op != "linear" or len(c.args) != 6:
            continue
        while True:
            out, x, w, b, res, act = c.args
            sid = id(out._storage)
            users = sorted(access.get(sid, ()))
            if sid in live or len(users) != 2 or users[0] != i:
                break
            j = users[1]
            ep = _epilogue(calls[j], out, act, res, out._device.type)
            if ep is None:
                break
            act2, r, o = ep
            between = range(i + 1, j)
            touched = {id(o._storage)} | ({id(r._storage)} if r is not None else set())
            if any(k in blocking for k in between) or any(
                    k in access.get(s, ()) for s in touched for k in between):
                break
            new_out = _as(o, out)
            new_res = _as(r, out) if r is not None else res
            c = Call("linear", c.fn, (new_out, x, w, b, new_res, act2), {}, None, c.index)
            calls[i], calls[j] = c, None
            access[sid] = set()
            for s in touched:
                access[s] = (access.get(s, set()) - {j}) | {i}
    return [c for c in calls if c is not None]
