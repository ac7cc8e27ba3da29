"""The recorded graph: ``Node`` (a backward function with edges to the nodes of its inputs), ``AccumulateGrad``
(where a leaf's gradient lands), saved tensors with version checks, and the saved-tensor memory ledger.

A node's ``next_functions[i]`` is ``(node, output_nr)`` for input ``i`` that needs a gradient, ``(None, 0)``
otherwise. ``apply(grads)`` maps the gradients of the node's outputs to the gradients of its inputs, written
with differentiable Tensor ops (so ``create_graph=True`` records a graph of the backward pass itself).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import traceback
import weakref

from tkernels import _capture
from tkernels import graphs as _graphs
from tkernels.array import Array as _Array
from tkernels.copying import copy as _copy
from tkernels.copying import copy_into as _copy_into

from .grad_mode import STATE

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "saved_tensors_report", "SavedTensorsReport"]

Tensor = None  # set by autograd.tensor (the class), to keep imports going one way
_make = None  # Tensor._make, set with it

_SEQ = itertools.count()
_refcount = sys.getrefcount
_weakrefs = weakref.getweakrefcount
_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
          "a second time or if you need to access saved tensors after calling backward.")
_LIB_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d) + os.sep
                  for d in ("autograd", "nn", "tkernels"))


_IS_LIB: dict = {}  # code object -> defined in autograd/nn/tkernels (one startswith per code object, ever)


def _creation_site():
    """(code, lineno) of the nearest caller outside autograd/nn/tkernels (cheap: no strings are built unless
    a report asks for them; whether a frame is library code is cached per code object)."""
    f = sys._getframe(2)
    is_lib = _IS_LIB
    while f is not None:
        code = f.f_code
        lib = is_lib.get(code)
        if lib is None:
            lib = code.co_filename.startswith(_LIB_DIRS)
            if len(is_lib) > 50000:  # code made by exec in a loop: keep the cache bounded
                is_lib.clear()
            is_lib[code] = lib
        if not lib:
            return (code, f.f_lineno)
        f = f.f_back
    return None



def hook_result(hook, g, r):
    """What a tensor hook returned in place of the gradient ``g``: a tensor of its shape, dtype and device
    (PyTorch refuses any other, naming the hook)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(r, Tensor):
        raise TypeError(f"hook '{name}' returned {type(r).__name__}: a tensor hook must return a Tensor or None")
    if tuple(r.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {tuple(g.shape)}, got "
                           f"{tuple(r.shape)})")
    if r.dtype != g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.dtype} got {r.dtype})")
    if r.device != g.device:
        raise RuntimeError(f"hook '{name}' has changed the device of value (was {g.device} got {r.device})")
    return r


class SavedTensor:
    """A tensor saved for backward with the version it had when saved. Outputs of the node that saves them
    are kept without their ``grad_fn`` (no reference cycle) and re-attached when unpacked."""

    __slots__ = ("tensor", "array", "vc", "version", "output_nr")

    def __init__(self, t, is_output: bool, node=None):
        self.vc = t._version
        self.version = t._version.v
        if is_output:
            self.tensor = None
            self.array = t._data
            self.output_nr = t._output_nr
        else:
            if t._inference:
                raise RuntimeError("Inference tensors cannot be saved for backward. To work around you can make a "
                                   f"clone to get a normal tensor and use it in autograd (shape {list(t.shape)}).")
            self.tensor = t
            self.array = t._data
            self.output_nr = -1

    def unpack(self, node):
        if self.vc.v != self.version:
            t = self.tensor
            desc = f"[{self.array.dtype} {list(self.array.shape)}]"
            src = (f"output {self.output_nr} of {node.name()}" if t is None else
                   (f"output {t._output_nr} of {t._grad_fn.name()}" if t._grad_fn is not None else "a leaf tensor"))
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"{desc}, which is {src}, is at version {self.vc.v}; expected version {self.version} instead "
                f"(needed by {node.name()}). Hint: clone the tensor before modifying it in place, or enable "
                f"autograd.detect_anomaly() to find the operation that failed to compute its gradient.")
        if self.tensor is not None:
            return self.tensor
        out = Tensor._make(self.array, node, self.output_nr)
        out._version = self.vc
        return out


