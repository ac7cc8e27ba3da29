"""Recording a step for ``autograd.compile``: every backend call (kernel or host call) that one run of the step
makes, with its op name, through ``tkernels.graphs`` (whose capture keeps every array it saw alive: the
preallocated buffers of the compiled step).

Unlike a plain graph capture, what cannot be replayed does not stop the step: a host read of array values, a
kernel returning a host value, or an op that refuses capture is noted as the reason to run that step eagerly,
and the run goes on, so the step the capture ran is an ordinary step with ordinary results."""

from __future__ import annotations

import contextlib

from tkernels import _capture
from tkernels import graphs as _graphs

__all__ = ["Call", "Recorder", "record"]


class Call:
    """One recorded backend call: ``op`` (None for a host call), the implementation, its arguments, and the
    array(s) a replay refreshes from the result (see ``tkernels.graphs``)."""

    __slots__ = ("op", "fn", "args", "kwargs", "refresh", "index")

    def __init__(self, op, fn, args, kwargs, refresh, index):
        self.op, self.fn, self.args, self.kwargs, self.refresh, self.index = op, fn, args, kwargs, refresh, index

    def __repr__(self):
        return f"Call({self.op or 'host:' + getattr(self.fn, '__name__', '?')}, #{self.index})"


# ops whose result's shape depends on the values of their inputs (an index by a boolean mask as well)
DATA_DEPENDENT = frozenset({"nonzero", "argwhere", "masked_select", "repeat", "unique", "bincount"})


def _data_dependent(op, args, kwargs) -> bool:
    if op in DATA_DEPENDENT:
        return True
    if op.startswith("getitem"):
        from tkernels import dtypes as _dt

        def has_mask(a):
            if getattr(a, "_dtype", None) is _dt.bool:
                return True
            return isinstance(a, (list, tuple)) and any(has_mask(x) for x in a)
        return has_mask(list(args[1:])) or has_mask(list(kwargs.values()))
    return False


class Recorder(_graphs.Graph):
    """A ``tkernels.graphs.Graph`` that keeps op names and turns "cannot be captured" into a reason."""

    def __init__(self):
        super().__init__()
        self.calls: list[Call] = []
        self.reasons: list[str] = []

    def _make_wrapper(self, op: str, fn):
        graph = self

        def recorded(*args, **kwargs):
            if _capture.GRAPH is not graph or not graph._records_here():
                return fn(*args, **kwargs)
            graph._paused += 1
            try:
                r = fn(*args, **kwargs)
            finally:
                graph._paused -= 1
            try:
                refresh = _graphs._result_to_refresh(op, r, args, kwargs)
            except RuntimeError as e:
                graph.reasons.append(str(e))
                refresh = None
            if refresh is not None and _data_dependent(op, args, kwargs):
                graph.reasons.append(f"{op}: the shape of its result depends on array values (data-dependent "
                                     f"shape); a replay would keep this call's shape")
            graph.calls.append(Call(op, fn, args, kwargs, refresh, len(graph.calls)))
            graph._calls.append((fn, args, kwargs, refresh))
            return r

        recorded.__wrapped__ = fn
        return recorded

    def _host_call(self, fn, args, replay=None, kernels=True):
        self._host_indices[len(self._calls)] = kernels  # as Graph._host_call: a host call, not a kernel
        self._paused += 1
        try:
            r = fn(*args)
        finally:
            self._paused -= 1
        if replay is None:
            self.calls.append(Call(None, fn, args, {}, None, len(self.calls)))
        else:
            self.calls.append(Call(None, replay, (), {}, None, len(self.calls)))
        c = self.calls[-1]
        self._calls.append((c.fn, c.args, {}, None))
        return r


@contextlib.contextmanager
def record(rec: Recorder):
    """Capture into ``rec``; host reads and refused ops are noted in ``rec.reasons`` instead of raising."""
    host_read, refuse = _capture.check_host_read, _capture.refuse

    def note_read(array, op):
        g = _capture.GRAPH
        if g is rec and rec._records_here():
            from tkernels.validation import describe

            rec.reasons.append(f"{op}: the step reads array values on the host ({describe(array)}); a compiled "
                               f"step cannot replay Python that depends on them")
        elif g is not None:
            host_read(array, op)

    def note_refuse(op, why, hint):
        g = _capture.GRAPH
        if g is rec and rec._records_here():
            rec.reasons.append(f"{op}: {why}")
        elif g is not None:
            refuse(op, why, hint)

    _capture.check_host_read, _capture.refuse = note_read, note_refuse
    try:
        with _graphs.graph(rec):
            yield rec
    finally:
        _capture.check_host_read, _capture.refuse = host_read, refuse
