"""nn.utils.trainer: the Trainer gives the parameters of the loop a user writes by hand, bit for bit, with and
without each plugin (SGD with momentum and AdamW, dropout and a shuffling loader, on cpu and interpreted cuda);
a checkpoint resumed (at an epoch end or mid-epoch) ends where the uninterrupted run ends; the monitors, the
evaluation, early stopping and the logger publish the right numbers; bad use raises naming the plugin."""

import contextlib

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812
from nn.utils import trainer as T  # noqa: N812

DEVICES = ["cpu", "cuda"]
N, D, C, B = 45, 5, 3, 8  # 45 samples in batches of 8: a short last batch every epoch


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = rng.integers(0, C, N)
    return nn.data.TensorDataset(ag.from_numpy(x), ag.from_numpy(y))


def _setup(dev, opt="adamw", dropout=True):
    ag.manual_seed(0)
    layers = [nn.Linear(D, 12), nn.ReLU()] + ([nn.Dropout(0.25)] if dropout else []) + [nn.Linear(12, C)]
    model = nn.Sequential(*layers).to(dev)
    if opt == "adamw":
        o = nn.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    elif opt == "sgd":
        o = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        o = nn.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)
    loader = nn.data.DataLoader(_data(), batch_size=B, shuffle=True, generator=ag.Generator().manual_seed(7))
    return model, o, loader


