"""The NumPy backend's intra-op threads (``tkernels/backends/numpy/_threads.py``) and the convolutions that split
their images over them."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.numpy import _threads, ops_conv
from tkernels.ops.conv import conv2d, conv2d_backward, conv_transpose2d


def _record(log, barrier=None):
    def fn(lo, hi):
        log.append((lo, hi, threading.current_thread().name))
        if barrier is not None:
            barrier.wait(10)  # every part runs at once (a BrokenBarrierError otherwise)
        return list(range(lo, hi))
    return fn


@pytest.mark.parametrize("n,parts", [(7, 2), (7, 3), (2, 2), (5, 8), (10, 4)])
def test_split_cuts_contiguous_parts_in_order(n, parts):
    log, t = [], min(n, parts)
    res = _threads.split(n, _record(log, threading.Barrier(t)), parts=parts)
    assert len(res) == t
    assert [v for part in res for v in part] == list(range(n))
    sizes = [len(p) for p in res]
    assert max(sizes) - min(sizes) <= 1
    assert len({name for _, _, name in log}) == t  # each part on its own thread
    assert threading.current_thread().name in {name for _, _, name in log}


@pytest.mark.parametrize("n,parts", [(0, 2), (1, 4), (9, 1)])
def test_split_runs_one_part_on_the_caller_when_there_is_nothing_to_split(n, parts):
    log = []
    assert _threads.split(n, _record(log), parts=parts) == [list(range(n))]
    assert log == [(0, n, threading.current_thread().name)]


def test_split_takes_its_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "3")
    assert _threads.num_threads() == 3
    assert len(_threads.split(9, lambda lo, hi: hi - lo)) == 3
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "1")
    assert _threads.split(9, lambda lo, hi: hi - lo) == [9]
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("TKERNELS_NUM_THREADS", bad)
        with pytest.raises(ValueError, match=r"TKERNELS_NUM_THREADS must be a positive integer, got '" + bad):
            _threads.num_threads()


@pytest.mark.skipif(_threads._BLAS is None, reason="NumPy's BLAS is not an OpenBLAS with a settable thread count")
def test_split_runs_blas_on_one_thread_and_restores_its_count(monkeypatch):
    monkeypatch.delenv("TKERNELS_NUM_THREADS", raising=False)
    get, put = _threads._BLAS
    before = get()
    try:
        put(2)
        seen = _threads.split(4, lambda lo, hi: get(), parts=2)
        assert seen == [1, 1]
        assert get() == 2
        with pytest.raises(ZeroDivisionError):
            _threads.split(4, lambda lo, hi: 1 / 0, parts=2)
        assert get() == 2
        assert _threads.num_threads() == 2  # the BLAS's count
        assert len(_threads.split(4, lambda lo, hi: None)) == 2
    finally:
        put(before)


def test_split_raises_a_parts_error_after_every_part_finished():
    done = []

    def fn(lo, hi):
        if lo == 0:
            raise KeyError("first part")
        threading.Event().wait(0.05)
        done.append(lo)

    with pytest.raises(KeyError, match="first part"):
        _threads.split(6, fn, parts=3)
    assert sorted(done) == [2, 4]
    assert _threads.split(2, lambda lo, hi: lo, parts=2) == [0, 1]  # usable again


def test_split_inside_a_split_and_beside_another_thread_runs_on_the_caller():
    inner = []

    def outer(lo, hi):
        inner.append(_threads.split(4, lambda a, b: (a, b), parts=2))

    _threads.split(2, outer, parts=2)
    assert inner == [[(0, 4)], [(0, 4)]]

    entered, release, seen = threading.Event(), threading.Event(), []

    def hold(lo, hi):
        if lo == 0:
            entered.set()
            release.wait(5)

    t = threading.Thread(target=_threads.split, args=(2, hold), kwargs={"parts": 2})
    t.start()
    assert entered.wait(5)
    seen.append(_threads.split(4, lambda a, b: (a, b), parts=2))
    release.set()
    t.join(5)
    assert seen == [[(0, 4)]]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_split_works_in_a_forked_child():
    _threads.split(4, lambda lo, hi: None, parts=2)  # the parent has a pool
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        ok = _threads.split(6, lambda lo, hi: hi - lo, parts=3) == [2, 2, 2]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def split_convs(monkeypatch):
    """Every convolution split over ``TKERNELS_NUM_THREADS`` threads, whatever its size."""
    monkeypatch.setattr(ops_conv, "_SPLIT_MIN_MACS", 0)
    return lambda n: monkeypatch.setenv("TKERNELS_NUM_THREADS", str(n))


@pytest.mark.parametrize("case", [((5, 6, 9, 11), (8, 3, 3, 3), 1, 1, 2), ((4, 4, 7, 7), (6, 4, 3, 2), 2, (1, 0), 1),
                                  ((3, 8, 6, 5), (8, 8, 1, 1), 1, 0, 1)], ids=["s1-g2", "s2", "1x1"])
def test_split_convolutions_match_one_thread(case, split_convs, monkeypatch):
    xs, ws, s, p, g = case
    monkeypatch.setattr(ops_conv, "_NHWC_PIXELS", 0)  # the "image" layout: the one that splits
    rng = np.random.default_rng(2)
    x = tk.asarray(rng.standard_normal(xs).astype(np.float32))
    w = tk.asarray(rng.standard_normal(ws).astype(np.float32))
    b = tk.asarray(rng.standard_normal(ws[0]).astype(np.float32))
    res = {}
    for n in (1, 2, 3):
        split_convs(n)
        y = conv2d(x, w, b, s, p, 1, g)
        gr = tk.asarray(np.random.default_rng(3).standard_normal(y.shape).astype(np.float32))
        res[n] = [a.numpy() for a in (y, *conv2d_backward(gr, x, w, s, p, 1, g))]
    for n in (2, 3):
        y, dx, dw, db = res[n]
        y1, dx1, dw1, db1 = res[1]
        np.testing.assert_array_equal(y, y1)  # each image's GEMM is the same call
        np.testing.assert_array_equal(dx, dx1)
        np.testing.assert_array_equal(db, db1)
        np.testing.assert_allclose(dw, dw1, rtol=0, atol=1e-5 * np.abs(dw1).max())  # summed in another order
        assert not np.array_equal(dw, np.zeros_like(dw))


def test_split_transposed_convolution_matches_one_thread(split_convs):
    rng = np.random.default_rng(4)
    x = tk.asarray(rng.standard_normal((5, 4, 6, 7)).astype(np.float32))
    w = tk.asarray(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    split_convs(1)
    want = conv_transpose2d(x, w, None, 1, 1).numpy()
    split_convs(2)
    np.testing.assert_array_equal(conv_transpose2d(x, w, None, 1, 1).numpy(), want)


def test_small_convolutions_stay_on_the_calling_thread(monkeypatch):
    calls = []
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "2")
    real = _threads.split
    monkeypatch.setattr(_threads, "split", lambda n, fn, **kw: calls.append(n) or real(n, fn, **kw))
    x = tk.asarray(np.ones((2, 3, 5, 5), np.float32))
    w = tk.asarray(np.ones((4, 3, 3, 3), np.float32))
    np.testing.assert_array_equal(conv2d(x, w, None, 1, 0).numpy(), np.full((2, 4, 3, 3), 27, np.float32))
    assert calls == []  # 2 * 4 * 9 * 27 multiply-adds: below _SPLIT_MIN_MACS
    big = tk.asarray(np.ones((4, 16, 32, 32), np.float32))
    wb = tk.asarray(np.ones((16, 16, 3, 3), np.float32))
    y = conv2d(big, wb, None, 1, 1).numpy()
    assert calls == [4]
    assert y[0, 0, 5, 5] == 144 and y[3, 15, 0, 0] == 64
    monkeypatch.setattr(ops_conv, "_NHWC_PIXELS", 1 << 30)  # "nhwc" never splits (its rounding would move)
    np.testing.assert_array_equal(conv2d(big, wb, None, 1, 1).numpy(), y)
    conv2d_backward(tk.asarray(y), big, wb, 1, 1)
    assert calls == [4]


def test_without_a_settable_openblas_the_count_is_one_unless_set(monkeypatch):
    monkeypatch.setattr(_threads, "_BLAS", None)
    monkeypatch.delenv("TKERNELS_NUM_THREADS", raising=False)
    assert _threads.num_threads() == 1
    assert _threads.split(6, lambda lo, hi: (lo, hi)) == [(0, 6)]
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "2")
    assert _threads.split(6, lambda lo, hi: (lo, hi)) == [(0, 3), (3, 6)]
