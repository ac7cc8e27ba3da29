"""Large elementwise ops and batch norm on the NumPy backend split over the intra-op threads
(``_threads.elementwise``, ``ops_normalization._by_channels``): the same values, bit for bit, as the whole call,
for broadcasting, strided views, in-place and overlapping outputs, every dtype kind. The split threshold is made
tiny here so that small arrays split (3 threads); each test also checks that a split really happened."""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.numpy import _threads

_RNG = np.random.default_rng(7)


@pytest.fixture
def splits(monkeypatch):
    """Run ``fn()`` whole (threshold out of reach) and split (threshold 16 values, 3 threads); returns both
    results and how many splits ran, with how many parts each."""
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "3")
    real = _threads.split
    log = []

    def counting(n, fn, *, parts=None):
        res = real(n, fn, parts=parts)
        log.append(len(res))
        return res

    monkeypatch.setattr(_threads, "split", counting)

    def run(fn):
        monkeypatch.setattr(_threads, "SPLIT_MIN_VALUES", 1 << 62)
        log.clear()
        whole = fn()
        assert log == [], "the whole call split"
        monkeypatch.setattr(_threads, "SPLIT_MIN_VALUES", 16)
        parted = fn()
        return whole, parted, list(log)

    return run


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "fc":
        return a.view(np.dtype(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else np.uint8)
    return a


def _same(x, y) -> None:
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape and x.dtype == y.dtype
    np.testing.assert_array_equal(_bits(x), _bits(y))


def _arr(shape, dtype=np.float32):
    v = _RNG.standard_normal(shape) * 3
    if np.dtype(dtype).kind in "iu":
        v = _RNG.integers(-50, 50, shape)
    v = np.asarray(v).astype(dtype)
    if v.dtype.kind == "f" and v.size > 4:
        v.reshape(-1)[:4] = [np.nan, np.inf, -0.0, -np.inf]
    return v


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "pow", "less", "atan2"])
@pytest.mark.parametrize("sa,sb", [((37, 29), (37, 29)), ((37, 29), (29,)), ((5, 1, 7), (1, 6, 7)),
                                   ((41, 3), ()), ((1, 50), (9, 1))])
def test_binary_ops_split_as_whole(splits, op, sa, sb):
    a, b = _arr(sa), _arr(sb)
    fn = getattr(tk, op)
    whole, parted, log = splits(lambda: np.asarray(fn(tk.asarray(a), tk.asarray(b) if b.ndim else 1.5)))
    _same(whole, parted)
    assert log and all(p >= 2 for p in log)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.complex64, np.bool_])
def test_binary_ops_split_in_every_dtype(splits, dtype):
    a, b = _arr((23, 17), dtype), _arr((23, 17), dtype)
    whole, parted, log = splits(lambda: np.asarray(tk.multiply(tk.asarray(a), tk.asarray(b))))
    _same(whole, parted)
    assert log


def test_strided_views_split_as_whole(splits):
    base = _arr((40, 60))
    x = tk.asarray(base)
    whole, parted, log = splits(lambda: np.asarray(tk.add(x[:, ::3], x.T[::3, :40].T[:, :20])))
    _same(whole, parted)
    _same(whole, base[:, ::3] + base.T[::3, :40].T[:, :20])
    assert log


def test_in_place_and_overlapping_outputs(splits):
    base = _arr((64,)).astype(np.float32)

    def in_place():
        x = tk.asarray(base.copy())
        tk.multiply(x, 3.0, out=x)
        tk.add(x, x, out=x)
        return np.asarray(x)

    whole, parted, log = splits(in_place)
    _same(whole, parted)
    _same(whole, (base * np.float32(3)) * np.float32(2))
    assert log  # the same view as the output: split

    def shifted():
        x = tk.asarray(base.copy())
        tk.add(x[:-1], x[1:], out=x[1:])  # NumPy's buffered semantics: the inputs as they were
        return np.asarray(x)

    whole, parted, log = splits(shifted)
    _same(whole, parted)
    _same(whole[1:], base[:-1] + base[1:])
    assert log == []  # overlapping without being the same view: whole


@pytest.mark.parametrize("op", ["exp", "relu", "gelu", "erf", "sigmoid", "abs", "sign", "sqrt", "tanh",
                                "nan_to_num"])
@pytest.mark.parametrize("shape", [(33, 31), (3, 50001)])  # (relu: by runs; past _ZERO_RUNS_MAX one maximum)
def test_unary_ops_split_as_whole(splits, op, shape):
    a = _arr(shape)
    fn = getattr(tk, op)
    whole, parted, log = splits(lambda: np.asarray(fn(tk.asarray(a))))
    _same(whole, parted)
    assert log and all(p >= 2 for p in log)


