"""tkernels.cuda.autotune: first config when interpreted, tuning results kept on disk per GPU and Triton version,
and Triton's scratch allocator served by our caching allocator (interpreted mode, set by tests/conftest.py)."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import triton
import triton.language as tl

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.backends.triton._launch import launch
from tkernels.cuda import autotune as at

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIGS = [triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512}), triton.Config({"BLOCK": 1024})]


@triton.jit
def axpb_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + 1.0, mask=mask)


def _grid(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


class FakeBench:
    """A do_bench that runs the kernel once and makes each later config look faster (the last one wins)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, kernel_call, quantiles=None):
        kernel_call()
        self.calls += 1
        t = 10.0 - self.calls
        return [t, t, t] if quantiles else t


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TKERNELS_CACHE_DIR", str(tmp_path))
    return tmp_path


def _run(kernel, n=1000, alpha=3.0):
    x_np = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    x = tk.asarray(x_np, device="cuda")
    y = tk.empty((n,), dtype=tk.float32, device="cuda")
    launch(kernel, _grid(n), x, y, n, alpha)
    np.testing.assert_allclose(y.numpy(), x_np * alpha + 1.0, rtol=1e-6)


@pytest.mark.skipif(not tkc.is_interpreted(), reason="checks interpreted mode (TKERNELS_INTERPRET=1)")
def test_interpreted_mode_runs_the_first_config_without_benchmarking(cache_root):
    kernel = at.autotune(CONFIGS, key=["n"])(axpb_kernel)
    _run(kernel, 1000)
    _run(kernel, 129)
    assert kernel.best_config is CONFIGS[0]
    assert kernel.configs == [CONFIGS[0]]  # nothing else is compiled, timed or remembered
    assert not list(cache_root.rglob("*.json"))


def test_explicit_do_bench_tunes_every_config_and_remembers_the_best(cache_root):
    bench = FakeBench()
    kernel = at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel)
    _run(kernel, 1000)
    assert bench.calls == 3 and kernel.best_config is CONFIGS[2]
    _run(kernel, 1000)  # same key: in memory
    assert bench.calls == 3
    _run(kernel, 7)  # another key value: tuned again
    assert bench.calls == 6
    files = list(cache_root.rglob("*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["kernel"].endswith("test_autotune.axpb_kernel")
    assert set(data["entries"]) == {json.dumps([1000, "float32", "float32"]), json.dumps([7, "float32", "float32"])}
    assert data["entries"][json.dumps([7, "float32", "float32"])]["config"]["BLOCK"] == 1024


def test_cache_is_keyed_by_gpu_name_and_triton_version(cache_root):
    path = at.cache_file("pkg.kernel", "NVIDIA H200", "3.6.0")
    assert path == cache_root / "autotune" / "NVIDIA_H200" / "triton-3.6.0" / "pkg.kernel.json"
    assert at.cache_file("pkg.kernel", "NVIDIA A100-SXM4-80GB", "3.6.0") != path
    assert at.cache_file("pkg.kernel", "NVIDIA H200", "3.9.0") != path
    bench = FakeBench()
    kernel = at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel)
    _run(kernel, 1000)
    (path,) = cache_root.rglob("*.json")
    assert path == at.cache_file(kernel.kernel_name)
    assert path.parts[-3] == at._slug(tkc.get_device_name())
    if tkc.is_interpreted():
        assert path.parts[-3] == "Triton_interpreter_host_memory"
    assert path.parts[-2] == f"triton-{triton.__version__}"
    data = json.loads(path.read_text())
    assert data["gpu"] == tkc.get_device_name() and data["triton"] == triton.__version__
    # the same results under another GPU's name (or another version) are not used
    other = at.cache_file(kernel.kernel_name, "Another GPU", triton.__version__)
    other.parent.mkdir(parents=True)
    path.rename(other)
    fresh = at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel)
    _run(fresh, 1000)
    assert bench.calls == 6


