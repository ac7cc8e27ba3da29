"""Sending cuda storages to other processes: CUDA IPC handles on caching-allocator blocks, kept alive for consumers.

Note [CUDA IPC and the caching allocator]
A CUDA IPC handle names a whole ``cuMemAlloc`` allocation, and our blocks are pieces of the allocator's segments.
So a message carries the segment's handle, the block's offset in it and its size; the consumer opens the handle
(``cuIpcOpenMemHandle``, once per process: opens are counted here and the last close unmaps it) and wraps the
bytes at that offset in an ``IpcStorage``.

Keep-alive (a simple form of PyTorch's CudaIPCSentData): once the producer's own tensors die, its allocator would
hand the block to the next ``malloc`` while a consumer still reads it. So each message takes one byte of an
*ack file* of the producer (a memfd mapping, 4096 slots, passed to the consumer with ``DupFd``) and the producer
keeps a strong reference to the storage under that slot. The byte is 1 while the consumer holds the storage; the
consumer's storage finalizer writes 0 (each byte has one writer at a time: the producer sets it, the consumer
clears it). ``ipc_collect()`` (run on every send, and callable, as ``torch.cuda.ipc_collect``) drops the
references whose byte is 0, and the block goes back to the pool when nothing else holds it. A consumer that is
killed never clears its bytes: the producer keeps those blocks until it exits.

The producer's current stream is synchronized before the handle is sent, so the consumer reads finished work (no
IPC events). The producer must outlive its consumers' use of the memory (CUDA frees an exporter's memory when it
exits). A storage received from another process can be sent on: the message names the original handle, and the
forwarding process keeps its ``IpcStorage`` alive for its own consumer the same way. A message that comes back to
the process whose memory it names returns the original storage (a process cannot open its own handle).

What runs where: on a GPU, the driver's IPC (real-GPU tests are marked ``gpu``); interpreted cuda, segments are
memfd mappings and handles are opened through /proc/<pid>/fd (``HostRuntime``), so values really cross processes;
the fake libcuda does the same in C.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from multiprocessing import reduction

from .. import shared_memory
from ..array import Storage
from ..validation import OpTypeError

__all__ = ["IpcMemory", "IpcStorage", "reduce_storage", "ipc_collect"]

_SLOTS = 4096
_lock = threading.RLock()
_acks: list = []  # this process's ack files: [id, fd, mmap, free slots]
_sent: dict = {}  # (ack id, slot) -> the storage kept alive for that message
_received: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (handle, offset, nbytes) -> IpcStorage
_consumer_acks: dict = {}  # (sender pid, ack id) -> mmap of that sender's ack file
_exported: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (base, offset, nbytes) -> own storage
_opened: dict = {}  # (device index, handle) -> [base pointer, storages using it]


class IpcMemory:
    """Device memory mapped from another process: ``ptr`` (what Arrays and kernels read)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr


class IpcStorage(Storage):
    """A Storage over another process's device memory; ``origin`` says whose: (pid, handle, offset, segment size)."""

    __slots__ = ("origin",)

    def __init__(self, ptr: int, nbytes: int, device, origin):
        super().__init__(IpcMemory(ptr), nbytes, device)
        self.origin = origin


def _runtime():
    from .runtime import get_runtime

    return get_runtime()


def _new_ack_file():
    fd = os.memfd_create("tkernels_ipc_acks", os.MFD_CLOEXEC)
    os.ftruncate(fd, _SLOTS)
    entry = [len(_acks), fd, mmap.mmap(fd, _SLOTS), list(range(_SLOTS - 1, -1, -1))]
    _acks.append(entry)
    return entry


def _take_slot():
    for entry in _acks:
        if entry[3]:
            return entry, entry[3].pop()
    entry = _new_ack_file()
    return entry, entry[3].pop()


def ipc_collect() -> int:
    """Release the storages whose consumers are done with them; returns how many are still held for consumers."""
    with _lock:
        for key in [k for k in _sent if _acks[k[0]][2][k[1]] == 0]:
            del _sent[key]
            _acks[key[0]][3].append(key[1])
        return len(_sent)


