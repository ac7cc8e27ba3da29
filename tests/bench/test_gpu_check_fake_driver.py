"""``python -m bench.gpu_check`` end to end on the project's fake driver (``tkernels.cuda.testing``), as CI runs it.

On the fake driver every kernel really compiles for sm_90 (Triton's front end, LLVM, ptxas) and is loaded and
launched through Triton's launcher on our streams, but nothing computes: the tests' outcomes and the
benchmarks' figures mean nothing here. What must hold: the check reaches its final table (every part runs
inside its slot, none is killed), no kernel fails to compile, the preflight finds the GPU through tkernels
(available, not interpreted, no torch), and the report names the versions.

Autotuned kernels keep their first config (``TKERNELS_AUTOTUNE=first``): timings mean nothing on the fake
driver, and every config of every autotuned kernel is compiled for sm_90 and sm_80 by tests/tkernels/cuda/
test_aot.py. The slots are scaled by ``--budget`` for this 2-core machine.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gpu_check as gc
from tkernels.cuda.testing import build_fake_libcuda, fake_driver_env

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 700  # 2 cores, cold Triton cache (on an H200 machine the default 345 s holds everything)


@pytest.mark.slow
@pytest.mark.timeout(BUDGET_S + 180)
def test_gpu_check_reaches_its_table_on_the_fake_driver(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake libcuda (and by Triton to build its launcher)")
    lib = build_fake_libcuda(tmp_path / "lib")
    base = {k: v for k, v in os.environ.items() if k not in ("TKERNELS_CACHE_DIR", "TKERNELS_NVIDIA_DEV_DIR")}
    env = fake_driver_env(lib, base)
    env.update(FAKE_CUDA_LOG_LAUNCHES="0", TKERNELS_AUTOTUNE="first", TRITON_CACHE_DIR=str(tmp_path / "triton"),
               TKERNELS_CACHE_DIR=str(tmp_path / "tk"), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--quiet", "--budget", str(BUDGET_S), "--out",
                        str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUDGET_S + 120)
    lines = r.stdout.rstrip().splitlines()
    assert lines and lines[-1].startswith("exit status "), (r.stdout[-3000:], r.stderr[-3000:])
    table = lines[:-1]
    assert table[0].split() == ["check", "result", "status"] and len(table) <= gc.SUMMARY_MAX_LINES, table
    report = json.loads((out / "gpu-check.json").read_text(encoding="utf-8"))
    assert r.returncode == report["exit_code"]

    env_block = report["environment"]
    assert env_block["gpu"].startswith("Fake GPU (sm_90") and "fake driver" in env_block["summary"]
    for key in ("date", "python", "numpy", "triton", "cuda", "nvidia driver", "cuda-bindings"):
        assert env_block.get(key), key

    pre = report["preflight"]
    assert pre["available"] is True and pre["interpreted"] is False and pre["device"] == "Fake GPU"
    assert pre["torch_imported"] is False and not pre["timed_out"]

    tests = report["tests"]
    assert not tests["timed_out"] and tests["returncode"] is not None, "the GPU tests overran their slot"
    assert tests["files"] == gc.gpu_test_files() and len(tests["cases"]) >= 30  # every gpu test ran
    benches = {b["name"]: b for b in report["benches"]}
    assert set(benches) == {"alloc", "launch", "ops", "train"}
    for name, b in benches.items():
        assert not b.get("timed_out") and b.get("returncode") is not None, f"bench {name} overran its slot"
        assert b["rows"], f"bench {name} wrote no rows"

    parts = [pre, tests, *benches.values()]
    errors = [e for p in parts for e in p["compile"]["errors"]]
    assert errors == [], f"kernels failed to compile: {errors}"
    assert pre["compile"]["count"] >= 1 and tests["compile"]["count"] >= 20
    assert benches["train"]["compile"]["count"] >= 10 and benches["ops"]["compile"]["count"] >= 5
    (line,) = [c for c in report["checks"] if c["name"] == "kernel compiles"]
    assert line["status"] == "PASS" and ", 0 errors" in line["result"]