def test_stale_or_corrupt_cache_entries_are_ignored(cache_root):
    bench = FakeBench()
    kernel = at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel)
    _run(kernel, 1000)
    (path,) = cache_root.rglob("*.json")
    data = json.loads(path.read_text())
    # a config that is no longer among the kernel's configs: tune again
    for entry in data["entries"].values():
        entry["config"]["BLOCK"] = 4096
    path.write_text(json.dumps(data))
    _run(at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel), 1000)
    assert bench.calls == 6
    # another kernel source: tune again
    data = json.loads(path.read_text())
    data["source"] = "0" * 16
    path.write_text(json.dumps(data))
    _run(at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel), 1000)
    assert bench.calls == 9
    # half a file: tune again, then the file is whole again
    path.write_text(path.read_text()[:40])
    _run(at.autotune(CONFIGS, key=["n"], do_bench=bench)(axpb_kernel), 1000)
    assert bench.calls == 12
    assert json.loads(path.read_text())["entries"]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # atomic writes leave no temp file
    # the cache can be switched off
    _run(at.autotune(CONFIGS, key=["n"], do_bench=bench, cache=False)(axpb_kernel), 1000)
    assert bench.calls == 15


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import triton, triton.language as tl
    import tkernels as tk
    from tkernels.backends.triton._launch import launch
    from tkernels.cuda import autotune as at

    @triton.jit
    def child_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

    calls = []
    def bench(kernel_call, quantiles=None):
        kernel_call()
        calls.append(1)
        return [10.0 - len(calls)] * 3

    configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})]
    kernel = at.autotune(configs, key=["n"], do_bench=bench)(child_kernel)
    n = 300
    x = tk.asarray(np.arange(n, dtype=np.float32), device="cuda")
    y = tk.empty((n,), device="cuda")
    launch(kernel, lambda m: (triton.cdiv(n, m["BLOCK"]),), x, y, n)
    print(json.dumps({"bench_calls": len(calls), "best": kernel.best_config.kwargs,
                      "ok": bool((y.numpy() == 2 * np.arange(n)).all()), "torch": "torch" in sys.modules}))
    """)


def test_disk_cache_round_trips_through_a_fresh_process(tmp_path):
    script = tmp_path / "child_autotune.py"
    script.write_text(_CHILD)
    env = dict(os.environ, TKERNELS_INTERPRET="1", TKERNELS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)

    def run():
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    first = run()
    assert first == {"bench_calls": 3, "best": {"BLOCK": 256}, "ok": True, "torch": False}
    second = run()  # loads the choice: no benchmark at all
    assert second == {"bench_calls": 0, "best": {"BLOCK": 256}, "ok": True, "torch": False}
    (path,) = (tmp_path / "cache").rglob("*.json")
    assert json.loads(path.read_text())["kernel"] == "__main__.child_kernel"


# ------------------------------------------------------------------------------- scratch allocator
def test_scratch_allocator_serves_aligned_pool_memory():
    before = tkc.memory_allocated()
    buf = at.triton_scratch_allocator(1000, 128, None)
    assert buf.data_ptr() % 128 == 0 and buf.device == tk.Device("cuda:0") and buf.nbytes == 1000
    assert tkc.memory_allocated() >= before + 1000
    big = at.triton_scratch_allocator(4096, 4096, tkc.current_stream().handle)
    assert big.data_ptr() % 4096 == 0 and big.nbytes == 4096
    del buf, big
    assert tkc.memory_allocated() == before  # back to the pool when Triton drops it


def test_ensure_triton_allocator_installs_once_per_thread_and_keeps_a_users():
    from triton.runtime import _allocation

    results = {}

    def fresh_thread():  # a new thread starts with Triton's null allocator
        results["before"] = _allocation._allocator.get()
        at.ensure_triton_allocator()
        results["after"] = _allocation._allocator.get()

        def mine(size, align, stream):
            return None

        triton.set_allocator(mine)
        at.ensure_triton_allocator()
        results["user"] = _allocation._allocator.get() is mine

    t = threading.Thread(target=fresh_thread)
    t.start()
    t.join()
    assert isinstance(results["before"], _allocation.NullAllocator)
    assert results["after"] is at.triton_scratch_allocator
    assert results["user"]
    at.ensure_triton_allocator()
    assert not isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
