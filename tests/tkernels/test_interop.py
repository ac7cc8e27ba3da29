"""Conversions and interop: NumPy's __array__ (NumPy 2 signature), .numpy(), __array_namespace__, DLPack both
ways, .to(), astype, copy, and moving to cuda."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk


def _cuda_available():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except Exception:  # noqa: BLE001 - no runtime layer: no cuda
        return False


needs_cuda = pytest.mark.skipif(not _cuda_available(), reason="no cuda device, not even interpreted")
no_cuda = pytest.mark.skipif(_cuda_available(), reason="a cuda device (maybe interpreted) exists here")


# ------------------------------------------------------------------------------------------ __array__
def test_np_asarray_is_zero_copy_on_cpu():
    x = tk.arange(6.0).reshape(2, 3)
    n = np.asarray(x)
    assert isinstance(n, np.ndarray) and n.dtype == np.float32 and n.shape == (2, 3)
    n[0, 0] = 50.0
    assert x[0, 0].item() == 50.0
    t = np.asarray(x.T)  # non-contiguous views too
    assert t.shape == (3, 2) and np.shares_memory(t, n)
    np.testing.assert_array_equal(t, n.T)


def test_array_copy_semantics_numpy2():
    x = tk.arange(4.0)
    c = np.array(x, copy=True)
    c[0] = 9.0
    assert x[0].item() == 0.0
    v = np.array(x, copy=False)
    v[1] = 7.0
    assert x[1].item() == 7.0
    d = np.asarray(x, dtype=np.float64)
    assert d.dtype == np.float64
    d[2] = -1
    assert x[2].item() == 2.0
    with pytest.raises(ValueError, match="copy"):
        np.array(x, dtype=np.float64, copy=False)
    assert np.asarray(x, dtype=np.float32) is not None
    assert np.shares_memory(np.asarray(x, dtype=np.float32), x.numpy())


def test_array_bfloat16_and_numpy_functions():
    b = tk.asarray([1.5, 2.0], dtype=tk.bfloat16)
    n = np.asarray(b)
    assert n.dtype == np.dtype(ml_dtypes.bfloat16)
    n[0] = 3.0
    assert b[0].item() == 3.0
    x = tk.arange(5.0)
    assert np.sum(x) == 10.0  # NumPy functions read Arrays through __array__
    np.testing.assert_array_equal(np.add(np.ones(5), x), np.arange(1.0, 6.0))


def test_numpy_method_shares_memory():
    x = tk.arange(6).reshape(2, 3)
    n = x.numpy()
    n[1, 1] = -1
    assert x[1, 1].item() == -1
    v = x[:, ::2].numpy()
    assert v.shape == (2, 2)
    v[0, 1] = -2
    assert x[0, 2].item() == -2


def test_array_namespace():
    x = tk.zeros(2)
    assert x.__array_namespace__() is tk
    assert x.__array_namespace__(api_version="2024.12") is tk
    assert x.__array_namespace__(api_version="2023.12") is tk
    with pytest.raises(ValueError, match="__array_namespace__"):
        x.__array_namespace__(api_version="1999.01")
    assert tk.__array_api_version__ == "2024.12"


# --------------------------------------------------------------------------------------------- DLPack
def test_numpy_from_dlpack_of_array_is_zero_copy():
    x = tk.arange(6.0).reshape(2, 3)
    d = np.from_dlpack(x)
    assert d.shape == (2, 3) and d.dtype == np.float32
    d[1, 1] = -1.0
    assert x[1, 1].item() == -1.0
    t = np.from_dlpack(x.T)
    assert t.shape == (3, 2)
    t[0, 1] = -2.0
    assert x[1, 0].item() == -2.0
    r = np.from_dlpack(tk.arange(5)[::-2])
    np.testing.assert_array_equal(r, [4, 2, 0])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_dlpack_round_trip_every_dtype(dtype):
    n = (np.arange(6) % 2).astype(dtype) if dtype == "bool" else np.arange(6).astype(dtype)
    x = tk.from_dlpack(n)
    assert x.dtype == dtype
    np.testing.assert_array_equal(x.numpy(), n)
    back = np.from_dlpack(x)
    assert back.dtype == n.dtype
    np.testing.assert_array_equal(back, n)
    assert np.shares_memory(back, n)


def test_tk_from_dlpack_of_numpy_is_zero_copy():
    n = np.arange(5.0, dtype=np.float32)
    y = tk.from_dlpack(n)
    assert y.dtype is tk.float32
    y[0] = 7.0
    assert n[0] == 7.0
    n[1] = 8.0
    assert y[1].item() == 8.0
    s = tk.from_dlpack(n[::-2])
    s[0] = 33.0
    assert n[4] == 33.0
    x = tk.arange(3)
    r = tk.from_dlpack(x)
    r[0] = 100
    assert x[0].item() == 100


def test_from_dlpack_copy_true_copies():
    n = np.arange(3.0)
    y = tk.from_dlpack(n, copy=True)
    y[0] = 5.0
    assert n[0] == 0.0


def test_bfloat16_dlpack_is_refused_clearly():
    b = tk.asarray([1.0], dtype=tk.bfloat16)
    with pytest.raises(BufferError, match="bfloat16.*astype"):
        b.__dlpack__()
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(b)


def test_dlpack_device():
    assert tk.zeros(1).__dlpack_device__() == (1, 0)


# -------------------------------------------------------------------------------------- to / astype / copy
def test_to_same_device_returns_itself():
    x = tk.arange(3)
    assert x.to("cpu") is x
    assert x.to(tk.Device("cpu")) is x
    assert x.cpu() is x
    assert x.to() is x
    assert x.to(dtype=tk.int64) is x
    c = x.to("cpu", copy=True)
    assert c is not x and c.tolist() == [0, 1, 2]
    c[0] = 5
    assert x[0].item() == 0


def test_to_dtype():
    x = tk.asarray([1.7, -2.5])
    h = x.to(dtype=tk.float16)
    assert h.dtype is tk.float16 and h.tolist() == [1.7001953125, -2.5]
    i = x.to("cpu", tk.int32)
    assert i.dtype is tk.int32 and i.tolist() == [1, -2]


def test_astype_semantics():
    x = tk.asarray([-2.7, 2.7, -0.5, 0.5])
    assert x.astype(tk.int32).tolist() == [-2, 2, 0, 0]  # truncation toward zero
    assert tk.astype(x, tk.int64).tolist() == [-2, 2, 0, 0]
    b = tk.asarray([-2.0, 0.0, 0.1, float("nan")]).astype(tk.bool)
    assert b.tolist() == [True, False, True, True]  # nonzero (NaN included) is True
    assert tk.asarray([True, False]).astype(tk.float32).tolist() == [1.0, 0.0]
    assert tk.asarray([300, -1]).astype(tk.uint8).tolist() == [44, 255]  # wraps like a C cast
    assert tk.asarray([1.0009765625]).astype(tk.bfloat16).item() == 1.0  # round to nearest even
    assert tk.asarray([1.01171875]).astype(tk.bfloat16).item() == 1.015625
    i = tk.arange(3)
    assert i.astype(tk.int64, copy=False) is i
    c = i.astype(tk.int64)
    assert c is not i
    c[0] = 9
    assert i[0].item() == 0
    assert i.T.astype(tk.float32).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="astype"):
        tk.astype([1, 2], tk.float32)
    with pytest.raises(TypeError, match="dtype"):
        i.astype("complex64")


def test_astype_of_a_non_contiguous_view():
    x = tk.arange(12.0).reshape(3, 4)
    r = x[:, ::-2].astype(tk.int16)
    assert r.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), np.arange(12).reshape(3, 4)[:, ::-2])


def test_copy_is_independent_and_contiguous():
    x = tk.arange(6.0).reshape(2, 3)
    for c in (x.copy(), tk.copy(x), x.T.copy()):
        assert c.is_contiguous()
        assert not np.shares_memory(c.numpy(), x.numpy())
    c = x.T.copy()
    np.testing.assert_array_equal(c.numpy(), x.numpy().T)
    c[0, 0] = 99.0
    assert x[0, 0].item() == 0.0
    with pytest.raises(TypeError, match="copy"):
        tk.copy(np.zeros(2))


# -------------------------------------------------------------------------------------------------- cuda
@no_cuda
def test_to_cuda_without_a_device_is_a_clear_error():
    x = tk.arange(3)
    with pytest.raises((RuntimeError, NotImplementedError), match="cuda"):
        x.to("cuda")
    with pytest.raises((RuntimeError, NotImplementedError), match="cuda"):
        x.cuda()
    with pytest.raises((RuntimeError, NotImplementedError), match="cuda"):
        tk.asarray([1.0], device="cuda")


@needs_cuda
def test_cuda_round_trip_keeps_values_and_dtype():
    for n in (np.arange(6.0, dtype=np.float32).reshape(2, 3), np.arange(5, dtype=np.int8),
              np.array([True, False])):
        x = tk.asarray(n)
        g = x.to("cuda")
        assert g.device.type == "cuda" and g.dtype == x.dtype and g.shape == x.shape
        back = g.to("cpu")
        assert back.device == "cpu"
        np.testing.assert_array_equal(back.numpy(), n)
        np.testing.assert_array_equal(np.asarray(g), n)  # __array__ copies to the host
    g = tk.arange(12.0).reshape(3, 4).to("cuda")
    np.testing.assert_array_equal(g.T.to("cpu").numpy(), np.arange(12.0).reshape(3, 4).T)
    np.testing.assert_array_equal(g[:, ::-2].numpy(), np.arange(12.0).reshape(3, 4)[:, ::-2])
    assert g.to("cuda") is g


@needs_cuda
def test_cuda_array_refuses_zero_copy_numpy():
    g = tk.arange(3.0).to("cuda")
    with pytest.raises(ValueError, match="copy"):
        np.array(g, copy=False)
