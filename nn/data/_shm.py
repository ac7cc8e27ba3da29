"""Moving a batch from a worker process to the main process through shared memory.

Note [batch transport]
The worker pickles the batch with a ``persistent_id`` hook that pulls every NumPy array and cpu Tensor out of the
stream; their bytes go into ONE ``multiprocessing.shared_memory`` segment per batch (64-byte aligned slots) and
only the small pickle (structure + slot table + segment name) travels through the result queue. The main process
maps the segment, unlinks it at once (Linux keeps the pages alive while mapped), and rebuilds the arrays as
zero-copy views of the mapping; the pages are freed when the last view dies.

Leaks: a segment is named ``<prefix><worker>_<seq>`` with a prefix unique to one worker pool, so the pool can
sweep ``/dev/shm`` for its prefix on shutdown and unlink whatever a killed worker or an abandoned message left
behind. The worker's ``SharedMemory`` registers the segment with multiprocessing's resource tracker (shared
with the main process), the last line of defence if the main process itself dies; the main process unregisters
every segment it unlinks, so the tracker never warns about segments we cleaned up.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
from multiprocessing import resource_tracker, shared_memory

import numpy as np

import autograd as ag
import tkernels as tk

_SHM_DIR = "/dev/shm"  # where POSIX shared memory lives on Linux; elsewhere we attach and copy
_ALIGN = 64


class _BatchPickler(pickle.Pickler):
    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays: list[np.ndarray] = []
        self.kinds: list[str] = []
        self._seen: dict[int, int] = {}

    def persistent_id(self, obj):
        if type(obj) is np.ndarray and not obj.dtype.hasobject:
            kind, arr = "nd", obj
        elif isinstance(obj, ag.Tensor):
            if obj.device.type != "cpu":
                raise TypeError(f"DataLoader worker: the batch holds a {obj.device} tensor of shape "
                                f"{list(obj.shape)}; worker processes must return cpu data (move batches to the "
                                f"device in the main process, e.g. batch.to('cuda'))")
            kind, arr = "t", obj.detach().numpy()
        else:
            return None
        key = id(obj)
        slot = self._seen.get(key)
        if slot is None:
            slot = self._seen[key] = len(self.arrays)
            self.arrays.append(arr)
            self.kinds.append(kind)
        return slot


class _BatchUnpickler(pickle.Unpickler):
    def __init__(self, file, objects):
        super().__init__(file)
        self._objects = objects

    def persistent_load(self, pid):
        return self._objects[pid]


def pack(obj, name: str) -> tuple:
    """Pickle ``obj``, its arrays into a new shared-memory segment ``name`` (none when there are no bytes).
    Returns the message for the result queue: ``(pickle bytes, segment name or None, slot table)``."""
    buf = io.BytesIO()
    p = _BatchPickler(buf)
    p.dump(obj)
    slots, off = [], 0
    for kind, a in zip(p.kinds, p.arrays, strict=True):
        slots.append((kind, off, a.shape, a.dtype))
        off += (a.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    if off == 0:
        return buf.getvalue(), None, slots
    shm = shared_memory.SharedMemory(name=name, create=True, size=off)
    try:
        for (_, start, shape, dtype), a in zip(slots, p.arrays, strict=True):
            dst = np.ndarray(shape, dtype, buffer=shm.buf, offset=start)
            dst[...] = a
            del dst  # an exported view would make close() fail
    except BaseException:
        shm.close()
        shm.unlink()
        raise
    shm.close()
    return buf.getvalue(), name, slots


def release(name: str | None) -> None:
    """Unlink segment ``name`` if it still exists (and tell the resource tracker)."""
    if name is None:
        return
    if os.path.isdir(_SHM_DIR):
        try:
            os.unlink(os.path.join(_SHM_DIR, name))
        except FileNotFoundError:
            return
        resource_tracker.unregister("/" + name, "shared_memory")
        return
    try:  # no /dev/shm: attach (registers) and unlink (unregisters)
        shm = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    shm.close()
    shm.unlink()


def unpack(msg):
    """Rebuild the object sent by ``pack``; the segment is unlinked before anything else can fail."""
    data, name, slots = msg
    objects = []
    if name is not None:
        if os.path.isdir(_SHM_DIR):
            path = os.path.join(_SHM_DIR, name)
            fd = os.open(path, os.O_RDWR)
            try:
                mem = mmap.mmap(fd, os.fstat(fd).st_size)
            finally:
                os.close(fd)
                os.unlink(path)
                resource_tracker.unregister("/" + name, "shared_memory")
            views = [np.ndarray(shape, dtype, buffer=mem, offset=off) for _, off, shape, dtype in slots]
        else:
            shm = shared_memory.SharedMemory(name=name)
            try:
                views = [np.ndarray(shape, dtype, buffer=shm.buf, offset=off).copy() for _, off, shape, dtype in slots]
            finally:
                shm.close()
                shm.unlink()
    else:
        views = [np.empty(shape, dtype) for _, _, shape, dtype in slots]
    for (kind, *_), v in zip(slots, views, strict=True):
        objects.append(ag.Tensor._wrap(tk.from_numpy(v)) if kind == "t" else v)
    return _BatchUnpickler(io.BytesIO(data), objects).load()


def sweep(prefix: str) -> list[str]:
    """Unlink every segment whose name starts with ``prefix``; returns their names."""
    if not os.path.isdir(_SHM_DIR):
        return []
    found = [n for n in os.listdir(_SHM_DIR) if n.startswith(prefix)]
    for n in found:
        try:
            os.unlink(os.path.join(_SHM_DIR, n))
        except FileNotFoundError:
            continue
        # a killed worker may not have registered it yet: register (idempotent) then unregister, always balanced
        resource_tracker.register("/" + n, "shared_memory")
        resource_tracker.unregister("/" + n, "shared_memory")
    return found


def list_segments(prefix: str = "") -> list[str]:
    """Shared-memory segments whose name starts with ``prefix`` (for tests and leak checks)."""
    return sorted(n for n in os.listdir(_SHM_DIR) if n.startswith(prefix)) if os.path.isdir(_SHM_DIR) else []
