"""Tests for a real GPU (``@pytest.mark.gpu``: skipped without one, run by ``python -m bench.gpu_check``).

Each body is a function taking its sizes (and, where timing matters, a way to keep a stream busy), so the
same logic also runs here in CI on interpreted cuda at small sizes (the ``*_interpreted`` tests), where
streams complete at once and memory is host memory. What only a GPU can show: asynchronous streams (a
``record_stream``ed block not reused while its stream is still busy; launches landing on the current
stream), the driver's own out-of-memory error, pinned-memory DMA, and Triton 3.6 staying torch-free with
torch installed.

Covered: allocator stress (10^4 random allocations and frees across 2 streams, every block filled with a
sentinel byte and verified by a copy to the host, live blocks never overlapping), ``record_stream``
delaying reuse, OOM → retry → correct results under ``set_memory_limit``, a host↔device round trip of every
dtype (exact bytes), launches on a non-default stream, non_blocking copies from pinned memory, and no
``import torch``.
"""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# Triton after tkernels: in interpreted mode tkernels.cuda sets TRITON_INTERPRET, which Triton reads at import
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# the real dtypes: complex ones have no cuda kernels yet (tests/tkernels/test_complex.py checks they say so)
REAL_DTYPES = tuple(d for d in tk.dtypes.all_dtypes if d.kind != "c")

MiB = 1 << 20
gpu = pytest.mark.gpu


def _interpreted() -> bool:
    return tkc.is_available() and tkc.is_interpreted()


interpreted_only = pytest.mark.skipif(not _interpreted(), reason="the small interpreted twin of a gpu test")


# ------------------------------------------------------------------------------ keeping a stream busy (GPU)
@triton.jit(do_not_specialize=["n_iter"])
def _spin_kernel(x_ptr, n_iter):
    # a chain of dependent FMAs: device time proportional to n_iter, nothing for the compiler to remove
    v = tl.load(x_ptr)
    for _ in range(n_iter):
        v = v * 0.999999 + 0.000001
    tl.store(x_ptr, v)


def _busy(stream, ms: float = 200.0):
    """Queue about ``ms`` milliseconds of device work on ``stream`` (one kernel, calibrated with events).

    Returns the scratch array the kernel writes: keep it alive until the stream has been synchronized."""
    from tkernels.backends.triton._launch import launch

    with tkc.stream(stream):
        buf = tk.ones((1,), dtype=tk.float32, device="cuda")
        launch(_spin_kernel, (1,), buf, 1000)  # compile and load outside the calibration
        e0, e1 = tkc.Event(enable_timing=True), tkc.Event(enable_timing=True)
        n = 1 << 17
        e0.record(stream)
        launch(_spin_kernel, (1,), buf, n)
        e1.record(stream)
        per_iter = max(e0.elapsed_time(e1), 1e-3) / n  # elapsed_time waits for e1
        launch(_spin_kernel, (1,), buf, int(min(ms / per_iter, 2**31 - 1)))
    return buf


# ---------------------------------------------------------------------------------------- allocator stress
def _random_size(rng, large: int) -> int:
    r = rng.random()
    if r < 0.6:
        return int(rng.integers(1, 8192))  # small pool, odd sizes
    if r < 0.9:
        return int(np.exp(rng.uniform(np.log(8192), np.log(MiB))))
    return int(rng.integers(MiB, large))  # large pool: split 20 MiB segments, or a segment of its own


