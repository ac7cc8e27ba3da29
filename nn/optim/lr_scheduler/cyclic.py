"""Cyclical schedules: ``CyclicLR`` (Smith 2017) and ``OneCycleLR`` (Smith & Topin 2018), which also cycle the
momentum (SGD's ``momentum`` or Adam's ``betas[0]``)."""

from __future__ import annotations

import math

from .base import LRScheduler, _callables_state, _load_callables_state, _per_group

__all__ = ["CyclicLR", "OneCycleLR"]


def _cycle_momentum(optimizer, base_momentum, max_momentum, last_epoch: int):
    """Check that the optimizer has a momentum to cycle (SGD's ``momentum`` or Adam's ``betas[0]``); on a fresh
    start set it to ``max_momentum`` and record both bounds in the groups. Returns (use_beta1, bases, maxes)."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    use_beta1 = "betas" in optimizer.defaults
    bases = _per_group("base_momentum", optimizer, base_momentum)
    maxes = _per_group("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for g, bm, mm in zip(optimizer.param_groups, bases, maxes):
            _set_momentum(g, mm, use_beta1)
            g["max_momentum"] = mm
            g["base_momentum"] = bm
    return use_beta1, bases, maxes


def _set_momentum(g: dict, value: float, use_beta1: bool) -> None:
    if use_beta1:
        g["betas"] = (value, *g["betas"][1:])
    else:
        g["momentum"] = value


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017): each cycle rises linearly from ``base_lr`` to ``max_lr`` in
    ``step_size_up`` steps and falls back in ``step_size_down``; the amplitude is scaled by ``scale_fn`` of the
    cycle number (``scale_mode="cycle"``) or of the step (``"iterations"``): 1 (``triangular``), halved each
    cycle (``triangular2``), ``gamma**step`` (``exp_range``). With ``cycle_momentum`` the momentum moves the other
    way, between ``max_momentum`` and ``base_momentum``. Step it after every batch."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down=None,
                 mode: str = "triangular", gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups):
                g["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _cycle_momentum(
                optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in modes fix their scale mode (as in PyTorch); a custom ``scale_fn`` keeps the one given."""
        if self._scale_fn_custom is None and self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self._scale_fn_custom is None:
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # position in the cycle, in [0, 1)
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, bm, mm in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(g, mm - (mm - bm) * scale_factor * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict:
        """PyTorch's layout: a custom ``scale_fn`` is not saved, only a callable object's attributes."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_scale_fn_custom")}
        sd["_scale_fn_custom"] = _callables_state([self._scale_fn_custom])[0]
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("_scale_fn_custom", None)
        self.__dict__.update(state_dict)
        if saved is not None and self._scale_fn_custom is not None:
            _load_callables_state([self._scale_fn_custom], [saved])
        self._init_scale_fn()


class OneCycleLR(LRScheduler):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.total_steps = total_steps
        self.anneal_strategy = anneal_strategy
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, list | tuple) else [max_lr] * len(groups)
        if last_epoch == -1:
            for g, mlr in zip(groups, max_lrs):
                g["initial_lr"] = mlr / div_factor
                g["max_lr"] = mlr
                g["min_lr"] = g["initial_lr"] / final_div_factor
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * total_steps) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * total_steps) - 2, start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
                dict(end_step=total_steps - 1, start_lr="initial_lr", end_lr="min_lr", start_momentum="max_momentum",
                     end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * total_steps) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=total_steps - 1, start_lr="max_lr", end_lr="min_lr", start_momentum="base_momentum",
                     end_momentum="max_momentum")]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            bms = list(base_momentum) if isinstance(base_momentum, list | tuple) else [base_momentum] * len(groups)
            mms = list(max_momentum) if isinstance(max_momentum, list | tuple) else [max_momentum] * len(groups)
            if last_epoch == -1:
                for g, bm, mm in zip(groups, bms, mms):
                    if self.use_beta1:
                        g["betas"] = (mm, *g["betas"][1:])
                    else:
                        g["momentum"] = mm
                    g["max_momentum"] = mm
                    g["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        for g in self.optimizer.param_groups:
            start_step = 0.0
            lr = mom = None
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(g[phase["start_lr"]], g[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[phase["start_momentum"]], g[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    g["betas"] = (mom, *g["betas"][1:])
                else:
                    g["momentum"] = mom
        return lrs
