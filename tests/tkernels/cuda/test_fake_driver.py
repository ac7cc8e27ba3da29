"""The real-driver path of tkernels.cuda, run on a fake ``libcuda.so.1`` (no GPU needed).

The fake driver (``tkernels.cuda.testing``, the project's own ``fake_libcuda.c``) serves "device memory" from
host memory (copies are real memcpy), keeps a current context per thread and refuses calls that need one on a
thread without it, loads the cubins Triton compiles for sm_90, and logs every ``cuLaunchKernelEx`` with the
stream and context it received; kernels do not run. Each test runs a child process with ``TKERNELS_INTERPRET=0``, the
fake driver first on the library path, and a fake ``torch`` package on ``PYTHONPATH`` that fails loudly, so
any torch import shows. The children share one Triton cache, so each kernel compiles once per run.

What this checks: discovery and properties, streams and events, the allocator on ``cuMemAlloc``, host/device
copies, launches compiled for sm_90 going through our Triton driver to *our* stream with the calling thread's
context current, autotuning with ``event_bench`` and its disk cache, Triton's scratch allocator, no torch.
What it cannot check: results of kernels (see test_runtime.py, interpreted) and anything about a real GPU.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tkernels.cuda.testing import build_fake_libcuda, fake_driver_env

ROOT = Path(__file__).resolve().parents[3]
FAKE_TORCH_MARK = "!!! FAKE torch imported"
LAUNCH_RE = re.compile(r"\[fake libcuda\] launch fn=(?P<fn>\S+) grid=\((?P<grid>[\d,]+)\) "
                       r"block=\((?P<block>[\d,]+)\) smem=\d+ stream=(?P<stream>0x[0-9a-f]+) ctx=(?P<ctx>\S+) "
                       r"param0=(?P<param0>0x[0-9a-f]+)")


@pytest.fixture(scope="module")
def fake_env(tmp_path_factory):
    """Environment for children on the fake driver: built once per worker, Triton cache shared by the run."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake libcuda (and by Triton to build its launcher)")
    base = tmp_path_factory.mktemp("fake_cuda")
    lib = build_fake_libcuda(base / "lib")
    torch_pkg = base / "fake_torch" / "torch"
    torch_pkg.mkdir(parents=True)
    (torch_pkg / "__init__.py").write_text(textwrap.dedent(f"""
        import sys, traceback
        sys.stderr.write("{FAKE_TORCH_MARK}\\n")
        traceback.print_stack()
        raise ImportError("fake torch: tkernels must never import torch")
        """))
    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent  # one folder for all workers of this run
    env = fake_driver_env(lib, {k: v for k, v in os.environ.items() if k != "TKERNELS_CACHE_DIR"})
    # autotuned kernels keep their first config (timings mean nothing on a driver that runs no kernel: tuning the
    # MLP step's matmuls compiled every config, ~110 s of a fresh run), and tuning results go to this run's
    # folder, not ~/.cache (where a warm cache made the same test take 21 s or 132 s)
    env.update(TKERNELS_AUTOTUNE="first", TKERNELS_CACHE_DIR=str(run_dir / "fake_cuda_tkernels"))
    env.update(TRITON_CACHE_DIR=str(run_dir / "fake_cuda_triton"), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(base / "fake_torch"), str(ROOT)]))
    return {"env": env, "dir": base, "lib": lib}


def run_child(fake_env, name: str, code: str, extra_env=None, with_stderr=False):
    """Run ``code`` in a child on the fake driver; returns (result dict printed last, sections of stderr), and the
    whole stderr too when ``with_stderr``."""
    script = fake_env["dir"] / f"{name}.py"
    script.write_text(PRELUDE + textwrap.dedent(code))
    env = dict(fake_env["env"], **(extra_env or {}))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, f"child {name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    assert FAKE_TORCH_MARK not in r.stderr, f"torch was imported:\n{r.stderr[-6000:]}"
    sections, current = {}, None
    for line in r.stderr.splitlines():
        if line.startswith("@@mark "):
            current = line.split(" ", 1)[1]
            sections[current] = []
        elif (m := LAUNCH_RE.search(line)) and current is not None:
            sections[current].append(m.groupdict())
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result.pop("torch_imported") is False
    assert result.pop("device_name") == "Fake GPU", "the fake libcuda was not the driver loaded"
    return (result, sections, r.stderr) if with_stderr else (result, sections)