def allocator_stress(iterations: int, *, seed: int = 0, max_live: int = 160, large: int = 24 * MiB,
                     fill_kernel_every: int = 8) -> dict:
    """Random allocations and frees on 2 streams; each block gets a sentinel byte on its stream (cuMemsetD8Async
    through the runtime, or the fill kernel for some small ones) and is verified by a copy to the host when
    freed and at the end. Live blocks must never overlap."""
    rng = np.random.default_rng(seed)
    rt = tkc.get_runtime()
    streams = [tkc.Stream(), tkc.Stream()]
    live: dict[int, tuple] = {}  # key -> (array, stream, sentinel, nbytes)
    starts: list[int] = []  # sorted start addresses of live blocks
    ends: dict[int, tuple] = {}  # start -> (end, key)
    stats0 = tkc.memory_stats()
    allocated0 = tkc.memory_allocated()
    counts = {"allocs": 0, "frees": 0, "verified": 0, "fill_kernel": 0, "bytes": 0}

    def verify(key):
        x, s, sentinel, n = live[key]
        with tkc.stream(s):
            host = x.numpy()  # device -> host on the block's own stream, synchronous
        bad = np.flatnonzero(host != sentinel)
        assert bad.size == 0, (f"block #{key} at 0x{x.data_ptr():x} ({n} bytes, stream 0x{s.handle:x}) corrupted: "
                               f"{bad.size} bytes differ from the sentinel {sentinel}, first at offset {bad[0]} "
                               f"({host[bad[0]]})")
        counts["verified"] += 1

    for it in range(iterations):
        if live and (len(live) >= max_live or rng.random() < 0.45):
            key = list(live)[int(rng.integers(len(live)))]
            verify(key)
            ptr = live[key][0].data_ptr()
            del starts[bisect.bisect_left(starts, ptr)], ends[ptr]
            del live[key]  # the last reference: the block goes back to its stream's pool
            counts["frees"] += 1
            continue
        n = _random_size(rng, large)
        s = streams[int(rng.integers(2))]
        sentinel = 1 + it % 255
        with tkc.stream(s):
            x = tk.empty((n,), dtype=tk.uint8, device="cuda")
            ptr = x.data_ptr()
            i = bisect.bisect_left(starts, ptr)
            if i > 0:
                prev = starts[i - 1]
                assert ends[prev][0] <= ptr, (f"new block 0x{ptr:x} ({n} B) overlaps live block #{ends[prev][1]} "
                                              f"[0x{prev:x}, 0x{ends[prev][0]:x})")
            if i < len(starts):
                assert ptr + n <= starts[i], (f"new block [0x{ptr:x}, 0x{ptr + n:x}) overlaps live block "
                                              f"#{ends[starts[i]][1]} at 0x{starts[i]:x}")
            if fill_kernel_every and it % fill_kernel_every == 0 and n <= 4096:
                x[...] = sentinel  # the fill kernel, launched on s
                counts["fill_kernel"] += 1
            else:
                rt.memset_d8(0, ptr, sentinel, n, s.handle)
        starts.insert(i, ptr)
        ends[ptr] = (ptr + n, it)
        live[it] = (x, s, sentinel, n)
        counts["allocs"] += 1
        counts["bytes"] += n
        del x
    tkc.synchronize()
    for key in list(live):
        verify(key)
    live.clear()
    tkc.synchronize()
    stats = tkc.memory_stats()
    assert tkc.memory_allocated() == allocated0, "blocks leaked"
    counts["cache_hits"] = stats["num_cache_hits"] - stats0["num_cache_hits"]
    counts["segments"] = stats["num_segment_allocs"] - stats0["num_segment_allocs"]
    assert counts["cache_hits"] > counts["allocs"] // 2, f"the cache was hardly reused: {counts}"
    assert counts["verified"] == counts["allocs"]
    return counts


@gpu
def test_allocator_stress_gpu():
    counts = allocator_stress(10_000)
    assert counts["allocs"] > 4000 and counts["fill_kernel"] > 50, counts


@interpreted_only
def test_allocator_stress_interpreted():
    counts = allocator_stress(500, seed=1, max_live=64, large=8 * MiB)
    assert counts["allocs"] > 200 and counts["fill_kernel"] > 0, counts


