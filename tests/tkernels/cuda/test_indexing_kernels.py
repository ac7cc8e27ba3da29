"""Indexing, data-movement, creation and sorting kernels on (interpreted) cuda against NumPy: block boundaries
(5000 elements, rows longer than a sort tile), repeated indices through atomics, negative indices, boolean
masks, strided and broadcast operands, every dtype once. The OpInfo rows (tests/tkernels/test_ops.py) cover
the ops' semantics on small samples."""

import importlib

import numpy as np
import pytest

import tkernels as tk

# the real dtypes: complex ones have no cuda kernels yet (tests/tkernels/test_complex.py checks they say so)
REAL_DTYPES = tuple(d for d in tk.dtypes.all_dtypes if d.kind != "c")

cuda = pytest.importorskip("tkernels.cuda")
pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="no (interpreted) cuda")

DTYPES = [d.name for d in REAL_DTYPES]
N = 5000  # crosses the interpreter's 4096-element blocks


def dev(a):
    return tk.asarray(a, device="cuda")


def rand(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("uint8",):
        return rng.integers(0, 100, shape).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(tk.dtypes.as_dtype(dtype).numpy)


def test_creation_kernels():
    for args, kw in [((N,), {}), ((2, 11, 3), {}), ((0.5, 3.2, 0.3), {}), ((5,), {"dtype": tk.float16}),
                     ((-3, 4), {"dtype": tk.int8}), ((0.5, 4.5), {"dtype": tk.int32})]:
        a, e = tk.arange(*args, **kw, device="cuda"), tk.arange(*args, **kw)
        assert a.dtype == e.dtype and np.array_equal(a.numpy(), e.numpy()), args
    for args, kw in [((0, 1, 7), {}), ((2, -3, 5), {"endpoint": False}), ((0, 10, 4), {"dtype": tk.int64}),
                     ((0, 1, 9), {"dtype": tk.float64})]:
        a, e = tk.linspace(*args, **kw, device="cuda"), tk.linspace(*args, **kw)
        assert a.dtype == e.dtype and np.array_equal(a.numpy(), e.numpy()), args
    for args, kw in [((3, 5), {"k": 1}), ((4, 2), {"k": -1}), ((3, 3), {"k": 5, "dtype": tk.int64})]:
        assert np.array_equal(tk.eye(*args, **kw, device="cuda").numpy(), tk.eye(*args, **kw).numpy())
    x = np.random.default_rng(0).standard_normal((2, 70, 80)).astype(np.float32)  # 11200 elements
    for k in (-2, 0, 3):
        assert np.array_equal(tk.tril(dev(x).mT, k=k).numpy(), np.tril(x.transpose(0, 2, 1), k))
        assert np.array_equal(tk.triu(dev(x), k=k).numpy(), np.triu(x, k))


def test_gather_every_dtype_and_negative_indices():
    rng = np.random.default_rng(1)
    for d in DTYPES:
        x = rand(rng, (7, 9), d)
        i = rng.integers(-9, 9, 13)
        assert np.array_equal(tk.take(dev(x)[:, ::2], dev(i) % 5, axis=1).numpy(), np.take(x[:, ::2], i % 5, 1)), d
    x = rng.standard_normal(N).astype(np.float32)
    i = rng.integers(-N, N, N + 7)
    assert np.array_equal(tk.take(dev(x), dev(i)).numpy(), x[i])
    # out-of-range indices raise at the next synchronising call (tests/tkernels/cuda/test_device_errors.py)
    with pytest.raises(IndexError, match=r"take: index 5000 is out of bounds for axis 0 with size 5000"):
        tk.take(dev(x), dev(np.array([0, N, 1]))).numpy()
    with pytest.raises(IndexError, match=r"gather: index -1 .*does not accept negative"):
        tk.gather(dev(x), 0, dev(np.array([3, -1]))).numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int8", "float64"])
def test_scatter_add_repeated_indices_accumulate(dtype):
    rng = np.random.default_rng(2)
    src = rand(rng, N, dtype) if dtype != "int8" else rng.integers(-3, 3, N).astype(np.int8)
    idx = rng.integers(0, 17, N)  # ~300 repeats of each target: the atomics must all land
    x = np.zeros(17, src.dtype)
    got = tk.scatter_add(dev(x), 0, dev(idx), dev(src)).numpy()
    ref = np.zeros(17, np.float64)
    np.add.at(ref, idx, src.astype(np.float64))
    if dtype == "int8":
        assert np.array_equal(got, ref.astype(np.int64).astype(np.int8))  # wraps like NumPy's int8 add.at
    else:  # halves accumulate in float32: only the final rounding differs from float64
        tol = {"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 1e-5)
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_index_put_and_index_add_strided_targets():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 130)).astype(np.float32)
    rows = rng.integers(-40, 40, 300)
    v = rng.standard_normal((300, 1)).astype(np.float32)
    xt = dev(x.T.copy()).mT  # a transposed target
    got = tk.index_put(xt, (dev(rows),), dev(v), accumulate=True).numpy()
    ref = x.copy()
    np.add.at(ref, rows, v)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    got = tk.index_add(dev(x), 1, dev(rows % 130), dev(np.ones((40, 300), np.float32))).numpy()
    ref = x.copy()
    np.add.at(ref, (slice(None), rows % 130), 1.0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match="index_put"):
        tk.index_put(dev(x), (dev(np.array([0, 40])),), 1.0).numpy()
    assert np.array_equal(tk.index_select(dev(x), 1, dev(np.array([129, 0, 129]))).numpy(), x[:, [129, 0, 129]])


