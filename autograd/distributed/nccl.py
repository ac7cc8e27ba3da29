"""NCCL for cuda tensors, bound torch-free with ctypes on libnccl.so (from NVIDIA's ``nvidia-nccl-cu12``
wheel, or the system's). Not finished: the communicator is not created yet; see ``NcclComm``."""

from __future__ import annotations

import ctypes
import glob
import os

_LIB = None


def _find_lib():
    env = os.environ.get("AUTOGRAD_NCCL_LIBRARY")
    if env:
        return env
    try:
        import nvidia.nccl as _nv  # the nvidia-nccl-cu12 wheel: nvidia/nccl/lib/libnccl.so.2

        for d in _nv.__path__:
            hits = glob.glob(os.path.join(d, "lib", "libnccl.so*"))
            if hits:
                return hits[0]
    except ImportError:
        pass
    return "libnccl.so.2"


def load():
    """The ctypes handle of libnccl (loaded once); OSError when there is none."""
    global _LIB
    if _LIB is None:
        _LIB = ctypes.CDLL(_find_lib())
    return _LIB


def is_available() -> bool:
    try:
        load()
    except OSError:
        return False
    return True


class NcclComm:
    """An NCCL communicator over a process group's ranks (not implemented yet)."""

    @classmethod
    def for_group(cls, group, device_id):
        raise NotImplementedError("init_process_group: backend 'nccl' is not implemented yet in this build; use "
                                  "backend 'mpi' (cuda tensors are then staged through host memory)")
