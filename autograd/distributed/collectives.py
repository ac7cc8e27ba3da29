"""The collectives on Tensors (PyTorch's ``torch.distributed`` functions): arguments checked, Tensors turned
into buffers, the group's backend called, a ``Work`` returned for ``async_op=True``.

cpu Tensors: MPI reads and writes their NumPy memory in place (no copy). cuda Tensors: on a group with NCCL
(backend "nccl") NCCL works on the allocator's device pointers on the current stream; on an MPI-only group
they are staged through host memory (a device-to-host copy before, host-to-device after: MPI from the package
index is not CUDA-aware), which is correct but slow, and documented as such.
"""

from __future__ import annotations

import zlib

import numpy as np

import tkernels as tk

from ..tensor import Tensor
from .process_group import resolve
from .reduce_op import ReduceOp
from .work import Work

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "scatter", "barrier", "send",
           "recv", "isend", "irecv"]


def _desc(t: Tensor) -> str:
    return f"{t.dtype} {list(t.shape)} on {t.device}"


class _Buf:
    """A Tensor as a contiguous NumPy buffer: its own memory on cpu; a host copy of a cuda one, written back by
    ``back()`` when the collective changes it."""

    __slots__ = ("t", "nd", "staged")

    def __init__(self, op, name, t, write=True):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        a = t._data
        if not a.is_contiguous():
            raise ValueError(f"{op}: {name} ({_desc(t)}) must be contiguous. Hint: pass t.contiguous() and copy "
                             f"the result back")
        self.t = t
        if write:  # written in place, like any in-place op: a tensor saved for backward then refuses to be used
            t._version.v += 1
        self.staged = a._device.type != "cpu"
        self.nd = tk.to_numpy(a)
        if self.staged and not self.nd.flags.writeable:
            self.nd = self.nd.copy()

    def back(self):
        if self.staged:
            tk.copy_into(self.t._data, tk.from_numpy(self.nd))


class _Label:
    """``all_reduce #3 (float32 [1000] on cpu, ReduceOp.SUM)``, formatted only when an error needs it (it costs
    microseconds, which small collectives notice)."""

    __slots__ = ("op", "seq", "t", "extra")

    def __init__(self, op, seq, t, extra):
        self.op, self.seq, self.t, self.extra = op, seq, t, extra

    def __str__(self):
        t, extra = self.t, self.extra
        d = f" ({_desc(t)}{extra})" if t is not None else (f" ({extra.lstrip(', ')})" if extra else "")
        return f"{self.op} #{self.seq}{d}"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _seq_what(g, op, t=None, extra=""):
    g._seq += 1
    return _Label(op, g._seq, t, extra)


_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


def _fingerprint(g, op, t, what, reduce_op=None, root=-1):
    """AUTOGRAD_DISTRIBUTED_DEBUG=DETAIL: every rank checks that all ranks run the same collective on the same
    shape and dtype (one small all-gather before it), so a mismatch raises instead of hanging or mixing bytes."""
    if not g._detail:
        return
    shape = list(t.shape) if t is not None else []
    fp = np.full(16, -1, np.int64)
    fp[0] = zlib.crc32(op.encode())
    fp[1] = -1 if reduce_op is None else zlib.crc32(reduce_op.name.encode())
    fp[2] = root
    fp[3] = _DTYPES.index(str(t.dtype)) if t is not None and str(t.dtype) in _DTYPES else -1
    fp[4] = len(shape)
    fp[5:5 + min(len(shape), 11)] = shape[:11]
    allfp = np.empty((g.size(), 16), np.int64)
    Work(g, [g.ctl.Iallgather(fp, allfp)], f"{what} (DETAIL check)").wait()
    if (allfp == allfp[0]).all():
        return
    rows = []
    for r, row in enumerate(allfp):
        dt = _DTYPES[row[3]] if row[3] >= 0 else "-"
        shp = list(row[5:5 + row[4]]) if row[4] >= 0 else []
        rows.append(f"rank {g.ranks[r]}: op crc {row[0]:#x}, dtype {dt}, shape {shp}, reduce op crc {row[1]:#x}, "
                    f"root {row[2]}")
    raise RuntimeError(f"{what}: the ranks called mismatched collectives (AUTOGRAD_DISTRIBUTED_DEBUG=DETAIL):\n  "
                       + "\n  ".join(rows) + f"\nthis rank ({g._global_rank}) called {op}"
                       + (f" with ReduceOp.{reduce_op.name}" if reduce_op else "")
                       + (f" shape {shape} dtype {t.dtype}" if t is not None else "")
                       + ". Hint: every rank must call the same collectives in the same order with the same "
                         "shapes and dtypes")


