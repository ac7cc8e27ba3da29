"""tkernels.graphs: a captured sequence of backend calls replays with new input values (cpu and interpreted cuda),
allocations become static buffers, random kernels draw anew, and every misuse is refused with a clear error."""

import threading

import numpy as np
import pytest

import tkernels as tk
from tkernels import graphs

RNG = np.random.default_rng(11)
DEVICES = ["cpu", "cuda"]


def _set(a, values):
    tk.copy_into(a, tk.asarray(values, device=a.device))


@pytest.mark.parametrize("dev", DEVICES)
def test_replay_recomputes_from_the_new_inputs(dev):
    xv = RNG.standard_normal((5, 7)).astype(np.float32)
    x = tk.asarray(xv, device=dev)
    w = tk.asarray(RNG.standard_normal((7, 3)).astype(np.float32), device=dev)
    g = graphs.Graph()
    with graphs.graph(g):
        y = tk.sum(tk.exp(x) * 2 + tk.matmul(x, w)[:, :1], axis=0)
        y2 = tk.where(x > 0, x, 0.5)
    assert g.num_calls >= 5 and "captured" in repr(g)
    for _ in range(3):
        xv = RNG.standard_normal((5, 7)).astype(np.float32)
        _set(x, xv)
        g.replay()
        ref = (np.exp(xv) * 2 + (xv @ w.numpy())[:, :1]).sum(0)
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(y2.numpy(), np.where(xv > 0, xv, np.float32(0.5)))


def test_replay_writes_the_same_buffers_and_makes_no_new_arrays():
    x = tk.asarray(RNG.standard_normal(100).astype(np.float32))
    g = graphs.Graph()
    with graphs.graph(g):
        y = tk.exp(x)
    view = y.numpy()  # the NumPy view of the static output
    _set(x, np.zeros(100, np.float32))
    g.replay()
    assert np.all(view == 1.0)


def test_in_place_updates_repeat_on_each_replay():
    p = tk.asarray(np.ones(4, np.float32))
    g = graphs.Graph()
    with graphs.graph(g):
        tk.multiply(p, 2.0, out=p)
    assert np.all(p.numpy() == 2)
    g.replay()
    g.replay()
    assert np.all(p.numpy() == 8)


@pytest.mark.parametrize("dev", DEVICES)
def test_random_kernels_draw_new_numbers_at_each_replay(dev):
    tk.random.seed(3)
    g = graphs.Graph()
    with graphs.graph(g):
        r = tk.random.normal(shape=(64,), device=dev)
    first = r.numpy().copy()
    g.replay()
    second = r.numpy().copy()
    assert not np.array_equal(first, second)
    tk.random.seed(3)  # the same generator stream as eager calls
    a = tk.random.normal(shape=(64,), device=dev).numpy()
    b = tk.random.normal(shape=(64,), device=dev).numpy()
    np.testing.assert_array_equal(first, a)
    np.testing.assert_array_equal(second, b)


def test_a_kernel_returning_a_fresh_array_is_copied_into_the_captured_one():
    x = tk.asarray(RNG.standard_normal((8, 8)).astype(np.float32))
    g = graphs.Graph()
    with graphs.graph(g):
        out, mask = tk.ops.dropout(x, 0.5, training=True, return_mask=True)
    m0 = mask.numpy().copy()
    for _ in range(5):
        g.replay()
        if not np.array_equal(mask.numpy(), m0):
            break
    else:
        pytest.fail("dropout's mask did not change over 5 replays")
    np.testing.assert_array_equal(out.numpy(), np.where(mask.numpy(), x.numpy() * 2, 0).astype(np.float32))


def test_host_reads_are_refused_while_capturing():
    x = tk.asarray(np.ones(3, np.float32))
    for read in (lambda: float(tk.sum(x)), lambda: x.numpy(), lambda: x.tolist(), lambda: bool(x[0]),
                 lambda: tk.sum(x).item()):
        g = graphs.Graph()
        with pytest.raises(RuntimeError, match="not allowed while a graph is being captured"):
            with graphs.graph(g):
                read()
        with pytest.raises(RuntimeError, match="holds no capture"):  # a failed capture keeps nothing
            g.replay()
    assert not graphs.is_capturing()
    assert x.tolist() == [1.0, 1.0, 1.0]  # and reads work again after


