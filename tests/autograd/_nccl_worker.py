"""Run under mpiexec -n 2 with the fake libnccl (AUTOGRAD_NCCL_LIBRARY) and interpreted cuda: writes the calls
our binding must have made to FAKE_NCCL_LOG.expect.<rank>; tests/autograd/test_distributed.py compares them
with the fake's log."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import autograd as ag  # noqa: E402
import autograd.distributed as dist  # noqa: E402
import tkernels.cuda as tkc  # noqa: E402

dist.init_process_group("nccl")
r = dist.get_rank()
exp = [f"CommInitRank nranks=2 rank={r}"]
t = ag.ones(15, device="cuda")
s0 = tkc.current_stream().handle
dist.all_reduce(t)
exp.append(f"AllReduce send={t.data_ptr():#x} recv={t.data_ptr():#x} count=15 dtype=7 op=0 stream={s0:#x}")
side = tkc.Stream()
with tkc.stream(side):
    h = ag.zeros(4, 3, dtype=ag.bfloat16, device="cuda")
    w = dist.all_reduce(h, op=dist.ReduceOp.AVG, async_op=True)
    w.wait()
    exp.append(f"AllReduce send={h.data_ptr():#x} recv={h.data_ptr():#x} count=12 dtype=9 op=4 "
               f"stream={side.handle:#x}")
b = ag.zeros(3, dtype=ag.int64, device="cuda")
dist.broadcast(b, src=1)
exp.append(f"Broadcast send={b.data_ptr():#x} recv={b.data_ptr():#x} count=3 dtype=4 root=1 stream={s0:#x}")
dist.reduce(b, dst=0, op=dist.ReduceOp.MAX)
exp.append(f"Reduce send={b.data_ptr():#x} recv={b.data_ptr():#x} count=3 dtype=4 op=2 root=0 stream={s0:#x}")
o = ag.zeros(6, device="cuda")
i = ag.ones(3, device="cuda")
dist.all_gather_into_tensor(o, i)
exp.append(f"AllGather send={i.data_ptr():#x} recv={o.data_ptr():#x} count=3 dtype=7 stream={s0:#x}")
dist.reduce_scatter_tensor(i, o, op=dist.ReduceOp.MIN)
exp.append(f"ReduceScatter send={o.data_ptr():#x} recv={i.data_ptr():#x} count=3 dtype=7 op=3 stream={s0:#x}")
lst = [ag.zeros(2, 2, device="cuda") for _ in range(2)]
src = ag.ones(2, 2, device="cuda")
dist.all_gather(lst, src)  # the fake moves nothing: only the call is checked
exp.append(f"AllGather send={src.data_ptr():#x} recv=* count=4 dtype=7 stream={s0:#x}")
for bad, match in ((lambda: dist.all_reduce(ag.ones(2, dtype=ag.int16, device="cuda")), "no int16"),
                   (lambda: dist.gather(ag.ones(2, device="cuda"), None, 1), "not implemented for cuda tensors")):
    try:
        bad()
    except (TypeError, NotImplementedError) as e:
        assert match in str(e), e
    else:
        raise AssertionError(match)
c = ag.ones(2)  # cpu tensors on an NCCL group go over MPI
dist.all_reduce(c)
assert c.tolist() == [2.0, 2.0], c
dist.barrier()
dist.destroy_process_group()
exp.append("CommDestroy")
with open(os.environ["FAKE_NCCL_LOG"] + f".expect.{r}", "w") as f:  # a file: the ranks' stdout interleaves
    f.write("\n".join(exp) + "\n")
