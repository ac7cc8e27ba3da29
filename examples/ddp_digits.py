"""Data-parallel training of the digits MLP on N processes (DistributedDataParallel over MPI).

    python -m autograd.distributed.run --nproc-per-node 2 examples/ddp_digits.py --epochs 5
    mpiexec -n 2 python examples/ddp_digits.py                    # the same, started by MPI directly

Each rank reads its share of every epoch (DistributedSampler), gradients are averaged across ranks during
backward, and rank 0 evaluates and saves the model (``ddp.module``'s state dict: a single-process checkpoint).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import autograd.distributed as dist  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per rank: cuda:LOCAL_RANK)")
    p.add_argument("--save", default=None, help="rank 0 saves the weights here (safetensors)")
    args = p.parse_args(argv)

    dist.init_process_group("mpi", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if args.device == "cuda" else args.device

    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    test, train = order[: len(y) // 5], order[len(y) // 5:]
    ds = nn.data.TensorDataset(ag.tensor(x[train]), ag.tensor(y[train]))
    sampler = nn.data.DistributedSampler(ds, shuffle=True, seed=0)
    loader = nn.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler)

    ag.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10)).to(dev)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = nn.optim.AdamW(ddp.parameters(), lr=args.lr * world)  # the global batch grows with the ranks
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = ag.zeros(2)
        for xb, yb in loader:
            loss = F.cross_entropy(ddp(xb.to(dev)), yb.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += ag.tensor([loss.item() * len(yb), len(yb)])
        dist.all_reduce(total)
        if rank == 0:
            with ag.no_grad():
                acc = (model(ag.tensor(x[test], device=dev)).argmax(1).cpu().numpy() == y[test]).mean()
            print(f"epoch {epoch + 1}: loss {total[0].item() / total[1].item():.4f}  test acc {acc:.3f}  "
                  f"({world} ranks, {time.perf_counter() - t0:.1f} s)", flush=True)
    if rank == 0 and args.save:
        nn.save(model.state_dict(), args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
