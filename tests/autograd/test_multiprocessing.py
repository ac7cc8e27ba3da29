"""autograd.multiprocessing: tensors pickled (copies) and sent between processes (shared memory), share_memory_,
Queue, Pool, spawn and its errors, sharing strategies, and no shared-memory segment left behind."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import autograd as ag
import autograd.multiprocessing as mp
import nn
import tkernels as tk
from tkernels import shared_memory

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses fork, memfd and /dev/shm")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = ["float32", "float64", "float16", "bfloat16", "bool", "int64", "int32", "int8", "uint8"]


def _rand(shape, dtype, seed=0):
    r = np.random.default_rng(seed).standard_normal(shape) * 5
    return ag.tensor(r.astype(np.float32)).to(dtype=getattr(ag, dtype))


def _same(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.detach().cpu().float().numpy(), b.detach().cpu().float().numpy())


@pytest.fixture(autouse=True)
def _strategy():
    yield
    mp.set_sharing_strategy("file_descriptor")


# ----------------------------------------------------------------------------------------- plain pickle: copies
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (4, 3)])
def test_pickle_copies_values_dtype_and_shape(dtype, shape):
    x = _rand(shape, dtype)
    y = pickle.loads(pickle.dumps(x))
    _same(x, y)
    assert not y.is_shared()
    if x.numel():  # a copy
        before = x.clone()
        y.view(-1)[0] = ~y.view(-1)[0] if dtype == "bool" else y.view(-1)[0] + 1
        _same(x, before)


def test_pickle_keeps_views_strides_and_shared_storage():
    x = ag.arange(12.0).reshape(3, 4)
    t, s = x.t(), x[1:, ::2]
    t2, s2, x2 = pickle.loads(pickle.dumps((t, s, x)))
    assert t2.stride() == t.stride() and s2.stride() == s.stride() and s2.storage_offset() == s.storage_offset()
    _same(t2, t)
    _same(s2, s)
    x2[1, 0] = -1.0  # one pickle: the three still share one storage
    assert t2[0, 1].item() == -1.0 and s2[0, 0].item() == -1.0


def test_pickle_requires_grad_parameter_buffer_and_non_leaf():
    p = nn.Parameter(ag.randn(3))
    p.grad = ag.ones(3)
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None  # PyTorch does not pickle .grad
    b = pickle.loads(pickle.dumps(nn.Buffer(ag.ones(2), persistent=False)))
    assert type(b) is nn.Buffer and b.persistent is False
    y = p * 2  # PyTorch pickles a non-leaf as a leaf that requires grad
    z = pickle.loads(pickle.dumps(y))
    assert z.is_leaf and z.requires_grad
    _same(z, y)
    r = pickle.loads(pickle.dumps(ag.ones(2, requires_grad=False)))
    assert not r.requires_grad


def test_pickle_arrays_and_modules():
    a = tk.asarray(np.arange(6, dtype=np.int16).reshape(2, 3)).T
    b = pickle.loads(pickle.dumps(a))
    assert b.strides == a.strides and b.dtype == a.dtype
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m2 = pickle.loads(pickle.dumps(m))
    x = ag.randn(5, 3)
    _same(m2(x), m(x))
    assert all(type(p) is nn.Parameter for p in m2.parameters())


def test_pickle_cuda_tensor_copies_through_the_host():
    x = _rand((3, 2), "float32").to("cuda")
    y = pickle.loads(pickle.dumps(x))
    assert y.device == x.device
    _same(y, x)


# ----------------------------------------------------------------------------------------------- share_memory_
def test_share_memory_in_place_for_every_view():
    x = ag.arange(8.0)
    v = x[2:5]
    v.numpy()  # a cached NumPy view of the old memory: share_memory_ must drop it
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and v.is_shared()
    v += 100
    assert x[2].item() == 102.0
    x.share_memory_()  # a no-op once shared
    assert ag.zeros(0).share_memory_().is_shared()
    assert ag.ones(2, device="cuda").is_shared()  # cuda memory is shared through CUDA IPC, as in PyTorch


def test_the_multiprocessing_names():
    import multiprocessing

    for name in ["Process", "Queue", "Pool", "get_context", "set_start_method", "cpu_count", "Event", "Manager"]:
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert mp.SpawnContext is mp.ProcessContext and ag.multiprocessing is mp
    assert issubclass(mp.ProcessRaisedException, mp.ProcessException)
    assert issubclass(mp.ProcessExitedException, mp.ProcessException)
    e = pickle.loads(pickle.dumps(mp.ProcessExitedException("m", 1, 2, -9, "SIGKILL")))
    assert (e.error_index, e.pid, e.exit_code, e.signal_name) == (1, 2, -9, "SIGKILL")


def test_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match="unknown strategy 'shm'.*file_descriptor.*file_system"):
        mp.set_sharing_strategy("shm")
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    x = ag.ones(3).share_memory_()
    names = shared_memory.list_segments(f"{shared_memory.SEGMENT_PREFIX}{os.getpid()}_")
    assert names
    del x
    assert shared_memory.list_segments(f"{shared_memory.SEGMENT_PREFIX}{os.getpid()}_") == []  # last holder unlinks


def test_forking_pickler_shares_and_refuses_non_leaves():
    x = ag.arange(4.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf tensor that requires grad.*shape \\[4\\].*detach"):
        ForkingPickler.dumps(x * 2)
    y = pickle.loads(ForkingPickler.dumps(x))  # in one process: the very same storage comes back
    assert y.requires_grad and y._data._storage is x._data._storage


# ------------------------------------------------------------------------------------- across processes (fork)
def _add_one(t, q):
    t.add_(1)
    q.put("done")


def _roundtrip(q_in, q_out, done):
    t = q_in.get()
    t.mul_(2)  # seen by the sender
    q_out.put((t, ag.full((2,), 5.0, dtype=ag.bfloat16).share_memory_(), t[1:]))
    done.wait(30)  # the receiver needs this process alive to fetch the descriptors (resource sharer)


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_child_updates_are_seen_both_ways(method, strategy):
    mp.set_sharing_strategy(strategy)
    ctx = mp.get_context(method)
    t = ag.zeros(3).share_memory_()
    q = ctx.Queue()
    p = ctx.Process(target=_add_one, args=(t, q))
    p.start()
    assert q.get(timeout=60) == "done"
    p.join(60)
    assert p.exitcode == 0 and t.tolist() == [1.0, 1.0, 1.0]

    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_roundtrip, args=(q_in, q_out, done))
    p.start()
    x = ag.arange(4.0)  # not shared yet: the Queue moves it
    q_in.put(x)
    back, fresh, view = q_out.get(timeout=60)
    done.set()
    p.join(60)
    assert x.is_shared() and x.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert back._data._storage is x._data._storage  # the same segment came back: the same Storage
    view[0] = -1.0
    assert x[1].item() == -1.0
    assert fresh.dtype == ag.bfloat16 and fresh.tolist() == [5.0, 5.0] and fresh.is_shared()


def _echo(q_in, q_out, done):
    for _ in range(2):
        q_out.put(q_in.get())
    done.wait(30)


def test_dtypes_shapes_requires_grad_and_parameters_cross():
    ctx = mp.get_context("fork")
    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_echo, args=(q_in, q_out, done))
    p.start()
    items = [_rand(s, d, i) for i, d in enumerate(DTYPES) for s in [(), (0,), (2, 3)]]
    items += [ag.randn(3, requires_grad=True), nn.Parameter(ag.randn(2, 2)), _rand((4, 5), "int64").t()[1:]]
    arr = tk.asarray(np.arange(6, dtype=np.int16).reshape(2, 3)).T  # a tkernels Array shares its storage too
    q_in.put(items)
    q_in.put((nn.Linear(2, 3), arr))
    got, (lin, arr2) = q_out.get(timeout=60), q_out.get(timeout=60)
    done.set()
    p.join(60)
    assert type(arr2) is tk.Array and arr2.strides == arr.strides and arr2._storage is arr._storage
    np.testing.assert_array_equal(arr2.numpy(), arr.numpy())
    for a, b in zip(items, got, strict=True):
        _same(a, b)
        assert type(a) is type(b) and a.requires_grad == b.requires_grad and a.stride() == b.stride()
    assert type(lin.weight) is nn.Parameter and lin.weight.is_shared()


def _square(t):
    return t * t


def _fill(args):
    t, i = args
    t[i] = i + 1.0
    return i


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_map(method):
    shared = ag.zeros(4).share_memory_()
    with mp.get_context(method).Pool(2) as pool:
        out = pool.map(_square, [ag.full((2,), float(i)) for i in range(4)])
        assert sorted(pool.map(_fill, [(shared, i) for i in range(4)])) == [0, 1, 2, 3]
    assert [o.tolist() for o in out] == [[float(i * i)] * 2 for i in range(4)]
    assert shared.tolist() == [1.0, 2.0, 3.0, 4.0]


def _hogwild_step(rank, model, x, y):
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()  # in place on the shared parameters


def test_gradient_steps_in_children_update_the_shared_model():
    ag.manual_seed(0)
    model = nn.Linear(3, 1)
    model.share_memory()
    before = model.weight.detach().clone()
    x, y = ag.randn(8, 3), ag.randn(8, 1)
    mp.spawn(_hogwild_step, args=(model, x, y), nprocs=2, start_method="fork")
    assert not np.allclose(model.weight.detach().numpy(), before.numpy())
    assert model.weight.grad is None  # each worker had its own gradients


def _accumulate(rank, w, x):
    (w * x).sum().backward()  # accumulates in place into the shared .grad


def test_shared_grads_accumulate_across_processes():
    w = nn.Parameter(ag.zeros(3))
    w.grad = ag.zeros(3)
    m = nn.Module()
    m.w = w
    m.share_memory()
    mp.spawn(_accumulate, args=(w, ag.tensor([1.0, 2.0, 3.0])), nprocs=2, start_method="fork")
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


# --------------------------------------------------------------------------------------------------- spawn errors
def _ok(i, t):
    t[i] = 1.0


def _raise(i):
    if i == 1:
        raise ValueError(f"boom in child {i}")
    import time

    time.sleep(30)  # terminated by the parent once child 1 failed


def _kill(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _exit(i):
    sys.exit(3)


def test_spawn_runs_fn_with_index():
    t = ag.zeros(2).share_memory_()
    assert mp.spawn(_ok, args=(t,), nprocs=2) is None
    assert t.tolist() == [1.0, 1.0]
    ctx = mp.spawn(_ok, args=(t,), nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 1
    while not ctx.join():
        pass


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_spawn_child_exception_carries_its_traceback(method):
    with pytest.raises(mp.ProcessRaisedException, match="(?s)process 1.*ValueError: boom in child 1") as e:
        mp.spawn(_raise, nprocs=2, start_method=method)
    assert e.value.error_index == 1 and "_raise" in str(e.value)
    assert mp.active_children() == []


def test_spawn_killed_and_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="signal SIGKILL") as e:
        mp.spawn(_kill, nprocs=1, start_method="fork")
    assert e.value.signal_name == "SIGKILL" and e.value.exit_code == -signal.SIGKILL
    with pytest.raises(mp.ProcessExitedException, match="exit code 3") as e:
        mp.spawn(_exit, nprocs=1, start_method="fork")
    assert e.value.exit_code == 3 and e.value.signal_name is None


def test_spawn_bad_arguments():
    with pytest.raises(TypeError, match="args must be a tuple"):
        mp.spawn(_ok, args=ag.zeros(2))
    with pytest.raises(ValueError, match="nprocs must be a positive int"):
        mp.spawn(_ok, nprocs=0)
    with pytest.raises(ValueError, match="unknown start_method 'thread'"):
        mp.spawn(_ok, start_method="thread")


# ---------------------------------------------------------------------------------------------------- no leaks
LEAK_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import autograd as ag
    import autograd.multiprocessing as mp

    def child(q, t, strategy):
        mp.set_sharing_strategy(strategy)  # per process, as in PyTorch: a spawned child starts with the default
        mine = ag.full((1000,), 3.0).share_memory_()  # a segment of the child's own, sent then killed
        q.put(mine)
        q.close()
        q.join_thread()  # the message is in the pipe before the kill
        t.add_(1)
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        mp.set_sharing_strategy(sys.argv[1])
        ctx = mp.get_context(sys.argv[2])
        t = ag.zeros(1000).share_memory_()
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q, t, sys.argv[1]))
        p.start()
        got = None
        if sys.argv[1] == "file_system":  # a descriptor cannot be fetched from a dead process
            got = q.get(timeout=60)
        p.join(60)
        print(os.getpid(), p.pid, p.exitcode, t[0].item(), None if got is None else got[0].item(), flush=True)
    """)


@pytest.mark.parametrize("strategy,method", [("file_system", "spawn"), ("file_system", "fork"),
                                             ("file_descriptor", "fork")])
def test_no_segment_left_when_a_child_is_killed(tmp_path, strategy, method):
    script = tmp_path / "leak.py"
    script.write_text(LEAK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, str(script), strategy, method], capture_output=True, text=True, timeout=120,
                       env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    parent, child, code, t0, got = r.stdout.split()
    assert code == str(-signal.SIGKILL) and t0 == "1.0"
    assert got == ("3.0" if strategy == "file_system" else "None")
    for pid in (parent, child):  # the resource tracker has exited with the last process of the tree
        assert shared_memory.list_segments(f"{shared_memory.SEGMENT_PREFIX}{pid}_") == []
