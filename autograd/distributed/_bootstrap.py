"""What ``autograd.distributed.run`` starts under mpiexec: the torchrun environment variables from MPI's
numbering (read from the launcher's environment, so MPI itself starts only when the script asks), then the
script as ``__main__``."""

from __future__ import annotations

import os
import runpy
import sys


def _first(*names):
    for n in names:
        v = os.environ.get(n)
        if v is not None:
            return v
    return None


def main() -> None:
    rank = _first("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    size = _first("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
    local = _first("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")
    nlocal = _first("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
    if rank is None:
        raise SystemExit("autograd.distributed._bootstrap: not started by mpiexec (no PMI_RANK); use "
                         "python -m autograd.distributed.run")
    os.environ["RANK"] = rank
    os.environ["LOCAL_RANK"] = local if local is not None else rank
    if size is not None:
        os.environ["WORLD_SIZE"] = size
    if nlocal is not None:
        os.environ["LOCAL_WORLD_SIZE"] = nlocal
    run_dir = os.environ.get("AUTOGRAD_DISTRIBUTED_RUN_DIR")
    if run_dir:  # the launcher names the ranks' pids when the job fails (mpiexec names only pids)
        try:
            with open(os.path.join(run_dir, f"rank{rank}.pid"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass
    args = sys.argv[1:]
    if args and args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