# ------------------------------------------------------------------------------------------ record_stream
def record_stream_delays_reuse(busy) -> None:
    """PyTorch's test_record_stream: a block made on a side stream, used on the current stream
    (record_stream) whose work is held back by ``busy``, is not handed out again before that work ends."""
    host = np.array([1, 2, 3, 4], dtype=np.float32)
    result = tk.empty((4,), dtype=tk.float32, device="cuda")
    side = tkc.Stream()
    with tkc.stream(side):
        tmp = tk.asarray(host, device="cuda")  # allocated on side: its block belongs to side's pool
    ptr = tmp.data_ptr()
    cur = tkc.current_stream()
    cur.wait_stream(side)
    tkc.record_stream(tmp, cur)
    scratch = busy(cur) if busy else None  # delays the copy below
    result[...] = tmp  # a copy kernel on cur, after the busy work
    del tmp  # freed now, reusable only once cur's work so far has completed
    with tkc.stream(side):
        tmp2 = tk.empty((4,), dtype=tk.float32, device="cuda")
        tmp2[...] = 0.0
        reused = tmp2.data_ptr() == ptr
    if busy:
        still_busy = not cur.query()
        assert not reused, "allocation re-used too soon: a record_stream'ed block was handed out while in use"
        assert still_busy, "the busy work finished too early for this test to mean anything"
    elif tkc.is_interpreted():  # streams complete at once, so the block is reusable at once
        assert reused
    np.testing.assert_array_equal(result.numpy(), host, err_msg="copy of the record_stream'ed block")
    tkc.synchronize()
    alloc = tkc.caching_allocator()
    alloc.process_events()
    if busy:  # once the work is done the block is cached again (possibly merged with free neighbours)
        (state,) = [b["state"] for seg in alloc.snapshot() for b in seg["blocks"]
                    if b["address"] <= ptr < b["address"] + b["size"]]
        assert state == "inactive", f"after synchronize the block is {state}, not cached"
    del scratch, tmp2


@gpu
def test_record_stream_delays_reuse_gpu():
    record_stream_delays_reuse(None)  # warm-up: compiles the kernels, so nothing stalls the timed run
    record_stream_delays_reuse(_busy)


@interpreted_only
def test_record_stream_interpreted():
    record_stream_delays_reuse(None)


# ------------------------------------------------------------------------------------- OOM, retry, results
def oom_then_retry(*, absurd: bool) -> None:
    """Under a memory limit: a request past it raises OutOfMemoryError naming the sizes; freeing makes the
    retry path release the cached segment and succeed; later allocations and kernels give right results."""
    rt = tkc.get_runtime()
    tkc.synchronize()
    tkc.empty_cache()
    base = tkc.memory_reserved()
    s0 = tkc.memory_stats()
    limit = base + 100 * MiB
    tkc.set_memory_limit(limit)
    try:
        a = tk.empty((60 * MiB,), dtype=tk.uint8, device="cuda")
        with pytest.raises(tkc.OutOfMemoryError) as ei:
            tk.empty((60 * MiB,), dtype=tk.uint8, device="cuda")
        msg = str(ei.value)
        for part in ("Tried to allocate 60.00 MiB", f"limited to {tkc.format_size(limit)}", "is allocated",
                     "largest free cached block", "Hint"):
            assert part in msg, f"{part!r} not in the OOM message: {msg}"
        s1 = tkc.memory_stats()
        assert s1["num_ooms"] == s0["num_ooms"] + 1
        del a  # its 60 MiB segment stays cached...
        assert tkc.memory_reserved() == base + 60 * MiB
        c = tk.empty((70 * MiB,), dtype=tk.uint8, device="cuda")  # ...until this needs it back: retry path
        s2 = tkc.memory_stats()
        assert s2["num_alloc_retries"] == s1["num_alloc_retries"] + 1 and s2["num_ooms"] == s1["num_ooms"]
        assert tkc.memory_reserved() == base + 70 * MiB
        rt.memset_d8(0, c.data_ptr(), 0xA5, c.nbytes, tkc.current_stream().handle)
        assert (c.numpy() == 0xA5).all(), "memset of the block got after the retry"
        y = (tk.ones((1000,), device="cuda") + 1.0) * 3.0  # kernels after an OOM, inside the limit
        np.testing.assert_array_equal(y.numpy(), np.full(1000, 6.0, np.float32), err_msg="kernels after the OOM")
        del c, y
    finally:
        tkc.set_memory_limit(None)
    if absurd:  # the driver's own out-of-memory error (cuMemAlloc of a petabyte), then business as usual
        with pytest.raises(tkc.OutOfMemoryError, match=r"Tried to allocate 1048576\.00 GiB.*total capacity"):
            tk.empty((1 << 50,), dtype=tk.uint8, device="cuda")
        z = tk.full((12345,), 7, dtype=tk.int32, device="cuda") * 2
        assert (z.numpy() == 14).all(), "kernels after the driver's OOM"
    tkc.empty_cache()