_NO_EDGE = (None, 0)


def _conj_backward(node, grads):
    """``conj(node.backward(conj(g)))`` (see Note [complex gradients] in Node)."""
    from .ops.complex_ops import conj

    outs = node.backward(*[None if g is None else conj(g) for g in grads])
    if not isinstance(outs, tuple | list):
        outs = (outs,)
    return tuple(o if o is None or o._data._dtype.kind != "c" else conj(o) for o in outs)


class Node:
    """One recorded operation. Subclasses implement ``backward(self, *grads)`` returning one gradient (or
    None) per input; the engine calls ``apply``."""

    _materialize = True  # missing output gradients are passed as zeros (False: as None)
    _n_outputs = 1
    # per-node state, as class defaults (assigned, never mutated in place, on the instance when it changes)
    _saved = None
    _released = False
    _out_meta = None
    _pre_hooks = None
    _post_hooks = None
    _retain = None
    _site = None
    _trace = None
    # where the node was created (for the saved-tensor ledger, which lists only nodes that save something):
    # found by save(), so nodes that save nothing (add, sum, reshape...) skip the frame walk; nodes that keep
    # their tensors another way (autograd.Function's ctx.save_for_backward) find it when created
    _site_eager = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "save_for_backward"):
            cls._site_eager = True

    def __init__(self, inputs):
        T = Tensor
        edges = []
        needs = []
        for t in inputs:
            if t.__class__ is T or isinstance(t, T):
                if t._requires_grad:
                    fn = t._grad_fn
                    if t._base is not None:
                        edges.append(t._edge())
                    elif fn is not None:  # the common cases of t._edge(), inlined: a result...
                        edges.append((fn, t._output_nr))
                    else:  # ... and a leaf whose AccumulateGrad (kept by weak reference) still lives
                        ref = t._acc
                        acc = ref() if ref is not None else None
                        edges.append((acc, 0) if acc is not None else t._edge())
                    needs.append(True)
                    continue
            edges.append(_NO_EDGE)
            needs.append(False)
        self.next_functions = tuple(edges)
        self.needs_input_grad = tuple(needs)
        self._seq = next(_SEQ)
        if self._site_eager:
            self._site = _creation_site()
        if STATE.anomaly:
            self._trace = traceback.format_stack()[:-2]

    # --------------------------------------------------------------------------------- recording
    def output(self, array, nr: int = 0):
        """The Tensor for output ``nr`` of this node (its grad_fn is this node)."""
        meta = self._out_meta
        if meta is None:
            meta = self._out_meta = {}
        meta[nr] = (array._shape, array._dtype, array._device)
        if nr >= self._n_outputs:
            self._n_outputs = nr + 1
        return _make(array, self, nr)

    def save(self, *tensors, outputs=()):
        """Keep ``tensors`` (inputs, or None) and ``outputs`` (results of this node) for backward."""
        saved = [None if t is None else SavedTensor(t, False) for t in tensors]
        for t in outputs:
            saved.append(SavedTensor(t, True))
        self._saved = saved
        if saved and self._site is None:
            self._site = _creation_site()

    @property
    def saved_tensors(self):
        if self._saved is None:
            if self._released:
                raise RuntimeError(_FREED)
            return ()
        return tuple([None if s is None else s.unpack(self) for s in self._saved])  # (a list: no generator)

    def release(self):
        if self._saved is not None:
            # a node that kept no tensor has nothing to free: a second backward through it runs (PyTorch)
            if any(t is not None for t in self._saved):
                self._released = True
            self._saved = None

    # ------------------------------------------------------------------------------------ public
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def backward(self, *grads):
        raise NotImplementedError(f"{self.name()}.backward")

    # Note [complex gradients]: PyTorch's convention is that the gradient of a real loss L with respect to
    # z = x + iy is dL/dx + i dL/dy, so a node of output w = f(z) maps the gradient g of w to g * conj(f'(z))
    # when f is holomorphic. Every backward formula here is written for real numbers as g times derivatives
    # (real-linear in g, analytic in the inputs), so for complex gradients the engine runs it as
    # conj(backward(conj(g))) = g * conj(f'(z)) -- which is also exact for the real-linear nodes (views, sums,
    # indexing, cat...). Nodes whose forward is not holomorphic (abs, angle, real, imag, conj, sgn, norms,
    # complex(), autograd.Function) set _holomorphic = False and write the conjugate Wirtinger formula themselves.
    _holomorphic = True

    def apply(self, grads):
        if self._holomorphic:
            for g in grads:
                if g is not None and g._data._dtype.kind == "c":
                    return _conj_backward(self, grads)
        return self.backward(*grads)

    def __call__(self, *grads):
        return self.apply(grads)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; a non-None result replaces
        grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; a non-None result replaces grad_outputs."""
        return self._add_pre_hook(None, fn)

    def _add_pre_hook(self, nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        entry = (nr, fn)
        self._pre_hooks.append(entry)
        return _RemovableHandle(self._pre_hooks, entry)

    @property
    def metadata(self) -> dict:
        if not hasattr(self, "_metadata"):
            self._metadata = {}
        return self._metadata

    def saved_bytes(self) -> int:
        """Bytes of the distinct storages this node holds for backward."""
        if not self._saved:
            return 0
        seen = {}
        for s in self._saved:
            if s is not None and s.array is not None:  # None: recomputed on demand (checkpoint)
                st = s.array._storage
                seen[id(st)] = st.nbytes
        return sum(seen.values())


class _RemovableHandle:
    def __init__(self, lst, item):
        self._lst = lst
        self._item = item

    def remove(self):
        try:
            self._lst.remove(self._item)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class AccumulateGrad(Node):
    """Where the gradient of a leaf tensor lands: its hooks run, then it is added to ``.grad``."""

    next_functions = ()
    needs_input_grad = ()
    _seq = sys.maxsize  # leaves last among ready nodes, like PyTorch

    def __init__(self, variable):
        a = variable._data
        self._out_meta = {0: (a._shape, a._dtype, a._device)}
        self.variable = variable

    def accumulate(self, grad, create_graph: bool, sole: bool = False):
        """Add ``grad`` to the leaf's ``.grad``. ``sole``: the engine's one local variable is the only reference
        to the ``grad`` Tensor (checked by the engine just before the call)."""
        var = self.variable
        hooks = var._hooks
        if hooks:
            sole = False  # a hook may keep the gradient (or return one it keeps)
            for hook in hooks:
                r = hook(grad)
                if r is not None:
                    grad = hook_result(hook, grad, r)
            r = None
            if grad is None:
                return
        # backward passes on several threads into one leaf: each read-modify-write of .grad is whole (PyTorch
        # holds a mutex in AccumulateGrad too); post-accumulate hooks run outside it
        with _ACCUMULATE_LOCK:
            self._accumulate(var, grad, create_graph, sole)
        for hook in var._post_acc_hooks or ():
            hook(var)

    @staticmethod
    def _accumulate(var, grad, create_graph: bool, sole: bool) -> None:
        old = var.grad
        if grad.__class__.is_sparse is True or (old is not None and old.__class__.is_sparse is True):
            var.grad = _sparse_accumulate(old, grad, create_graph)
            return
        if old is None:
            if create_graph:
                var.grad = grad
            else:
                # The first gradient becomes .grad. It is copied when it may be shared (a formula passing its
                # incoming gradient through, the user's gradient=, a tensor a hook keeps, a view, a cached
                # array), and taken as it is when nothing else can reach its memory, as PyTorch's
                # AccumulateGrad steals an unshared gradient: the Tensor has no other reference (``sole``),
                # and its Array, Storage and NumPy buffer (which owns its memory and is the Array's own view)
                # have exactly the references of this chain plus these locals, and no weak references.
                a = grad._data  # references: grad._data, a, the argument of getrefcount
                refs = 3 if _capture.GRAPH is None else 3 + _capture.GRAPH._references(a)  # a capture holds some
                if sole and grad._base is None and _refcount(a) == refs and a.__class__ is _Array:
                    st = a._storage  # a._storage, st, the argument
                    buf = st.data  # st.data, a._nd (the same object), buf, the argument
                    if (a._nd is buf and _refcount(st) == 3 and _refcount(buf) == 4 and buf.base is None
                            and not (_weakrefs(grad) or _weakrefs(a) or _weakrefs(st) or _weakrefs(buf))):
                        var.grad = Tensor._wrap(a)  # stolen
                    st = buf = None
                if var.grad is None:
                    var.grad = Tensor._wrap(_copy(a))
        elif create_graph or old._requires_grad:
            var.grad = old + grad
        else:
            if _capture.GRAPH is not None:  # at a replay, a .grad dropped or replaced since starts this sum anew
                _graphs.host_call(_reset_grad, var, old)
            old._accumulate_(grad)
        if _capture.GRAPH is not None:  # a replay writes this .grad again: it must be the one that .grad holds
            _graphs.host_call(_set_grad, var, var.grad, kernels=False)


def _sparse_accumulate(old, grad, create_graph: bool):
    """``.grad`` after adding ``grad`` where either is sparse COO (PyTorch's rules): sparse into nothing or into
    sparse stays sparse (kept coalesced here: one entry per row, so ``indices()``/``values()`` work), sparse into
    dense is added in place (dense), dense into sparse makes it dense."""
    if not create_graph:
        grad = grad.detach()
    if old is None:
        return grad.coalesce() if grad.__class__.is_sparse is True else grad
    if old.__class__.is_sparse is True and grad.__class__.is_sparse is True:
        return (old + grad).coalesce()
    if old.__class__.is_sparse is True:
        return old.to_dense() + grad
    if create_graph or old._requires_grad:
        return old + grad.to_dense()
    old._accumulate_(grad.to_dense())
    return old


_ACCUMULATE_LOCK = threading.RLock()  # re-entrant: a tensor op inside may run a (captured) host call


def _reset_grad(var, captured) -> None:
    """Before a replayed accumulation into ``captured`` (the .grad a capture found): when ``.grad`` was set to None
    since (``zero_grad()`` between replays), the sum starts from zero, as the eager step would assign; when it
    was replaced by another tensor, from that tensor's values."""
    g = var.grad
    if g is not captured:
        _copy_into(captured._data, 0 if g is None else g._data)


def _set_grad(var, grad) -> None:
    """Point ``var.grad`` at ``grad`` (replays of a captured backward: set to None in between, it is back)."""
    var.grad = grad


# ---------------------------------------------------------------------------------------- the ledger
class SavedTensorsReport:
    """Per graph node: the bytes it holds for backward and where it was created; ``total`` counts each
    storage once. ``str(report)`` is a table."""

    def __init__(self, rows, total):
        self.rows = rows  # list of dicts: op, bytes, shapes, site
        self.total = total

    def __str__(self):
        lines = [f"{'op':<28} {'bytes':>12}  {'saved':<36} created at"]
        for r in self.rows:
            shapes = ", ".join(r["shapes"])
            lines.append(f"{r['op']:<28} {r['bytes']:>12}  {shapes[:36]:<36} {r['site']}")
        lines.append(f"{'total (distinct storages)':<28} {self.total:>12}")
        return "\n".join(lines)

    __repr__ = __str__


def _site_str(site):
    if site is None:
        return "?"
    code, line = site
    return f"{code.co_filename}:{line} in {code.co_name}"


def saved_tensors_report(*roots) -> SavedTensorsReport:
    """What the graph behind ``roots`` (tensors) holds for backward: one row per node with saved tensors,
    its bytes (distinct storages), their shapes/dtypes and the user code line that created the node."""
    nodes = []
    seen = set()
    stack = [t._grad_fn for t in roots if t._grad_fn is not None]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        stack.extend(e[0] for e in n.next_functions)
    nodes.sort(key=lambda n: n._seq)
    rows = []
    storages = {}
    for n in nodes:
        if not n._saved:
            continue
        shapes = []
        for s in n._saved:
            if s is not None and s.array is not None:
                storages[id(s.array._storage)] = s.array._storage.nbytes
                shapes.append(f"{s.array.dtype}{list(s.array.shape)}")
        rows.append({"op": n.name(), "bytes": n.saved_bytes(), "shapes": shapes, "site": _site_str(n._site),
                     "node": weakref.ref(n)})
    return SavedTensorsReport(rows, sum(storages.values()))
