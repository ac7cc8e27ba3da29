"""``Optimizer``: parameter groups with per-group options, per-parameter state, ``state_dict`` in PyTorch's
layout (parameters by index) and ``zero_grad``."""

from __future__ import annotations

import copy
import functools
import itertools
from collections import defaultdict

import autograd as ag
import tkernels as tk
from autograd.grad_mode import STATE as _GRAD_MODE
from autograd.tensor import Tensor
from tkernels import _capture
from tkernels import graphs as _graphs

from ._sparse import check_no_sparse

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_ids = itertools.count()
_global_step_pre_hooks: dict = {}  # every optimizer's (register_optimizer_step_pre_hook)
_global_step_post_hooks: dict = {}


class _Handle:
    """What a ``register_*_hook`` returns: ``remove()`` takes the hook out again."""

    def __init__(self, hooks: dict, key):
        self._hooks, self.id = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_optimizer_step_pre_hook(hook) -> _Handle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (``args`` starts with the optimizer, as
    in PyTorch); it may return ``(args, kwargs)`` to call the step with."""
    k = next(_ids)
    _global_step_pre_hooks[k] = hook
    return _Handle(_global_step_pre_hooks, k)


def register_optimizer_step_post_hook(hook) -> _Handle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    k = next(_ids)
    _global_step_post_hooks[k] = hook
    return _Handle(_global_step_post_hooks, k)


def _with_step_hooks(self, step, args, kwargs):
    args = (self, *args)  # (PyTorch's hooks see the optimizer as the first of the step's arguments)
    for hook in [*_global_step_pre_hooks.values(), *(self._step_pre_hooks or {}).values()]:
        r = hook(self, args, kwargs)
        if r is not None:
            if not (isinstance(r, tuple) and len(r) == 2):
                raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {r}.")
            args, kwargs = r
    out = step(*args, **kwargs)
    for hook in [*(self._step_post_hooks or {}).values(), *_global_step_post_hooks.values()]:
        hook(self, args, kwargs)
    return out


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _graph_aware(step):
    """Wrap an optimizer's ``step`` so that a captured graph (``tkernels.graphs``) calls it again at each replay
    (a host call): it reads the learning rates, step counts and options anew, and runs its own kernels eagerly,
    on the gradients that the replayed backward wrote."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if (self._step_pre_hooks or self._step_post_hooks or _global_step_pre_hooks or _global_step_post_hooks) \
                and not self._in_step_hooks:
            self._in_step_hooks = True  # (a subclass's step calling its base's: the hooks run once)
            try:
                return _with_step_hooks(self, wrapper, args, kwargs)
            finally:
                self._in_step_hooks = False
        if self._sparse_message is not None:
            check_no_sparse(self)
        if _capture.GRAPH is not None and _graphs.is_capturing():
            if args and args[0] is not None or kwargs.get("closure") is not None:
                raise RuntimeError(f"{type(self).__name__}.step: a closure cannot be captured in a graph (it would "
                                   f"run at capture only); hint: capture the forward and backward, and call "
                                   f"step() without a closure")
            if self._steps_on_device():  # capturable: the step's kernels are recorded like the backward's
                return step(self, *args, **kwargs)
            lean = getattr(self, "_graph_replay", None)  # (only for the step and fused step it was written for)
            if lean is not None and not self._graph_replay_applies():
                lean = None
            return _graphs.host_call(step, self, replay=lean() if lean is not None else None)
        return step(self, *args, **kwargs)

    wrapper._graph_aware = True
    return wrapper


