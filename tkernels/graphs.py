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
  that way, so learning-rate schedulers and step counts keep working; a ``capturable=True`` Adam instead
  records its step as kernels, so on a GPU it joins the CUDA graph); what runs under ``unrecorded()`` happens at
  capture only;
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

Real CUDA graphs. On a GPU (cuda not interpreted) the first replay turns the recorded calls into CUDA graphs:
the calls are cut into *segments* of consecutive kernel calls on one cuda device; each segment is run once under
stream capture (``cuStreamBeginCapture`` ... ``cuStreamEndCapture``, relaxed mode) on a stream private to the
graph, instantiated (``cuGraphInstantiate``), and launched; every later replay launches each segment with one
``cuGraphLaunch`` on the current stream, so the Triton launcher's Python runs once per segment instead of once
per kernel. What cuts a segment, and runs eagerly between the launches as on any device: host calls (an
optimizer's step), random kernels (their Philox seed and offset are host arguments that must advance at each
replay), calls on the cpu or on another device. A segment whose capture the driver refuses (a kernel wrapper
that synchronizes, for instance) runs eagerly from then on, with a ``RuntimeWarning`` naming the reason.
Memory: the blocks the captured kernels use are allocated on the graph's private stream, so the caching
allocator hands them to no other request, and ``CachingAllocator.hold_stream`` keeps them from being released to
the driver, until ``reset()`` (or the graph's collection) destroys the executable graphs and lets them go: PyTorch's
graph memory pools. Interpreted cuda replays the recorded calls as before (there is no driver to capture).
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from . import _capture
from .array import Array
from .cuda import device_errors as _device_errors
from .device import Device
from .validation import OpTypeError

__all__ = ["Graph", "graph", "is_capturing", "host_call", "unrecorded"]

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
    the ``graph(g)`` context manager) record; ``replay()`` repeats; ``reset()`` forgets and frees.
    ``cuda_graphs=False`` replays the recorded calls one by one even on a GPU (to measure what CUDA graphs save,
    or to debug a kernel of the step)."""

    def __init__(self, *, cuda_graphs: bool = True):
        self.cuda_graphs = bool(cuda_graphs)
        self._calls: list = []  # (fn, args, kwargs, result to refresh or None)
        self._wrappers: dict = {}
        self._devices: list = []  # devices whose implementation cache is swapped while capturing
        self._thread = None
        self._paused = 0
        self._captured = False
        self._host_indices: dict = {}  # positions of host calls in _calls -> whether they may launch kernels
        self._plan = None  # on a GPU: the replay plan of CUDA-graph segments and eager calls (built at first replay)

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
        self._release_plan()
        self._calls = []
        self._host_indices = {}
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

    def _host_call(self, fn, args, replay=None, kernels=True):
        self._paused += 1
        try:
            r = fn(*args)
        finally:
            self._paused -= 1
        self._host_indices[len(self._calls)] = kernels
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
        if self._plan is None:
            self._plan = _cuda_plan(self._calls, self._host_indices) if self.cuda_graphs else []
        if self._plan:
            for item in self._plan:
                if item.__class__ is _Segment:
                    item.launch()
                else:
                    fn, args, kwargs, refresh = item
                    r = fn(*args, **kwargs)
                    if refresh is not None:
                        _refresh(refresh, r)
        else:
            for fn, args, kwargs, refresh in self._calls:
                r = fn(*args, **kwargs)
                if refresh is not None:
                    _refresh(refresh, r)
        _device_errors.poll()  # an error a kernel of the replay recorded raises here (without a sync)

    def reset(self) -> None:
        """Forget the capture and release its arrays."""
        if _capture.GRAPH is self:
            raise RuntimeError("Graph.reset: not allowed while this graph is being captured")
        self._release_plan()
        self._calls = []
        self._captured = False

    def _release_plan(self) -> None:
        plan, self._plan = self._plan, None
        for item in plan or ():
            if item.__class__ is _Segment:
                item.destroy()

    def __del__(self):
        try:
            self._release_plan()
        except Exception:  # noqa: BLE001 - interpreter shutdown: a finalizer must not raise
            pass

    @property
    def num_calls(self) -> int:
        """How many calls a replay makes (kernels and host calls)."""
        return len(self._calls)

    @property
    def cuda_graph_segments(self) -> list[dict]:
        """On a GPU, after the first replay: per CUDA-graph segment its device, its number of recorded calls and
        whether it is captured (False: it runs eagerly, see the module docstring). Empty elsewhere."""
        return [{"device": f"cuda:{item.index}", "calls": len(item.calls), "captured": item.exec is not None}
                for item in self._plan or () if item.__class__ is _Segment]


class _Segment:
    """Consecutive recorded kernel calls on one real cuda device, replayed as one CUDA graph."""

    __slots__ = ("index", "calls", "after", "exec", "stream", "_launched_on", "_tried")

    def __init__(self, index: int, calls: list):
        self.index = index
        self.calls = calls
        self.after = []  # host calls without kernels recorded among the calls: run once the segment is launched
        self.exec = None
        self.stream = None  # the graph's private capture stream (shared by its segments on this device)
        self._launched_on = None
        self._tried = False

    def launch(self) -> None:
        from .cuda import current_stream
        from .cuda.runtime import get_runtime

        if not self._tried:
            self._tried = True
            self._capture()
        if self.exec is None:  # the driver refused the capture: eager calls, as in interpreted mode
            for fn, args, kwargs, refresh in self.calls:
                r = fn(*args, **kwargs)
                if refresh is not None:
                    _refresh(refresh, r)
        else:
            handle = current_stream(self.index).handle
            get_runtime().graph_launch(self.index, self.exec, handle)
            self._launched_on = handle
        for fn, args, kwargs, _ in self.after:
            fn(*args, **kwargs)

    def _capture(self) -> None:
        from . import cuda as _cuda
        from .cuda.runtime import CudaError, get_runtime

        rt = get_runtime()
        s = self.stream
        graph = None
        with _cuda.stream(s.stream):
            rt.stream_begin_capture(self.index, s.handle)
            try:
                for fn, args, kwargs, refresh in self.calls:
                    r = fn(*args, **kwargs)
                    if refresh is not None:
                        _refresh(refresh, r)
            except CudaError as e:
                reason = str(e)
            except BaseException:
                with contextlib.suppress(CudaError):
                    rt.graph_destroy(self.index, rt.stream_end_capture(self.index, s.handle))
                raise
            else:
                reason = None
            try:
                graph = rt.stream_end_capture(self.index, s.handle)
            except CudaError as e:
                reason = reason or str(e)
        if reason is not None:
            if graph is not None:
                rt.graph_destroy(self.index, graph)
            warnings.warn(f"Graph.replay: the driver refused to capture a segment of {len(self.calls)} recorded calls "
                          f"on cuda:{self.index} into a CUDA graph ({reason}); it replays eagerly, call by call",
                          RuntimeWarning, stacklevel=4)
            return
        try:
            self.exec = rt.graph_instantiate(self.index, graph)
        finally:
            rt.graph_destroy(self.index, graph)

    def destroy(self) -> None:
        from .cuda.runtime import get_runtime

        rt = get_runtime()
        if self.exec is not None:
            if self._launched_on is not None:  # the last launch must finish before its memory can be reused
                rt.stream_synchronize(self.index, self._launched_on)
            rt.graph_exec_destroy(self.index, self.exec)
            self.exec = None


class _PrivateStream:
    """A graph's capture stream on one device; its cached blocks are held by the allocator while it lives."""

    __slots__ = ("stream", "index", "handle")

    def __init__(self, index: int):
        from . import cuda as _cuda

        self.index = index
        self.stream = _cuda.Stream(index)
        self.handle = self.stream.handle
        _cuda.caching_allocator(index).hold_stream(self.handle)

    def __del__(self):
        try:
            from . import cuda as _cuda

            _cuda.caching_allocator(self.index).release_stream(self.handle)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _call_device(args, kwargs):
    """The one cuda device index of a call's Array arguments (one level into lists/tuples), or None when it has a
    cpu Array, Arrays on several devices, a random Generator, or no Array at all."""
    from .random import Generator

    index = None
    for a in (*args, *kwargs.values()):
        items = a if a.__class__ is list or a.__class__ is tuple else (a,)
        for b in items:
            if isinstance(b, Array):
                dev = b._device
                if dev.type != "cuda" or (index is not None and dev.index != index):
                    return None
                index = dev.index
            elif isinstance(b, Generator):
                return None
    return index


