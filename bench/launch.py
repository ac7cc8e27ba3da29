"""``python -m bench launch``: host time per kernel launch, and what our dispatch adds (DESIGN.md §11: host
overhead per op ≤ 10 µs).

On a GPU, one table of host µs per call (no synchronization inside the timed loop; the device is synchronized
before each sample, untimed), all measured interleaved on tiny float32 arrays (4 elements):

- ``CompiledKernel.run(...)``: the cached compiled kernel of ``tk.add`` (``binary_kernel``, our 35 arguments)
  launched directly, the floor Triton allows from Python; ``CompiledKernel[grid](..., stream=)`` the same
  through its ``__getitem__`` runner;
- ``binary_kernel[grid](...)``: the same launch through Triton's JIT path (binder, specialization key, cache
  lookup) with exactly the arguments ``tk.add`` passes (captured from a real call);
- ``nop_kernel[grid](x, n)`` and its ``CompiledKernel.run``: a 2-argument kernel, Triton's minimum;
- ``tk.empty((4,))``, ``tk.add`` with the launch stubbed out (our entry, dispatch, output allocation and
  argument preparation: all we add before Triton), ``tk.add(x, y)`` and ``x + y`` in full;
- peers when importable: PyTorch eager ``x + y`` on cuda, CuPy ``x + y``.

Without a GPU the launch rows cannot be measured: the table shows the interpreted-mode figures (the same
dispatch and argument preparation, with Triton's interpreter running the kernel) and says so. With
``FAKE_LIBCUDA=1`` (the project's fake driver, ``tkernels.cuda.testing``, built on the fly) or
``FAKE_LIBCUDA=<folder holding a built libcuda.so.1>`` the GPU table is also measured in a child on that fake
driver: Triton's real launch path on the host, kernels not executed.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import subprocess
import sys

import numpy as np

from bench.gpu_check import machine_label, select_cuda_mode
from bench.report import Column, Table, fmt_ratio, fmt_time
from bench.timing import CPUTimer, measure

MODE, GPU = select_cuda_mode()
MACHINE = machine_label(GPU) if MODE == "gpu" else "cpu"
GPU_CHECK_ARGS = []  # bench.gpu_check runs the full benchmark (about 20 s on a GPU)
HOST_TARGET_US = 10.0  # DESIGN.md §11: host overhead per op


class HostTimer(CPUTimer):
    """``CPUTimer`` that synchronizes the device before each sample (untimed): every sample starts with an
    empty launch queue, so a full queue never turns host time into device time."""

    name = "cpu perf_counter, device synchronized before each sample (untimed)"

    def sample(self, fn, loops: int) -> float:
        if MODE == "gpu":
            import tkernels.cuda as tkc

            tkc.synchronize()
        return super().sample(fn, loops)


TIMER = HostTimer



def _err(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"[:140]

def environment(args) -> dict:
    env = {}
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        env["triton"] = f"not importable ({type(e).__name__})"
    if MODE == "gpu":
        env["cuda"] = f"GPU: {GPU['name']}, driver CUDA {GPU['driver_version']}"
    elif MODE == "interpreted":
        env["cuda"] = "no GPU: interpreted cuda (Triton's interpreter); launch figures need a GPU"
    else:
        env["cuda"] = "no GPU and TKERNELS_INTERPRET=0: cpu rows only"
    if os.environ.get("FAKE_LIBCUDA") and MODE != "gpu":
        env["fake driver"] = os.environ["FAKE_LIBCUDA"]
    return env


def _columns():
    return [Column("op", "path"), Column("what", "what"), Column("us", "host µs", fmt_time),
            Column("ratio", "× floor", fmt_ratio), Column("note", "note")]


@contextlib.contextmanager
def _launch_stubbed():
    """``tk.add`` on cuda without the kernel launch: everything we do before handing over to Triton."""
    from tkernels.backends.triton import elementwise as ew

    real = ew.launch
    ew.launch = lambda kernel, grid, *args, **meta: None
    try:
        yield
    finally:
        ew.launch = real


def _capture_add(tk, x, y):
    """The (kernel, grid, args, meta) that ``tk.add(x, y)`` hands to the launch helper, and its result."""
    from tkernels.backends.triton import elementwise as ew

    seen = {}
    real = ew.launch

    def spy(kernel, grid, *args, **meta):
        seen.update(kernel=kernel, grid=grid, args=args, meta=meta)
        return real(kernel, grid, *args, **meta)

    ew.launch = spy
    try:
        out = tk.add(x, y)
    finally:
        ew.launch = real
    return seen, out


def _all_args(kernel, args, meta):
    """Every parameter of a JIT kernel in signature order (constexprs included): what ``CompiledKernel.run``
    takes after its launch parameters."""
    sig = inspect.signature(kernel.fn)
    bound = sig.bind(*args, **{k: v for k, v in meta.items() if k in sig.parameters})
    bound.apply_defaults()
    return list(bound.arguments.values())


def _direct(ck, grid, all_args, stream):
    """Zero-argument functions launching compiled kernel ``ck``: ``.run(...)`` and ``[grid](..., stream=)``."""
    from triton import knobs

    ck._init_handles()
    run, function, packed = ck.run, ck.function, ck.packed_metadata
    g = tuple(grid) + (1,) * (3 - len(grid))
    enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    runner = ck[g]
    return (lambda: run(g[0], g[1], g[2], stream, function, packed, None, enter, leave, *all_args),
            lambda: runner(*all_args, stream=stream))


_NOP = None


def _nop_kernel():
    global _NOP
    if _NOP is None:
        import triton
        import triton.language as tl

        @triton.jit
        def nop_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

        _NOP = nop_kernel
    return _NOP


def _torch_peer():
    try:
        import torch

        if torch.cuda.is_available():
            a, b = torch.ones(4, device="cuda"), torch.ones(4, device="cuda")
            return lambda: a + b
    except Exception:  # noqa: BLE001 - an absent or broken peer is just absent
        pass
    return None


def _cupy_peer():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            a, b = cupy.ones(4, dtype=cupy.float32), cupy.ones(4, dtype=cupy.float32)
            return lambda: a + b
    except Exception:  # noqa: BLE001
        pass
    return None


def _measure_rows(table: Table, cases, timer, floor: str | None):
    """Try each (op, what, fn) once, then time the ones that work, interleaved; fill the rows."""
    ok = []
    for op, what, fn in cases:
        row = table.add(op=op, what=what)
        if fn is None:
            row.update(status="skipped", note="not available here")
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one broken path must not hide the others
            row.update(status="failed", note=_err(e))
            continue
        ok.append((row, fn))
    if not ok:
        return {}
    ms = measure(*[fn for _, fn in ok], timer=timer)
    by_op = {}
    for (row, _), m in zip(ok, ms):
        row.update(status="ok", us=m.us, s=m.seconds, p20_s=m.p20, p80_s=m.p80, loops=m.loops)
        by_op[row["op"]] = m.us
    if floor in by_op:
        for row, _ in ok:
            row["ratio"] = row["us"] / by_op[floor]
    return by_op


def gpu_table(tk, timer) -> Table:
    """The launch paths on a (real or fake) driver."""
    import tkernels.cuda as tkc

    t = Table("launch", "Host time per launch, tiny float32 arrays (µs per call; × floor: vs CompiledKernel.run)",
              _columns())
    x = tk.asarray(np.arange(4, dtype=np.float32), device="cuda")
    y = tk.asarray(np.ones(4, dtype=np.float32), device="cuda")
    seen, out = _capture_add(tk, x, y)
    expect = np.arange(4, dtype=np.float32) + 1
    kernel, grid, args, meta = seen["kernel"], seen["grid"], seen["args"], seen["meta"]
    stream = tkc.current_stream().handle
    ck = kernel[grid](*args, **meta)
    all_args = _all_args(kernel, args, meta)
    ck_run, ck_getitem = _direct(ck, grid, all_args, stream)
    nop = _nop_kernel()
    nop_ck = nop[(1,)](x, 4, BLOCK=16)
    nop_run, _ = _direct(nop_ck, (1,), [x, 4, 16], stream)
    n_args = len(all_args)

    cases = [
        ("CompiledKernel.run", f"tk.add's binary_kernel, {n_args} args, launched directly", ck_run),
        ("CompiledKernel[grid]", "same, through the compiled kernel's runner", ck_getitem),
        ("binary_kernel[grid]", "same arguments through Triton's JIT path", lambda: kernel[grid](*args, **meta)),
        ("nop CompiledKernel.run", "2-argument kernel launched directly", nop_run),
        ("nop_kernel[grid]", "2-argument kernel through Triton's JIT path", lambda: nop[(1,)](x, 4, BLOCK=16)),
        ("tk.empty", "tk.empty((4,), device='cuda'): allocator hit + Array",
         lambda: tk.empty((4,), dtype=tk.float32, device="cuda")),
        ("tk.add(x, y)", "the whole op", lambda: tk.add(x, y)),
        ("x + y", "the operator", lambda: x + y),
        ("torch x + y", "PyTorch eager on cuda (peer)", _torch_peer()),
        ("cupy x + y", "CuPy (peer)", _cupy_peer()),
    ]
    stub_row = _measure_stub(t, timer, tk, x, y)
    by_op = _measure_rows(t, cases, timer, "CompiledKernel.run")
    if stub_row is not None and "CompiledKernel.run" in by_op:
        stub_row["ratio"] = stub_row["us"] / by_op["CompiledKernel.run"]
    _order(t, [c[0] for c in cases[:6]] + [STUB_OP] + [c[0] for c in cases[6:]])
    got = out.numpy()
    if not np.array_equal(got, expect) and MODE == "gpu" and not _is_fake():
        for r in t.rows:
            if r["op"] == "tk.add(x, y)":
                r.update(status="failed", note=f"wrong result {got.tolist()} != {expect.tolist()}")
    add_us = by_op.get("tk.add(x, y)")
    for r in t.rows:
        if r["op"] == "tk.add(x, y)" and add_us is not None:
            r.update(headline="tk.add host time (4 elements)",
                     headline_text=f"{add_us:.1f} µs (target ≤ {HOST_TARGET_US:g} µs)",
                     headline_status="PASS" if add_us <= HOST_TARGET_US else "MISS")
        if r["op"] == "binary_kernel[grid]" and "us" in r and "CompiledKernel.run" in by_op:
            r.update(headline="Triton JIT launch vs CompiledKernel.run",
                     headline_text=f"{r['us']:.1f} vs {by_op['CompiledKernel.run']:.1f} µs", headline_status="INFO")
    jit, floor, add = by_op.get("binary_kernel[grid]"), by_op.get("CompiledKernel.run"), add_us
    if jit is not None and floor is not None and add is not None:
        t.notes.append(f"Split of tk.add: Triton's launch floor {floor:.1f} µs + Triton's JIT path "
                       f"{jit - floor:.1f} µs + ours {add - jit:.1f} µs = {add:.1f} µs.")
    t.notes += ["No synchronization in the timed loop; the device is synchronized (untimed) before each sample.",
                "'tk.add, launch stubbed' replaces only the final kernel[grid](...) call by a no-op."]
    if _is_fake():
        t.notes.append("Fake driver: kernels are not executed and driver calls cost almost nothing; the figures "
                       "are host-side Python and Triton costs only.")
    return t


STUB_OP = "tk.add, launch stubbed"


def _measure_stub(t, timer, tk, x, y):
    """Time ``tk.add`` with the launch stubbed out (its own measurement: the stub must not leak into others)."""
    row = t.add(op=STUB_OP, what="our entry + dispatch + output + argument preparation, no launch")
    try:
        with _launch_stubbed():
            tk.add(x, y)
            (m,) = measure(lambda: tk.add(x, y), timer=timer)
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", note=_err(e))
        return None
    row.update(status="ok", us=m.us, s=m.seconds, p20_s=m.p20, p80_s=m.p80, loops=m.loops)
    return row


def _order(t: Table, ops):
    pos = {op: i for i, op in enumerate(ops)}
    t.rows.sort(key=lambda r: pos.get(r["op"], len(pos)))


def interpreted_table(tk, timer) -> Table:
    """Without a GPU: the dispatch and argument preparation measured around Triton's interpreter."""
    from tkernels.backends.triton._launch import launch

    t = Table("launch-interpreted", "No GPU: interpreted-mode dispatch cost, 4 float32 elements (µs per call; "
              "× floor: vs tk.add on cpu)", _columns())
    xc = tk.asarray(np.arange(4, dtype=np.float32))
    yc = tk.asarray(np.ones(4, dtype=np.float32))
    cases = [("tk.add on cpu", "the NumPy backend: the entry's own cost", lambda: tk.add(xc, yc))]
    if MODE == "interpreted":
        x, y = xc.to("cuda"), yc.to("cuda")
        seen, out = _capture_add(tk, x, y)
        bad = not np.array_equal(out.numpy(), np.arange(4, dtype=np.float32) + 1)
        kernel, grid, args, meta = seen["kernel"], seen["grid"], seen["args"], seen["meta"]
        cases += [
            ("tk.empty", "tk.empty((4,), device='cuda'): allocator hit + Array",
             lambda: tk.empty((4,), dtype=tk.float32, device="cuda")),
            ("launch helper", "kernel[grid](...) through Triton's interpreter (runs the kernel on the host)",
             lambda: launch(kernel, grid, *args, **meta)),
            ("tk.add(x, y)", "the whole op, interpreted", lambda: tk.add(x, y)),
        ]
    by_op = _measure_rows(t, cases, timer, "tk.add on cpu")
    if MODE == "interpreted":
        row = _measure_stub(t, timer, tk, x, y)
        if row is not None and "tk.add on cpu" in by_op:
            row["ratio"] = row["us"] / by_op["tk.add on cpu"]
        for r in t.rows:
            if r["op"] == "tk.add(x, y)" and bad:
                r.update(status="failed", note="wrong result")
        _order(t, ["tk.add on cpu", "tk.empty", STUB_OP, "launch helper", "tk.add(x, y)"])
    t.notes += ["Launch figures (Triton's JIT path, CompiledKernel.run, peers) need a GPU: run this on one "
                "(python -m bench.gpu_check does), or set FAKE_LIBCUDA to a built fake libcuda folder for the "
                "host-side figures on a fake driver.",
                "'tk.add, launch stubbed' is what our dispatch adds before Triton; on a GPU it is the same code "
                "minus the interpreter's argument wrapping."]
    return t


