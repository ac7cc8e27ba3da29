"""Bad input to reductions and scans: each error names the op and the offending argument (shape, dtype)."""

import numpy as np
import pytest

import tkernels as tk

F = tk.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
I = tk.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))  # noqa: E741
DESC_F = r"shape=\(2, 3\), dtype=float32"
DESC_I = r"shape=\(2, 3\), dtype=int32"

AXIS_OPS = ["sum", "prod", "mean", "max", "min", "var", "std", "logsumexp", "any", "all", "count_nonzero",
            "vector_norm"]


@pytest.mark.parametrize("op", AXIS_OPS + ["argmax", "argmin"])
def test_axis_out_of_range(op):
    with pytest.raises(IndexError, match=rf"{op}: axis 2 is out of range .*{DESC_F}"):
        getattr(tk, op)(F, axis=2)
    with pytest.raises(IndexError, match=rf"{op}: axis -3 is out of range .*{DESC_F}"):
        getattr(tk, op)(F, axis=-3)


@pytest.mark.parametrize("op", AXIS_OPS)
def test_axis_tuple_out_of_range_and_repeated(op):
    with pytest.raises(IndexError, match=rf"{op}: axis 5 is out of range .*{DESC_F}"):
        getattr(tk, op)(F, axis=(0, 5))
    with pytest.raises(ValueError, match=rf"{op}: repeated axis in axis=\(1, -1\).*{DESC_F}"):
        getattr(tk, op)(F, axis=(1, -1))


@pytest.mark.parametrize("op", AXIS_OPS)
def test_axis_wrong_type(op):
    with pytest.raises(TypeError, match=rf"{op}: axis must be an integer, got float 1.0.*{DESC_F}"):
        getattr(tk, op)(F, axis=1.0)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_axis_tuple(op):
    with pytest.raises(TypeError, match=rf"{op}: axis must be an int or None, got tuple \(0, 1\).*{DESC_F}"):
        getattr(tk, op)(F, axis=(0, 1))


@pytest.mark.parametrize("op", AXIS_OPS + ["argmax", "argmin", "cumulative_sum", "cumulative_prod", "matrix_norm"])
def test_not_an_array(op):
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got list \[1.0, 2.0\]"):
        getattr(tk, op)([1.0, 2.0])
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got (ndarray|.*shape=\(3,\)).*hint: convert "
                                        rf"with tkernels.asarray"):
        getattr(tk, op)(np.ones(3))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_alias_not_an_array(op):
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got float 3.0"):
        getattr(tk, op)(3.0, 0)


@pytest.mark.parametrize("op", ["mean", "var", "std", "vector_norm", "matrix_norm"])
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_floating_only(op, dtype):
    x = tk.asarray(np.ones((2, 3))).astype(dtype)
    with pytest.raises(TypeError, match=rf"{op}: expected a floating-point array, got .*shape=\(2, 3\), "
                                        rf"dtype={dtype}.*hint: convert with x.astype"):
        getattr(tk, op)(x)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_empty_reduction(op):
    fn = getattr(tk, op)
    with pytest.raises(ValueError, match=rf"{op}: cannot reduce over axis 0 of size 0 of .*shape=\(0,\), "
                                         rf"dtype=float32.*no identity"):
        fn(tk.zeros((0,)))
    with pytest.raises(ValueError, match=rf"{op}: cannot reduce over axis 1 of size 0 of .*shape=\(3, 0\)"):
        fn(tk.zeros((3, 0)), axis=1)
    with pytest.raises(ValueError, match=rf"{op}: cannot reduce over axis 1 of size 0 of .*shape=\(3, 0\)"):
        fn(tk.zeros((3, 0)))
    assert fn(tk.zeros((3, 0)), axis=0).shape == (0,)  # nothing is reduced over an empty axis: fine