PRELUDE = textwrap.dedent("""
    import atexit, json, os, sys, time
    import numpy as np
    import tkernels as tk
    import tkernels.cuda as tkc

    res = {}

    def mark(name):
        sys.stdout.flush()
        sys.stderr.write(f"@@mark {name}\\n")
        sys.stderr.flush()

    def report():
        res["torch_imported"] = "torch" in sys.modules
        res["device_name"] = tkc.get_device_name(0)
        print(json.dumps(res))

    atexit.register(report)
    """)


def test_devices_streams_events_memory_and_copies(fake_env):
    res, _ = run_child(fake_env, "runtime", """
        from cuda.bindings import driver as cu
        from tkernels.cuda.raw_backends import CudaBackend
        from tkernels.dispatch import lookup

        res["available"], res["interpreted"] = tkc.is_available(), tkc.is_interpreted()
        res["count"] = tkc.device_count()
        p = tkc.get_device_properties(0)
        res["props"] = [p.name, p.major, p.minor, p.multi_processor_count, p.total_memory]
        res["capability"] = list(tkc.get_device_capability("cuda:0"))
        tkc.set_device(0)
        s = tkc.Stream()
        res["stream"] = [s.handle != 0, s.query(), repr(s).startswith("<tkernels.cuda.Stream")]
        with tkc.stream(s):
            res["current_in_block"] = tkc.current_stream() == s
        res["current_after"] = tkc.current_stream().handle
        e0, e1 = tkc.Event(enable_timing=True), tkc.Event(enable_timing=True)
        e0.record(s)
        time.sleep(0.01)  # the fake driver's events carry host time
        e1.record(s)
        s.wait_event(e0)
        s.wait_stream(tkc.default_stream())
        e1.synchronize()
        res["events"] = [e0.query(), e1.elapsed_time(e1) >= 0, e0.elapsed_time(e1)]
        s.synchronize()
        tkc.synchronize()

        calls = {"alloc": 0, "free": 0}
        real_alloc, real_free = cu.cuMemAlloc, cu.cuMemFree
        def counting_alloc(n):
            calls["alloc"] += 1
            return real_alloc(n)
        def counting_free(p):
            calls["free"] += 1
            return real_free(p)
        cu.cuMemAlloc, cu.cuMemFree = counting_alloc, counting_free
        res["backend"] = isinstance(tkc.caching_allocator().backend, CudaBackend)
        before = tkc.memory_stats()["num_segment_allocs"] if "num_segment_allocs" in tkc.memory_stats() else None
        rng = np.random.default_rng(0)
        host = {d: (rng.standard_normal((33, 65)) * 40).astype(tk.dtypes.as_dtype(d).numpy)
                for d in ("float32", "float64", "bfloat16", "int8", "int64", "bool")}
        arrays = {d: tk.asarray(h, device="cuda") for d, h in host.items()}
        res["roundtrip"] = {d: bool((a.numpy().view(np.uint8) == host[d].view(np.uint8)).all())
                            for d, a in arrays.items()}
        big = tk.asarray(np.arange(3 << 20, dtype=np.float32), device="cuda")  # a large-pool segment
        d2d = lookup("to_device", big.device)(big, big.device)  # device -> device (as between two GPUs)
        res["d2d"] = d2d.data_ptr() != big.data_ptr() and bool((d2d.numpy() == np.arange(3 << 20)).all())
        pinned = tk.asarray(host["float32"]).pin_memory()
        with tkc.stream(s):
            nb = pinned.to("cuda", non_blocking=True)
        s.synchronize()
        res["pinned"] = pinned.is_pinned() and bool((nb.numpy() == host["float32"]).all())
        stats = tkc.memory_stats()
        res["segments"] = [stats.get("num_segment_allocs"), before, calls["alloc"]]
        res["reserved_le_total"] = tkc.memory_reserved() <= tkc.mem_get_info()[1]
        del arrays, big, d2d, nb
        tkc.empty_cache()
        res["after_empty_cache"] = [tkc.memory_reserved(), calls["free"]]
        """)
    assert res["available"] is True and res["interpreted"] is False and res["count"] == 1
    assert res["props"] == ["Fake GPU", 9, 0, 132, 140 << 30] and res["capability"] == [9, 0]
    assert res["stream"] == [True, True, True]
    assert res["current_in_block"] is True and res["current_after"] == 0
    assert res["events"][:2] == [True, True] and res["events"][2] >= 5.0  # ms of host time on the fake driver
    assert res["backend"] is True
    assert all(res["roundtrip"].values()), res["roundtrip"]
    assert res["d2d"] is True and res["pinned"] is True
    segments, before, raw_allocs = res["segments"]
    assert raw_allocs >= 2 and segments - (before or 0) == raw_allocs  # every segment is one cuMemAlloc
    assert res["reserved_le_total"] is True
    assert res["after_empty_cache"] == [0, raw_allocs + (before or 0)]


