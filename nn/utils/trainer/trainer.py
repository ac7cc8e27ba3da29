"""``Trainer``: the training loop as an object, with plugins (PyTorch 0.1's ``torch.utils.trainer`` design).

>>> trainer = Trainer(model, F.cross_entropy, opt, loader, device="cuda")
>>> trainer.register_plugin(LossMonitor()); trainer.register_plugin(ProgressMonitor())
>>> trainer.run(epochs=10)

One iteration takes a batch ``(input, target)`` from ``dataset`` (any iterable of batches, usually a
``DataLoader``), moves it to ``device``, computes ``loss = criterion(model(input), target)``, calls
``backward`` and steps the optimizer. Plugins observe and steer it.

Note [plugin queues]. A plugin names when it runs in ``trigger_interval``: a list of ``(n, unit)`` pairs, unit
one of ``"batch"`` (before an iteration: ``plugin.batch(i, input, target)``), ``"iteration"`` (after it:
``plugin.iteration(i, input, target, output, loss)``), ``"update"`` (after it, once the parameters changed:
``plugin.update(i, model)``) and ``"epoch"`` (after an epoch: ``plugin.epoch(epoch)``). Each unit has a
heap of ``(next time, registration order, plugin)``; when the counter reaches a plugin's time, the plugin
runs and is pushed back ``n`` later. Iterations are counted over the whole run (the first is 1), epochs too.
Plugins registered for the same time run in registration order.

Note [the step]. Some plugins change the step itself rather than watch it; they say so by setting fields of
the trainer when registered (``register(trainer)``): ``autocast`` (a function returning the context to run
the forward pass in: ``MixedPrecision``), ``scaler`` (a ``GradScaler``), ``accumulation_steps``
(``GradientAccumulation``), ``capture`` (``GraphCapture``), and ``before_step`` hooks (run on the
gradients just before the optimizer steps: ``GradientClipping``). With none of them, an iteration is exactly
the loop a user writes by hand (``zero_grad``, forward, loss, ``backward``, ``step``), and gives the same
parameters bit for bit (a test checks it).

Note [stopping and resuming]. A plugin may set ``trainer.stop_training = True`` (``EarlyStopping``): the run
ends after the current iteration's plugins. ``state_dict()`` holds everything a run depends on (model,
optimizer, scaler, plugin states such as schedulers and the best score, the counters, the global random state
and that of the loader's generator when the epoch started, and how many batches of the epoch are done);
``load_state_dict`` restores it, and the next ``run`` continues where the saved run was, skipping the batches
of the interrupted epoch that were already trained on: the result equals an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import heapq
import json

import autograd as ag
from autograd import graphs as _graphs
from nn.optim import LBFGS

__all__ = ["Trainer"]

UNITS = ("batch", "iteration", "update", "epoch")


def needs_closure(optimizer) -> bool:
    """Whether ``optimizer.step`` must be given a closure re-evaluating the loss (LBFGS, or an optimizer that
    says ``requires_closure = True``)."""
    return bool(getattr(optimizer, "requires_closure", isinstance(optimizer, LBFGS)))


def _generator_of(dataset):
    """The ``ag.Generator`` that shuffles ``dataset`` (a DataLoader's sampler's), or None."""
    sampler = getattr(dataset, "sampler", None)
    batch_sampler = getattr(dataset, "batch_sampler", None)
    for s in (sampler, getattr(batch_sampler, "sampler", None)):
        g = getattr(s, "generator", None)
        if isinstance(g, ag.Generator):
            return g
    return None


class Trainer:
    """Runs ``model``, ``criterion`` and ``optimizer`` over ``dataset`` for some epochs; see the module docstring.

    ``device``: where batches go (``None``: left where the loader put them). ``stats`` is the shared board
    where monitors publish (``trainer.stats["loss"]["last"]``...)."""

    def __init__(self, model=None, criterion=None, optimizer=None, dataset=None, *, device=None):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.dataset = dataset
        self.device = None if device is None else ag.device(device)
        self.iterations = 0  # iterations done over the whole run
        self.epoch = 0  # epochs completed
        self.epoch_batches = 0  # batches of the current epoch done
        self.stats: dict = {}
        self.plugins: list = []
        self.plugin_queues: dict = {u: [] for u in UNITS}
        self.stop_training = False
        # the step (Note [the step])
        self.autocast = None
        self.scaler = None
        self.accumulation_steps = 1
        self.capture = False
        self.before_step: list = []
        self._graphs: dict = {}  # batch signature -> (graph, static input, static target, output, loss)
        self._micro = 0  # backward passes since the last optimizer step
        self._epoch_rng = None  # (global state, loader generator state) when the current epoch began
        self._skip = 0  # batches to skip at the start of the next epoch (resuming mid-epoch)

    # ------------------------------------------------------------------------------------------ plugins
    def register_plugin(self, plugin) -> None:
        """Attach ``plugin``: calls ``plugin.register(self)``, then queues it on its ``trigger_interval``."""
        intervals = getattr(plugin, "trigger_interval", None)
        if intervals is None:
            raise TypeError(f"Trainer.register_plugin: {type(plugin).__name__} has no trigger_interval; hint: "
                            f"subclass nn.utils.trainer.Plugin and pass [(n, unit), ...] to its __init__")
        if isinstance(intervals, tuple):
            intervals = [intervals]
        for n, unit in intervals:
            if unit not in UNITS:
                raise ValueError(f"Trainer.register_plugin: {type(plugin).__name__} asks for unit {unit!r}; the "
                                 f"units are {', '.join(UNITS)}")
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"Trainer.register_plugin: {type(plugin).__name__}'s interval for {unit!r} "
                                 f"must be a positive int, got {n!r}")
            if not callable(getattr(plugin, unit, None)):
                raise TypeError(f"Trainer.register_plugin: {type(plugin).__name__} is triggered on {unit!r} but "
                                f"has no {unit}() method")
        plugin.trigger_interval = list(intervals)
        plugin.register(self)
        self.plugins.append(plugin)
        for n, unit in intervals:
            queue = self.plugin_queues[unit]
            heapq.heappush(queue, (self._counter(unit) + n, len(self.plugins), plugin))

    def _counter(self, unit) -> int:
        return self.epoch if unit == "epoch" else self.iterations

    def call_plugins(self, unit: str, time: int, *args) -> None:
        """Run every plugin of ``unit`` due at ``time`` (Note [plugin queues])."""
        queue = self.plugin_queues[unit]
        while queue and queue[0][0] <= time:
            _, order, plugin = queue[0]
            n = next(k for k, u in plugin.trigger_interval if u == unit)
            # rescheduled before it runs, so a checkpoint taken by the plugin saves the queue as it will be
            heapq.heapreplace(queue, (time + n, order, plugin))
            getattr(plugin, unit)(time, *args)

    # ------------------------------------------------------------------------------------------ the loop
    def run(self, epochs: int = 1) -> None:
        """Train until ``epochs`` epochs are complete in all (a trainer restored from a checkpoint that had
        done 3 continues with the 4th), or until a plugin sets ``stop_training``."""
        if self.model is None or self.criterion is None or self.optimizer is None or self.dataset is None:
            missing = [n for n in ("model", "criterion", "optimizer", "dataset") if getattr(self, n) is None]
            raise ValueError(f"Trainer.run: {', '.join(missing)} not set; hint: Trainer(model, criterion, "
                             f"optimizer, dataset)")
        self.stop_training = False
        for p in self.plugins:
            p.on_run_begin()
        while self.epoch < epochs and not self.stop_training:
            self.train()
            if self.stop_training and self.epoch_batches:  # stopped inside the epoch: the epoch is not complete
                break
            self.epoch += 1
            self.epoch_batches = 0
            self._epoch_rng = None
            self.call_plugins("epoch", self.epoch)
        for p in self.plugins:
            p.on_run_end()

    def train(self) -> None:
        """One epoch over ``dataset`` (or the rest of it, after resuming mid-epoch)."""
        gen = _generator_of(self.dataset)
        if self._epoch_rng is None:
            self._epoch_rng = (ag.get_rng_state(), gen.get_state() if gen is not None else None)
        else:  # resuming: the epoch's batches come in the order they came when it began
            ag.set_rng_state(self._epoch_rng[0])
            if gen is not None and self._epoch_rng[1] is not None:
                gen.set_state(self._epoch_rng[1])
        skip, self._skip = self._skip, 0
        batches = iter(self.dataset)
        for _ in range(skip):
            if next(batches, None) is None:
                break
        if skip:
            ag.set_rng_state(self._resume_rng)  # the random state the saved run had reached
        n_batches = _length(self.dataset)
        for k, data in enumerate(batches, skip + 1):
            inputs, target = self._unpack(data)
            i = self.iterations + 1
            self.call_plugins("batch", i, inputs, target)
            last_of_epoch = n_batches is not None and k == n_batches
            output, loss = self.train_step(inputs, target, last_of_epoch)
            self.iterations = i
            self.epoch_batches = k
            self.call_plugins("iteration", i, inputs, target, output, loss)
            self.call_plugins("update", i, self.model)
            if self.stop_training:
                return
        if self._micro:  # a window of gradient accumulation left open by an unsized loader
            self._optimizer_step()

    def _unpack(self, data):
        if not isinstance(data, list | tuple) or len(data) != 2:
            raise ValueError(f"Trainer: a batch must be (input, target), got {type(data).__name__}"
                             + (f" of {len(data)}" if isinstance(data, list | tuple) else "")
                             + "; hint: a DataLoader over a TensorDataset(x, y) gives pairs")
        inputs, target = data
        if self.device is not None:
            inputs, target = _to(inputs, self.device), _to(target, self.device)
        return inputs, target

    def train_step(self, inputs, target, last_of_epoch: bool = False):
        """One iteration on a batch (Note [the step]); returns ``(output, loss)``, detached."""
        if self.capture:
            return self._captured_step(inputs, target)
        if needs_closure(self.optimizer):
            return self._closure_step(inputs, target)
        if self._micro == 0:
            self.optimizer.zero_grad()
        output, loss = self._forward_backward(inputs, target)
        if self._micro >= self.accumulation_steps or last_of_epoch:
            self._optimizer_step()
        return output.detach(), loss.detach()

    def _forward_backward(self, inputs, target):
        with self.autocast() if self.autocast is not None else contextlib.nullcontext():
            output = self.model(inputs)
            loss = self.criterion(output, target)
        scaled = loss / self.accumulation_steps if self.accumulation_steps > 1 else loss
        if self.scaler is not None:
            scaled = self.scaler.scale(scaled)
        scaled.backward()
        self._micro += 1
        return output, loss

    def _optimizer_step(self) -> None:
        if self.scaler is not None and self.before_step:
            self.scaler.unscale_(self.optimizer)  # hooks (clipping) see the true gradients
        for hook in self.before_step:
            hook(self)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self._micro = 0

    def _closure_step(self, inputs, target):
        """Optimizers that re-evaluate the loss (LBFGS): ``step(closure)``; the first evaluation is reported."""
        seen = []

        def closure():
            self.optimizer.zero_grad()
            output, loss = self._forward_backward(inputs, target)
            self._micro = 0
            if not seen:
                seen.append((output.detach(), loss.detach()))
            return loss

        self.optimizer.step(closure)
        return seen[0]

    def _captured_step(self, inputs, target):
        """``GraphCapture``: the first batch of each shape runs the step once for real while recording it; the
        next batches of that shape are copied into its static inputs and replay it."""
        key = tuple((tuple(t.shape), str(t.dtype), str(t.device)) for t in (inputs, target))
        entry = self._graphs.get(key)
        if entry is None:
            graph = _graphs.Graph()
            static_x, static_y = inputs.detach().clone(), target.detach().clone()
            with _graphs.graph(graph):
                self.optimizer.zero_grad()
                output, loss = self._forward_backward(static_x, static_y)
                self._optimizer_step()
            entry = self._graphs[key] = (graph, static_x, static_y, output.detach(), loss.detach())
        else:
            graph, static_x, static_y, _, _ = entry
            static_x.copy_(inputs)
            static_y.copy_(target)
            graph.replay()
        return entry[3], entry[4]

    # ------------------------------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Everything a resumed run needs (Note [stopping and resuming]); ``nn.save`` writes it."""
        if self._micro:
            raise RuntimeError("Trainer.state_dict: called inside a window of gradient accumulation (gradients of "
                               f"{self._micro} batch(es) not yet applied); hint: checkpoint on an interval that is "
                               f"a multiple of accumulation_steps={self.accumulation_steps}, or at epoch ends")
        gen = _generator_of(self.dataset)
        epoch_rng = self._epoch_rng if self.epoch_batches else None
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "trainer": {"iterations": self.iterations, "epoch": self.epoch, "epoch_batches": self.epoch_batches,
                        # big ints (PCG64 states) travel as JSON text
                        "rng": json.dumps(ag.get_rng_state()),
                        "epoch_rng": json.dumps(epoch_rng) if epoch_rng is not None else "",
                        "loader_rng": json.dumps(gen.get_state()) if gen is not None else "",
                        "queues": {u: [[t, o] for t, o, _ in q] for u, q in self.plugin_queues.items()}},
            "plugins": {str(k): p.state_dict() for k, p in enumerate(self.plugins)},
        }
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()``: the same plugins must be registered, in the same order."""
        try:
            t = state["trainer"]
            plugins = state["plugins"]
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (KeyError, TypeError) as e:
            raise ValueError(f"Trainer.load_state_dict: not a Trainer state dict (missing {e})") from None
        if len(plugins) != len(self.plugins):
            raise ValueError(f"Trainer.load_state_dict: the state holds {len(plugins)} plugin state(s), this "
                             f"trainer has {len(self.plugins)} plugin(s); hint: register the same plugins in the "
                             f"same order before loading")
        if self.scaler is not None and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])
        for k, p in enumerate(self.plugins):
            p.load_state_dict(plugins[str(k)])
        self.iterations, self.epoch = int(t["iterations"]), int(t["epoch"])
        self.epoch_batches = int(t["epoch_batches"])
        rng = json.loads(t["rng"])
        ag.set_rng_state(rng)
        gen = _generator_of(self.dataset)
        if gen is not None and t["loader_rng"]:
            gen.set_state(json.loads(t["loader_rng"]))
        if self.epoch_batches:  # mid-epoch: replay the epoch's shuffle, skip what was done
            self._epoch_rng = tuple(json.loads(t["epoch_rng"]))
            self._skip = self.epoch_batches
            self._resume_rng = rng
        else:
            self._epoch_rng = None
        for unit, q in t["queues"].items():
            times = {int(o): int(tm) for tm, o in q}
            self.plugin_queues[unit] = [(times.get(o, tm), o, p) for tm, o, p in self.plugin_queues[unit]]
            heapq.heapify(self.plugin_queues[unit])
        self._micro = 0
        self._graphs.clear()


def _to(x, device):
    if isinstance(x, ag.Tensor):
        return x.to(device)
    if isinstance(x, list | tuple):
        return type(x)(_to(v, device) for v in x)
    return x


def _length(dataset):
    try:
        return len(dataset)
    except TypeError:
        return None
