"""The Trainer's TensorBoardLogger writes event files that TensorBoard's own reader loads: the monitors' values
per iteration, the epoch means and evaluation metrics per epoch, the learning rate and parameter histograms."""

import pytest

pytest.importorskip("tensorboard")

import numpy as np  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import autograd as ag  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402, N812
from nn.utils import trainer as T  # noqa: E402, N812


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_tensorboard_logger_writes_what_the_monitors_saw(dev, tmp_path):
    rng = np.random.default_rng(0)
    data = nn.data.TensorDataset(ag.from_numpy(rng.standard_normal((40, 4)).astype(np.float32)),
                                 ag.from_numpy(rng.integers(0, 3, 40)))
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    sched = nn.optim.lr_scheduler.StepLR(opt, 1, 0.5)
    t = T.Trainer(model, F.cross_entropy, opt, nn.data.DataLoader(data, batch_size=10), device=dev)
    losses = []

    class Record(T.Plugin):
        def __init__(self):
            super().__init__([(1, "iteration")])

        def iteration(self, i, x, y, out, loss):
            losses.append(float(loss))

    for p in [T.LossMonitor(), Record(), T.Evaluation(nn.data.DataLoader(data, batch_size=20)),
              T.LRSchedulerStep(sched), T.TensorBoardLogger(log_dir=str(tmp_path), log_every=2, histograms=True)]:
        t.register_plugin(p)
    t.run(2)
    t.plugins[-1].writer.close()

    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"train/loss", "epoch/loss", "validation/loss", "validation/accuracy", "lr/group0"} <= set(tags["scalars"])
    train = acc.Scalars("train/loss")
    assert [e.step for e in train] == [2, 4, 6, 8]
    np.testing.assert_allclose([e.value for e in train], [losses[i - 1] for i in (2, 4, 6, 8)], rtol=1e-6)
    epoch = acc.Scalars("epoch/loss")
    assert [e.step for e in epoch] == [4, 8]
    np.testing.assert_allclose([e.value for e in epoch], t.stats["loss"]["epoch_means"], rtol=1e-6)
    assert acc.Scalars("validation/loss")[-1].value == pytest.approx(t.stats["validation"]["loss"], rel=1e-6)
    # the learning rate logged at iterations 2 and 4 (epoch 1) is 0.1, at 6 and 8 it is 0.05
    np.testing.assert_allclose([e.value for e in acc.Scalars("lr/group0")], [0.1, 0.1, 0.05, 0.05], rtol=1e-6)
    hist = acc.Histograms("parameters/0.weight")
    assert [h.step for h in hist] == [4, 8]
    w = model[0].weight.detach().cpu().numpy()
    assert hist[-1].histogram_value.num == w.size
    assert hist[-1].histogram_value.min == pytest.approx(float(w.min()))
    assert "gradients/0.weight" in tags["histograms"]
