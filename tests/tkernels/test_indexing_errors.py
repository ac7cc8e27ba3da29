"""Bad input to the indexing ops: each error names the op and the offending arguments (shapes, dtypes), and a
failed in-place op leaves its target unchanged."""

import numpy as np
import pytest

import tkernels as tk


def arr(shape, dtype="float32"):
    n = int(np.prod(shape))
    return tk.asarray(np.arange(1, n + 1).reshape(shape).astype(dtype))


def ix(values, dtype="int64"):
    return tk.asarray(np.asarray(values, dtype=dtype))


X = arr((3, 4))


def _cuda_array():
    try:
        return tk.asarray([0, 1], device="cuda")
    except Exception as e:  # noqa: BLE001 - no cuda runtime here
        pytest.skip(f"no cuda device: {e}")


# -------------------------------------------------------------------------------------------- index arguments
@pytest.mark.parametrize("call,op", [
    (lambda i: tk.take(X, i, axis=1), "take"),
    (lambda i: tk.take_along_axis(X, i, axis=1), "take_along_axis"),
    (lambda i: tk.gather(X, 1, i), "gather"),
    (lambda i: tk.index_select(X, 1, i), "index_select"),
    (lambda i: tk.scatter(X, 1, i, 0.0), "scatter"),
    (lambda i: tk.index_add(X, 1, i, arr((3, 2))), "index_add"),
    (lambda i: tk.index_put(X, (i,), 0.0), "index_put"),
])
@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_index_arrays_must_be_int64_or_int32(call, op, dtype):
    bad = tk.asarray(np.zeros((3, 2), dtype) if op in ("take_along_axis", "gather", "scatter") else np.zeros(2, dtype))
    kinds = r"int64(, int32 or bool| or int32)"
    shape = rf"Array\(shape=\({bad.shape[0]},.*dtype={dtype}"
    with pytest.raises(TypeError, match=rf"^{op}: .*must have dtype {kinds}, got {shape}"):
        call(bad)


@pytest.mark.parametrize("call,op", [
    (lambda: tk.take(X, [0, 1]), "take"),
    (lambda: tk.gather(X, 0, np.zeros((1, 1), np.int64)), "gather"),
    (lambda: tk.index_select(X, 0, 1), "index_select"),
    (lambda: tk.index_put(X, ([0],), 1.0), "index_put"),
])
def test_index_must_be_an_array(call, op):
    with pytest.raises(TypeError, match=rf"^{op}: .*must be an integer Array.*got (list|ndarray|int)"):
        call()


@pytest.mark.parametrize("call,op", [
    (lambda: tk.take([1, 2], ix([0])), "take"),
    (lambda: tk.gather(np.ones(3), 0, ix([0])), "gather"),
    (lambda: tk.masked_fill(3.0, tk.asarray(True), 1.0), "masked_fill"),
    (lambda: tk.nonzero([1, 0]), "nonzero"),
    (lambda: tk.one_hot([1, 0]), "one_hot"),
])
def test_x_must_be_an_array(call, op):
    with pytest.raises(TypeError, match=rf"^{op}: x must be an Array"):
        call()


def test_index_on_another_device():
    c = _cuda_array()
    with pytest.raises(RuntimeError, match=r"take: indices is on cuda.* but x is on cpu"):
        tk.take(X, c, axis=0)