def test_launches_compile_for_sm90_and_reach_our_stream(fake_env):
    res, launches = run_child(fake_env, "launch", """
        import threading
        from cuda.bindings import driver as cu
        from tkernels.cuda import raw_backends
        from tkernels.kernels.copy import fill_kernel

        ctx_at_malloc = []
        real_malloc = raw_backends.CudaBackend.malloc
        def malloc(self, n):
            ctx_at_malloc.append(int(cu.cuCtxGetCurrent()[1]))
            return real_malloc(self, n)
        raw_backends.CudaBackend.malloc = malloc

        mark("zeros")
        t0 = time.perf_counter()
        x = tk.zeros((1000,), device="cuda")
        res["first_launch_s"] = time.perf_counter() - t0
        res["x"] = x.data_ptr()
        s = tkc.Stream()
        res["stream"] = s.handle
        mark("stream")
        with tkc.stream(s):
            y = tk.ones((1000,), device="cuda")
        res["y"] = y.data_ptr()
        mark("add")
        z = x + y
        mark("astype")
        w = y.astype(tk.float16)
        v = tk.empty((64, 64), device="cuda")[::2, 1::3]
        mark("strided")
        v[...] = 2.5
        res["v"] = v.data_ptr()
        mark("thread")
        def work():
            res["thread_ctx_before"] = int(cu.cuCtxGetCurrent()[1])
            a = tk.full((5 << 20,), 2.0, device="cuda")  # a new segment, then a launch, from a fresh thread
            res["thread_a"] = a.data_ptr()
        t = threading.Thread(target=work)
        t.start()
        t.join()
        mark("end")
        res["ctx_at_malloc"] = ctx_at_malloc
        import triton
        res["driver"] = type(triton.runtime.driver.active).__name__
        res["targets"] = sorted({(k.metadata.target.backend, k.metadata.target.arch)
                                 for k in fill_kernel.device_caches[0][0].values()})
        res["ptx_target"] = sorted({line for k in fill_kernel.device_caches[0][0].values()
                                    for line in k.asm["ptx"].splitlines() if line.startswith(".target")})

        # host overhead per op on the fake driver (driver calls cost nothing here): print only
        from tkernels.dispatch import lookup
        fill = lookup("fill", x.device)
        ops = {
            "fill backend (launch only)": lambda: fill(x, 1.0),
            "x + y (alloc + launch + free)": lambda: x + y,
            "fill_kernel[grid](...) (Triton JIT path)": lambda: fill_kernel[(1,)](
                x, 1.0, 1000, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, CONTIGUOUS=True, TO_BOOL=False, F64_BITS=False,
                BLOCK=1024),
        }
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(2)
        os.dup2(devnull, 2)  # the fake driver logs every launch
        try:
            res["overhead_us"] = {}
            for name, op in ops.items():
                op()  # compile outside the timing
                best = float("inf")
                for _ in range(3):
                    t0 = time.perf_counter()
                    for _ in range(300):
                        op()
                    best = min(best, (time.perf_counter() - t0) / 300 * 1e6)
                res["overhead_us"][name] = round(best, 1)
        finally:
            os.dup2(saved, 2)
        """)
    print(f"\nhost overhead per op on the fake driver (us): {res['overhead_us']}; first launch (compile "
          f"or cache load): {res['first_launch_s']:.2f} s")

    def one(section, fn):
        assert len(launches[section]) == 1, launches[section]
        (launch,) = launches[section]
        assert launch["fn"] == fn
        assert launch["ctx"] not in ("(nil)", "0x0"), f"{section}: launched with no current context"
        return launch

    zeros = one("zeros", "fill_kernel")
    assert int(zeros["stream"], 16) == 0 and int(zeros["param0"], 16) == res["x"]  # default stream, our buffer
    assert zeros["grid"] == "1,1,1" and zeros["block"] == "128,1,1"  # 1000 elements, BLOCK 1024, 4 warps
    on_stream = one("stream", "fill_kernel")
    assert res["stream"] != 0 and int(on_stream["stream"], 16) == res["stream"]
    assert int(on_stream["param0"], 16) == res["y"]
    assert int(one("add", "binary_kernel")["param0"], 16) == res["x"]
    assert int(one("astype", "copy_kernel")["param0"], 16) == res["y"]
    assert int(one("strided", "fill_kernel")["param0"], 16) == res["v"]
    thread = one("thread", "fill_kernel")
    assert int(thread["param0"], 16) == res["thread_a"] and thread["grid"] == f"{(5 << 20) // 1024},1,1"
    assert res["thread_ctx_before"] == 0  # a fresh thread has no context: tkernels must make it current
    assert res["ctx_at_malloc"] and all(res["ctx_at_malloc"]), "cuMemAlloc ran without a current context"
    assert res["targets"] == [["cuda", 90]] and res["ptx_target"] == [".target sm_90a"]
    assert res["driver"] == "TorchFreeCudaDriver"


