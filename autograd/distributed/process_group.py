"""Process groups: ``init_process_group`` (the default group over every rank), ``new_group``, and the
queries (``get_rank``, ``get_world_size``...). A group owns an MPI communicator (backend ``"mpi"``) and, for
cuda tensors on backend ``"nccl"``, an NCCL communicator over the same ranks."""

from __future__ import annotations

import datetime
import os
import socket
import sys
import time

from . import _env
from ._mpi import MPIOps
from .work import DistBackendError, DistError, _pid_alive

__all__ = ["ProcessGroup", "init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_nccl_available", "get_rank", "get_world_size", "get_backend", "new_group",
           "GroupMember", "group"]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_NOTICE_TAG = 0x7A6  # the tag of "rank r died of <error>" messages on the notice communicator


class GroupMember:
    """``GroupMember.WORLD``: the default group; ``NON_GROUP_MEMBER``: what ``new_group`` gives the others."""

    WORLD = None
    NON_GROUP_MEMBER = object()


group = GroupMember  # torch.distributed.group.WORLD


class _World:
    default = None     # the default ProcessGroup
    notice = None      # world communicator of failure notices
    peers = None       # (hostname, pid) of every global rank
    groups = []
    hooked = False


def _import_mpi(op):
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(f"{op}: backend 'mpi' needs mpi4py and an MPI library. Hint: pip install "
                           f"'tkernels[distributed]' (mpi4py and the mpich wheel)") from e
    return MPI


def is_mpi_available() -> bool:
    """True when mpi4py and an MPI library can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    """True when libnccl (from the nvidia-nccl wheel or the system) can be loaded."""
    from . import nccl

    return nccl.is_available()


def is_available() -> bool:
    """True: the package is usable (a backend may still be missing, see ``is_mpi_available``)."""
    return True


class ProcessGroup(MPIOps):
    """Ranks ``ranks`` (global numbers) of the world communicating over ``comm`` (an MPI communicator)."""

    def __init__(self, MPI, comm, ranks, backend, timeout):
        self._MPI = MPI
        self.comm = comm
        self.ctl = comm.Dup()  # the DETAIL fingerprints travel apart from the data
        self.ranks = list(ranks)
        self.backend = backend
        self._timeout_s = timeout.total_seconds()
        self._global_rank = MPI.COMM_WORLD.Get_rank()
        self._seq = 0
        self._nccl = None
        self._detail = _env.debug_level() == "DETAIL"  # read once, as PyTorch reads TORCH_DISTRIBUTED_DEBUG
        self._ops = {}  # (ReduceOp, dtype name) -> MPI op (see MPIOps._mpi_op)

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def _local(self, op, name, global_rank):
        """The group rank of a global rank (PyTorch's src/dst are global)."""
        try:
            return self.ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"{op}: {name}={global_rank} is not a rank of this group (global ranks "
                             f"{self.ranks})") from None

    def _dead_ranks(self):
        host = socket.gethostname()
        out = []
        for r in self.ranks:
            h, pid = _World.peers[r]
            if h == host and not _pid_alive(pid):
                out.append((r, pid))
        return out

    def _check_peers(self, what):
        """Raise when a rank posted a failure notice or a rank on this host is gone."""
        MPI = self._MPI
        st = MPI.Status()
        notice = _World.notice
        if notice is not None and notice.Iprobe(MPI.ANY_SOURCE, _NOTICE_TAG, st):
            msg = notice.recv(source=st.Get_source(), tag=_NOTICE_TAG)
            raise DistBackendError(f"{what} on rank {self._global_rank}: rank {st.Get_source()} failed with "
                                   f"{msg}. Hint: its traceback is in that rank's output")
        dead = self._dead_ranks()
        if dead:
            r, pid = dead[0]
            raise DistBackendError(f"{what} on rank {self._global_rank}: rank {r} (pid {pid}) is no longer "
                                   f"running (killed or exited before this collective). Hint: look at that "
                                   f"rank's output")

    def __repr__(self):
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


