"""Hogwild training: several processes train ONE model in shared memory on scikit-learn's digits, lock-free.

    python examples/hogwild_digits.py                       # 4 workers, then the same training in one process
    python examples/hogwild_digits.py --workers 2 --epochs 5 --start-method fork

``model.share_memory()`` moves the parameters to shared memory; ``autograd.multiprocessing.spawn`` sends the model
to every worker (its storages travel as shared memory, so every worker holds the same weights). Each worker
computes its own gradients on its share of every epoch and its SGD steps write the shared weights in place,
without locks (Recht et al., 2011: updates rarely collide, and when they do it does not hurt SGD much). The
parent then scores the shared model, and trains the same model in one process for the same number of epochs
to compare.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import autograd.multiprocessing as mp  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402


def load_data(seed: int):
    """Digits as flat float32 features in [0, 1] and int64 labels; 80/20 train/test split (examples/train_digits)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.data.astype(np.float32) / 16.0
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = len(y) // 5
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def make_model(seed: int) -> nn.Module:
    ag.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def train(rank, model, x, y, epochs, nworkers, batch_size, lr, seed, max_steps):
    """One worker: SGD on rows ``rank::nworkers`` of each epoch's permutation, in place on ``model``'s weights."""
    opt = nn.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    rng = np.random.default_rng(seed + 1000 * rank)
    steps = 0
    for _ in range(epochs):
        rows = rng.permutation(len(y))[rank::nworkers]
        for i in range(0, len(rows), batch_size):
            idx = ag.from_numpy(rows[i:i + batch_size])
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if max_steps is not None and steps >= max_steps:
                return


def accuracy(model, x, y) -> float:
    with ag.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"])
    p.add_argument("--max-steps", type=int, default=None, help="stop each worker after this many steps (smoke tests)")
    p.add_argument("--no-baseline", action="store_true", help="skip the single-process run")
    args = p.parse_args(argv)

    (xtr, ytr), (xte, yte) = load_data(args.seed)
    xtr, ytr = ag.from_numpy(xtr).share_memory_(), ag.from_numpy(ytr).share_memory_()  # sent once, not copied
    xte, yte = ag.from_numpy(xte), ag.from_numpy(yte)

    model = make_model(args.seed).share_memory()
    t0 = time.perf_counter()
    mp.spawn(train, args=(model, xtr, ytr, args.epochs, args.workers, args.batch_size, args.lr, args.seed,
                          args.max_steps), nprocs=args.workers, start_method=args.start_method)
    result = {"hogwild": accuracy(model, xte, yte), "hogwild_s": time.perf_counter() - t0}
    print(f"hogwild, {args.workers} processes: test accuracy {result['hogwild']:.4f} after {args.epochs} epochs in "
          f"{result['hogwild_s']:.1f} s")
    if not args.no_baseline:
        single = make_model(args.seed)
        t0 = time.perf_counter()
        train(0, single, xtr, ytr, args.epochs, 1, args.batch_size, args.lr, args.seed, args.max_steps)
        result["single"] = accuracy(single, xte, yte)
        result["single_s"] = time.perf_counter() - t0
        print(f"one process:          test accuracy {result['single']:.4f} after {args.epochs} epochs in "
              f"{result['single_s']:.1f} s")
    return result


if __name__ == "__main__":
    main()
