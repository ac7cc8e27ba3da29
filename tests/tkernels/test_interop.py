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
        i.astype("complex256")


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


# ------------------------------------------------------------------------------------------- to_device
def test_to_device_on_cpu():
    x = tk.asarray(np.arange(6.0).reshape(2, 3))
    assert x.to_device("cpu") is x and x.to_device(tk.Device("cpu")) is x
    v = x[:, ::2]
    assert v.to_device("cpu") is v
    with pytest.raises(TypeError, match="to_device: device must be a device"):
        x.to_device(None)
    with pytest.raises(ValueError, match="to_device: stream=1 given .* neither device is cuda"):
        x.to_device("cpu", stream=1)
    with pytest.raises(ValueError, match="Device: unknown device type"):
        x.to_device("tpu")


@no_cuda
def test_to_device_cuda_without_a_device_is_a_clear_error():
    with pytest.raises(RuntimeError, match="cuda"):
        tk.arange(3).to_device("cuda")


def _block_stream(a):
    return a._storage.block.stream


@needs_cuda
@pytest.mark.parametrize("dtype", [tk.float32, tk.float64, tk.int8, tk.bool, tk.bfloat16], ids=str)
def test_to_device_round_trip(dtype):
    n = np.arange(15).reshape(3, 5) % 3
    x = tk.asarray(n).astype(dtype)
    for src in (x, x[:, ::-2], x.T, x[0, 0], x[:0]):  # views, 0-d, empty
        ref = src.astype(tk.float64).numpy()
        g = src.to_device("cuda")
        assert g.device == "cuda:0" and g.dtype is dtype and g.shape == src.shape
        np.testing.assert_array_equal(g.astype(tk.float64).numpy(), ref)
        back = g.T.to_device("cpu")
        assert back.device == "cpu" and back.dtype is dtype
        np.testing.assert_array_equal(back.astype(tk.float64).numpy(), ref.T)
        assert g.to_device("cuda") is g and g.to_device("cuda:0") is g


@needs_cuda
def test_to_device_orders_the_copy_on_the_stream(monkeypatch):
    import tkernels.cuda as tkc

    rt = tkc.get_runtime()
    seen = []
    payload = 7 * 8  # the test's copies only: a sync point also reads the device error buffer's 8-byte flag
    for name in ("memcpy_htod", "memcpy_dtoh"):
        real = getattr(rt, name)
        monkeypatch.setattr(rt, name, lambda *a, real=real, name=name: (
            a[3] == payload and seen.append((name, a[4])), real(*a))[1])
    x = tk.asarray(np.arange(7.0))
    made = [tkc.Stream()]
    while made[-1].handle <= 2:  # interpreted handles count from 1: skip the ints that mean default streams
        made.append(tkc.Stream())
    s = made[-1]
    g = x.to_device("cuda", stream=s)
    assert seen == [("memcpy_htod", s.handle)] and _block_stream(g) == s.handle
    assert tkc.current_stream() == tkc.default_stream()  # the stream was current for the copy only
    seen.clear()
    np.testing.assert_array_equal(g.to_device("cpu", stream=s).numpy(), np.arange(7.0))
    assert seen == [("memcpy_dtoh", s.handle)]
    # ints as in __dlpack__: 1 is the legacy default stream (handle 0), others are raw handles
    seen.clear()
    assert _block_stream(x.to_device("cuda", stream=1)) == 0
    assert _block_stream(x.to_device("cuda", stream=s.handle)) == s.handle
    assert [h for _, h in seen] == [0, s.handle]
    np.testing.assert_array_equal(x.to_device("cuda", stream=2).numpy(), np.arange(7.0))


@needs_cuda
def test_to_device_stream_errors():
    import tkernels.cuda as tkc

    x = tk.asarray([1.0, 2.0])
    for bad in (1.5, "1", True, object()):
        with pytest.raises(TypeError, match="to_device: stream must be None, a tkernels.cuda.Stream or an int"):
            x.to_device("cuda", stream=bad)
    with pytest.raises(ValueError, match="to_device: invalid stream 0 .*ambiguous"):
        x.to_device("cuda", stream=0)
    with pytest.raises(ValueError, match="to_device: invalid stream -1"):
        x.to_device("cuda", stream=-1)
    other = tkc.Stream.__new__(tkc.Stream)  # a stream of a second device (one device here)
    other.handle, other.device_index, other._owned = 12345, 1, False
    with pytest.raises(ValueError, match="to_device: stream .* is on cuda:1, but the copy .* runs on cuda:0"):
        x.to_device("cuda:0", stream=other)
    g = x.to_device("cuda")
    with pytest.raises(ValueError, match="is on cuda:1"):
        g.to_device("cpu", stream=other)
