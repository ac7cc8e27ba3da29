"""cpu storages in shared memory, and how multiprocessing's ForkingPickler sends storages to other processes.

Note [sharing strategies]
Two ways to put a storage in shared memory, PyTorch's names (``set_sharing_strategy``):

- ``file_descriptor`` (the default): an anonymous segment (``memfd_create``; elsewhere a file in /dev/shm unlinked
  at once). It has no name, so nothing can leak: the kernel frees the pages when the last mapping and descriptor
  close, whichever process holds them and however it ends (a SIGKILL included). A message carries the descriptor
  (``multiprocessing.reduction.DupFd``: passed at spawn, or fetched from the sender's resource sharer), so the
  sender must live until the receiver has unpickled it. Each shared storage keeps its descriptor open.
- ``file_system``: a named file ``/dev/shm/tk_<pid>_<n>_<random>`` that a message names. Its first 64 bytes hold a
  reference count, changed under a ``lockf`` lock: 1 for the creator, +1 per message pickled (the receiver adopts
  that reference, so a message whose sender dropped the tensor at once still finds the file), -1 when a process's
  storage dies; at 0 the file is unlinked. A process killed while holding a reference never gives it back: the file
  is registered with multiprocessing's resource tracker (shared by a process tree), which unlinks it when the last
  process of the tree has exited.

Moving a storage into shared memory happens in place: the bytes are copied into the mapping and the Storage's
``data`` is switched to it, so every Array viewing that storage (every view of the tensor) follows. Arrays cache
their NumPy view (``_nd``); the stale ones are found with ``gc.get_referrers`` (one scan per call, whatever the
number of storages: ``share_memory_`` is a setup-time call) and dropped. A NumPy array the user took earlier with
``.numpy()`` keeps the old memory, as in PyTorch.

A process that receives the same segment twice gets the same Storage object back (a per-process cache keyed by
the segment's inode), so aliasing checks (``out._storage is x._storage``) keep working across messages.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import itertools
import mmap
import os
import secrets
import sys
import threading
import weakref
from multiprocessing import reduction, resource_tracker

import numpy as np

from .array import Array, Storage
from .device import CPU
from .validation import OpValueError

__all__ = ["share_memory_", "share_arrays", "is_shared", "get_sharing_strategy", "set_sharing_strategy",
           "get_all_sharing_strategies", "list_segments", "SEGMENT_PREFIX", "init_reductions"]

SEGMENT_PREFIX = "tk_"  # file_system segments: /dev/shm/tk_<pid>_<n>_<random>
_SHM_DIR = "/dev/shm"
_HEADER = 64  # file_system: the reference count, then the data (64-byte aligned)
_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"
_lock = threading.RLock()
_counter = itertools.count()
_segments: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # shared Storage -> _Segment (or None: empty)
_received: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # segment key -> Storage, this process


def get_all_sharing_strategies() -> set[str]:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """How cpu storages are shared from now on (in this process): ``"file_descriptor"`` or ``"file_system"``."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise OpValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; the strategies are "
                           f"{', '.join(map(repr, _STRATEGIES))} (see get_all_sharing_strategies())")
    _strategy = new_strategy


class _Segment:
    """One shared mapping: ``mm`` (data at ``offset``), ``fd`` (file_descriptor) or ``name`` (file_system)."""

    __slots__ = ("mm", "fd", "name", "offset", "nbytes", "key", "__weakref__")

    def __init__(self, mm, fd, name, offset, nbytes, key):
        self.mm, self.fd, self.name, self.offset, self.nbytes, self.key = mm, fd, name, offset, nbytes, key
        at_exit(weakref.finalize(self, _release, fd, name, os.getpid()))

    @property
    def strategy(self) -> str:
        return "file_system" if self.name is not None else "file_descriptor"

    def array(self) -> np.ndarray:
        return np.frombuffer(self.mm, np.uint8, self.nbytes, self.offset)