def test_host_call_runs_at_capture_and_at_every_replay():
    seen = []
    x = tk.asarray(np.ones(2, np.float32))
    g = graphs.Graph()
    with graphs.graph(g):
        y = x + 1
        graphs.host_call(lambda a: seen.append(float(a[0])), y)  # may read values: it runs eagerly each time
    g.replay()
    g.replay()
    assert seen == [2.0, 2.0, 2.0]
    assert graphs.host_call(lambda: 5) == 5  # outside a capture: just a call


def test_misuse_errors():
    g = graphs.Graph()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="not being captured"):
        g.capture_end()
    with pytest.raises(TypeError, match="expected a tkernels.graphs.Graph"):
        with graphs.graph(object()):
            pass
    with graphs.graph(g):
        assert graphs.is_capturing()
        with pytest.raises(RuntimeError, match="do not nest"):
            graphs.Graph().capture_begin()
        with pytest.raises(RuntimeError, match="not allowed while a graph is being captured"):
            g.replay()
        with pytest.raises(RuntimeError, match="not allowed while this graph is being captured"):
            g.reset()
    with pytest.raises(RuntimeError, match="already holds a capture"):
        g.capture_begin()
    g.reset()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.replay()


def test_the_device_caches_are_restored_after_capture_and_after_a_failure():
    cpu = tk.Device("cpu")
    before = cpu._impls
    with graphs.graph(graphs.Graph()):
        tk.exp(tk.ones(2))
    assert cpu._impls is before
    with pytest.raises(ZeroDivisionError):
        with graphs.graph(graphs.Graph()):
            tk.exp(tk.ones(2))
            raise ZeroDivisionError("in the body")
    assert cpu._impls is before and not graphs.is_capturing()


def test_other_threads_are_not_recorded():
    x = tk.asarray(np.ones(3, np.float32))
    other = {}

    def work():
        other["y"] = x * 3
        other["v"] = float(tk.sum(other["y"]))  # a host read on another thread is allowed

    g = graphs.Graph()
    with graphs.graph(g):
        y = x + 1
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert other["v"] == 9.0 and g.num_calls == 1
    _set(x, np.full(3, 5, np.float32))
    g.replay()
    assert y.tolist() == [6.0, 6.0, 6.0] and other["y"].tolist() == [3.0, 3.0, 3.0]


def test_cuda_names_follow_pytorch():
    assert tk.cuda.CUDAGraph is graphs.Graph and tk.cuda.graph is graphs.graph
    assert tk.cuda.is_current_stream_capturing() is False


@pytest.mark.parametrize("dev", DEVICES)
def test_replay_of_odd_sizes_views_empty_and_0d_arrays(dev):
    xv = RNG.standard_normal((129, 7)).astype(np.float32)
    x = tk.asarray(xv, device=dev)
    e = tk.asarray(np.zeros((0, 3), np.float32), device=dev)
    s = tk.asarray(np.float32(2.0), device=dev)
    g = graphs.Graph()
    with graphs.graph(g):
        t = tk.exp(x.mT[:, ::2]) * s  # a transposed, strided view of the input
        total = tk.sum(x)  # 0-d result
        empty = tk.exp(e) + 1.0
    for _ in range(2):
        xv = RNG.standard_normal((129, 7)).astype(np.float32)
        _set(x, xv)
        _set(s, np.float32(3.0))
        g.replay()
        np.testing.assert_allclose(t.numpy(), np.exp(xv.T[:, ::2]) * 3, rtol=1e-6)
        np.testing.assert_allclose(float(total), xv.sum(), rtol=1e-5)
        assert empty.shape == (0, 3)


@pytest.mark.parametrize("dev", DEVICES)
def test_interpreted_and_cpu_replays_make_no_cuda_graph_segments(dev):
    """Real CUDA graphs are for a GPU (tests/tkernels/cuda/test_cuda_graphs_fake_driver.py); elsewhere a replay is
    the recorded calls, and says so."""
    x = tk.asarray(np.arange(5, dtype=np.float32), device=dev)
    g = graphs.Graph()
    with graphs.graph(g):
        y = x * 2
    g.replay()
    assert g.cuda_graph_segments == []
    np.testing.assert_array_equal(y.numpy(), np.arange(5, dtype=np.float32) * 2)
