"""User-defined differentiable operations: ``Function`` (PyTorch's ``torch.autograd.Function``).

A subclass writes ``forward`` and ``backward`` as static methods; ``MyFn.apply(*args)`` runs ``forward``
under ``no_grad`` on the arguments themselves (tensors and anything else) and, when some input requires grad,
records a node named ``MyFnBackward`` whose ``backward`` calls the user's. The ``ctx`` both functions receive
*is* that node (as in PyTorch): attributes set on it in forward are there in backward.

>>> class Cube(Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x * x
...     @staticmethod
...     def backward(ctx, g):
...         x, = ctx.saved_tensors
...         return 3 * x * x * g          # differentiable ops: double backward works
>>> y = Cube.apply(x)

``forward`` may return a tensor or a tuple (non-tensors allowed); ``backward`` gets one gradient per output
(zeros where an output got none, or None after ``ctx.set_materialize_grads(False)``; always None for
non-tensor outputs) and returns one value per forward argument (None for non-tensors and for inputs that
need no gradient). The PyTorch 2 style also works: ``forward(*args)`` without ctx plus
``setup_context(ctx, inputs, output)``. ``@once_differentiable`` marks a backward that is not itself
differentiable (e.g. one that calls kernels directly).
"""

from __future__ import annotations

import functools
import inspect

from tkernels.validation import OpTypeError

from .grad_mode import STATE
from .graph import Node, SavedTensor
from .tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction"]


