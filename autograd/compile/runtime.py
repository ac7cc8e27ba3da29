"""The compiled step: guards, the warm-up and recording runs, and the replays of a plan (``schedule.partition``)
with generated kernels on cuda and the NumPy kernels on cpu."""

from __future__ import annotations

import contextlib
import logging

import numpy as np

from tkernels import graphs as _graphs
from tkernels.array import Array
from tkernels.cuda import device_errors as _device_errors

from ..grad_mode import is_grad_enabled
from ..tensor import Tensor
from . import codegen
from .capture import Recorder, record
from .copies import expand_concat, forward_copies
from .epilogue import fold_linear_epilogues
from .rows import expand_rows
from .schedule import Barrier, Region, _leaves, live_arrays, partition
from .splits import fuse_cross_entropy, split_calls

__all__ = ["CompiledFunction", "Plan", "log"]

log = logging.getLogger("autograd.compile")


def _flat(obj, out):
    return _leaves(obj, Tensor, out)


def _guard(args, kwargs):
    """What a compiled plan depends on besides array values: tensors' shapes, dtypes, devices and requires_grad,
    other arguments by value, the grad mode."""
    def key(a):
        if isinstance(a, Tensor):
            return ("T", tuple(a.shape), str(a.dtype), str(a.device), a.requires_grad)
        if isinstance(a, (list, tuple)):
            return (type(a).__name__, *(key(x) for x in a))
        if isinstance(a, dict):
            return ("dict", *((k, key(v)) for k, v in sorted(a.items())))
        try:
            hash(a)
        except TypeError:
            return ("id", id(a))
        return ("v", type(a).__name__, a)
    return key(tuple(args)), key(kwargs), is_grad_enabled()


def _clone_inputs(obj):
    if isinstance(obj, Tensor):
        t = obj.detach().clone()
        return t.requires_grad_(obj.requires_grad) if obj.requires_grad and obj.is_leaf else t
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone_inputs(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _clone_inputs(v) for k, v in obj.items()}
    return obj


class Plan:
    """Barriers (recorded calls replayed as they are) and regions (one generated kernel each on cuda; their
    NumPy calls in order on cpu)."""

    def __init__(self, rec: Recorder, result):
        self._build(rec.calls, [t._data for t in _flat(result, [])], rec.calls)

    @classmethod
    def from_calls(cls, calls, keep, all_calls):
        """The plan of ``calls`` (a part of the recording ``all_calls``) storing what ``keep`` holds."""
        self = cls.__new__(cls)
        self._build(calls, keep, all_calls)
        return self

    def _build(self, calls, keep, all_calls):
        live = live_arrays(all_calls, keep)
        self.cuda = any(isinstance(a, Array) and a._device.type == "cuda" for c in all_calls for a in c.args)
        if self.cuda:
            calls = split_calls(expand_rows(fuse_cross_entropy(calls)))
        calls = forward_copies(expand_concat(calls), live)
        self.items = partition(fold_linear_epilogues(calls, live), live)
        _decide_stores(self.items, live)
        self.steps = []
        self.kernels = []
        for it in self.items:
            if isinstance(it, Barrier):
                c = it.call
                self.steps.append((c.fn, c.args, c.kwargs, c.refresh))
            elif self.cuda:
                k = codegen.generate(it)
                codegen.load(k)
                self.kernels.append(k)
                self.steps.append((_launch_region, (k,), {}, None))
            else:
                self.steps.append((_run_region, ([(op.call.fn, op.call.args, op.call.kwargs) for op in it.ops],),
                                   {}, None))
        self.num_regions = sum(isinstance(it, Region) for it in self.items)
        self.num_fused_ops = sum(len(it.ops) for it in self.items if isinstance(it, Region))

    def run(self) -> None:
        for fn, args, kwargs, refresh in self.steps:
            r = fn(*args, **kwargs)
            if refresh is not None:
                _graphs._refresh(refresh, r)
        _device_errors.poll()


def _decide_stores(items, live) -> None:
    """An op's result is stored when it outlives the step or something outside its segment reads it."""
    from .codegen import segments

    readers: dict = {}  # storage -> segments (or barriers) reading it
    for it in items:
        if isinstance(it, Barrier):
            for s in it.storages:
                readers.setdefault(s, set()).add(id(it))
        else:
            for seg in segments(it):
                for op in seg:
                    for a in op.reads:
                        readers.setdefault(id(a._storage), set()).add(id(seg))
    for it in items:
        if isinstance(it, Region):
            for seg in segments(it):
                for op in seg:
                    sid = id(op.out._storage)
                    op.store = (op.kind in ("sum", "mm", "count", "mean") or sid in live
                                or bool(readers.get(sid, set()) - {id(seg)}))


