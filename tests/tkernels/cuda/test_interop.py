"""GPU interop of cuda arrays (interpreted here): DLPack both ways, the CUDA Array Interface, streams, lifetimes."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels import dlpack as dl

# the real dtypes: complex ones have no cuda kernels yet (tests/tkernels/test_complex.py checks they say so)
REAL_DTYPES = tuple(d for d in tk.dtypes.all_dtypes if d.kind != "c")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ALL = [d.name for d in REAL_DTYPES]
CAI_DTYPES = [d for d in ALL if d != "bfloat16"]
interpreted_only = pytest.mark.skipif(not tkc.is_interpreted(), reason="reads device memory from the host")


def _host(dtype, shape, seed=0):
    d = tk.dtypes.as_dtype(dtype)
    v = np.random.default_rng(seed).standard_normal(shape) * 20
    return (v > 0) if d.kind == "b" else np.abs(v).astype(d.numpy) if d.kind == "u" else v.astype(d.numpy)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _allocated():
    gc.collect()
    return tkc.memory_allocated()


@pytest.fixture(params=["native", "ctypes"])
def capsule_mode(request, monkeypatch):
    """Capsules destroyed by NumPy's C functions (the default here), or by the ctypes-callback fallback."""
    if request.param == "ctypes":
        monkeypatch.setattr(dl, "use_native", False)
    return request.param


class Producer:
    """A DLPack producer that records what the consumer asked for and returns a given capsule (or x's)."""

    def __init__(self, x=None, capsule=None, device=(2, 0), legacy=False):
        self.x, self.capsule, self.device, self.legacy, self.calls = x, capsule, device, legacy, []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kw):
        if self.legacy and kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        self.calls.append(dict(stream=stream, **kw))
        if self.capsule is not None:
            c, self.capsule = self.capsule, None
            return c
        return self.x.__dlpack__(stream=stream, **kw)


class Owner:
    """Something a hand-made capsule keeps alive (weakref-able)."""


class Foreign:
    """An object exposing only ``__cuda_array_interface__``."""

    def __init__(self, cai, keep=None, on_del=None):
        self._cai, self.keep, self.on_del = cai, keep, on_del

    @property
    def __cuda_array_interface__(self):
        return self._cai

    def __del__(self):
        if self.on_del is not None:
            self.on_del()


def _spy(monkeypatch):
    """Record event records and stream waits of the runtime (interpreted streams do nothing otherwise)."""
    rt = tkc.runtime.get_runtime()
    calls = []
    monkeypatch.setattr(rt, "event_record", lambda i, e, s: calls.append(("record", s, id(e))))
    monkeypatch.setattr(rt, "stream_wait_event", lambda i, s, e: calls.append(("wait", s, id(e))))
    return calls


def _handshake(calls):
    """[(signaler, waiter)] from the recorded calls, checking each wait uses the event just recorded."""
    out = []
    assert len(calls) % 2 == 0, calls
    for (k1, s1, e1), (k2, s2, e2) in zip(calls[::2], calls[1::2]):
        assert (k1, k2) == ("record", "wait") and e1 == e2, calls
        out.append((s1, s2))
    return out


# ----------------------------------------------------------------------------------- DLPack: round trips
def test_native_capsule_functions_are_used():
    assert dl.native_functions_in_use()  # NumPy >= 2.1 here: C destructors, safe during exception unwinding


@pytest.mark.parametrize("dtype", ALL)
def test_round_trip_every_dtype_is_zero_copy(dtype, capsule_mode):
    host = _host(dtype, (7, 5))
    x = tk.asarray(host, device="cuda")
    for mv in (None, (1, 0)):
        y = tk.from_dlpack(Producer(x)) if mv is None else tk.from_dlpack(x)
        assert y.dtype == x.dtype and y.device == tk.Device("cuda:0") and y.shape == (7, 5)
        assert y.data_ptr() == x.data_ptr() and y.strides == x.strides
        np.testing.assert_array_equal(_bits(y.numpy()), _bits(host))
    y[2] = x[0]  # writes through the import land in the producer's memory, and back
    want = host.copy()
    want[2] = host[0]
    np.testing.assert_array_equal(_bits(x.numpy()), _bits(want))
    x[4] = x[1]
    want[4] = want[1]
    np.testing.assert_array_equal(_bits(y.numpy()), _bits(want))


