"""Plugins that change the step (Note [the step] in ``trainer.py``): gradient clipping, mixed precision,
gradient accumulation, graph capture, and learning-rate scheduler stepping."""

from __future__ import annotations

import autograd as ag
import tkernels as tk
from nn.amp import GradScaler
from nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

from ..trainer import needs_closure
from .monitors import _lookup
from .plugin import Plugin

__all__ = ["GradientClipping", "MixedPrecision", "GradientAccumulation", "GraphCapture", "LRSchedulerStep"]


def _model_device(trainer):
    if trainer.device is not None:
        return trainer.device
    for p in trainer.model.parameters():
        return p.device
    return ag.device("cpu")


class GradientClipping(Plugin):
    """Clips the gradients before every optimizer step: by their joint norm (``max_norm``, ``norm_type``;
    ``stats["grad_norm"]`` holds the norm before clipping, a 0-d tensor read only by who wants it) or by value
    (``clip_value``). With mixed precision the gradients are unscaled first."""

    def __init__(self, max_norm: float | None = None, norm_type: float = 2.0, clip_value: float | None = None):
        if (max_norm is None) == (clip_value is None):
            raise ValueError(f"GradientClipping: give exactly one of max_norm and clip_value, got max_norm="
                             f"{max_norm}, clip_value={clip_value}")
        super().__init__()
        self.max_norm, self.norm_type, self.clip_value = max_norm, norm_type, clip_value

    def register(self, trainer) -> None:
        super().register(trainer)
        trainer.before_step.append(self._clip)

    def _clip(self, trainer) -> None:
        params = [p for g in trainer.optimizer.param_groups for p in g["params"]]
        if self.max_norm is not None:
            trainer.stats["grad_norm"] = {"last": clip_grad_norm_(params, self.max_norm, self.norm_type)}
        else:
            clip_grad_value_(params, self.clip_value)


class MixedPrecision(Plugin):
    """Runs the forward pass and the loss under ``autocast(device_type, dtype)`` and, for float16, scales the
    loss with a ``GradScaler`` (skipping steps whose gradients overflowed, as PyTorch's recipe does). bfloat16
    needs no scaler (``scaler=None`` to force one either way; pass a ``GradScaler`` to configure it)."""

    def __init__(self, dtype=ag.float16, device_type: str | None = None, scaler="auto"):
        super().__init__()
        self.dtype = tk.dtypes.as_dtype(dtype)
        if self.dtype not in (ag.float16, ag.bfloat16):
            raise ValueError(f"MixedPrecision: dtype must be float16 or bfloat16, got {self.dtype}")
        self.device_type = device_type
        self.scaler = scaler

    def register(self, trainer) -> None:
        super().register(trainer)
        device_type = self.device_type or _model_device(trainer).type
        dtype = self.dtype
        trainer.autocast = lambda: ag.autocast(device_type, dtype=dtype)
        scaler = self.scaler
        if scaler == "auto":
            scaler = GradScaler(device_type) if dtype == ag.float16 else None
        trainer.scaler = scaler


class GradientAccumulation(Plugin):
    """Steps the optimizer once every ``steps`` batches, on the mean of their gradients (each loss is divided by
    ``steps``), and at the end of every epoch on what is left."""

    def __init__(self, steps: int):
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"GradientAccumulation: steps must be a positive int, got {steps!r}")
        super().__init__()
        self.steps = steps

    def register(self, trainer) -> None:
        super().register(trainer)
        trainer.accumulation_steps = self.steps


class GraphCapture(Plugin):
    """Captures the whole step (forward, backward, optimizer) with ``ag.graphs`` on the first batch of each
    shape and replays it for the next ones: the Python above the kernels runs once. Results equal the eager
    steps'. Not with gradient accumulation, a GradScaler, or optimizers that need a closure (their steps
    read values on the host), nor with ops that ``ag.graphs`` refuses to capture (dropout on cuda: its mask's
    random state lives on the host; the capture raises naming the op)."""

    def __init__(self):
        super().__init__()

    def register(self, trainer) -> None:
        super().register(trainer)
        trainer.capture = True

    def on_run_begin(self) -> None:
        t = self.trainer
        why = ("gradient accumulation" if t.accumulation_steps > 1 else
               "a GradScaler (its step reads whether gradients overflowed)" if t.scaler is not None else
               f"{type(t.optimizer).__name__}, whose step needs a closure"
               if needs_closure(t.optimizer) else None)
        if why:
            raise RuntimeError(f"GraphCapture: a captured step cannot use {why}; hint: drop GraphCapture, or use "
                               f"bfloat16 autocast without a scaler")


class LRSchedulerStep(Plugin):
    """Steps ``scheduler`` every ``interval`` (default: each epoch; ``[(1, "iteration")]`` for per-step schedules
    such as OneCycleLR). ``ReduceLROnPlateau`` is stepped with ``monitor`` (a dotted name in
    ``trainer.stats``, default ``validation.loss``: register the evaluation before this plugin)."""

    def __init__(self, scheduler, interval=None, monitor: str = "validation.loss"):
        interval = interval or [(1, "epoch")]
        super().__init__(interval)
        self.scheduler = scheduler
        self.monitor = monitor
        self._plateau = hasattr(scheduler, "is_better")  # ReduceLROnPlateau's step takes the metric

    def _step(self) -> None:
        if self._plateau:
            v = _lookup(self.trainer.stats, self.monitor)
            if isinstance(v, dict):
                v = v["epoch_means"][-1] if v.get("epoch_means") else v.get("last")
            if v is None:
                raise RuntimeError(f"LRSchedulerStep: ReduceLROnPlateau needs the metric {self.monitor!r}, which "
                                   f"no plugin has published yet; hint: register Evaluation (or the monitor) first")
            self.scheduler.step(float(v))
        else:
            self.scheduler.step()

    def iteration(self, i, *args) -> None:
        self._step()

    def epoch(self, epoch) -> None:
        self._step()

    def state_dict(self) -> dict:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scheduler.load_state_dict(state)