def _done(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _chain(*fns):
    fns = [f for f in fns if f is not None]

    def run():
        for f in fns:
            f()
    return run if fns else None


def _check_op(op_name, op):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{op_name}: op must be a ReduceOp (e.g. ReduceOp.SUM), got {op!r}")


def _nccl(g, t: Tensor):
    """The group's NCCL communicator when ``t`` is a cuda Tensor and the group has one."""
    return g._nccl if g._nccl is not None and isinstance(t, Tensor) and t._data._device.type == "cuda" else None


def _no_nccl(g, op, tensors):
    """Collectives NCCL does not serve here: refused for cuda tensors on an NCCL group (no hidden host copy)."""
    if g._nccl is not None and any(_nccl(g, t) is not None for t in tensors):
        raise NotImplementedError(f"{op}: not implemented for cuda tensors on backend {g.backend!r} (NCCL serves "
                                  f"all_reduce, broadcast, reduce, all_gather(_into_tensor) and "
                                  f"reduce_scatter_tensor). Hint: use one of those, or a group with backend "
                                  f"'mpi' (cuda tensors staged through host memory)")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks of ``group`` in place (every rank gets the result)."""
    g = resolve("all_reduce", group)
    _check_op("all_reduce", op)
    b = _Buf("all_reduce", "tensor", tensor) if _nccl(g, tensor) is None else None
    what = _seq_what(g, "all_reduce", tensor, f", {op!r}")
    _fingerprint(g, "all_reduce", tensor, what, op)
    if b is None:
        return _done(g._nccl.all_reduce(tensor, op, what), async_op)
    w = g.mpi_all_reduce(b.nd, str(tensor.dtype), op, what)
    w._finish = _chain(w._finish, b.back)
    return _done(w, async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy ``tensor`` of global rank ``src`` into ``tensor`` on every rank of ``group``."""
    g = resolve("broadcast", group)
    root = g._local("broadcast", "src", src)
    what = _seq_what(g, "broadcast", tensor, f", src={src}")
    if _nccl(g, tensor) is not None:
        _fingerprint(g, "broadcast", tensor, what, root=root)
        return _done(g._nccl.broadcast(tensor, root, what), async_op)
    b = _Buf("broadcast", "tensor", tensor)
    _fingerprint(g, "broadcast", tensor, what, root=root)
    w = g.mpi_broadcast(b.nd, root, what)
    w._finish = b.back if g.rank() != root else None
    return _done(w, async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks into ``tensor`` of global rank ``dst`` (the others keep theirs)."""
    g = resolve("reduce", group)
    _check_op("reduce", op)
    root = g._local("reduce", "dst", dst)
    what = _seq_what(g, "reduce", tensor, f", {op!r}, dst={dst}")
    if _nccl(g, tensor) is not None:
        _fingerprint(g, "reduce", tensor, what, op, root)
        return _done(g._nccl.reduce(tensor, op, root, what), async_op)
    b = _Buf("reduce", "tensor", tensor)
    _fingerprint(g, "reduce", tensor, what, op, root)
    w = g.mpi_reduce(b.nd, str(tensor.dtype), op, root, what)
    w._finish = _chain(w._finish, b.back if g.rank() == root else None)
    return _done(w, async_op)


def _same(op, name, tensors, ref: Tensor, n):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        raise ValueError(f"{op}: {name} must be a list of {n} Tensors (one per rank of the group), got "
                         f"{type(tensors).__name__}" + (f" of length {len(tensors)}" if hasattr(tensors, "__len__")
                                                        else ""))
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or t.dtype != ref.dtype or t.numel() != ref.numel():
            got = _desc(t) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{op}: {name}[{i}] is {got}; expected {ref.numel()} elements of {ref.dtype} like "
                             f"{_desc(ref)}")


def _scatter_into(tensors, flat: np.ndarray):
    """Copy the pieces of ``flat`` (one row per tensor) into ``tensors``."""
    def run():
        for t, piece in zip(tensors, flat):
            a = t._data
            src = tk.from_numpy(np.ascontiguousarray(piece).reshape(a.shape))
            tk.copy_into(a, src)
    return run


def _stack(tensors, ref_nd):
    """The tensors' values back to back in one new host buffer."""
    return np.stack([tk.to_numpy(t._data).reshape(-1) for t in tensors]) if tensors else ref_nd[:0]


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into ``tensor_list`` (one Tensor per rank, in rank order)."""
    g = resolve("all_gather", group)
    _same("all_gather", "tensor_list", tensor_list, tensor, g.size())
    if _nccl(g, tensor) is not None:  # into one device buffer, then device copies (ordered on the stream)
        from ..factory import empty

        what = _seq_what(g, "all_gather", tensor)
        _fingerprint(g, "all_gather", tensor, what)
        flat = empty(g.size() * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
        w = g._nccl.all_gather_into_tensor(flat, tensor, what)
        m = tensor.numel()
        for k, t in enumerate(tensor_list):
            tk.copy_into(t._data, flat._data[k * m:(k + 1) * m].reshape(t._data.shape))
        return _done(w, async_op)
    b = _Buf("all_gather", "tensor", tensor, write=False)
    what = _seq_what(g, "all_gather", tensor)
    _fingerprint(g, "all_gather", tensor, what)
    flat = np.empty((g.size(), b.nd.size), b.nd.dtype)
    return _done(g.mpi_all_gather(flat, b.nd, what, _scatter_into(tensor_list, flat)), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (along dim 0) into ``output_tensor``, without a copy on cpu."""
    g = resolve("all_gather_into_tensor", group)
    if _nccl(g, input_tensor) is not None:
        what = _seq_what(g, "all_gather_into_tensor", input_tensor)
        _fingerprint(g, "all_gather_into_tensor", input_tensor, what)
        return _done(g._nccl.all_gather_into_tensor(output_tensor, input_tensor, what), async_op)
    i = _Buf("all_gather_into_tensor", "input_tensor", input_tensor, write=False)
    o = _Buf("all_gather_into_tensor", "output_tensor", output_tensor)
    if o.t.numel() != i.t.numel() * g.size() or o.t.dtype != i.t.dtype:
        raise ValueError(f"all_gather_into_tensor: output_tensor ({_desc(o.t)}) must hold world_size={g.size()} "
                         f"times input_tensor ({_desc(i.t)}), in its dtype")
    what = _seq_what(g, "all_gather_into_tensor", input_tensor)
    _fingerprint(g, "all_gather_into_tensor", input_tensor, what)
    return _done(g.mpi_all_gather(o.nd, i.nd, what, o.back), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[r]`` over the ranks into ``output`` of rank r."""
    g = resolve("reduce_scatter", group)
    _no_nccl(g, "reduce_scatter", [output])
    _check_op("reduce_scatter", op)
    o = _Buf("reduce_scatter", "output", output)
    _same("reduce_scatter", "input_list", input_list, output, g.size())
    what = _seq_what(g, "reduce_scatter", output, f", {op!r}")
    _fingerprint(g, "reduce_scatter", output, what, op)
    w = g.mpi_reduce_scatter(o.nd, _stack(input_list, o.nd), str(output.dtype), op, what)
    w._finish = _chain(w._finish, o.back)
    return _done(w, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (world_size pieces along dim 0) over the ranks; piece r lands in ``output`` of rank r."""
    g = resolve("reduce_scatter_tensor", group)
    _check_op("reduce_scatter_tensor", op)
    if _nccl(g, output) is not None:
        what = _seq_what(g, "reduce_scatter_tensor", output, f", {op!r}")
        _fingerprint(g, "reduce_scatter_tensor", output, what, op)
        return _done(g._nccl.reduce_scatter_tensor(output, input, op, what), async_op)
    o = _Buf("reduce_scatter_tensor", "output", output)
    i = _Buf("reduce_scatter_tensor", "input", input, write=False)
    if i.t.numel() != o.t.numel() * g.size() or o.t.dtype != i.t.dtype:
        raise ValueError(f"reduce_scatter_tensor: input ({_desc(i.t)}) must hold world_size={g.size()} times "
                         f"output ({_desc(o.t)}), in its dtype")
    what = _seq_what(g, "reduce_scatter_tensor", output, f", {op!r}")
    _fingerprint(g, "reduce_scatter_tensor", output, what, op)
    w = g.mpi_reduce_scatter(o.nd, i.nd, str(output.dtype), op, what)
    w._finish = _chain(w._finish, o.back)
    return _done(w, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """``input_tensor_list[r]`` goes to rank r, which receives it in its ``output_tensor_list[this rank]``."""
    g = resolve("all_to_all", group)
    _no_nccl(g, "all_to_all", list(input_tensor_list))
    n = g.size()
    for name, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != n or not all(isinstance(t, Tensor) for t in lst):
            raise ValueError(f"all_to_all: {name} must be a list of {n} Tensors (one per rank)")
    dt = input_tensor_list[0].dtype
    if any(t.dtype != dt for t in list(output_tensor_list) + list(input_tensor_list)):
        got = [str(t.dtype) for t in list(output_tensor_list) + list(input_tensor_list)]
        raise ValueError(f"all_to_all: every tensor must have dtype {dt}; got outputs then inputs {got}")
    isz = dt.itemsize
    inp = np.concatenate([tk.to_numpy(t._data).reshape(-1) for t in input_tensor_list])
    out = np.empty(sum(t.numel() for t in output_tensor_list), inp.dtype)
    what = _seq_what(g, "all_to_all", input_tensor_list[0])
    _fingerprint(g, "all_to_all", None, what)

    def back():
        k = 0
        for t in output_tensor_list:
            m = t.numel()
            tk.copy_into(t._data, tk.from_numpy(out[k:k + m].reshape(t._data.shape)))
            k += m
    return _done(g.mpi_all_to_all(out, [t.numel() * isz for t in output_tensor_list], inp,
                                  [t.numel() * isz for t in input_tensor_list], what, back), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """``all_to_all`` on one input and one output split along dim 0 (equal pieces unless split sizes are given)."""
    g = resolve("all_to_all_single", group)
    _no_nccl(g, "all_to_all_single", [input])
    o = _Buf("all_to_all_single", "output", output)
    i = _Buf("all_to_all_single", "input", input, write=False)
    n = g.size()

    def counts(t, splits, name):
        row = t.numel() // t.shape[0] if t.dim() and t.shape[0] else 0
        if splits is None:
            if t.dim() == 0 or t.shape[0] % n:
                raise ValueError(f"all_to_all_single: {name} ({_desc(t)}) dim 0 must divide by world_size={n}, "
                                 f"or pass split sizes")
            splits = [t.shape[0] // n] * n
        if len(splits) != n or sum(splits) != (t.shape[0] if t.dim() else 0):
            raise ValueError(f"all_to_all_single: {name} split sizes {list(splits)} must be {n} sizes summing to "
                             f"dim 0 of {_desc(t)}")
        return [s * row * t.dtype.itemsize for s in splits]
    what = _seq_what(g, "all_to_all_single", input)
    _fingerprint(g, "all_to_all_single", None, what)
    return _done(g.mpi_all_to_all(o.nd, counts(output, output_split_sizes, "output"), i.nd,
                                  counts(input, input_split_sizes, "input"), what, o.back), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Every rank's ``tensor`` into ``gather_list`` of global rank ``dst`` (None on the others)."""
    g = resolve("gather", group)
    _no_nccl(g, "gather", [tensor])
    root = g._local("gather", "dst", dst)
    b = _Buf("gather", "tensor", tensor, write=False)
    is_root = g.rank() == root
    if is_root:
        _same("gather", "gather_list", gather_list, tensor, g.size())
    elif gather_list:
        raise ValueError(f"gather: gather_list must be None or empty on non-destination ranks (dst={dst})")
    what = _seq_what(g, "gather", tensor, f", dst={dst}")
    _fingerprint(g, "gather", tensor, what, root=root)
    flat = np.empty((g.size() if is_root else 0, b.nd.size), b.nd.dtype)
    fin = _scatter_into(gather_list, flat) if is_root else None
    return _done(g.mpi_gather(flat, b.nd, root, what, fin), async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """``scatter_list[r]`` of global rank ``src`` into ``tensor`` of rank r."""
    g = resolve("scatter", group)
    _no_nccl(g, "scatter", [tensor])
    root = g._local("scatter", "src", src)
    b = _Buf("scatter", "tensor", tensor)
    is_root = g.rank() == root
    if is_root:
        _same("scatter", "scatter_list", scatter_list, tensor, g.size())
    elif scatter_list:
        raise ValueError(f"scatter: scatter_list must be None or empty on non-source ranks (src={src})")
    what = _seq_what(g, "scatter", tensor, f", src={src}")
    _fingerprint(g, "scatter", tensor, what, root=root)
    inp = _stack(scatter_list, b.nd) if is_root else b.nd[:0]
    w = g.mpi_scatter(b.nd, inp, root, what)
    w._finish = b.back
    return _done(w, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of ``group`` reaches it."""
    g = resolve("barrier", group)
    what = _seq_what(g, "barrier")
    _fingerprint(g, "barrier", None, what)
    return _done(g.mpi_barrier(what), async_op)


def isend(tensor, dst, group=None, tag=0):
    """Start sending ``tensor`` to global rank ``dst``; returns a Work."""
    g = resolve("isend", group)
    _no_nccl(g, "isend", [tensor])
    b = _Buf("isend", "tensor", tensor, write=False)
    return g.mpi_send(b.nd, g._local("isend", "dst", dst), tag, f"isend ({_desc(tensor)}, dst={dst}, tag={tag})")


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into ``tensor`` from global rank ``src`` (None: any); ``work.source_rank()`` says who."""
    g = resolve("irecv", group)
    _no_nccl(g, "irecv", [tensor])
    b = _Buf("irecv", "tensor", tensor)
    s = None if src is None else g._local("irecv", "src", src)
    w = g.mpi_recv(b.nd, s, tag, f"irecv ({_desc(tensor)}, src={src}, tag={tag})")
    w._finish = _chain(w._finish, b.back)
    return w


def send(tensor, dst, group=None, tag=0):
    """Send ``tensor`` to global rank ``dst`` (returns when the buffer may be reused)."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into ``tensor`` from global rank ``src`` (None: any); returns the sender's rank."""
    return irecv(tensor, src, group, tag).source_rank()