class FunctionCtx:
    """What ``forward`` (or ``setup_context``) can tell the backward pass through ``ctx``."""

    _forward_cls = None
    _to_save = ()
    _dirty = ()
    _non_differentiable = ()
    _recording = False

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (inputs, outputs, or None) for backward, with in-place modification checks;
        read them back with ``ctx.saved_tensors``. Call it once, inside forward/setup_context."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise OpTypeError(f"save_for_backward can only save tensors or None, but argument {i} is a "
                                  f"{type(t).__name__}. Hint: keep other values as ctx attributes (ctx.x = ...)")
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare the inputs that forward modified in place (they must also be returned); they take the
        output's history and their version is bumped."""
        for t in tensors:
            if not isinstance(t, Tensor):
                raise OpTypeError(f"mark_dirty: expected Tensors, got a {type(t).__name__}")
            if self._recording:
                _check_dirty_allowed(t, self)
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that are not differentiable (indices, masks...): they get no grad_fn, and
        backward receives zeros for them."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """True (default): missing output gradients reach backward as zeros; False: as None."""
        self._materialize = bool(value)


def _check_dirty_allowed(t, ctx):
    name = ctx._forward_cls.__name__
    if t._base is None and t._grad_fn is None and t._requires_grad:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad (shape {list(t.shape)}) has been used in "
                           f"an in-place operation (ctx.mark_dirty). Hint: clone() it before passing it to "
                           f"{name}.apply, or run under autograd.no_grad()")
    b = t._base
    if b is not None and b._grad_fn is None and b._requires_grad:
        raise RuntimeError(f"{name}: a view of a leaf Variable that requires grad is being used in an in-place "
                           f"operation (ctx.mark_dirty; view shape {list(t.shape)}, base shape {list(b.shape)}). "
                           f"Hint: clone() the base first")


class BackwardCFunction(FunctionCtx, Node):
    """The node recorded by ``Function.apply`` (the class ``<Name>Backward`` per Function subclass), which is
    also the ``ctx`` of forward and backward."""

    def _init_untracked(self, args):
        """A ctx for a call that records no graph (no edges, nothing saved)."""
        self.needs_input_grad = (False,) * len(args)
        self.next_functions = ((None, 0),) * len(args)
        self._saved = None
        self._released = False
        self._out_meta = None

    _holomorphic = False  # the user's backward follows PyTorch's complex convention itself

    def apply(self, grads):
        cls = self._forward_cls
        res = cls._user_backward(self, *grads)
        if not isinstance(res, tuple | list):
            res = (res,)
        n = len(self.next_functions)
        if len(res) > n and all(g is None for g in res[n:]):
            res = res[:n]  # trailing Nones beyond the inputs are allowed, as in PyTorch
        if len(res) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(res)}). Hint: {cls.__name__}.backward must return one value per argument "
                               f"of forward, None for non-tensor arguments and inputs that need no gradient")
        is_tensor = self._input_is_tensor
        for i, g in enumerate(res):
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise OpTypeError(f"function {self.name()} returned a {type(g).__name__} as gradient {i}; expected "
                                  f"a Tensor or None")
            if not is_tensor[i]:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Tensor")
        return tuple(res)


class Function:
    """Base class of user-defined differentiable operations; see the module docstring."""

    _backward_cls = None
    _setup_style = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._setup_style = _overrides(cls, "setup_context")
        has_bw, has_vjp = _overrides(cls, "backward"), _overrides(cls, "vjp")
        if has_bw and has_vjp and cls.__dict__.get("vjp") is not cls.__dict__.get("backward"):
            raise OpTypeError(f"{cls.__name__}: implementing both 'backward' and 'vjp' is not allowed; define one")
        cls._user_backward = staticmethod(cls.vjp if has_vjp and not has_bw else cls.backward)
        cls._forward_sig = None

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: call {type(self).__name__}.apply(...) (forward and backward are "
                           f"static methods; Function instances are not callable)")

    @staticmethod
    def forward(*args, **kwargs):
        """``forward(ctx, *args)`` (or ``forward(*args)`` with ``setup_context``): compute the outputs."""
        raise NotImplementedError("You must implement the forward function for a custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2 style: save what backward needs, given the inputs (a tuple) and forward's output."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per forward argument (None where there is none), given one per output."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        bw_cls = cls._backward_cls
        if bw_cls is None:
            raise RuntimeError("Function.apply: call apply on a subclass of autograd.Function")
        if kwargs or cls._setup_style:
            args, kwargs = _bind(cls, args, kwargs)
        record = False
        if STATE.grad_enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    if a._inference:
                        raise RuntimeError("Inference tensors cannot be saved for backward. To work around you "
                                           "can make a clone to get a normal tensor and use it in autograd.")
                    record = True
                    break
        ctx = object.__new__(bw_cls)
        if record:
            Node.__init__(ctx, args)
            ctx._recording = True
        else:
            ctx._init_untracked(args)
        ctx._input_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            if cls._setup_style:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
        return _wrap_outputs(ctx, args, out, record)


def _overrides(cls, name) -> bool:
    for k in cls.__mro__:
        if k is Function:
            return False
        if name in k.__dict__:
            return True
    return False


def _bind(cls, args, kwargs):
    """Keyword and default arguments of forward become positional inputs (PyTorch binds them the same way);
    keyword-only ones stay keywords (not differentiated)."""
    sig = cls._forward_sig
    if sig is None:
        sig = inspect.signature(cls.forward)
        if not cls._setup_style:
            params = list(sig.parameters.values())[1:]  # drop ctx
            sig = sig.replace(parameters=params)
        cls._forward_sig = sig
    try:
        b = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise OpTypeError(f"{cls.__name__}.apply: {e}") from None
    b.apply_defaults()
    return b.args, b.kwargs


def _alias(t, node=None, nr=0):
    """A new tensor sharing ``t``'s data and version counter (with ``node``'s history if given)."""
    a = Tensor._wrap(t._data) if node is None else Tensor._make(t._data, node, nr)
    a._version = t._version
    return a


def _wrap_outputs(ctx, args, out, record):
    is_tuple = isinstance(out, tuple)
    outs = out if is_tuple else (out,)
    dirty = ctx._dirty
    for d in dirty:
        if not any(o is d for o in outs):
            raise RuntimeError(f"{ctx._forward_cls.__name__}: some elements marked as dirty during the forward "
                               f"method were not returned as output. The inputs that are modified inplace must all "
                               f"be outputs of the Function.")
        d._version.v += 1
    if not record and not dirty and not ctx._non_differentiable:
        new = []
        for o in outs:
            if isinstance(o, Tensor) and (any(o is a for a in args) or o._requires_grad):
                o = _alias(o)  # an input returned as it is: a new tensor object, as in PyTorch
            new.append(o)
        return tuple(new) if is_tuple else new[0]

    non_diff = ctx._non_differentiable
    out_meta = {}
    mapping = {}  # id(object forward returned) -> the tensor handed to the caller
    new = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            new.append(o)
            continue
        is_dirty = any(o is d for d in dirty)
        differentiable = record and o._data.dtype.kind in "fc" and not any(o is t for t in non_diff)
        if record:
            out_meta[i] = (o._data.shape, o._data.dtype, o._data.device)
        if not differentiable:
            if is_dirty:  # modified in place but not differentiable here: a detached alias if it has history
                r = _alias(o) if o._requires_grad else o
            elif o._requires_grad or id(o) in mapping or any(o is a for a in args):
                r = _alias(o)
            else:
                r = o
        elif is_dirty:
            _rebase(ctx, o, i)
            r = o
        else:
            r = _alias(o, ctx, i)
        mapping.setdefault(id(o), r)
        new.append(r)
    if record:
        ctx._out_meta = out_meta
        ctx._n_outputs = len(outs)
        if ctx._to_save:
            ctx._saved = [_saved(ctx, t, args, dirty, mapping) for t in ctx._to_save]
        ctx._to_save = ()
        ctx._dirty = ()
        ctx._non_differentiable = ()
    return tuple(new) if is_tuple else new[0]


def _rebase(ctx, t, nr):
    """An input modified in place by forward takes output ``nr``'s history (through its base for a view)."""
    base = t._base
    if base is None:
        t._grad_fn = ctx
        t._output_nr = nr
        t._requires_grad = True
        return
    from .ops._base import ViewScatterBackward

    res = _alias(t, ctx, nr)
    node = ViewScatterBackward(base, res, t._view_fn)  # edges: the base's old history, and this function
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    node._out_meta = {0: (base._data.shape, base._data.dtype, base._data.device)}
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        regen = t._view_fn(base)
    finally:
        STATE.grad_enabled = prev
    t._grad_fn = regen._grad_fn
    t._output_nr = 0
    t._requires_grad = True
    t._view_ver = t._version.v


