"""``python -m bench ops``: the quick run on cpu end to end (tables, CSV, PNG), ``--op`` filtering, a wrong
result failing its row (exit status 1), an op without a kernel shown as n/a, the headline rows that
``bench.gpu_check`` shows, and the references the rows are checked against."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

from bench import gpu_check as gc
from bench import ops
from bench import ops_cases as oc
from bench.__main__ import main

FAST = ["--quick", "--device", "cpu", "--repeat", "1", "--min-time", "1", "--no-torch"]
OPS = {"copy", "add", "mul", "exp", "gelu", "sum_rows", "sum_cols", "max_rows", "max_cols", "var", "softmax",
       "log_softmax", "layer_norm", "rms_norm", "cross_entropy", "embedding", "matmul", "conv2d", "attention_fwd",
       "attention_fwd_bwd", "fft", "fft2", "qr", "cholesky", "solve", "eig", "lu_factor", "inv", "det"}


def _rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _positive(v) -> bool:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One full ``--quick`` run on cpu: (exit status, stdout, CSV rows, --out folder)."""
    tmp = tmp_path_factory.mktemp("ops")
    capture = pytest.MonkeyPatch()
    import io
    import sys

    out = io.StringIO()
    capture.setattr(sys, "stdout", out)
    try:
        rc = main(["ops", *FAST, "--out", str(tmp / "res"), "--machine", "testbox"])
    finally:
        capture.undo()
    (csv_path,) = (tmp / "res").glob("*-testbox-ops.csv")
    return rc, out.getvalue(), _rows(csv_path), tmp / "res"


def test_quick_run_measures_every_op_family(quick):
    rc, stdout, rows, _ = quick
    assert rc == 0, stdout[-3000:]
    for title in ("### measured roofline", "### elementwise (GB/s", "### reduction", "### softmax", "### norm",
                  "### loss", "### embedding", "### matmul (GFLOP/s", "### conv2d", "### attention", "### fft (GB/s"):
        assert title in stdout, title
    measured = [r for r in rows if r["table"] != "roofline"]
    assert {r["op"] for r in measured} == OPS
    for r in measured:
        assert r["status"] == "ok", r
        assert r["dtype"] == "float32" and r["unit"] in ("GB/s", "GFLOP/s")
        for key in ("tk_rate", "np_rate", "ratio", "roof_pct", "tk_s", "work"):
            assert _positive(r[key]), (r["op"], key, r[key])
        # the rate is the work over the median time
        assert float(r["tk_rate"]) == pytest.approx(float(r["work"]) / float(r["tk_s"]) / 1e9, rel=1e-6)
    roof = {r["op"]: r for r in rows if r["table"] == "roofline"}
    assert roof["copy"]["what"] == "np.copyto(dst, src)" and _positive(roof["copy"]["rate"])
    assert roof["matmul"]["what"] == "np.matmul" and _positive(roof["matmul"]["rate"])
    copy_bw = float(roof["copy"]["rate"])
    add = next(r for r in measured if r["op"] == "add" and r["shape"] == "65,536")
    assert float(add["roof_pct"]) == pytest.approx(100 * float(add["tk_rate"]) / copy_bw, rel=1e-6)
    # the compute roofline is the best matmul rate of the run: no matmul row is above 100%
    assert max(float(r["roof_pct"]) for r in measured if r["op"] == "matmul") <= 100.0 + 1e-6
    # a sweep: add over sizes, softmax over columns, cross_entropy over vocabularies, matmul over n
    assert len({r["x"] for r in measured if r["op"] == "add"}) == 3
    assert len({r["x"] for r in measured if r["op"] == "matmul" and r["x"] != "0"}) == 2


