"""Bad input to sorting and searching: each error names the op and the offending arguments."""

import numpy as np
import pytest

import tkernels as tk

X = tk.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
S = tk.asarray(np.array([1.0, 2.0, 3.0], np.float32))


def _cuda_array():
    try:
        return tk.asarray([0.0, 1.0], device="cuda")
    except Exception as e:  # noqa: BLE001 - no cuda runtime here
        pytest.skip(f"no cuda device: {e}")


@pytest.mark.parametrize("op", ["sort", "argsort", "sort_with_indices", "unique_values", "unique_counts",
                                "unique_inverse", "unique_all"])
def test_x_must_be_an_array(op):
    with pytest.raises(TypeError, match=rf"^{op}: expected an Array, got ndarray"):
        getattr(tk, op)(np.ones(3))


@pytest.mark.parametrize("op", ["sort", "argsort", "sort_with_indices"])
def test_sort_axis_out_of_range(op):
    with pytest.raises(IndexError, match=rf"^{op}: axis 2 is out of range for an array of 2 dimension"):
        getattr(tk, op)(X, axis=2)
    with pytest.raises(IndexError, match=rf"^{op}: axis -3 is out of range"):
        getattr(tk, op)(X, axis=-3)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.topk(X, 5), ValueError, r"topk: k=5 is out of range for axis 1 of size 4 \(Array\(shape=\(3, 4\)"),
    (lambda: tk.topk(X, 4, axis=0), ValueError, r"topk: k=4 is out of range for axis 0 of size 3"),
    (lambda: tk.topk(X, -1), ValueError, r"topk: k=-1 is out of range"),
    (lambda: tk.topk(tk.asarray(1.0), 2), ValueError, r"topk: k=2 is out of range for axis 0 of size 1"),
    (lambda: tk.topk(X, 1.5), TypeError, r"topk: k must be an integer, got float 1.5"),
    (lambda: tk.topk(X, 1, axis=2), IndexError, r"topk: axis 2 is out of range"),
    (lambda: tk.topk(tk.asarray([True, False]), 1), TypeError,
     r"topk: not supported for bool arrays \(Array\(shape=\(2,\), dtype=bool"),
    (lambda: tk.topk([1, 2], 1), TypeError, r"topk: expected an Array, got list"),
])
def test_topk_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.unique(X, axis=2), IndexError, r"unique: axis 2 is out of range for an array of 2 dimension"),
    (lambda: tk.unique(tk.asarray(1.0), axis=0), ValueError,
     r"unique: axis=0 needs an array with at least one dimension, got Array\(shape=\(\)"),
    (lambda: tk.unique([1, 2]), TypeError, r"unique: expected an Array, got list"),
])
def test_unique_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: tk.searchsorted(tk.asarray(1.0), S), ValueError,
     r"searchsorted: x1 must have at least one dimension, got Array\(shape=\(\)"),
    (lambda: tk.searchsorted(tk.asarray([False, True]), S), TypeError,
     r"searchsorted: x1 must have a real numeric dtype, got Array\(shape=\(2,\), dtype=bool"),
    (lambda: tk.searchsorted(S, tk.asarray([True])), TypeError,
     r"searchsorted: x2 must have a real numeric dtype, got Array\(shape=\(1,\), dtype=bool"),
    (lambda: tk.searchsorted(S, S, side="middle"), ValueError, r"searchsorted: side must be 'left' or 'right', got "
                                                               r"'middle'"),
    (lambda: tk.searchsorted(S, "a"), TypeError, r"searchsorted: x2 must be an Array or a Python number, got str"),
    (lambda: tk.searchsorted(S.tolist(), S), TypeError, r"searchsorted: expected an Array, got list"),
    (lambda: tk.searchsorted(X, S), ValueError,
     r"searchsorted: an N-D x1 needs x2 with the same leading dimensions .*got Array\(shape=\(3, 4\).*"
     r"Array\(shape=\(3,\)"),
    (lambda: tk.searchsorted(X, tk.asarray(np.zeros((2, 5), np.float32))), ValueError,
     r"searchsorted: an N-D x1 needs x2 with the same leading dimensions"),
    (lambda: tk.searchsorted(X, 1.0), ValueError, r"searchsorted: an N-D x1 needs x2"),
    (lambda: tk.searchsorted(S, S, sorter=tk.asarray([0.0, 1.0, 2.0])), TypeError,
     r"searchsorted: sorter must be an int64 or int32 Array, got Array\(shape=\(3,\), dtype=float32"),
    (lambda: tk.searchsorted(S, S, sorter=np.arange(3)), TypeError,
     r"searchsorted: sorter must be an int64 or int32 Array, got ndarray"),
    (lambda: tk.searchsorted(S, S, sorter=tk.asarray([0, 1])), ValueError,
     r"searchsorted: sorter must have x1's shape \(3,\), got Array\(shape=\(2,\)"),
    (lambda: tk.searchsorted(S, S, sorter=tk.asarray([0, 1, 3])), IndexError,
     r"searchsorted: index 3 is out of bounds for axis 0 with size 3"),
    (lambda: tk.searchsorted(S, S, sorter=tk.asarray([0, -1, 2])), IndexError,
     r"searchsorted: index -1 is out of bounds for axis 0 with size 3"),
])
def test_searchsorted_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_searchsorted_device_mismatch():
    c = _cuda_array()
    with pytest.raises(RuntimeError, match=r"searchsorted: x1 is on cpu but x2 is on cuda"):
        tk.searchsorted(S, c)


def test_sort_of_0d_and_stable_descending_semantics():
    """Not errors, but the documented edge semantics: 0-d sorts to itself; stable descending keeps ties in order;
    NaN last ascending, first descending; topk counts NaN as the largest."""
    assert tk.sort(tk.asarray(2.0)).item() == 2.0
    assert tk.argsort(tk.asarray(2.0)).item() == 0
    x = tk.asarray([1.0, float("nan"), 3.0, 1.0, 3.0])
    np.testing.assert_array_equal(tk.argsort(x).numpy(), [0, 3, 2, 4, 1])
    np.testing.assert_array_equal(tk.argsort(x, descending=True).numpy(), [1, 2, 4, 0, 3])
    v, i = tk.topk(x, 2)
    np.testing.assert_array_equal(i.numpy(), [1, 2])
    v, i = tk.topk(x, 2, largest=False)
    np.testing.assert_array_equal(i.numpy(), [0, 3])
    xb = tk.asarray([1.0, float("nan"), -2.0]).astype(tk.bfloat16)
    np.testing.assert_array_equal(tk.argsort(xb).numpy(), [2, 0, 1])
    np.testing.assert_array_equal(tk.argsort(xb, descending=True).numpy(), [1, 0, 2])
