"""Array metadata and views: reshape/view (PyTorch's view rule), permutes, transposes, broadcasting, squeeze,
expand_dims, flatten, moveaxis; strides and pointers; Python protocol methods; printing."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk


def arange(*shape, dtype=tk.float32):
    n = int(np.prod(shape)) if shape else 1
    return tk.arange(n, dtype=dtype).reshape(shape)


def shares(a: tk.Array, b: tk.Array) -> bool:
    """True when writing through ``a`` changes ``b`` (checked by writing, then restoring)."""
    before = b.numpy().copy()
    saved = a.numpy().copy()
    a[...] = -12345
    changed = not np.array_equal(b.numpy(), before)
    a[...] = tk.asarray(saved)
    return changed


# ----------------------------------------------------------------------------------------------- metadata
def test_shape_ndim_size_nbytes_itemsize():
    x = tk.zeros((2, 3, 4), dtype=tk.int16)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert (x.ndim, x.size, x.itemsize, x.nbytes) == (3, 24, 2, 48)
    z = tk.zeros((), dtype=tk.bfloat16)
    assert (z.shape, z.ndim, z.size, z.itemsize, z.nbytes) == ((), 0, 1, 2, 2)
    e = tk.zeros((3, 0, 2))
    assert (e.size, e.nbytes) == (0, 0)


def test_strides_and_storage_offset():
    x = arange(3, 4, 5)
    assert x.strides == (20, 5, 1) and x.stride() == (20, 5, 1)
    assert x.stride(0) == 20 and x.stride(-1) == 1
    assert x.storage_offset() == 0
    v = x[1, 2:, ::2]
    assert v.shape == (2, 3)
    assert v.strides == (5, 2)
    assert v.storage_offset() == 20 + 10
    with pytest.raises(IndexError, match="stride"):
        x.stride(3)


def test_data_ptr_moves_by_offset_times_itemsize():
    for dt in (tk.float64, tk.int16, tk.bfloat16, tk.bool):
        x = arange(4, 6, dtype=dt)
        v = x[2, 3:]
        assert v.storage_offset() == 15
        assert v.data_ptr() - x.data_ptr() == 15 * dt.itemsize
        assert x.T.data_ptr() == x.data_ptr()
    n = np.arange(10.0)
    x = tk.from_numpy(n)
    assert x.data_ptr() == n.ctypes.data
    assert x[3:].data_ptr() == n.ctypes.data + 3 * 8


def test_is_contiguous_and_contiguous():
    x = arange(3, 4)
    assert x.is_contiguous()
    assert x.contiguous() is x
    assert not x.T.is_contiguous()
    c = x.T.contiguous()
    assert c.is_contiguous() and c.strides == (3, 1)
    np.testing.assert_array_equal(c.numpy(), x.numpy().T)
    assert not shares(c, x)
    assert not x[:, ::2].is_contiguous()
    assert x[1:].is_contiguous()  # an offset does not break contiguity
    assert arange(3, 1)[:, :].T.is_contiguous()  # size-1 dims are ignored
    assert not tk.arange(3).broadcast_to((2, 3)).is_contiguous()


def test_empty_arrays_are_contiguous():
    # PyTorch: a tensor with no elements is contiguous whatever its strides
    e = tk.zeros((3, 0)).T
    assert e.is_contiguous()
    assert e.contiguous() is e


# ------------------------------------------------------------------------------------------- reshape/view
def test_reshape_contiguous_is_a_view():
    x = arange(2, 6)
    y = x.reshape(3, 4)
    assert y.shape == (3, 4) and y.strides == (4, 1)
    assert shares(y, x)
    y[0, 1] = 100
    assert x[0, 1].item() == 100
    assert tk.reshape(x, (4, -1)).shape == (4, 3)
    assert x.reshape((12,)).shape == (12,)
    assert x.reshape(-1).shape == (12,)


def test_reshape_transposed_to_1d_copies():
    x = arange(3, 4)
    y = x.T.reshape(-1)
    np.testing.assert_array_equal(y.numpy(), x.numpy().T.reshape(-1))
    assert not shares(y, x)
    y[0] = 99
    assert x[0, 0].item() == 0


def test_reshape_of_a_stepped_slice_splitting_a_dim_is_a_view():
    base = tk.arange(24)
    z = base[::2]  # shape (12,), stride 2
    w = z.reshape(3, 4)
    assert w.strides == (8, 2)
    np.testing.assert_array_equal(w.numpy(), np.arange(24)[::2].reshape(3, 4))
    w[1, 1] = -5
    assert base[10].item() == -5


def test_reshape_merging_permuted_dims_that_stay_adjacent_is_a_view():
    x = arange(2, 3, 4)
    p = x.permute_dims((2, 0, 1))  # dims 0 and 1 of x stay adjacent and ordered
    y = p.reshape(4, 6)
    np.testing.assert_array_equal(y.numpy(), x.numpy().transpose(2, 0, 1).reshape(4, 6))
    assert shares(y, x)


def test_reshape_copy_argument():
    x = arange(2, 3)
    y = x.reshape((3, 2), copy=True)
    assert not shares(y, x)
    np.testing.assert_array_equal(y.numpy(), np.arange(6).reshape(3, 2))
    assert shares(x.reshape((6,), copy=False), x)
    with pytest.raises(ValueError, match="reshape"):
        x.T.reshape((6,), copy=False)


def test_reshape_errors():
    x = arange(2, 3)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(4, -1)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(-1, -1)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(7)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(-2, -3)


def test_view_never_copies():
    x = arange(3, 4)
    v = x.view(2, 6)
    assert shares(v, x)
    with pytest.raises(RuntimeError, match="view.*reshape"):
        x.T.view(12)
    with pytest.raises(RuntimeError, match="view"):
        x[:, :2].view(6)  # offsets 0 1 4 5 8 9: no single stride
    w = x[:, ::2].view(6)  # offsets 0 2 4 ... 10: one stride of 2
    assert w.strides == (2,) and shares(w, x)
    assert x[:, :2].view(3, 2, 1).shape == (3, 2, 1)


def test_reshape_empty_and_0d():
    e = tk.zeros((2, 0, 3))
    assert e.reshape(0, 6).shape == (0, 6)
    assert e.T.reshape(-1).shape == (0,)
    s = tk.asarray(5.0)
    assert s.reshape(1, 1).shape == (1, 1)
    assert s.reshape(1, 1).item() == 5.0
    assert tk.asarray([7]).reshape(()).shape == ()


# ----------------------------------------------------------------------------------------- transposes
def test_permute_dims():
    n = np.arange(24.0).reshape(2, 3, 4)
    x = tk.asarray(n)
    p = tk.permute_dims(x, (1, 2, 0))
    assert p.shape == (3, 4, 2) and p.strides == (4, 1, 12)
    np.testing.assert_array_equal(p.numpy(), n.transpose(1, 2, 0))
    assert shares(p, x)
    np.testing.assert_array_equal(x.permute_dims((-1, 0, 1)).numpy(), n.transpose(2, 0, 1))
    with pytest.raises(ValueError, match="permute_dims"):
        x.permute_dims((0, 0, 1))
    with pytest.raises(ValueError, match="permute_dims"):
        x.permute_dims((0, 1))
    with pytest.raises(IndexError, match="permute_dims"):
        x.permute_dims((0, 1, 3))


def test_T_mT_matrix_transpose():
    n = np.arange(24.0).reshape(2, 3, 4)
    x = tk.asarray(n)
    np.testing.assert_array_equal(x.T.numpy(), n.T)
    np.testing.assert_array_equal(x.mT.numpy(), np.swapaxes(n, -1, -2))
    np.testing.assert_array_equal(tk.matrix_transpose(x).numpy(), np.swapaxes(n, -1, -2))
    assert shares(x.mT, x) and shares(x.T, x)
    m = x[0]
    assert m.T.shape == (4, 3) and m.T.strides == (1, 4)
    with pytest.raises(ValueError, match="matrix_transpose"):
        _ = tk.arange(3).mT


def test_swapaxes_and_moveaxis():
    n = np.arange(120.0).reshape(2, 3, 4, 5)
    x = tk.asarray(n)
    np.testing.assert_array_equal(tk.swapaxes(x, 0, 2).numpy(), np.swapaxes(n, 0, 2))
    np.testing.assert_array_equal(tk.swapaxes(x, -1, 1).numpy(), np.swapaxes(n, -1, 1))
    for src, dst in [(0, -1), (-1, 0), (1, 2), ((0, 1), (-1, -2)), ((0, 3), (1, 0))]:
        np.testing.assert_array_equal(tk.moveaxis(x, src, dst).numpy(), np.moveaxis(n, src, dst))
    assert shares(tk.moveaxis(x, 0, -1), x)
    with pytest.raises(ValueError, match="moveaxis"):
        tk.moveaxis(x, (0, 1), (2,))
    with pytest.raises(ValueError, match="moveaxis"):
        tk.moveaxis(x, (0, 0), (1, 2))
    with pytest.raises(IndexError, match="swapaxes"):
        tk.swapaxes(x, 0, 4)


# ---------------------------------------------------------------------------------------- broadcasting
def test_broadcast_to_and_expand_have_zero_strides():
    x = tk.asarray([[1.0], [2.0]])  # (2, 1)
    b = tk.broadcast_to(x, (3, 2, 4))
    assert b.shape == (3, 2, 4) and b.strides == (0, 1, 0)
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(x.numpy(), (3, 2, 4)))
    x[1, 0] = 7.0
    assert b[2, 1, 3].item() == 7.0
    e = x.expand(5, -1, 3)
    assert e.shape == (5, 2, 3) and e.strides == (0, 1, 0)
    assert x.expand((2, 6)).shape == (2, 6)
    with pytest.raises(ValueError, match="broadcast_to"):
        x.broadcast_to((3, 4))
    with pytest.raises(ValueError, match="broadcast_to"):
        x.broadcast_to((2,))
    with pytest.raises(ValueError, match="expand"):
        x.expand(3)


def test_broadcast_arrays_and_shapes():
    a, b = tk.broadcast_arrays(tk.zeros((3, 1)), tk.ones((4,)))
    assert a.shape == b.shape == (3, 4)
    assert tk.broadcast_shapes((3, 1), (1, 4), (2, 1, 1)) == (2, 3, 4)
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        tk.broadcast_shapes((3,), (4,))


# ------------------------------------------------------------------------------- squeeze / expand_dims
def test_squeeze():
    x = arange(1, 3, 1, 2)
    assert tk.squeeze(x).shape == (3, 2)
    assert tk.squeeze(x, 0).shape == (3, 1, 2)
    assert tk.squeeze(x, axis=-2).shape == (1, 3, 2)
    assert tk.squeeze(x, (0, 2)).shape == (3, 2)
    assert shares(tk.squeeze(x), x)
    np.testing.assert_array_equal(tk.squeeze(x).numpy(), np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match="squeeze.*axis 1"):
        tk.squeeze(x, 1)
    with pytest.raises(IndexError, match="squeeze"):
        tk.squeeze(x, 4)
    assert tk.squeeze(tk.asarray(3.0)).shape == ()


def test_expand_dims():
    n = np.arange(6.0).reshape(2, 3)
    x = tk.asarray(n)
    for ax in (0, 1, 2, -1, -3, (0, 1), (0, -1), (1, 3), (0, 2, 4)):
        r = tk.expand_dims(x, axis=ax)
        assert r.shape == np.expand_dims(n, ax).shape, ax
        np.testing.assert_array_equal(r.numpy(), np.expand_dims(n, ax))
    assert shares(tk.expand_dims(x, (0, 2)), x)
    assert x.unsqueeze(1).shape == (2, 1, 3)
    with pytest.raises(IndexError, match="expand_dims"):
        tk.expand_dims(x, axis=3)
    with pytest.raises(ValueError, match="expand_dims"):
        tk.expand_dims(x, axis=(0, 0))
    # on a non-contiguous array too
    t = x.T
    np.testing.assert_array_equal(tk.expand_dims(t, (0, 2)).numpy(), np.expand_dims(n.T, (0, 2)))


def test_flatten_unflatten():
    n = np.arange(120.0).reshape(2, 3, 4, 5)
    x = tk.asarray(n)
    assert tk.flatten(x).shape == (120,)
    assert tk.flatten(x, 1).shape == (2, 60)
    assert tk.flatten(x, 1, 2).shape == (2, 12, 5)
    assert tk.flatten(x, -2, -1).shape == (2, 3, 20)
    assert shares(tk.flatten(x, 1), x)
    np.testing.assert_array_equal(tk.flatten(x.T).numpy(), n.T.reshape(-1))
    assert tk.flatten(tk.asarray(2.0)).shape == (1,)
    with pytest.raises(ValueError, match="flatten"):
        tk.flatten(x, 2, 1)
    u = tk.unflatten(tk.flatten(x, 1, 2), 1, (3, 4))
    np.testing.assert_array_equal(u.numpy(), n)
    assert tk.unflatten(tk.arange(24), 0, (2, -1, 4)).shape == (2, 3, 4)
    assert tk.unflatten(x, -1, (5, 1)).shape == (2, 3, 4, 5, 1)
    with pytest.raises(ValueError, match="unflatten"):
        tk.unflatten(x, 1, (2, 2))
    with pytest.raises(ValueError, match="unflatten"):
        tk.unflatten(x, 1, (-1, 2))


# ------------------------------------------------------------------------------------ negative steps
def test_negative_step_slicing_is_a_view():
    n = np.arange(5)
    x = tk.asarray(n.copy())
    r = x[::-1]
    assert r.strides == (-1,) and r.storage_offset() == 4
    np.testing.assert_array_equal(r.numpy(), n[::-1])
    r[0] = 42
    assert x[4].item() == 42
    m = arange(3, 4)
    v = m[::-2, ::-3]
    np.testing.assert_array_equal(v.numpy(), np.arange(12.0).reshape(3, 4)[::-2, ::-3])
    assert shares(v, m)
    assert v.data_ptr() == m.data_ptr() + (2 * 4 + 3) * 4


# ------------------------------------------------------------------------------ Python protocol methods
def test_len_iter():
    x = arange(3, 2)
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, tk.Array) and r.shape == (2,) for r in rows)
    np.testing.assert_array_equal(rows[2].numpy(), [4.0, 5.0])
    rows[1][0] = -1.0  # rows are views
    assert x[1, 0].item() == -1.0
    assert len(tk.zeros((0, 3))) == 0 and list(tk.zeros((0, 3))) == []
    with pytest.raises(TypeError, match="0-d"):
        len(tk.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(tk.asarray(1.0)).__next__()


def test_bool():
    assert bool(tk.asarray(2.0)) is True
    assert bool(tk.asarray([0])) is False
    assert bool(tk.asarray([[True]])) is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tk.asarray([1, 2]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tk.zeros(0))


def test_float_int_index():
    assert float(tk.asarray([2.5])) == 2.5 and isinstance(float(tk.asarray(2)), float)
    assert int(tk.asarray(2.7)) == 2 and int(tk.asarray(-2.7)) == -2
    assert int(tk.asarray([[7]], dtype=tk.uint8)) == 7
    assert [10, 20, 30][tk.asarray(1)] == 20
    assert tk.asarray(2, dtype=tk.int8).__index__() == 2
    assert list(range(10))[tk.asarray(1):tk.asarray(3)] == [1, 2]
    with pytest.raises(TypeError, match="__index__"):
        [1, 2][tk.asarray(1.0)]
    with pytest.raises(TypeError, match="__index__"):
        tk.asarray(True).__index__()
    with pytest.raises(TypeError, match="__float__"):
        float(tk.asarray([1.0, 2.0]))
    with pytest.raises(TypeError, match="__int__"):
        int(tk.zeros(0))


def test_tolist_and_item():
    x = tk.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert all(type(v) is int for v in x.tolist()[0])
    assert tk.asarray(2.5).tolist() == 2.5
    assert tk.asarray([True, False]).tolist() == [True, False]
    assert x.T.tolist() == [[0, 3], [1, 4], [2, 5]]
    b = tk.asarray([1.5, -2.25], dtype=tk.bfloat16)
    assert b.tolist() == [1.5, -2.25] and all(type(v) is float for v in b.tolist())
    assert b[1].item() == -2.25 and type(b[1].item()) is float
    assert type(tk.asarray([3], dtype=tk.int16).item()) is int
    assert type(tk.asarray(True).item()) is bool
    assert tk.asarray([[4.0]]).item() == 4.0
    with pytest.raises(ValueError, match="item"):
        x.item()


def test_repr_and_str():
    assert repr(tk.asarray([1.0, 2.5])) == "Array([1. , 2.5], dtype=float32, device=cpu)"
    assert repr(tk.asarray([[1, 2], [3, 4]])) == "Array([[1, 2],\n       [3, 4]], dtype=int64, device=cpu)"
    assert repr(tk.asarray(7)) == "Array(7, dtype=int64, device=cpu)"
    assert repr(tk.asarray([True])) == "Array([ True], dtype=bool, device=cpu)"
    assert repr(tk.zeros((0,))) == "Array([], dtype=float32, device=cpu)"
    b = tk.asarray([1.5, 2.0, -3.25], dtype=tk.bfloat16)
    assert repr(b) == "Array([ 1.5 ,  2.  , -3.25], dtype=bfloat16, device=cpu)"
    assert str(b) == str(np.array([1.5, 2.0, -3.25], np.float32))
    assert str(tk.asarray([1, 2])) == "[1 2]"
    assert repr(tk.arange(3.0)[::-1]) == "Array([2., 1., 0.], dtype=float32, device=cpu)"
    assert f"{tk.asarray(2.5):.2f}" == "2.50"


def test_repr_of_bf16_values_not_bytes():
    x = tk.asarray(np.array([0.1, 100.0], dtype=ml_dtypes.bfloat16))
    r = repr(x)
    assert "0.1" in r and "100" in r and "bfloat16" in r


def test_hash_is_identity_and_eq_is_elementwise():
    x = tk.asarray([1, 2])
    assert hash(x) == hash(x)
    assert {x: 1}[x] == 1
    e = x == tk.asarray([1, 3])
    assert isinstance(e, tk.Array) and e.tolist() == [True, False]