def test_unary_complex_abs_and_half_dtypes(splits):
    z = (_arr((20, 9)) + 1j * _arr((20, 9))).astype(np.complex64)
    whole, parted, log = splits(lambda: np.asarray(tk.abs(tk.asarray(z))))
    _same(whole, parted)
    assert log
    h = _arr((20, 9), np.float16)
    whole, parted, log = splits(lambda: np.asarray(tk.exp(tk.asarray(h))))
    _same(whole, parted)
    assert log


def test_threshold_backward_splits_as_whole(splits):
    g, y = _arr((61, 45)), _arr((61, 45))  # (from 2048 values on: the bitwise path)
    y[3, :5] = 0.0
    whole, parted, log = splits(lambda: np.asarray(tk.ops.threshold_backward(tk.asarray(g), tk.asarray(y), 0.0)))
    _same(whole, parted)
    _same(whole, np.where(y <= 0, np.float32(0), g))
    assert log == [3]


def _bn_inputs(shape, dtype=np.float32):
    c = shape[1]
    x = (_RNG.standard_normal(shape) * 2 + 0.7).astype(dtype)
    return (x, _RNG.random(c).astype(dtype), (_RNG.random(c) + 0.5).astype(dtype),
            _RNG.standard_normal(c).astype(dtype), _RNG.standard_normal(c).astype(dtype))