@gpu
def test_oom_retry_and_results_gpu():
    oom_then_retry(absurd=True)


@interpreted_only
def test_oom_retry_and_results_interpreted():
    oom_then_retry(absurd=False)


# ------------------------------------------------------------------------------ host <-> device, all dtypes
def _random_host(rng, d, shape) -> np.ndarray:
    if d.kind == "b":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        info = np.iinfo(d.numpy)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=d.numpy)
    v = (rng.standard_normal(shape) * 100).astype(d.numpy)
    flat = v.reshape(-1)
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-3], dtype=np.float64).astype(d.numpy)
    flat[: min(flat.size, specials.size)] = specials[: flat.size]
    return v


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def roundtrip_every_dtype(shapes) -> None:
    """Host → device → host is exact (bytes) for every dtype; so are a device copy (the copy kernel) and a
    transposed (non-contiguous) view read back."""
    rng = np.random.default_rng(7)
    for d in REAL_DTYPES:
        for shape in shapes:
            src = _random_host(rng, d, shape)
            x = tk.asarray(src, device="cuda")
            assert x.device == tk.Device("cuda:0") and x.dtype == d and x.shape == shape
            what = f"{d}{list(shape)}"
            got = x.numpy()
            assert got.dtype == src.dtype and got.shape == src.shape, what
            np.testing.assert_array_equal(_bytes(got), _bytes(src), err_msg=f"round trip {what}")
            np.testing.assert_array_equal(_bytes(x.copy().numpy()), _bytes(src), err_msg=f"device copy {what}")
            if len(shape) == 2:
                np.testing.assert_array_equal(_bytes(x.mT.numpy()), _bytes(src.T), err_msg=f"transposed view {what}")


@gpu
def test_roundtrip_every_dtype_gpu():
    roundtrip_every_dtype([(), (0, 5), (7, 129), (1000003,), (1031, 1029)])


@interpreted_only
def test_roundtrip_every_dtype_interpreted():
    roundtrip_every_dtype([(), (0, 5), (7, 129), (3, 1001)])


# --------------------------------------------------------------------------------- a non-default stream
def launch_on_a_new_stream(n: int, busy) -> None:
    """Kernels launched inside ``with stream(s)`` run on s: on a GPU, s (non-blocking) is held back by busy
    work, so synchronizing the default stream must leave s busy; the values come out right."""
    s = tkc.Stream()
    assert s.handle != tkc.default_stream().handle
    with tkc.stream(s):
        if not tkc.is_interpreted():
            from tkernels.cuda import triton_driver

            triton_driver.ensure_installed()
            assert triton.runtime.driver.active.get_current_stream() == s.handle
        x = tk.empty((n,), dtype=tk.float32, device="cuda")  # allocated first: cuMemAlloc may block the host
        y = tk.empty((n,), dtype=tk.float32, device="cuda")
        scratch = busy(s) if busy else None
        x[...] = 3.5  # the fill kernel on s, after the busy work
        tk.add(x, 1.0, out=y)
    if busy:
        tkc.default_stream().synchronize()
        assert not s.query(), "work launched inside `with stream(s)` did not go to s (the default stream waited)"
    s.synchronize()
    with tkc.stream(s):
        np.testing.assert_array_equal(y.numpy(), np.full(n, 4.5, np.float32), err_msg="fill + add on the stream")
    del scratch


