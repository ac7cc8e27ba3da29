"""``bench.gpu_check`` without a GPU (it says so and exits 0), with a GPU it cannot use (device nodes but no
driver: it says so and exits 4), its report writer and orchestration on fake results, its child runner's time
limit; ``python -m bench alloc --quick`` and ``python -m bench launch --quick`` in interpreted mode. The whole
check on the fake driver: tests/bench/test_gpu_check_fake_driver.py."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import textwrap
import time

import pytest

from bench import gpu_check as gc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("FAKE_LIBCUDA", "TRITON_INTERPRET",
                                                            "TKERNELS_NVIDIA_DEV_DIR")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p), **extra)
    return env


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """``bench alloc --quick`` and ``bench launch --quick`` started together (interpreted cuda), their results."""
    tmp = tmp_path_factory.mktemp("quick")
    procs = {}
    for name in ("alloc", "launch"):
        path = tmp / f"{name}.csv"
        procs[name] = (subprocess.Popen([sys.executable, "-m", "bench", name, "--quick", "--csv", str(path)],
                                        cwd=ROOT, env=_env(TKERNELS_INTERPRET="1"), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True), path)
    out = {}
    for name, (p, path) in procs.items():
        stdout, stderr = p.communicate(timeout=120)
        rows = list(csv.DictReader(open(path, newline="", encoding="utf-8"))) if path.exists() else []
        out[name] = (p.returncode, stdout, stderr, rows)
    return out


def _positive(v) -> bool:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and x > 0


# ------------------------------------------------------------------------------------------ no GPU at all
def test_no_gpu_says_so_and_exits_0(tmp_path):
    if gc.probe_gpu()["ok"]:
        pytest.skip("a (real or fake) CUDA driver with a device is visible: the no-GPU path cannot be tested")
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--out", str(out)], cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("no GPU: nothing to check (")
    assert not out.exists()  # nothing written


def test_a_gpu_that_tkernels_cannot_use_fails_the_check(tmp_path):
    """Device nodes say there is an NVIDIA GPU, but no driver library loads: exit 4, naming the evidence and the
    cause (the old check printed "no GPU" and exited 0, and tkernels fell back to the cpu without a word)."""
    if gc.probe_gpu()["ok"]:
        pytest.skip("a (real or fake) CUDA driver with a device is visible")
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia0").write_text("")
    (dev / "nvidiactl").write_text("")  # not a GPU node
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--out", str(out)], cwd=ROOT,
                       env=_env(TKERNELS_NVIDIA_DEV_DIR=str(dev)), capture_output=True, text=True, timeout=60)
    assert r.returncode == gc.EXIT_GPU_UNUSABLE == 4, (r.stdout, r.stderr)
    assert r.stdout.startswith("GPU check FAILED: this machine has an NVIDIA GPU (device node ")
    assert f"{dev}/nvidia0" in r.stdout and "nvidiactl" not in r.stdout
    assert "tkernels cannot use it: " in r.stdout
    # the library itself warns once instead of silently running on the cpu
    code = "import warnings, tkernels.cuda as c; warnings.simplefilter('error'); c.is_available()"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(TKERNELS_NVIDIA_DEV_DIR=str(dev),
                                                                         TKERNELS_INTERPRET="0"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "RuntimeWarning: tkernels.cuda: this machine has an NVIDIA GPU" in r.stderr
    assert "cuda is unavailable and work stays on the cpu" in r.stderr


def test_missing_driver_bindings_name_the_package_and_the_fix():
    """Without ``cuda.bindings`` (cuda-python 12.6.0 has none): the error names what is installed and the fix."""
    code = textwrap.dedent("""
        import sys
        class Block:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == "cuda.bindings" or name.startswith("cuda.bindings."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, Block)
        from tkernels.cuda.runtime import import_driver_bindings
        try:
            import_driver_bindings()
        except ImportError as e:
            print(e)
        import tkernels.cuda as c
        print("available:", c.is_available(), "|", c.get_runtime().unavailable_reason)
        """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(TKERNELS_INTERPRET="0"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.strip().splitlines()
    assert "needs the CUDA driver bindings cuda.bindings.driver (cuda-bindings>=12.8)" in first
    assert "installed: cuda-bindings " in first or "installed: cuda-python " in first
    assert "hint: pip install 'cuda-bindings>=12.8'" in first
    assert second.startswith("available: False | ImportError: tkernels.cuda needs the CUDA driver bindings")


def test_gpu_test_files_hold_gpu_tests_and_import_without_the_dev_extras():
    """The check's test step runs only modules with tests marked gpu, and those import nothing that the GPU
    machine may lack (hypothesis, scikit-learn, safetensors, matplotlib, mygrad, torch)."""
    import ast

    files = gc.gpu_test_files()
    assert "tests/tkernels/cuda/test_gpu.py" in files and "tests/tkernels/cuda/test_matmul_kernels.py" in files
    assert "tests/tkernels/test_properties.py" not in files  # hypothesis-based, no gpu tests
    dev_only = {"hypothesis", "sklearn", "safetensors", "matplotlib", "mygrad", "torch", "scipy"}
    for f in [*files, "tests/conftest.py"]:
        tree = ast.parse(open(os.path.join(ROOT, f), encoding="utf-8").read())
        for node in tree.body:  # module level: what collection imports
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad = {n.split(".")[0] for n in names} & dev_only
            assert not bad, f"{f} imports {bad} at module level: the GPU check could not collect it"


def test_probe_reports_why_without_a_gpu():
    probe = gc.probe_gpu()
    if probe["ok"]:
        assert probe["capability"][0] >= 1 and probe["total_memory"] > 0 and probe["driver_version"]
    else:
        assert probe["reason"]


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as e:
        gc.main(["--budget", "0"])
    assert e.value.code == 2 and "--budget" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- report on fake results
def _fake_tests(*outcomes):
    cases = [{"name": f"tests/tkernels/cuda/test_gpu.py::test_{i}_{o}", "outcome": o, "seconds": 0.5,
              "message": "" if o in ("passed",) else f"AssertionError: case {i} went {o}\nsecond line"}
             for i, o in enumerate(outcomes)]
    bad = any(o in ("failed", "error") for o in outcomes)
    return {"command": "pytest -m gpu -q tests", "returncode": 1 if bad else 0, "seconds": 42.0, "timed_out": False,
            "timeout_s": 175, "error": None, "output": "....F\n1 failed, 4 passed", "cases": cases}


def _fake_benches(alloc_rc=0):
    rows = [{"op": "cuda 512 B", "status": "ok", "headline": "allocator cache hit (cuda, 512 B)",
             "headline_text": "1.10 µs (target ≤ 2 µs)", "headline_status": "PASS"},
            {"op": "cuda 64 MiB", "status": "failed" if alloc_rc else "ok", "headline": ""}]
    return [
        {"name": "alloc", "command": "bench alloc", "returncode": alloc_rc, "seconds": 12.0, "timed_out": False,
         "timeout_s": 40, "error": None, "output": "### table\n| a | b |", "rows": rows},
        {"name": "launch", "command": "bench launch", "returncode": 0, "seconds": 9.0, "timed_out": False,
         "timeout_s": 50, "error": None, "output": "ok",
         "rows": [{"op": "tk.add(x, y)", "status": "ok", "headline": "tk.add host time (4 elements)",
                   "headline_text": "14.0 µs (target ≤ 10 µs)", "headline_status": "MISS"}]},
        {"name": "ops", "skipped": "not registered in bench/__main__.py yet: skipped"},
    ]


ENV = {"date": "2026-11-30 12:00 UTC", "gpu": "NVIDIA H200 (sm_90, 140 GiB, 132 SMs, 1 device(s))",
       "driver": "CUDA 13.0", "triton": "3.6.0", "summary": "NVIDIA H200 sm_90, CUDA 13.0, triton 3.6.0"}


def test_report_writer_on_fake_results(tmp_path):
    report = gc.build_report(ENV, _fake_tests("passed", "failed", "error", "skipped", "passed"), _fake_benches(),
                             80.0, 345.0)
    assert report["exit_code"] == gc.EXIT_TESTS_FAILED
    paths = gc.write_report(report, tmp_path / "out")
    assert [p.name for p in paths] == ["gpu-check.md", "gpu-check.json", "gpu-tests.log"]
    data = json.loads(paths[1].read_text(encoding="utf-8"))
    assert data["exit_code"] == 1 and data["environment"]["triton"] == "3.6.0"
    assert [c["status"] for c in data["checks"]][:3] == ["INFO", "FAIL", "FAIL"]
    md = paths[0].read_text(encoding="utf-8")
    for text in ("# GPU check", "## Summary", "## Environment", "## GPU tests", "## bench alloc", "## bench ops",
                 "test_1_failed", "AssertionError: case 2 went error", "not registered", "| a | b |"):
        assert text in md, text
    assert paths[2].read_text(encoding="utf-8").endswith("1 failed, 4 passed")

    summary = gc.render_summary(report["checks"]).splitlines()
    assert summary[0].split() == ["check", "result", "status"]
    assert all(len(line) <= 160 for line in summary)  # short lines
    w1 = len(summary[1].split()[0])
    lines = {line[:w1].strip(): line for line in summary[2:]}
    assert lines["gpu tests"].endswith("FAIL") and "2 passed, 1 failed, 1 errors, 1 skipped" in lines["gpu tests"]
    # failures summarised per test module (the family), the first one named; every one is in the report
    assert lines["test_gpu.py"].endswith("FAIL") and "2 failed; first: test_1_failed: AssertionError: case 1" \
        in lines["test_gpu.py"]
    assert lines["alloc: allocator cache hit (cuda, 512 B)"].endswith("PASS")
    assert lines["launch: tk.add host time (4 elements)"].endswith("MISS")
    assert lines["bench ops"].endswith("SKIP") and lines["total time"].endswith("PASS")


@pytest.mark.parametrize("tests, alloc_rc, seconds, code", [
    (("passed", "passed"), 0, 80.0, gc.EXIT_OK),  # a MISSed target fails nothing
    (("passed", "passed"), 1, 80.0, gc.EXIT_BENCH_FAILED),
    (("passed", "failed"), 1, 80.0, gc.EXIT_TESTS_FAILED),
    (("passed",), 0, 400.0, gc.EXIT_BENCH_FAILED),  # past 6 minutes
])
def test_exit_codes(tests, alloc_rc, seconds, code):
    report = gc.build_report(ENV, _fake_tests(*tests), _fake_benches(alloc_rc), seconds, 345.0)
    assert report["exit_code"] == code
    if alloc_rc:
        (line,) = [c for c in report["checks"] if c["name"] == "bench alloc"]
        assert line["status"] == "FAIL" and "1 row(s) failed: cuda 64 MiB" in line["result"]


def test_test_run_summaries():
    none = dict(_fake_tests(), returncode=5, cases=[])
    assert gc.summarize_tests(none)[0]["result"] == "no test marked gpu was collected"
    killed = dict(_fake_tests("passed"), returncode=None, timed_out=True)
    (line,) = gc.summarize_tests(killed)
    assert line["status"] == "FAIL" and line["result"].startswith("killed after 175 s")
    crashed = dict(_fake_tests(), returncode=3, cases=[], output="INTERNALERROR> boom")
    assert "pytest exited with status 3" in gc.summarize_tests(crashed)[0]["result"]
    timed = {"name": "ops", "returncode": None, "seconds": 80.0, "timed_out": True, "timeout_s": 80, "error": None,
             "output": "", "rows": []}
    assert gc.headline_checks(timed)[0]["result"] == "killed after 80 s (time budget)"


def test_parse_junit(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(textwrap.dedent("""\
        <?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4">
        <testcase classname="tests.tkernels.cuda.test_gpu" name="test_a" time="1.5"/>
        <testcase classname="tests.tkernels.cuda.test_gpu" name="test_b" time="0.1">
          <failure message="AssertionError: allocation re-used too soon">trace</failure></testcase>
        <testcase classname="" name="tests.tkernels.test_x" time="0"><error message="collection failure">x</error>
        </testcase>
        <testcase classname="tests.t" name="test_c" time="0"><skipped message="needs a GPU"/></testcase>
        </testsuite></testsuites>"""))
    cases = gc.parse_junit(xml)
    assert [(c["name"], c["outcome"]) for c in cases] == [
        ("tests/tkernels/cuda/test_gpu.py::test_a", "passed"), ("tests/tkernels/cuda/test_gpu.py::test_b", "failed"),
        ("tests.tkernels.test_x", "error"), ("tests/t.py::test_c", "skipped")]
    assert cases[1]["message"] == "AssertionError: allocation re-used too soon" and cases[0]["seconds"] == 1.5


def test_bench_args_from_source():
    assert gc.bench_args("bench.alloc") == [] and gc.bench_args("bench.launch") == []
    assert gc.bench_args("bench.overhead") == ["--quick"]  # no GPU_CHECK_ARGS: the default


def test_main_orchestrates_parts_and_prints_the_summary_last(tmp_path, monkeypatch, capsys):
    """main() with a fake GPU and fake parts: each part gets a time limit inside the budget, the report is
    written, the short table comes last on stdout, the exit status follows the tests."""
    limits = {}
    monkeypatch.setattr(gc, "probe_gpu", lambda: {"ok": True, "name": "Fake GPU", "device_count": 1,
                                                  "capability": [9, 0], "sm_count": 132, "total_memory": 1 << 37,
                                                  "driver_version": "13.0", "driver_version_int": 13000})

    def fake_tests(tmp, timeout, *, echo=True, pytest_args=()):
        limits["tests"] = timeout
        return _fake_tests("passed", "failed")

    def fake_bench(name, modname, tmp, timeout, *, echo=True):
        limits[name] = timeout
        return dict(_fake_benches()[0], name=name)

    def fake_preflight(tmp, timeout, *, echo=True):
        limits["preflight"] = timeout
        return {"returncode": 0, "seconds": 3.0, "available": True, "interpreted": False, "device": "Fake GPU",
                "first_kernel_s": 2.5, "value_ok": True, "torch_imported": False, "output": "",
                "compile": {"count": 1, "seconds": 2.0, "errors": []}}

    monkeypatch.setattr(gc, "run_preflight", fake_preflight)
    monkeypatch.setattr(gc, "run_tests", fake_tests)
    monkeypatch.setattr(gc, "run_bench", fake_bench)
    monkeypatch.setattr(gc, "_registered", lambda: {"alloc": ("bench.alloc", ""), "launch": ("bench.launch", "")})
    code = gc.main(["--out", str(tmp_path), "--quiet", "--budget", "100"])
    assert code == gc.EXIT_TESTS_FAILED
    scale = 100 / gc.TOTAL_BUDGET_S  # every slot scales with the budget
    assert limits["preflight"] == pytest.approx(gc.PREFLIGHT_S * scale)
    assert limits["tests"] == pytest.approx(gc.TESTS_BUDGET_S * scale, abs=1)
    assert limits["alloc"] <= 25 * scale + 1e-9 and limits["launch"] <= 35 * scale + 1e-9
    out = capsys.readouterr().out.rstrip().splitlines()
    assert out[-1].startswith("exit status 1") and out[-2].startswith("total time")
    assert (tmp_path / "gpu-check.md").exists() and (tmp_path / "gpu-check.json").exists()
    report = json.loads((tmp_path / "gpu-check.json").read_text(encoding="utf-8"))
    assert [b.get("name") for b in report["benches"]] == ["alloc", "launch", "ops", "train"]
    assert report["benches"][2]["skipped"].startswith("not registered")


# ------------------------------------------------------------------------------------------- child runner
def test_run_part_kills_an_overrunning_child_and_its_children(tmp_path):
    code = textwrap.dedent("""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("grandchild", p.pid, flush=True)
        time.sleep(60)
        """)
    t0 = time.monotonic()
    res = gc.run_part([sys.executable, "-c", code], 2.0, echo=False)
    assert res.timed_out and res.returncode is None and time.monotonic() - t0 < 15
    pid = int(res.output.split()[1])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as f:
                if "\nState:\tZ" in f.read():
                    break  # killed, waiting to be reaped
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the grandchild {pid} survived the time limit")


def test_run_part_returns_output_and_status():
    res = gc.run_part([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], 30, echo=False)
    assert (res.returncode, res.timed_out, res.output) == (3, False, "hello\n")


# ------------------------------------------------------------------------------------ the two benchmarks
def test_alloc_quick_prints_positive_finite_figures(quick_runs):
    rc, stdout, stderr, rows = quick_runs["alloc"]
    assert rc == 0, f"{stdout[-3000:]}\n{stderr[-3000:]}"
    alloc = [r for r in rows if r["table"] == "allocator"]
    assert {(r["backend"], r["size"]) for r in alloc} >= {(b, s) for b in ("fake", "host")
                                                           for s in ("512 B", "64 KiB", "4 MiB", "64 MiB")}
    for r in alloc:
        assert r["status"] == "ok", r
        for key in ("hit_us", "miss_us", "miss_per_hit"):
            assert _positive(r[key]), (r["backend"], r["size"], key, r[key])
    empty = [r for r in rows if r["table"] == "empty"]
    assert [r["size"] for r in empty] == ["512 B", "64 KiB", "4 MiB", "64 MiB"]
    for r in empty:
        assert r["status"] == "ok", r
        for key in ("tk_cpu_us", "np_us", "cpu_ratio", "tk_cuda_us"):
            assert _positive(r[key]), (r["size"], key, r[key])
    (head,) = [r for r in rows if r.get("headline")]
    assert head["headline"] == "allocator cache hit (fake, 512 B)" and head["headline_status"] in ("PASS", "MISS")
    assert "### CachingAllocator malloc + free" in stdout and "| fake    | 512 B" in stdout


def test_launch_quick_runs_interpreted(quick_runs):
    rc, stdout, stderr, rows = quick_runs["launch"]
    assert rc == 0, f"{stdout[-3000:]}\n{stderr[-3000:]}"
    assert "launch figures need a GPU" in stdout
    ops = {r["op"]: r for r in rows}
    assert set(ops) >= {"tk.add on cpu", "tk.empty", "tk.add, launch stubbed", "launch helper", "tk.add(x, y)"}
    for r in ops.values():
        assert r["status"] == "ok" and _positive(r["us"]), r
    # the interpreter runs the kernel: far slower than our own preparation of the launch
    assert float(ops["tk.add(x, y)"]["us"]) > float(ops["tk.add, launch stubbed"]["us"])


# ------------------------------------------------------------------ the table's size, compiles, preflight
def test_summary_is_at_most_25_lines_and_names_failing_modules():
    cases = [{"name": f"tests/tkernels/cuda/test_m{i % 9}.py::test_{i}", "outcome": "failed", "seconds": 0.1,
              "message": f"AssertionError: {i}"} for i in range(40)]
    tests = dict(_fake_tests(), returncode=1, cases=cases)
    benches = [dict(_fake_benches()[0], name=f"b{j}", rows=[
        {"op": f"r{k}", "status": "ok", "headline": f"figure {j}.{k}", "headline_text": "1 µs",
         "headline_status": "PASS"} for k in range(6)]) for j in range(3)]
    report = gc.build_report(ENV, tests, benches, 100.0, 345.0)
    summary = gc.render_summary(report["checks"]).splitlines()
    assert len(summary) <= gc.SUMMARY_MAX_LINES and summary[-1].startswith("+")
    assert "lines in gpu-check.md" in summary[-1]
    assert all(len(line) <= 160 for line in summary)
    text = "\n".join(summary)
    assert "gpu tests" in text and "bench b2" in text and "total time" in text  # no part is cut
    assert sum("failed; first:" in line for line in summary) == gc.FAMILY_LINES and "+3 more modules" in text
    md = gc.render_markdown(report)
    assert all(f"test_{i}" in md for i in range(40)) and "figure 2.5" in md  # the report keeps everything


def test_a_kernel_that_does_not_compile_fails_the_check():
    tests = dict(_fake_tests("passed"), compile={"count": 3, "seconds": 4.0, "errors": [
        {"kernel": "matmul_kernel", "error": "CompilationError: at 12:4: dot out_dtype"}]})
    report = gc.build_report(ENV, tests, [], 50.0, 345.0)
    (line,) = [c for c in report["checks"] if c["name"] == "kernel compiles"]
    assert line["status"] == "FAIL" and "1 of 3 compilations FAILED: matmul_kernel" in line["result"]
    assert report["exit_code"] == gc.EXIT_TESTS_FAILED
    md = gc.render_markdown(report)
    assert "### compile error in gpu tests: matmul_kernel" in md and "dot out_dtype" in md
    ok = gc.build_report(ENV, dict(_fake_tests("passed"), compile={"count": 3, "seconds": 4.0, "errors": []}),
                         [], 50.0, 345.0)
    assert ok["exit_code"] == gc.EXIT_OK and "compile 4 s/3 kernels, run 38 s" in ok["checks"][1]["result"]


@pytest.mark.parametrize("pre, code, text", [
    ({"returncode": 0, "available": False, "interpreted": False, "reason": "cuInit failed"}, 4,
     "available=False, interpreted=False: cuInit failed"),
    ({"returncode": 0, "available": True, "interpreted": True}, 4, "interpreted=True"),
    ({"returncode": None, "timed_out": True, "timeout_s": 60}, 4, "did not finish in 60 s"),
    ({"returncode": 1, "error": None, "output": "Traceback...\nImportError: libcuda"}, 4, "ImportError: libcuda"),
    ({"returncode": 0, "available": True, "interpreted": False, "device": "X", "first_kernel_s": 1.0,
      "value_ok": True, "torch_imported": True}, 1, "torch imported"),
    ({"returncode": 0, "available": True, "interpreted": False, "device": "X", "first_kernel_s": 1.0,
      "value_ok": False, "torch_imported": False}, 1, "result WRONG"),
])
def test_preflight_outcomes(pre, code, text):
    report = gc.build_report(ENV, None, [], 10.0, 345.0, preflight=pre)
    (line,) = [c for c in report["checks"] if c["name"] == "preflight"]
    assert line["status"] == "FAIL" and text in line["result"], line
    assert report["exit_code"] == code
