"""Watching a run: loss, accuracy, time and throughput monitors, a tqdm progress bar, and a logger printing
the stats every few iterations or epochs."""

from __future__ import annotations

import time

from .plugin import Monitor, Plugin

__all__ = ["LossMonitor", "AccuracyMonitor", "TimeMonitor", "ThroughputMonitor", "ProgressMonitor", "Logger"]


def _batch_size(target) -> int:
    shape = getattr(target, "shape", None)
    return int(shape[0]) if shape else 1


class LossMonitor(Monitor):
    """``stats["loss"]``: the loss of every iteration (one host read each), averaged by batch size."""

    stat_name = "loss"

    def _get_value(self, input, target, output, loss):
        return float(loss), _batch_size(target)


class AccuracyMonitor(Monitor):
    """``stats["accuracy"]``: the fraction of ``output.argmax(1) == target`` (class scores against labels)."""

    stat_name = "accuracy"

    def _get_value(self, input, target, output, loss):
        n = _batch_size(target)
        if output.ndim < 2:
            raise ValueError(f"AccuracyMonitor: the output must hold class scores of shape (N, C, ...), got shape "
                             f"{list(output.shape)}; hint: register it only for classification models")
        correct = int((output.argmax(1) == target).sum())
        return correct / max(target.numel(), 1), n


class TimeMonitor(Monitor):
    """``stats["time"]``: seconds per iteration (wall clock between two iterations; on cuda the launches are
    asynchronous, so this is steady-state time once another plugin reads a value every iteration)."""

    stat_name = "time"

    def __init__(self, **kwargs):
        kwargs.setdefault("precision", 3)
        super().__init__(**kwargs)
        self._t = None

    def on_run_begin(self) -> None:
        self._t = time.perf_counter()

    def _get_value(self, input, target, output, loss):
        now = time.perf_counter()
        dt, self._t = now - self._t, now
        return dt, 1


class ThroughputMonitor(TimeMonitor):
    """``stats["samples_per_s"]``: samples (the target's first dimension) per second."""

    stat_name = "samples_per_s"

    def __init__(self, **kwargs):
        kwargs.setdefault("precision", 0)
        super().__init__(**kwargs)

    def _get_value(self, input, target, output, loss):
        dt, _ = super()._get_value(input, target, output, loss)
        n = _batch_size(target)
        return n / dt if dt > 0 else 0.0, dt

    # the epoch mean of a rate is samples over seconds: weights are the seconds (set by _get_value)


class ProgressMonitor(Plugin):
    """A tqdm bar per epoch showing the stats of the monitors registered before it (their running averages)."""

    def __init__(self, stats=("loss", "accuracy", "samples_per_s"), disable: bool = False, leave: bool = False,
                 desc: str = ""):
        super().__init__([(1, "iteration"), (1, "epoch")])
        self.desc = desc
        self.stats = tuple(stats)
        self.disable = disable
        self.leave = leave
        self._bar = None

    def _open(self):
        from tqdm import tqdm

        n = getattr(self.trainer.dataset, "__len__", None)
        total = n() if n is not None else None
        desc = f"{self.desc} epoch {self.trainer.epoch + 1}".strip()
        # opened at the epoch's first iteration (or the first after resuming), which update() then counts
        self._bar = tqdm(total=total, initial=self.trainer.epoch_batches - 1, desc=desc,
                         leave=self.leave, disable=self.disable)

    def iteration(self, i, input, target, output, loss) -> None:
        if self._bar is None:
            self._open()
        self._bar.update(1)
        shown = {}
        for name in self.stats:
            s = self.trainer.stats.get(name)
            if s and "last" in s:
                v = s.get("running_avg", s["last"])
                shown[name] = s.get("format", "{:.4f}").format(v)
        if shown:
            self._bar.set_postfix(shown, refresh=False)

    def epoch(self, epoch) -> None:
        self.on_run_end()

    def on_run_end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Logger(Plugin):
    """Prints one line of stats (``fields``: names in ``trainer.stats``; dotted for nested ones such as
    ``validation.loss``) every ``interval``: ``[(1, "epoch")]`` by default. ``write``: the print function
    (default ``tqdm.write``, which keeps progress bars intact)."""

    def __init__(self, fields=("loss", "accuracy", "validation.loss", "validation.accuracy"), interval=None,
                 write=None):
        super().__init__(interval or [(1, "epoch")])
        self.fields = tuple(fields)
        self.write = write

    def _line(self, prefix, at_epoch):
        parts = [prefix]
        for name in self.fields:
            v = _lookup(self.trainer.stats, name)
            if v is None:
                continue
            if isinstance(v, dict):  # a monitor: the epoch's mean at epoch ends, else the running average
                fmt = v.get("format", "{:.4f}")
                if at_epoch and v.get("epoch_means"):
                    v = v["epoch_means"][-1]
                else:
                    v = v.get("running_avg", v.get("last"))
                if v is None:
                    continue
                parts.append(f"{name} {fmt.format(v)}")
            else:
                parts.append(f"{name} {float(v):.4f}")
        return " | ".join(parts)

    def _emit(self, line):
        if self.write is not None:
            self.write(line)
            return
        from tqdm import tqdm

        tqdm.write(line)

    def iteration(self, i, *args) -> None:
        self._emit(self._line(f"iteration {i}", False))

    def epoch(self, epoch) -> None:
        self._emit(self._line(f"epoch {epoch}", True))


def _lookup(stats, dotted):
    v = stats
    for part in dotted.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v
