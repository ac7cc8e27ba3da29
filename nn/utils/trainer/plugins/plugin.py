"""``Plugin``: what the Trainer calls (Note [plugin queues] in ``trainer.py``), and ``Monitor``, a plugin that
publishes one number per iteration in ``trainer.stats`` with its running and epoch averages."""

from __future__ import annotations

__all__ = ["Plugin", "Monitor"]


class Plugin:
    """Base class. ``interval``: a list of ``(n, unit)`` pairs (units: ``"batch"``, ``"iteration"``,
    ``"update"``, ``"epoch"``); the plugin's method of that name runs every ``n`` units."""

    def __init__(self, interval=None):
        self.trigger_interval = list(interval or [])
        self.trainer = None

    def register(self, trainer) -> None:
        """Called once by ``Trainer.register_plugin``; a plugin that changes the step sets trainer fields here."""
        self.trainer = trainer

    def on_run_begin(self) -> None:
        """Called at the start of every ``Trainer.run``."""

    def on_run_end(self) -> None:
        """Called when a ``Trainer.run`` ends (all epochs done, or stopped)."""

    def state_dict(self) -> dict:
        """What a resumed run needs to continue as this plugin would (JSON values and tensors)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class Monitor(Plugin):
    """Publishes ``stats[stat_name]``: ``last`` (this iteration's value), ``running_avg`` (exponentially
    smoothed: ``smoothing * previous + (1 - smoothing) * last``), ``epoch_mean`` (the mean over the epoch so
    far, weighted by batch size) and, after each epoch, ``epoch_means`` (one entry per finished epoch).
    Subclasses define ``_get_value(input, target, output, loss) -> (value, weight)``."""

    stat_name = "value"

    def __init__(self, running_average: bool = True, epoch_average: bool = True, smoothing: float = 0.7,
                 precision: int = 4):
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"{type(self).__name__}: smoothing must be in [0, 1), got {smoothing}")
        super().__init__([(1, "iteration"), (1, "epoch")])
        self.running_average = running_average
        self.epoch_average = epoch_average
        self.smoothing = smoothing
        self.precision = precision
        self._sum = 0.0
        self._count = 0

    def register(self, trainer) -> None:
        super().register(trainer)
        trainer.stats.setdefault(self.stat_name, {"epoch_means": []})
        trainer.stats[self.stat_name]["format"] = f"{{:.{self.precision}f}}"

    def _get_value(self, input, target, output, loss):
        raise NotImplementedError(f"{type(self).__name__}: a Monitor subclass must define _get_value")

    def iteration(self, i, input, target, output, loss) -> None:
        value, weight = self._get_value(input, target, output, loss)
        value = float(value)
        s = self.trainer.stats[self.stat_name]
        s["last"] = value
        if self.running_average:
            prev = s.get("running_avg")
            s["running_avg"] = value if prev is None else self.smoothing * prev + (1.0 - self.smoothing) * value
        if self.epoch_average:
            self._sum += value * weight
            self._count += weight
            s["epoch_mean"] = self._sum / self._count

    def epoch(self, epoch) -> None:
        s = self.trainer.stats[self.stat_name]
        if self.epoch_average and self._count:
            s["epoch_means"].append(self._sum / self._count)
        self._sum, self._count = 0.0, 0

    def state_dict(self) -> dict:
        s = self.trainer.stats.get(self.stat_name, {})
        return {"sum": self._sum, "count": self._count, "running_avg": s.get("running_avg"),
                "epoch_means": list(s.get("epoch_means", []))}

    def load_state_dict(self, state: dict) -> None:
        self._sum, self._count = float(state["sum"]), float(state["count"])
        s = self.trainer.stats[self.stat_name]
        s["epoch_means"] = [float(v) for v in state["epoch_means"]]
        if state["running_avg"] is not None:
            s["running_avg"] = float(state["running_avg"])
        if self._count:
            s["epoch_mean"] = self._sum / self._count
