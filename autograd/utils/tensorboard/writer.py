"""``SummaryWriter``: PyTorch's ``torch.utils.tensorboard.SummaryWriter`` API, writing TensorBoard event files
through the ``tensorboard`` package (its protos and its event file writer: TFRecord framing, CRC32C).

>>> with SummaryWriter("runs/exp1") as w:
...     for step in range(100):
...         w.add_scalar("loss", loss, step)
$ tensorboard --logdir runs

Values may be Python numbers, NumPy arrays, ``autograd.Tensor`` on any device, or tkernels Arrays.
``add_embedding`` (the projector plugin) and ``add_mesh``/``add_video``/``add_audio``/``add_pr_curve`` are not
provided.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from . import summary as _s

__all__ = ["SummaryWriter"]


def _need_tensorboard():
    try:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError("SummaryWriter needs the tensorboard package: pip install tensorboard (or the project's "
                          f"`tensorboard` extra: pip install -e '.[tensorboard]'); importing it failed: {e}") from None
    return EventFileWriter


class SummaryWriter:
    """Writes events for TensorBoard to ``log_dir`` (default ``runs/<Mon DD_HH-MM-SS>_<host><comment>``)."""

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = ""):
        event_file_writer = _need_tensorboard()
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._writer = event_file_writer(self.log_dir, max_queue, flush_secs, filename_suffix)
        self._subwriters: dict = {}
        self._closed = False
        if purge_step is not None:  # TensorBoard drops the events at steps >= purge_step written before this
            from tensorboard.compat.proto import event_pb2

            self._writer.add_event(event_pb2.Event(step=purge_step, wall_time=time.time(),
                                                   session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))

    # ------------------------------------------------------------------------------------------ plumbing
    def get_logdir(self) -> str:
        return self.log_dir

    def _check_open(self, who):
        if self._closed:
            raise RuntimeError(f"SummaryWriter.{who}: the writer for {self.log_dir!r} is closed; hint: make a new "
                               f"SummaryWriter")

    def _event(self, who, global_step, walltime, **fields):
        from tensorboard.compat.proto import event_pb2

        self._check_open(who)
        ev = event_pb2.Event(wall_time=time.time() if walltime is None else float(walltime), **fields)
        if global_step is not None:
            ev.step = int(_s.to_numpy(global_step, f"SummaryWriter.{who}").reshape(()))
        self._writer.add_event(ev)

    def _summary(self, who, summary, global_step, walltime):
        self._event(who, global_step, walltime, summary=summary)

    # ------------------------------------------------------------------------------------------ API
    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One number (a Python number, or a one-element array or Tensor) under ``tag`` at ``global_step``."""
        self._summary("add_scalar", _s.scalar(tag, scalar_value, new_style), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Several curves in one chart: each ``tag`` goes to its own run ``<log_dir>/<main_tag>_<tag>``."""
        self._check_open("add_scalars")
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            sub = self._subwriters.get(path)
            if sub is None:
                sub = self._subwriters[path] = _need_tensorboard()(path, self.max_queue, self.flush_secs,
                                                                   self.filename_suffix)
            from tensorboard.compat.proto import event_pb2

            ev = event_pb2.Event(wall_time=float(walltime), summary=_s.scalar(main_tag, value))
            if global_step is not None:
                ev.step = int(global_step)
            sub.add_event(ev)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """A histogram of ``values`` (``bins``: "tensorflow" for TensorFlow's buckets, or what np.histogram
        takes: an int, a sequence of edges, "auto", "fd"...)."""
        self._summary("add_histogram", _s.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,  # noqa: A002
                          global_step=None, walltime=None) -> None:
        """A histogram already counted: ``bucket_limits[i]`` is bucket i's right edge."""
        self._summary("add_histogram_raw", _s.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                                            bucket_counts), global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """An image: uint8 in [0, 255] or floats in [0, 1]; 1, 3 or 4 channels; ``dataformats`` CHW, HWC, HW."""
        self._summary("add_image", _s.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid (up to 8 per row)."""
        from tensorboard.compat.proto import summary_pb2

        grid = _s.image_grid(img_tensor, dataformats)
        self._summary("add_images", summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, image=_s.image_proto(grid))]), global_step, walltime)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True, walltime=None) -> None:
        """A matplotlib figure (or a list of them, shown as a grid), rendered with the Agg canvas."""
        import numpy as np

        figures = figure if isinstance(figure, list | tuple) else [figure]
        images = [_s.figure_to_image(f) for f in figures]
        if close:
            import matplotlib.pyplot as plt

            for f in figures:
                plt.close(f)
        if len(images) == 1:
            self.add_image(tag, images[0], global_step, walltime, dataformats="HWC")
        else:
            h = max(i.shape[0] for i in images)
            w = max(i.shape[1] for i in images)
            batch = np.zeros((len(images), h, w, 4), np.uint8)
            for k, im in enumerate(images):
                batch[k, :im.shape[0], :im.shape[1]] = im
            self.add_images(tag, batch, global_step, walltime, dataformats="NHWC")

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Text (Markdown) for the TEXT tab."""
        self._summary("add_text", _s.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """One trial for the HPARAMS tab: its hyperparameters and final metrics, in the sub-run ``run_name``
        (default: the current time), as PyTorch does."""
        self._check_open("add_hparams")
        experiment, start, end = _s.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(run) as w:
            for s in (experiment, start, end):
                w._summary("add_hparams", s, None, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """The graph of ``model(*input_to_model)`` for the GRAPHS tab, read from the autograd graph of one
        forward pass (inputs become leaves that require grad for the pass; ``model.named_parameters()``, when
        the model has it, names the parameters). Once ``autograd.jit`` tracing exists, this should draw its
        graph instead: the autograd graph shows the differentiable ops only."""
        import autograd as ag

        self._check_open("add_graph")
        inputs = () if input_to_model is None else input_to_model
        inputs = inputs if isinstance(inputs, tuple | list) else (inputs,)
        leaves = []
        for k, x in enumerate(inputs):
            if isinstance(x, ag.Tensor) and x.is_floating_point():
                x = x.detach().requires_grad_(True)
            leaves.append((f"input/input.{k}", x))
        with ag.enable_grad():
            out = model(*[x for _, x in leaves])
        outs = [o for o in (out if isinstance(out, tuple | list) else (out,)) if isinstance(o, ag.Tensor)]
        if not outs:
            raise ValueError(f"SummaryWriter.add_graph: {type(model).__name__} returned {type(out).__name__}; "
                             f"add_graph needs a Tensor (or a tuple of Tensors) as output")
        params = list(model.named_parameters()) if hasattr(model, "named_parameters") else []
        gd = _s.graph(outs, [(n, x) for n, x in leaves if isinstance(x, ag.Tensor)], params)
        if verbose:
            print(gd)
        self._event("add_graph", None, None, graph_def=gd.SerializeToString())

    def flush(self) -> None:
        """Write what is queued to disk."""
        if self._closed:
            return
        self._writer.flush()
        for w in self._subwriters.values():
            w.flush()

    def close(self) -> None:
        """Flush and close the event files (writing afterwards raises)."""
        if self._closed:
            return
        self._writer.close()
        for w in self._subwriters.values():
            w.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