def test_round_trip_of_views(capsule_mode):
    host = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)
    x = tk.asarray(host, device="cuda")
    views = {
        "transposed": (x.permute_dims((2, 0, 1)), host.transpose(2, 0, 1)),
        "step": (x[:, ::2, 1:], host[:, ::2, 1:]),
        "offset": (x[1:, 2:, 3], host[1:, 2:, 3]),
        "negative": (x[::-1, :, ::-2], host[::-1, :, ::-2]),
        "broadcast": (x[:, :1].broadcast_to((4, 6, 5)), np.broadcast_to(host[:, :1], (4, 6, 5))),
        "expand_dims": (x[2].expand_dims(1), host[2][:, None]),
    }
    for name, (v, ref) in views.items():
        for mv in (None, (1, 0)):
            y = tk.from_dlpack(Producer(v)) if mv is None else tk.from_dlpack(v)
            assert (y.shape, y.strides, y.data_ptr()) == (v.shape, v.strides, v.data_ptr()), name
            np.testing.assert_array_equal(y.numpy(), ref, err_msg=name)
            np.testing.assert_array_equal(y.contiguous().numpy(), ref, err_msg=name)
    neg = tk.from_dlpack(x[::-1, :, ::-2])
    neg[0, 0, 0] = -1.0  # the last element of x
    assert x[3, 0, 4].item() == -1.0


def test_round_trip_0d_and_empty(capsule_mode):
    s = tk.asarray(np.float64(3.25), device="cuda")
    y = tk.from_dlpack(s)
    assert y.shape == () and y.item() == 3.25 and y.data_ptr() == s.data_ptr()
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        e = tk.empty(shape, dtype=tk.int32, device="cuda")
        for v in (e, e.mT if e.ndim >= 2 else e):
            y = tk.from_dlpack(v)
            assert y.shape == v.shape and y.dtype == tk.int32 and y.numpy().shape == v.shape