def _params(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def _assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def _by_hand(dev, opt_name, epochs, *, clip=None, accumulate=1, amp=None, scheduler=None, evaluate=None,
             dropout=True):
    """The loop as a user writes it (``evaluate``: a loader to evaluate on after each epoch; iterating a loader
    draws its base seed from the global generator, in PyTorch as here, so evaluating changes later dropout)."""
    model, opt, loader = _setup(dev, opt_name, dropout)
    sched = scheduler(opt) if scheduler else None
    scaler = nn.amp.GradScaler(dev) if amp == ag.float16 else None
    n_batches = len(loader)
    for _ in range(epochs):
        for k, (x, y) in enumerate(loader, 1):
            x, y = x.to(dev), y.to(dev)
            if opt_name == "lbfgs":
                def closure(x=x, y=y):
                    opt.zero_grad()
                    loss = F.cross_entropy(model(x), y)
                    loss.backward()
                    return loss
                opt.step(closure)
                continue
            if (k - 1) % accumulate == 0:
                opt.zero_grad()
            with ag.autocast(dev, dtype=amp) if amp else contextlib.nullcontext():
                loss = F.cross_entropy(model(x), y)
            if accumulate > 1:
                loss = loss / accumulate
            (scaler.scale(loss) if scaler else loss).backward()
            if k % accumulate and k != n_batches:
                continue
            if clip:
                if scaler:
                    scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
        if evaluate is not None:
            model.eval()
            with ag.no_grad():
                for x, y in evaluate:
                    float(F.cross_entropy(model(x.to(dev)), y.to(dev)))
            model.train()
        if sched:
            sched.step()
    return _params(model)


def _trainer(dev, opt_name, plugins=(), *, device=None, dropout=True):
    model, opt, loader = _setup(dev, opt_name, dropout)
    t = T.Trainer(model, F.cross_entropy, opt, loader, device=device or dev)
    for p in plugins(opt) if callable(plugins) else plugins:
        t.register_plugin(p)
    return t


def _val():
    return nn.data.DataLoader(_data(seed=1), batch_size=16)


def _observers(tmp_path, dev):
    return [T.LossMonitor(), T.AccuracyMonitor(), T.TimeMonitor(), T.ThroughputMonitor(),
            T.ProgressMonitor(disable=True), T.Evaluation(_val()), T.Checkpoint(tmp_path / "ck"),
            T.Logger(write=lambda line: None), T.EarlyStopping(patience=50)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_same_parameters_as_the_hand_written_loop(dev, opt, tmp_path):
    expect = _by_hand(dev, opt, 2)
    t = _trainer(dev, opt)
    t.run(2)
    assert (t.epoch, t.iterations) == (2, 12)
    _assert_same(_params(t.model), expect)
    # watching plugins change nothing (the evaluation does what a hand-written evaluation does)
    t = _trainer(dev, opt, _observers(tmp_path, dev))
    t.run(2)
    _assert_same(_params(t.model), _by_hand(dev, opt, 2, evaluate=_val()))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
@pytest.mark.parametrize("kind", ["clip", "accumulate", "scheduler", "capture"])
def test_step_plugins_match_the_hand_written_loop(dev, opt, kind):
    epochs = 2
    if kind == "clip":
        expect = _by_hand(dev, opt, epochs, clip=0.05)
        plugins = [T.GradientClipping(max_norm=0.05)]
    elif kind == "accumulate":
        expect = _by_hand(dev, opt, epochs, accumulate=4)
        plugins = [T.GradientAccumulation(4)]
    elif kind == "scheduler":
        sched = lambda o: nn.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.3)
        expect = _by_hand(dev, opt, epochs, scheduler=sched)
        plugins = lambda o: [T.LRSchedulerStep(sched(o))]
    else:  # dropout on cuda keeps its mask's random state on the host: it refuses to be captured
        expect = _by_hand(dev, opt, epochs, dropout=dev == "cpu")
        plugins = [T.GraphCapture()]
    t = _trainer(dev, opt, plugins, dropout=kind != "capture" or dev == "cpu")
    t.run(epochs)
    _assert_same(_params(t.model), expect)
    if kind == "clip":
        assert float(t.stats["grad_norm"]["last"]) > 0.05  # the clipping really had something to clip
    if kind == "capture":
        assert len(t._graphs) == 2  # full batches and the short last one: one graph each


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_mixed_precision_matches_the_hand_written_loop(dev, opt):
    dtype = ag.float16 if dev == "cuda" else ag.bfloat16
    expect = _by_hand(dev, opt, 1, amp=dtype, clip=1.0)
    t = _trainer(dev, opt, [T.MixedPrecision(dtype), T.GradientClipping(max_norm=1.0)])
    t.run(1)
    assert (t.scaler is not None) == (dtype == ag.float16)
    _assert_same(_params(t.model), expect)
    plain = _by_hand(dev, opt, 1, clip=1.0)
    assert any(not np.array_equal(a, b) for a, b in zip(plain, expect))  # autocast did change the arithmetic


def test_lbfgs_steps_with_a_closure():
    expect = _by_hand("cpu", "lbfgs", 1)
    t = _trainer("cpu", "lbfgs", [T.LossMonitor()])
    t.run(1)
    _assert_same(_params(t.model), expect)
    assert np.isfinite(t.stats["loss"]["last"])


@pytest.mark.filterwarnings("ignore:Checkpoint. the metric")  # mid-epoch: checkpoints before the first evaluation
@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("where", ["epoch", "mid-epoch"])
def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(dev, where, tmp_path):
    sched = lambda o: nn.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)
    val = nn.data.DataLoader(_data(seed=1), batch_size=16)
    interval = [(1, "epoch")] if where == "epoch" else [(3, "iteration")]

    def plugins(o):
        return [T.LossMonitor(), T.Evaluation(val), T.LRSchedulerStep(sched(o)),
                T.Checkpoint(tmp_path / "ck", interval=interval)]

    full = _trainer(dev, "adamw", plugins)
    full.run(3)
    expect = _params(full.model)
    expect_losses = full.stats["loss"]["epoch_means"]

    # the interrupted run: stops after 1 epoch (or after iteration 9, inside the second epoch)
    part = _trainer(dev, "adamw", plugins)

    class Stop(T.Plugin):
        def __init__(self):
            super().__init__([(9, "iteration")] if where == "mid-epoch" else [(1, "epoch")])

        def iteration(self, i, *args):
            self.trainer.stop_training = True

        def epoch(self, e):
            self.trainer.stop_training = True

    part.register_plugin(Stop())
    part.run(3)
    assert (part.epoch, part.epoch_batches) == ((1, 3) if where == "mid-epoch" else (1, 0))

    resumed = _trainer(dev, "adamw", plugins)
    resumed.register_plugin(T.Plugin())  # the same number of plugins as the saved trainer (Stop is not a state)
    ag.manual_seed(12345)  # the resumed process's random state is whatever it is: the checkpoint restores it
    T.Checkpoint.resume(resumed, tmp_path / "ck" / "last.safetensors")
    assert resumed.iterations == (9 if where == "mid-epoch" else 6)
    resumed.run(3)
    assert (resumed.epoch, resumed.iterations) == (3, 18)
    _assert_same(_params(resumed.model), expect)
    assert resumed.optimizer.param_groups[0]["lr"] == full.optimizer.param_groups[0]["lr"]
    np.testing.assert_allclose(resumed.stats["loss"]["epoch_means"], expect_losses, rtol=1e-12)


def test_checkpoint_keeps_the_best(tmp_path):
    scores = iter([3.0, 1.0, 2.0])

    class Score(T.Plugin):
        def __init__(self):
            super().__init__([(1, "epoch")])

        def epoch(self, e):
            self.trainer.stats["validation"] = {"loss": next(scores)}

    t = _trainer("cpu", "sgd", [Score(), T.Checkpoint(tmp_path, save_last=True)])
    t.run(3)
    best = nn.load(tmp_path / "best.safetensors")
    last = nn.load(tmp_path / "last.safetensors")
    assert best["trainer"]["epoch"] == 2 and best["plugins"]["1"]["best"] == 1.0
    assert last["trainer"]["epoch"] == 3
    assert t.plugins[1].best == 1.0


