"""Semantics of reductions and scans that the op table does not pin down: result dtypes, accumulation width,
ties and NaN, empty and 0-d inputs, keepdims views, include_initial, the PyTorch aliases."""

import math

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
from tkernels.dispatch import has_impl

INF = float("inf")
OPS = ["sum", "prod", "mean", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "any", "all",
       "count_nonzero", "cumulative_sum", "cumulative_prod", "vector_norm", "matrix_norm"]


def a(values, dtype="float32"):
    return tk.asarray(np.asarray(values, dtype=np.float64)).astype(dtype)


def test_every_op_exported_and_implemented_on_cpu():
    for op in OPS + ["cumsum", "cumprod"]:
        assert op in tk.reduction.__all__ and callable(getattr(tk, op)), op
    for op in OPS:
        assert has_impl(op, "numpy"), op


@pytest.mark.parametrize("dtype,expected", [
    ("bool", "int64"), ("uint8", "uint64"), ("uint32", "uint64"), ("int8", "int64"), ("int32", "int64"),
    ("int64", "int64"),
    ("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"), ("float64", "float64")])
@pytest.mark.parametrize("op", ["sum", "prod", "cumulative_sum", "cumulative_prod"])
def test_accumulation_result_dtype(op, dtype, expected):
    assert getattr(tk, op)(a([1, 0, 1], dtype)).dtype == expected  # PyTorch: ints and bool accumulate in int64


def test_dtype_argument():
    x = a([1.5, 1.5, 2.25], "float16")
    assert tk.sum(x, dtype=tk.float32).dtype == tk.float32
    assert tk.sum(x, dtype="float64").item() == 5.25
    assert tk.sum(a([1.5, 1.5]), dtype=tk.int32).item() == 2  # the input is cast first (array API)
    assert tk.sum(a([100, 100], "int8"), dtype="int8").item() == -56  # narrow accumulators wrap, like PyTorch
    assert tk.prod(a([3, 4], "uint8"), dtype="float32").item() == 12.0
    np.testing.assert_array_equal(tk.cumulative_sum(a([1, 2, 3], "int8"), dtype="float32").numpy(), [1, 3, 6])
    assert tk.cumsum(a([1, 2], "int16"), 0, dtype=tk.int16).dtype == tk.int16


@pytest.mark.parametrize("op,dtype,expected", [
    ("mean", "float16", "float16"), ("mean", "bfloat16", "bfloat16"), ("var", "float64", "float64"),
    ("std", "float16", "float16"), ("max", "int8", "int8"), ("min", "uint8", "uint8"), ("max", "bool", "bool"),
    ("argmax", "float16", "int64"), ("argmin", "bool", "int64"), ("any", "float32", "bool"),
    ("all", "int32", "bool"), ("count_nonzero", "float16", "int64"), ("logsumexp", "int32", "float32"),
    ("logsumexp", "bool", "float32"), ("logsumexp", "bfloat16", "bfloat16"), ("vector_norm", "float16", "float16"),
    ("matrix_norm", "bfloat16", "bfloat16")])
def test_result_dtype(op, dtype, expected):
    x = a([[1, 0], [2, 3]], dtype)
    assert getattr(tk, op)(x).dtype == expected


@pytest.mark.parametrize("dtype,n", [("float16", 5000), ("bfloat16", 1000)])
def test_half_inputs_accumulate_in_float32(dtype, n):
    # accumulating in float16 would stall at 2048 (bfloat16 at 256): 2048 + 1 rounds back to 2048
    x = tk.ones((n,), dtype=dtype)
    assert tk.sum(x).item() == n
    assert tk.cumulative_sum(x).numpy().astype(np.float32)[-1] == n
    assert tk.mean(x).item() == 1.0
    assert tk.vector_norm(x, ord=1).item() == n
    assert tk.var(x).item() == 0.0