def _cuda_plan(calls: list, host_indices: dict) -> list:
    """The replay plan on a GPU: ``_Segment``s of consecutive capturable calls and the other calls as they are;
    an empty list when cuda is interpreted or unavailable, or nothing can be captured (replay call by call)."""
    from . import cuda as _cuda

    if not calls or _cuda.is_interpreted() or not _cuda.is_available():
        return []
    plan, streams = [], {}
    for i, call in enumerate(calls):
        fn, args, kwargs, _ = call
        last = plan[-1] if plan else None
        if host_indices.get(i, True) is False and last.__class__ is _Segment:
            last.after.append(call)  # no kernels: it need not cut the segment
            continue
        index = None if i in host_indices else _call_device(args, kwargs)
        if index is None:
            plan.append(call)
            continue
        if last.__class__ is _Segment and last.index == index:
            last.calls.append(call)
        else:
            seg = _Segment(index, [call])
            if index not in streams:
                streams[index] = _PrivateStream(index)
            seg.stream = streams[index]
            plan.append(seg)
    if not any(item.__class__ is _Segment for item in plan):
        return []
    return plan


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
        raise OpTypeError(f"graph: expected a tkernels.graphs.Graph, got {type(g).__name__}")
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


@contextlib.contextmanager
def unrecorded():
    """Inside a capture, run the body once, now, without recording its calls (lazily made state, such as an
    optimizer's first ``exp_avg = zeros_like(p)``, that a replay must not redo); outside a capture, just run it."""
    g = _capture.GRAPH
    if g is None or not g._records_here():
        yield
        return
    g._paused += 1
    try:
        yield
    finally:
        g._paused -= 1


def host_call(fn, *args, replay=None, kernels=True):
    """Call ``fn(*args)`` now; while capturing, also record it so that every replay calls it again at this
    point (or calls ``replay()`` instead, when given). Its own ops run eagerly each time (they are not
    recorded), and it may read array values. ``kernels=False`` promises that it launches no kernel and reads no
    array value (it only sets Python state, such as which Tensor ``.grad`` holds): on a GPU it then does not cut
    the CUDA graph around it (it runs when that segment has been launched)."""
    g = _capture.GRAPH
    if g is None or not g._records_here():
        return fn(*args)
    return g._host_call(fn, args, replay, kernels)
