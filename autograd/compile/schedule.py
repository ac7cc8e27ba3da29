"""Partitioning a recorded step into fusible regions (``autograd.compile``).

A recorded call is either *fusible* (an elementwise kernel computing in float32 or float64: the unary and binary
families, ``copy_``, ``fill``; a ``sum`` over leading or trailing dimensions of a contiguous array; a float32
``matmul``, 2-D or batched: the backward's gradient products, independent ones then share one launch; the row ops
of ``rows.py``/``splits.py``, made from layer norm, softmax and cross-entropy calls on cuda: kind "row", in the
segment of the elementwise ops over their index space; a count and a mean: "count", "mean", one program each) or
a *barrier* (every other kernel: ``linear``, convolutions, attention, embeddings, the optimizer's host call...).
A barrier reads and writes every array it is given, but those of ``_BARRIER_WRITES``, which write only their
leading arguments.
Fusible ops are grouped into regions, one generated kernel each: an op joins the earliest region it can reach
without crossing a call it depends on (it moves across independent barriers), then regions whose ops can all move
later are dissolved into later ones. Memory dependencies are by storage (every array of a capture stays alive, so
distinct storages never share memory); a barrier reads and writes every array it is given; a host call other than
the gradient bookkeeping touches everything.

Inside a region, ops over the same index space form one *segment* (a chain: values flow in registers when a later op
reads exactly what an earlier one wrote); a segment never reads what another segment of its region writes. A
written array is stored only when something outside its segment reads it or it outlives the step (``live``)."""

from __future__ import annotations

import sys

import numpy as np

from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.kernels import elementwise as ek

from .rows import ROW_OPS

__all__ = ["Op", "Barrier", "Region", "fusible", "partition", "live_arrays"]

FLOATS = (_dt.float32, _dt.float64)
# binary float arithmetic whose kernel code records no errors (codes 0..13 but floor_divide/remainder: 3, 4 are fine
# on floats too)
_BINARY_OK = {n for n, c in ek.BINARY_CODES.items() if c <= 13}
_UNARY_OK = {n for n, c in ek.UNARY_CODES.items() if c < 45 and n not in ("positive", "round_scaled_up",
                                                                          "round_scaled_down", "logit_eps")}
MAX_OPS = 48  # ops per region (keeps generated kernels small)
# kinds that are a segment of their own (their programs tile their own index space)
_ALONE = ("sum", "mm", "count", "mean")


