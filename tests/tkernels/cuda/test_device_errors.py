"""Errors found by cuda kernels (tkernels/cuda/device_errors.py): every op that can meet a bad index or value
records it on (interpreted) cuda and raises the cpu backend's exception class, naming the op and the value, at
the next synchronising call (``item``/``numpy``/``tolist``/``synchronize``, a stream's or event's
``synchronize``, the end of ``backward``, ``Graph.replay``); the first error wins; the buffer is cleared after and
later ops are right; ``TKERNELS_SYNC_CHECKS=1`` raises at the op; valid inputs (negative indices where the op
takes them, empty inputs) never raise; cpu raises at the call as before."""

import numpy as np
import pytest

import tkernels as tk
from tkernels import graphs
from tkernels import ops as tko
from tkernels.checks import device_assert
from tkernels.validation import NegativeIntegerPowerError
from tkernels.validation import ZeroDivisionError as IntegerDivisionByZero

cuda = pytest.importorskip("tkernels.cuda")
pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="no (interpreted) cuda")


def _x(d):
    return tk.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=d)


def _ix(v, d, dtype=tk.int64):
    return tk.asarray(np.asarray(v), dtype=dtype, device=d)


def _setitem(d, key_values):
    x = _x(d)
    x[_ix(key_values, d)] = 1.0
    return x


def _logits(d, dtype=tk.float32):
    return tk.asarray(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), dtype=dtype, device=d)


