"""Graphs: record the backend calls that a piece of code makes once, then replay them without the Python
above the backends (op entries, autograd, modules, optimizers' bookkeeping).

>>> g = tk.graphs.Graph()
>>> with tk.graphs.graph(g):          # runs the code once, recording every kernel call it makes
...     y = tk.exp(x) * 2
>>> x[...] = new_values; g.replay()    # y now holds exp(new_values) * 2

The names and the use follow PyTorch's CUDA graphs (``torch.cuda.CUDAGraph``, ``torch.cuda.graph``): the
captured code works on static arrays; new inputs are copied into the arrays it read, and results are read
from the arrays it produced, which every replay rewrites in place. It works on every device: on ``cpu`` a
replay calls the NumPy kernels; on ``cuda`` it launches the Triton kernels (on the current stream).

What a replay repeats and what it does not:
- every backend call made while capturing, in order, with the same arguments: the kernels read the current
  values of their input arrays, and draw new random numbers from their generators (dropout differs per
  replay, as in PyTorch, on cpu; ops whose random state lives on the host between forward and backward
  refuse to be captured: dropout on cuda, attention with dropout, ``checkpoint`` preserving the RNG state);
- an allocation made while capturing (the op ``empty``) is not repeated: its array is the graph's static
  buffer, kept alive by the graph; a kernel that returns a fresh array has it copied into the array it
  returned while capturing, so later kernels keep reading the same buffer;
- Python code is not repeated, except functions handed to ``host_call`` (nn's optimizers run their step
  that way, so learning-rate schedulers and step counts keep working);
- unlike CUDA's stream capture, capturing runs the code once for real (a captured training step is a step).

Gradients: a captured backward that found ``.grad`` None (``zero_grad()`` before or inside the capture) writes
fresh gradients at each replay; one that found gradients adds to them, and a ``zero_grad()`` between replays
is then honoured. Either way ``.grad`` points at the captured gradient after a replay. Python-side calls
inside the capture other than optimizer steps (a scheduler's ``step``, ``p.grad = None``) happen once.

Because Python is not repeated, the captured code must not depend on array values read on the host: while
capturing, ``Array.numpy()``/``item()``/``tolist()``/``bool()``... raise (the value would be frozen into the
graph), as does a kernel that returns a host value. Shapes, dtypes, devices and Python scalars are frozen at
capture: the same code with other shapes needs another graph. Capture is per thread: other threads' ops run
normally and are not recorded. Graphs do not nest.
"""

from __future__ import annotations

import contextlib
import threading

from . import _capture
from .array import Array
from .cuda import device_errors as _device_errors
from .device import Device

__all__ = ["Graph", "graph", "is_capturing", "host_call"]

_NOT_RECORDED = frozenset({"empty"})  # pure allocations: their arrays are the graph's static buffers


class _RecordingImpls:
    """Stands in for a device's op -> implementation cache while a graph captures: ``get`` hands out the
    implementation wrapped so that calls from the capturing thread are recorded."""

    __slots__ = ("base", "graph")

    def __init__(self, base: dict, graph: Graph):
        self.base = base
        self.graph = graph

    def get(self, op, default=None):
        fn = self.base.get(op)
        if fn is None:
            return default
        return self.graph._wrapper(op, fn)

    def __getitem__(self, op):
        return self.graph._wrapper(op, self.base[op])

    def __setitem__(self, op, fn):
        self.base[op] = fn

    def __contains__(self, op):
        return op in self.base

    def pop(self, op, *default):
        return self.base.pop(op, *default)