def reduce_storage(storage: Storage):
    """ForkingPickler reduction of a cuda storage (an allocator block, or memory received by IPC)."""
    from . import current_stream

    index = storage.device.index or 0
    rt = _runtime()
    if isinstance(storage, IpcStorage):
        pid, handle, offset, seg_size = storage.origin
    elif getattr(storage, "block", None) is not None:
        base, seg_size = storage._allocator.segment_of(storage.block)
        offset = storage.block.ptr - base
        pid, handle = os.getpid(), rt.ipc_get_mem_handle(index, base)
        _exported[(handle, offset, storage.nbytes)] = storage
    else:
        raise OpTypeError(f"multiprocessing: cannot send this cuda storage ({storage.nbytes} bytes on "
                          f"{storage.device}, {type(storage.data).__name__}) to another process: only memory of the "
                          f"caching allocator has a CUDA IPC handle; hint: send a copy (t.clone())")
    rt.stream_synchronize(index, current_stream(index).handle)  # the consumer reads finished work
    with _lock:
        ipc_collect()
        entry, slot = _take_slot()
        entry[2][slot] = 1
        _sent[(entry[0], slot)] = storage
    ack = (os.getpid(), entry[0], reduction.DupFd(entry[1]), slot)
    return _rebuild, (index, pid, handle, offset, seg_size, storage.nbytes, ack)


def _ack_mmap(sender, ack_id, dupfd):
    fd = dupfd.detach()  # always: it frees the sender's resource-sharer entry
    try:
        mm = _consumer_acks.get((sender, ack_id))
        if mm is None:
            mm = _consumer_acks[(sender, ack_id)] = mmap.mmap(fd, _SLOTS)
        return mm
    finally:
        os.close(fd)


def _rebuild(index, pid, handle, offset, seg_size, nbytes, ack):
    from ..device import Device

    sender, ack_id, dupfd, slot = ack
    if sender == os.getpid():  # our own message: the storage we keep for it
        with _lock:
            dupfd.detach()
            storage = _sent[(ack_id, slot)]
            _acks[ack_id][2][slot] = 0
        return storage
    ack_mm = _ack_mmap(sender, ack_id, dupfd)
    if pid == os.getpid():  # our memory, forwarded back by another process
        storage = _exported.get((handle, offset, nbytes))
        ack_mm[slot] = 0
        if storage is None:
            raise RuntimeError(f"multiprocessing: a cuda storage of this process ({nbytes} bytes on cuda:{index}) came "
                               f"back after it was freed here")
        return storage
    key = (handle, offset, nbytes)
    with _lock:
        storage = _received.get(key)
        if storage is not None:
            ack_mm[slot] = 0  # already held here: this message's reference is not needed
            return storage
        opened = _opened.get((index, handle))
        if opened is None:
            opened = _opened[(index, handle)] = [_runtime().ipc_open_mem_handle(index, handle), 0]
        opened[1] += 1
        storage = IpcStorage(opened[0] + offset, nbytes, Device("cuda", index), (pid, handle, offset, seg_size))
        _received[key] = storage
    shared_memory.at_exit(weakref.finalize(storage, _release, index, handle, ack_mm, slot, os.getpid()))
    return storage


def _release(index, handle, ack_mm, slot, pid) -> None:
    """A consumer's storage died: close the handle when no storage of this process uses it, and ack."""
    if pid != os.getpid():  # a forked child inherited the storage; the reference is the parent's
        return
    with _lock:
        opened = _opened[(index, handle)]
        opened[1] -= 1
        if opened[1] == 0:
            del _opened[(index, handle)]
            _runtime().ipc_close_mem_handle(index, opened[0])
    ack_mm[slot] = 0


def _after_fork_in_child() -> None:
    """A forked child gets ack files of its own: the inherited ones are the parent's (a shared mapping)."""
    global _lock
    _lock = threading.RLock()
    for entry in _acks:
        os.close(entry[1])
    _acks.clear()
    _sent.clear()


shared_memory.register_storage_type(IpcStorage)
os.register_at_fork(after_in_child=_after_fork_in_child)
