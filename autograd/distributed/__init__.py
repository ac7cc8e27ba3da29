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
from .objects import *  # noqa: F401,F403
from .objects import __all__ as _obj_all
from .process_group import *  # noqa: F401,F403
from .process_group import ProcessGroup  # noqa: F401
from .process_group import __all__ as _pg_all
from .reduce_op import ReduceOp
from .work import DistBackendError, DistError, DistTimeoutError, Work

__all__ = [*_pg_all, "ReduceOp", "Work", "DistError", "DistBackendError", "DistTimeoutError", *_coll_all, *_obj_all]
