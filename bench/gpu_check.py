"""``python -m bench.gpu_check [--out DIR]``: the real-GPU check (DESIGN.md §9, tier 4), one script, < 6 minutes.

It cannot pass by accident. In order, each part bounded in time (a part that overruns is killed with its
whole process group and reported as a failure):

0. is there a GPU? ``probe_gpu`` asks the driver through ``cuda.bindings`` (no context is made). When that
   fails, the machine is looked at directly (device nodes ``/dev/nvidia*``, ``nvidia-smi -L``): with no GPU
   there it prints ``no GPU: nothing to check (<why>)``, writes nothing and exits 0; with a GPU there that
   tkernels cannot use (cuda-python missing or without ``cuda.bindings``, a broken driver) it says so, naming
   the cause, and exits 4;
1. environment: GPU, NVIDIA driver, CUDA (driver API), cuda-python / cuda-bindings, Triton, Python, NumPy,
   ``nvidia-smi``, peers (torch, cupy);
2. preflight, in a child with ``TKERNELS_INTERPRET=0``: tkernels sees the GPU (available, not interpreted),
   compiles and launches one kernel, reads its result back, and has not imported torch; if tkernels cannot
   use the GPU it stops here, exit 4;
3. the GPU tests: ``pytest -m gpu`` over the test modules that hold tests marked ``gpu`` (found by reading the
   sources; they import nothing beyond the core dependencies and pytest), in a child, with pytest-xdist
   workers when it is installed and the machine has the cores (a cold Triton cache compiles in parallel), a
   per-test timeout when pytest-timeout is installed, a JUnit file parsed for per-test results;
4. the benchmarks registered in ``bench/__main__.py`` among ``alloc``, ``launch``, ``ops``, ``train``, each
   ``python -m bench NAME ARGS --csv ...`` in a child. ARGS is the module's ``GPU_CHECK_ARGS`` list literal
   when it defines one (read from its source, not imported), else ``["--quick"]``.

Every child logs its Triton compilations (``TKERNELS_COMPILE_LOG``, see ``tkernels.cuda.compile_log``): the
report gives each part's compile time apart from its run time (time slots are sized for a cold Triton cache,
where every kernel compiles and the launcher of every signature is built), and a kernel that fails to compile
fails the check.

Then it writes the full report under DIR (``--out``; else ``$OUT`` when set; else
``bench/results/gpu-check-<date>``): ``gpu-check.md`` (summary, environment, every test, compile times, every
benchmark's output), ``gpu-check.json`` (the same data) and ``gpu-tests.log`` (pytest's output); and prints a
short table last (at most 25 lines: failures summarised per test module, the full list in the report).

Headline figures: a benchmark row whose CSV has a non-empty ``headline`` column (a short label) becomes a
line of the summary, showing its ``headline_text`` (the figure and its target) and ``headline_status``
(``PASS`` target met, ``MISS`` target missed: shown, but not a failure of the check).

On a machine without a GPU the whole check runs on the project's fake driver (``tkernels.cuda.testing``: CI
does this, ``tests/bench/test_gpu_check_fake_driver.py``): every kernel compiles for sm_90, nothing computes,
so the values and the tests' outcomes mean nothing there; the compile results do.

Exit status: 0 every GPU test passed and every benchmark ran (or no GPU at all); 1 a GPU test failed or
errored, no test marked ``gpu`` was collected, a kernel failed to compile, or the test run crashed or overran;
2 usage error; 3 the tests passed but a benchmark failed, crashed, overran or found no time left; 4 the
machine has a GPU that tkernels cannot use.
"""

from __future__ import annotations

import argparse
import ast
import csv
import datetime as _datetime
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["probe_gpu", "diagnose_no_gpu", "gpu_test_files", "run_part", "parse_junit", "headline_checks",
           "build_report", "render_markdown", "render_summary", "write_report", "exit_code", "main"]

ROOT = Path(__file__).resolve().parents[1]

EXIT_OK, EXIT_TESTS_FAILED, EXIT_USAGE, EXIT_BENCH_FAILED, EXIT_GPU_UNUSABLE = 0, 1, 2, 3, 4
PASS, FAIL, SKIP, MISS, INFO = "PASS", "FAIL", "SKIP", "MISS", "INFO"