class Graph:
    """A recorded sequence of backend calls (see the module docstring). ``capture_begin``/``capture_end`` (or
    the ``graph(g)`` context manager) record; ``replay()`` repeats; ``reset()`` forgets and frees."""

    def __init__(self):
        self._calls: list = []  # (fn, args, kwargs, result to refresh or None)
        self._wrappers: dict = {}
        self._devices: list = []  # devices whose implementation cache is swapped while capturing
        self._thread = None
        self._paused = 0
        self._captured = False

    def __repr__(self):
        state = "capturing" if _capture.GRAPH is self else ("captured" if self._captured else "empty")
        return f"Graph({state}, {len(self._calls)} calls)"

    # ------------------------------------------------------------------------------------------ capture
    def capture_begin(self) -> None:
        if _capture.GRAPH is not None:
            raise RuntimeError("Graph.capture_begin: another graph is already being captured (graphs do not nest); "
                               "hint: end that capture first")
        if self._captured:
            raise RuntimeError("Graph.capture_begin: this graph already holds a capture; hint: call reset() first, "
                               "or make a new Graph")
        self._calls = []
        self._thread = threading.get_ident()
        self._paused = 0
        _capture.GRAPH = self
        for dev in list(Device._cache.values()):
            self._attach(dev)

    def capture_end(self) -> None:
        if _capture.GRAPH is not self:
            raise RuntimeError("Graph.capture_end: this graph is not being captured; hint: call capture_begin() "
                               "first")
        self._detach()
        self._captured = True

    def _abort(self) -> None:
        """End a capture that failed: nothing is kept (replay() then refuses)."""
        if _capture.GRAPH is self:
            self._detach()
        self._calls = []
        self._captured = False

    def _detach(self) -> None:
        for dev in self._devices:
            impls = dev._impls
            if impls.__class__ is _RecordingImpls:
                object.__setattr__(dev, "_impls", impls.base)
        self._devices = []
        self._wrappers = {}
        _capture.GRAPH = None
        self._thread = None

    def _attach(self, dev) -> None:
        impls = dev._impls
        if impls.__class__ is not _RecordingImpls and _capture.GRAPH is self:
            object.__setattr__(dev, "_impls", _RecordingImpls(impls, self))
            self._devices.append(dev)

    def _records_here(self) -> bool:
        """True on the capturing thread outside kernels and host calls (where reads would be frozen)."""
        return self._paused == 0 and threading.get_ident() == self._thread

    def _wrapper(self, op: str, fn):
        w = self._wrappers.get((op, fn))
        if w is None:
            w = self._wrappers[(op, fn)] = fn if op in _NOT_RECORDED else self._make_wrapper(op, fn)
        return w

    def _make_wrapper(self, op: str, fn):
        graph = self

        def recorded(*args, **kwargs):
            if _capture.GRAPH is not graph or not graph._records_here():
                return fn(*args, **kwargs)  # another thread, or a call made by a kernel or host call
            graph._paused += 1  # what the kernel does inside (host reads, nested ops) is part of the kernel
            try:
                r = fn(*args, **kwargs)
            finally:
                graph._paused -= 1
            graph._calls.append((fn, args, kwargs, _result_to_refresh(op, r, args, kwargs)))
            return r

        recorded.__wrapped__ = fn
        return recorded

    def _references(self, obj) -> int:
        """How many references to ``obj`` the recorded calls hold (in their arguments, one level into lists and
        tuples, and results): lets reference-count checks above (autograd's gradient stealing) discount them."""
        n = 0
        for _, args, kwargs, refresh in self._calls:
            for a in (*args, *kwargs.values()):
                if a is obj:
                    n += 1
                elif a.__class__ is list or a.__class__ is tuple:
                    for b in a:
                        if b is obj:
                            n += 1
            if refresh is obj:
                n += 1
            elif refresh.__class__ is tuple:
                n += sum(1 for b in refresh if b is obj)
        return n

    def _host_call(self, fn, args, replay=None):
        self._paused += 1
        try:
            r = fn(*args)
        finally:
            self._paused -= 1
        self._calls.append((fn, args, {}, None) if replay is None else (replay, (), {}, None))
        return r

    # ------------------------------------------------------------------------------------------ replay
    def replay(self) -> None:
        """Repeat every recorded call in order."""
        if _capture.GRAPH is not None:
            raise RuntimeError("Graph.replay: not allowed while a graph is being captured")
        if not self._captured:
            raise RuntimeError("Graph.replay: this graph holds no capture; hint: capture it first with "
                               "`with tkernels.graphs.graph(g): ...`")
        for fn, args, kwargs, refresh in self._calls:
            r = fn(*args, **kwargs)
            if refresh is not None:
                _refresh(refresh, r)
        _device_errors.poll()  # an error a kernel of the replay recorded raises here (without a sync)

    def reset(self) -> None:
        """Forget the capture and release its arrays."""
        if _capture.GRAPH is self:
            raise RuntimeError("Graph.reset: not allowed while this graph is being captured")
        self._calls = []
        self._captured = False

    @property
    def num_calls(self) -> int:
        """How many calls a replay makes (kernels and host calls)."""
        return len(self._calls)


def _result_to_refresh(op: str, r, args, kwargs):
    """What a replay must copy the new result of ``op`` into: None when it returns None or one of its
    arguments, the Array (or tuple of Arrays) it returned otherwise; a host value cannot be replayed."""
    if r is None:
        return None
    if r.__class__ is Array or isinstance(r, Array):
        if any(a is r for a in args) or any(a is r for a in kwargs.values()):
            return None
        return r
    if isinstance(r, (tuple, list)) and all(x is None or isinstance(x, Array) for x in r):
        return tuple(r)
    raise RuntimeError(f"graph capture: the {op} kernel returned a host value ({type(r).__name__}); a replay "
                       f"cannot feed it to the Python that used it, so this op cannot be captured; hint: run it "
                       f"outside the capture")


def _refresh(old, new) -> None:
    if isinstance(old, tuple):
        for o, n in zip(old, new):
            if o is not None and n is not o:
                _copy(o, n)
    elif new is not old:
        _copy(old, new)


def _copy(dst: Array, src: Array) -> None:
    from .dispatch import lookup

    if src._shape != dst._shape or src._dtype is not dst._dtype:
        raise RuntimeError(f"Graph.replay: a kernel returned {src._shape} {src._dtype} where the capture had "
                           f"{dst._shape} {dst._dtype}; a captured op must keep its shapes")
    lookup("copy_", dst._device)(dst, src)


@contextlib.contextmanager
def graph(g: Graph):
    """Capture the body into ``g`` (like ``torch.cuda.graph``); a failure in the body leaves ``g`` empty."""
    if not isinstance(g, Graph):
        raise TypeError(f"graph: expected a tkernels.graphs.Graph, got {type(g).__name__}")
    g.capture_begin()
    try:
        yield g
    except BaseException:
        g._abort()
        raise
    g.capture_end()


def is_capturing() -> bool:
    """True while the calling thread captures a graph (like ``torch.cuda.is_current_stream_capturing``)."""
    g = _capture.GRAPH
    return g is not None and g._thread == threading.get_ident()


def host_call(fn, *args, replay=None):
    """Call ``fn(*args)`` now; while capturing, also record it so that every replay calls it again at this
    point (or calls ``replay()`` instead, when given). Its own ops run eagerly each time (they are not
    recorded), and it may read array values."""
    g = _capture.GRAPH
    if g is None or not g._records_here():
        return fn(*args)
    return g._host_call(fn, args, replay)
