"""The bench CLI and its pieces: `python -m bench overhead --quick` end to end (a few seconds), the timer,
the table renderer and the CSV writer."""

import csv
import math
import os
import resource
import subprocess
import sys
import time

import pytest

from bench import report
from bench.__main__ import COMMANDS, main
from bench.timing import CPUTimer, Timer, measure, time_per_call

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMALL_OPS = ["add", "add (scalar)", "multiply", "exp", "sum", "sum (axis=1)", "matmul", "reshape", "permute_dims",
             "getitem (slices)", "astype", "where", "asarray", "empty", "zeros"]
LARGE_OPS = ["add", "add (out=)", "exp", "sum", "matmul", "matmul"]
OPTIONAL_LARGE_OPS = ["softmax", "layer_norm"]  # tkernels.ops: measured when present, else skipped with a note


def _children_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


# ------------------------------------------------------------------------------------------------ the CLI
def test_help_lists_every_benchmark(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name, (_, help_) in COMMANDS.items():
        assert name in out and help_ in out


def test_benchmark_help_shows_common_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["overhead", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--quick", "--repeat", "--csv", "--out", "--machine"):
        assert opt in out


def test_unknown_benchmark_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["nope", "--quick"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'nope'" in err and "overhead" in err


def test_no_benchmark_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "overhead" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [["--repeat", "0"], ["--min-time", "-1"], ["--settle", "-1"]])
def test_bad_common_option_is_refused(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["overhead", *bad])
    assert e.value.code == 2
    assert bad[0] in capsys.readouterr().err


def test_overhead_quick_end_to_end(tmp_path):
    """The real command in a fresh interpreter: environment first, both tables, every row, sane ratios, files."""
    csv_path = tmp_path / "x.csv"
    out_dir = tmp_path / "results"
    cpu0 = _children_cpu_seconds()
    proc = subprocess.run([sys.executable, "-m", "bench", "overhead", "--quick", "--csv", str(csv_path),
                           "--out", str(out_dir), "--machine", "testbox"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    cpu = _children_cpu_seconds() - cpu0
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    # CPU time, not wall time: a loaded CI machine must not make this fail; about 1.5 s when alone
    assert cpu < 10, f"--quick used {cpu:.1f} s of CPU"
    out = proc.stdout
    for key in ("- cpu", "- cores", "- numpy", "- blas", "- tkernels", "- date"):
        assert key in out
    assert out.index("- numpy") < out.index("### Per-call time") < out.index("### Throughput")

    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    small = [r for r in rows if r["table"] == "small"]
    large = [r for r in rows if r["table"] == "large"]
    assert [r["op"] for r in small] == SMALL_OPS
    assert [r["op"] for r in large] == LARGE_OPS + OPTIONAL_LARGE_OPS
    for r in rows:
        if r["op"] in OPTIONAL_LARGE_OPS and r["status"] == "skipped":
            assert "does not exist yet" in r["note"]
            continue
        assert r["status"] == "ok", f"{r['table']} {r['op']}: {r['note']}"
        for key in ("ratio", "tk_s", "np_s"):
            v = float(r[key])
            assert math.isfinite(v) and v > 0, f"{r['table']} {r['op']}: {key}={r[key]}"
        assert f"| {r['op']}" in out  # the row is printed too

    md = list(out_dir.glob("*-testbox-overhead.md"))
    assert len(md) == 1 and (out_dir / (md[0].stem + ".csv")).exists()
    assert "### Throughput" in md[0].read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------------ timing
def test_timer_measures_a_known_duration():
    def spin():  # busy for 2 ms of wall time (sleep would overshoot on a loaded machine)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.002:
            pass

    timer = CPUTimer(min_time=0.005, repeat=3, warmup=1)
    t = time_per_call(spin, timer=timer)
    assert 0.0019 <= t < 0.1  # loose above: a loaded machine preempts the spin (exact checks: FakeClockTimer)


class FakeClockTimer(Timer):
    """Each call 'takes' ``cost`` seconds and the loop adds ``overhead`` per call: measure's arithmetic, exactly."""

    name = "fake"

    def __init__(self, cost, overhead, **kw):
        super().__init__(**kw)
        self.cost, self.overhead, self.calls = cost, overhead, 0

    def sample(self, fn, loops):
        for _ in range(loops):
            fn()
        self.calls += loops
        return loops * (self.cost + self.overhead)


def test_measure_calibrates_loops_and_subtracts_the_loop_overhead():
    timer = FakeClockTimer(1e-3, 2e-6, min_time=5e-3, repeat=4, warmup=2)
    (m,) = measure(lambda: None, timer=timer)
    assert m.loops == 6  # 1 call: 1 ms < 5 ms, so ceil(1.2 * 5 / 1) = 6 calls per sample
    assert m.seconds == pytest.approx(1e-3) and m.p20 == pytest.approx(1e-3) and len(m.samples) == 4
    assert timer.calls == 1 + 6 + 4 * 6  # calibration tries, then 4 samples (warm-up calls are not samples)
    timer = FakeClockTimer(1e-7, 0.0, min_time=1e-3, repeat=1, warmup=0)
    assert 1e4 <= measure(lambda: None, timer=timer)[0].loops <= 1.3e4  # tiny calls: x10 steps, then aim at 1 ms


def test_measure_interleaves_and_orders_percentiles():
    calls = []
    timer = CPUTimer(min_time=0.001, repeat=5, warmup=2)
    m1, m2 = measure(lambda: calls.append(1), lambda: calls.append(2), timer=timer)
    for m in (m1, m2):
        assert m.loops >= 1 and len(m.samples) == 5
        assert 0 < m.p20 <= m.seconds <= m.p80
    assert calls.count(1) >= 2 + 5 * m1.loops and calls.count(2) >= 2 + 5 * m2.loops


def test_measure_settles_before_each_interleaved_sample(monkeypatch):
    import bench.timing as timing

    events = []
    monkeypatch.setattr(timing.time, "sleep", lambda s: events.append(("sleep", s)))
    timer = FakeClockTimer(1e-3, 0.0, min_time=1e-3, repeat=3, warmup=1, settle=0.25)
    measure(lambda: events.append("f"), lambda: events.append("g"), timer=timer)
    sleeps = [e for e in events if isinstance(e, tuple)]
    assert sleeps == [("sleep", 0.25)] * (2 + 3 * 2)  # before each calibration, then before each of 6 samples
    # each sample's calls come right after a sleep and are of one function: the order is sleep, f.., sleep, g..
    runs = "".join("|" if isinstance(e, tuple) else e for e in events).split("|")[1:]
    assert [set(r) for r in runs[2:]] == [{"f"}, {"g"}] * 3
    events.clear()
    measure(lambda: events.append("f"), timer=timer)  # one function: nothing to settle from
    assert not [e for e in events if isinstance(e, tuple)]
    assert "250 ms idle before each interleaved sample" in timer.describe()
    assert "idle" not in CPUTimer().describe()


def test_timer_rejects_bad_settings():
    with pytest.raises(ValueError, match="CPUTimer: need min_time > 0, repeat >= 1"):
        CPUTimer(repeat=0)
    with pytest.raises(ValueError, match="settle >= 0; got .*settle=-1"):
        CPUTimer(settle=-1)
    with pytest.raises(ValueError, match="measure: give at least one function"):
        measure()


# ------------------------------------------------------------------------------------------------ report
def test_table_columns_align_and_csv_keeps_extra_keys(tmp_path):
    t = report.Table("demo", "Demo", [report.Column("op", "op"), report.Column("us", "µs", report.fmt_time),
                                     report.Column("ratio", "ratio", report.fmt_ratio)])
    t.add(op="add", us=1.234, ratio=4.5, raw=1.234e-6)
    t.add(op="a longer name", us=1234.5, ratio=None)
    lines = t.to_markdown().splitlines()
    assert lines[0] == "### Demo"
    body = lines[2:]
    assert len({len(ln) for ln in body}) == 1  # aligned
    assert body[1].startswith("|:") and body[1].endswith(":|")  # text left, numbers right
    assert body[0] == "| op            |   µs | ratio |"
    assert body[2] == "| add           | 1.23 |  4.50 |"
    assert body[3] == f"| a longer name | 1234 |     {report.MISSING} |"
    p = tmp_path / "sub" / "t.csv"
    report.write_csv(str(p), [t])
    with open(p, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["table"] == "demo" and float(rows[0]["raw"]) == 1.234e-6 and rows[1]["ratio"] == ""


def test_environment_names_versions():
    import numpy as np

    env = report.environment({"extra": "yes"})
    assert env["numpy"] == np.__version__ and env["extra"] == "yes"
    assert env["cpu"] and env["blas"] and env["tkernels"]


@pytest.mark.parametrize("argv, settle", [(["train"], 0.25), (["train", "--settle", "40"], 0.04),
                                          (["overhead"], 0.0)])
def test_benchmark_timer_gets_its_settle(argv, settle, monkeypatch, capsys):
    """bench train settles 250 ms between interleaved samples unless --settle says otherwise; others do not."""
    import importlib

    from bench.__main__ import COMMANDS

    mod = importlib.import_module(COMMANDS[argv[0]][0])
    seen = []
    monkeypatch.setattr(mod, "run", lambda args, timer: seen.append(timer) or [])
    monkeypatch.setattr(mod, "environment", lambda args: {}, raising=False)
    main(argv)
    assert len(seen) == 1 and seen[0].settle == pytest.approx(settle)
    assert ("idle before each interleaved sample" in capsys.readouterr().out) == (settle > 0)
