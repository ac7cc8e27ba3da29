"""``python -m bench ops``: throughput of each op family against the machine's measured roofline and its peers.

Per op family (copy; elementwise add, mul, exp, gelu; reductions sum/max over rows and columns, var; softmax,
log_softmax; layer_norm, rms_norm; cross_entropy; embedding; matmul float32/TF32/float16/bfloat16, square
sweeps and a transformer MLP shape; a ResNet-like 3x3 conv2d; attention, causal or not, forward and
forward+backward; fft of 2^20 and 2^24 points and a batch of 2-D FFTs) one row per size and dtype: the
achieved rate, GB/s for memory-bound ops (bytes read and written once / time) or FLOP/s for matmul, conv2d
and attention (2·M·N·K; attention 4·B·H·L²·d forward,
halved when causal, ×3.5 forward+backward, as FlashAttention counts), and its percentage of the roofline
measured in the same run: a device-to-device copy for bandwidth (cuMemcpyDtoD on cuda, ``np.copyto`` on cpu),
the best matmul rate of the run (any provider, any dtype) for compute.

Peers, measured interleaved with ours: on cpu the same formula written in NumPy; PyTorch on the same device
when torch is importable (``--no-torch`` leaves it out). Each row first checks our result against a NumPy
reference at a loose tolerance (a slice of it for big outputs): a wrong result fails the row (exit status 1);
an op with no kernel for the device (NotImplementedError) is shown as "n/a (no kernel)".

Devices: cuda when a GPU is there (``--device`` chooses), else cpu. On cuda the timer synchronizes the device
before and after each sample of many back-to-back calls, so the rate is device time with launches overlapped.
Sweeps (add over sizes, softmax and layer_norm over columns, cross_entropy over vocabularies, matmul over n)
are also drawn as PNG plots next to the ``--out``/``--csv`` files when matplotlib is importable.
``--headline`` runs only the rows shown in ``bench.gpu_check``'s summary.
"""

from __future__ import annotations

import datetime as _datetime
import math
import os
import sys

from bench import ops_cases as oc
from bench.gpu_check import _dist_version, machine_label, select_cuda_mode
from bench.report import Column, Table, fmt_rate, fmt_ratio, fmt_time
from bench.timing import CPUTimer, measure

MODE, GPU = select_cuda_mode()
MACHINE = machine_label(GPU) if MODE == "gpu" else "cpu"
GPU_CHECK_ARGS = ["--headline", "--device", "cuda"]  # bench.gpu_check: the headline rows at full size
COPY_TARGET, CUBLAS_TARGET = 0.90, 0.95  # DESIGN.md §11


class OpsTimer(CPUTimer):
    """``CPUTimer``; when ``sync`` is set (cuda), the devices are synchronized before the clock starts and
    before it stops, so a sample is the device time of its calls (queued back to back: launches overlap)."""

    name = "wall clock (perf_counter)"
    sync = None

    def sample(self, fn, loops: int) -> float:
        if self.sync is None:
            return super().sample(fn, loops)
        self.sync()
        t = super().sample(fn, loops)  # the loop's launches...
        t0 = _now()
        self.sync()  # ...and the drain of the queue they filled
        return t + (_now() - t0)

    def describe(self) -> str:
        return super().describe() + "; on cuda the device is synchronized before and after each sample"


def _now() -> float:
    import time

    return time.perf_counter()


TIMER = OpsTimer


def add_arguments(p) -> None:
    p.add_argument("--op", action="append", metavar="NAME",
                   help="only these ops or families (repeat or comma-separate): e.g. add, softmax, matmul, attention")
    p.add_argument("--dtype", metavar="LIST",
                   help=f"comma-separated dtypes among {', '.join(oc.DTYPES)} (default: float32 on cpu; on cuda "
                        f"float32+bfloat16, matmul all four, attention bfloat16)")
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when a GPU is there, else cpu")
    p.add_argument("--headline", action="store_true", help="only the headline rows (what bench.gpu_check shows)")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is importable")