def test_quick_run_saves_markdown_csv_and_plot(quick):
    rc, stdout, rows, res = quick
    (md,) = res.glob("*-testbox-ops.md")
    assert "### attention" in md.read_text(encoding="utf-8")
    pngs = list(res.glob("*-testbox-ops.png"))
    if not ops._have_matplotlib():
        assert not pngs and "plots skipped: matplotlib is not importable" in stdout
        pytest.skip("matplotlib is not importable: no plot")
    assert len(pngs) == 1 and f"plots: {pngs[0]}" in stdout
    data = pngs[0].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_headline_rows_feed_gpu_check(tmp_path, capsys):
    """``--headline`` runs only the rows bench.gpu_check shows; its summary gets one line per headline."""
    assert gc.bench_args("bench.ops") == ops.GPU_CHECK_ARGS == ["--headline", "--device", "cuda"]
    path = tmp_path / "h.csv"
    assert main(["ops", *FAST, "--headline", "--csv", str(path)]) == 0
    rows = [r for r in _rows(path) if r["table"] != "roofline"]
    assert rows and all(r["headline"] for r in rows)
    labels = [r["headline"] for r in rows]
    for prefix in ("add float32", "softmax float32", "layer_norm float32", "cross_entropy float32",
                   "attention fwd float32", "attention fwd bwd float32"):
        assert any(lab.startswith(prefix) for lab in labels), (prefix, labels)
    assert sorted(lab for lab in labels if lab.startswith("matmul")) == ["matmul float32 128", "matmul float32 64"]
    add = next(r for r in rows if r["op"] == "add")
    assert add["headline_status"] in ("PASS", "MISS") and "% of copy (target ≥ 90%)" in add["headline_text"]
    lines = gc.headline_checks({"name": "ops", "returncode": 0, "seconds": 3.0, "rows": _rows(path)})
    assert lines[0]["status"] == "PASS" and len(lines) == 1 + len(rows)
    assert all(ln["group"] == "headline" and ln["status"] in ("PASS", "MISS", "INFO") for ln in lines[1:])
    capsys.readouterr()


def test_op_filter_and_dtype(tmp_path, capsys):
    path = tmp_path / "f.csv"
    assert main(["ops", *FAST, "--op", "softmax,matmul", "--op", "norm", "--dtype", "float64", "--csv", str(path)]) == 0
    rows = [r for r in _rows(path) if r["table"] != "roofline"]
    assert {r["op"] for r in rows} == {"softmax", "log_softmax", "matmul", "layer_norm", "rms_norm"}  # families
    assert {r["dtype"] for r in rows} == {"float64"} and all(r["status"] == "ok" for r in rows)
    out = capsys.readouterr().out
    assert "### softmax" in out and "### elementwise" not in out


@pytest.mark.parametrize("argv, message", [(["--op", "nope"], "--op nope: unknown op"),
                                           (["--dtype", "int8"], "--dtype int8: unknown dtype"),
                                           (["--op", "conv2d", "--dtype", "tf32"], "no case matches")])