@pytest.mark.parametrize("shape", [(6, 5, 7, 3), (4, 7, 9), (3, 2, 11, 5), (12, 7, 10), (33, 9, 2, 3),
                                   (2, 4, 4100)])  # (rows past 4096: NumPy's sums)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_batch_norm_by_channels_as_whole(splits, shape, training, affine, dtype):
    x, rm, rv, w, b = _bn_inputs(shape, dtype)

    def fwd():
        m, v = tk.asarray(rm.copy()), tk.asarray(rv.copy())
        y, sm, si = tk.ops.batch_norm(tk.asarray(x), m, v, tk.asarray(w) if affine else None,
                                      tk.asarray(b) if affine else None, training, 0.1, 1e-5, return_stats=True)
        return [np.asarray(t) for t in (y, sm, si, m, v)]

    whole, parted, log = splits(fwd)
    for u, v in zip(whole, parted):
        _same(u, v)
    # parts of 2 channels or more (see _by_channels)
    assert log == [min(3, shape[1] // 2)] if shape[1] >= 4 else log == []
    if training:  # and the values are batch norm's
        mu = x.mean(axis=tuple(i for i in range(x.ndim) if i != 1), keepdims=True)
        var = x.var(axis=tuple(i for i in range(x.ndim) if i != 1), keepdims=True)
        ref = (x - mu) / np.sqrt(var + 1e-5)
        if affine:
            ref = ref * w.reshape(mu.shape) + b.reshape(mu.shape)
        tol = 4e-3 if dtype == np.float16 else 1e-4
        np.testing.assert_allclose(whole[0].astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("needs", [(True, True, True), (True, False, False), (False, True, True),
                                   (False, False, True), (True, True, False)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_by_channels_as_whole(splits, training, needs, affine):
    x, rm, rv, w, _ = _bn_inputs((11, 7, 4, 3))
    g = _RNG.standard_normal(x.shape).astype(np.float32)
    _, sm, si = tk.ops.batch_norm(tk.asarray(x), None, None, None, None, True, 0.1, 1e-5, return_stats=True)

    def bwd():
        res = tk.ops.batch_norm_backward(tk.asarray(g), tk.asarray(x), tk.asarray(w) if affine else None,
                                         tk.asarray(rm), tk.asarray(rv), sm, si, training, 1e-5, needs=needs)
        return [None if r is None else np.asarray(r) for r in res]

    whole, parted, log = splits(bwd)
    for u, v in zip(whole, parted):
        assert (u is None) == (v is None)
        if u is not None:
            _same(u, v)
    # split unless only the bias gradient is wanted (a weightless batch norm has none for its weight)
    assert log == ([3] if needs[0] or (needs[1] and affine) else [])


def test_small_work_stays_whole(monkeypatch):
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "4")
    assert _threads.parts_for(_threads.SPLIT_MIN_VALUES - 1) == 1
    assert _threads.parts_for(_threads.SPLIT_MIN_VALUES) == 2
    assert _threads.parts_for(_threads.SPLIT_MIN_VALUES * 8) == 4
    monkeypatch.setenv("TKERNELS_NUM_THREADS", "1")
    assert _threads.parts_for(_threads.SPLIT_MIN_VALUES * 8) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_large_relu_against_the_scalar_gives_the_runs_bits(monkeypatch, dtype):
    from tkernels.backends.numpy import elementwise as ew

    x = _arr((3, 70001), dtype)
    x.reshape(-1)[10:14] = [-0.0, 0.0, -5.0, 7.0]
    x.reshape(-1)[20] = np.nan
    x.view(np.dtype(f"u{x.itemsize}")).reshape(-1)[20] |= 1  # a NaN with a payload
    big = np.asarray(tk.relu(tk.asarray(x)))  # 210,003 values: one maximum() against the scalar
    monkeypatch.setattr(ew, "_ZERO_RUNS_MAX", 1 << 62)
    runs = np.asarray(tk.relu(tk.asarray(x)))
    _same(big, runs)
    assert not np.signbit(big.reshape(-1)[10])  # relu(-0.0) is +0.0
    assert np.isnan(big.reshape(-1)[20]) and big.reshape(-1)[13] == 7.0


def _ufunc_call(fn, a, b):
    """``fn(a, b)`` as the backend makes an elementwise call: by parts when ``_threads.elementwise`` splits it."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    if not _threads.elementwise(lambda op, ap, bp: fn(ap, bp, out=op), out, a, b, name=fn.__name__):
        fn(a, b, out=out)
    return out


def test_floating_point_errors_reported_once_per_call(splits, monkeypatch):
    """A split call warns (raises, calls back) once per kind of error, as the whole NumPy call does, naming the
    ufunc (every elementwise op of ours that can hit one is quiet, as PyTorch is, but a split also runs under the
    caller's errstate where the backend does not set its own, e.g. in batch norm); quiet ops stay quiet."""
    import warnings

    a = np.full((40, 30), np.inf, np.float32)
    a[5, 5] = 1.0
    b = -a

    def record(mode):
        def fn():
            got = []
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with np.errstate(**mode, call=lambda kind, flag: got.append((kind, flag))):
                    try:
                        _ufunc_call(np.add, a, b)
                        _ufunc_call(np.subtract, a, a)
                    except FloatingPointError as e:
                        got.append(str(e))
            return [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)] + got
        return fn

    for mode, want in [({"invalid": "warn"}, ["invalid value encountered in add",
                                              "invalid value encountered in subtract"]),
                       ({"invalid": "call"}, [("invalid value", 8), ("invalid value", 8)]),
                       ({"invalid": "raise"}, ["invalid value encountered in add"]),
                       ({"all": "ignore"}, [])]:
        whole, parted, log = splits(record(mode))
        assert whole == want and parted == want, (mode, whole, parted)
        assert log  # (the calls split)
    # quiet ops (inf * 0, inf + -inf, inf - inf, float32 overflow: NumPy warns, PyTorch does not): no warning,
    # whole or split, even under errstate(all="raise")
    z = np.zeros_like(a)
    big = np.full_like(a, 3e38)

    def quiet():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                return [np.asarray(tk.multiply(tk.asarray(a), tk.asarray(z))),
                        np.asarray(tk.add(tk.asarray(a), tk.asarray(b))),
                        np.asarray(tk.subtract(tk.asarray(a), tk.asarray(a))),
                        np.asarray(tk.add(tk.asarray(big), tk.asarray(big)))]

    whole, parted, log = splits(quiet)
    for w, p in zip(whole, parted):
        _same(w, p)
    assert np.isnan(whole[1][0, 0]) and np.isnan(whole[2][0, 0]) and np.isinf(whole[3]).all()
    assert log


def test_strided_outputs_and_in_place_unary(splits):
    base = _arr((30, 40))

    def run():
        x = tk.asarray(base.copy())
        buf = tk.asarray(np.zeros((40, 30), np.float32))
        tk.exp(x, out=buf.T)  # a transposed output: cut by rows
        r = tk.asarray(np.zeros((30, 40), np.float32))
        tk.add(x, 1.0, out=r[::-1])  # a reversed output
        tk.sqrt(x, out=x)  # in place: the same view
        return np.asarray(buf), np.asarray(r), np.asarray(x)

    whole, parted, log = splits(run)
    for u, v in zip(whole, parted):
        _same(u, v)
    _same(whole[1], (base + np.float32(1))[::-1])
    assert len(log) == 3
