"""Collectives of picklable Python objects (``broadcast_object_list``, ``all_gather_object``...): pickled to
bytes, sizes exchanged first, the bytes moved by the group's MPI calls (never NCCL: they are host data)."""

from __future__ import annotations

import pickle

import numpy as np

from .process_group import resolve

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def _object_bytes(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable ``obj`` into ``object_list`` (length world_size)."""
    g = resolve("all_gather_object", group)
    n = g.size()
    if not isinstance(object_list, list) or len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list must be a list of world_size={n} slots")
    data = _object_bytes(obj)
    sizes = np.empty(n, np.int64)
    g.mpi_all_gather(sizes, np.array([data.size], np.int64), "all_gather_object (sizes)").wait()
    out = np.empty(int(sizes.sum()), np.uint8)
    g.mpi_all_to_all(out, sizes.tolist(), np.tile(data, n), [data.size] * n, "all_gather_object").wait()
    k = 0
    for r, s in enumerate(sizes.tolist()):
        object_list[r] = pickle.loads(out[k:k + s].tobytes())
        k += s


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """Every rank's picklable ``obj`` into ``object_gather_list`` of rank ``dst``."""
    g = resolve("gather_object", group)
    objs = [None] * g.size()
    all_gather_object(objs, obj, group)
    if g.rank() == g._local("gather_object", "dst", dst):
        object_gather_list[:] = objs


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """The picklable objects of ``object_list`` on global rank ``src`` replace those on every rank."""
    g = resolve("broadcast_object_list", group)
    root = g._local("broadcast_object_list", "src", src)
    data = _object_bytes(list(object_list)) if g.rank() == root else None
    size = np.array([0 if data is None else data.size], np.int64)
    g.mpi_broadcast(size, root, "broadcast_object_list (size)").wait()
    buf = data if data is not None else np.empty(int(size[0]), np.uint8)
    g.mpi_broadcast(buf, root, "broadcast_object_list").wait()
    if g.rank() != root:
        objs = pickle.loads(buf.tobytes())
        if len(objs) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(objs)} objects but object_list here has "
                             f"{len(object_list)} slots")
        object_list[:] = objs


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None):
    """``scatter_object_input_list[r]`` of rank ``src`` into ``scatter_object_output_list[0]`` of rank r."""
    g = resolve("scatter_object_list", group)
    objs = [scatter_object_input_list] if g.rank() == g._local("scatter_object_list", "src", src) else [None]
    broadcast_object_list(objs, src, group)
    scatter_object_output_list[0] = objs[0][g.rank()]