def test_legacy_and_versioned_capsules():
    x = tk.ones((3,), device="cuda")
    assert dl.capsule_name(x.__dlpack__()) == "dltensor"
    assert dl.capsule_name(x.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert dl.capsule_name(x.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert dl.capsule_name(x.__dlpack__(max_version=(2, 3))) == "dltensor_versioned"
    for mv, name in ((None, "dltensor"), ((1, 0), "dltensor_versioned")):
        c = x.__dlpack__(max_version=mv)
        t = dl.from_capsule(c)
        assert dl.capsule_name(c) == "used_" + name
        assert t.versioned == (mv is not None) and not t.copied and not t.read_only
        assert t.device == (dl.kDLCUDA, 0) and t.data == x.data_ptr() and t.shape == (3,) and t.strides == (1,)
        with pytest.raises(BufferError, match="already consumed"):
            dl.from_capsule(c)
        del t
    with pytest.raises(TypeError, match="max_version"):
        x.__dlpack__(max_version=1)


def test_dlpack_dtype_codes():
    assert dl.dl_dtype(tk.bfloat16) == (4, 16, 1) and dl.dl_dtype(tk.bool) == (6, 8, 1)
    assert dl.dl_dtype(tk.uint8) == (1, 8, 1) and dl.dl_dtype(tk.int64) == (0, 64, 1)
    assert dl.dl_dtype(tk.float16) == (2, 16, 1) and dl.dl_dtype(tk.float64) == (2, 64, 1)
    for d in REAL_DTYPES:
        assert dl.dtype_from_dl(*dl.dl_dtype(d)) is d


# ------------------------------------------------------------------------------------- DLPack: lifetimes
@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_capsule_dropped_unconsumed_releases_the_storage_once(max_version, capsule_mode):
    base = _allocated()
    x = tk.ones((1000,), device="cuda")
    st = x._storage
    rc = sys.getrefcount(st)
    c = x.__dlpack__(max_version=max_version)
    assert sys.getrefcount(st) == rc + 1
    del c
    assert sys.getrefcount(st) == rc  # released exactly once
    wr = weakref.ref(st)
    c = x.__dlpack__(max_version=max_version)
    del x, st
    assert wr() is not None and _allocated() > base  # the capsule keeps the storage alive
    del c
    assert wr() is None and _allocated() == base


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_consumer_release_frees_the_storage(max_version, capsule_mode):
    base = _allocated()
    x = tk.asarray(np.arange(1000, dtype=np.float32), device="cuda")
    wr = weakref.ref(x._storage)
    p = Producer(x) if max_version is None else x
    y = tk.from_dlpack(p)
    del x, p
    assert wr() is not None and _allocated() > base
    z = y[::3]
    del y
    assert wr() is not None
    assert z[1].item() == 3.0
    del z
    assert wr() is None and _allocated() == base


def test_capsule_freed_while_an_exception_propagates():
    """A capsule (or an import) that is a temporary when an exception is raised dies during the unwinding."""
    code = textwrap.dedent("""
        import gc
        import tkernels as tk
        import tkernels.cuda as tkc
        from tkernels import dlpack as dl
        assert dl.native_functions_in_use()
        base = tkc.memory_allocated()
        x = tk.ones((1000,), device="cuda")
        def f(*args):
            pass
        for mv in (None, (1, 0)):
            try:
                f(x.__dlpack__(max_version=mv), undefined_name)  # noqa: F821
            except NameError as e:
                assert "undefined_name" in str(e)
            try:
                f(tk.from_dlpack(x), undefined_name)  # noqa: F821
            except NameError as e:
                assert "undefined_name" in str(e)
        del x
        gc.collect()
        assert tkc.memory_allocated() == base, (tkc.memory_allocated(), base)
        print("ok")
        """)
    env = dict(os.environ, TKERNELS_INTERPRET="1", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok" and "Exception ignored" not in r.stderr


# ------------------------------------------------------------------------------- DLPack: copy and device
def test_copy_true_exports_a_copy(capsule_mode):
    x = tk.asarray(np.arange(6, dtype=np.int16), device="cuda")
    c = x.__dlpack__(max_version=(1, 0), copy=True)
    t = dl.from_capsule(c)
    assert t.copied and t.data != x.data_ptr()
    y = tk.from_dlpack(x, copy=True)
    assert y.data_ptr() != x.data_ptr() and y.numpy().tolist() == list(range(6))
    y[0] = 100
    assert x[0].item() == 0
    z = tk.from_dlpack(x, copy=False)
    assert z.data_ptr() == x.data_ptr()
    old = tk.from_dlpack(Producer(x, legacy=True), copy=True)  # a producer without ``copy``: we copy
    assert old.data_ptr() != x.data_ptr() and old.numpy().tolist() == list(range(6))


def test_dl_device(capsule_mode):
    x = tk.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    t = dl.from_capsule(x.__dlpack__(dl_device=(2, 0), max_version=(1, 0)))
    assert t.data == x.data_ptr() and not t.copied
    del t
    for bad in [(2, 5), (4, 0), (3, 0)]:
        with pytest.raises(BufferError, match=r"__dlpack__: cannot export .* to device"):
            x.__dlpack__(dl_device=bad)
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(TypeError, match="dl_device"):
        x.__dlpack__(dl_device="cuda")
    t = dl.from_capsule(x.T.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))  # a host copy
    assert t.device == (dl.kDLCPU, 0) and t.copied and t.shape == (4, 3) and t.strides == (3, 1)
    del t
    n = np.from_dlpack(x.T, device="cpu")  # NumPy as the consumer of our capsule
    np.testing.assert_array_equal(n, np.arange(12, dtype=np.float32).reshape(3, 4).T)
    n[0, 0] = 50
    assert x[0, 0].item() == 0.0


@pytest.mark.parametrize("dtype", [d for d in ALL if d != "bfloat16"])
def test_numpy_consumes_host_copies(dtype, capsule_mode):
    host = _host(dtype, (5, 3))
    x = tk.asarray(host, device="cuda")
    np.testing.assert_array_equal(np.from_dlpack(x[:, ::-1], device="cpu"), host[:, ::-1])
    e = np.from_dlpack(tk.empty((0, 3), dtype=dtype, device="cuda"), device="cpu")
    assert e.shape == (0, 3) and e.dtype == host.dtype


def test_from_dlpack_device_argument():
    x = tk.asarray(np.arange(4, dtype=np.int64), device="cuda")
    c = tk.from_dlpack(x, device="cpu")
    assert c.device == tk.Device("cpu") and c.numpy().tolist() == [0, 1, 2, 3]
    assert tk.from_dlpack(x, device="cuda").data_ptr() == x.data_ptr()
    with pytest.raises(ValueError, match="from_dlpack: moving .* needs a copy"):
        tk.from_dlpack(x, device="cpu", copy=False)


# --------------------------------------------------------------------------------------- DLPack: streams
def test_export_makes_the_consumer_stream_wait(monkeypatch):
    x = tk.ones((4,), device="cuda")
    calls = _spy(monkeypatch)
    for s in (None, 1, -1):  # the consumer is on our current (legacy default) stream, or asked for no sync
        x.__dlpack__(stream=s)
    assert calls == []
    x.__dlpack__(stream=777)
    assert _handshake(calls) == [(0, 777)]
    calls.clear()
    with tkc.stream(tkc.Stream(_handle=4242)):
        x.__dlpack__(stream=4242)
        x.__dlpack__(stream=-1)
        assert calls == []
        x.__dlpack__(stream=1)
        x.__dlpack__(stream=None)  # None: assume the legacy default stream
        x.__dlpack__(stream=2)  # the per-thread default stream
    assert _handshake(calls) == [(4242, 0), (4242, 0), (4242, 2)]
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        x.__dlpack__(stream=0)
    with pytest.raises(ValueError, match="invalid stream -5"):
        x.__dlpack__(stream=-5)
    with pytest.raises(TypeError, match="stream must be an int"):
        x.__dlpack__(stream="1")


def test_from_dlpack_passes_our_current_stream():
    x = tk.ones((4,), device="cuda")
    p = Producer(x)
    tk.from_dlpack(p)
    assert p.calls == [{"stream": 1, "max_version": (1, 0)}]
    with tkc.stream(tkc.Stream(_handle=4242)):
        tk.from_dlpack(p, copy=False)
    assert p.calls[-1] == {"stream": 4242, "max_version": (1, 0), "copy": False}
    old = Producer(x, legacy=True)
    y = tk.from_dlpack(old)
    assert old.calls == [{"stream": 1}] and y.data_ptr() == x.data_ptr()


# ------------------------------------------------------------------------------- DLPack: refused imports
def _capsule_into(x, dtype, versioned=True, read_only=False):
    owner = Owner()
    owner.x = x
    cap = dl.to_capsule(owner, x.data_ptr(), (2, 0), dtype, x.shape, x.strides, versioned=versioned,
                        read_only=read_only)
    return cap, weakref.ref(owner)


@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("dtype, name", [((5, 32, 1), "complex32"), ((10, 8, 1), "float8_e4m3fn"),
                                         ((2, 32, 4), "float32x4"), ((1, 128, 1), "uint128"),
                                         ((3, 64, 1), "opaque_handle"), ((2, 8, 1), "float8")])
def test_unsupported_dtypes_are_refused_and_the_capsule_freed(dtype, name, versioned, capsule_mode):
    x = tk.zeros((4,), dtype=tk.float64, device="cuda")
    cap, wr = _capsule_into(x, dtype, versioned)
    p = Producer(capsule=cap)
    del cap
    with pytest.raises(BufferError, match=rf"from_dlpack: unsupported DLPack dtype {name}\b"):
        tk.from_dlpack(p)
    gc.collect()
    assert wr() is None  # the unconsumed capsule ran the deleter when it died


def test_unsupported_major_version_is_refused():
    x = tk.zeros((4,), device="cuda")
    cap, wr = _capsule_into(x, (2, 32, 1))
    addr = dl._capsule_get_pointer(cap, b"dltensor_versioned")
    dl.DLManagedTensorVersioned.from_address(addr).version.major = 2
    with pytest.raises(BufferError, match=r"unsupported DLPack version 2\.0"):
        tk.from_dlpack(Producer(capsule=cap))
    assert dl.capsule_name(cap) == "dltensor_versioned"
    del cap
    gc.collect()
    assert wr() is None


def test_read_only_exports_are_copied(capsule_mode):
    x = tk.asarray(np.arange(5, dtype=np.float32), device="cuda")
    cap, wr = _capsule_into(x, (2, 32, 1), read_only=True)
    y = tk.from_dlpack(Producer(capsule=cap))
    del cap
    gc.collect()
    assert y.data_ptr() != x.data_ptr() and y.numpy().tolist() == [0, 1, 2, 3, 4]
    assert wr() is None  # the copy does not keep the producer's tensor
    cap, wr = _capsule_into(x, (2, 32, 1), read_only=True)
    with pytest.raises(BufferError, match="read-only.*copy=False"):
        tk.from_dlpack(Producer(capsule=cap), copy=False)


def test_non_cuda_producers_are_refused():
    x = tk.zeros((2,), device="cuda")
    with pytest.raises(BufferError, match="kDLCUDAHost"):
        tk.from_dlpack(Producer(x, device=(3, 0)))
    with pytest.raises(BufferError, match="cuda device 7"):
        tk.from_dlpack(Producer(x, device=(2, 7)))
    # a producer whose tensor is not where __dlpack_device__ said: released, refused
    owner_x = tk.zeros((2,))
    cap = dl.to_capsule(owner_x, owner_x.data_ptr(), (1, 0), (2, 32, 1), (2,), (1,), versioned=True)
    with pytest.raises(BufferError, match="not on a cuda device"):
        tk.from_dlpack(Producer(capsule=cap))


# ------------------------------------------------------------------------------ CUDA Array Interface
@pytest.mark.parametrize("dtype", CAI_DTYPES)
def test_cuda_array_interface_of_our_arrays(dtype):
    x = tk.asarray(_host(dtype, (3, 4)), device="cuda")
    isz = x.itemsize
    cai = x.__cuda_array_interface__
    assert cai == {"shape": (3, 4), "typestr": np.dtype(x.dtype.numpy).str, "data": (x.data_ptr(), False),
                   "strides": None, "version": 3, "stream": 1}
    assert cai["typestr"] == {"bool": "|b1", "uint8": "|u1", "int8": "|i1"}.get(dtype, f"<{x.dtype.kind}{isz}")
    t = x.T.__cuda_array_interface__
    assert t["shape"] == (4, 3) and t["strides"] == (isz, 4 * isz) and t["data"][0] == x.data_ptr()
    v = x[1:, ::2].__cuda_array_interface__
    assert v["strides"] == (4 * isz, 2 * isz) and v["data"] == (x.data_ptr() + 4 * isz, False)
    n = x[:, ::-1].__cuda_array_interface__
    assert n["strides"] == (4 * isz, -isz) and n["data"][0] == x.data_ptr() + 3 * isz


def test_cuda_array_interface_0d_empty_and_stream():
    s = tk.asarray(np.int32(7), device="cuda").__cuda_array_interface__
    assert s["shape"] == () and s["strides"] is None
    e = tk.empty((0, 5), device="cuda").__cuda_array_interface__
    assert e["shape"] == (0, 5) and e["data"] == (0, False) and e["strides"] is None
    with tkc.stream(tkc.Stream(_handle=4242)):
        assert tk.ones((2,), device="cuda").__cuda_array_interface__["stream"] == 4242


def test_cuda_array_interface_refuses_bfloat16():
    b = tk.ones((2,), dtype=tk.bfloat16, device="cuda")
    with pytest.raises(TypeError, match="__cuda_array_interface__: dtype bfloat16 is not supported"):
        b.__cuda_array_interface__  # noqa: B018


def test_cpu_arrays_have_no_cuda_array_interface():
    x = tk.ones((2,))
    assert not hasattr(x, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="only cuda arrays"):
        x.__cuda_array_interface__  # noqa: B018
    assert hasattr(x.to("cuda"), "__cuda_array_interface__")


def test_asarray_of_a_foreign_object_is_zero_copy_and_keeps_it_alive():
    x = tk.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    f = Foreign(x.T.__cuda_array_interface__, keep=x)
    y = tk.asarray(f)
    assert y.device == tk.Device("cuda:0") and y.dtype == tk.float32 and y.shape == (4, 3)
    assert y.data_ptr() == x.data_ptr() and y.strides == (1, 4)
    np.testing.assert_array_equal(y.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T)
    y[0, 2] = -1.0
    assert x[2, 0].item() == -1.0
    wr = weakref.ref(f)
    del f, x
    gc.collect()
    assert wr() is not None  # the Array keeps the foreign object (and so its memory) alive
    v = y[1:]
    del y
    gc.collect()
    assert wr() is not None and v[0, 0].item() == 1.0
    del v
    gc.collect()
    assert wr() is None


@interpreted_only
def test_asarray_of_a_separately_allocated_block():
    base = _allocated()
    alloc = tkc.caching_allocator()
    block = alloc.malloc(10 * 8)
    src = np.arange(10, dtype=np.int64) * 3
    ctypes.memmove(block.ptr, src.ctypes.data, src.nbytes)
    cai = {"shape": (5,), "typestr": "<i8", "data": (block.ptr + 8, False), "strides": (16,), "version": 3}
    f = Foreign(cai, on_del=lambda b=block: alloc.free(b))
    del block
    y = tk.asarray(f)
    assert y.numpy().tolist() == [3, 9, 15, 21, 27]
    y[...] = 0
    out = np.empty(10, np.int64)
    ctypes.memmove(out.ctypes.data, y.data_ptr() - 8, out.nbytes)
    assert out.tolist() == [0, 0, 6, 0, 12, 0, 18, 0, 24, 0]
    wr = weakref.ref(f)
    del f
    assert wr() is not None and _allocated() > base
    del y
    assert wr() is None and _allocated() == base


def test_asarray_round_trip_through_our_own_interface():
    x = tk.asarray(np.arange(20, dtype=np.uint8).reshape(4, 5), device="cuda")
    for v in (x, x[::2, ::-1], x.T, x[2], x[1:1]):
        y = tk.asarray(Foreign(v.__cuda_array_interface__, keep=v))
        assert y.shape == v.shape and y.data_ptr() == (v.data_ptr() if v.size else 0)
        assert y.numpy().tolist() == v.numpy().tolist()
        if v.size:
            assert y.strides == v.strides


def test_asarray_of_a_foreign_object_with_dtype_device_copy():
    x = tk.asarray(np.arange(6, dtype=np.int32), device="cuda")
    f = Foreign(x.__cuda_array_interface__, keep=x)
    d = tk.asarray(f, dtype=tk.float64)
    assert d.dtype == tk.float64 and d.data_ptr() != x.data_ptr() and d.numpy().tolist() == list(range(6))
    c = tk.asarray(f, device="cpu")
    assert c.device == tk.Device("cpu") and c.numpy().tolist() == list(range(6))
    assert tk.asarray(f, copy=True).data_ptr() != x.data_ptr()
    assert tk.asarray(f, copy=False).data_ptr() == x.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        tk.asarray(f, device="cpu", copy=False)


def test_asarray_of_a_foreign_object_waits_for_its_stream(monkeypatch):
    x = tk.ones((3,), device="cuda")
    cai = dict(x.__cuda_array_interface__)
    calls = _spy(monkeypatch)
    for s in (None, 1):  # no sync needed / already our current stream
        tk.asarray(Foreign(dict(cai, stream=s), keep=x))
    tk.asarray(Foreign({k: v for k, v in cai.items() if k != "stream"}, keep=x))  # version 2: no stream key
    assert calls == []
    tk.asarray(Foreign(dict(cai, stream=555), keep=x))
    assert _handshake(calls) == [(555, 0)]
    calls.clear()
    with tkc.stream(tkc.Stream(_handle=4242)):
        tk.asarray(Foreign(dict(cai, stream=1), keep=x))
        tk.asarray(Foreign(dict(cai, stream=2), keep=x))
        tk.asarray(Foreign(dict(cai, stream=4242), keep=x))
    assert _handshake(calls) == [(0, 4242), (2, 4242)]
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        tk.asarray(Foreign(dict(cai, stream=0), keep=x))


def test_asarray_of_a_malformed_foreign_object():
    x = tk.ones((4,), device="cuda")
    cai = x.__cuda_array_interface__
    for typestr in ("<V2", ">f4", "<c32", "<m8", "xyz"):
        with pytest.raises(TypeError, match=rf"asarray: unsupported __cuda_array_interface__ typestr '{typestr}'"):
            tk.asarray(Foreign(dict(cai, typestr=typestr), keep=x))
    with pytest.raises(ValueError, match=r"strides \(6,\) .* multiples of the item size"):
        tk.asarray(Foreign(dict(cai, shape=(2,), strides=(6,)), keep=x))
    with pytest.raises(TypeError, match="mask"):
        tk.asarray(Foreign(dict(cai, mask=object()), keep=x))
    with pytest.raises(TypeError, match="malformed __cuda_array_interface__"):
        tk.asarray(Foreign({"shape": (4,), "typestr": "<f4"}, keep=x))


# ------------------------------------------------------------------------ other libraries (real GPU only)
@pytest.mark.gpu
def test_torch_interop():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    y = tk.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr() and y.shape == (3, 4)
    back = torch.from_dlpack(y.T)
    assert back.data_ptr() == t.data_ptr() and back.stride() == (1, 4)
    b = tk.ones((5,), dtype=tk.bfloat16, device="cuda")
    assert torch.from_dlpack(b).dtype == torch.bfloat16
    a = torch.as_tensor(tk.asarray(np.arange(5, dtype=np.int32), device="cuda"), device="cuda")  # through the CAI
    assert a.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.gpu
def test_cupy_interop():
    cp = pytest.importorskip("cupy")
    c = cp.arange(6, dtype=cp.float64)
    y = tk.asarray(c)
    assert y.data_ptr() == c.data.ptr
    z = cp.asarray(tk.asarray(np.arange(4), device="cuda"))  # through the CAI
    assert z.tolist() == [0, 1, 2, 3]
    assert cp.from_dlpack(y).data.ptr == c.data.ptr
