"""Run under mpiexec -n 2 by tests/nn/test_parallel.py: DDP training of the digits MLP against a single-process
run on the concatenated batches (rank 0 computes it), on the device given as argv[1]."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import autograd.distributed as dist  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402, N812

DEV = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
B = 16  # per rank


class Branchy(nn.Module):
    """The digits MLP with a head that forward never uses (find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))


def data():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None]
    return x, d.target.astype(np.int64)


def run(make, ddp_kwargs, accumulate=1):
    """(DDP model after STEPS steps, single-process reference) — the reference only on rank 0."""
    rank, n = dist.get_rank(), dist.get_world_size()
    X, Y = data()
    ag.manual_seed(100 + rank)  # different inits: DDP must broadcast rank 0's
    model = make().to(DEV)
    ddp = nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
    ref = make().to(DEV)
    ref.load_state_dict(model.state_dict())
    opt = nn.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ropt = nn.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    k = 0
    for _ in range(STEPS):
        opt.zero_grad()
        ropt.zero_grad()
        for a in range(accumulate):
            xs = X[k:k + n * B]
            ys = Y[k:k + n * B]
            k += n * B
            mine = slice(rank * B, (rank + 1) * B)
            xb, yb = ag.tensor(xs[mine], device=DEV), ag.tensor(ys[mine], device=DEV)
            if a < accumulate - 1:
                with ddp.no_sync():
                    F.cross_entropy(ddp(xb), yb).backward()
            else:
                F.cross_entropy(ddp(xb), yb).backward()
            F.cross_entropy(ref(ag.tensor(xs, device=DEV)), ag.tensor(ys, device=DEV)).backward()
        opt.step()
        ropt.step()
    return model, ref


def check(name, make, ddp_kwargs, accumulate=1):
    model, ref = run(make, ddp_kwargs, accumulate)
    sd, rsd = model.state_dict(), ref.state_dict()
    assert list(sd) == list(rsd), (name, list(sd), list(rsd))
    worst = max(float(np.abs(sd[k].cpu().numpy() - rsd[k].cpu().numpy()).max()) for k in sd)
    # every rank holds the same parameters
    mine = np.concatenate([sd[k].cpu().numpy().ravel() for k in sd])
    first = mine.copy()
    t = ag.tensor(first)
    dist.broadcast(t, 0)
    same = bool((t.numpy() == mine).all())
    print(f"{name} rank {dist.get_rank()}: max |ddp - single| = {worst:.3g}, ranks identical: {same}", flush=True)
    assert same, name
    assert worst < 2e-5, (name, worst)


dist.init_process_group("mpi")
check("buckets", mlp, {"bucket_cap_mb": 0.02})
check("bucket-view", mlp, {"bucket_cap_mb": 0.05, "gradient_as_bucket_view": True})
if DEV == "cpu":  # the rest is device independent (interpreted cuda is slow)
    check("one-bucket-no-overlap", mlp, {"overlap": False})
    check("no_sync", mlp, {"bucket_cap_mb": 0.02}, accumulate=2)
    check("unused", Branchy, {"find_unused_parameters": True})
try:
    run(Branchy, {}, 1)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e), e
    print(f"rank {dist.get_rank()}: unused parameters without find_unused_parameters raise", flush=True)
else:
    raise AssertionError("unused parameters were not reported")
# broadcast_buffers: every forward starts from rank 0's buffers
bn = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to(DEV)
d = nn.parallel.DistributedDataParallel(bn)
with ag.no_grad():
    bn[1].running_mean.fill_(float(dist.get_rank() + 5))
bn.eval()  # eval: the forward leaves the buffers as the broadcast made them
d(ag.ones(2, 4, device=DEV)).sum().backward()
assert bn[1].running_mean.cpu().tolist() == [5.0] * 3, bn[1].running_mean
# a checkpoint of ddp.module is a single-process one: same names, shapes and dtypes, loads into a plain model
model, ref = run(mlp, {}, 1)
ckpt = os.path.join(os.environ["DDP_TMP"], f"ddp{dist.get_rank()}.safetensors")
nn.save(model.state_dict(), ckpt)
nn.save(ref.state_dict(), ckpt + ".ref")
a, b = nn.load(ckpt), nn.load(ckpt + ".ref")
assert list(a) == list(b) and all(a[k].shape == b[k].shape and a[k].dtype == b[k].dtype for k in a)
plain = mlp().to(DEV)
plain.load_state_dict(a)
# overlap: with small buckets some all-reduces start inside backward; with overlap=False none do
m = mlp().to(DEV)
for overlap, expect_early in ((True, True), (False, False)):
    d = nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.02, overlap=overlap)
    F.cross_entropy(d(ag.tensor(data()[0][:8], device=DEV)), ag.tensor(data()[1][:8], device=DEV)).backward()
    assert (d._early_launches > 0) == expect_early, (overlap, d._early_launches)
dist.barrier()
print(f"rank {dist.get_rank()}: DDP OK on {DEV}", flush=True)
dist.destroy_process_group()
