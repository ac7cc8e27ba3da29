"""The device layer in interpreted mode (set by tests/conftest.py), and discovery without a driver."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc

# the real dtypes: complex ones have no cuda kernels yet (tests/tkernels/test_complex.py checks they say so)
REAL_DTYPES = tuple(d for d in tk.dtypes.all_dtypes if d.kind != "c")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_interpreted_mode_is_on():
    assert tkc.is_interpreted()
    assert tkc.is_available()
    assert tkc.device_count() == 1
    props = tkc.get_device_properties(0)
    assert props.total_memory > 0 and props.major == 9
    assert tkc.get_device_capability() == (9, 0)
    assert "interpreter" in tkc.get_device_name()


def test_device_selection_and_errors():
    tkc.set_device(0)
    assert tkc.current_device() == 0
    with tkc.device(0):
        assert tkc.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device index 3"):
        tkc.set_device(3)
    assert tk.Device("cuda") == tk.Device("cuda:0") or tk.device.as_device("cuda") == tk.Device("cuda:0")


def test_streams_and_events():
    default = tkc.default_stream()
    assert default.handle == 0 and tkc.current_stream() == default
    s = tkc.Stream()
    assert s.handle != 0 and s.query()
    with tkc.stream(s):
        assert tkc.current_stream() == s
        x = tk.ones((5,), device="cuda")
    assert tkc.current_stream() == default
    s.wait_stream(default)
    e = tkc.Event(enable_timing=True)
    e.record(s)
    assert e.query()
    e.synchronize()
    s.wait_event(e)
    e2 = s.record_event(tkc.Event(enable_timing=True))
    assert e.elapsed_time(e2) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        tkc.Event().elapsed_time(e2)
    s.synchronize()
    tkc.synchronize()
    assert x.numpy().tolist() == [1.0] * 5


@pytest.mark.parametrize("dtype", [d.name for d in REAL_DTYPES])
def test_roundtrip_every_dtype(dtype):
    rng = np.random.default_rng(0)
    src = (rng.standard_normal((7, 129)) * 50).astype(tk.dtypes.as_dtype(dtype).numpy)
    x = tk.asarray(src, device="cuda")
    assert x.device == tk.Device("cuda:0") and x.dtype == dtype
    back = x.to("cpu").numpy()
    np.testing.assert_array_equal(back.view(np.uint8), src.view(np.uint8))
    np.testing.assert_array_equal(np.asarray(x).view(np.uint8), src.view(np.uint8))


def _values(dtype):
    # in range for every target type: float -> int casts of out-of-range values are undefined behaviour
    v = np.array([-3.75, -1.0, 0.0, 0.5, 1.0, 2.25, 7.0, 100.0, 126.5])
    if dtype == "uint8":
        v = np.abs(v)
    return v


@pytest.mark.parametrize("src_dtype", [d.name for d in REAL_DTYPES])
def test_cast_every_pair(src_dtype):
    sd = tk.dtypes.as_dtype(src_dtype)
    host = _values(src_dtype if src_dtype == "uint8" else "x")
    if sd.kind in "iu":
        host = np.trunc(host)
    if sd.kind != "b":
        host = np.abs(host)  # every target (uint8 included) can hold these
    src = host.astype(sd.numpy) if sd.kind != "b" else host > 1
    x = tk.asarray(src, device="cuda")
    for dd in REAL_DTYPES:
        got = x.astype(dd).numpy()
        if dd.kind == "b":
            want = src.astype(np.float64) != 0
        else:
            want = src.astype(np.float32 if sd is tk.bfloat16 else src.dtype).astype(dd.numpy)
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                      err_msg=f"{src_dtype} -> {dd}")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int64", "int8", "uint8", "bool"])
def test_fill_exact(dtype):
    d = tk.dtypes.as_dtype(dtype)
    value = {"f": 0.1, "i": -(2**40) if d is tk.int64 else -7, "u": 200, "b": True}[d.kind]
    x = tk.full((3, 5), value, dtype=d, device="cuda")
    want = np.full((3, 5), np.array(value).astype(d.numpy), dtype=d.numpy)
    np.testing.assert_array_equal(x.numpy().view(np.uint8), want.view(np.uint8))
    v = tk.zeros((4, 6), dtype=d, device="cuda")[1:, ::2]
    v[...] = value  # strided fill
    assert v.numpy().astype(np.float64).tolist() == np.full((3, 3), want.flat[0]).astype(np.float64).tolist()


def test_strided_copies_match_numpy():
    base = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    x = tk.asarray(base, device="cuda")
    views = {
        "step": (x[:, ::2], base[:, ::2]),
        "permute": (x.permute_dims((3, 1, 0, 2)), base.transpose(3, 1, 0, 2)),
        "negative": (x[..., ::-1], base[..., ::-1]),
        "mixed": (x[1:, :, ::3].mT, base[1:, :, ::3].swapaxes(-1, -2)),
        "broadcast": (x[:, :1].broadcast_to((2, 3, 4, 5)), np.broadcast_to(base[:, :1], (2, 3, 4, 5))),
    }
    for name, (v, ref) in views.items():
        np.testing.assert_array_equal(v.contiguous().numpy(), ref, err_msg=name)
        np.testing.assert_array_equal(v.numpy(), ref, err_msg=name)
    # writes through a strided view land in the base
    x[:, 1, ::2] = tk.asarray(np.full((2, 2, 5), -1.0, dtype=np.float32))  # from a cpu array
    expect = base.copy()
    expect[:, 1, ::2] = -1
    np.testing.assert_array_equal(x.numpy(), expect)


def test_add_on_cuda_matches_numpy_with_broadcast_and_scalars():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 1, 7)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    xa, xb = tk.asarray(a, device="cuda"), tk.asarray(b, device="cuda")
    np.testing.assert_allclose((xa + xb).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((2.5 - xa).numpy(), 2.5 - a, rtol=1e-6)
    np.testing.assert_allclose((xa * 3).numpy(), a * 3, rtol=1e-6)
    d = tk.asarray(np.ones(4), device="cuda")  # float64: the scalar must not pass through fp32
    assert (d * 0.1).numpy()[0] == 0.1
    xa += 1.0
    np.testing.assert_allclose(xa.numpy(), a + 1, rtol=1e-6)


def test_device_mismatch_is_a_clear_error():
    c = tk.ones((3,), device="cuda")
    with pytest.raises(RuntimeError, match=r"add: expected all arrays on the same device.*cuda:0.*cpu|cpu.*cuda:0"):
        c + tk.ones((3,))
    # a 0-d cpu array acts like a scalar (PyTorch)
    assert (c + tk.asarray(2.0)).numpy().tolist() == [3.0, 3.0, 3.0]


def test_memory_returns_to_the_pool_and_loops_make_no_raw_allocations():
    tkc.synchronize()
    base = tkc.memory_allocated()
    x = tk.ones((1000,), device="cuda")
    v = x[::2]
    del x
    assert tkc.memory_allocated() > base  # the view keeps the block alive
    del v
    assert tkc.memory_allocated() == base
    w = tk.ones((256, 33), device="cuda")
    for _ in range(3):  # warm-up
        w = (w + 1.0) * 0.5
    segs = tkc.memory_stats()["num_segment_allocs"]
    hits = tkc.memory_stats()["num_cache_hits"]
    for _ in range(20):
        w = (w + 1.0) * 0.5
    stats = tkc.memory_stats()
    assert stats["num_segment_allocs"] == segs
    assert stats["num_cache_hits"] >= hits + 40
    assert "Allocated memory" in tkc.memory_summary() or "allocated" in tkc.memory_summary().lower()


def test_without_a_driver_nothing_crashes():
    code = textwrap.dedent("""
        import sys
        import tkernels as tk
        assert not tk.cuda.is_available(), "no GPU here"
        assert tk.cuda.device_count() == 0
        assert not tk.cuda.is_interpreted()
        try:
            tk.zeros((3,), device="cuda")
        except RuntimeError as e:
            assert "TKERNELS_INTERPRET=1" in str(e), e
            print("ok", "torch" in sys.modules)
        """)
    env = dict(os.environ, TKERNELS_INTERPRET="0", PYTHONPATH=ROOT)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok False"


def test_torch_is_never_imported():
    x = tk.ones((4, 4), device="cuda")
    (x + x).numpy()
    assert "torch" not in sys.modules


def test_pinned_memory_and_non_blocking_copies():
    x = tk.arange(1000, dtype=tk.float32)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device == tk.Device("cpu")
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    s = tkc.Stream()
    with tkc.stream(s):
        y = p.to("cuda", non_blocking=True)
        z = (y + 1.0).to("cpu")
    s.synchronize()
    np.testing.assert_array_equal(z.numpy(), x.numpy() + 1)
    with pytest.raises(RuntimeError, match="only cpu arrays"):
        y.pin_memory()


def test_record_stream_delays_reuse_of_the_block():
    s = tkc.Stream()
    x = tk.ones((4096,), device="cuda")
    tkc.record_stream(x, s)
    ptr = x.data_ptr()
    del x
    y = tk.empty((4096,), device="cuda")  # interpreted streams are always complete: reuse is allowed at once
    assert y.data_ptr() == ptr
    with pytest.raises(TypeError, match="cuda array"):
        tkc.record_stream(tk.ones((2,)), s)


def test_state_is_per_thread():
    import threading

    s = tkc.Stream()
    seen = {}

    def worker():
        seen["stream"] = tkc.current_stream()
        x = tk.full((3,), 2.0, device="cuda")
        seen["values"] = (x + x).numpy().tolist()

    with tkc.stream(s):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert tkc.current_stream() == s
    assert seen["stream"] == tkc.default_stream()  # another thread does not see this thread's stream
    assert seen["values"] == [4.0, 4.0, 4.0]


def test_fill_value_conversions():
    assert tk.full((2,), 0.5, dtype=tk.bool, device="cuda").numpy().tolist() == [True, True]
    assert tk.full((2,), np.float32(2.5), dtype=tk.float32, device="cuda").numpy().tolist() == [2.5, 2.5]
    assert tk.full((2,), True, dtype=tk.float32, device="cuda").numpy().tolist() == [1.0, 1.0]
