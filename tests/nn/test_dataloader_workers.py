"""DataLoader with worker processes: order, equality with the single-process loader, seeding, prefetching,
persistent workers, errors, timeouts, crashes, interrupts, and shutdown without leaked processes or
shared-memory segments."""

import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import autograd as ag
from nn.data import DataLoader, Dataset, IterableDataset, TensorDataset, _shm, get_worker_info

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="worker tests use fork and /dev/shm")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _np(t):
    return t.detach().cpu().numpy()


def _flat(batch):
    """A batch as nested plain Python values, to compare loaders."""
    if isinstance(batch, ag.Tensor):
        return (str(batch.dtype), _np(batch).tolist())
    if isinstance(batch, dict):
        return {k: _flat(v) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return [_flat(v) for v in batch]
    return batch


OURS = f"nnd{os.getpid():x}_"  # the segments of this process's loaders (pytest-xdist runs others beside us)


@pytest.fixture(autouse=True)
def no_leaks():
    assert _shm.list_segments(OURS) == []
    yield
    assert mp.active_children() == []
    assert _shm.list_segments(OURS) == []


class Mixed(Dataset):
    """Samples of every kind default_collate handles."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full((3,), i, np.float32), "t": ag.tensor([i, -i]), "half": ag.full((2,), i / 4,
                dtype=ag.bfloat16), "label": i % 3, "name": f"s{i}", "pair": (float(i), np.int8(i))}


class Slow(Dataset):
    def __init__(self, n, slow_index, seconds):
        self.n, self.slow_index, self.seconds = n, slow_index, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.slow_index:
            time.sleep(self.seconds)
        return i


class Failing(Dataset):
    def __init__(self, n, bad, exc):
        self.n, self.bad, self.exc = n, bad, exc

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return np.array([i])


class Dying(Dataset):
    def __init__(self, n, bad, how):
        self.n, self.bad, self.how = n, bad, how

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return np.array([i])


class RandomAug(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "wid": info.id, "seed": info.seed, "np": np.random.randint(0, 2**31),
                "py": random.random(), "ag": float(ag.rand(1).item()), "init": _INIT_MARK.get("id", -1)}


_INIT_MARK = {}


def _mark_init(worker_id):
    _INIT_MARK["id"] = worker_id * 100


class Shards(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, self.n, step))


class Pid(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return np.array([i, os.getpid()])


# ------------------------------------------------------------------------------------------------- results
def test_workers_match_single_process_in_order():
    ds = Mixed(11)
    ref = [_flat(b) for b in DataLoader(ds, batch_size=3, shuffle=True, generator=ag.Generator(4))]
    got = [_flat(b) for b in DataLoader(ds, batch_size=3, shuffle=True, generator=ag.Generator(4), num_workers=2)]
    assert got == ref and len(got) == 4
    first = next(iter(DataLoader(ds, batch_size=2, num_workers=2)))
    assert _np(first["x"]).tolist() == [[0, 0, 0], [1, 1, 1]] and first["name"] == ["s0", "s1"]
    assert first["half"].dtype == ag.bfloat16 and first["pair"][1].dtype == ag.int8


def test_workers_without_batching_and_with_drop_last():
    ds = TensorDataset(ag.arange(10))
    assert [int(_np(x)) for (x,) in DataLoader(ds, batch_size=None, num_workers=2)] == list(range(10))
    assert [_np(x).tolist() for (x,) in DataLoader(ds, batch_size=4, drop_last=True, num_workers=2)] == [
        [0, 1, 2, 3], [4, 5, 6, 7]]


def test_in_order_delivery_when_a_worker_is_slow():
    # worker 0 sleeps on its first item; worker 1's batches arrive first but must wait their turn
    out = [_np(b).tolist() for b in DataLoader(Slow(8, 0, 0.3), batch_size=2, num_workers=2)]
    assert out == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_iterable_dataset_sharded_by_worker_info():
    out = [_np(b).tolist() for b in DataLoader(Shards(10), batch_size=2, num_workers=2)]
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    out = [_np(b).tolist() for b in DataLoader(Shards(10), batch_size=2, num_workers=2, drop_last=True)]
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7]]


# ------------------------------------------------------------------------------------------------- seeding
def test_worker_seeding_is_deterministic_and_per_worker():
    def run(**kw):  # collate_fn=list: the batches are the samples themselves
        return [b for b in DataLoader(RandomAug(), batch_size=2, num_workers=2, worker_init_fn=_mark_init,
                                      collate_fn=list, **kw)]

    ag.manual_seed(0)
    a = run()
    ag.manual_seed(0)
    assert run() == a
    ag.manual_seed(1)
    assert run() != a
    assert run(generator=ag.Generator(5)) == run(generator=ag.Generator(5))
    rows = [r for b in a for r in b]
    assert [r["i"] for r in rows] == list(range(8)) and [r["wid"] for r in rows] == [0, 0, 1, 1] * 2
    by_worker = {r["wid"]: r for r in rows}
    assert set(by_worker) == {0, 1}
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1  # seed = base_seed + worker_id
    assert by_worker[0]["init"] == 0 and by_worker[1]["init"] == 100  # worker_init_fn(worker_id) ran first
    assert by_worker[0]["np"] != by_worker[1]["np"] and by_worker[0]["py"] != by_worker[1]["py"]


# ------------------------------------------------------------------------------------ prefetch, persistence
class Counting(Dataset):
    def __init__(self, counter):
        self.counter = counter

    def __len__(self):
        return 20

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        return i


def _wait_for(pred, seconds=3.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not pred():
        time.sleep(0.02)
    time.sleep(0.1)  # and give a wrong implementation the chance to overshoot


def test_prefetch_factor_bounds_batches_in_flight():
    counter = mp.get_context("fork").Value("i", 0)
    it = iter(DataLoader(Counting(counter), batch_size=1, num_workers=2, prefetch_factor=3))
    _wait_for(lambda: counter.value >= 6)
    assert counter.value == 6  # 3 batches per worker
    assert _np(next(it)).tolist() == [0]
    _wait_for(lambda: counter.value >= 7)
    assert counter.value == 7  # one batch consumed, one more requested
    del it


def test_persistent_workers_reuse_processes_across_epochs_and_after_break():
    loader = DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = [_np(b) for b in loader]
    pids = {int(p) for b in e1 for p in b[:, 1]}
    assert [b[:, 0].tolist() for b in e1] == [[0, 1], [2, 3], [4, 5]] and len(pids) == 2
    for _ in loader:  # leave an epoch early: its in-flight results must not leak into the next
        break
    e3 = [_np(b) for b in loader]
    assert [b[:, 0].tolist() for b in e3] == [[0, 1], [2, 3], [4, 5]]
    assert {int(p) for b in e3 for p in b[:, 1]} == pids
    assert len(mp.active_children()) == 2
    del loader


# -------------------------------------------------------------------------------------------------- errors
def test_worker_exception_reraised_with_traceback_and_workers_stopped():
    it = iter(DataLoader(Failing(6, 2, ValueError("bad sample 2")), batch_size=1, num_workers=2))
    assert _np(next(it)).tolist() == [[0]] and _np(next(it)).tolist() == [[1]]
    with pytest.raises(ValueError) as ei:
        next(it)
    msg = str(ei.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent")
    assert "bad sample 2" in msg and "__getitem__" in msg
    assert mp.active_children() == []  # stopped although the exception still holds the iterator
    with pytest.raises(RuntimeError, match="it stopped at an error"):
        next(it)


def test_worker_exception_of_a_local_class_and_keyerror():
    class Local(Exception):
        pass

    with pytest.raises(RuntimeError, match="Caught Local in DataLoader worker process"):
        list(DataLoader(Failing(4, 1, Local("nope")), batch_size=2, num_workers=2))
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Failing(4, 3, KeyError("k")), batch_size=2, num_workers=2))


def test_worker_init_fn_error_and_unpicklable_batch():
    def bad_init(worker_id):
        raise OSError(f"init failed in {worker_id}")

    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0(.|\n)*init failed in 0"):
        list(DataLoader(TensorDataset(ag.arange(4)), batch_size=2, num_workers=2, worker_init_fn=bad_init))
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(DataLoader(TensorDataset(ag.arange(4)), batch_size=2, num_workers=2, collate_fn=lambda b: lambda: b))


@pytest.mark.parametrize("how, expect", [("kill", r"killed by signal SIGKILL"), ("exit", r"exit code 3")])
def test_dead_worker_raises_instead_of_hanging(how, expect):
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \d \(pid \d+\) exited unexpectedly \(" + expect):
        list(DataLoader(Dying(8, 3, how), batch_size=1, num_workers=2))
    assert time.monotonic() - t0 < 5


def test_timeout():
    loader = DataLoader(Slow(4, 1, 3.0), batch_size=1, num_workers=2, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(loader)
    assert time.monotonic() - t0 < 2.9  # not waiting for the slow sample: shutdown terminates its worker


# ------------------------------------------------------------------------------------------------ shutdown
def test_early_break_frees_workers_and_segments_at_once():
    loader = DataLoader(Mixed(40), batch_size=4, num_workers=2)
    for _ in loader:
        break
    assert mp.active_children() == []  # no gc.collect(): dropping the iterator is enough
    it = iter(loader)
    next(it)
    _wait_for(lambda: len(_shm.list_segments(OURS)) >= 1, 1.0)
    assert len(_shm.list_segments(OURS)) >= 1  # prefetched batches wait in shared memory
    del it
    assert mp.active_children() == [] and _shm.list_segments(OURS) == []


def test_keyboard_interrupt_in_loop_body_and_while_waiting():
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(DataLoader(Slow(10, -1, 0), batch_size=1, num_workers=2)):
            if i == 1:
                raise KeyboardInterrupt
    assert mp.active_children() == []
    it = iter(DataLoader(Slow(10, 5, 2.0), batch_size=1, num_workers=2))

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.4)
        with pytest.raises(KeyboardInterrupt):
            for _ in it:  # blocks on the slow sample 5
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert mp.active_children() == []  # shut down before the exception left __next__
    with pytest.raises(RuntimeError, match="workers are gone"):
        next(it)


def test_pin_memory_with_workers():
    xb, yb = next(iter(DataLoader(TensorDataset(ag.ones(4, 2), ag.arange(4)), batch_size=2, num_workers=2,
                                  pin_memory=True)))
    assert xb.is_pinned() and yb.is_pinned() and _np(yb).tolist() == [0, 1]


@pytest.mark.slow
def test_spawn_context_and_a_clean_resource_tracker(tmp_path):
    """In a fresh interpreter: 'spawn' workers, a break, a worker error and a killed worker; at exit Python's
    resource tracker must have nothing to clean up (it would warn about leaked shared_memory)."""
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        import autograd as ag
        from nn.data import DataLoader, Dataset, TensorDataset
        from nn.data import _shm

        class Boom(Dataset):
            def __len__(self):
                return 6
            def __getitem__(self, i):
                if i == 4:
                    raise ValueError("boom")
                if i == 5:
                    os.kill(os.getpid(), signal.SIGKILL)
                return np.arange(3) + i

        if __name__ == "__main__":
            ds = TensorDataset(ag.arange(12.).reshape(6, 2), ag.arange(6))
            ref = [b[1].tolist() for b in DataLoader(ds, batch_size=2, shuffle=True, generator=ag.Generator(1))]
            got = [b[1].tolist() for b in DataLoader(ds, batch_size=2, shuffle=True, generator=ag.Generator(1),
                                                    num_workers=1, multiprocessing_context="spawn")]
            assert got == ref, (got, ref)
            for _ in DataLoader(Boom(), batch_size=1, num_workers=2):
                break
            try:
                list(DataLoader(Boom(), batch_size=1, num_workers=2, sampler=[0, 1, 2, 3, 4]))
            except ValueError as e:
                assert "Caught ValueError" in str(e)
            try:
                list(DataLoader(Boom(), batch_size=1, num_workers=2, sampler=[0, 1, 5, 2, 3]))
            except RuntimeError as e:
                assert "exited unexpectedly" in str(e)
            assert _shm.list_segments(f"nnd{{os.getpid():x}}_") == []
            print("OK")
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK"
    assert "leaked" not in r.stderr and "Traceback" not in r.stderr, r.stderr
