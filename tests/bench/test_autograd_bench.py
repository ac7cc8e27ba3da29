"""`python -m bench autograd --quick` end to end: both tables, every op row ok, the MLP implementations agree."""

import csv
import math
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = ["add", "mul", "exp", "sum", "matmul", "relu", "reshape", "getitem"]


def test_autograd_bench_quick(tmp_path):
    csv_path = tmp_path / "a.csv"
    proc = subprocess.run([sys.executable, "-m", "bench", "autograd", "--quick", "--repeat", "1", "--min-time",
                           "1", "--no-torch", "--no-mygrad", "--csv", str(csv_path), "--out", str(tmp_path),
                           "--machine", "box"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    out = proc.stdout
    assert "### Per-op forward+backward time" in out and "### MLP training step" in out
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ops = [r for r in rows if r["table"] == "ops"]
    assert [r["op"] for r in ops] == OPS
    for r in ops:
        assert r["status"] == "ok", f"{r['op']}: {r['note']}"
        for key in ("tk_fwd_s", "tk_fb_s", "ag_fwd_s", "ag_fb_s", "vs_tk"):
            assert math.isfinite(float(r[key])) and float(r[key]) > 0, (r["op"], key)
        assert r.get("torch_fb_us", "") == ""  # --no-torch
    mlp = {r["impl"]: r for r in rows if r["table"] == "mlp"}
    assert set(mlp) == {"NumPy by hand", "autograd"}
    assert all(r["status"] == "ok" for r in mlp.values()), mlp
    assert mlp["autograd"]["loss"] == mlp["NumPy by hand"]["loss"]
    assert float(mlp["NumPy by hand"]["ratio"]) == 1.0 and float(mlp["autograd"]["ratio"]) > 0
    assert list(tmp_path.glob("*-box-autograd.md"))


def test_mygrad_peer_matches_numpy_by_hand():
    """The MyGrad row times the same model: same losses as NumPy by hand from the same weights."""
    import pytest

    mygrad = pytest.importorskip("mygrad")
    from bench.autograd import MyGradMLP, NumpyMLP

    a, b = NumpyMLP(), MyGradMLP(mygrad)
    la = [a.step() for _ in range(3)]
    assert np.allclose([b.step() for _ in range(3)], la, rtol=1e-5, atol=1e-6) and la[2] < la[0]


def test_peer_threads_follow_the_blas(monkeypatch):
    """PyTorch is given the BLAS's thread count: the thread variables first, then the default."""
    from bench import peers

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert peers.blas_threads() == 3
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert peers.blas_threads() == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert peers.blas_threads() >= 1
