"""``bench.gpu_check`` without a GPU (it says so and exits 0), its report writer and orchestration on fake results,
its child runner's time limit; ``python -m bench alloc --quick`` and ``python -m bench launch --quick`` in
interpreted mode."""

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
    env = {k: v for k, v in os.environ.items() if k not in ("FAKE_LIBCUDA", "TRITON_INTERPRET")}
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
    assert [c["status"] for c in data["checks"]][:4] == ["INFO", "FAIL", "FAIL", "FAIL"]
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
    assert lines["test_1_failed"].endswith("FAIL") and "case 1 went failed" in lines["test_1_failed"]
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

    monkeypatch.setattr(gc, "run_tests", fake_tests)
    monkeypatch.setattr(gc, "run_bench", fake_bench)
    monkeypatch.setattr(gc, "_registered", lambda: {"alloc": ("bench.alloc", ""), "launch": ("bench.launch", "")})
    code = gc.main(["--out", str(tmp_path), "--quiet", "--budget", "100"])
    assert code == gc.EXIT_TESTS_FAILED
    assert limits["tests"] == pytest.approx(100 - 2 * gc.BENCH_MIN_S, abs=1)
    assert limits["alloc"] <= 40 and limits["launch"] <= 50
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