def test_ties_give_the_first_index():
    x = a([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2], [0, 1, 0, 1, 0]], "int32")
    np.testing.assert_array_equal(tk.argmax(x, axis=1).numpy(), [1, 0, 1])
    np.testing.assert_array_equal(tk.argmin(x, axis=1).numpy(), [3, 0, 0])
    np.testing.assert_array_equal(tk.argmax(x, axis=0).numpy(), [1, 0, 0, 1, 0])
    assert tk.argmax(x).item() == 1 and tk.argmin(x).item() == 3  # flat, row-major
    assert tk.argmax(x.mT).item() == 3  # the flat index in the transposed view (memory order would give 1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_nan(dtype):
    x = a([[1, math.nan, 5, math.nan], [-INF, 2, 3, INF]], dtype)
    assert tk.argmax(x).item() == 1 and tk.argmin(x).item() == 1  # NaN wins both, the first one (PyTorch)
    np.testing.assert_array_equal(tk.argmax(x, axis=1).numpy(), [1, 3])
    np.testing.assert_array_equal(tk.argmin(x, axis=1).numpy(), [1, 0])
    mx = tk.max(x, axis=1).numpy().astype(np.float64)
    mn = tk.min(x, axis=1).numpy().astype(np.float64)
    assert math.isnan(mx[0]) and mx[1] == INF and math.isnan(mn[0]) and mn[1] == -INF
    assert math.isnan(tk.max(x).item()) and math.isnan(tk.sum(x[0]).item())
    assert tk.any(a([0, math.nan], dtype)).item() and tk.count_nonzero(a([0, math.nan], dtype)).item() == 1
    assert math.isnan(tk.logsumexp(x, axis=1).numpy().astype(np.float64)[0])


def test_logsumexp_infinities_and_stability():
    x = a([[-INF, -INF, -INF], [INF, 1, 2], [1000, 1000, -INF], [-INF, 0, -INF]])
    r = tk.logsumexp(x, axis=1).numpy()
    assert r[0] == -INF and r[1] == INF and r[3] == 0.0
    np.testing.assert_allclose(r[2], 1000 + math.log(2), rtol=1e-6)
    assert tk.logsumexp(a([-INF, INF])).item() == INF
    assert tk.logsumexp(tk.zeros((0, 3)), axis=0).numpy().tolist() == [-INF] * 3


