"""Thread safety (issue 14, items 1 and 2): the first use of a device from several threads at once, kernels
launched from several threads through Triton's interpreter, and backward passes on several threads into one
shared leaf: results equal a serial run, on cpu and interpreted cuda."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import autograd as ag

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = ["cpu"] + (["cuda"] if ag.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_first_use_of_a_device_from_several_threads_at_once(device):
    """In a fresh process (nothing loaded yet), four threads start together: every one gets its result
    (the backend was marked loaded before its registrations finished: three of four raised NotImplementedError)."""
    code = textwrap.dedent(f"""
        import threading
        import autograd as ag
        n = 4
        barrier, out, errors = threading.Barrier(n), [None] * n, []
        def work(i):
            barrier.wait()
            try:
                out[i] = (ag.ones(3, device={device!r}) + i).tolist()
            except Exception as e:
                errors.append(f"{{type(e).__name__}}: {{e}}")
        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(errors)
        print(out)
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    for _ in range(3):  # a race: a few fresh processes
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        errors, out = r.stdout.strip().splitlines()[-2:]
        assert errors == "[]", errors
        assert out == str([[1.0 + i] * 3 for i in range(4)])


def _run_threads(fn, n):
    barrier, errors = threading.Barrier(n), []

    def body(i):
        barrier.wait()
        try:
            fn(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors


@pytest.mark.parametrize("device", DEVICES)
def test_kernels_from_several_threads_equal_a_serial_run(device):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((33, 17)).astype(np.float32) for _ in range(4)]
    serial = [((ag.tensor(x, device=device) * 2.0).exp().sum(dim=1)).cpu().numpy() for x in xs]
    got = [None] * 4

    def work(i):
        for _ in range(3):
            got[i] = ((ag.tensor(xs[i], device=device) * 2.0).exp().sum(dim=1)).cpu().numpy()

    _run_threads(work, 4)
    for g, s in zip(got, serial):
        np.testing.assert_array_equal(g, s)


@pytest.mark.parametrize("device", DEVICES)
def test_backward_on_several_threads_into_a_shared_leaf_sums(device):
    """Four threads, each a few backward passes into one leaf: ``.grad`` is the sum of every contribution (a
    lost update of the read-modify-write left only some of them)."""
    rng = np.random.default_rng(1)
    w = ag.tensor(rng.standard_normal((8, 5)).astype(np.float64), device=device, requires_grad=True)
    xs = [rng.standard_normal((6, 8)) for _ in range(4)]
    reps = 5
    expect = sum(x.sum(axis=0)[:, None] * np.ones((1, 5)) for x in xs) * reps

    def work(i):
        x = ag.tensor(xs[i], device=device)
        for _ in range(reps):
            (x @ w).sum().backward()

    _run_threads(work, 4)
    np.testing.assert_allclose(w.grad.cpu().numpy(), expect, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_eight_threads_training_separate_models_equal_a_serial_run(device):
    """Eight threads, each its own model, optimizer and data (the thread-safety contract of the README):
    every thread's parameters after a few steps equal, bit for bit, those of the same training run alone."""
    import nn
    from nn import functional as F  # noqa: N812 - PyTorch code writes it so

    rng = np.random.default_rng(2)
    data = [(rng.standard_normal((7, 5)).astype(np.float32), rng.integers(0, 3, 7)) for _ in range(8)]

    def make(i):
        ag.manual_seed(100 + i)
        model = nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.Linear(9, 3)).to(device)
        return model, nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train(model, opt, i):
        x, y = ag.tensor(data[i][0], device=device), ag.tensor(data[i][1], device=device)
        for _ in range(3):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().cpu().numpy() for p in model.parameters()]

    serial = [train(*make(i), i) for i in range(8)]
    models = [make(i) for i in range(8)]  # built (seeded) up front: the global generator is shared state
    got = [None] * 8

    def work(i):
        got[i] = train(*models[i], i)

    _run_threads(work, 8)
    for i in range(8):
        for g, s in zip(got[i], serial[i]):
            np.testing.assert_array_equal(g, s)
