"""Count fuzz outcomes without stopping at the first failure:

    python -m tests.fuzz --examples 5000 [--table autograd|tkernels] [--device cpu|cuda] [--seed 0] [--show 20]

prints the counts per outcome and the first cases of each mismatch/unclean class (grouped by op)."""

import argparse
import collections
import os
import sys
import time

os.environ.setdefault("TKERNELS_INTERPRET", "1")
if os.environ["TKERNELS_INTERPRET"] == "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402

from .run import run_many  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.fuzz")
    p.add_argument("--examples", type=int, default=2000)
    p.add_argument("--table", choices=("autograd", "tkernels"), default="autograd")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--show", type=int, default=3, help="cases shown per (op, outcome)")
    p.add_argument("--no-torch", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    outcomes = run_many(a.table, a.device, a.examples, np.random.default_rng(a.seed), use_torch=not a.no_torch)
    counts = collections.Counter(o.kind for o in outcomes)
    groups = collections.defaultdict(list)
    for o in outcomes:
        if o.kind in ("mismatch", "unclean", "open"):
            groups[o.kind, o.case.op.name].append(o)
    for (kind, name), os_ in sorted(groups.items()):
        print(f"== {kind} {name}: {len(os_)}")
        for o in os_[:a.show]:
            print("  ", o)
    print(f"{a.table} on {a.device}: {a.examples} cases in {time.perf_counter() - t0:.1f} s: "
          + ", ".join(f"{k} {counts[k]}" for k in ("ok", "mismatch", "unclean", "open", "deviation", "skip")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