def test_autotune_event_bench_and_scratch_allocator(fake_env):
    res, launches = run_child(fake_env, "autotune", """
        import triton
        import triton.language as tl
        from tkernels.backends.triton._launch import launch
        from tkernels.cuda import autotune as at
        from tkernels.cuda import triton_driver

        bench_calls = []
        real_bench = triton_driver.event_bench
        def counting_bench(kernel_call, quantiles=None, **kw):
            bench_calls.append(1)
            return real_bench(kernel_call, quantiles=quantiles, warmup=1.0, rep=2.0, **kw)
        triton_driver.event_bench = counting_bench

        @at.autotune([triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
        @triton.jit
        def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

        @triton.jit
        def desc_copy_kernel(a_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
            a = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
            o = tl.make_tensor_descriptor(o_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
            o.store([0, 0], a.load([0, 0]))

        n = 4096
        x = tk.zeros((n,), device="cuda")
        y = tk.empty((n,), device="cuda")
        mark("tune")
        launch(double_kernel, lambda m: (triton.cdiv(n, m["BLOCK"]),), x, y, n)
        mark("tuned")
        launch(double_kernel, lambda m: (triton.cdiv(n, m["BLOCK"]),), x, y, n)
        mark("after")
        res["bench_calls"] = len(bench_calls)
        res["best"] = double_kernel.best_config.kwargs
        res["timed"] = len(double_kernel.configs_timings)
        path = at.cache_file(double_kernel.kernel_name)
        res["cache"] = json.loads(path.read_text()) if path.exists() else None
        res["cache_path"] = str(path)

        a, o = tk.zeros((64, 64), device="cuda"), tk.empty((64, 64), device="cuda")
        try:
            launch(desc_copy_kernel, (1,), a, o, 64, 64, BM=64, BN=64)
            res["without_allocator"] = "launched"
        except RuntimeError as e:
            res["without_allocator"] = str(e)
        scratch = []
        real_alloc = at.triton_scratch_allocator
        def counting_alloc(size, align, stream):
            buf = real_alloc(size, align, stream)
            scratch.append([size, align, stream, buf.data_ptr() % max(align, 1)])
            return buf
        at.triton_scratch_allocator = counting_alloc
        at.set_triton_allocator()  # our launch already installed the real one; count through a wrapper
        mark("scratch")
        s = tkc.Stream()
        with tkc.stream(s):
            launch(desc_copy_kernel, (1,), a, o, 64, 64, BM=64, BN=64)
        mark("end")
        res["scratch"] = scratch
        res["stream"] = s.handle
        """, extra_env={"TKERNELS_CACHE_DIR": str(fake_env["dir"] / "tk_cache"), "TKERNELS_AUTOTUNE": ""})
    assert res["bench_calls"] == 2 and res["timed"] == 2 and res["best"]["BLOCK"] in (256, 1024)
    tuned = launches["tuned"]
    assert len(tuned) == 1 and tuned[0]["grid"] == f"{4096 // res['best']['BLOCK']},1,1"
    assert len(launches["tune"]) > 2  # every config ran, timed with events on our stream
    cache = res["cache"]
    assert cache is not None, f"no tuning cache at {res['cache_path']}"
    assert cache["gpu"] == "Fake GPU" and "Fake_GPU" in res["cache_path"] and cache["triton"] in res["cache_path"]
    assert list(cache["entries"].values())[0]["config"]["BLOCK"] == res["best"]["BLOCK"]
    assert res["without_allocator"] == "launched"  # launch() wires our allocator: no user set-up needed
    ((size, align, stream, misalign),) = res["scratch"]
    assert size > 0 and stream == res["stream"] and misalign == 0
    (launch,) = launches["scratch"]
    assert launch["fn"] == "desc_copy_kernel" and int(launch["stream"], 16) == res["stream"]