# Time slots, for a cold Triton cache: every kernel specialization a part uses compiles on first launch
# (~0.1-1 s each on one core, measured on the fake driver: see bench/results/README.md) and Triton builds a
# launcher per signature. The parts run one after another; the GPU tests use xdist workers where there are cores.
TOTAL_BUDGET_S = 345.0      # the whole check: 6 minutes minus a margin for start-up and the report
PREFLIGHT_S = 60.0          # one kernel: Triton's driver utilities build (gcc) and the first compile
TESTS_BUDGET_S = 150.0      # pytest -m gpu, compilation of every kernel specialization included
TEST_TIMEOUT_S = 100        # one test (pytest-timeout)
BENCH_MIN_S = 15.0          # time kept back for each benchmark still to run
# name, most seconds it may take; only those registered in bench/__main__.py run
BENCHES = (("alloc", 25.0), ("launch", 35.0), ("ops", 90.0), ("train", 150.0))
DEFAULT_BENCH_ARGS = ("--quick",)
SUMMARY_MAX_LINES = 25      # the table printed last, header included
FAMILY_LINES = 6            # failing test modules named in the table (the rest: in the report)


# --------------------------------------------------------------------------------------------- the GPU
def probe_gpu() -> dict:
    """``{"ok": True, name, capability, total_memory, sm_count, driver_version}`` or ``{"ok": False, reason}``.

    Straight through cuda.bindings (``cuInit``, device queries; no context is made), whatever
    ``TKERNELS_INTERPRET`` says: interpreted cuda is not a GPU.
    """
    try:
        from cuda.bindings import driver as cu
    except Exception as e:  # noqa: BLE001 - no cuda-python: no GPU
        return {"ok": False, "reason": f"cuda-python is not importable ({type(e).__name__}: {e})"}

    def check(res, what):
        err, *vals = res
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{what} failed: {err!r}")
        return vals[0] if len(vals) == 1 else vals

    try:
        check(cu.cuInit(0), "cuInit")
        version = int(check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))
        count = int(check(cu.cuDeviceGetCount(), "cuDeviceGetCount"))
        if count == 0:
            return {"ok": False, "reason": "the CUDA driver reports no devices"}
        dev = check(cu.cuDeviceGet(0), "cuDeviceGet")
        name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
        attr = cu.CUdevice_attribute

        def get(a):
            return int(check(cu.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))

        return {"ok": True, "name": name, "device_count": count,
                "capability": [get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                               get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)],
                "sm_count": get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                "total_memory": int(check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
                "driver_version": f"{version // 1000}.{version % 1000 // 10}", "driver_version_int": version}
    except Exception as e:  # noqa: BLE001 - no libcuda (cuda-python raises), broken driver: no GPU
        return {"ok": False, "reason": f"{type(e).__name__}: {e}"}


def diagnose_no_gpu(probe: dict) -> tuple[int, str]:
    """When ``probe_gpu`` failed: ``(EXIT_OK, "no GPU: ...")`` if the machine has no NVIDIA GPU, else
    ``(EXIT_GPU_UNUSABLE, message naming the cause)`` (device nodes or nvidia-smi show one the driver layer
    cannot use)."""
    from tkernels.cuda.runtime import import_driver_bindings, nvidia_gpu_present

    reason = probe["reason"]
    try:
        import_driver_bindings()
    except ImportError as e:
        reason = str(e)  # names the package, its version and the fix
    evidence = nvidia_gpu_present()
    if evidence is None:
        return EXIT_OK, f"no GPU: nothing to check ({reason})"
    return EXIT_GPU_UNUSABLE, (f"GPU check FAILED: this machine has an NVIDIA GPU ({evidence}) but tkernels cannot "
                               f"use it: {reason}")


