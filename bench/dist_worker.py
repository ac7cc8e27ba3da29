"""The ranks of ``python -m bench dist`` (started under mpiexec by bench/dist.py); rank 0 prints one JSON line.

``allreduce SIZES REPEAT MIN_S``: per size, our ``dist.all_reduce`` on a float32 Tensor and raw mpi4py
``Allreduce`` on a NumPy buffer, interleaved sample by sample; best and median of REPEAT samples of at least
MIN_S each.
``ddp STEPS OVERLAP``: the mean step time of a DistributedDataParallel MLP (forward, backward, SGD step).
"""

import json
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import autograd as ag
import autograd.distributed as dist
import nn
from nn import functional as F  # noqa: N812


def _sample(fn, comm, min_s):
    """Seconds per call of fn: calls doubled until a sample lasts min_s (the ranks agree on the count)."""
    k = 1
    while True:
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(k):
            fn()
        dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
        if dt >= min_s:
            return dt / k
        k *= 2


def allreduce(sizes, repeat, min_s):
    comm = MPI.COMM_WORLD
    out = []
    for nbytes in sizes:
        n = nbytes // 4
        t = ag.zeros(n)  # zeros: the sums stay finite however many calls
        buf = np.zeros(n, np.float32)
        ours = lambda t=t: dist.all_reduce(t)  # noqa: E731
        raw = lambda buf=buf: comm.Allreduce(MPI.IN_PLACE, buf)  # noqa: E731
        ours()
        raw()
        a, b = [], []
        for _ in range(repeat):
            a.append(_sample(ours, comm, min_s))
            b.append(_sample(raw, comm, min_s))
        out.append({"bytes": nbytes, "ours_s": min(a), "raw_s": min(b), "ours_med_s": statistics.median(a),
                    "raw_med_s": statistics.median(b)})
    return out


def ddp(steps, overlap, width):
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    d = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1, overlap=overlap)
    opt = nn.optim.SGD(d.parameters(), lr=1e-3)
    x, y = ag.randn(32, width), ag.randint(0, 10, (32,))

    def step():
        loss = F.cross_entropy(d(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for _ in range(3):
        step()
    comm = MPI.COMM_WORLD
    times = []
    for _ in range(steps):
        comm.Barrier()
        t = time.perf_counter()
        step()
        times.append(comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
    return {"step_s": statistics.median(times), "params": sum(p.numel() for p in model.parameters())}


def main():
    dist.init_process_group("mpi")
    mode = sys.argv[1]
    if mode == "allreduce":
        res = allreduce([int(s) for s in sys.argv[2].split(",")], int(sys.argv[3]), float(sys.argv[4]))
    else:
        res = ddp(int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]))
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(res), flush=True)
    dist.destroy_process_group()


main()