def _leaves(obj, cls, out):
    """The instances of ``cls`` in ``obj`` and its lists, tuples and dict values, appended to ``out`` in order."""
    if isinstance(obj, cls):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _leaves(x, cls, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _leaves(x, cls, out)
    return out


def _arrays(obj, out):
    return _leaves(obj, Array, out)


def _call_arrays(call):
    """Every Array a recorded call reads or writes: its arguments and the result it refreshes."""
    return _leaves([call.args, call.kwargs, call.refresh], Array, [])


def layout(a: Array) -> tuple:
    return (id(a._storage), a._offset, a._shape, a._strides, a._dtype)


class Op:
    """A fusible call: ``kind`` "unary", "binary", "copy", "fill", "sum", "mm" or "row" (``rows.py``); ``out`` the array
    written (a row op also writes ``extra["aux_outs"]``), ``ins`` the operands (arrays or Python scalars), ``shape``
    the index space."""

    def __init__(self, call, kind, out, ins, compute, shape, **extra):
        self.call, self.kind, self.out, self.ins, self.compute, self.shape = call, kind, out, ins, compute, shape
        self.extra = extra
        self.reads = [a for a in ins if isinstance(a, Array)]
        self.outs = [out] + [a for a in extra.get("aux_outs", ()) if a is not None]  # every array written
        # the arrays accessed element for element over ``shape`` (a row op's statistics and partials are not)
        self.space = {layout(a) for a in extra["space"]} if "space" in extra else None
        self.store = True  # decided by partition()

    @property
    def name(self):
        return self.call.op

    def __repr__(self):
        return f"Op({self.call.op}#{self.call.index})"


# barriers known to write only their leading arguments (the others they read): an op reading those may move past
_BARRIER_WRITES = {"cross_entropy": 2, "nll_loss": 1, "embedding": 1, "linear": 1, "layer_norm": 3, "softmax": 1,
                   "log_softmax": 1, "softmax_backward": 1, "log_softmax_backward": 1}


class Barrier:
    def __init__(self, call, touches_all=False, arrays=()):
        self.call, self.touches_all = call, touches_all
        self.storages = {id(a._storage) for a in arrays}
        k = _BARRIER_WRITES.get(call.op)
        self.written = self.storages if k is None or call.refresh is not None else {
            id(a._storage) for a in _arrays(list(call.args[:k]), [])}

    def __repr__(self):
        return f"Barrier({self.call!r})"


class Region:
    def __init__(self):
        self.ops: list[Op] = []

    def __repr__(self):
        return f"Region({', '.join(o.call.op for o in self.ops)})"


def _contiguous(a: Array) -> bool:
    return a.is_contiguous()


def fusible(call) -> Op | None:
    """The fusible op of a recorded call, or None (a barrier)."""
    op = _fusible(call)
    if op is not None and any(a._storage is op.out._storage and layout(a) != layout(op.out) for a in op.reads):
        return None  # reads what it writes through another view (x.add_(x.mT)): not element for element
    return op


def _fusible(call) -> Op | None:
    op, args, kw = call.op, call.args, call.kwargs
    if op is None or not args or not isinstance(args[0], Array):
        return None
    if op in ROW_OPS:
        return _row_op(call)
    if op == "count_ne":  # splits.py: the denominator of a mean cross-entropy
        out, target, value = args
        return Op(call, "count", out, [target], out._dtype, target._shape, n=target.size, value=value)
    if op == "loss_mean":  # splits.py: sum(rows) / den
        out, rows, den, M = args
        return Op(call, "mean", out, [rows, den], out._dtype, rows._shape, n=M)
    out = args[0]
    if out.size == 0 or out._dtype not in FLOATS and op not in ("copy_", "fill"):
        return None
    if op in _UNARY_OK and len(args) == 3 and args[2] is out._dtype and isinstance(args[1], Array):
        x = args[1]
        if x._dtype is out._dtype and _contiguous(out):
            return Op(call, "unary", out, [x], out._dtype, out._shape, params=dict(kw))
    elif op in _BINARY_OK and len(args) == 4 and args[3] is out._dtype and not kw:
        x1, x2 = args[1], args[2]
        if _contiguous(out) and all(not isinstance(v, Array) and isinstance(v, (int, float)) and not isinstance(
                v, bool) or isinstance(v, Array) and v._dtype is out._dtype for v in (x1, x2)) and (
                isinstance(x1, Array) or isinstance(x2, Array)):
            return Op(call, "binary", out, [x1, x2], out._dtype, out._shape)
    elif op == "copy_" and len(args) == 2 and not kw and isinstance(args[1], Array):
        x = args[1]
        if x._dtype is out._dtype and out._dtype.kind == "f" and x._shape == out._shape:
            return Op(call, "copy", out, [x], _dt.float64 if out._dtype is _dt.float64 else _dt.float32,
                      out._shape)
    elif op == "fill" and len(args) == 2 and not kw and out._dtype in FLOATS and isinstance(args[1], (int, float)):
        return Op(call, "fill", out, [float(args[1])], out._dtype, out._shape)
    elif op == "matmul" and len(args) == 3 and not kw and all(isinstance(a, Array) for a in args):
        x1, x2 = args[1], args[2]
        nd = len(out._shape)
        if (out._dtype is _dt.float32 and x1._dtype is out._dtype and x2._dtype is out._dtype and nd in (2, 3)
                and len(x1._shape) == nd and len(x2._shape) == nd and _contiguous(out) and x1._shape[-1] > 1
                and x1._shape[:-2] == out._shape[:-2] == x2._shape[:-2]):
            return Op(call, "mm", out, [x1, x2], out._dtype, out._shape)
    elif op == "sum" and len(args) == 4 and not kw and isinstance(args[1], Array):
        x, axes, compute = args[1], args[2], args[3]
        if (compute is out._dtype and x._dtype is out._dtype and _contiguous(x) and _contiguous(out)
                and x.size > 0 and axes is not None):
            nd = len(x._shape)
            ax = sorted(int(a) % nd for a in axes) if nd else []
            if ax and ax == list(range(len(ax))):  # leading: (M, N) -> (N,)
                m = 1
                for s in x._shape[:len(ax)]:
                    m *= s
                return Op(call, "sum", out, [x], compute, x._shape, rows=m, cols=x.size // m, leading=True)
            if ax and ax == list(range(nd - len(ax), nd)):  # trailing: (M, N) -> (M,)
                n = 1
                for s in x._shape[nd - len(ax):]:
                    n *= s
                return Op(call, "sum", out, [x], compute, x._shape, rows=x.size // n, cols=n, leading=False)
    return None


def _row_op(call) -> Op:
    """The op of a call ``rows.expand_rows`` made (every such call is fusible)."""
    if call.op == "layer_norm_rows":
        out, mean, rstd, x, w, b, M, N, eps = call.args
        ins = [a for a in (x, w, b) if a is not None]
        return Op(call, "row", out, ins, x._dtype, x._shape, aux_outs=[mean, rstd], space=[out, x],
                  M=M, N=N)
    if call.op == "cross_entropy_rows":
        d, rows, lse, z, target, grad, den, ignore, M, C = call.args
        ins = [z, target, den] + ([grad] if isinstance(grad, Array) else [])
        return Op(call, "row", d, ins, z._dtype, z._shape, aux_outs=[rows, lse], space=[d, z], M=M, N=C)
    if call.op == "softmax_rows":
        out, x, M, N, log = call.args
        return Op(call, "row", out, [x], x._dtype, x._shape, space=[out, x], M=M, N=N)
    if call.op == "softmax_backward_rows":
        out, g, y, M, N, log = call.args
        return Op(call, "row", out, [g, y], y._dtype, y._shape, space=[out, g, y], M=M, N=N)
    dx, dwp, dbp, g, x, mean, rstd, w, M, N = call.args
    return Op(call, "row", dx, [a for a in (g, x, mean, rstd, w) if a is not None], x._dtype, x._shape,
              aux_outs=[dwp, dbp], space=[dx, g, x], M=M, N=N)


def _barrier(call) -> Barrier:
    if call.op is None:
        name = getattr(call.fn, "__name__", "")
        mod = getattr(call.fn, "__module__", "")
        if name == "_set_grad" and mod == "autograd.graph":
            return Barrier(call)  # points .grad at a tensor: no memory access
        return Barrier(call, touches_all=True)
    return Barrier(call, arrays=_call_arrays(call))


def _writes(op):
    return {id(a._storage) for a in op.outs}


def _reads(op):
    return {id(a._storage) for a in op.reads}


def _depends_on_barrier(op, b) -> bool:
    return b.touches_all or bool(b.storages & _writes(op)) or bool(b.written & _reads(op))


_OVERLAP: dict = {}


def overlaps(x: Array, y: Array) -> bool:
    """Whether views ``x`` and ``y`` share an element (slices of one buffer, such as a concat's inputs' places, do
    not); True when unsure (large views whose address ranges interleave)."""
    if x._storage is not y._storage:
        return False
    key = (layout(x), layout(y))
    r = _OVERLAP.get(key)
    if r is None:
        spans = []
        for a in (x, y):
            lo = a._offset + sum(min(0, (n - 1) * st) for n, st in zip(a._shape, a._strides))
            hi = a._offset + sum(max(0, (n - 1) * st) for n, st in zip(a._shape, a._strides))
            spans.append((lo, hi))
        if x.size == 0 or y.size == 0 or spans[0][1] < spans[1][0] or spans[1][1] < spans[0][0]:
            r = False
        elif x.size <= 1 << 20 and y.size <= 1 << 20:
            r = bool(np.intersect1d(_addresses(x), _addresses(y)).size)
        else:
            r = True
        _OVERLAP[key] = r
    return r


def _addresses(a: Array):
    addr = np.full((1,), a._offset, dtype=np.int64)
    for n, st in zip(a._shape, a._strides):
        addr = (addr[:, None] + np.arange(n, dtype=np.int64)[None, :] * st).reshape(-1)
    return addr


def _conflict(a: Op, b: Op) -> str | None:
    """How ops ``a`` and ``b`` relate through memory: None (independent), "chain" (same index space and every shared
    storage accessed through one identical layout: fusible in one segment), or "order" (must be in separate
    kernels)."""
    wa, wb, ra, rb = _writes(a), _writes(b), _reads(a), _reads(b)
    shared = (wa & (wb | rb)) | (wb & ra)
    if not shared:
        return None
    # storages whose accesses by a and b touch no common element (a write into one slice, a read of another)
    shared = {s for s in shared
              if any(overlaps(x, y) for x in [*a.outs, *a.reads] if id(x._storage) == s
                     for y in [*b.outs, *b.reads] if id(y._storage) == s
                     if any(x is o for o in a.outs) or any(y is o for o in b.outs))}
    if not shared:
        return None
    if a.kind in _ALONE or b.kind in _ALONE or a.shape != b.shape or a.kind == b.kind == "row":
        return "order"
    lays = {}
    for o in (a, b):
        for arr in [*o.outs, *o.reads]:
            s = id(arr._storage)
            if s in shared:
                if o.space is not None and layout(arr) not in o.space:
                    return "order"  # a row op's statistics or partials: not element for element
                lays.setdefault(s, set()).add(layout(arr))
    return "chain" if all(len(v) == 1 for v in lays.values()) else "order"


def _joinable(op, region) -> bool:
    if len(region.ops) >= MAX_OPS:
        return False
    if op.kind == "row" and any(o.kind == "row" and o.shape == op.shape for o in region.ops):
        return False  # one row op a segment (a segment holds the ops over one index space)
    return all(_conflict(o, op) != "order" for o in region.ops)


def _region_depends(op, region) -> bool:
    return any(_conflict(o, op) is not None for o in region.ops)


def partition(calls, live=None) -> list:
    """The plan: Barriers and Regions in execution order (``live``: the storages kept after the step; with it, ops
    whose only readers are in one later region move there, so their values flow in registers instead of memory)."""
    items: list = []
    for call in calls:
        op = fusible(call)
        if op is None:
            items.append(_barrier(call))
            continue
        target = None
        for item in reversed(items):
            if isinstance(item, Region):
                if _joinable(op, item):
                    target = item
                if _region_depends(op, item):
                    break
            elif _depends_on_barrier(op, item):
                break
        if target is None:
            target = Region()
            items.append(target)
        target.ops.append(op)
    _sink(items)
    items = [it for it in items if not isinstance(it, Region) or it.ops]
    if live is not None:
        _sink_to_consumers(items, live)
        items = [it for it in items if not isinstance(it, Region) or it.ops]
    return items


def _sink(items) -> None:
    """Dissolve regions whose every op can move into a later region (fewer kernels)."""
    for i in range(len(items) - 1, -1, -1):
        reg = items[i]
        if not isinstance(reg, Region) or not reg.ops:
            continue
        moves = []
        ok = True
        for k in range(len(reg.ops) - 1, -1, -1):
            op = reg.ops[k]
            if any(_conflict(op, o) is not None for o in reg.ops[k + 1:]):
                ok = False  # a later op of its own region needs it first
                break
            dest = None
            for item in items[i + 1:]:
                if isinstance(item, Region):
                    if item.ops and _joinable(op, item) and all(m[1] is not item for m in moves):
                        dest = item
                    if _region_depends(op, item) or any(_conflict(op, m[0]) is not None
                                                        for m in moves if m[1] is item):
                        break
                elif _depends_on_barrier(op, item):
                    break
            if dest is None:
                ok = False
                break
            moves.append((op, dest))
        if ok:
            for op, dest in reversed(moves):  # program order: the op precedes everything already in dest
                dest.ops.insert(0, op)
            reg.ops = []


def _sink_to_consumers(items, live) -> None:
    """Move an op whose result only one later region reads into that region (last ops first, so whole chains
    follow), when nothing in between depends on it: its result then stays in registers (the backward of GELU is
    computed where the incoming gradient is, not stored from the forward)."""
    where = {}
    for n, it in enumerate(items):
        if isinstance(it, Region):
            for op in it.ops:
                where[id(op)] = n

    def readers(op):
        sid = id(op.out._storage)
        found = set()
        for n, it in enumerate(items):
            if isinstance(it, Barrier):
                if sid in it.storages:
                    found.add(("b", n))
            else:
                for o in it.ops:
                    if o is not op and sid in _reads(o):
                        found.add(("r", n))
        return found

    for n in range(len(items) - 1, -1, -1):
        reg = items[n]
        if not isinstance(reg, Region):
            continue
        for k in range(len(reg.ops) - 1, -1, -1):
            op = reg.ops[k]
            if op.kind in _ALONE or op.kind == "row" or id(op.out._storage) in live:
                continue
            rs = readers(op)
            if len(rs) != 1:
                continue
            (kind, m), = rs
            if kind != "r" or m <= n:
                continue
            if any(_conflict(op, o) is not None for o in reg.ops[k + 1:]):
                continue
            dest = items[m]
            ok = _joinable(op, dest)
            for item in items[n + 1:m]:
                if not ok:
                    break
                if isinstance(item, Region):
                    ok = not _region_depends(op, item)
                else:
                    ok = not _depends_on_barrier(op, item)
            if not ok:
                continue
            del reg.ops[k]
            dest.ops.insert(0, op)


def live_arrays(calls, extra=()) -> set:
    """ids of the storages that something besides the recording references (the step's results, tensors the
    user or modules keep, saved tensors of a graph kept for later): their values must be stored."""
    counts: dict = {}
    arrays: dict = {}

    def visit(obj):
        if isinstance(obj, Array):
            counts[id(obj)] = counts.get(id(obj), 0) + 1
            arrays[id(obj)] = obj
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                visit(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                visit(x)

    for c in calls:
        visit(c.args)
        visit(c.kwargs)
        visit(c.refresh)
    live = set()
    per_storage: dict = {}
    for a in arrays.values():
        per_storage.setdefault(id(a._storage), []).append(a)
    for a in extra:
        live.add(id(a._storage))
    for sid, arrs in per_storage.items():
        st = arrs[0]._storage
        # references to the storage: each recorded Array, ``arrs``' entry is not one; getrefcount's argument, st
        if sys.getrefcount(st) - 2 - len(arrs) > 0:
            live.add(sid)
            continue
        for a in arrs:
            # a: the recording's references, arrays dict, arrs list, the loop variable, getrefcount's argument
            if sys.getrefcount(a) - counts[id(a)] - 4 > 0:
                live.add(sid)
                break
    return live