def test_boolean_masks_and_compaction_across_blocks():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 120)).astype(np.float32)
    m = x > 0.3
    assert np.array_equal(tk.masked_select(dev(x), dev(m)).numpy(), x[m])
    assert np.array_equal(tk.argwhere(dev(m)).numpy(), np.argwhere(m))
    assert np.array_equal(tk.argwhere(dev(m).mT).numpy(), np.argwhere(m.T))
    assert np.array_equal(tk.masked_fill(dev(x), dev(m[:1]), -1.0).numpy(), np.where(m[:1], -1.0, x))
    assert np.array_equal(tk.masked_select(dev(x), dev(m[:1])).numpy(), x[np.broadcast_to(m[:1], x.shape)])
    assert tk.argwhere(dev(np.zeros((3, 0), bool))).shape == (0, 2)
    assert np.array_equal(tk.one_hot(dev(rng.integers(0, 9, 600))).numpy().sum(0).sum(), 600)
    xc = dev(x)
    assert np.array_equal(xc[dev(m)].numpy(), x[m])
    xc[dev(m)] = 0.0
    assert np.array_equal(xc.numpy(), np.where(m, 0, x))


def test_advanced_indexing_keys_of_the_cpu_suite():
    m = importlib.import_module("tests.tkernels.test_array_indexing")
    a = np.random.default_rng(0).standard_normal(m.SHAPE).astype(np.float32)

    def cu(k):
        return tuple(cu(e) for e in k) if isinstance(k, tuple) else k.to("cuda") if isinstance(k, tk.Array) else k

    keys = m.ADVANCED_KEYS + m.MASK_KEYS + [k for k, _ in m.PLACEMENT_KEYS]
    for j, key in enumerate(keys):  # every key read (a third of them also written: the same offsets)
        e = a[m.np_key(key)]
        x = dev(a)
        got = x[cu(key)]
        assert got.shape == e.shape and np.array_equal(got.numpy(), e), m.kid(key)
        if j % 3:
            continue
        ref = a.copy()
        ref[m.np_key(key)] = -1.0
        x[cu(key)] = -1.0
        assert np.array_equal(x.numpy(), ref), m.kid(key)


@pytest.mark.parametrize("dtype", ["float32", "float64"])  # packed 32-bit keys; (key, index) pairs
def test_sort_rows_longer_than_a_tile(dtype):
    rng = np.random.default_rng(5)
    x = rand(rng, (1, N), dtype)
    x[:, ::7] = x[:, 3:4]  # ties: stability
    x[0, ::11] = np.nan
    ref = np.argsort(x.astype(np.float64) if dtype == "bfloat16" else x, axis=-1, kind="stable")
    assert np.array_equal(tk.argsort(dev(x)).numpy(), ref)
    got = tk.argsort(dev(x), descending=True).numpy()
    xv = x.astype(np.float64)
    assert np.array_equal(np.take_along_axis(np.nan_to_num(xv, nan=np.inf), got, 1),
                          -np.sort(-np.nan_to_num(xv, nan=np.inf), 1))


def test_topk_searchsorted_unique_repeat():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 300)).astype(np.float32)
    v, i = tk.topk(dev(x), 5, axis=1)
    ref = np.argsort(-x, axis=1, kind="stable")[:, :5]
    assert np.array_equal(i.numpy(), ref) and np.array_equal(v.numpy(), np.take_along_axis(x, ref, 1))
    a = np.sort(rng.integers(0, 50, N))
    q = rng.integers(-5, 55, 700)
    for side in ("left", "right"):
        assert np.array_equal(tk.searchsorted(dev(a), dev(q), side=side).numpy(), np.searchsorted(a, q, side))
    y = rng.integers(0, 300, N)
    vals, inv, cnt = tk.unique(dev(y), return_inverse=True, return_counts=True)
    rv, ri, rc = np.unique(y, return_inverse=True, return_counts=True)
    assert np.array_equal(vals.numpy(), rv) and np.array_equal(inv.numpy(), ri) and np.array_equal(cnt.numpy(), rc)
    r = rng.integers(0, 3, 40)
    assert np.array_equal(tk.repeat(dev(x[0, :40]), dev(r)).numpy(), np.repeat(x[0, :40], r))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        tk.repeat(dev(x[0, :2]), dev(np.array([1, -1])))