_exit_hook_pid = None
_finalizers: set = set()  # the finalizers to run when this process exits (dead ones pruned as it grows)


def at_exit(finalizer: weakref.finalize) -> None:
    """Run ``finalizer`` when this process exits, if the object is still alive then: a multiprocessing child exits
    through ``os._exit`` after multiprocessing's own finalizers, skipping ``atexit`` (and so weakref.finalize)."""
    global _exit_hook_pid
    from multiprocessing import util

    if len(_finalizers) >= 256 and len(_finalizers) & (len(_finalizers) - 1) == 0:
        _finalizers.difference_update([f for f in _finalizers if not f.alive])
    _finalizers.add(finalizer)
    if _exit_hook_pid != os.getpid():  # a forked child starts with an empty multiprocessing registry
        _exit_hook_pid = os.getpid()
        util.Finalize(None, _run_finalizers, exitpriority=10)


def _run_finalizers() -> None:
    for f in list(_finalizers):
        f()  # a weakref.finalize runs once: a later gc or atexit call is a no-op
    _finalizers.clear()


def _release(fd, name, pid) -> None:
    """A process's reference to a segment ends (its Storage died); the mapping goes with the last NumPy view."""
    if fd is not None:
        os.close(fd)
    elif os.getpid() == pid:  # a forked child inherited the Storage, not a reference of its own
        _add_ref(name, -1)


def _add_ref(name: str, delta: int) -> None:
    """Change a file_system segment's reference count under a lock; unlink it at 0."""
    path = os.path.join(_SHM_DIR, name)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX, 8, 0)
        n = int.from_bytes(os.pread(fd, 8, 0), "little", signed=True) + delta
        os.pwrite(fd, n.to_bytes(8, "little", signed=True), 0)
        if n <= 0:
            os.unlink(path)
            resource_tracker.unregister("/" + name, "shared_memory")
    finally:
        os.close(fd)  # releases the lock