def _launch_region(k) -> None:
    from tkernels.backends.triton import _launch

    # (interpreted: without NumPy's warnings for masked lanes, as the eager kernels' ``run``)
    with np.errstate(all="ignore") if _launch.INTERPRETED else contextlib.nullcontext():
        _launch.launch(k.fn, (k.programs,), *k.args, BLOCK=k.block, RB=codegen.RB, RR=codegen.RR, MB=codegen.MB,
                       MK=codegen.MK)


def _run_region(calls) -> None:
    for fn, args, kwargs in calls:
        fn(*args, **kwargs)


class _Entry:
    __slots__ = ("state", "plan", "inputs", "result", "reason", "last")

    def __init__(self):
        self.state, self.plan, self.inputs, self.result, self.reason = "warm", None, None, None, None
        self.last = None  # (array, version) of each input tensor last copied in


class CompiledFunction:
    """``autograd.compile(fn)``: see the package docstring."""

    def __init__(self, fn, mode="default"):
        self._fn = fn
        self.mode = mode
        self._entries: dict = {}
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __repr__(self):
        return f"<compiled {self.__name__} ({len(self._entries)} guard(s))>"

    def __call__(self, *args, **kwargs):
        key = _guard(args, kwargs)
        e = self._entries.get(key)
        if e is None:
            if self._entries:
                log.info("autograd.compile: %s: new shapes, dtypes, devices or arguments %s: re-tracing",
                         self.__name__, key)
            e = self._entries[key] = _Entry()
            return self._fn(*args, **kwargs)  # warm-up: lazily created state (optimizer moments) is made once
        if e.state == "eager":
            return self._fn(*args, **kwargs)
        if e.state == "warm":
            return self._record(e, args, kwargs)
        seen = []
        for dst, src, last in zip(e.inputs, _flat((args, kwargs), []), e.last or ()):
            ver = (src._data, int(src._version))
            # the same tensor, unchanged since the last call, is already there
            if last is None or ver[0] is not last[0] or ver[1] != last[1]:
                _copy(dst._data, src._data)
            seen.append(ver)
        e.last = seen
        e.plan.run()
        return _copy_out(e.result)

    def _record(self, e, args, kwargs):
        static_args, static_kwargs = _clone_inputs(args), _clone_inputs(kwargs)
        rec = Recorder()
        try:
            with record(rec):
                result = self._fn(*static_args, **static_kwargs)
        except Exception:
            e.state, e.reason = "eager", "the recording run raised"
            raise
        if rec.reasons:
            e.state, e.reason = "eager", rec.reasons[0]
            log.warning("autograd.compile: %s runs eagerly: %s", self.__name__, rec.reasons[0])
            return result
        try:
            e.plan = Plan(rec, result)
        except Exception as exc:  # noqa: BLE001 - a region the generator cannot handle: the step stays eager
            e.state, e.reason = "eager", f"code generation failed: {type(exc).__name__}: {exc}"
            log.warning("autograd.compile: %s runs eagerly: %s", self.__name__, e.reason)
            return result
        e.inputs = _flat((static_args, static_kwargs), [])
        e.last = [None] * len(e.inputs)
        e.result = result
        e.state = "compiled"
        log.info("autograd.compile: %s: %d calls -> %d regions (%d fused ops) and %d other calls", self.__name__,
                 len(rec.calls), e.plan.num_regions, e.plan.num_fused_ops, len(e.plan.items) - e.plan.num_regions)
        return _copy_out(result)

    def plans(self):
        """The plans compiled so far (one per guard)."""
        return [e.plan for e in self._entries.values() if e.plan is not None]

    def fallback_reasons(self):
        return [e.reason for e in self._entries.values() if e.reason]


def _copy(dst: Array, src: Array) -> None:
    from tkernels.dispatch import lookup

    lookup("copy_", dst._device)(dst, src)


def _copy_out(obj):
    """Results are fresh tensors (the plan rewrites its own at every replay)."""
    if isinstance(obj, Tensor):
        return obj.detach().clone()
    if isinstance(obj, tuple):
        return tuple(_copy_out(x) for x in obj)
    if isinstance(obj, list):
        return [_copy_out(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _copy_out(v) for k, v in obj.items()}
    return obj