@pytest.mark.parametrize("ord", [float("inf"), -float("inf"), -1, -0.5])
def test_vector_norm_empty_without_identity(ord):  # noqa: A002
    with pytest.raises(ValueError, match=r"vector_norm: cannot reduce over axis 0 of size 0 of .*shape=\(0, 2\)"):
        tk.vector_norm(tk.zeros((0, 2)), ord=ord)
    assert tk.vector_norm(tk.zeros((0, 2)), axis=1, ord=ord).shape == (0,)


@pytest.mark.parametrize("ord", ["fro", "nuc", None, True, float("nan"), tk.zeros(())])
def test_vector_norm_bad_ord(ord):  # noqa: A002
    with pytest.raises(ValueError, match=rf"vector_norm: ord must be a real number.*{DESC_F}"):
        tk.vector_norm(F, ord=ord)


@pytest.mark.parametrize("ord", [3, 0, "spectral", None, True, 0.5, float("nan"), tk.ones(())])
def test_matrix_norm_bad_ord(ord):  # noqa: A002
    with pytest.raises(ValueError, match=rf"matrix_norm: unsupported ord .*{DESC_F}.*supported: 'fro', 'nuc'"):
        tk.matrix_norm(F, ord=ord)


@pytest.mark.parametrize("shape", [(3,), ()])
def test_matrix_norm_needs_matrices(shape):
    x = tk.ones(shape)
    with pytest.raises(ValueError, match=rf"matrix_norm: expected an array of at least 2 dimensions.*"
                                         rf"shape={tuple(shape)!r}.*".replace("(", r"\(").replace(")", r"\)")):
        tk.matrix_norm(x)


@pytest.mark.parametrize("ord,shape", [(2, (0, 3)), (-2, (3, 0)), (1, (3, 0)), (-1, (2, 3, 0)),
                                       (float("inf"), (0, 3)), (-float("inf"), (2, 0, 3))])
def test_matrix_norm_empty_without_identity(ord, shape):  # noqa: A002
    with pytest.raises(ValueError, match=r"matrix_norm: the .* norm of an empty matrix is undefined, got .*shape="):
        tk.matrix_norm(tk.zeros(shape), ord=ord)


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
def test_scan_axis_required(op):
    with pytest.raises(ValueError, match=rf"{op}: axis is required for an array of more than one dimension, got "
                                         rf".*{DESC_F}"):
        getattr(tk, op)(F)


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod"])
def test_scan_axis_out_of_range(op):
    with pytest.raises(IndexError, match=rf"{op}: axis 2 is out of range .*{DESC_F}"):
        getattr(tk, op)(F, axis=2)
    with pytest.raises(TypeError, match=rf"{op}: axis must be an integer, got tuple .*{DESC_F}"):
        getattr(tk, op)(F, axis=(0, 1))


def test_scan_include_initial_0d():
    with pytest.raises(ValueError, match=r"cumulative_sum: include_initial needs an array of at least one "
                                         r"dimension, got .*shape=\(\), dtype=float32"):
        tk.cumulative_sum(tk.asarray(2.0), include_initial=True)


@pytest.mark.parametrize("op", ["sum", "prod", "cumulative_sum", "cumulative_prod"])
def test_bad_dtype(op):
    kw = {"axis": 1} if op.startswith("cum") else {}
    with pytest.raises(TypeError, match=rf"{op}: invalid dtype 'complex256' for .*{DESC_I}"):
        getattr(tk, op)(I, dtype="complex256", **kw)


@pytest.mark.parametrize("op", ["var", "std"])
def test_bad_correction(op):
    with pytest.raises(TypeError, match=rf"{op}: correction must be a real number, got str 'one'"):
        getattr(tk, op)(F, correction="one")


def test_failed_op_leaves_input_unchanged():
    x = tk.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    before = x.numpy().copy()
    for bad in (lambda: tk.sum(x, axis=(0, 0)), lambda: tk.max(x[:, :0]), lambda: tk.matrix_norm(x, ord=7)):
        with pytest.raises((ValueError, IndexError, TypeError)):
            bad()
    np.testing.assert_array_equal(x.numpy(), before)
