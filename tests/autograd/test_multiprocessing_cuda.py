"""autograd.multiprocessing on cuda: CUDA IPC handles on allocator blocks (interpreted cuda maps the exporter's memfd
segments, so values really cross processes), the producer keeping blocks alive until consumers release them, and
the runtime's IPC calls. A real GPU runs the spawn round trip (marked ``gpu``)."""

import sys
import weakref

import numpy as np
import pytest

import autograd as ag
import autograd.multiprocessing as mp
import nn
import tkernels.cuda as tkc
from tkernels.cuda import ipc
from tkernels.cuda.runtime import CudaError, get_runtime

from ..tkernels.cuda.test_fake_driver import fake_env, run_child  # noqa: F401  (the fixture, the runner)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses fork, memfd and /proc/<pid>/fd")
interpreted = pytest.mark.skipif(not tkc.is_interpreted(), reason="fork with cuda needs interpreted cuda")


def _child(q_in, q_out, done):
    items = q_in.get()
    x = items[0]
    x.add_(1)  # seen by the producer
    q_out.put((x[1:], ag.full((3,), 9.0, device="cuda"), items[1:]))
    done.wait(60)


def _roundtrip(method):
    ctx = mp.get_context(method)
    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_child, args=(q_in, q_out, done))
    p.start()
    x = ag.arange(4.0, device="cuda")
    others = [ag.tensor([1.5, -2.0], dtype=ag.bfloat16, device="cuda"), ag.tensor([True, False], device="cuda"),
              ag.tensor(7, dtype=ag.int64, device="cuda"), ag.zeros(0, device="cuda"),
              ag.randn(3, 2, device="cuda").t(), ag.ones(2, device="cuda", requires_grad=True),
              nn.Parameter(ag.ones(3, device="cuda"))]
    q_in.put([x] + others)
    view, mine, back = q_out.get(timeout=120)
    try:
        assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
        assert view._data._storage is x._data._storage  # our own memory came back: the same storage
        assert type(mine._data._storage) is ipc.IpcStorage and mine.tolist() == [9.0, 9.0, 9.0]
        mine.mul_(2)  # writes the child's memory
        assert mine.tolist() == [18.0, 18.0, 18.0]
        for a, b in zip(others, back, strict=True):
            assert type(a) is type(b) and a.dtype == b.dtype and a.stride() == b.stride()
            assert a.requires_grad == b.requires_grad and b.device == a.device
            np.testing.assert_array_equal(a.detach().cpu().float().numpy(), b.detach().cpu().float().numpy())
    finally:
        done.set()
        p.join(60)
    assert p.exitcode == 0


@interpreted
def test_cuda_tensors_cross_both_ways_fork():
    _roundtrip("fork")


@interpreted
def test_cuda_tensors_cross_both_ways_spawn():
    _roundtrip("spawn")


def _consumer(q, ready, done):
    t = q.get()
    ready.put(t.tolist())
    done.wait(60)
    ready.put(t.tolist())  # still the producer's values: its block was not reused meanwhile
    del t


@interpreted
def test_the_producer_keeps_blocks_alive_until_consumers_release_them():
    ctx = mp.get_context("fork")
    q, ready, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_consumer, args=(q, ready, done))
    p.start()
    t = ag.full((1000,), 3.0, device="cuda")
    storage = weakref.ref(t._data._storage)
    ptr = t.data_ptr()
    q.put(t)
    assert ready.get(timeout=60) == [3.0] * 1000
    del t  # the producer's last reference: the block must stay allocated for the consumer
    assert storage() is not None and tkc.ipc_collect() == 1
    junk = [ag.full((1000,), -1.0, device="cuda") for _ in range(4)]  # would take the block if it were free
    assert ptr not in [j.data_ptr() for j in junk]
    done.set()
    assert ready.get(timeout=60) == [3.0] * 1000
    p.join(60)
    assert p.exitcode == 0
    assert tkc.ipc_collect() == 0 and storage() is None  # the consumer acked (at the latest when it exited)


def _write_inherited(x, q):
    x.fill_(-1.0)  # the child's own copy: interpreted device memory is not shared by fork
    q.put(x.cpu().tolist())


