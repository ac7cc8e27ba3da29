"""Where a process learns its rank and world: the launcher's environment variables or the MPI world."""

from __future__ import annotations

import os

DEBUG_VARS = ("AUTOGRAD_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG")


def debug_level() -> str:
    """``OFF``, ``INFO`` or ``DETAIL``, from AUTOGRAD_DISTRIBUTED_DEBUG (or TORCH_DISTRIBUTED_DEBUG, for ported
    scripts); DETAIL checks every collective's (op, shape, dtype) against the other ranks before running it."""
    for name in DEBUG_VARS:
        v = os.environ.get(name)
        if v:
            v = v.strip().upper()
            if v not in ("OFF", "INFO", "DETAIL"):
                raise ValueError(f"{name}={v!r}: expected OFF, INFO or DETAIL")
            return v
    return "OFF"


def env_int(op: str, name: str, default=None):
    v = os.environ.get(name)
    if v is None or v == "":
        if default is None:
            raise ValueError(f"{op}: environment variable {name} is not set. Hint: start the script with "
                             f"`python -m autograd.distributed.run --nproc-per-node N script.py` or "
                             f"`mpiexec -n N python script.py`, or pass rank= and world_size=")
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{op}: environment variable {name}={v!r} is not an integer") from None


def launched_by_mpiexec() -> bool:
    """True when an MPI launcher (MPICH's hydra or Open MPI's orterun/prte) started this process."""
    return "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ or "PMIX_RANK" in os.environ