def test_driver_calls_make_the_context_current_on_any_thread(fake_env):
    """Streams, events, copies, pinned memory, frees and finalizers used from threads that never touched cuda:
    the fake driver refuses every call that needs a context on a thread without one (as the driver does), and
    counts the refusals and the live objects."""
    res, _ = run_child(fake_env, "threads", f"""
        import gc, threading
        from tkernels.cuda.testing import FakeDriverStats

        stats = FakeDriverStats({str(fake_env["lib"])!r})
        x = tk.ones((1000,), device="cuda")  # context, allocator and kernels set up on the main thread
        s = tkc.Stream()
        e0, e1 = tkc.Event(enable_timing=True), tkc.Event(enable_timing=True)
        e0.record(s)
        e1.record(s)
        gc.collect()
        base = stats.read()
        box = {{}}

        def fresh(fn):  # run fn on a new thread that has never used cuda
            err = []
            def body():
                try:
                    fn()
                except BaseException as exc:  # noqa: BLE001
                    err.append(f"{{type(exc).__name__}}: {{exc}}")
            t = threading.Thread(target=body)
            t.start()
            t.join()
            return err

        def use_events():
            e1.record(s)
            box["query"] = [e0.query(), e1.query(), s.query()]
            e1.synchronize()
            s.synchronize()
            s.wait_event(e0)
            box["elapsed"] = e0.elapsed_time(e1) >= 0
            tkc.synchronize()
            e2 = tkc.Event()
            e2.record()  # a new event on the thread's default stream
            del e2  # its finalizer runs here, on this thread

        def use_memory():
            host = np.arange(4096, dtype=np.float32)
            p = tk.asarray(host).pin_memory()
            y = p.to("cuda", non_blocking=True)
            tkc.current_stream().synchronize()
            z = tk.asarray(y.numpy(), device="cuda")
            box["copies"] = bool((z.numpy() == host).all())
            tkc.record_stream(z, s)  # the free below waits for s with an event
            del p, y, z

        def finalize_objects():
            global s, e0, e1, x
            del s, e0, e1, x  # Stream.__del__, Event.__del__ and the allocator's free on this thread
            gc.collect()

        res["errors"] = fresh(use_events) + fresh(use_memory) + fresh(finalize_objects)
        gc.collect()
        after = stats.read()
        res["box"] = box
        res["context_errors"] = after["context_errors"] - base["context_errors"]
        res["live"] = {{k: after[k] - base[k] for k in ("streams", "events", "host_allocations")}}
        """)
    assert res["errors"] == [], res["errors"]
    assert res["box"]["query"] == [True, True, True] and res["box"]["elapsed"] is True
    assert res["box"]["copies"] is True
    assert res["context_errors"] == 0, "a driver call ran on a thread without a current context"
    # the stream, both events and the pinned buffer were destroyed, not leaked (the allocator may still hold
    # its record_stream event until its next allocation: at most one)
    assert res["live"]["streams"] == -1 and res["live"]["host_allocations"] == 0
    assert res["live"]["events"] in (-2, -1), res["live"]
