"""Linear algebra semantics the op table does not show: operators and in-place matmul, out= with aliasing and
casts, float32 accumulation of half dtypes, the folded (batch @ weight) GEMM, einsum's conventions."""

import numpy as np
import pytest

import tkernels as tk


def arr(shape, dtype=np.float32, seed=0):
    return tk.asarray(np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype))


# ---------------------------------------------------------------------------------------------- matmul
def test_matmul_operator_and_rmatmul():
    a, b = arr((3, 4)), arr((4, 2), seed=1)
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-6)
    assert (a @ b).is_contiguous()


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_imatmul_in_place_reads_before_writing(shape):
    a, b = arr(shape), arr((3, 3), seed=1)
    ref = a.numpy() @ b.numpy()
    storage = a._storage
    a @= b
    assert a._storage is storage  # in place
    np.testing.assert_allclose(a.numpy(), ref, rtol=1e-5, atol=1e-6)
    c = arr((3, 3), seed=2)
    ref = c.numpy() @ c.numpy()
    c @= c  # out aliases both operands
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_matmul_out_casts_and_accepts_strided_targets():
    a, b = arr((2, 3, 5)), arr((5, 4), seed=1)
    ref = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    out64 = tk.zeros((2, 3, 4), dtype=tk.float64)
    assert tk.matmul(a, b, out=out64) is out64
    np.testing.assert_allclose(out64.numpy(), ref, rtol=1e-5)
    big = tk.zeros((2, 3, 8))
    view = big[..., ::2]  # a non-contiguous out on the folded (batch @ weight) path
    tk.matmul(a, b, out=view)
    np.testing.assert_allclose(big.numpy()[..., ::2], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(big.numpy()[..., 1::2], 0)
    v = tk.zeros((3,))
    tk.matmul(arr((3, 5)), arr((5,), seed=3), out=v)  # 2-D @ 1-D into a 1-D out
    np.testing.assert_allclose(v.numpy(), arr((3, 5)).numpy() @ arr((5,), seed=3).numpy(), rtol=1e-5)


def test_matmul_result_dtypes_follow_pytorch_promotion():
    i8, u8 = tk.ones((2, 2), dtype=tk.int8), tk.ones((2, 2), dtype=tk.uint8)
    assert tk.matmul(i8, u8).dtype is tk.int16
    assert tk.matmul(tk.ones((2, 2), dtype=tk.float16), tk.ones((2, 2), dtype=tk.bfloat16)).dtype is tk.float32
    assert tk.matmul(tk.ones((2, 2), dtype=tk.int64), tk.ones((2, 2), dtype=tk.float16)).dtype is tk.float16
    np.testing.assert_array_equal(tk.matmul(i8, u8).numpy(), [[2, 2], [2, 2]])


@pytest.mark.parametrize("dtype,n", [(tk.float16, 3000), (tk.bfloat16, 1000)])
def test_half_matmul_accumulates_in_float32(dtype, n):
    # Half accumulation stalls (float16 at 2048, bfloat16 at 256: adding 1 rounds away); float32 does not.
    ones = tk.ones((1, n), dtype=dtype)
    r = tk.matmul(ones, ones.mT)
    assert r.dtype is dtype
    assert float(r.astype(tk.float32).item()) == n
    assert float(tk.vecdot(ones, ones).astype(tk.float32).item()) == n
    assert float(tk.einsum("ij->", ones).astype(tk.float32).item()) == n


def test_matmul_1d_shapes():
    assert (arr(4) @ arr(4)).shape == ()
    assert (arr(4) @ arr((2, 4, 3))).shape == (2, 3)
    assert (arr((2, 3, 4)) @ arr(4)).shape == (2, 3)
    assert (arr((2, 1, 3, 4)) @ arr((5, 4, 2))).shape == (2, 5, 3, 2)


def test_matmul_fold_matches_batched_reference():
    a, w = arr((4, 3, 129)), arr((129, 7), seed=1)
    ref = np.einsum("bmk,kn->bmn", a.numpy().astype(np.float64), w.numpy().astype(np.float64))
    np.testing.assert_allclose((a @ w).numpy(), ref, rtol=1e-5, atol=1e-4)
    at = tk.asarray(np.ascontiguousarray(a.numpy().transpose(1, 0, 2))).permute_dims((1, 0, 2))  # batch strided
    np.testing.assert_allclose((at @ w).numpy(), ref, rtol=1e-5, atol=1e-4)


def test_matmul_does_not_copy_strided_operands_in_the_entry(monkeypatch):
    seen = []
    from tkernels.backends.numpy import linalg as impl

    orig = impl.matmul

    def spy(out, x1, x2):
        seen.append((x1.strides, x2.strides))
        return orig(out, x1, x2)


    monkeypatch.setitem(tk.Device("cpu")._impls, "matmul", spy)
    a = arr((4, 3))
    tk.matmul(a.mT, a)
    assert seen == [((1, 3), (3, 1))]


# ------------------------------------------------------------------------------------- vecdot, tensordot...
def test_vecdot_and_outer_shapes():
    assert tk.vecdot(arr(5), arr(5)).shape == ()
    assert tk.vecdot(arr((2, 1, 5)), arr((3, 5))).shape == (2, 3)
    assert tk.outer(arr(3), arr(0)).shape == (3, 0)
    assert tk.tensordot(arr(()), arr((2, 3)), axes=0).shape == (2, 3)


# ------------------------------------------------------------------------------------------------- einsum
def test_einsum_always_returns_a_new_array():
    x = arr((3, 4))
    t = tk.einsum("ij->ji", x)
    t[...] = 0
    assert np.all(x.numpy() != 0)
    d = tk.einsum("ii->i", arr((3, 3)))
    assert d._storage is not x._storage and d.shape == (3,)


def test_einsum_sums_ellipsis_dimensions_left_out_of_the_output():
    # PyTorch's rule (NumPy refuses this form): '...' labels missing from an explicit output are summed.
    x = arr((2, 3, 4))
    np.testing.assert_allclose(tk.einsum("...i->i", x).numpy(), x.numpy().sum(axis=(0, 1)), rtol=1e-5)
    y = arr((3, 4), seed=1)
    np.testing.assert_allclose(tk.einsum("...ij,...ij->j", x, y).numpy(),
                               (x.numpy() * y.numpy()).sum(axis=(0, 1)), rtol=1e-5, atol=1e-5)


def test_einsum_implicit_output_is_sorted_with_ellipsis_first():
    x, y = arr((2, 5, 3)), arr((3, 4), seed=1)
    r = tk.einsum("...ab,bA", x, y)  # implicit: ... then 'A' (upper case sorts first) then 'a'
    assert r.shape == (2, 4, 5)
    np.testing.assert_allclose(r.numpy(), np.einsum("...ab,bA->...Aa", x.numpy(), y.numpy()), rtol=1e-5, atol=1e-5)


def test_einsum_spaces_and_mixed_dtypes():
    a, b = tk.ones((2, 3), dtype=tk.int32), arr((3,))
    r = tk.einsum(" ij , j -> i ", a, b)
    assert r.dtype is tk.float32
    np.testing.assert_allclose(r.numpy(), np.ones((2, 3)) @ b.numpy(), rtol=1e-6)


# ------------------------------------------------------------------------------------------------------ svd
def test_svd_namespace_and_result():
    """svd/svdvals live in tkernels.linalg only (as the array API's extension), with matrix_norm."""
    assert not hasattr(tk, "svd") and not hasattr(tk, "svdvals")
    assert tk.linalg.matrix_norm is tk.matrix_norm
    a = arr((2, 5, 3), np.float64)
    r = tk.linalg.svd(a)
    assert r._fields == ("U", "S", "Vh") and r.U.shape == (2, 5, 5) and r.Vh.shape == (2, 3, 3)
    u, s, vh = tk.linalg.svd(a, full_matrices=False)
    assert u.shape == (2, 5, 3) and s.shape == (2, 3) and vh.shape == (2, 3, 3)
    np.testing.assert_allclose(((u.numpy() * s.numpy()[:, None]) @ vh.numpy()), a.numpy(), atol=1e-13)
    np.testing.assert_allclose(s.numpy(), tk.linalg.svdvals(a).numpy(), rtol=1e-14)
    np.testing.assert_allclose(tk.sum(s, axis=-1).numpy(), tk.matrix_norm(a, ord="nuc").numpy(), rtol=1e-13)


def test_svd_halves_compute_in_float32():
    a = arr((4, 3))
    for d in (tk.float16, tk.bfloat16):
        s = tk.linalg.svdvals(a.astype(d))
        assert s.dtype == d
        want = np.linalg.svd(a.astype(d).astype(tk.float32).numpy().astype(np.float64), compute_uv=False)
        np.testing.assert_allclose(s.astype(tk.float32).numpy(), want, rtol=1e-2 if d == tk.float16 else 1e-1 / 8)


def test_svd_empty_matrices():
    u, s, vh = tk.linalg.svd(tk.zeros((2, 0, 3)))
    assert u.shape == (2, 0, 0) and s.shape == (2, 0)
    np.testing.assert_array_equal(vh.numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert tk.linalg.svd(tk.zeros((0, 2, 2)), full_matrices=False).U.shape == (0, 2, 2)