def _notify_peers(exc_type, exc, tb, _prev=None):
    """sys.excepthook of a rank: tell the other ranks what killed it and report as usual; when the error is a
    failed collective (another rank died, a timeout), abort the MPI job so that no rank stays hung in a
    collective or elsewhere (PyTorch's NCCL watchdog tears the process down likewise).
    AUTOGRAD_DISTRIBUTED_ABORT=0 keeps the other ranks running."""
    try:
        notice = _World.notice
        if notice is not None:
            me = notice.Get_rank()
            msg = f"{exc_type.__name__}: {exc}"[:2000]
            reqs = [notice.isend(msg, dest=r, tag=_NOTICE_TAG) for r in range(notice.Get_size()) if r != me]
            del reqs  # small messages go out eagerly; nothing to wait for
    except Exception:  # noqa: BLE001 - never hide the original error
        pass
    (_prev or sys.__excepthook__)(exc_type, exc, tb)
    if issubclass(exc_type, DistError) and os.environ.get("AUTOGRAD_DISTRIBUTED_ABORT", "1") != "0":
        try:
            sys.stderr.flush()
            sys.stdout.flush()
            # Abort tears down mpiexec's I/O forwarding too: give it a moment to pass on the report just written
            # (without it, the traceback's last line, the error itself, was now and then cut off)
            time.sleep(0.25)
            from mpi4py import MPI

            MPI.COMM_WORLD.Abort(1)
        except Exception:  # noqa: BLE001 - MPI already gone: the process exits anyway
            pass


