"""The launcher, like ``torchrun``: ``python -m autograd.distributed.run --nproc-per-node N script.py [args]``.

Note [how the ranks get an MPI world]: the processes of one MPI world must be started by an MPI launcher (a
process started on its own is a world of one: MPICH's wheel has no usable dynamic-process path without a
running process manager). So this command runs ``mpiexec -n N`` (the one installed beside this Python by the
``mpich`` wheel, else the first on PATH) on ``python -m autograd.distributed._bootstrap``, which sets
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT from MPI's numbering before
running the script as ``__main__``; ``init_process_group(init_method="env://")`` then finds them and
checks them against the MPI world. Scripts started by ``mpiexec -n N python script.py`` directly work too.
Single node only (``--nnodes 1``): several nodes are mpiexec's job (``mpiexec -hosts ...``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def find_mpiexec() -> str | None:
    """mpiexec beside this interpreter (the venv's bin, where the mpich wheel puts it), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    return shutil.which("mpiexec")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograd.distributed.run",
                                description="Start N ranks of a training script on this node (over mpiexec).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, metavar="N",
                   help="ranks to start (default 1)")
    p.add_argument("--nnodes", type=str, default="1", help="only 1 (several nodes: use mpiexec -hosts)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun compatibility")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to run (default: the venv's, else PATH's)")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        print(f"autograd.distributed.run: --nnodes {args.nnodes} is not supported; start the ranks of several "
              f"nodes with mpiexec -n N -hosts a,b python script.py", file=sys.stderr)
        return 2
    if args.nproc_per_node < 1:
        print("autograd.distributed.run: --nproc-per-node must be >= 1", file=sys.stderr)
        return 2
    mpiexec = args.mpiexec or find_mpiexec()
    if mpiexec is None:
        print("autograd.distributed.run: no mpiexec found. Hint: pip install 'tkernels[distributed]' (mpi4py and "
              "the mpich wheel, which brings mpiexec)", file=sys.stderr)
        return 2
    env = dict(os.environ, WORLD_SIZE=str(args.nproc_per_node), LOCAL_WORLD_SIZE=str(args.nproc_per_node),
               MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port), GROUP_RANK="0")
    with tempfile.TemporaryDirectory(prefix="ag-dist-run-") as run_dir:
        env["AUTOGRAD_DISTRIBUTED_RUN_DIR"] = run_dir
        cmd = [mpiexec, "-n", str(args.nproc_per_node), sys.executable, "-m", "autograd.distributed._bootstrap"]
        cmd += (["-m"] if args.module else []) + [args.script] + list(args.script_args)
        try:
            rc = subprocess.call(cmd, env=env)
        except KeyboardInterrupt:
            return 130
        if rc != 0:
            pids = []
            for name in sorted(os.listdir(run_dir)):
                with open(os.path.join(run_dir, name)) as f:
                    pids.append(f"{name.split('.')[0]}: pid {f.read().strip()}")
            print(f"autograd.distributed.run: the job failed (mpiexec exit status {rc}); ranks: "
                  f"{', '.join(pids) or 'none started'}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