@interpreted
def test_fork_does_not_share_interpreted_device_memory():
    x = ag.ones(3, device="cuda")
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_write_inherited, args=(x, q))  # fork: the argument is inherited, not pickled
    p.start()
    assert q.get(timeout=60) == [-1.0] * 3
    p.join(60)
    assert p.exitcode == 0 and x.tolist() == [1.0] * 3


@interpreted
def test_runtime_ipc_calls():
    rt = get_runtime()
    x = ag.ones(4, device="cuda")
    st = x._data._storage
    base, size = st._allocator.segment_of(st.block)
    assert base <= st.block.ptr < base + size
    handle = rt.ipc_get_mem_handle(0, base)
    assert isinstance(handle, bytes) and len(handle) == 64
    with pytest.raises(CudaError, match="process that exported it"):
        rt.ipc_open_mem_handle(0, handle)
    with pytest.raises(CudaError, match="not opened from an IPC handle"):
        rt.ipc_close_mem_handle(0, base)


def test_sending_foreign_cuda_memory_is_refused():
    from multiprocessing.reduction import ForkingPickler

    from tkernels.backends.triton.interop import _wrap_external

    a = ag.ones(2, device="cuda")
    ext = ag.Tensor(_wrap_external(a.data_ptr(), (2,), None, a.dtype, a.device, a))
    with pytest.raises(TypeError, match="only memory of the caching allocator has a CUDA IPC handle"):
        ForkingPickler.dumps(ext)


def _gpu_child(q_in, q_out):
    x = q_in.get()
    x.add_(1)
    tkc.synchronize()
    q_out.put(x.sum().item())


@pytest.mark.gpu
def test_cuda_ipc_on_a_real_gpu():
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_gpu_child, args=(q_in, q_out))
    p.start()
    x = ag.arange(1000.0, device="cuda")
    q_in.put(x)
    assert q_out.get(timeout=120) == float(sum(range(1, 1001)))
    p.join(60)
    assert p.exitcode == 0 and x[0].item() == 1.0
    assert tkc.ipc_collect() == 0


FAKE_DRIVER_CHILD = """
    import autograd as ag
    import autograd.multiprocessing as mp
    from tkernels.cuda.testing import FakeDriverStats

    def consumer(q_in, q_out):
        x = q_in.get()
        seen = x.cpu().tolist()  # a device-to-host copy from the producer's memory, mapped by cuIpcOpenMemHandle
        src = np.full(x.numel(), 7.0, np.float32)  # the fake driver runs no kernel: write with a copy
        tkc.get_runtime().memcpy_htod(0, x.data_ptr(), src.ctypes.data, src.nbytes, 0, False)
        mappings = FakeDriverStats().read()["ipc_mappings"]
        del x
        q_out.put((seen, mappings, FakeDriverStats().read()["ipc_mappings"]))

    if __name__ == "__main__":
        ctx = mp.get_context("spawn")
        q_in, q_out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=consumer, args=(q_in, q_out))
        p.start()
        x = ag.tensor(np.arange(5, dtype=np.float32), device="cuda")  # a host-to-device copy: no kernel
        q_in.put(x[1:])
        res["seen"], res["open"], res["after_close"] = q_out.get(timeout=120)
        p.join(120)
        res["exitcode"] = p.exitcode
        res["x"] = x.cpu().tolist()
        res["held"] = tkc.ipc_collect()
"""


def test_cuda_ipc_call_path_on_the_fake_driver(fake_env):  # noqa: F811  (the imported fixture)
    res, _ = run_child(fake_env, "mp_ipc", FAKE_DRIVER_CHILD)
    assert res["exitcode"] == 0
    assert res["seen"] == [1.0, 2.0, 3.0, 4.0]  # values crossed through the fake driver's IPC
    assert res["open"] == 1 and res["after_close"] == 0  # one mapping while held; closed with the last tensor
    assert res["x"] == [0.0, 7.0, 7.0, 7.0, 7.0]  # the consumer's writes are the producer's memory
    assert res["held"] == 0  # the consumer acked: the producer released its keep-alive reference