def test_empty_reductions():
    e = tk.zeros((2, 0, 3))
    np.testing.assert_array_equal(tk.sum(e, axis=1).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(tk.prod(e, axis=(0, 1)).numpy(), np.ones(3))
    assert tk.sum(tk.zeros((0,), dtype="int8")).dtype == tk.int64
    assert tk.sum(tk.zeros((0,), dtype="int8")).item() == 0
    assert tk.prod(tk.zeros((0,), dtype="bool")).item() == 1
    assert not tk.any(e).item() and tk.all(e).item() and tk.count_nonzero(e).item() == 0
    assert math.isnan(tk.mean(e).item()) and math.isnan(tk.var(e).item()) and math.isnan(tk.std(e).item())
    assert tk.vector_norm(e).item() == 0 and tk.vector_norm(e, ord=0).item() == 0
    assert tk.matrix_norm(e, ord="nuc").shape == (2,) and tk.matrix_norm(e).numpy().tolist() == [0, 0]
    assert tk.max(e, axis=2).shape == (2, 0)  # the reduced axis is not empty
    assert tk.cumulative_sum(e, axis=1, include_initial=True).numpy().tolist() == [[[0, 0, 0]]] * 2


def test_zero_dim_inputs():
    x = tk.asarray(np.float32(2.5))
    for axis in (None, 0, -1, (0,), ()):
        r = tk.sum(x, axis=axis, keepdims=True)
        assert r.shape == () and r.item() == 2.5
    assert tk.argmax(x, axis=0).item() == 0 and tk.argmin(x, keepdims=True).shape == ()
    assert tk.cumulative_sum(x).shape == () and tk.cumprod(x, -1).item() == 2.5
    assert tk.vector_norm(x, ord=-INF).item() == 2.5
    with pytest.raises(IndexError, match=r"sum: axis 1 is out of range for an array of 0 dimension"):
        tk.sum(x, axis=1)


def test_keepdims_shapes_and_empty_tuple_axis():
    x = tk.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert tk.sum(x, axis=(0, -1), keepdims=True).shape == (1, 3, 1)
    assert tk.argmax(x, keepdims=True).shape == (1, 1, 1)
    assert tk.matrix_norm(x, keepdims=True).shape == (2, 1, 1)
    assert tk.mean(x, axis=1, keepdims=True).is_contiguous()
    np.testing.assert_array_equal(tk.sum(x, axis=()).numpy(), x.numpy())  # no axes: nothing reduced (array API)
    assert tk.sum(x.astype("int8"), axis=()).dtype == tk.int64


def test_var_is_stable_and_corrected():
    rng = np.random.default_rng(0)
    v = (1e4 + rng.standard_normal(1000)).astype(np.float32)  # one-pass E[x²] - E[x]² loses every digit here
    np.testing.assert_allclose(tk.var(tk.asarray(v), correction=1).item(), np.var(v.astype(np.float64), ddof=1),
                               rtol=1e-3)
    x = a([1, 2, 3, 4])
    assert tk.var(x, correction=1).item() == pytest.approx(5 / 3)
    assert tk.std(x, correction=0.5).item() == pytest.approx(math.sqrt(5 / 3.5))
    assert tk.var(x, correction=4).item() == INF  # N - correction <= 0 divides by 0, as PyTorch
    assert math.isnan(tk.var(a([7.0]), correction=1).item())


def test_scans():
    x = a([[1, 2, 3], [4, 5, 6]], "int32")
    np.testing.assert_array_equal(tk.cumulative_sum(x, axis=1).numpy(), [[1, 3, 6], [4, 9, 15]])
    np.testing.assert_array_equal(tk.cumulative_sum(x, axis=0, include_initial=True).numpy(),
                                  [[0, 0, 0], [1, 2, 3], [5, 7, 9]])
    np.testing.assert_array_equal(tk.cumulative_prod(x, axis=-1, include_initial=True).numpy(),
                                  [[1, 1, 2, 6], [1, 4, 20, 120]])
    np.testing.assert_array_equal(tk.cumsum(x, 1).numpy(), tk.cumulative_sum(x, axis=1).numpy())
    np.testing.assert_array_equal(tk.cumprod(x, axis=0).numpy(), [[1, 2, 3], [4, 10, 18]])
    np.testing.assert_array_equal(tk.cumulative_sum(a([True, True, False], "bool")).numpy(), [1, 2, 2])


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, -2.5, INF, -INF, 0])
def test_vector_norm_orders(ord):  # noqa: A002
    x = np.array([[3.0, -4.0, 0.5], [0.0, 1.0, -2.0]])
    got = tk.vector_norm(tk.asarray(x), axis=1, ord=ord).numpy()
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(got, np.linalg.vector_norm(x, axis=1, ord=ord), rtol=1e-12)
    assert got[1] == (0.0 if ord < 0 else got[1])  # a zero makes every negative-order norm 0


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, INF, -INF])
def test_matrix_norm_orders(ord):  # noqa: A002
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(tk.matrix_norm(tk.asarray(x), ord=ord).numpy(), np.linalg.matrix_norm(x, ord=ord),
                               rtol=1e-12)


def test_bfloat16_values():
    x = np.array([[0.5, -1.25, 3.0], [2.0, 2.0, -0.75]], dtype=ml_dtypes.bfloat16)
    t = tk.asarray(x)
    np.testing.assert_array_equal(tk.max(t, axis=1).numpy().astype(np.float32), [3.0, 2.0])
    np.testing.assert_array_equal(tk.argmin(t, axis=1).numpy(), [1, 2])
    assert tk.sum(t).item() == 5.5


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
def test_cpu_cumulative_sum_accumulates_in_double(dtype):
    # PyTorch's cpu cumsum accumulates float32 in double: 100,000 steps of 0.1 end at 10000.0 (9998.56 in float32)
    x = tk.full((100000,), 0.1, dtype=getattr(tk, dtype))
    want = np.cumsum(np.full(100000, np.asarray(0.1, dtype).astype(np.complex128 if dtype == "complex64"
                                                                      else np.float64))).astype(dtype)
    got = tk.cumulative_sum(x).numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got[-1000:], want[-1000:])
    assert abs(complex(got[-1]) - 10000) < (8 if dtype == "float16" else 1e-3)
