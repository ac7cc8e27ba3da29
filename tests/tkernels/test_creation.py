"""Creation functions: empty/zeros/ones/full and *_like, arange, linspace, eye, tril/triu, meshgrid, asarray,
from_numpy."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk

ALL = (tk.bool, tk.uint8, tk.int8, tk.int16, tk.int32, tk.int64, tk.float16, tk.bfloat16, tk.float32, tk.float64)


# ------------------------------------------------------------------------------------ filled arrays
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_zeros_ones_full_every_dtype(dtype):
    z = tk.zeros((2, 3), dtype=dtype)
    o = tk.ones(4, dtype=dtype)
    f = tk.full((3,), 1, dtype=dtype)
    e = tk.empty((0, 2), dtype=dtype)
    for a in (z, o, f, e):
        assert a.dtype is dtype and a.device == "cpu" and a.is_contiguous()
    assert z.shape == (2, 3) and o.shape == (4,) and e.shape == (0, 2)
    np.testing.assert_array_equal(z.numpy().astype(np.float64), np.zeros((2, 3)))
    np.testing.assert_array_equal(o.numpy().astype(np.float64), np.ones(4))
    np.testing.assert_array_equal(f.numpy().astype(np.float64), np.ones(3))


def test_default_dtypes_of_factories():
    assert tk.zeros(2).dtype is tk.float32
    assert tk.ones(2).dtype is tk.float32
    assert tk.empty(2).dtype is tk.float32
    assert tk.full(2, 2).dtype is tk.int64
    assert tk.full(2, 2.0).dtype is tk.float32
    assert tk.full(2, True).dtype is tk.bool
    assert tk.full(2, np.float64(2.0)).dtype is tk.float32  # a NumPy scalar is a number, weak like a float


def test_full_values_and_casts():
    np.testing.assert_array_equal(tk.full((2, 2), 7).numpy(), np.full((2, 2), 7))
    np.testing.assert_array_equal(tk.full(3, -1.5).numpy(), [-1.5] * 3)
    np.testing.assert_array_equal(tk.full(2, 2.7, dtype=tk.int32).numpy(), [2, 2])
    np.testing.assert_array_equal(tk.full(2, -2.7, dtype=tk.int32).numpy(), [-2, -2])
    np.testing.assert_array_equal(tk.full(2, 255, dtype=tk.uint8).numpy(), [255, 255])
    np.testing.assert_array_equal(tk.full(2, 0.5, dtype=tk.bool).numpy(), [True, True])
    assert tk.full((), 3.0).shape == () and tk.full((), 3.0).item() == 3.0
    assert tk.full(2, tk.asarray(4)).tolist() == [4, 4]
    assert tk.full(1, 1.0, dtype=tk.bfloat16).item() == 1.0


def test_full_errors():
    with pytest.raises(TypeError, match="full"):
        tk.full(2, "a")
    with pytest.raises(ValueError, match="full"):
        tk.full(2, tk.asarray([1, 2]))
    with pytest.raises(ValueError, match="int32"):
        tk.full(2, float("nan"), dtype=tk.int32)
    with pytest.raises(ValueError, match="full.*300.*uint8"):  # PyTorch: "cannot be converted without overflow"
        tk.full(2, 300, dtype=tk.uint8)
    with pytest.raises(ValueError, match="full.*-129.*int8"):
        tk.full(2, -129, dtype=tk.int8)


def test_shape_errors():
    with pytest.raises(ValueError, match="empty.*negative"):
        tk.empty((2, -1))
    with pytest.raises(TypeError, match="empty"):
        tk.empty(2.5)
    with pytest.raises(TypeError, match="zeros|full"):
        tk.zeros("ab")
    with pytest.raises(TypeError, match="dtype"):
        tk.zeros(2, dtype="complex256")


def test_like_functions():
    x = tk.asarray([[1, 2, 3]], dtype=tk.int16)
    for f, v in ((tk.zeros_like, 0), (tk.ones_like, 1)):
        r = f(x)
        assert r.shape == (1, 3) and r.dtype is tk.int16 and r.device == "cpu"
        np.testing.assert_array_equal(r.numpy(), np.full((1, 3), v))
    assert tk.empty_like(x).shape == (1, 3) and tk.empty_like(x).dtype is tk.int16
    r = tk.ones_like(x, dtype=tk.float16)
    assert r.dtype is tk.float16
    r = tk.full_like(x, 2.7)  # the dtype of x wins, the value is cast
    assert r.dtype is tk.int16 and r.tolist() == [[2, 2, 2]]
    r = tk.full_like(x.T, 5, dtype=tk.float32)
    assert r.shape == (3, 1) and r.dtype is tk.float32 and r.tolist() == [[5.0]] * 3
    assert not np.shares_memory(tk.zeros_like(x).numpy(), x.numpy())


def test_like_functions_refuse_non_arrays_with_a_clear_message():
    with pytest.raises(TypeError, match="empty_like.*ndarray"):
        tk.empty_like(np.arange(3))
    with pytest.raises(TypeError, match="zeros_like.*list"):
        tk.zeros_like([1, 2])


# ---------------------------------------------------------------------------------------------- arange
@pytest.mark.parametrize("args", [(5,), (1, 10, 3), (10, 0, -3), (5, 2), (0,), (-3, 3), (3, -3, -1), (0, 10, 10)])
def test_arange_int(args):
    r = tk.arange(*args)
    assert r.dtype is tk.int64
    np.testing.assert_array_equal(r.numpy(), np.arange(*args))


@pytest.mark.parametrize("args", [(0, 1, 0.1), (1, 2.5, 0.5), (0.0, -1.0, -0.25), (2.5,), (0, 1, 0.3), (1.0, 1.0),
                                  (0.5, 10, 1), (-1, 1, 0.2), (1, 0, 0.5)])
def test_arange_float_counts_like_numpy(args):
    r = tk.arange(*args)
    assert r.dtype is tk.float32
    e = np.arange(*args)
    assert r.shape == e.shape
    np.testing.assert_allclose(r.numpy(), e.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_arange_dtypes_and_errors():
    assert tk.arange(5, dtype=tk.float16).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert tk.arange(np.int32(3)).dtype is tk.int64
    assert tk.arange(3, dtype=tk.uint8).dtype is tk.uint8
    assert tk.arange(tk.asarray(3)).tolist() == [0, 1, 2]
    # PyTorch computes in double and casts: [0, 1.5, 3, 4.5] -> [0, 1, 3, 4]
    assert tk.arange(0, 5, 1.5, dtype=tk.int32).tolist() == [0, 1, 3, 4]
    with pytest.raises(ValueError, match="arange.*step"):
        tk.arange(0, 1, 0)
    with pytest.raises(TypeError, match="arange"):
        tk.arange("3")


# -------------------------------------------------------------------------------------------- linspace
@pytest.mark.parametrize("start,stop,num,endpoint", [(0, 1, 5, True), (0, 1, 5, False), (0, 1, 0, True),
                                                     (0, 1, 1, True), (3, -2, 7, True), (-1, 1, 2, False)])
def test_linspace(start, stop, num, endpoint):
    r = tk.linspace(start, stop, num, endpoint=endpoint)
    assert r.dtype is tk.float32 and r.shape == (num,)
    np.testing.assert_allclose(r.numpy(), np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-6, atol=1e-7)


def test_linspace_dtypes_and_errors():
    assert tk.linspace(0, 1, 3, dtype=tk.float64).tolist() == [0.0, 0.5, 1.0]
    assert tk.linspace(0, 10, 5, dtype=tk.int64).tolist() == [0, 2, 5, 7, 10]
    with pytest.raises(ValueError, match="linspace"):
        tk.linspace(0, 1, -1)


# ------------------------------------------------------------------------------------------- eye / tri
@pytest.mark.parametrize("n,m,k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0), (1, 1, 0), (3, 5, -2)])
def test_eye(n, m, k):
    r = tk.eye(n, m, k=k)
    assert r.dtype is tk.float32
    np.testing.assert_array_equal(r.numpy(), np.eye(n, m, k))


def test_eye_dtypes_and_errors():
    r = tk.eye(3, dtype=tk.bool)
    assert r.dtype is tk.bool and r.numpy().sum() == 3
    assert tk.eye(2, dtype=tk.int8).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(ValueError, match="eye"):
        tk.eye(-1)


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_tril_triu(k):
    rng = np.random.default_rng(k + 10)
    n = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x = tk.asarray(n)
    np.testing.assert_array_equal(tk.tril(x, k=k).numpy(), np.tril(n, k))
    np.testing.assert_array_equal(tk.triu(x, k=k).numpy(), np.triu(n, k))
    np.testing.assert_array_equal(tk.tril(x.mT, k=k).numpy(), np.tril(n.swapaxes(-1, -2), k))
    np.testing.assert_array_equal(x.numpy(), n)  # input untouched


def test_tril_triu_errors():
    with pytest.raises(ValueError, match="tril"):
        tk.tril(tk.ones(3))
    with pytest.raises(TypeError, match="triu"):
        tk.triu(np.ones((2, 2)))


# ------------------------------------------------------------------------------------------- meshgrid
@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    a, b, c = np.arange(3), np.arange(10, 12), np.arange(20, 24)
    for arrays in ((a,), (a, b), (a, b, c)):
        got = tk.meshgrid(*(tk.asarray(v) for v in arrays), indexing=indexing)
        exp = np.meshgrid(*arrays, indexing=indexing)
        assert len(got) == len(exp)
        for g, e in zip(got, exp):
            assert g.shape == e.shape
            np.testing.assert_array_equal(g.numpy(), e)


def test_meshgrid_errors():
    with pytest.raises(ValueError, match="meshgrid"):
        tk.meshgrid(tk.arange(2), indexing="zz")
    with pytest.raises(ValueError, match="meshgrid"):
        tk.meshgrid(tk.zeros((2, 2)))
    with pytest.raises(TypeError, match="meshgrid"):
        tk.meshgrid(tk.arange(2), tk.arange(2.0))


# -------------------------------------------------------------------------------------------- asarray
def test_asarray_numpy_shares_memory():
    n = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = tk.asarray(n)
    assert x.dtype is tk.float32 and x.shape == (2, 3)
    x[0, 0] = 9
    assert n[0, 0] == 9
    n[1, 2] = -4
    assert x[1, 2].item() == -4
    assert x.data_ptr() == n.ctypes.data


def test_asarray_numpy_copy_semantics():
    n = np.arange(4, dtype=np.float32)
    x = tk.asarray(n, copy=True)
    x[0] = 100
    assert n[0] == 0
    y = tk.asarray(n, copy=False)
    y[1] = 50
    assert n[1] == 50
    z = tk.asarray(n, dtype=tk.float64)
    assert z.dtype is tk.float64
    z[2] = 7
    assert n[2] == 2
    with pytest.raises(ValueError, match="asarray.*copy"):
        tk.asarray(n, dtype=tk.float64, copy=False)


def test_asarray_numpy_dtypes_kept():
    for npd, d in ((np.float64, tk.float64), (np.int32, tk.int32), (np.uint8, tk.uint8), (np.bool_, tk.bool),
                   (np.float16, tk.float16), (ml_dtypes.bfloat16, tk.bfloat16)):
        assert tk.asarray(np.zeros(2, npd)).dtype is d


@pytest.mark.parametrize("obj,dtype,values", [
    ([1.5, 2], tk.float32, [1.5, 2.0]), ([1, 2], tk.int64, [1, 2]), ([True, False], tk.bool, [True, False]),
    ([[1, 2], [3, 4]], tk.int64, [[1, 2], [3, 4]]), ([1, 2.5], tk.float32, [1.0, 2.5]),
    ([True, 2], tk.int64, [1, 2]), ((1, 2), tk.int64, [1, 2]), ([], tk.float32, []),
    (2.5, tk.float32, 2.5), (2, tk.int64, 2), (True, tk.bool, True), (np.float32(2.5), tk.float32, 2.5),
    (np.float64(2.5), tk.float64, 2.5), (np.int16(3), tk.int16, 3),
])
def test_asarray_python_objects(obj, dtype, values):
    x = tk.asarray(obj)
    assert x.dtype is dtype
    assert x.tolist() == values


def test_asarray_nested_with_arrays_and_explicit_dtype():
    x = tk.asarray([tk.asarray([1.0, 2.0]), tk.asarray([3.0, 4.0])])
    assert x.shape == (2, 2) and x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tk.asarray([1, 2], dtype=tk.float16).dtype is tk.float16
    assert tk.asarray(3, dtype="float64").dtype is tk.float64


def test_asarray_of_arrays_copy_semantics():
    x = tk.arange(3)
    assert tk.asarray(x) is x
    assert tk.asarray(x, dtype=tk.int64, copy=False) is x
    c = tk.asarray(x, copy=True)
    assert c is not x and c.tolist() == [0, 1, 2]
    c[0] = 9
    assert x[0].item() == 0
    f = tk.asarray(x, dtype=tk.float32)
    assert f.dtype is tk.float32 and f.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="asarray.*copy"):
        tk.asarray(x, dtype=tk.float32, copy=False)


@pytest.mark.parametrize("obj", [np.array([1 + 2j], np.clongdouble), np.array(["a"], dtype=object), ["a"],
                                 np.array([1], dtype=np.longdouble), np.array([1], dtype="m8[s]")],
                         ids=["np_clongdouble", "np_object", "list_str", "longdouble", "timedelta"])
def test_asarray_unsupported_dtypes(obj):
    with pytest.raises(TypeError, match=r"asarray: unsupported dtype.*supported: bool.*float64"):
        tk.asarray(obj)


@pytest.mark.parametrize("obj", [None, {"a": 1}, object()], ids=["None", "dict", "object"])
def test_asarray_unsupported_objects(obj):
    with pytest.raises(TypeError, match="asarray"):
        tk.asarray(obj)


def test_asarray_ragged_lists_name_the_op():
    with pytest.raises(ValueError, match="asarray"):
        tk.asarray([[1, 2], [3]])


# ------------------------------------------------------------------------------------------ from_numpy
def test_from_numpy_contiguous_zero_copy():
    n = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = tk.from_numpy(n)
    assert x.dtype is tk.int32 and x.data_ptr() == n.ctypes.data
    x[1, 1] = -1
    assert n[1, 1] == -1


@pytest.mark.parametrize("make", [
    lambda m: m[:, ::2], lambda m: m[::-1, 1:], lambda m: m.T, lambda m: m[1:3][:, ::-2], lambda m: m[::-1, ::-1],
    lambda m: m[2], lambda m: m[:, 3], lambda m: m[1:2, 1:2],
], ids=["step", "neg_rows", "T", "view_of_view", "neg_both", "row", "column", "block"])
def test_from_numpy_non_contiguous_views_share_both_ways(make):
    m = np.arange(20.0).reshape(4, 5)
    v = make(m)
    x = tk.from_numpy(v)
    assert x.shape == v.shape
    np.testing.assert_array_equal(x.numpy(), v)
    idx = (0,) * v.ndim
    x[idx] = -1.0
    assert v[idx] == -1.0
    last = tuple(s - 1 for s in v.shape)
    v[last] = -2.0
    assert x[last].item() == -2.0
    assert np.shares_memory(x.numpy(), m)


def test_from_numpy_fortran_order_is_zero_copy():
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    x = tk.from_numpy(f)
    x[0, 1] = 77.0
    assert f[0, 1] == 77.0
    f[1, 2] = -3.0
    assert x[1, 2].item() == -3.0
    v = f[:, 1:]
    y = tk.from_numpy(v)
    y[0, 0] = 88.0
    assert f[0, 1] == 88.0


def test_from_numpy_as_strided_is_zero_copy():
    a = np.arange(4.0)
    s = np.lib.stride_tricks.as_strided(a, shape=(3, 2), strides=(8, 8))  # overlapping windows
    x = tk.from_numpy(s)
    assert x.strides == (1, 1)
    a[1] = 7.0
    assert x[0, 1].item() == 7.0 and x[1, 0].item() == 7.0


def test_from_numpy_broadcast_view_keeps_zero_strides():
    a = np.arange(3.0)
    b = np.broadcast_to(a, (2, 3))
    x = tk.from_numpy(b)
    assert x.strides == (0, 1)
    a[0] = 9.0
    assert x[1, 0].item() == 9.0


def test_from_numpy_0d_and_bfloat16():
    z = np.array(3.0)
    x = tk.from_numpy(z)
    assert x.shape == ()
    x[()] = 4.0
    assert z == 4.0
    b = np.arange(4).astype(ml_dtypes.bfloat16)
    y = tk.from_numpy(b)
    assert y.dtype is tk.bfloat16
    y[0] = 3.0
    assert float(b[0]) == 3.0
    assert y.tolist() == [3.0, 1.0, 2.0, 3.0]


def test_from_numpy_errors():
    with pytest.raises(TypeError, match="from_numpy.*list"):
        tk.from_numpy([1, 2])
    with pytest.raises(TypeError, match="from_numpy: unsupported dtype timedelta64"):
        tk.from_numpy(np.zeros(2, "m8[s]"))
    with pytest.raises(TypeError, match="from_numpy: unsupported dtype complex"):
        tk.from_numpy(np.zeros(2, np.clongdouble))


def test_asarray_of_a_range():
    assert tk.asarray(range(2, 5)).tolist() == [2, 3, 4] and tk.asarray(range(3)).dtype == tk.int64
    assert tk.asarray(range(0)).shape == (0,)
    assert tk.asarray(range(3), dtype=tk.float32).tolist() == [0.0, 1.0, 2.0]


def test_nested_sequences_of_numpy_float64_keep_it():
    # as torch.tensor: NumPy float64 arrays and scalars inside a list stay float64; Python floats alone do not
    assert tk.asarray([np.ones(2), np.zeros(2)]).dtype == tk.float64
    assert tk.asarray([1.0, np.float64(2)]).dtype == tk.float64
    assert tk.asarray([[1.0, 2.0], np.ones(2)]).dtype == tk.float64
    assert tk.asarray([np.ones(2, np.float32)]).dtype == tk.float32
    assert tk.asarray([np.float32(1.0)]).dtype == tk.float32
    assert tk.asarray([1.0, 2.5]).dtype == tk.float32
