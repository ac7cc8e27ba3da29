"""``python -m bench overhead``: tkernels on the cpu device next to raw NumPy, in the same run.

Two tables:
1. per-call time of small ops on tiny arrays ((4, 4) float32): what the Python layer (validation,
   promotion, dispatch, the Array wrapper) costs on top of the NumPy call it ends in. Ratio = our time /
   NumPy's time (lower is better; DESIGN.md §11 asks for "a small multiple").
2. throughput of large ops: elementwise on 2^24 float32 (GB/s = bytes read + written / time), a full
   sum, float32 matmul (GFLOP/s = 2·n³ / time), softmax and layer_norm of (4096, 1024) against the same
   computation written by hand in NumPy. Ratio = our rate / NumPy's rate (higher is better; ≈ 1 expected,
   as both end in the same NumPy/BLAS calls).

The NumPy column uses the fastest plain spelling of the same computation (``a.sum()`` rather than
``np.sum(a)``), so a ratio is the full cost of going through tkernels. Every row first checks that both
give the same result (shape, dtype, values): a row that disagrees is marked failed. An op missing from
tkernels makes its row fail, except the ``tkernels.ops`` ops, which are skipped with a note.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.report import Column, Table, fmt_rate, fmt_ratio, fmt_time
from bench.timing import measure

MACHINE = "cpu"


def _sizes(quick: bool) -> dict:
    if quick:
        return {"n": 2**16, "mm": (64, 128), "rows": (64, 256)}
    return {"n": 2**24, "mm": (1024, 2048), "rows": (4096, 1024)}


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(f"  measuring {msg}...", file=sys.stderr, flush=True)


def _check(got, want, rtol: float, atol: float, values: bool = True) -> str | None:
    """None when ``got`` (an Array) matches ``want`` (NumPy) in shape, dtype and values; else the reason."""
    g = np.asarray(got)
    w = np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return f"wrong result: {g.dtype}{list(g.shape)} vs NumPy {w.dtype}{list(w.shape)}"
    if values and not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
        return f"wrong result: max abs error {err:.3g}"
    return None


def _row(table: Table, op: str, ours: str, ref: str, make, timer, rtol=1e-5, atol=1e-6, values=True, **extra):
    """Build (our fn, NumPy fn) with ``make()``, check them, time them interleaved; add the row."""
    _progress(op)
    row = table.add(op=op, ours=ours, numpy=ref, **extra)
    try:
        f_ours, f_np = make()
        bad = _check(f_ours(), f_np(), rtol, atol, values)
        m_ours, m_np = measure(f_ours, f_np, timer=timer)
    except Exception as e:  # noqa: BLE001 - one broken op must not hide the other rows
        msg = str(e).splitlines()[0] if str(e) else ""
        row.update(status="failed", note=f"{type(e).__name__}: {msg}"[:140])
        return row, None, None
    row.update(status="failed" if bad else "ok", note=bad or "")
    for key, m in (("tk", m_ours), ("np", m_np)):
        row.update({f"{key}_s": m.seconds, f"{key}_p20_s": m.p20, f"{key}_p80_s": m.p80, f"{key}_loops": m.loops})
    return row, m_ours, m_np


# --------------------------------------------------------------------------------------------- small ops
def small_table(tk, timer) -> Table:
    t = Table("small", "Per-call time, (4, 4) float32 inputs: ratio = tkernels / NumPy (lower is better)",
              [Column("op", "op"), Column("ours", "tkernels"), Column("numpy", "NumPy"),
               Column("tk_us", "tkernels µs", fmt_time), Column("np_us", "NumPy µs", fmt_time),
               Column("ratio", "ratio", fmt_ratio), Column("note", "note")])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4), dtype=np.float32)
    b = rng.standard_normal((4, 4), dtype=np.float32)
    mask = a > 0
    x, y, m = tk.asarray(a), tk.asarray(b), tk.asarray(mask)
    f32, f64 = tk.float32, tk.float64
    cases = [
        ("add", "x + y", "a + b", lambda: (lambda: x + y, lambda: a + b)),
        ("add (scalar)", "x + 1.5", "a + 1.5", lambda: (lambda: x + 1.5, lambda: a + 1.5)),
        ("multiply", "x * y", "a * b", lambda: (lambda: x * y, lambda: a * b)),
        ("exp", "tk.exp(x)", "np.exp(a)", lambda: (lambda: tk.exp(x), lambda: np.exp(a))),
        ("sum", "tk.sum(x)", "a.sum()", lambda: (lambda: tk.sum(x), lambda: a.sum())),
        ("sum (axis=1)", "tk.sum(x, axis=1)", "a.sum(axis=1)",
         lambda: (lambda: tk.sum(x, axis=1), lambda: a.sum(axis=1))),
        ("matmul", "tk.matmul(x, y)", "a @ b", lambda: (lambda: tk.matmul(x, y), lambda: a @ b)),
        ("reshape", "tk.reshape(x, (2, 8))", "a.reshape(2, 8)",
         lambda: (lambda: tk.reshape(x, (2, 8)), lambda: a.reshape(2, 8))),
        ("permute_dims", "tk.permute_dims(x, (1, 0))", "a.transpose(1, 0)",
         lambda: (lambda: tk.permute_dims(x, (1, 0)), lambda: a.transpose(1, 0))),
        ("getitem (slices)", "x[1:3, ::2]", "a[1:3, ::2]", lambda: (lambda: x[1:3, ::2], lambda: a[1:3, ::2])),
        ("astype", "tk.astype(x, tk.float64)", "a.astype(np.float64)",
         lambda: (lambda: tk.astype(x, f64), lambda: a.astype(np.float64))),
        ("where", "tk.where(m, x, y)", "np.where(mask, a, b)",
         lambda: (lambda: tk.where(m, x, y), lambda: np.where(mask, a, b))),
        ("asarray", "tk.asarray(a)", "np.asarray(a)", lambda: (lambda: tk.asarray(a), lambda: np.asarray(a))),
        ("empty", "tk.empty((4, 4), dtype=f32)", "np.empty((4, 4), np.float32)",
         lambda: (lambda: tk.empty((4, 4), dtype=f32), lambda: np.empty((4, 4), np.float32))),
        ("zeros", "tk.zeros((4, 4), dtype=f32)", "np.zeros((4, 4), np.float32)",
         lambda: (lambda: tk.zeros((4, 4), dtype=f32), lambda: np.zeros((4, 4), np.float32))),
    ]
    for op, ours, ref, make in cases:
        row, mo, mn = _row(t, op, ours, ref, make, timer, values=op != "empty")
        if mo is not None:
            row.update(tk_us=mo.us, np_us=mn.us, ratio=mo.seconds / mn.seconds)
            if op == "asarray":
                row["note"] = row["note"] or "np.asarray returns its input: the ratio is our wrapper's cost"
    t.notes += ["µs per call, median of the samples, without the timing loop's own cost (the timer line above).",
                "asarray, reshape, permute_dims and getitem make views on both sides (no copy)."]
    return t


# --------------------------------------------------------------------------------------------- large ops
def _np_softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def _np_layer_norm(a, w, b, eps):
    mu = a.mean(axis=-1, keepdims=True)
    xc = a - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    xc *= 1.0 / np.sqrt(var + eps)
    xc *= w
    xc += b
    return xc


def large_table(tk, timer, quick: bool) -> Table:
    t = Table("large", "Throughput, float32: ratio = tkernels rate / NumPy rate (higher is better)",
              [Column("op", "op"), Column("size", "size"), Column("ours", "tkernels"), Column("numpy", "NumPy"),
               Column("unit", "unit"), Column("tk_rate", "tk rate", fmt_rate),
               Column("np_rate", "NumPy rate", fmt_rate), Column("ratio", "ratio", fmt_ratio),
               Column("tk_ms", "tkernels ms", fmt_time), Column("note", "note")])
    sz = _sizes(quick)
    n = sz["n"]
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = np.empty_like(a)
    x, y = tk.asarray(a), tk.asarray(b)
    z = tk.empty((n,), dtype=tk.float32)
    nstr = f"2^{n.bit_length() - 1}"

    def add(op, size, ours, ref, make, work, unit, rtol=1e-5, atol=1e-6):
        row, mo, mn = _row(t, op, ours, ref, make, timer, rtol=rtol, atol=atol, size=size, unit=unit, work=work)
        if mo is not None:
            row.update(tk_rate=work / mo.seconds / 1e9, np_rate=work / mn.seconds / 1e9,
                       ratio=mn.seconds / mo.seconds, tk_ms=mo.ms, np_ms=mn.ms)
        return row

    add("add", nstr, "x + y", "a + b", lambda: (lambda: x + y, lambda: a + b), 3 * 4 * n, "GB/s")
    add("add (out=)", nstr, "tk.add(x, y, out=z)", "np.add(a, b, out=c)",
        lambda: (lambda: tk.add(x, y, out=z), lambda: np.add(a, b, out=c)), 3 * 4 * n, "GB/s")
    add("exp", nstr, "tk.exp(x)", "np.exp(a)", lambda: (lambda: tk.exp(x), lambda: np.exp(a)), 2 * 4 * n, "GB/s")
    # float32 sums of 2^24 terms: NumPy's pairwise sum and a float64 accumulation differ by ~1e-4 relative
    add("sum", nstr, "tk.sum(x)", "a.sum()", lambda: (lambda: tk.sum(x), lambda: a.sum()), 4 * n, "GB/s",
        rtol=1e-3, atol=1e-2)
    for k in sz["mm"]:
        am = rng.standard_normal((k, k), dtype=np.float32)
        bm = rng.standard_normal((k, k), dtype=np.float32)
        xm, ym = tk.asarray(am), tk.asarray(bm)
        add("matmul", f"{k}x{k} @ {k}x{k}", "tk.matmul(x, y)", "a @ b",
            lambda xm=xm, ym=ym, am=am, bm=bm: (lambda: tk.matmul(xm, ym), lambda: am @ bm), 2 * k**3,
            "GFLOP/s", rtol=1e-3, atol=1e-3 * k**0.5)
        del am, bm, xm, ym

    rows, cols = sz["rows"]
    ar = rng.standard_normal((rows, cols), dtype=np.float32)
    xr = tk.asarray(ar)
    size = f"({rows}, {cols})"
    ops = getattr(tk, "ops", None)
    softmax = getattr(ops, "softmax", None)
    if softmax is None:
        t.add(op="softmax", size=size, status="skipped", note="skipped: tkernels.ops.softmax does not exist yet")
    else:
        add("softmax", size, "tk.ops.softmax(x, axis=-1)", "hand-written (exp(a - max), /= sum)",
            lambda: (lambda: softmax(xr, axis=-1), lambda: _np_softmax(ar)), 2 * 4 * rows * cols, "GB/s")
    layer_norm = getattr(ops, "layer_norm", None)
    if layer_norm is None:
        t.add(op="layer_norm", size=size, status="skipped",
              note="skipped: tkernels.ops.layer_norm does not exist yet")
    else:
        w = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
        bias = (0.1 * rng.standard_normal(cols)).astype(np.float32)
        tw, tb = tk.asarray(w), tk.asarray(bias)
        add("layer_norm", size, f"tk.ops.layer_norm(x, ({cols},), w, b)", "hand-written (mean, var, scale)",
            lambda: (lambda: layer_norm(xr, (cols,), tw, tb, eps=1e-5), lambda: _np_layer_norm(ar, w, bias, 1e-5)),
            2 * 4 * rows * cols, "GB/s", rtol=1e-4, atol=1e-4)
    t.notes += ["GB/s counts the bytes read and written once each (add: 3·4·N, exp: 2·4·N, sum: 4·N, "
                "softmax and layer_norm: 2·4·rows·cols); GFLOP/s counts 2·n³ for an n×n matmul.",
                "Every row but 'add (out=)' allocates its result on both sides; 'add (out=)' writes into existing "
                "arrays."]
    return t


def run(args, timer) -> list[Table]:
    import tkernels as tk

    return [small_table(tk, timer), large_table(tk, timer, args.quick)]
