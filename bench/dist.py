"""``python -m bench dist``: all-reduce bus bandwidth of autograd.distributed next to raw mpi4py on NumPy
buffers (same ranks, same run, interleaved per size), and the step time of a DistributedDataParallel MLP on 1
and 2 ranks with the backward/communication overlap on and off.

The ranks run under mpiexec (bench/dist_worker.py); this process only launches them and tabulates. Bus
bandwidth is NCCL-tests' definition: bytes / time * 2 (n - 1) / n. Target (DESIGN.md §11): ours >= 0.95x raw
mpi4py from 1 MiB up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from bench import report

MACHINE = "cpu"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_arguments(p) -> None:
    p.add_argument("--ranks", type=int, default=2, help="ranks of the all-reduce table (default 2)")
    p.add_argument("--max-mib", type=int, default=256, help="largest all-reduce in MiB (default 256; 16 with --quick)")
    p.add_argument("--width", type=int, default=512, help="hidden width of the DDP MLP (default 512: 0.8 M params)")


def environment(args) -> dict:
    try:
        from mpi4py import MPI

        lib = MPI.Get_library_version().splitlines()[0].strip()
    except ImportError:
        lib = "mpi4py not installed"
    return {"mpi": lib, "ranks on": f"{os.cpu_count()} cores"}


def _launch(n, *worker_args, timeout=900):
    from autograd.distributed.run import find_mpiexec

    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise RuntimeError("bench dist: no mpiexec. Hint: pip install -e '.[distributed]'")
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # one BLAS thread per rank, as MPI jobs run: the ranks already fill the cores, and OpenBLAS threads spinning
    # against the other rank made a 512-wide MLP step 85 ms instead of 5 ms (2 cores)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    p = subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "bench.dist_worker", *map(str, worker_args)],
                       env=env, capture_output=True, text=True, timeout=timeout, cwd=_ROOT)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"bench dist: the ranks failed (exit {p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")


def _size(n):
    return f"{n // 1024 ** 2} MiB" if n >= 1024 ** 2 else f"{n // 1024} KiB"


def run(args, timer) -> list:
    n = args.ranks
    top = (16 if args.quick else args.max_mib) * 1024 ** 2
    sizes = []
    s = 1024
    while s <= top:
        sizes.append(s)
        s *= 4
    repeat = timer.repeat
    min_s = timer.min_time
    ar = report.Table("allreduce", f"all_reduce of float32 on {n} ranks: bus bandwidth, ours vs raw mpi4py",
                      [report.Column("size", "size"), report.Column("ours_us", "ours µs", lambda v: f"{v:.1f}"),
                       report.Column("raw_us", "mpi4py µs", lambda v: f"{v:.1f}"),
                       report.Column("ours_bw", "ours GB/s", lambda v: f"{v:.2f}"),
                       report.Column("raw_bw", "mpi4py GB/s", lambda v: f"{v:.2f}"),
                       report.Column("ratio", "ours/mpi4py", lambda v: f"{v:.2f}"),
                       report.Column("ratio_med", "(median)", lambda v: f"{v:.2f}"),
                       report.Column("status", "target")])
    for r in _launch(n, "allreduce", ",".join(map(str, sizes)), repeat, min_s):
        f = 2 * (n - 1) / n
        ratio = r["raw_s"] / r["ours_s"]
        ok = "—" if r["bytes"] < 1024 ** 2 else ("ok" if ratio >= 0.95 else "failed")
        ar.add(size=_size(r["bytes"]), ours_us=r["ours_s"] * 1e6, raw_us=r["raw_s"] * 1e6,
               ours_bw=r["bytes"] * f / r["ours_s"] / 1e9, raw_bw=r["bytes"] * f / r["raw_s"] / 1e9, ratio=ratio,
               ratio_med=r["raw_med_s"] / r["ours_med_s"], status=ok)
    ar.notes.append("times: the best of the samples (ours and mpi4py interleaved sample by sample); ratio = "
                    "bandwidth of ours / raw mpi4py Allreduce (in place, blocking) on a NumPy buffer, from the best "
                    "times, and from the medians; target >= 0.95 from 1 MiB; below that the ~10 µs of Python per "
                    "call dominate")
    ar.notes.append("ours: Iallreduce on the tensor's own memory, polled against the group's timeout (what makes "
                    "a dead rank an error instead of a hang)")
    ddp = report.Table("ddp", f"DistributedDataParallel step (MLP {args.width}x4, batch 32 per rank, SGD, "
                              f"bucket_cap_mb=1)",
                       [report.Column("ranks", "ranks", lambda v: str(v)), report.Column("overlap", "overlap"),
                        report.Column("step_ms", "step ms", lambda v: f"{v:.2f}"),
                        report.Column("vs", "vs overlap off", lambda v: "" if v is None else f"{v:.2f}x")])
    steps = 10 if args.quick else 40
    for ranks in (1, 2):
        res = {}
        for overlap in (False, True):
            res[overlap] = _launch(ranks, "ddp", steps, int(overlap), args.width)
        for overlap in (False, True):
            ddp.add(ranks=ranks, overlap="on" if overlap else "off", step_ms=res[overlap]["step_s"] * 1e3,
                    vs=None if not overlap else res[False]["step_s"] / res[True]["step_s"])
    ddp.notes.append("overlap on: each bucket's all-reduce starts from the gradient hooks as soon as it is "
                     "complete; off: all start at the end of backward. Median step time of the slowest rank")
    ddp.notes.append("one BLAS thread per rank (OPENBLAS_NUM_THREADS=1 unless set)")
    ddp.notes.append("the ranks share the machine's cores with each other (and MPI progresses only inside MPI "
                     "calls: the hooks poll in-flight buckets), so on a 2-core box the gain is bounded")
    return [ar, ddp]