def gpu_test_files(root: Path = ROOT) -> list[str]:
    """Test modules (paths relative to ``root``) that hold tests marked ``gpu``, found by reading the sources."""
    out = []
    for path in sorted((root / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "mark.gpu" in text:
            out.append(str(path.relative_to(root)))
    return out


def select_cuda_mode() -> tuple[str, dict]:
    """For benchmarks: ``("gpu" | "interpreted" | "none", probe_gpu())``: where ``device="cuda"`` runs here.

    ``TKERNELS_INTERPRET=1`` means interpreted; else a GPU means ``"gpu"``. Without a GPU, when the variable
    is unset and ``tkernels.cuda`` is not imported yet, it sets ``TKERNELS_INTERPRET=1`` (so cuda rows run
    interpreted); with ``TKERNELS_INTERPRET=0`` and no GPU there is no cuda (``"none"``).
    """
    gpu = probe_gpu()
    if "tkernels.cuda" in sys.modules:  # the mode is fixed already
        import tkernels.cuda as tkc

        if tkc.is_interpreted():
            return "interpreted", gpu
        return ("gpu" if tkc.is_available() else "none"), gpu
    flag = os.environ.get("TKERNELS_INTERPRET")
    if flag == "1":
        return "interpreted", gpu
    if gpu["ok"]:
        return "gpu", gpu
    if flag is None:
        os.environ["TKERNELS_INTERPRET"] = "1"
        return "interpreted", gpu
    return "none", gpu


def machine_label(gpu: dict) -> str:
    """``h200`` for "NVIDIA H200", ``cpu`` without a GPU: the machine part of saved results' names."""
    if not gpu.get("ok"):
        return "cpu"
    words = [w for w in gpu["name"].lower().replace("nvidia", " ").split() if w]
    return "-".join(words) or "gpu"


def _dist_version(*names: str) -> str | None:
    for n in names:
        try:
            return importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _nvidia_smi() -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "--query-gpu=name,driver_version,memory.total,clocks.max.sm,temperature.gpu",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"failed: {type(e).__name__}"
    return r.stdout.strip() or r.stderr.strip()[:200]


def environment(gpu: dict) -> dict:
    """What a reader needs to compare runs (the GPU part from ``probe_gpu``)."""
    import platform

    import numpy as np

    env = {"date": _datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "host": platform.node(), "python": sys.version.split()[0], "numpy": np.__version__}
    if gpu.get("ok"):
        mem = gpu["total_memory"] / 2**30
        env["gpu"] = (f"{gpu['name']} (sm_{gpu['capability'][0]}{gpu['capability'][1]}, {mem:.0f} GiB, "
                      f"{gpu['sm_count']} SMs, {gpu['device_count']} device(s))")
        env["cuda"] = f"{gpu['driver_version']} (the driver's CUDA API, cuDriverGetVersion {gpu['driver_version_int']})"
        env["summary"] = (f"{gpu['name']} sm_{gpu['capability'][0]}{gpu['capability'][1]}, CUDA "
                          f"{gpu['driver_version']}, triton {_dist_version('triton') or '?'}")
        if gpu["name"] == "Fake GPU":  # tkernels.cuda.testing's stand-in driver: kernels compile, nothing runs
            env["summary"] += " (fake driver: values mean nothing)"
    env["cuda-python"] = _dist_version("cuda-python") or "not installed"
    env["cuda-bindings"] = _dist_version("cuda-bindings") or "not installed"
    env["triton"] = _dist_version("triton") or "not installed"
    env["ml_dtypes"] = _dist_version("ml_dtypes", "ml-dtypes") or "not installed"
    env["pytest"] = (_dist_version("pytest") or "not installed") + (
        f", pytest-timeout {_dist_version('pytest-timeout')}" if _dist_version("pytest-timeout") else "")
    env["peers"] = ", ".join(f"{n} {v}" for n, v in (("torch", _dist_version("torch")),
                                                      ("cupy", _dist_version("cupy-cuda13x", "cupy-cuda12x", "cupy")))
                             if v) or "none"
    env["pytest-xdist"] = _dist_version("pytest-xdist") or "not installed"
    env["cpus"] = str(os.cpu_count() or 1)
    smi = _nvidia_smi()
    if smi:
        env["nvidia-smi"] = smi
        fields = [f.strip() for f in smi.splitlines()[0].split(",")]
        env["nvidia driver"] = fields[1] if len(fields) > 1 else smi
    else:
        env["nvidia driver"] = "unknown (no nvidia-smi)"
    try:
        import tkernels

        env["tkernels"] = getattr(tkernels, "__version__", "unknown")
    except Exception as e:  # noqa: BLE001 - the check still runs (and reports) when the library is broken
        env["tkernels"] = f"import failed: {type(e).__name__}: {e}"
    return env


# -------------------------------------------------------------------------------------------- children
@dataclass
class PartResult:
    """What a child process did: exit status (None when killed), seconds, output, whether it overran."""

    argv: list
    returncode: int | None
    seconds: float
    output: str
    timed_out: bool = False
    error: str | None = None


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM then SIGKILL to the child's whole process group (it was started in its own session)."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError, AttributeError):
            if sig == signal.SIGTERM:
                proc.terminate()
            else:
                proc.kill()
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_part(argv, timeout: float, *, env=None, cwd=None, echo: bool = True, prefix: str = "  | ") -> PartResult:
    """Run ``argv``; output (stdout and stderr merged) is kept and, with ``echo``, shown on our stderr as it
    comes. Past ``timeout`` seconds the child and everything it started are killed."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True, text=True, errors="replace", bufsize=1)
    except OSError as e:
        return PartResult(list(argv), None, 0.0, "", error=f"could not start: {e}")
    lines: list[str] = []

    def pump():
        for line in proc.stdout:
            lines.append(line)
            if echo:
                sys.stderr.write(prefix + line)
                sys.stderr.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        rc = proc.wait(max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        rc = None
    reader.join(5.0)
    return PartResult(list(argv), rc, time.monotonic() - t0, "".join(lines), timed_out)


def child_env(compile_log=None) -> dict:
    """Our environment for children on the real GPU: not interpreted, the repository importable, unbuffered,
    Triton's compilations logged to ``compile_log``."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TKERNELS_INTERPRET"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    if compile_log is not None:
        env["TKERNELS_COMPILE_LOG"] = str(compile_log)
    return env


def read_compile_log(path) -> dict:
    """``{"count", "seconds", "errors"}`` of a part's compile log (see ``tkernels.cuda.compile_log``)."""
    from tkernels.cuda.compile_log import read

    return read(path)


def _timing(part: dict) -> str:
    """``compile 12 s/40 kernels, run 8 s`` for a part with a compile log."""
    c = part.get("compile")
    if not c or not c.get("count"):
        return ""
    run = max(0.0, part.get("seconds", 0.0) - c["seconds"])
    return f"compile {c['seconds']:.0f} s/{c['count']} kernels, run {run:.0f} s"


# -------------------------------------------------------------------------------------------- preflight
PREFLIGHT = """
import json, sys, time
out = {}
t0 = time.perf_counter()
import tkernels as tk
import tkernels.cuda as tkc
out["available"], out["interpreted"] = tkc.is_available(), tkc.is_interpreted()
if out["available"] and not out["interpreted"]:
    out["device"] = tkc.get_device_name(0)
    y = (tk.ones((1000,), device="cuda") + 1.0).numpy()
    out["first_kernel_s"] = round(time.perf_counter() - t0, 2)
    out["value_ok"] = bool((y == 2.0).all())
else:
    out["reason"] = tkc.get_runtime().unavailable_reason
out["torch_imported"] = "torch" in sys.modules
print("@@preflight " + json.dumps(out))
"""


def run_preflight(tmp: Path, timeout: float, *, echo: bool = True) -> dict:
    """tkernels on the GPU in a child: available, not interpreted, one kernel compiled, launched, read back."""
    log = tmp / "compile-preflight.jsonl"
    part = run_part([sys.executable, "-c", PREFLIGHT], timeout, env=child_env(log), cwd=str(ROOT), echo=echo)
    result = {"returncode": part.returncode, "seconds": round(part.seconds, 1), "timed_out": part.timed_out,
              "timeout_s": round(timeout), "error": part.error, "output": cap(part.output),
              "compile": read_compile_log(log)}
    for line in part.output.splitlines():
        if line.startswith("@@preflight "):
            result.update(json.loads(line.split(" ", 1)[1]))
    return result


def preflight_checks(pre: dict) -> tuple[list[dict], str | None]:
    """Summary lines of the preflight, and the reason tkernels cannot use the GPU (None when it can)."""
    fatal = None
    if pre.get("timed_out"):
        fatal = f"tkernels' first cuda kernel did not finish in {pre['timeout_s']} s"
    elif "available" not in pre:
        fatal = f"the preflight child failed (exit status {pre.get('returncode')}): " + _one_line(
            pre.get("error") or pre.get("output", "")[-400:], 200)
    elif not pre["available"] or pre["interpreted"]:
        fatal = (f"tkernels.cuda reports available={pre['available']}, interpreted={pre['interpreted']}"
                 + (f": {pre['reason']}" if pre.get("reason") else ""))
    if fatal is not None:
        return [{"name": "preflight", "result": _one_line(fatal, 90), "status": FAIL, "group": "gpu"}], fatal
    ok = pre.get("value_ok") and not pre.get("torch_imported")
    torch = "imported" if pre.get("torch_imported") else "not imported"
    text = (f"{pre.get('device')}: first kernel in {pre.get('first_kernel_s', 0):.1f} s, result "
            f"{'right' if pre.get('value_ok') else 'WRONG'}, torch {torch}")
    return [{"name": "preflight", "result": text, "status": PASS if ok else FAIL, "group": "tests"}], None


# ----------------------------------------------------------------------------------------------- tests
def parse_junit(path) -> list[dict]:
    """Per-test results of a JUnit XML file: name, outcome (passed/failed/error/skipped), seconds, message."""
    cases = []
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        cls, name = tc.get("classname", ""), tc.get("name", "")
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = cap((el.get("message") or (el.text or "")).strip(), 4000, 4000)
                break
        cases.append({"name": f"{cls.replace('.', '/')}.py::{name}" if cls else name, "outcome": outcome,
                      "seconds": float(tc.get("time") or 0.0), "message": message})
    return cases


def cap(text: str, head: int = 20_000, tail: int = 60_000) -> str:
    """``text`` cut to its first ``head`` and last ``tail`` characters (a fake driver logs every launch)."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut ...]\n{text[-tail:]}"


def _one_line(text: str, width: int = 90) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[:width - 1] + "…"


def xdist_workers() -> int:
    """pytest-xdist workers for the GPU tests: compiles of a cold cache run in parallel (0: none)."""
    cpus = os.cpu_count() or 1
    if importlib.util.find_spec("xdist") is None or cpus < 8:
        return 0
    return min(8, cpus // 2)


def run_tests(tmp: Path, timeout: float, *, echo: bool = True, pytest_args=()) -> dict:
    """``pytest -m gpu`` over the modules holding gpu tests, in a child; the result as a dict."""
    junit, log = tmp / "gpu-tests.xml", tmp / "compile-tests.jsonl"
    files = gpu_test_files()
    base = {"command": "pytest -m gpu " + " ".join(files), "seconds": 0.0, "timed_out": False,
            "timeout_s": round(timeout), "output": "", "cases": [], "files": files}
    if importlib.util.find_spec("pytest") is None:
        return dict(base, returncode=None, error="pytest is not installed here: the GPU tests cannot run; hint: "
                                                 "pip install pytest pytest-timeout (or put them on PYTHONPATH)")
    if not files:
        return dict(base, returncode=5, error="no test module holds a test marked gpu")
    argv = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
            "-o", "junit_family=xunit1", "--continue-on-collection-errors", *files]
    if importlib.util.find_spec("pytest_timeout") is not None:
        argv.append(f"--timeout={TEST_TIMEOUT_S}")
    workers = xdist_workers()
    if workers:
        argv += ["-n", str(workers)]
    argv += list(pytest_args)
    part = run_part(argv, timeout, env=child_env(log), cwd=str(ROOT), echo=echo)
    cases = []
    if junit.exists():
        try:
            cases = parse_junit(junit)
        except ET.ParseError as e:
            part.error = f"unreadable JUnit file: {e}"
    return dict(base, command=" ".join(argv[1:]).replace(str(junit), "<junit>"), returncode=part.returncode,
                seconds=round(part.seconds, 1), timed_out=part.timed_out, error=part.error,
                output=cap(part.output, 100_000, 400_000), cases=cases, compile=read_compile_log(log),
                workers=workers)


def summarize_tests(tests: dict) -> list[dict]:
    """Summary lines of the test run: totals, then one line per test module with failures (at most
    ``FAMILY_LINES``; every failed test is listed in the report)."""
    cases = tests.get("cases", [])
    count = {k: sum(c["outcome"] == k for c in cases) for k in ("passed", "failed", "error", "skipped")}
    text = (f"{count['passed']} passed, {count['failed']} failed, {count['error']} errors, "
            f"{count['skipped']} skipped in {tests['seconds']:.0f} s")
    timing = _timing(tests)
    if timing:
        text += f" ({timing})"
    rc = tests.get("returncode")
    if tests.get("timed_out"):
        status, text = FAIL, f"killed after {tests['timeout_s']} s (time budget); " + text
    elif tests.get("error") and not cases:
        status, text = FAIL, tests["error"]
    elif rc == 5 or (rc == 0 and count["passed"] == 0):
        status, text = FAIL, "no test marked gpu was collected"
    elif rc != 0 or count["failed"] or count["error"]:
        status = FAIL
        if not cases:
            text = f"pytest exited with status {rc}: " + _one_line(tests.get("output", "")[-300:], 60)
    else:
        status = PASS
    out = [{"name": "gpu tests", "result": text, "status": status, "group": "tests"}]
    families: dict[str, list[dict]] = {}
    for c in cases:
        if c["outcome"] in ("failed", "error"):
            families.setdefault(c["name"].split("::", 1)[0].rsplit("/", 1)[-1], []).append(c)
    ranked = sorted(families.items(), key=lambda kv: -len(kv[1]))  # most failures first
    for i, (module, bad) in enumerate(ranked):
        if i == FAMILY_LINES:
            rest = sum(len(b) for _, b in ranked[i:])
            out.append({"name": f"  +{len(families) - i} more modules", "result": f"{rest} failed: see the report",
                        "status": FAIL, "group": "tests"})
            break
        first = bad[0]
        out.append({"name": f"  {module}", "result": f"{len(bad)} failed; first: {first['name'].rsplit('::', 1)[-1]}: "
                    + _one_line(first["message"], 40), "status": FAIL, "group": "tests"})
    return out


def compile_checks(parts: list[dict]) -> list[dict]:
    """One summary line for every part's compilations: kernels, seconds, and the kernels that failed."""
    logs = [p["compile"] for p in parts if p and p.get("compile")]
    if not logs:
        return []
    count, seconds = sum(c["count"] for c in logs), sum(c["seconds"] for c in logs)
    errors = [e for c in logs for e in c["errors"]]
    if errors:
        names = sorted({e["kernel"] for e in errors})
        more = " ..." if len(names) > 4 else ""
        text = f"{len(errors)} of {count} compilations FAILED: " + ", ".join(names[:4]) + more
        return [{"name": "kernel compiles", "result": _one_line(text, 90), "status": FAIL, "group": "compile"}]
    return [{"name": "kernel compiles", "result": f"{count} compiled (or loaded from cache) in {seconds:.0f} s, "
             f"0 errors", "status": PASS, "group": "compile"}]


# ------------------------------------------------------------------------------------------ benchmarks
def _registered() -> dict:
    from bench.__main__ import COMMANDS

    return COMMANDS


def bench_args(modname: str) -> list[str]:
    """``GPU_CHECK_ARGS`` of a benchmark module, read from its source (a list or tuple of strings literal)."""
    spec = importlib.util.find_spec(modname)
    if spec is None or not spec.origin:
        return list(DEFAULT_BENCH_ARGS)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "GPU_CHECK_ARGS" for t in targets):
                value = ast.literal_eval(node.value)
                if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
                    return list(value)
    return list(DEFAULT_BENCH_ARGS)


def read_rows(path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def run_bench(name: str, modname: str, tmp: Path, timeout: float, *, echo: bool = True) -> dict:
    csv_path = tmp / f"bench-{name}.csv"
    args = bench_args(modname)
    argv = [sys.executable, "-m", "bench", name, *args, "--csv", str(csv_path)]
    log = tmp / f"compile-{name}.jsonl"
    part = run_part(argv, timeout, env=child_env(log), cwd=str(ROOT), echo=echo)
    return {"name": name, "command": " ".join(argv[1:]).replace(str(csv_path), f"<{name}.csv>"),
            "returncode": part.returncode, "seconds": round(part.seconds, 1), "timed_out": part.timed_out,
            "timeout_s": round(timeout), "error": part.error, "output": cap(part.output), "rows": read_rows(csv_path),
            "compile": read_compile_log(log)}


def headline_checks(bench: dict) -> list[dict]:
    """Summary lines of one benchmark: how it ran, then its headline rows."""
    name = f"bench {bench['name']}"
    if bench.get("skipped"):
        return [{"name": name, "result": bench["skipped"], "status": SKIP, "group": "bench"}]
    rows = bench.get("rows", [])
    failed = [r for r in rows if r.get("status") == "failed"]
    if bench.get("timed_out"):
        head = {"name": name, "result": f"killed after {bench['timeout_s']} s (time budget)", "status": FAIL}
    elif bench.get("error"):
        head = {"name": name, "result": bench["error"], "status": FAIL}
    elif bench.get("returncode") != 0:
        def label(r):
            return str(r.get("op") or r.get("case") or r.get("model") or r.get("name") or "?")

        if failed:
            note = failed[0].get("note") or ""
            why = (f"{len(failed)} row(s) failed: " + ", ".join(label(r) for r in failed[:4])
                   + (f"; first: {_one_line(note, 60)}" if note else ""))
        else:
            why = f"exited with status {bench.get('returncode')}: " + _one_line(bench.get("output", "")[-200:], 50)
        head = {"name": name, "result": why, "status": FAIL}
    else:
        timing = _timing(bench)
        head = {"name": name, "result": f"ran: {len(rows)} rows in {bench['seconds']:.0f} s"
                + (f" ({timing})" if timing else ""), "status": PASS}
    head["group"] = "bench"
    out = [head]
    for r in rows:
        if r.get("headline"):
            status = r.get("headline_status") or INFO
            out.append({"name": f"  {bench['name']}: {r['headline']}", "result": r.get("headline_text", ""),
                        "status": status if status in (PASS, MISS, INFO) else INFO, "group": "headline"})
    return out


# ---------------------------------------------------------------------------------------------- report
def build_report(env: dict, tests: dict | None, benches: list[dict], seconds: float, budget: float,
                 preflight: dict | None = None) -> dict:
    """The whole result as one JSON-ready dict: environment, checks (the summary lines), preflight, tests,
    benches."""
    checks = [{"name": "environment", "result": _one_line(env.get("summary", "?"), 70), "status": INFO,
               "group": "env"}]
    if preflight is not None:
        checks += preflight_checks(preflight)[0]
    if tests is not None:
        checks += summarize_tests(tests)
    checks += compile_checks([preflight, tests, *benches])
    for b in benches:
        checks += headline_checks(b)
    over = seconds > 360
    checks.append({"name": "total time", "result": f"{seconds:.0f} s (budget {budget:.0f} s, limit 360 s)",
                   "status": FAIL if over else PASS, "group": "time"})
    report = {"environment": env, "checks": checks, "preflight": preflight, "tests": tests, "benches": benches,
              "seconds": round(seconds, 1), "budget_s": budget}
    report["exit_code"] = exit_code(report)
    return report


def exit_code(report: dict) -> int:
    """4 when tkernels cannot use the GPU; 1 when the GPU tests failed or a kernel failed to compile (see the
    module docstring); 3 when a benchmark failed or the whole check overran 6 minutes; else 0. A headline
    figure that misses its target (MISS) fails nothing."""
    failed = {c.get("group") for c in report.get("checks", []) if c["status"] == FAIL}
    if "gpu" in failed:
        return EXIT_GPU_UNUSABLE
    if failed & {"tests", "compile"}:
        return EXIT_TESTS_FAILED
    if failed & {"bench", "time"}:
        return EXIT_BENCH_FAILED
    return EXIT_OK


def render_summary(checks: list[dict], max_lines: int = SUMMARY_MAX_LINES, width: int | None = 96) -> str:
    """The short table printed last: one line per check, at most ``max_lines`` with the header, results cut to
    ``width`` characters (None: whole). When there are more lines, headline figures are cut first (then the
    rest), and a last line says how many are in the report."""
    if len(checks) > max_lines - 2:
        room = max_lines - 3
        keep = [c for c in checks if c.get("group") != "headline"][:room]
        keep += [c for c in checks if c.get("group") == "headline"][:room - len(keep)]
        order = {id(c): i for i, c in enumerate(checks)}
        shown = sorted(keep, key=lambda c: order[id(c)])
        shown.append({"name": f"+{len(checks) - len(shown)} more", "result": "lines in gpu-check.md",
                      "status": INFO})
        checks = shown
    if width is not None:
        def short(name: str) -> str:
            indent = len(name) - len(name.lstrip())
            return " " * indent + _one_line(name.strip(), 44 - indent)

        checks = [dict(c, name=short(c["name"]), result=_one_line(c["result"], width)) for c in checks]
    w1 = max([len("check")] + [len(c["name"]) for c in checks])
    w2 = max([len("result")] + [len(c["result"]) for c in checks])
    lines = [f"{'check'.ljust(w1)}  {'result'.ljust(w2)}  status", f"{'-' * w1}  {'-' * w2}  ------"]
    lines += [f"{c['name'].ljust(w1)}  {c['result'].ljust(w2)}  {c['status']}" for c in checks]
    return "\n".join(lines)


def _fence(text: str) -> str:
    return "```\n" + text.rstrip("\n").replace("```", "'''") + "\n```"


EXIT_TEXT = ("0: all passed; 1: a GPU test failed or a kernel did not compile; 3: a benchmark failed or overran; "
             "4: tkernels cannot use the GPU")


def render_markdown(report: dict) -> str:
    env, tests = report["environment"], report.get("tests")
    out = [f"# GPU check, {env.get('date', '')}", "",
           f"Exit status {report['exit_code']} ({EXIT_TEXT}). Total {report['seconds']:.0f} s.", "", "## Summary",
           "", _fence(render_summary(report["checks"], max_lines=1 << 30, width=None)), "", "## Environment", ""]
    width = max(len(k) for k in env)
    out += [f"- {k.ljust(width)} : {v}" for k, v in env.items()]
    pre = report.get("preflight")
    if pre is not None:
        out += ["", "## Preflight", "", _fence(json.dumps({k: v for k, v in pre.items() if k != "output"}, indent=1,
                                                          default=str)), "", _fence(pre.get("output", ""))]
    parts = [("preflight", pre), ("gpu tests", tests)] + [(f"bench {b['name']}", b) for b in report.get("benches", [])]
    rows = [(name, p) for name, p in parts if p and p.get("compile")]
    if rows:
        out += ["", "## Compile times (cold or warm Triton cache)", "",
                "| part | kernels | compile s | run s | errors |", "|:--|--:|--:|--:|--:|"]
        out += [f"| {name} | {p['compile']['count']} | {p['compile']['seconds']:.1f} | "
                f"{max(0.0, p.get('seconds', 0.0) - p['compile']['seconds']):.1f} | {len(p['compile']['errors'])} |"
                for name, p in rows]
        for name, p in rows:
            for e in p["compile"]["errors"]:
                out += ["", f"### compile error in {name}: {e['kernel']}", "", _fence(e["error"])]
    if tests is not None:
        out += ["", "## GPU tests", "", f"`{tests['command']}`: exit status {tests['returncode']}, "
                f"{tests['seconds']:.0f} s" + (" (killed: time budget)" if tests.get("timed_out") else ""), ""]
        if tests.get("cases"):
            out += ["| test | outcome | s | message |", "|:--|:--|--:|:--|"]
            out += [f"| {c['name']} | {c['outcome']} | {c['seconds']:.2f} | "
                    f"{_one_line(c['message'], 120).replace('|', chr(92) + '|')} |" for c in tests["cases"]]
        bad = [c for c in tests.get("cases", []) if c["outcome"] in ("failed", "error")]
        for c in bad:
            out += ["", f"### {c['name']}", "", _fence(c["message"])]
        out += ["", "pytest's full output is in `gpu-tests.log`."]
    for b in report.get("benches", []):
        out += ["", f"## bench {b['name']}", ""]
        if b.get("skipped"):
            out.append(b["skipped"])
            continue
        out += [f"`{b['command']}`: exit status {b['returncode']}, {b['seconds']:.0f} s"
                + (" (killed: time budget)" if b.get("timed_out") else ""), "", _fence(b.get("output", ""))]
    return "\n".join(out) + "\n"


def write_report(report: dict, out_dir) -> list[Path]:
    """``gpu-check.md``, ``gpu-check.json`` and (with a test run) ``gpu-tests.log`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "gpu-check.md", out / "gpu-check.json"]
    paths[0].write_text(render_markdown(report), encoding="utf-8")
    paths[1].write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    if report.get("tests") is not None:
        paths.append(out / "gpu-tests.log")
        paths[2].write_text(report["tests"].get("output", ""), encoding="utf-8")
    return paths


# ------------------------------------------------------------------------------------------------ main
@dataclass
class _Clock:
    budget: float
    t0: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.t0)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0


def default_out_dir() -> Path:
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"])
    return ROOT / "bench" / "results" / f"gpu-check-{_datetime.date.today().isoformat()}"


def _note(msg: str) -> None:
    print(f"[gpu_check] {msg}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=f"exit status: {EXIT_TEXT}; 2: usage error")
    p.add_argument("--out", metavar="DIR", help="report folder (default: $OUT, else bench/results/gpu-check-<date>)")
    p.add_argument("--budget", type=float, default=TOTAL_BUDGET_S, metavar="S",
                   help=f"seconds for the whole check (default {TOTAL_BUDGET_S:g}); every part's slot scales with it")
    p.add_argument("--skip-tests", action="store_true", help="do not run the GPU tests")
    p.add_argument("--skip-bench", action="store_true", help="do not run the benchmarks")
    p.add_argument("--quiet", action="store_true", help="do not echo the children's output as it comes")
    p.add_argument("-k", dest="keyword", metavar="EXPR", help="only the GPU tests matching EXPR (pytest -k)")
    args = p.parse_args(argv)
    if args.budget <= 0:
        p.error(f"--budget must be > 0, got {args.budget}")
    clock = _Clock(args.budget)
    scale = args.budget / TOTAL_BUDGET_S  # a slower machine (CI's 2 cores, on the fake driver) asks for more time

    gpu = probe_gpu()
    if not gpu["ok"]:
        code, message = diagnose_no_gpu(gpu)
        print(message)
        return code
    env = environment(gpu)
    width = max(len(k) for k in env)
    _note("environment:\n" + "\n".join(f"  {k.ljust(width)} : {v}" for k, v in env.items() if k != "summary"))
    _note(f"budget {args.budget:.0f} s")
    echo = not args.quiet
    out_dir = Path(args.out) if args.out else default_out_dir()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmpdir:
        tmp = Path(tmpdir)
        commands = _registered() if not args.skip_bench else {}
        plan = [(n, s) for n, s in BENCHES if n in commands]
        _note(f"preflight: tkernels on the GPU (at most {PREFLIGHT_S * scale:.0f} s)")
        preflight = run_preflight(tmp, PREFLIGHT_S * scale, echo=echo)
        fatal = preflight_checks(preflight)[1]
        tests, benches = None, []
        if fatal is None and not args.skip_tests:
            reserve = BENCH_MIN_S * scale * len(plan)
            timeout = max(10.0, min(TESTS_BUDGET_S * scale, clock.left() - reserve))
            _note(f"GPU tests: pytest -m gpu (at most {timeout:.0f} s)")
            tests = run_tests(tmp, timeout, echo=echo, pytest_args=(["-k", args.keyword] if args.keyword else []))
        for name, most in BENCHES:
            if args.skip_bench or fatal is not None:
                break
            if name not in commands:
                benches.append({"name": name, "skipped": "not registered in bench/__main__.py yet: skipped"})
                continue
            later = len(plan) - 1 - plan.index((name, most))
            timeout = min(most * scale, clock.left() - BENCH_MIN_S * scale * later)
            if timeout < 5:
                benches.append({"name": name, "returncode": None, "seconds": 0.0, "timed_out": True,
                                "timeout_s": 0, "error": "no time left in the budget", "output": "", "rows": []})
                continue
            _note(f"bench {name} (at most {timeout:.0f} s)")
            benches.append(run_bench(name, commands[name][0], tmp, timeout, echo=echo))
        report = build_report(env, tests, benches, clock.elapsed(), args.budget, preflight=preflight)
    paths = write_report(report, out_dir)
    print(f"\nreport: {', '.join(str(x) for x in paths)}\n", file=sys.stderr)
    print(render_summary(report["checks"]))
    if fatal is not None:
        print(f"GPU check FAILED: this machine has a GPU ({env.get('gpu', '?')}) but tkernels cannot use it: {fatal}")
    print(f"exit status {report['exit_code']} ({EXIT_TEXT})")
    return report["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