def _key_of(fd) -> tuple:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def _new_segment(nbytes: int, strategy: str) -> _Segment:
    if strategy == "file_system":
        name = f"{SEGMENT_PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}"
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            resource_tracker.register("/" + name, "shared_memory")  # the last line of defence (Note above)
            os.ftruncate(fd, _HEADER + nbytes)
            os.pwrite(fd, (1).to_bytes(8, "little", signed=True), 0)
            mm = mmap.mmap(fd, _HEADER + nbytes)
            key = _key_of(fd)
        except BaseException:
            os.unlink(os.path.join(_SHM_DIR, name))
            resource_tracker.unregister("/" + name, "shared_memory")
            raise
        finally:
            os.close(fd)
        return _Segment(mm, None, name, _HEADER, nbytes, key)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("tkernels_shared", os.MFD_CLOEXEC)
    else:  # no memfd: a file that is unlinked before anything can fail
        path = os.path.join(_SHM_DIR, f"{SEGMENT_PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
        mm = mmap.mmap(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return _Segment(mm, fd, None, 0, nbytes, _key_of(fd))


def _data_ptr(storage: Storage) -> int:
    data = storage.data
    return data.__array_interface__["data"][0] if isinstance(data, np.ndarray) else data.ptr


def share_arrays(arrays) -> None:
    """Move the storages of these cpu Arrays to shared memory, in place (cuda ones are left as they are)."""
    _share_storages([a._storage for a in arrays])


def _share_storages(storages) -> None:
    moved = []
    with _lock:
        for st in storages:
            if st.device.type != "cpu" or st in _segments:
                continue
            if st.nbytes == 0:
                _segments[st] = None
                continue
            seg = _new_segment(st.nbytes, _strategy)
            data = seg.array()
            ctypes.memmove(data.ctypes.data, _data_ptr(st), st.nbytes)
            st.data = data
            if getattr(st, "pinned", False):
                st.pinned = False  # page-locked memory stays behind: the shared mapping is plain memory
            _segments[st] = seg
            _received[seg.key] = st
            moved.append(st)
        if moved:
            _drop_numpy_views(moved)


def _drop_numpy_views(storages) -> None:
    """Arrays over these storages forget their cached NumPy view of the old memory (see the module note)."""
    ids = {id(s) for s in storages}
    for r in gc.get_referrers(*storages):
        if isinstance(r, Array) and id(r._storage) in ids:
            r._nd = None


def share_memory_(array: Array) -> Array:
    """Move ``array``'s storage to shared memory (cpu; no-op on cuda); every view of the storage follows."""
    share_arrays([array])
    return array


def is_shared(array: Array) -> bool:
    """Whether ``array``'s storage is in shared memory; cuda arrays are shareable (CUDA IPC) and count as shared."""
    st = array._storage
    return st.device.type != "cpu" or st in _segments


def list_segments(prefix: str = SEGMENT_PREFIX) -> list[str]:
    """Named segments in /dev/shm whose name starts with ``prefix`` (for leak checks)."""
    return sorted(n for n in os.listdir(_SHM_DIR) if n.startswith(prefix)) if os.path.isdir(_SHM_DIR) else []


# ------------------------------------------------------------------------------------ ForkingPickler reductions
def _reduce_storage(storage: Storage):
    if storage.device.type != "cpu":
        from .cuda import ipc

        return ipc.reduce_storage(storage)
    _share_storages([storage])
    seg = _segments[storage]
    if seg is None:
        return _rebuild_empty, ()
    if seg.fd is not None:
        return _rebuild_from_fd, (reduction.DupFd(seg.fd), seg.nbytes)
    _add_ref(seg.name, 1)  # the message's reference, adopted by the receiver (Note [sharing strategies])
    return _rebuild_from_name, (seg.name, seg.nbytes)


def _rebuild_empty() -> Storage:
    st = Storage(np.empty(0, np.uint8), 0, CPU)
    _segments[st] = None
    return st


def _adopt(seg: _Segment) -> Storage:
    st = Storage(seg.array(), seg.nbytes, CPU)
    _segments[st] = seg
    _received[seg.key] = st
    return st


def _rebuild_from_fd(dupfd, nbytes: int) -> Storage:
    fd = dupfd.detach()
    with _lock:
        key = _key_of(fd)
        st = _received.get(key)
        if st is not None:
            os.close(fd)
            return st
        try:
            mm = mmap.mmap(fd, nbytes)
        except BaseException:
            os.close(fd)
            raise
        return _adopt(_Segment(mm, fd, None, 0, nbytes, key))


def _rebuild_from_name(name: str, nbytes: int) -> Storage:
    path = os.path.join(_SHM_DIR, name)
    with _lock:
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(f"shared memory: the file_system segment {name!r} ({nbytes} bytes) no longer exists; "
                               f"its last holder released it before this process received the message (or it "
                               f"was already received once); hint: keep the tensor alive in the sender until it "
                               f"is received") from None
        try:
            key = _key_of(fd)
            st = _received.get(key)
            if st is None:
                st = _adopt(_Segment(mmap.mmap(fd, _HEADER + nbytes), None, name, _HEADER, nbytes, key))
                return st
        finally:
            os.close(fd)
    _add_ref(name, -1)  # already mapped here: the message's reference is not needed
    return st


_registered = False


def register_storage_type(cls) -> None:
    """Share storages of ``cls`` (a Storage subclass) through ForkingPickler too (dispatch is by exact type)."""
    reduction.ForkingPickler.register(cls, _reduce_storage)


def init_reductions() -> None:
    """Make multiprocessing's ForkingPickler (Queue, Pool, Process arguments under spawn) share storages."""
    global _registered
    if _registered:
        return
    register_storage_type(Storage)
    memory = sys.modules.get("tkernels.backends.triton.memory")  # else it registers its classes when imported
    if memory is not None:
        memory.register_shared_storage_types()
    _registered = True


init_reductions()