# ---------------------------------------------------------------------------------------------- out of range
@pytest.mark.parametrize("call,msg", [
    (lambda: tk.take(X, ix([0, 4]), axis=1), r"take: index 4 is out of bounds for axis 1 with size 4"),
    (lambda: tk.take(X, ix([-5]), axis=-1), r"take: index -5 is out of bounds for axis 1 with size 4"),
    (lambda: tk.take(X, ix([12])), r"take: index 12 is out of bounds for axis 0 with size 12"),
    (lambda: tk.take(arr((3, 0)), ix([0]), axis=1), r"take: index 0 is out of bounds for axis 1 with size 0"),
    (lambda: tk.take_along_axis(X, ix([[7]], "int32"), axis=0),
     r"take_along_axis: index 7 is out of bounds for axis 0 with size 3"),
    (lambda: tk.gather(X, 1, ix([[0, 4]])), r"gather: index 4 is out of bounds for axis 1 with size 4"),
    (lambda: tk.gather(X, 0, ix([[-1]])), r"gather: index -1 is out of bounds for axis 0 with size 3.*negative"),
    (lambda: tk.index_select(X, 0, ix([1, 3])), r"index_select: index 3 is out of bounds for axis 0 with size 3"),
    (lambda: tk.index_select(X, 1, ix([-1])), r"index_select: index -1 is out of bounds for axis 1 with size 4"),
    (lambda: tk.scatter(X, 0, ix([[3]]), 1.0), r"scatter: index 3 is out of bounds for axis 0 with size 3"),
    (lambda: tk.scatter_add(X, 1, ix([[0, 9]]), arr((1, 2))), r"scatter_add: index 9 is out of bounds for axis 1"),
    (lambda: tk.index_add(X, 0, ix([0, 3]), arr((2, 4))), r"index_add: index 3 is out of bounds for axis 0 with size"),
    (lambda: tk.index_put(X, (ix([0]), ix([4])), 1.0), r"index_put: index 4 is out of bounds for axis 1 with size 4"),
    (lambda: tk.index_put(X, (ix([-4]),), 1.0, accumulate=True), r"index_put: index -4 is out of bounds for axis 0"),
])
def test_out_of_range_index_names_op_axis_index_and_size(call, msg):
    with pytest.raises(IndexError, match=msg) as e:
        call()
    assert "Array(shape=" in str(e.value)  # and describes x