def test_bad_selection_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["ops", *FAST, *argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_wrong_result_fails_the_row_and_exits_1(tmp_path, monkeypatch, capsys):
    import tkernels as tk

    real = tk.multiply
    monkeypatch.setattr(tk, "add", lambda x1, x2: real(x1, x2))  # a wrong add
    path = tmp_path / "w.csv"
    assert main(["ops", *FAST, "--op", "add,mul", "--csv", str(path)]) == 1
    rows = [r for r in _rows(path) if r["table"] != "roofline"]
    assert {r["status"] for r in rows if r["op"] == "add"} == {"failed"}
    assert all(r["note"].startswith("wrong result: max error") and not r["tk_rate"] for r in rows if r["op"] == "add")
    assert {r["status"] for r in rows if r["op"] == "mul"} == {"ok"}
    assert "row(s) failed: add" in capsys.readouterr().err


def test_missing_kernel_is_na_not_a_failure(tmp_path, monkeypatch, capsys):
    import tkernels as tk

    def no_kernel(*a, **k):
        raise NotImplementedError("exp: no implementation for device cuda:0 (backend 'triton')")

    monkeypatch.setattr(tk, "exp", no_kernel)
    monkeypatch.setattr(ops, "_have_matplotlib", lambda: False)
    path = tmp_path / "n.csv"
    assert main(["ops", *FAST, "--op", "exp,gelu", "--csv", str(path)]) == 0
    rows = {r["op"]: r for r in _rows(path)}
    assert rows["exp"]["status"] == "skipped" and rows["exp"]["note"] == "n/a (no kernel)"
    assert rows["gelu"]["status"] == "ok"
    out = capsys.readouterr().out
    assert "n/a (no kernel)" in out and "plots skipped: matplotlib is not importable" in out


def test_compare_tolerances():
    want = np.linspace(-2, 2, 101)
    assert oc.compare(want.astype(np.float32), want, "float32") is None
    assert oc.compare(want + 1e-2, want, "bfloat16") is None
    assert "max error" in oc.compare(want + 1e-2, want, "float32")
    assert "max error" in oc.compare(np.where(want > 1, np.nan, want), want, "bfloat16")
    assert "shape" in oc.compare(want[:-1], want, "float32")


def test_attention_reference_matches_a_loop():
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((2, 5, 4)) for _ in range(4))
    for causal in (False, True):
        out = oc._np_attention(q, k, v, causal)
        dq, dk, dv = oc._np_attention(q, k, v, causal, g)
        for b in range(2):
            s = q[b] @ k[b].T / 2.0
            if causal:
                s[np.triu_indices(5, 1)] = -np.inf
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            np.testing.assert_allclose(out[b], p @ v[b], rtol=1e-12)
            np.testing.assert_allclose(dv[b], p.T @ g[b], rtol=1e-12)
        # dq by central differences of <out, g>
        eps, e = 1e-6, np.zeros_like(q)
        e[1, 2, 3] = 1.0
        fd = ((oc._np_attention(q + eps * e, k, v, causal) * g).sum()
              - (oc._np_attention(q - eps * e, k, v, causal) * g).sum()) / (2 * eps)
        assert dq[1, 2, 3] == pytest.approx(fd, rel=1e-5)
        e = np.zeros_like(k)
        e[0, 1, 2] = 1.0
        fd = ((oc._np_attention(q, k + eps * e, v, causal) * g).sum()
              - (oc._np_attention(q, k - eps * e, v, causal) * g).sum()) / (2 * eps)
        assert dk[0, 1, 2] == pytest.approx(fd, rel=1e-5)


def test_conv_reference_matches_a_loop():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((4, 3, 3, 3))
    got = oc._np_conv3x3(x, w)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 4, 5, 6))
    for i in range(5):
        for j in range(6):
            want[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + 3, j:j + 3], w)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_cuda_path_runs_interpreted(tmp_path, capsys):
    """The cuda path (device copy roofline, synchronized timer, tiny sizes) on interpreted cuda."""
    if ops.MODE != "interpreted":
        pytest.skip(f"cuda here is {ops.MODE!r}, not interpreted")
    path = tmp_path / "c.csv"
    argv = ["ops", "--quick", "--device", "cuda", "--repeat", "1", "--min-time", "1", "--no-torch", "--op", "add",
            "--dtype", "bfloat16", "--csv", str(path)]
    assert main(argv) == 0
    rows = _rows(path)
    roof = {r["op"]: r for r in rows if r["table"] == "roofline"}
    assert roof["copy"]["what"] == "cuMemcpyDtoDAsync" and roof["matmul"]["what"] == "tk.matmul"
    assert roof["matmul"]["unit"] == "TFLOP/s" and roof["matmul"]["status"] == "ok"
    adds = [r for r in rows if r["op"] == "add"]
    assert {r["dtype"] for r in adds} == {"bfloat16"} and len(adds) == 3
    assert all(r["status"] == "ok" and _positive(r["tk_rate"]) and not r.get("np_rate") for r in adds)
    out = capsys.readouterr().out
    assert re.search(r"^- device +: cuda", out, re.M) and "interpreted" in out and "× PyTorch" in out