def _as_timedelta(op, timeout):
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        timeout = datetime.timedelta(seconds=timeout)
    if not isinstance(timeout, datetime.timedelta) or timeout.total_seconds() <= 0:
        raise ValueError(f"{op}: timeout must be a positive datetime.timedelta, got {timeout!r}")
    return timeout


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group of ``world_size`` ranks (``backend``: "mpi" for cpu tensors, "nccl" for
    cuda ones, "mpi|nccl"-style "cpu:mpi,cuda:nccl" for both; default "mpi").

    The MPI world is the one ``mpiexec`` (or ``python -m autograd.distributed.run``, which runs it) started;
    ``init_method="env://"`` (the default) checks RANK/WORLD_SIZE against it when they are set.
    """
    op = "init_process_group"
    if _World.default is not None:
        raise RuntimeError(f"{op}: the default process group is already initialized (backend "
                           f"{_World.default.backend!r}). Hint: call destroy_process_group() first")
    backend = (backend or "mpi").lower()
    if backend in ("cpu:mpi,cuda:nccl", "mpi|nccl", "nccl|mpi"):
        backend = "mpi,nccl"
    if backend not in ("mpi", "nccl", "mpi,nccl", "gloo"):
        raise ValueError(f"{op}: unknown backend {backend!r}; expected 'mpi' (cpu tensors, and cuda tensors "
                         f"staged through the host) or 'nccl' (cuda tensors)")
    if backend == "gloo":  # ported scripts: gloo's role (cpu collectives) is MPI's here
        backend = "mpi"
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://")):
        raise ValueError(f"{op}: init_method={init_method!r}: expected 'env://' (or a tcp:// or file:// URL, "
                         f"accepted for ported scripts: the MPI world is what mpiexec started)")
    timeout = _as_timedelta(op, timeout)
    MPI = _import_mpi(op)
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if world_size in (None, -1) and "WORLD_SIZE" in os.environ:
        world_size = _env.env_int(op, "WORLD_SIZE")
    if rank in (None, -1) and "RANK" in os.environ:
        rank = _env.env_int(op, "RANK")
    if world_size not in (None, -1) and world_size != size:
        raise RuntimeError(f"{op}: world_size={world_size} but the MPI world has {size} process(es). Hint: "
                           f"start the ranks with `python -m autograd.distributed.run --nproc-per-node "
                           f"{world_size} script.py` or `mpiexec -n {world_size} python script.py`; processes "
                           f"started one by one cannot join an MPI world")
    if rank not in (None, -1) and rank != me:
        raise RuntimeError(f"{op}: rank={rank} but MPI numbered this process {me}; pass rank=-1 (or leave RANK "
                           f"unset) to take MPI's numbering")
    # scripts started by plain mpiexec read the torchrun variables too (DistributedSampler, device choice)
    os.environ.setdefault("RANK", str(me))
    os.environ.setdefault("WORLD_SIZE", str(size))
    os.environ.setdefault("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID", os.environ.get(
        "OMPI_COMM_WORLD_LOCAL_RANK", str(me))))
    _World.notice = world.Dup()
    _World.peers = world.allgather((socket.gethostname(), os.getpid()))
    pg = ProcessGroup(MPI, world.Dup(), range(size), backend, timeout)
    _World.default = pg
    GroupMember.WORLD = pg
    _World.groups = [pg]
    if not _World.hooked:  # once per process: a re-initialized group keeps the first hook
        prev = sys.excepthook
        sys.excepthook = lambda t, e, tb: _notify_peers(t, e, tb, prev)
        _World.hooked = True
    if "nccl" in backend:
        from . import nccl

        pg._nccl = nccl.NcclComm.for_group(pg, device_id)


def _default(op) -> ProcessGroup:
    if _World.default is None:
        raise RuntimeError(f"{op}: Default process group has not been initialized, please make sure to call "
                           f"init_process_group.")
    return _World.default


def resolve(op, group_) -> ProcessGroup:
    """The group a collective runs on (None: the default group)."""
    if group_ is None or group_ is GroupMember.WORLD:
        return _default(op)
    if group_ is GroupMember.NON_GROUP_MEMBER:
        raise RuntimeError(f"{op}: this rank is not a member of the group it was given")
    if not isinstance(group_, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup from new_group (or None), got "
                        f"{type(group_).__name__}")
    return group_


def is_initialized() -> bool:
    return _World.default is not None


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the world); -1 when it is not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve("get_rank", group).rank()


def get_world_size(group=None) -> int:
    """The number of ranks of ``group`` (default: the world)."""
    return resolve("get_world_size", group).size()


def get_backend(group=None) -> str:
    return resolve("get_backend", group).backend


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """A group over the global ``ranks`` (default: all). Every rank of the world must call it, in the same
    order, as in PyTorch; the others get ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default("new_group")
    world = pg.comm
    n = world.Get_size()
    ranks = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < n for r in ranks):
        raise ValueError(f"new_group: ranks={ranks} must be distinct ranks of the world (0..{n - 1})")
    timeout = _as_timedelta("new_group", timeout) if timeout is not None else \
        datetime.timedelta(seconds=pg._timeout_s)
    me = world.Get_rank()
    color = 0 if me in ranks else pg._MPI.UNDEFINED
    sub = world.Split(color, ranks.index(me) if me in ranks else 0)
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(pg._MPI, sub, ranks, backend or pg.backend, timeout)
    _World.groups.append(g)
    if "nccl" in g.backend:
        from . import nccl

        g._nccl = nccl.NcclComm.for_group(g, None)
    return g


def destroy_process_group(group=None) -> None:
    """Free ``group`` (default: every group, and the default one)."""
    if group is not None and group is not GroupMember.WORLD:
        g = resolve("destroy_process_group", group)
        _free(g)
        if g in _World.groups:
            _World.groups.remove(g)
        return
    for g in _World.groups:
        _free(g)
    if _World.notice is not None:
        try:
            _World.notice.Free()
        except Exception:  # noqa: BLE001 - MPI finalized
            pass
        _World.notice = None
    _World.groups = []
    _World.default = None
    GroupMember.WORLD = None


def _free(g):
    for c in (g.ctl, g.comm):
        try:
            c.Free()
        except Exception:  # noqa: BLE001 - already freed or MPI finalized
            pass
    if g._nccl is not None:
        g._nccl.destroy()
        g._nccl = None