def _saved(ctx, t, args, dirty, mapping):
    if t is None:
        return None
    if any(t is d for d in dirty):
        return SavedTensor(t, True) if t._grad_fn is ctx else SavedTensor(t, False)
    if any(t is a for a in args):
        return SavedTensor(t, False)
    r = mapping.get(id(t))
    if r is not None and r._grad_fn is ctx:
        return SavedTensor(r, True)  # an output: kept without a reference cycle
    return SavedTensor(t, False)  # an intermediate (or non-differentiable output): kept as it is


# ------------------------------------------------------------------------------------ once_differentiable
_ONCE = "trying to differentiate twice a function that was marked with @once_differentiable"


class DelayedError(Node):
    """Stands in the graph of a gradient that cannot be differentiated again; raises when backward reaches it."""

    def __init__(self, msg, inputs):
        super().__init__(inputs)
        self.msg = msg

    def backward(self, *grads):
        raise RuntimeError(self.msg)


def delayed_error(msg, outputs, edges=()):
    """``outputs`` (tensors or None) with a history that raises ``msg`` if differentiated. ``edges``: where
    the history leads (the edges of the node whose gradients these are), so that ``autograd.grad`` with
    respect to those inputs reaches the error too."""
    fakes = []
    for o in outputs:
        if isinstance(o, Tensor) and o._data.dtype.kind in "fc":
            f = Tensor._wrap(o._data)
            f._requires_grad = True
            fakes.append(f)
    if not fakes:
        return outputs
    node = DelayedError(msg, fakes)
    edges = tuple(e for e in edges if e[0] is not None)
    if edges:
        node.next_functions = edges
        node.needs_input_grad = (True,) * len(edges)
    res, k = [], 0
    for o in outputs:
        if isinstance(o, Tensor) and o._data.dtype.kind in "fc":
            res.append(node.output(o._data, k))
            k += 1
        else:
            res.append(o)
    return tuple(res)


def once_differentiable(fn):
    """Decorate a ``backward`` that is not itself differentiable: it runs under no_grad, and differentiating
    its result again (``create_graph=True`` then backward through it) raises a clear error."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            STATE.grad_enabled = prev
        if not prev:
            return outputs
        single = not isinstance(outputs, tuple | list)
        res = delayed_error(_ONCE, (outputs,) if single else tuple(outputs), getattr(ctx, "next_functions", ()))
        return res[0] if single else res

    return wrapper
