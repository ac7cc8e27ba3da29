"""``TensorBoardLogger``: writes the trainer's stats to TensorBoard through ``autograd.utils.tensorboard``."""

from __future__ import annotations

from .plugin import Plugin

__all__ = ["TensorBoardLogger"]


class TensorBoardLogger(Plugin):
    """Logs to a ``SummaryWriter`` (or one it opens on ``log_dir``): every ``log_every`` iterations the
    monitors' last values as ``train/<stat>``, the learning rate of each parameter group (``lr/group<k>``)
    and the gradient norm when clipping publishes it; after each epoch the epoch means (``epoch/<stat>``),
    the evaluation metrics (``validation/<metric>``) and, with ``histograms=True``, a histogram of every
    parameter. The global step is the iteration count (epochs for the epoch summaries: ``epoch/...``,
    ``validation/...`` use the iteration count too, so all curves share one x axis). Register it after the
    plugins whose stats it logs."""

    def __init__(self, writer=None, log_dir: str | None = None, log_every: int = 10, histograms: bool = False):
        super().__init__([(log_every, "iteration"), (1, "epoch")])
        if writer is None:
            from autograd.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(log_dir)
        self.writer = writer
        self.histograms = histograms

    def iteration(self, i, *args) -> None:
        w, stats = self.writer, self.trainer.stats
        for name, s in stats.items():
            if isinstance(s, dict) and "epoch_means" in s and "last" in s:  # a Monitor
                w.add_scalar(f"train/{name}", s["last"], i)
        if "grad_norm" in stats:
            w.add_scalar("train/grad_norm", float(stats["grad_norm"]["last"]), i)
        for k, group in enumerate(self.trainer.optimizer.param_groups):
            w.add_scalar(f"lr/group{k}", float(group["lr"]), i)

    def epoch(self, epoch) -> None:
        w, t = self.writer, self.trainer
        step = t.iterations
        for name, s in t.stats.items():
            if isinstance(s, dict) and s.get("epoch_means"):
                w.add_scalar(f"epoch/{name}", s["epoch_means"][-1], step)
            elif isinstance(s, dict) and name not in ("grad_norm", "early_stopping"):
                for metric, v in s.items():  # an evaluation: {"loss": ..., "accuracy": ...}
                    if isinstance(v, int | float):
                        w.add_scalar(f"{name}/{metric}", v, step)
        if self.histograms:
            for pname, p in t.model.named_parameters():
                w.add_histogram(f"parameters/{pname}", p.detach(), step)
                if p.grad is not None:
                    w.add_histogram(f"gradients/{pname}", p.grad.detach(), step)
        w.flush()

    def on_run_end(self) -> None:
        self.writer.flush()