def _is_fake() -> bool:
    return MODE == "gpu" and GPU.get("name") == "Fake GPU"


# ------------------------------------------------------------------------------ fake driver (child process)
def _fake_child_env(fake: str) -> dict:
    from tkernels.cuda.testing import fake_driver_env

    env = fake_driver_env(fake)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env.update(PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
               FAKE_CUDA_LOG_LAUNCHES="0")
    return env


def _fake_driver_table(timer) -> Table | None:
    fake = os.environ.get("FAKE_LIBCUDA")
    if not fake or MODE == "gpu":
        return None
    if fake == "1":
        import tempfile

        from tkernels.cuda.testing import build_fake_libcuda

        fake = str(build_fake_libcuda(os.path.join(tempfile.gettempdir(), "tkernels-fake-libcuda")))
    t = Table("launch-fake", "Fake driver (FAKE_LIBCUDA): host time per launch, kernels not executed (µs per "
              "call; × floor: vs CompiledKernel.run)", _columns())
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        t.notes.append(f"FAKE_LIBCUDA={fake} holds no libcuda.so.1: set FAKE_LIBCUDA=1 to build the project's own")
        return t
    settings = json.dumps({"min_time": timer.min_time, "repeat": timer.repeat, "warmup": timer.warmup})
    code = f"import bench.launch as L; L._fake_child({settings!r})"
    r = subprocess.run([sys.executable, "-c", code], env=_fake_child_env(fake), capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        t.add(op="fake driver run", status="failed", note=(r.stderr.strip().splitlines() or ["?"])[-1][:140])
        return t
    data = json.loads(lines[-1])
    t.rows, t.notes = data["rows"], data["notes"]
    for row in t.rows:  # on a fake driver no figure is a real headline
        for k in ("headline", "headline_text", "headline_status"):
            row.pop(k, None)
    return t


def _fake_child(settings: str) -> None:
    """In the child on the fake driver: measure the GPU table, print its rows as JSON."""
    import tkernels as tk

    s = json.loads(settings)
    timer = HostTimer(min_time=s["min_time"], repeat=s["repeat"], warmup=s["warmup"])
    t = gpu_table(tk, timer)  # the fake driver's launch log is off (FAKE_CUDA_LOG_LAUNCHES=0)
    print(json.dumps({"rows": t.rows, "notes": t.notes}, default=float))


def run(args, timer) -> list[Table]:
    import tkernels as tk

    if MODE == "gpu":
        return [gpu_table(tk, timer)]
    tables = [interpreted_table(tk, timer)]
    fake = _fake_driver_table(timer)
    if fake is not None:
        tables.append(fake)
    return tables