def _device(args) -> str:
    dev = args.device or ("cuda" if MODE == "gpu" else "cpu")
    if dev == "cuda" and MODE == "none":
        _usage("--device cuda: no GPU here and TKERNELS_INTERPRET=0 (set TKERNELS_INTERPRET=1 for interpreted cuda)")
    return dev


def _profile(args, device: str) -> str:
    if device == "cuda" and MODE == "gpu":
        return "cuda-quick" if args.quick else "cuda"
    if device == "cuda":  # interpreted: Triton's interpreter runs every kernel on the host
        return "cpu-quick"
    return "cpu-quick" if args.quick else "cpu"


def _usage(msg: str):
    print(f"python -m bench ops: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _torch(args, device: str):
    if args.no_torch:
        return None
    try:
        import torch

        if device == "cuda" and not torch.cuda.is_available():
            return None
        return torch
    except Exception:  # noqa: BLE001 - an absent or broken peer is just absent
        return None


def _have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401

        return True
    except Exception:  # noqa: BLE001
        return False


def environment(args) -> dict:
    dev = _device(args)
    env = {"device": dev, "sizes": _profile(args, dev)}
    if dev == "cuda":
        env["cuda"] = (f"GPU: {GPU['name']}, driver CUDA {GPU['driver_version']}" if MODE == "gpu" else
                       "interpreted (Triton's interpreter on the host): tiny sizes, rates are not GPU figures")
        # the version from the metadata: importing triton before tkernels.cuda would miss TRITON_INTERPRET
        env["triton"] = _dist_version("triton") or "not installed"
    torch = _torch(args, dev)
    env["torch"] = (f"{torch.__version__} (peer on {dev})" if torch is not None else
                    "left out (--no-torch)" if args.no_torch else "not importable: PyTorch columns are empty")
    env["plots"] = "matplotlib" if _have_matplotlib() else "skipped: matplotlib is not importable"
    return env


# ------------------------------------------------------------------------------------------- selection
def _names(values) -> list[str]:
    return [v.strip() for value in values or () for v in value.split(",") if v.strip()]


def select(args, device: str) -> list[oc.Case]:
    """The cases to run: profile, dtypes, --op names, --headline."""
    dtypes = None
    if args.dtype:
        dtypes = tuple(_names([args.dtype]))
        bad = [d for d in dtypes if d not in oc.DTYPES]
        if bad:
            _usage(f"--dtype {','.join(bad)}: unknown dtype; choose among {', '.join(oc.DTYPES)}")
    cases = oc.all_cases(_profile(args, device), device, dtypes)
    ops = _names(args.op)
    if ops:
        known = {c.op for c in cases} | {c.family for c in cases} | {
            c.op for c in oc.all_cases("cpu-quick", "cuda", oc.DTYPES)} | set(oc.FAMILIES) | {"norm"}
        bad = [o for o in ops if o not in known]
        if bad:
            _usage(f"--op {','.join(bad)}: unknown op; choose among {', '.join(sorted(known))}")
        cases = [c for c in cases if c.op in ops or c.family in ops]
    if args.headline:
        cases = [c for c in cases if c.headline]
    if not cases:
        _usage("no case matches the --op/--dtype/--headline selection on this device")
    return cases


# ------------------------------------------------------------------------------------------- measuring
def _err(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"[:160]


def _scale(kind: str, device: str) -> tuple[float, str]:
    if kind == oc.MEMORY:
        return 1e9, "GB/s"
    return (1e9, "GFLOP/s") if device == "cpu" else (1e12, "TFLOP/s")


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(f"  measuring {msg}...", file=sys.stderr, flush=True)


def measure_case(case: oc.Case, env: oc.Env, timer, table: Table) -> dict:
    """Build, check once, then time ours and the peers interleaved; the row added to ``table``."""
    scale, unit = _scale(case.kind, env.device)
    row = table.add(op=case.op, dtype=case.dtype, shape=case.shape, unit=unit, work=case.work, x=case.x,
                    kind=case.kind)
    _progress(f"{case.op} {case.dtype} {case.shape}")
    try:
        built = case.build(env)
        bad = built.check()
    except NotImplementedError as e:
        row.update(status="skipped", note="n/a (no kernel): " + _err(e)[:100])
        return row
    except Exception as e:  # noqa: BLE001 - one broken op must not hide the other rows
        row.update(status="failed", note=_err(e))
        return row
    if bad:
        row.update(status="failed", note=bad)
        return row
    fns = [("tk", built.ours)] + ([("np", built.numpy)] if built.numpy is not None else [])
    notes = []
    if built.torch is not None:
        try:
            built.torch()
            fns.append(("torch", built.torch))
        except Exception as e:  # noqa: BLE001 - the peer failing is not our failure
            notes.append("PyTorch failed: " + _err(e)[:80])
    try:
        ms = measure(*(f for _, f in fns), timer=timer)
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", note=_err(e))
        return row
    for (key, _), m in zip(fns, ms):
        row.update({f"{key}_s": m.seconds, f"{key}_p20_s": m.p20, f"{key}_p80_s": m.p80,
                    f"{key}_rate": case.work / m.seconds / scale})
    row["tk_ms"] = ms[0].ms
    peer = "np" if env.cpu else "torch" if "torch_rate" in row else None  # the ratio column's peer
    if peer:
        row.update(ratio=row["tk_rate"] / row[f"{peer}_rate"], peer={"torch": "PyTorch", "np": "NumPy"}[peer])
    row.update(status="ok", note="; ".join(notes))
    return row


def roofline(env: oc.Env, timer, P: dict, table: Table) -> dict:
    """Measured ceilings: ``{"memory": GB/s of a device copy, "compute": best matmul FLOP/s of the probe}``."""
    import numpy as np

    tk, roof = env.tk, {}
    n = P.get("roof_n", P["n"])
    nbytes = 4 * n
    try:
        if env.cpu:
            src, dst = env.rand((n,), "float32"), np.empty(n, np.float32)
            what = "np.copyto(dst, src)"

            def copy():
                np.copyto(dst, src)
        else:
            import tkernels.cuda as tkc

            src, dst = env.dev(env.rand((n,), "float32")), tk.empty((n,), dtype=tk.float32, device="cuda")
            rt, stream, dp, sp = tkc.get_runtime(), tkc.current_stream().handle, dst.data_ptr(), src.data_ptr()
            what = "cuMemcpyDtoDAsync"

            def copy():
                rt.memcpy_dtod(0, dp, sp, nbytes, stream)
        m = measure(copy, timer=timer)[0]
        roof["memory"] = 2 * nbytes / m.seconds / 1e9
        table.add(op="copy", what=what, shape=f"2^{n.bit_length() - 1} float32", rate=roof["memory"], unit="GB/s",
                  ms=m.ms, s=m.seconds, work=2 * nbytes, status="ok")
    except Exception as e:  # noqa: BLE001
        table.add(op="copy", what="device copy", status="failed", note=_err(e))
    k = P["probe"]
    dt = "float32" if env.cpu else "bfloat16"
    scale, unit = _scale(oc.COMPUTE, env.device)
    try:
        built = oc._matmul_case(k, k, k, dt, 0, "", "").build(env)
        bad = None if env.cpu else built.check()
        if bad:
            raise RuntimeError(f"tk.matmul: {bad}")
        fns = [("np.matmul", built.numpy)] if env.cpu else [("tk.matmul", built.ours)]
        if built.torch is not None:
            fns.append(("torch.matmul", built.torch))
        for (what, _), m in zip(fns, measure(*(f for _, f in fns), timer=timer)):
            rate = 2.0 * k**3 / m.seconds / scale
            roof["compute"] = max(roof.get("compute", 0.0), rate)
            table.add(op="matmul", what=what, shape=f"{k}x{k} {dt}", rate=rate, unit=unit, ms=m.ms, s=m.seconds,
                      work=2.0 * k**3, status="ok")
    except Exception as e:  # noqa: BLE001
        table.add(op="matmul", what=f"{dt} probe", status="failed", note=_err(e))
    return roof


# ------------------------------------------------------------------------------------------- results
def _pct(v) -> str:
    return f"{v:.0f}%" if isinstance(v, int | float) and math.isfinite(v) else "—"


def _family_table(family: str, unit: str, device: str, torch) -> Table:
    peer = "PyTorch" if device != "cpu" else "NumPy"
    cols = [Column("op", "op"), Column("dtype", "dtype"), Column("shape", "shape"),
            Column("tk_rate", f"tkernels {unit}", fmt_rate)]
    if device == "cpu":
        cols.append(Column("np_rate", f"NumPy {unit}", fmt_rate))
    if torch is not None:
        cols.append(Column("torch_rate", f"PyTorch {unit}", fmt_rate))
    roof = "copy" if unit == "GB/s" else "best matmul"
    cols += [Column("ratio", f"× {peer}", fmt_ratio), Column("roof_pct", f"% {roof}", _pct),
             Column("tk_ms", "ms", fmt_time), Column("note", "note")]
    return Table(family, f"{family} ({unit}; × {peer} = our rate / its rate, higher is better; % of the measured "
                         f"{roof} roofline)", cols)


def _headline(row: dict, case: oc.Case, roof: dict) -> None:
    if not case.headline:
        return
    row["headline"] = case.headline
    if row.get("status") != "ok":
        row.update(headline_text=row.get("note", "")[:60] or row.get("status"), headline_status="MISS")
        return
    rate, unit, pct = row["tk_rate"], row["unit"], row.get("roof_pct")
    text = f"{rate:,.0f} {unit}" if rate >= 100 else f"{rate:.1f} {unit}"
    torch = row.get("torch_rate")
    status = "INFO"
    if case.target == "copy90" and pct is not None:
        text += f" = {pct:.0f}% of copy (target ≥ {COPY_TARGET:.0%})"
        status = "PASS" if pct >= 100 * COPY_TARGET else "MISS"
    elif case.target == "cublas95" and torch and row["dtype"] in ("bfloat16", "float16"):
        text += f" = {rate / torch:.0%} of cuBLAS via PyTorch (target ≥ {CUBLAS_TARGET:.0%})"
        status = "PASS" if rate / torch >= CUBLAS_TARGET else "MISS"
    elif case.target == "ahead" and torch:
        text += f", {rate / torch:.2f}x PyTorch (target > 1)"
        status = "PASS" if rate > torch else "MISS"
    elif torch:
        text += f", {rate / torch:.2f}x PyTorch"
    elif row.get("np_rate"):
        text += f", {rate / row['np_rate']:.2f}x NumPy"
    if case.target != "copy90" and pct is not None:
        text += f" ({pct:.0f}% of {'copy' if case.kind == oc.MEMORY else 'best matmul'})"
    row.update(headline_text=text, headline_status=status)


def plot(path: str, rows: list[dict], roof: dict) -> str | None:
    """The sweeps (rows with an x) as a PNG, one panel per (op, dtype), one line per provider; None when there
    is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("x") and r.get("status") == "ok":
            groups.setdefault((r["table"], r["op"], r["dtype"]), []).append(r)
    groups = {k: sorted(v, key=lambda r: r["x"]) for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return None
    ncol = min(3, len(groups))
    nrow = -(-len(groups) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5 * ncol, 3.6 * nrow), squeeze=False)
    for ax, ((_, op, dt), rs) in zip(axes.flat, groups.items()):
        xs = [r["x"] for r in rs]
        for key, label in (("tk_rate", "tkernels"), ("np_rate", "NumPy"), ("torch_rate", "PyTorch")):
            ys = [r.get(key) for r in rs]
            if any(isinstance(y, float) for y in ys):
                ax.plot(xs, [y if isinstance(y, float) else float("nan") for y in ys], marker="o", label=label)
        ceiling = roof.get(rs[0]["kind"])
        if ceiling:
            ax.axhline(ceiling, color="gray", linestyle="--", linewidth=1,
                       label="copy" if rs[0]["kind"] == oc.MEMORY else "best matmul")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{op} {dt}", fontsize=10)
        ax.set_xlabel(rs[0].get("xlabel") or "size")
        ax.set_ylabel(rs[0]["unit"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _plot_path(args) -> str | None:
    if args.out:
        machine = args.machine or MACHINE
        return os.path.join(args.out, f"{_datetime.date.today().isoformat()}-{machine}-ops.png")
    if args.csv:
        return os.path.splitext(args.csv)[0] + ".png"
    return None


def _empty_caches(torch) -> None:
    """Between families on cuda: our allocator's and PyTorch's caches would otherwise both keep everything."""
    import tkernels.cuda as tkc

    tkc.empty_cache()
    if torch is not None:
        torch.cuda.empty_cache()


def run(args, timer) -> list[Table]:
    import tkernels as tk

    device = _device(args)
    cases = select(args, device)
    torch = _torch(args, device)
    env = oc.Env(tk, device, torch)
    P = oc.PROFILES[_profile(args, device)]
    if device == "cuda" and isinstance(timer, OpsTimer):
        import tkernels.cuda as tkc

        def sync():
            tkc.synchronize()
            if torch is not None:
                torch.cuda.synchronize()
        timer.sync = sync

    roof_table = Table("roofline", "measured roofline (the ceilings the % columns refer to)",
                       [Column("op", "op"), Column("what", "measured with"), Column("shape", "shape"),
                        Column("rate", "rate", fmt_rate), Column("unit", "unit"), Column("ms", "ms", fmt_time),
                        Column("note", "note")])
    _progress("roofline")
    roof = roofline(env, timer, P, roof_table)
    tables: dict[str, Table] = {}
    done: list[tuple[oc.Case, dict]] = []
    for i, case in enumerate(cases):
        unit = _scale(case.kind, device)[1]
        table = tables.get(case.family) or tables.setdefault(case.family, _family_table(case.family, unit, device,
                                                                                        torch))
        row = measure_case(case, env, timer, table)
        row["xlabel"] = case.xlabel
        done.append((case, row))
        if case.family == "matmul" and row.get("status") == "ok":
            best = max(row.get(k) or 0.0 for k in ("tk_rate", "np_rate", "torch_rate"))
            if best > roof.get("compute", 0.0):
                roof["compute"] = best
                roof_table.notes.append(f"best matmul of the run: {case.dtype} {case.shape}, {best:.1f} "
                                        f"{row['unit']} (above the probe): the compute roofline")
        if device == "cuda" and (i + 1 == len(cases) or cases[i + 1].family != case.family):
            _empty_caches(torch)
    for case, row in done:
        ceiling = roof.get(case.kind)
        if row.get("status") == "ok" and ceiling:
            row["roof_pct"] = 100 * row["tk_rate"] / ceiling
        if row.get("status") == "skipped" and row.get("note", "").startswith("n/a"):
            row.update(note="n/a (no kernel)", detail=row["note"])  # the exception's text: in the CSV
        _headline(row, case, roof)
    out = [roof_table] + list(tables.values())
    if device == "cpu":
        roof_table.notes.append("cpu: the peer is the same formula written in NumPy on the same host arrays "
                                "(half dtypes computed in float32)")
    if torch is None:
        roof_table.notes.append("PyTorch is not importable here (or --no-torch): its columns are left out")
    path = _plot_path(args)
    if not _have_matplotlib():
        roof_table.notes.append("plots skipped: matplotlib is not importable (pip install matplotlib)")
    elif path is None:
        roof_table.notes.append("plots not written: give --out or --csv to save them")
    else:
        rows = [dict(r, table=t.name) for t in tables.values() for r in t.rows]
        try:
            saved = plot(path, rows, roof)
            roof_table.notes.append(f"plots: {saved}" if saved else "plots: no sweep in this selection")
        except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the measurements
            roof_table.notes.append(f"plots failed: {_err(e)}")
    return out
