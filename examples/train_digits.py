"""Train an MLP and a small CNN on scikit-learn's bundled digits (8x8 images, 10 classes; no download).

    python examples/train_digits.py                 # both models, default device (cuda if present, else cpu)
    python examples/train_digits.py --model cnn --epochs 5 --device cpu

The loop is nn.utils.trainer.Trainer with plugins: a progress bar (loss, accuracy, samples/s), evaluation on
a held-out split after every epoch, checkpoints of the run (last and best, resumable), and TensorBoard logs
when the tensorboard package is installed (`tensorboard --logdir runs/digits/tensorboard`). At the end it
saves the weights (safetensors, via nn.save), reloads them into a fresh model and checks it scores the same,
and draws the loss/accuracy curves to a PNG when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import autograd as ag  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402
from nn.utils import trainer as T  # noqa: E402


def make_model(kind: str) -> nn.Module:
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


def load_data(seed: int):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None, :, :]  # (N, 1, 8, 8) in [0, 1]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = len(y) // 5
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


class History(T.Plugin):
    """Collects the curves and the time the test accuracy first reached 97%; prints one line per epoch."""

    def __init__(self, kind, quiet):
        super().__init__([(1, "epoch")])
        self.kind, self.quiet = kind, quiet
        self.curves = {"loss": [], "acc": [], "test_loss": [], "test_acc": []}
        self.reached = None
        self.t0 = time.perf_counter()

    def epoch(self, epoch):
        s = self.trainer.stats
        row = (s["loss"]["epoch_means"][-1], s["accuracy"]["epoch_means"][-1], s["test"]["loss"],
               s["test"]["accuracy"])
        for key, v in zip(self.curves, row):
            self.curves[key].append(v)
        if self.reached is None and row[3] >= 0.97:
            self.reached = (epoch, time.perf_counter() - self.t0)
        if not self.quiet:
            tqdm.write(f"{self.kind} epoch {epoch:2d}: train loss {row[0]:.4f} acc {row[1]:.4f} | "
                       f"test loss {row[2]:.4f} acc {row[3]:.4f}")


def loader(x, y, batch_size, shuffle=False, seed=0):
    generator = ag.Generator().manual_seed(seed) if shuffle else None
    return nn.data.DataLoader(nn.data.TensorDataset(ag.from_numpy(x), ag.from_numpy(y)), batch_size=batch_size,
                              shuffle=shuffle, generator=generator)


def train(kind, data, args, device):
    (xtr, ytr), (xte, yte) = data
    ag.manual_seed(args.seed)
    model = make_model(kind).to(device)
    opt = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    trainer = T.Trainer(model, F.cross_entropy, opt, loader(xtr, ytr, args.batch_size, True, args.seed),
                        device=device)
    history = History(kind, args.quiet)
    test = T.Evaluation(loader(xte, yte, 512), name="test")
    plugins = [T.LossMonitor(), T.AccuracyMonitor(), T.ThroughputMonitor(),
               T.ProgressMonitor(disable=args.quiet, desc=kind), test, history,
               T.Checkpoint(os.path.join(args.out, f"{kind}_checkpoints"), monitor="test.accuracy", mode="max")]
    if args.tensorboard:
        plugins.append(T.TensorBoardLogger(log_dir=os.path.join(args.out, "tensorboard", kind), histograms=True))
    for p in plugins:
        trainer.register_plugin(p)
    trainer.run(args.epochs)
    elapsed = time.perf_counter() - history.t0

    path = os.path.join(args.out, f"digits_{kind}.safetensors")
    nn.save(model.state_dict(), path)
    fresh = make_model(kind).to(device)
    fresh.load_state_dict(nn.load(path, map_location=str(device)))
    check = T.Trainer(fresh, F.cross_entropy, device=device)
    check.register_plugin(T.Evaluation(loader(xte, yte, 512)))
    reloaded_acc = check.plugins[0].evaluate()["accuracy"]
    h = history.curves
    if reloaded_acc != h["test_acc"][-1]:
        raise RuntimeError(f"reloaded checkpoint scores {reloaded_acc}, expected {h['test_acc'][-1]}")
    reached = history.reached
    when = (f"97% reached at epoch {reached[0]} after {reached[1]:.1f} s" if reached else "97% not reached")
    print(f"{kind}: test accuracy {h['test_acc'][-1]:.4f} after {args.epochs} epochs in {elapsed:.1f} s "
          f"on {device}; {when} (checkpoint {path} reloaded: same accuracy)")
    return h


def plot(histories, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install matplotlib)")
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for kind, h in histories.items():
        ep = range(1, len(h["loss"]) + 1)
        axes[0].plot(ep, h["loss"], label=f"{kind} train")
        axes[0].plot(ep, h["test_loss"], "--", label=f"{kind} test")
        axes[1].plot(ep, h["acc"], label=f"{kind} train")
        axes[1].plot(ep, h["test_acc"], "--", label=f"{kind} test")
    axes[0].set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    axes[1].set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for a in axes:
        a.legend()
        a.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out, "digits_curves.png")
    fig.savefig(path, dpi=100)
    print(f"curves: {path}")
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    p.add_argument("--epochs", type=int, default=None, help="default: 20 (mlp), 12 (cnn)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/digits")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None,
                   help="write TensorBoard logs to <out>/tensorboard (default: when the tensorboard package is "
                        "installed); open them with: tensorboard --logdir <out>/tensorboard")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if ag.cuda.is_available() else "cpu")
    if args.tensorboard is None:
        import importlib.util

        args.tensorboard = importlib.util.find_spec("tensorboard") is not None
    data = load_data(args.seed)
    kinds = ["mlp", "cnn"] if args.model == "both" else [args.model]
    histories = {}
    epochs_arg = args.epochs
    for kind in kinds:
        args.epochs = epochs_arg or (20 if kind == "mlp" else 12)
        histories[kind] = train(kind, data, args, device)
    plot(histories, args.out)
    return histories


if __name__ == "__main__":
    main()
