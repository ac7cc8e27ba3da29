"""Adam and AdamW (with amsgrad, maximize, weight decay coupled or decoupled) with PyTorch's single-tensor
arithmetic: the same operations in the same order, so results match step for step.

``step`` updates each parameter group with one fused multi-tensor ``tk.ops.adam_step`` per device (one kernel
launch on cuda; in-place NumPy on cpu, bit-identical to the reference there); ``foreach=False`` (without
``fused=True``) runs the per-parameter reference ``_single_tensor_step``, op by op.

``capturable=True`` (PyTorch's): each parameter's ``step`` is a float32 tensor on its device, incremented and
turned into the bias corrections there, so a step reads no device value on the host and a captured graph
(``tkernels.graphs``) records it as kernels: on a GPU the whole training step replays as one CUDA graph, the
optimizer included (without it, the step runs between the graph's segments, on the host). As in PyTorch with a
float ``lr``, the learning rate and the other options are frozen into a captured graph: a scheduler's change
after the capture is not seen by its replays (capture again)."""

from __future__ import annotations

import math

import autograd as ag
import tkernels as tk
from autograd.grad_mode import STATE as _GRAD_MODE
from tkernels import graphs as _graphs

from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    _sparse_message = "Adam does not support sparse gradients, please consider SparseAdam instead"
    _decoupled = False
    _step_runs = None  # id(first step tensor) -> (the step tensors made together, their float32 buffer)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 amsgrad: bool = False, *, foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None, decoupled_weight_decay: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay or self._decoupled))

    def _state(self, p, amsgrad: bool, capturable: bool = False) -> dict:
        st = self.state.get(p)
        if not st:
            with _graphs.unrecorded():  # made once, also inside a capture (a replay must not zero the state again)
                step = ag.zeros((), dtype=ag.float32, device=p.device) if capturable else ag.tensor(0.0)
                st = self.state[p] = {"step": step, "exp_avg": ag.zeros_like(p), "exp_avg_sq": ag.zeros_like(p)}
                if amsgrad:
                    st["max_exp_avg_sq"] = ag.zeros_like(p)
        elif capturable:
            k = st["step"]
            if k._data._dtype is not tk.float32 or k._data._device != p._data._device:  # a loaded non-capturable state
                with _graphs.unrecorded():
                    st["step"] = k.detach().to(device=p.device, dtype=ag.float32)
        return st

    def _group_state(self, g, amsgrad: bool) -> None:
        """The state of every parameter of group ``g`` that has a gradient and no state yet, made at once (the
        first step): per device and dtype, the exp_avg tensors are consecutive views of one zeroed buffer, and so
        are exp_avg_sq (and max_exp_avg_sq), so that the cpu backend of ``tk.ops.adam_step`` updates them with one
        NumPy call per ufunc instead of one per parameter (the 64-256-10 MLP step: ~48 calls less). Each is a
        tensor of its parameter's shape, dtype and device, zeros, as ``zeros_like`` makes it; a state replaced
        later (``load_state_dict``) is updated tensor by tensor, with the same results."""
        state = self.state
        fresh = {}  # (device, dtype) -> params
        for p in g["params"]:
            if p.grad is not None and not state.get(p):
                a = p._data
                fresh.setdefault((a._device, a._dtype), []).append(p)
        names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
        with _graphs.unrecorded():  # made once, also inside a capture (a replay must not zero the state again)
            for (dev, dt), ps in fresh.items():
                sizes = [p._data.size for p in ps]
                bufs = [tk.zeros((sum(sizes),), dtype=dt, device=dev) for _ in names]
                counts = tk.zeros((len(ps),), dtype=tk.float32)  # the steps: 0-d float32 cpu tensors, as before
                steps = []
                off = 0
                for i, (p, n) in enumerate(zip(ps, sizes)):
                    shape = p._data._shape
                    steps.append(ag.Tensor._wrap(counts[i]))
                    st = state[p] = {"step": steps[-1]}
                    for name, buf in zip(names, bufs):
                        st[name] = ag.Tensor._wrap(tk.reshape(buf[off:off + n], shape))
                    off += n
                if self._step_runs is None:
                    self._step_runs = {}
                self._step_runs[id(steps[0])] = (tuple(steps), counts)  # (the tuple keeps the ids taken)

    def _next_steps(self, sts) -> list:
        """``_next_step`` of each state, in order. The counts made by ``_group_state`` are 0-d views of one
        float32 buffer: while the states still hold those tensors, they are read and incremented by one NumPy
        call each (the same values: the count + 1.0 as a Python float, stored rounded to float32)."""
        n = len(sts)
        if n > 1 and not _graphs.is_capturing():
            first = sts[0]["step"]
            run = self._step_runs.get(id(first)) if self._step_runs else None
            if run is not None and run[0][0] is first and len(run[0]) == n and \
                    all(st["step"] is t for st, t in zip(sts, run[0])):
                nd = run[1].numpy()
                counts = nd.tolist()
                c0 = counts[0]
                if counts.count(c0) == n:
                    step = c0 + 1.0
                    nd[...] = step
                    return [step] * n
                new = [c + 1.0 for c in counts]
                nd[...] = new
                return new
        return [self._next_step(st) for st in sts]

    def _steps_on_device(self) -> bool:
        """Every group is capturable: ``step()`` is device arithmetic, recorded by a graph capture as kernels."""
        return all(g.get("capturable") for g in self.param_groups)

    def _capturable_step(self, g) -> None:
        """``_fused_step`` with the step counts on the device: one ``tk.ops.adam_step`` per device (two launches
        on cuda: the counts, then the update)."""
        amsgrad = g["amsgrad"]
        buckets = {}  # device -> rows of param, grad, exp_avg, exp_avg_sq[, max], step
        for p in g["params"]:
            grad = p.grad
            if grad is None:
                continue
            st = self._state(p, amsgrad, True)
            row = (p._data, grad._data, st["exp_avg"]._data, st["exp_avg_sq"]._data,
                   st["max_exp_avg_sq"]._data if amsgrad else None, st["step"]._data)
            buckets.setdefault(p._data._device, []).append(row)
            p._version.v += 1
            st["step"]._version.v += 1
        beta1, beta2 = g["betas"]
        for rows in buckets.values():
            cols = list(zip(*rows))
            tk.ops.adam_step(cols[0], cols[1], cols[2], cols[3], cols[4] if amsgrad else None, step=list(cols[5]),
                             lr=g["lr"], beta1=beta1, beta2=beta2, eps=g["eps"], weight_decay=g["weight_decay"],
                             decoupled=g["decoupled_weight_decay"], amsgrad=amsgrad, maximize=g["maximize"])

    def _fused_step(self, g) -> None:
        """One ``tk.ops.adam_step`` (one kernel launch on cuda) per device and step count of the group."""
        if g.get("capturable"):
            return self._capturable_step(g)
        amsgrad = g["amsgrad"]
        state = self.state
        buckets = {}  # (device, step) -> a row of arrays per parameter: param, grad, exp_avg, exp_avg_sq[, max]
        all_rows, sts = [], []
        for p in g["params"]:
            grad = p.grad
            if grad is None:
                continue
            st = state.get(p)
            if not st:
                self._group_state(g, amsgrad)
                st = state[p]
            row = (p._data, grad._data, st["exp_avg"]._data, st["exp_avg_sq"]._data)
            all_rows.append(row + (st["max_exp_avg_sq"]._data,) if amsgrad else row)
            sts.append(st)
            p._version.v += 1
        rows = dev = last = None
        for row, step in zip(all_rows, self._next_steps(sts)):
            pa = row[0]
            if pa._device is not dev or step != last:  # another bucket (a group has one in the common case)
                dev, last = pa._device, step
                rows = buckets.get((dev, step))
                if rows is None:
                    rows = buckets[(dev, step)] = []
            rows.append(row)
        beta1, beta2 = g["betas"]
        for (_, step), rows in buckets.items():
            cols = list(zip(*rows))
            tk.ops.adam_step(cols[0], cols[1], cols[2], cols[3], cols[4] if amsgrad else None, step=step, lr=g["lr"],
                             beta1=beta1, beta2=beta2, eps=g["eps"], weight_decay=g["weight_decay"],
                             decoupled=g["decoupled_weight_decay"], amsgrad=amsgrad, maximize=g["maximize"])

    def _graph_replay(self):
        """What a captured graph calls in place of ``step()`` (see ``Optimizer``): the fused step of each group on
        the arrays the capture used (the parameters, the gradients the replayed backward writes, the state),
        without rebuilding the rows; step counts, learning rates and options are read anew each time. Any change
        to the groups or state since (another parameter group, a parameter without gradient, ``foreach=False``,
        a loaded state dict) makes it run ``step()`` itself."""
        plan = None

        def signature(g, params, st) -> tuple:
            """Everything the plan of group ``g`` took from the optimizer (compared by identity)."""
            return (g["params"], g["amsgrad"], g.get("foreach"), g.get("fused"),
                    *[self.state.get(p) for p in params], *[s["step"] for s in st],
                    *[None if p.grad is None else p.grad._data for p in params],
                    *[s["exp_avg"]._data for s in st], *[s["exp_avg_sq"]._data for s in st],
                    *[s.get("max_exp_avg_sq") for s in st])

        def build():
            out = []
            for g in self.param_groups:
                if g.get("foreach") is False and not g.get("fused"):
                    return None
                params = [p for p in g["params"] if p.grad is not None]
                if len(params) != len(g["params"]) or not params:
                    return None
                st = [self.state[p] for p in params]
                ams = g["amsgrad"]
                if len({p._data._device for p in params}) != 1 or any(("max_exp_avg_sq" in s) is not ams for s in st):
                    return None
                cols = ([p._data for p in params], [p.grad._data for p in params],
                        [s["exp_avg"]._data for s in st], [s["exp_avg_sq"]._data for s in st],
                        [s["max_exp_avg_sq"]._data for s in st] if ams else None)
                out.append((g, params, st, cols, signature(g, params, st)))
            return out

        def current(plan) -> bool:
            return len(plan) == len(self.param_groups) and all(
                g is g2 and len(g["params"]) == len(params)
                and all(a is b for a, b in zip(signature(g, params, st), keys))
                for (g, params, st, _, keys), g2 in zip(plan, self.param_groups))

        def replay():
            nonlocal plan
            if plan is None or not current(plan):
                plan = build()
                if plan is None:
                    return type(self).step.__wrapped__(self)
            prev = _GRAD_MODE.grad_enabled
            _GRAD_MODE.grad_enabled = False
            try:
                for g, params, st, cols, _ in plan:
                    steps = [self._next_step(s) for s in st]
                    for p in params:
                        p._version.v += 1
                    beta1, beta2 = g["betas"]
                    counts = set(steps)  # one count in the common case (else one call per count)
                    for step in counts:
                        sel = cols if len(counts) == 1 else [
                            None if c is None else [a for a, k in zip(c, steps) if k == step] for c in cols]
                        tk.ops.adam_step(*sel, step=step, lr=g["lr"], beta1=beta1, beta2=beta2, eps=g["eps"],
                                         weight_decay=g["weight_decay"], decoupled=g["decoupled_weight_decay"],
                                         amsgrad=g["amsgrad"], maximize=g["maximize"])
            finally:
                _GRAD_MODE.grad_enabled = prev

        return replay

    def _graph_replay_applies(self) -> bool:
        """The lean replay stands in for Adam's own ``step`` and ``_fused_step`` only (not a subclass's override)."""
        cls = type(self)
        return cls.step is Adam.step and cls._fused_step is Adam._fused_step

    def _single_tensor_step(self, g) -> None:
        """The per-parameter reference (``foreach=False``): PyTorch's single-tensor arithmetic, op by op."""
        beta1, beta2 = g["betas"]
        lr, eps, wd = g["lr"], g["eps"], g["weight_decay"]
        for p in g["params"]:
            if p.grad is None:
                continue
            pa = p._data
            grad = p.grad._data
            if g["maximize"]:
                grad = tk.negative(grad)
            capturable = g.get("capturable", False)
            st = self._state(p, g["amsgrad"], capturable)
            if capturable:  # the count on the device (PyTorch's capturable single-tensor step)
                k = st["step"]._data
                tk.add(k, 1.0, out=k)
                st["step"]._version.v += 1
            else:
                step = self._next_step(st)
            if wd != 0:
                if g["decoupled_weight_decay"]:
                    tk.multiply(pa, 1 - lr * wd, out=pa)
                else:
                    grad = tk.add(grad, tk.multiply(pa, wd))
            m = st["exp_avg"]._data
            v = st["exp_avg_sq"]._data
            tk.lerp(m, grad, 1 - beta1, out=m)
            tk.multiply(v, beta2, out=v)
            tk.add(v, tk.multiply(tk.multiply(grad, grad), 1 - beta2), out=v)
            if capturable:  # device tensors, in float64 from the count as the host computes them (PyTorch: in the
                k64 = tk.astype(k, tk.float64)  # count's float32, ~1e-5 relative off the host step after a few)
                step_size = tk.divide(lr, tk.subtract(1.0, tk.pow(beta1, k64)))
                bc2_sqrt = tk.sqrt(tk.subtract(1.0, tk.pow(beta2, k64)))
            else:
                step_size = lr / (1 - beta1**step)
                bc2_sqrt = math.sqrt(1 - beta2**step)
            if g["amsgrad"]:
                mx = st["max_exp_avg_sq"]._data
                tk.maximum(mx, v, out=mx)
                v = mx
            denom = tk.add(tk.divide(tk.sqrt(v), bc2_sqrt), eps)
            tk.subtract(pa, tk.multiply(tk.divide(m, denom), step_size), out=pa)
            p._version.v += 1


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, maximize: bool = False, foreach=None, capturable: bool = False,
                 differentiable: bool = False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