def test_monitors_publish_the_numbers():
    t = _trainer("cpu", "sgd", [T.LossMonitor(smoothing=0.5), T.AccuracyMonitor()])
    losses, accs, sizes = [], [], []

    class Watch(T.Plugin):
        def __init__(self):
            super().__init__([(1, "iteration")])

        def iteration(self, i, x, y, out, loss):
            losses.append(float(loss))
            accs.append(float((out.argmax(1) == y).float().mean()))
            sizes.append(len(y))
            assert self.trainer.stats["loss"]["last"] == losses[-1]

    t.register_plugin(Watch())
    t.run(1)
    s = t.stats["loss"]
    assert s["epoch_means"] == [pytest.approx(np.average(losses, weights=sizes), rel=1e-12)]
    avg = losses[0]
    for v in losses[1:]:
        avg = 0.5 * avg + 0.5 * v
    assert s["running_avg"] == pytest.approx(avg, rel=1e-12)
    assert t.stats["accuracy"]["epoch_means"][0] == pytest.approx(np.average(accs, weights=sizes), rel=1e-6)


def test_evaluation_and_early_stopping():
    val = nn.data.DataLoader(_data(seed=1), batch_size=16)
    t = _trainer("cpu", "sgd", [T.Evaluation(val)])
    t.run(1)
    model = t.model
    model.eval()
    x, y = _data(seed=1).tensors
    with ag.no_grad():
        out = model(x)
    assert t.stats["validation"]["loss"] == pytest.approx(float(F.cross_entropy(out, y)), rel=1e-5)
    assert t.stats["validation"]["accuracy"] == pytest.approx(float((out.argmax(1) == y).float().mean()))
    assert model.training is False or True  # Evaluation restores the mode it found (checked below)
    model.train()
    t.run(2)
    assert model.training

    # a metric that never improves stops the run after `patience` epochs
    class Flat(T.Plugin):
        def __init__(self):
            super().__init__([(1, "epoch")])

        def epoch(self, e):
            self.trainer.stats["validation"] = {"loss": 1.0}

    t = _trainer("cpu", "sgd", [Flat(), T.EarlyStopping(patience=2)])
    t.run(10)
    assert t.epoch == 3 and t.stats["early_stopping"]["stopped_at"] == ("epoch", 3)


def test_plugin_schedule_and_order():
    calls = []

    class Rec(T.Plugin):
        def __init__(self, name, interval):
            super().__init__(interval)
            self.name = name

        def batch(self, i, x, y):
            calls.append((self.name, "batch", i))

        def iteration(self, i, *args):
            calls.append((self.name, "iteration", i))

        def epoch(self, e):
            calls.append((self.name, "epoch", e))

    t = _trainer("cpu", "sgd", [Rec("a", [(2, "iteration"), (1, "epoch")]), Rec("b", [(3, "batch")])])
    t.run(2)
    assert [c for c in calls if c[0] == "a" and c[1] == "iteration"] == [("a", "iteration", i) for i in range(2, 13, 2)]
    assert [c[2] for c in calls if c[0] == "b"] == [3, 6, 9, 12]
    assert [c for c in calls if c[1] == "epoch"] == [("a", "epoch", 1), ("a", "epoch", 2)]


def test_logger_lines():
    lines = []
    val = nn.data.DataLoader(_data(seed=1), batch_size=16)
    t = _trainer("cpu", "sgd", [T.LossMonitor(), T.Evaluation(val), T.Logger(write=lines.append)])
    t.run(2)
    assert len(lines) == 2 and lines[1].startswith("epoch 2 | loss ")
    assert f"validation.loss {t.stats['validation']['loss']:.4f}" in lines[1]


def test_bad_use_raises():
    t = _trainer("cpu", "sgd")
    with pytest.raises(ValueError, match="unit 'step'"):
        t.register_plugin(T.Plugin([(1, "step")]))
    with pytest.raises(ValueError, match="positive int"):
        t.register_plugin(T.Plugin([(0, "epoch")]))
    with pytest.raises(TypeError, match="has no epoch"):
        t.register_plugin(T.Plugin([(1, "epoch")]))
    with pytest.raises(ValueError, match="optimizer"):
        T.Trainer(t.model, F.cross_entropy, None, t.dataset).run(1)
    with pytest.raises(ValueError, match="a batch must be"):
        T.Trainer(t.model, F.cross_entropy, t.optimizer, [ag.ones(2, D)]).run(1)
    with pytest.raises(ValueError, match="exactly one of"):
        T.GradientClipping()
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        T.MixedPrecision(ag.float32)
    with pytest.raises(RuntimeError, match="GraphCapture: a captured step cannot use gradient accumulation"):
        _trainer("cpu", "sgd", [T.GradientAccumulation(2), T.GraphCapture()]).run(1)
    with pytest.raises(RuntimeError, match="EarlyStopping: the metric 'validation.loss'"):
        _trainer("cpu", "sgd", [T.EarlyStopping()]).run(1)
    state = _trainer("cpu", "sgd", [T.LossMonitor()]).state_dict()
    with pytest.raises(ValueError, match="holds 1 plugin state"):
        _trainer("cpu", "sgd").load_state_dict(state)
    with pytest.raises(ValueError, match="not a Trainer state dict"):
        _trainer("cpu", "sgd").load_state_dict({"model": {}})
