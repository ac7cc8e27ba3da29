"""``autograd.multiprocessing``: ``multiprocessing`` whose pickling shares tensors (``torch.multiprocessing``).

Everything ``multiprocessing`` offers is here (``Process``, ``Queue``, ``Pool``, ``get_context``...); importing this
module registers reductions with multiprocessing's ``ForkingPickler``, so a Tensor or Array sent through a Queue, a
Pool or the arguments of a spawned Process moves its storage to shared memory (cpu: Note [sharing strategies] in
``tkernels/shared_memory.py``; cuda: CUDA IPC, ``tkernels/cuda/ipc.py``) and the receiver maps the same memory:
in-place updates on either side are seen by both. Plain ``pickle`` still copies. ``spawn(fn, args, nprocs)`` starts
``fn(i, *args)`` in ``nprocs`` processes and raises ``ProcessRaisedException`` (with the child's traceback) or
``ProcessExitedException`` when one fails.

    import autograd.multiprocessing as mp
    model.share_memory()
    mp.spawn(train, args=(model,), nprocs=4)
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from tkernels.shared_memory import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy

from . import reductions
from .spawn import (
                    ProcessContext,
                    ProcessException,
                    ProcessExitedException,
                    ProcessRaisedException,
                    SpawnContext,
                    spawn,
                    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "SpawnContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException", "reductions"] + list(multiprocessing.__all__)

reductions.init_reductions()