# name -> (op(device) returning an Array, exception class, words the message must hold)
CASES = {
    "take": (lambda d: tk.take(_x(d), _ix([0, 5, 1], d), axis=0), IndexError, ["take", "index 5"]),
    "take_negative": (lambda d: tk.take(_x(d), _ix([-4], d), axis=0), IndexError, ["take", "index -4"]),
    "index_select": (lambda d: tk.index_select(_x(d), 1, _ix([0, 9], d, tk.int32)), IndexError,
                     ["index_select", "index 9"]),
    "gather": (lambda d: tk.gather(_x(d), 1, _ix([[0, 4], [1, 1], [2, 3]], d)), IndexError, ["gather", "4"]),
    "gather_negative": (lambda d: tk.gather(_x(d), 1, _ix([[0, -1]] * 3, d)), IndexError, ["gather", "-1"]),
    "take_along_axis": (lambda d: tk.take_along_axis(_x(d), _ix([[7]] * 3, d), axis=1), IndexError,
                        ["take_along_axis", "7"]),
    "scatter": (lambda d: tk.scatter(_x(d), 0, _ix([[0, 3, 1, 1]], d), _x(d)[:1]), IndexError, ["scatter", "3"]),
    "scatter_add": (lambda d: tk.scatter_add(_x(d), 1, _ix([[0, 6]] * 3, d), _x(d)[:, :2]), IndexError,
                    ["scatter_add", "6"]),
    "index_put": (lambda d: tk.index_put(_x(d), (_ix([2, 3], d),), _x(d)[:2]), IndexError, ["index_put", "3"]),
    "index_put_accumulate": (lambda d: tk.index_put(_x(d), (_ix([0], d), _ix([-5], d)), _ix([1.0], d, tk.float32),
                                                    accumulate=True), IndexError, ["index_put", "-5"]),
    "getitem": (lambda d: _x(d)[_ix([1, 3], d)], IndexError, ["index", "3"]),
    "getitem_second_axis": (lambda d: _x(d)[:, _ix([0, 4], d)], IndexError, ["index", "4", "axis 1"]),
    "setitem": (lambda d: _setitem(d, [0, 8]), IndexError, ["setitem", "8"]),
    "one_hot": (lambda d: tk.one_hot(_ix([0, 3], d), 3), ValueError, ["one_hot", "3"]),
    "one_hot_negative": (lambda d: tk.one_hot(_ix([-1, 1], d), 3), ValueError, ["one_hot", "-1"]),
    "embedding": (lambda d: tko.embedding(_x(d), _ix([0, 5], d)), IndexError, ["embedding", "5"]),
    "cross_entropy": (lambda d: tko.cross_entropy(_logits(d), _ix([0, 3], d)), IndexError, ["cross_entropy", "3"]),
    "cross_entropy_none": (lambda d: tko.cross_entropy(_logits(d), _ix([-2, 0], d), reduction="none"), IndexError,
                           ["cross_entropy", "-2"]),
    "nll_loss": (lambda d: tko.nll_loss(_logits(d), _ix([4, 0], d, tk.int32)), IndexError, ["nll_loss", "4"]),
    "floor_divide": (lambda d: tk.floor_divide(_ix([7, 8, 9], d), _ix([1, 0, 2], d)), IntegerDivisionByZero,
                     ["floor_divide", "division by zero"]),
    "remainder": (lambda d: tk.remainder(_ix([7, 8], d, tk.int32), _ix([0, 3], d, tk.int32)), IntegerDivisionByZero,
                  ["remainder", "division by zero"]),
    "fmod": (lambda d: tk.fmod(_ix([7, 8], d, tk.int8), _ix([2, 0], d, tk.int8)), IntegerDivisionByZero,
             ["fmod", "division by zero"]),
    "trunc_divide": (lambda d: tk.trunc_divide(_ix([7, -8], d), _ix([0, 3], d)), IntegerDivisionByZero,
                     ["trunc_divide", "division by zero"]),
    "floor_divide_scalar_left": (lambda d: tk.floor_divide(5, _ix([1, 0], d)), IntegerDivisionByZero,
                                 ["floor_divide"]),
    "pow": (lambda d: tk.pow(_ix([2, 3], d), _ix([1, -2], d)), NegativeIntegerPowerError, ["pow", "-2"]),
    "pow_narrow": (lambda d: tk.pow(_ix([1, 3], d, tk.int8), _ix([-1, 1], d, tk.int8)), NegativeIntegerPowerError,
                   ["pow", "-1"]),
    "device_assert": (lambda d: device_assert(tk.asarray([True, True, False], device=d), "multinomial",
                                              cuda.device_errors.INVALID_DISTRIBUTION) or _x(d), RuntimeError,
                      ["multinomial", "row 2"]),
    "device_assert_bound": (lambda d: device_assert(tk.asarray([[True], [False]], device=d)[:, 0], "multinomial",
                                                    cuda.device_errors.TOO_FEW_CATEGORIES, 4) or _x(d), RuntimeError,
                            ["multinomial", "n_sample=4", "row 1"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_raises_at_the_op(name):
    op, exc, words = CASES[name]
    with pytest.raises(exc) as info:
        op("cpu")
    msg = str(info.value)
    assert words[0] in msg, msg


SYNCS = {
    "numpy": lambda r: r.numpy(),
    "item": lambda r: r.reshape(-1)[:1].item(),
    "tolist": lambda r: r.tolist(),
    "__array__": lambda r: np.asarray(r),
    "synchronize": lambda r: tk.cuda.synchronize(),
    "stream": lambda r: tk.cuda.current_stream().synchronize(),
    "event": lambda r: tk.cuda.current_stream().record_event().synchronize(),
    "to_cpu": lambda r: r.to("cpu"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_records_and_raises_at_the_next_sync(name):
    op, exc, words = CASES[name]
    r = op("cuda")  # no raise at the op: the kernel recorded it
    sync = list(SYNCS.values())[sorted(CASES).index(name) % len(SYNCS)]  # each sync point in turn
    with pytest.raises(exc) as info:
        sync(r)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert "recorded on cuda:0" in msg and "TKERNELS_SYNC_CHECKS=1" in msg, msg
    # cleared: the process goes on, and a correct op is right
    tk.cuda.synchronize()
    y = tk.take(_x("cuda"), _ix([2, -1], "cuda"), axis=0)
    np.testing.assert_array_equal(y.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)[[2, -1]])


@pytest.mark.parametrize("sync", sorted(SYNCS))
def test_every_sync_point_raises(sync):
    r = tk.take(_x("cuda"), _ix([0, 5], "cuda"), axis=0)
    with pytest.raises(IndexError, match="take: index 5"):
        SYNCS[sync](r)


def test_bad_elements_get_defined_values_and_writes_are_skipped():
    x = _x("cuda")
    y = tk.take(x, _ix([1, 99, -1], "cuda"), axis=0)
    with pytest.raises(IndexError):
        tk.cuda.synchronize()
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(y.numpy(), np.stack([ref[1], np.zeros(4, np.float32), ref[2]]))
    x[_ix([0, -99], "cuda")] = 5.0  # the good row is written, the bad one nowhere
    with pytest.raises(IndexError, match="setitem: index -99"):
        tk.cuda.synchronize()
    ref[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), ref)
    q = tk.floor_divide(_ix([7, 8], "cuda"), _ix([2, 0], "cuda"))
    with pytest.raises(ZeroDivisionError):
        tk.cuda.synchronize()
    assert q.tolist() == [3, 0]


def test_the_first_error_wins():
    a = tk.take(_x("cuda"), _ix([0, 6], "cuda"), axis=0)
    b = tko.cross_entropy(_logits("cuda"), _ix([9, 0], "cuda"))
    c = tk.floor_divide(_ix([1], "cuda"), _ix([0], "cuda"))
    with pytest.raises(IndexError, match="take: index 6") as info:
        c.numpy()
    assert "cross_entropy" not in str(info.value)
    for r in (a, b, c):  # reported once: the buffer is clear
        r.numpy()


def test_the_first_bad_element_of_a_block_is_reported():
    idx = np.zeros(5000, np.int64)  # crosses the interpreter's 4096-element blocks
    idx[[17, 300, 4500]] = [40, 50, 60]
    r = tk.take(tk.arange(10, dtype=tk.float32, device="cuda"), _ix(idx, "cuda"), axis=0)
    with pytest.raises(IndexError, match="index 40 is out of bounds"):
        r.numpy()


def test_valid_inputs_never_raise():
    d = "cuda"
    x = _x(d)
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(tk.take(x, _ix([-3, 2, -1], d), axis=0).numpy(), ref[[-3, 2, -1]])
    np.testing.assert_array_equal(x[_ix([-1, 0], d), _ix([-4, 3], d)].numpy(), ref[[-1, 0], [-4, 3]])
    np.testing.assert_array_equal(tk.take(x, _ix([], d), axis=0).numpy(), ref[[]])
    assert tk.gather(x, 1, _ix(np.zeros((3, 0)), d)).shape == (3, 0)
    assert tk.one_hot(_ix([], d), 4).shape == (0, 4)
    np.testing.assert_array_equal(tk.one_hot(_ix([0, 2], d), 3).numpy(), np.eye(3, dtype=np.int64)[[0, 2]])
    assert tko.embedding(x, _ix([], d)).shape == (0, 4)
    ce = tko.cross_entropy(_logits(d), _ix([2, -100], d))  # ignore_index
    assert np.isfinite(ce.item())
    assert tk.floor_divide(_ix([7, -7], d), _ix([2, 2], d)).tolist() == [3, -4]
    assert tk.pow(_ix([2, 3], d), _ix([0, 3], d)).tolist() == [1, 27]
    assert tk.floor_divide(_x(d), tk.zeros((3, 4), device=d)).numpy()[0, 1] == np.inf  # floats: no error
    tk.cuda.synchronize()


def test_sync_checks_raise_at_the_op(monkeypatch):
    monkeypatch.setenv("TKERNELS_SYNC_CHECKS", "1")  # read at use time
    x = _x("cuda")
    with pytest.raises(IndexError, match="raised at the op") as info:
        x[_ix([1, 7], "cuda")] = 3.0
    assert "setitem: index 7" in str(info.value)
    np.testing.assert_array_equal(x.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))  # nothing written
    with pytest.raises(ZeroDivisionError):
        tk.remainder(_ix([1], "cuda"), _ix([0], "cuda"))
    assert tk.take(x, _ix([1], "cuda"), axis=0).shape == (1, 4)
    monkeypatch.delenv("TKERNELS_SYNC_CHECKS")
    tk.cuda.set_sync_checks(True)
    try:
        assert tk.cuda.sync_checks_enabled()
        with pytest.raises(ValueError, match="one_hot"):
            tk.one_hot(_ix([5], "cuda"), 2)
    finally:
        tk.cuda.set_sync_checks(None)
    assert not tk.cuda.sync_checks_enabled()
    tk.one_hot(_ix([5], "cuda"), 2)  # deferred again
    with pytest.raises(ValueError, match="one_hot: class value 5"):
        tk.cuda.synchronize()


def test_graph_replay_raises_a_recorded_error():
    x = _x("cuda")
    idx = _ix([0, 1], "cuda")
    g = graphs.Graph()
    with graphs.graph(g):
        y = tk.take(x, idx, axis=0)
    g.replay()
    tk.copy_into(idx, _ix([0, 12], "cuda"))
    with pytest.raises(IndexError, match="take: index 12"):
        g.replay()
    tk.copy_into(idx, _ix([2, 1], "cuda"))
    g.replay()
    np.testing.assert_array_equal(y.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)[[2, 1]])


def test_the_buffer_is_one_small_block_per_device():
    from tkernels.backends.triton._launch import error_buffer
    from tkernels.cuda import device_errors

    dev = tk.asarray([0], device="cuda").device
    a = error_buffer(dev)
    assert a is error_buffer(dev) and a.dtype == tk.int64 and a.shape == (device_errors.WORDS,)
    assert a.numpy().tolist() == [0] * device_errors.WORDS
