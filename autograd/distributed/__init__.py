"""autograd.distributed: process groups and collectives over MPI (cpu) and NCCL (cuda), PyTorch's
``torch.distributed`` API; ``python -m autograd.distributed.run`` launches the ranks.

    import autograd.distributed as dist
    dist.init_process_group("mpi")               # in a script started by the launcher or mpiexec
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

Debugging: AUTOGRAD_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG=DETAIL) checks before every
collective that all ranks call it with the same op, shape and dtype.
"""

from .collectives import *  # noqa: F401,F403
from .collectives import __all__ as _coll_all
from .process_group import (
                            GroupMember,
                            ProcessGroup,
                            destroy_process_group,
                            get_backend,
                            get_rank,
                            get_world_size,
                            group,
                            init_process_group,
                            is_available,
                            is_initialized,
                            is_mpi_available,
                            is_nccl_available,
                            new_group,
)
from .reduce_op import ReduceOp
from .work import DistBackendError, DistError, DistTimeoutError, Work

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_nccl_available", "get_rank", "get_world_size", "get_backend", "new_group", "group", "GroupMember",
           "ProcessGroup", "ReduceOp", "Work", "DistError", "DistBackendError", "DistTimeoutError", *_coll_all]
