"""The command line: ``python -m bench <benchmark> [options]``.

A benchmark is a module with ``run(args, timer) -> list[report.Table]`` and, optionally,
``add_arguments(parser)`` (its own options), ``environment(args) -> dict`` (lines added to the environment
block), ``MACHINE`` (the default machine label of saved results) and ``TIMER`` (a ``bench.timing.Timer``
class; default ``CPUTimer``, a GPU benchmark gives its event timer). Add one by writing the module and one
line in ``COMMANDS``; only the chosen benchmark's module is imported.

Output: the environment first, then the tables (Markdown pipe tables, aligned). ``--csv PATH`` saves every
row as CSV; ``--out DIR`` saves ``DIR/<date>-<machine>-<benchmark>.md`` (what was printed) and ``.csv``.
Exit status: 0, or 1 when a row failed (its op raised or gave a wrong result), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import datetime as _datetime
import importlib
import os
import sys

from bench import report
from bench.timing import CPUTimer

# name: (module, one line shown by --help). One line per benchmark.
COMMANDS: dict[str, tuple[str, str]] = {
    "overhead": ("bench.overhead", "cpu: per-call time of small ops and throughput of large ones, vs raw NumPy"),
    "alloc": ("bench.alloc", "caching allocator: cache hit/miss per backend, tk.empty vs np/torch/cupy"),
    "launch": ("bench.launch", "host cost of a kernel launch: Triton JIT vs compiled vs our dispatch (GPU)"),
    "autograd": ("bench.autograd", "cpu: autograd per-op fwd+bwd overhead vs raw tkernels/PyTorch; MLP step vs "
                                   "NumPy by hand"),
    "ops": ("bench.ops", "op families: GB/s or FLOP/s vs the measured roofline (copy, best matmul), NumPy/PyTorch"),
    "train": ("bench.train", "training steps of the example models (cpu, cuda); nn MLP vs NumPy/PyTorch targets"),
    "graphs": ("bench.graphs", "GPU: host time per kernel eager vs recorded replay vs CUDA graph; example steps vs "
                               "PyTorch eager/CUDA graph/torch.compile"),
    "compile": ("bench.compile", "interpreted cuda: kernels launched and bytes moved per training step, eager vs "
                                 "autograd.compile"),
    "dist": ("bench.dist", "all-reduce bus bandwidth vs raw mpi4py (1 KiB-256 MiB); DDP step time, 1-2 ranks, overlap "
                           "on/off"),
}


def _add_common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("common options")
    g.add_argument("--quick", action="store_true",
                   help="small sizes and short samples (a smoke test in seconds; numbers are rough)")
    g.add_argument("--repeat", type=int, default=None, metavar="N",
                   help="samples per measurement, median reported (default 7; 3 with --quick)")
    g.add_argument("--min-time", type=float, default=None, metavar="MS",
                   help="minimum duration of one sample in ms (default 20; 2 with --quick)")
    g.add_argument("--settle", type=float, default=None, metavar="MS",
                   help="idle time before each interleaved sample, so the thread pools (BLAS, OpenMP) of the "
                        "function sampled before go quiet (default: the benchmark's own, 250 for train, else 0)")
    g.add_argument("--csv", metavar="PATH", help="save every row as CSV to PATH")
    g.add_argument("--out", metavar="DIR",
                   help="save DIR/<date>-<machine>-<benchmark>.md (the printed report) and .csv")
    g.add_argument("--machine", metavar="NAME", help="machine label of the --out file names (default: cpu)")


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    width = max(len(n) for n in COMMANDS)
    listing = "\n".join(f"  {n.ljust(width)}  {h}" for n, (_, h) in COMMANDS.items())
    p = argparse.ArgumentParser(prog="python -m bench", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Benchmarks of tkernels next to its peers, as ratios.",
                                epilog=f"benchmarks:\n{listing}\n\n'python -m bench BENCHMARK --help' shows "
                                       f"a benchmark's options.")
    sub = p.add_subparsers(dest="command", metavar="BENCHMARK", title="benchmarks")
    for name, (modname, help_) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        if name == selected:
            mod = importlib.import_module(modname)
            if hasattr(mod, "add_arguments"):
                mod.add_arguments(sp)
        _add_common(sp)
    return p


def _selected(argv) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = _selected(argv)
    if name is not None and name not in COMMANDS:
        p = build_parser()
        p.error(f"unknown benchmark {name!r}; available: {', '.join(COMMANDS)} (see python -m bench --help)")
    parser = build_parser(name)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        print("\npython -m bench: choose a benchmark", file=sys.stderr)
        return 2
    if args.repeat is not None and args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    if args.min_time is not None and args.min_time <= 0:
        parser.error(f"--min-time must be > 0 ms, got {args.min_time}")
    if args.settle is not None and args.settle < 0:
        parser.error(f"--settle must be >= 0 ms, got {args.settle}")
    mod = importlib.import_module(COMMANDS[args.command][0])
    repeat = args.repeat or (3 if args.quick else 7)
    min_time = (args.min_time if args.min_time is not None else (2.0 if args.quick else 20.0)) / 1e3
    settle = args.settle / 1e3 if args.settle is not None else getattr(mod, "SETTLE", 0.0)
    timer = getattr(mod, "TIMER", CPUTimer)(min_time=min_time, repeat=repeat, warmup=1 if args.quick else 3,
                                            settle=settle)

    extra = {"command": "python -m bench " + " ".join(argv), "timer": timer.describe()}
    if hasattr(mod, "environment"):
        extra.update(mod.environment(args))
    env = report.environment(extra)
    head = f"## bench {args.command}\n\n{report.render_environment(env)}"
    print(head, flush=True)

    tables = mod.run(args, timer)
    body = report.render(tables)
    print("\n" + body, flush=True)

    if args.csv:
        report.write_csv(args.csv, tables)
    if args.out:
        machine = args.machine or getattr(mod, "MACHINE", "cpu")
        stem = os.path.join(args.out, f"{_datetime.date.today().isoformat()}-{machine}-{args.command}")
        os.makedirs(args.out, exist_ok=True)
        with open(stem + ".md", "w", encoding="utf-8") as f:
            f.write(f"{head}\n\n{body}\n")
        report.write_csv(stem + ".csv", tables)
        print(f"\nsaved {stem}.md and {stem}.csv", file=sys.stderr)
    failed = [r for t in tables for r in t.rows if r.get("status") == "failed"]
    if failed:
        print(f"\npython -m bench {args.command}: {len(failed)} row(s) failed: "
              f"{', '.join(str(r.get('op')) for r in failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
