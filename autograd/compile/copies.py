"""Copies a compiled step does not need to make: ``concat`` becomes one copy per input into its slice of the output
(fusible, so they join a region instead of launching one kernel each), and a value copied out of a buffer that
nothing else reads or keeps (``t = f(...); d.copy_(t)``: a transposed attention gradient into a concat's slice, a
matmul's gradient into a parameter's ``.grad``) is written by its producer straight into the destination."""

from __future__ import annotations

from tkernels.array import _view_strides
from tkernels.dispatch import lookup

from .capture import Call
from .schedule import _arrays, _barrier, _call_arrays, overlaps

__all__ = ["expand_concat", "forward_copies"]

_PRODUCERS = {"copy_", "matmul", "linear"}  # write their first argument through any strides
# (a backend writes its first argument: ``impl(out, ...)``; a buffer no call wrote before is wholly its output)


def expand_concat(calls) -> list:
    out_calls = []
    for c in calls:
        if c.op == "concat" and len(c.args) == 3 and not c.kwargs and c.refresh is None:
            out, arrays, axis = c.args
            if isinstance(arrays, (list, tuple)) and all(hasattr(a, "_storage") and a._dtype is out._dtype
                                                         for a in arrays):
                copy = lookup("copy_", out._device)
                copy = getattr(copy, "__wrapped__", copy)
                start = 0
                for a in arrays:
                    m = a._shape[axis]
                    view = out._view(out._shape[:axis] + (m,) + out._shape[axis + 1:], out._strides,
                                     out._offset + start * out._strides[axis])
                    start += m
                    if a.size:
                        out_calls.append(Call("copy_", copy, (view, a), {}, None, c.index))
                continue
        out_calls.append(c)
    return out_calls


def _in_order(v, t) -> bool:
    """``v`` reads ``t``'s elements in row-major order (``t`` contiguous, ``v`` a contiguous view of it)."""
    return (hasattr(v, "_storage") and v._storage is t._storage and v._offset == t._offset and v.size == t.size
            and v._dtype is t._dtype and v.is_contiguous() and t.is_contiguous())


def forward_copies(calls, live) -> list:
    calls = list(calls)
    access: dict = {}
    for i, c in enumerate(calls):
        for a in _call_arrays(c):
            access.setdefault(id(a._storage), set()).add(i)
    blocking = {i for i, c in enumerate(calls) if _barrier(c).touches_all}
    for j, c in enumerate(calls):
        if c is None or c.op != "copy_" or len(c.args) != 2 or c.kwargs:
            continue
        d, t2 = c.args
        sid = id(t2._storage)
        users = sorted(access.get(sid, ()))
        if sid in live or len(users) != 2 or users[1] != j or d._storage is t2._storage:
            continue
        i = users[0]
        p = calls[i]
        if p is None or p.op is None or p.refresh is not None or not p.args:
            continue
        t = p.args[0]
        if not hasattr(t, "_storage") or not _in_order(t2, t) or d._dtype is not t._dtype:
            continue
        if p.op not in _PRODUCERS and not d.is_contiguous():
            continue  # (other kernels may expect a contiguous output: any producer writes a contiguous d)
        if any(a._storage is t._storage for a in _arrays([p.args[1:], p.kwargs], [])):
            continue  # the producer also reads its output
        strides = _view_strides(d._shape, d._strides, t._shape)
        if strides is None:
            continue
        between = range(i + 1, j)
        if any(k in blocking for k in between) or any(
                calls[k] is not None and any(overlaps(d, a) for a in _call_arrays(calls[k]))
                for k in between if k in access.get(id(d._storage), ())):
            continue
        dst = d._view(t._shape, strides, d._offset)
        calls[i] = Call(p.op, p.fn, (dst, *p.args[1:]), p.kwargs, None, p.index)
        calls[j] = None
        access[sid] = set()
        s = access.setdefault(id(d._storage), set())
        s.discard(j)
        s.add(i)
    return [c for c in calls if c is not None]