class Optimizer:
    """Base class: ``defaults`` are the options every group gets unless it sets its own."""

    _host_steps = None  # step tensor -> (its version, its count): see _next_step
    _step_pre_hooks = _step_post_hooks = None  # this optimizer's step hooks (dicts once one is registered)
    _state_dict_hooks = None  # "pre"/"post"/"load_pre"/"load_post" -> {id: hook}
    _in_step_hooks = False
    # PyTorch's error for a sparse gradient (Embedding(sparse=True)); None where the optimizer takes them
    _sparse_message = property(lambda self: f"{type(self).__name__} does not support sparse gradients")

    def _graph_replay_applies(self) -> bool:
        """Whether ``_graph_replay`` (when a subclass has one) may stand in for this optimizer's ``step``."""
        return True

    def _steps_on_device(self) -> bool:
        """Whether ``step()`` reads nothing on the host (``capturable=True`` where the optimizer implements it), so
        that a graph capture records its kernels instead of calling it again at each replay."""
        return False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_graph_aware", False):
            cls.step = _graph_aware(step)

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)  # PyTorch's: `self.state[p]` in a custom step starts empty
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params argument given to the optimizer should be an iterable "
                            f"of Tensors or dicts, but got a single Tensor")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {k}")
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        if existing & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach()
                    p.grad.zero_()

    # ------------------------------------------------------------------------------------------ hooks
    def _hook_dict(self, attr: str) -> dict:
        d = self.__dict__.get(attr)
        if d is None:
            d = {}
            setattr(self, attr, d)
        return d

    def register_step_pre_hook(self, hook) -> _Handle:
        """``hook(optimizer, args, kwargs)`` before this optimizer's ``step``; may return ``(args, kwargs)``."""
        k = next(_ids)
        self._hook_dict("_step_pre_hooks")[k] = hook
        return _Handle(self._step_pre_hooks, k)

    def register_step_post_hook(self, hook) -> _Handle:
        """``hook(optimizer, args, kwargs)`` after this optimizer's ``step``."""
        k = next(_ids)
        self._hook_dict("_step_post_hooks")[k] = hook
        return _Handle(self._step_post_hooks, k)

    def _register_sd_hook(self, kind: str, hook, prepend: bool) -> _Handle:
        hooks = self._hook_dict("_state_dict_hooks").setdefault(kind, {})
        k = next(_ids)
        hooks[k] = hook
        if prepend:
            hooks.update({kk: hooks.pop(kk) for kk in list(hooks) if kk != k})  # (k first)
        return _Handle(hooks, k)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> _Handle:
        """``hook(optimizer)`` before ``state_dict`` builds the dict."""
        return self._register_sd_hook("pre", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> _Handle:
        """``hook(optimizer, state_dict)`` after; a returned dict replaces it."""
        return self._register_sd_hook("post", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> _Handle:
        """``hook(optimizer, state_dict)`` before ``load_state_dict`` reads it; a returned dict replaces it."""
        return self._register_sd_hook("load_pre", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> _Handle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return self._register_sd_hook("load_post", hook, prepend)

    def _sd_hooks(self, kind: str):
        return list(((self._state_dict_hooks or {}).get(kind) or {}).values())

    # ------------------------------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{options, "params": [indices]}]}`` (PyTorch's layout)."""
        for hook in self._sd_hooks("pre"):
            hook(self)
        sd = self._state_dict()
        for hook in self._sd_hooks("post"):
            r = hook(self, sd)
            if r is not None:
                sd = r
        return sd

    def _state_dict(self) -> dict:
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore options and per-parameter state; tensors are moved to each parameter's device (and floating
        state to its dtype, ``step`` excepted)."""
        for hook in self._sd_hooks("load_pre"):
            r = hook(self, state_dict)
            if r is not None:
                state_dict = r
        self._load_state_dict(state_dict)
        for hook in self._sd_hooks("load_post"):
            hook(self)

    def _load_state_dict(self, state_dict: dict) -> None:
        state_dict = copy.copy(state_dict)
        groups = self.param_groups
        saved = state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError(f"loaded state dict has a different number of parameter groups ({len(saved)} vs "
                             f"{len(groups)} in the optimizer)")
        for i, (g, s) in enumerate(zip(groups, saved)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(f"loaded state dict contains a parameter group ({i}) that doesn't match the size of "
                                 f"optimizer's group ({len(s['params'])} vs {len(g['params'])} parameters)")
        id_map = {}
        for g, s in zip(groups, saved):
            for p, idx in zip(g["params"], s["params"]):
                id_map[idx] = p
        self.state = defaultdict(dict)
        self.__dict__.pop("_host_steps", None)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) and k.isdigit() else k
            if k not in id_map:
                continue
            p = id_map[k]
            self.state[p] = {name: self._cast(p, name, val) for name, val in v.items()}
        for g, s in zip(groups, saved):
            for k, v in s.items():
                if k != "params":
                    g[k] = v

    def _next_step(self, st: dict) -> float:
        """Increment ``st["step"]`` (a 0-d tensor, as in PyTorch's state) and return the new count.

        On cpu the tensor is read every step (cheap). On cuda reading it would synchronize the device once per
        parameter per step, so the count is kept on the host as well and the tensor is read again only when
        it was replaced (``load_state_dict``, a new state dict) or written in place (its version changed).
        A write through ``step.data`` bypasses the version counter (as in PyTorch) and is not seen on cuda."""
        t = st["step"]
        a = t._data
        if a._device.type == "cpu":
            step = float(a.item()) + 1.0
            tk.copy_into(a, step)
            return step
        cache = self._host_steps
        if cache is None:
            cache = self._host_steps = {}
        known = cache.get(t)
        v = t._version.v
        step = (known[1] if known is not None and known[0] == v else float(t.item())) + 1.0
        tk.copy_into(a, step)
        cache[t] = (v, step)
        return step

    @staticmethod
    def _cast(p, name, val):
        if not isinstance(val, Tensor):
            return val
        if name == "step":
            return val.detach().clone().to(device=p.device)
        if val.is_floating_point():
            return val.detach().clone().to(device=p.device, dtype=p.dtype)
        return val.detach().clone().to(device=p.device)

    @_graph_aware
    def step(self, closure=None):
        """One update of every group: ``_fused_step(group)`` (one fused op per device), or the per-parameter
        ``_single_tensor_step(group)`` reference when the group says ``foreach=False`` without ``fused``.
        Optimizers without a fused path override this."""
        loss = None if closure is None else self._closure(closure)
        prev = _GRAD_MODE.grad_enabled  # ag.no_grad() without the context manager (~0.7 µs per step)
        _GRAD_MODE.grad_enabled = False
        try:
            for g in self.param_groups:
                if g.get("foreach") is False and not g.get("fused"):
                    self._single_tensor_step(g)
                else:
                    self._fused_step(g)
        finally:
            _GRAD_MODE.grad_enabled = prev
        return loss

    def _closure(self, closure):
        if closure is None:
            return None
        with ag.enable_grad():
            return closure()