@gpu
def test_launch_on_a_non_default_stream_gpu():
    launch_on_a_new_stream(1 << 22, None)  # warm-up: compiles the kernels, so nothing stalls the timed run
    launch_on_a_new_stream(1 << 22, _busy)


@interpreted_only
def test_launch_on_a_non_default_stream_interpreted():
    launch_on_a_new_stream(5000, None)


# ------------------------------------------------------------------------------- pinned, non_blocking copies
def pinned_non_blocking(n: int) -> None:
    rng = np.random.default_rng(3)
    host = rng.standard_normal(n).astype(np.float32)
    p = tk.asarray(host).pin_memory()
    assert p.is_pinned() and p.device == tk.Device("cpu")
    s = tkc.Stream()
    with tkc.stream(s):
        y = p.to("cuda", non_blocking=True)
        z = y * 2.0  # ordered after the copy on s
        back = z.to("cpu")  # synchronous on s
    np.testing.assert_array_equal(back.numpy(), host * 2, err_msg="pinned -> cuda (non_blocking) -> * 2 -> host")
    # the pinned source may be dropped right after a non_blocking copy: the copy must still read valid data
    p2 = tk.asarray(host + 1).pin_memory()
    with tkc.stream(s):
        y2 = p2.to("cuda", non_blocking=True)
    del p2
    s.synchronize()
    with tkc.stream(s):
        np.testing.assert_array_equal(y2.numpy(), host + 1, err_msg="non_blocking copy whose pinned source died")


@gpu
def test_pinned_non_blocking_copy_gpu():
    pinned_non_blocking(1 << 24)


@interpreted_only
def test_pinned_non_blocking_copy_interpreted():
    pinned_non_blocking(10007)


# ------------------------------------------------------------------------------------------- no torch
TORCH_FREE_CHILD = textwrap.dedent("""
    import json, sys, traceback
    attempts = []

    class _Watch:  # records every attempt to import torch (torch is installed on the GPU machine)
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                attempts.append("".join(traceback.format_stack(limit=10)[:-1]))
            return None

    sys.meta_path.insert(0, _Watch)
    import numpy as np
    import tkernels as tk
    import tkernels.cuda as tkc

    x = tk.asarray(np.arange(1000, dtype=np.float32), device="cuda")
    y = (x + 1.0) * 2.0 - x
    s = tkc.Stream()
    with tkc.stream(s):
        z = y.astype(tk.float16).astype(tk.float32)
        w = tk.zeros((3, 4), dtype=tk.bfloat16, device="cuda") + 1.5
    tkc.synchronize()
    ok = bool((z.numpy() == np.arange(1000, dtype=np.float32) + 2).all()) and bool((w.numpy() == 1.5).all())
    print(json.dumps({"ok": ok, "torch": "torch" in sys.modules, "attempts": attempts,
                      "interpreted": tkc.is_interpreted()}))
    """)


def torch_never_imported(interpret: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TKERNELS_INTERPRET=interpret,
               PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-c", TORCH_FREE_CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["interpreted"] is (interpret == "1")
    assert res["ok"], "wrong results in the child (fill, add, multiply, astype on cuda)"
    assert not res["attempts"], "import torch was attempted:\n" + "\n---\n".join(res["attempts"])
    assert res["torch"] is False


@gpu
def test_torch_never_imported_gpu():
    torch_never_imported("0")


@interpreted_only
def test_torch_never_imported_interpreted():
    torch_never_imported("1")
