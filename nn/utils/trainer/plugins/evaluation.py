"""Judging a run: evaluation on a held-out loader, checkpoints (the last and the best, safetensors), early
stopping on a monitored metric."""

from __future__ import annotations

import contextlib
import math
import os
import warnings

import autograd as ag
from nn.serialization import load, save

from .monitors import _lookup
from .plugin import Plugin

__all__ = ["Evaluation", "Checkpoint", "EarlyStopping"]


def _metric(trainer, name, who):
    v = _lookup(trainer.stats, name)
    if isinstance(v, dict):  # a monitor: its mean over the last epoch, else its last value
        v = v["epoch_means"][-1] if v.get("epoch_means") else v.get("last")
    if v is None:
        raise RuntimeError(f"{who}: the metric {name!r} has not been published in trainer.stats (it holds "
                           f"{sorted(trainer.stats)}); hint: register the plugin that computes it (Evaluation for "
                           f"'validation.*', LossMonitor for 'loss') before {who}")
    return float(v)


def _better(mode, value, best, min_delta):
    if best is None:
        return True
    return value < best - min_delta if mode == "min" else value > best + min_delta


class Evaluation(Plugin):
    """Every ``interval`` (default each epoch) runs the model in eval mode without gradients over ``loader`` and
    publishes ``stats[name]``: ``{"loss": mean of criterion (default: the trainer's) weighted by batch size,
    "accuracy": fraction of argmax(1) == target (when the output holds class scores)}``. Batches are moved to
    the trainer's device; the forward pass runs under the trainer's autocast."""

    def __init__(self, loader, criterion=None, interval=None, name: str = "validation", accuracy: bool = True):
        super().__init__(interval or [(1, "epoch")])
        self.loader = loader
        self.criterion = criterion
        self.name = name
        self.accuracy = accuracy

    def evaluate(self) -> dict:
        t = self.trainer
        criterion = self.criterion or t.criterion
        was_training = t.model.training
        t.model.eval()
        loss_sum, correct, n = 0.0, 0, 0
        try:
            with ag.no_grad():
                for data in self.loader:
                    x, y = t._unpack(data)
                    with t.autocast() if t.autocast is not None else contextlib.nullcontext():
                        out = t.model(x)
                        loss = criterion(out, y)
                    b = int(y.shape[0]) if y.ndim else 1
                    loss_sum += float(loss) * b
                    n += b
                    if self.accuracy and out.ndim >= 2:
                        correct += int((out.argmax(1) == y).sum())
        finally:
            t.model.train(was_training)
        if n == 0:
            raise ValueError(f"Evaluation: the loader {type(self.loader).__name__} gave no batches")
        result = {"loss": loss_sum / n}
        if self.accuracy:
            result["accuracy"] = correct / n
        t.stats[self.name] = result
        return result

    def iteration(self, i, *args) -> None:
        self.evaluate()

    def epoch(self, epoch) -> None:
        self.evaluate()


class Checkpoint(Plugin):
    """Saves the trainer's ``state_dict()`` (model, optimizer, plugins, counters, random states) with
    ``nn.save`` every ``interval`` (default each epoch): to ``<directory>/last.safetensors`` (``save_last``) and,
    when ``monitor`` improved (``mode`` ``"min"`` or ``"max"``), to ``best.safetensors``. Register it after the
    plugins whose metric it reads. ``Checkpoint.resume(trainer, path)`` restores a saved run into a trainer
    built like the saved one; its next ``run`` continues where it stopped."""

    def __init__(self, directory: str, interval=None, monitor: str | None = "validation.loss", mode: str = "min",
                 save_last: bool = True, save_best: bool = True):
        if mode not in ("min", "max"):
            raise ValueError(f"Checkpoint: mode must be 'min' or 'max', got {mode!r}")
        super().__init__(interval or [(1, "epoch")])
        self.directory = os.fspath(directory)
        self.monitor = monitor if save_best else None
        self.mode = mode
        self.save_last = save_last
        self.best = None
        self._warned = False
        self.best_path = os.path.join(self.directory, "best.safetensors")
        self.last_path = os.path.join(self.directory, "last.safetensors")

    def _save(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        improved = False
        if self.monitor is not None and _lookup(self.trainer.stats, self.monitor) is None:
            if not self._warned:  # e.g. a checkpoint every 100 iterations before the first evaluation
                warnings.warn(f"Checkpoint: the metric {self.monitor!r} is not in trainer.stats yet (it holds "
                              f"{sorted(self.trainer.stats)}): no best checkpoint until it is; hint: register the "
                              f"plugin that computes it before Checkpoint", RuntimeWarning, stacklevel=2)
                self._warned = True
        elif self.monitor is not None:
            value = _metric(self.trainer, self.monitor, "Checkpoint")
            improved = not math.isnan(value) and _better(self.mode, value, self.best, 0.0)
            if improved:
                self.best = value  # before the state is taken: the saved state knows its own score
        state = self.trainer.state_dict()
        if self.save_last:
            save(state, self.last_path)
        if improved:
            save(state, self.best_path)

    def iteration(self, i, *args) -> None:
        self._save()

    def epoch(self, epoch) -> None:
        self._save()

    def state_dict(self) -> dict:
        return {"best": self.best}

    def load_state_dict(self, state: dict) -> None:
        self.best = None if state["best"] is None else float(state["best"])

    @staticmethod
    def resume(trainer, path, map_location=None) -> None:
        """``trainer.load_state_dict(nn.load(path))``, onto the trainer's device by default."""
        if map_location is None and trainer.device is not None:
            map_location = str(trainer.device)
        trainer.load_state_dict(load(path, map_location=map_location))


class EarlyStopping(Plugin):
    """Stops the run when ``monitor`` has not improved by more than ``min_delta`` for ``patience`` checks (each
    ``interval``, default each epoch). ``stats["early_stopping"]`` says when it stopped."""

    def __init__(self, monitor: str = "validation.loss", mode: str = "min", patience: int = 3,
                 min_delta: float = 0.0, interval=None):
        if mode not in ("min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'min' or 'max', got {mode!r}")
        if not isinstance(patience, int) or patience < 1:
            raise ValueError(f"EarlyStopping: patience must be a positive int, got {patience!r}")
        super().__init__(interval or [(1, "epoch")])
        self.monitor, self.mode, self.patience, self.min_delta = monitor, mode, patience, float(min_delta)
        self.best = None
        self.bad = 0

    def _check(self, when) -> None:
        value = _metric(self.trainer, self.monitor, "EarlyStopping")
        if _better(self.mode, value, self.best, self.min_delta):
            self.best, self.bad = value, 0
            return
        self.bad += 1
        if self.bad >= self.patience:
            self.trainer.stop_training = True
            self.trainer.stats["early_stopping"] = {"stopped_at": when, "best": self.best}

    def iteration(self, i, *args) -> None:
        self._check(("iteration", i))

    def epoch(self, epoch) -> None:
        self._check(("epoch", epoch))

    def state_dict(self) -> dict:
        return {"best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict) -> None:
        self.best = None if state["best"] is None else float(state["best"])
        self.bad = int(state["bad"])
