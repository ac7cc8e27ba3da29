"""Train an MLP and a small CNN on scikit-learn's bundled digits (8x8 images, 10 classes; no download).

    python examples/train_digits.py                 # both models, default device (cuda if present, else cpu)
    python examples/train_digits.py --model cnn --epochs 5 --device cpu

Shows a progress bar (loss, accuracy, samples/s), evaluates on a held-out split after every epoch, saves
a checkpoint (safetensors, via nn.save), reloads it into a fresh model and checks it scores the same,
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


def evaluate(model, x, y, device, batch_size=512):
    model.eval()
    correct, total_loss = 0, 0.0
    with ag.no_grad():
        for i in range(0, len(y), batch_size):
            xb = ag.tensor(x[i:i + batch_size], device=device)
            yb = ag.tensor(y[i:i + batch_size], device=device)
            out = model(xb)
            total_loss += float(F.cross_entropy(out, yb, reduction="sum"))
            correct += int((out.argmax(1) == yb).sum())
    model.train()
    return total_loss / len(y), correct / len(y)


def train(kind, data, args, device):
    (xtr, ytr), (xte, yte) = data
    ag.manual_seed(args.seed)
    model = make_model(kind).to(device)
    opt = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    loader = nn.data.DataLoader(nn.data.TensorDataset(ag.from_numpy(xtr), ag.from_numpy(ytr)),
                                batch_size=args.batch_size, shuffle=True,
                                generator=ag.Generator().manual_seed(args.seed))
    history = {"loss": [], "acc": [], "test_loss": [], "test_acc": []}
    reached = None  # (epoch, seconds) when the test accuracy first reached 97%
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        seen, correct, loss_sum = 0, 0, 0.0
        bar = tqdm(loader, desc=f"{kind} epoch {epoch}/{args.epochs}", leave=False, disable=args.quiet)
        start = time.perf_counter()
        for xb, yb in bar:
            xb, yb = xb.to(device), yb.to(device)
            out = model(xb)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n = len(yb)
            seen += n
            loss_sum += float(loss) * n
            correct += int((out.detach().argmax(1) == yb).sum())
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.3f}",
                            samples_s=f"{seen / (time.perf_counter() - start):.0f}")
        test_loss, test_acc = evaluate(model, xte, yte, device)
        history["loss"].append(loss_sum / seen)
        history["acc"].append(correct / seen)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        if reached is None and test_acc >= 0.97:
            reached = (epoch, time.perf_counter() - t0)
        if not args.quiet:
            tqdm.write(f"{kind} epoch {epoch:2d}: train loss {loss_sum / seen:.4f} acc {correct / seen:.4f} | "
                       f"test loss {test_loss:.4f} acc {test_acc:.4f}")
    elapsed = time.perf_counter() - t0

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"digits_{kind}.safetensors")
    nn.save(model.state_dict(), path)
    fresh = make_model(kind).to(device)
    fresh.load_state_dict(nn.load(path, map_location=str(device)))
    _, reloaded_acc = evaluate(fresh, xte, yte, device)
    if reloaded_acc != history["test_acc"][-1]:
        raise RuntimeError(f"reloaded checkpoint scores {reloaded_acc}, expected {history['test_acc'][-1]}")
    when = (f"97% reached at epoch {reached[0]} after {reached[1]:.1f} s" if reached else "97% not reached")
    print(f"{kind}: test accuracy {history['test_acc'][-1]:.4f} after {args.epochs} epochs in {elapsed:.1f} s "
          f"on {device}; {when} (checkpoint {path} reloaded: same accuracy)")
    return history


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
    args = p.parse_args(argv)
    device = args.device or ("cuda" if ag.cuda.is_available() else "cpu")
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