@pytest.mark.parametrize("call", [
    lambda x: tk.scatter_(x, 1, ix([[0, 1], [2, 4]]), arr((2, 2))),
    lambda x: tk.scatter_(x, 1, ix([[0, 1], [2, 3]]), "a"),
    lambda x: tk.scatter_add_(x, 0, ix([[0, 1, 2, 3]]), arr((1, 4))),
    lambda x: tk.index_add_(x, 1, ix([0, 4]), arr((3, 2))),
    lambda x: tk.index_add_(x, 1, ix([0, 1]), arr((3, 3))),
    lambda x: tk.index_put_(x, (ix([0, 1, 3]),), 5.0),
    lambda x: tk.index_put_(x, (ix([0, 1]),), arr((3, 4))),
    lambda x: tk.masked_fill_(x, tk.asarray(np.ones((2, 3, 4), bool)), 1.0),
    lambda x: tk.masked_fill_(x, tk.asarray(np.ones((3, 4), bool)), "a"),
    lambda x: tk.masked_fill_(x, tk.asarray(np.ones((3, 4), bool)), 2**40 if x.dtype == tk.int32 else [1.0]),
], ids=["scatter_", "scatter_ src", "scatter_add_", "index_add_", "index_add_ shape", "index_put_", "index_put_ values",
        "masked_fill_ shape", "masked_fill_ value", "masked_fill_ overflow"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_failed_in_place_ops_leave_x_unchanged(call, dtype):
    x = arr((3, 4), dtype)
    before = x.numpy().copy()
    with pytest.raises((IndexError, ValueError, TypeError)):
        call(x)
    np.testing.assert_array_equal(x.numpy(), before)


# ------------------------------------------------------------------------------------------------------ shapes
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.take(X, ix([0]), axis=2), IndexError, r"take: axis 2 is out of range for an array of 2 dim"),
    (lambda: tk.take_along_axis(X, ix([0, 1]), axis=0), ValueError,
     r"take_along_axis: indices must have the number of dimensions of x \(2\), got Array\(shape=\(2,\)"),
    (lambda: tk.take_along_axis(X, ix(np.zeros((2, 4))), axis=1), ValueError,
     r"take_along_axis: x and indices must broadcast together off axis 1, got Array\(shape=\(3, 4\).*shape=\(2, 4\)"),
    (lambda: tk.gather(X, 0, ix([0])), ValueError, r"gather: index must have the number of dimensions of x \(2\)"),
    (lambda: tk.gather(X, 0, ix(np.zeros((1, 5)))), ValueError,
     r"gather: index.shape\[1\] = 5 exceeds x.shape\[1\] = 4"),
    (lambda: tk.gather(X, 3, ix(np.zeros((1, 1)))), IndexError, r"gather: axis 3 is out of range"),
    (lambda: tk.index_select(X, 0, ix(np.zeros((1, 1)))), ValueError,
     r"index_select: index must be 1-D or 0-d, got Array\(shape=\(1, 1\)"),
    (lambda: tk.scatter(X, 0, ix(np.zeros((1, 1))), arr((1, 1), "float64")), TypeError,
     r"scatter: src must have the dtype of x \(float32\), got Array\(shape=\(1, 1\), dtype=float64"),
    (lambda: tk.scatter(X, 0, ix(np.zeros((2, 2))), arr((1, 2))), ValueError,
     r"scatter: index.shape\[0\] = 2 exceeds src.shape\[0\] = 1"),
    (lambda: tk.scatter(X, 0, ix(np.zeros((1, 5))), arr((1, 5))), ValueError,
     r"scatter: index.shape\[1\] = 5 exceeds x.shape\[1\] = 4"),
    (lambda: tk.scatter(X, 0, ix(np.zeros((1, 1))), arr((1,))), ValueError,
     r"scatter: src must have the number of dimensions of index \(2\), got Array\(shape=\(1,\)"),
    (lambda: tk.scatter(X, 0, ix(np.zeros(2)), 1.0), ValueError,
     r"scatter: index must have the number of dimensions of x \(2\), got Array\(shape=\(2,\)"),
    (lambda: tk.scatter(X, 0, ix(np.zeros((1, 1))), "a"), TypeError, r"scatter: src must be an Array or a Python"),
    (lambda: tk.scatter_add(X, 0, ix(np.zeros((1, 1))), 1.0), TypeError, r"scatter_add: src must be an Array, got"),
    (lambda: tk.scatter(arr((2,), "int32"), 0, ix([0]), float("inf")), ValueError,
     r"scatter: cannot store inf in an integer array \(Array\(shape=\(2,\), dtype=int32"),
    (lambda: tk.scatter(arr((2,), "int8"), 0, ix([0]), 200), ValueError,
     r"scatter: value 200 cannot be converted to int8 without overflow"),
    (lambda: tk.index_add(X, 0, ix([0, 1]), arr((3, 4))), ValueError,
     r"index_add: source must have shape \(2, 4\) .*got Array\(shape=\(3, 4\)"),
    (lambda: tk.index_add(X, 0, ix([0]), arr((1, 4), "float64")), TypeError,
     r"index_add: source must have the dtype of x \(float32\), got Array\(shape=\(1, 4\), dtype=float64"),
    (lambda: tk.index_add(X, 0, ix(np.zeros((1, 1))), arr((1, 4))), ValueError, r"index_add: index must be 1-D"),
    (lambda: tk.index_add(arr((2,), "int64"), 0, ix([0]), arr((1,), "int64"), alpha=0.5), TypeError,
     r"index_add: alpha must not be a float for int64 arrays"),
    (lambda: tk.index_put(X, ix([0]), 1.0), TypeError, r"index_put: indices must be a tuple of index Arrays"),
    (lambda: tk.index_put(X, (ix([0]), ix([0]), ix([0])), 1.0), IndexError,
     r"index_put: too many indices: 3 dimension\(s\) indexed in Array\(shape=\(3, 4\)"),
    (lambda: tk.index_put(X, (tk.asarray(np.ones(4, bool)),), 1.0), IndexError,
     r"index_put: the shape \(4,\) of the mask indices\[0\] does not match the shape \(3,\) of x"),
    (lambda: tk.index_put(X, (tk.asarray(True),), 1.0), IndexError, r"index_put: indices\[0\] is a 0-d bool mask"),
    (lambda: tk.index_put(X, (ix([0, 1]), ix([0, 1, 2])), 1.0), IndexError,
     r"index_put: shape mismatch: the index arrays could not be broadcast together, got Array\(shape=\(2,\)"),
    (lambda: tk.index_put(X, (ix([0, 1]),), arr((3, 4))), ValueError,
     r"index_put: values of shape \(3, 4\) cannot be broadcast to the indexed shape \(2, 4\)"),
    (lambda: tk.index_put(X, (ix([0]),), arr((4,), "float16")), TypeError,
     r"index_put: values must have the dtype of x \(float32\), got Array\(shape=\(4,\), dtype=float16"),
    (lambda: tk.index_put(X, (ix([0]),), [1.0]), TypeError, r"index_put: values must be an Array of x's dtype"),
])
def test_shape_and_dtype_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# -------------------------------------------------------------------------------------------------------- masks
M = tk.asarray(np.ones((3, 4), bool))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.masked_fill(X, ix(np.ones((3, 4))), 0.0), TypeError,
     r"masked_fill: mask must be a bool Array, got Array\(shape=\(3, 4\), dtype=int64"),
    (lambda: tk.masked_fill(X, np.ones((3, 4), bool), 0.0), TypeError, r"masked_fill: mask must be a bool Array"),
    (lambda: tk.masked_fill(X, tk.asarray(np.ones((2, 4), bool)), 0.0), ValueError,
     r"masked_fill: mask of shape \(2, 4\) does not broadcast to or with x of shape \(3, 4\)"),
    (lambda: tk.masked_fill_(arr((1, 4)), M, 0.0), ValueError,
     r"masked_fill_: mask of shape \(3, 4\) does not broadcast to x of shape \(1, 4\)"),
    (lambda: tk.masked_fill(X, M, arr((2,))), ValueError,
     r"masked_fill: value must be a number or a 0-d Array, got Array\(shape=\(2,\)"),
    (lambda: tk.masked_fill(X, M, "a"), TypeError, r"masked_fill: value must be a number or a 0-d Array, got str"),
    (lambda: tk.masked_fill(arr((3, 4), "uint8"), M, -1), ValueError,
     r"masked_fill: value -1 cannot be converted to uint8 without overflow"),
    (lambda: tk.masked_fill(arr((3, 4), "int64"), M, float("nan")), ValueError,
     r"masked_fill: cannot store nan in an integer array \(Array\(shape=\(3, 4\), dtype=int64"),
    (lambda: tk.masked_select(X, ix(np.ones((3, 4)))), TypeError, r"masked_select: mask must be a bool Array"),
    (lambda: tk.masked_select(X, tk.asarray(np.ones(3, bool))), ValueError,
     r"masked_select: shapes \(3, 4\), \(3,\) cannot be broadcast together"),
])
def test_mask_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_nonzero_of_a_0d_array_is_an_error():
    with pytest.raises(ValueError, match=r"nonzero: x must have at least one dimension, got Array\(shape=\(\),"):
        tk.nonzero(tk.asarray(1.0))
    assert tk.argwhere(tk.asarray(1.0)).shape == (1, 0)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.one_hot(arr((3,))), TypeError, r"one_hot: x must hold class indices \(int64 or int32\), got "
                                                r"Array\(shape=\(3,\), dtype=float32"),
    (lambda: tk.one_hot(ix([0, -1])), ValueError, r"one_hot: class value -1 is out of range \[0, 1\)"),
    (lambda: tk.one_hot(ix([0, 5]), 3), ValueError, r"one_hot: class value 5 is out of range \[0, 3\) "
                                                    r"\(Array\(shape=\(2,\), dtype=int64"),
    (lambda: tk.one_hot(ix(np.zeros(0)), -1), ValueError, r"one_hot: cannot infer the number of classes from an "
                                                          r"empty x"),
    (lambda: tk.one_hot(ix([0]), -2), ValueError, r"one_hot: num_classes must be -1 \(inferred\) or non-negative"),
    (lambda: tk.one_hot(ix([0]), 2.5), TypeError, r"one_hot: num_classes must be an integer"),
])
def test_one_hot_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("call,op", [
    (lambda x: tk.scatter_(x, 1, ix([[0]]), 1.0), "scatter_"),
    (lambda x: tk.scatter_add_(x, 1, ix([[0]]), arr((1, 1))), "scatter_add_"),
    (lambda x: tk.index_add_(x, 1, ix([0]), arr((3, 1))), "index_add_"),
    (lambda x: tk.index_put_(x, (ix([0]),), 1.0), "index_put_"),
    (lambda x: tk.masked_fill_(x, tk.asarray(np.ones((3, 4), bool)), 1.0), "masked_fill_"),
])
def test_in_place_ops_refuse_broadcast_views(call, op):
    base = arr((1, 4))
    x = base.broadcast_to((3, 4))
    with pytest.raises(ValueError, match=rf"^{op}: x is a broadcast view \(Array\(shape=\(3, 4\).*strides \(0, 1\)"):
        call(x)
    np.testing.assert_array_equal(base.numpy(), [[1, 2, 3, 4]])
