"""NCCL for cuda tensors, bound torch-free with ctypes on ``libnccl.so.2`` (NVIDIA's ``nvidia-nccl-cu12`` wheel,
extra ``.[nccl]``, or the system's; ``AUTOGRAD_NCCL_LIBRARY`` names another file). ``nccl4py`` exists on PyPI
but pulls cuda-core and CUTLASS's DSL; the C API is small enough to call directly.

The communicator is made over the process group's ranks (rank 0's ncclUniqueId travels over MPI). Operations
take the tensors' device pointers from our caching allocator and run on the current stream, so they are
ordered with the kernels around them like any other op; ``Work.wait()`` makes the current stream wait for the
operation's event (no host block), as PyTorch's NCCL works do. ``AUTOGRAD_NCCL_BLOCKING_WAIT=1`` (like
TORCH_NCCL_BLOCKING_WAIT) makes ``wait()`` block the host instead, polling the event and ncclCommGetAsyncError
against the group's timeout and aborting the communicator past it.
"""

from __future__ import annotations

import ctypes
import glob
import os
import time

import numpy as np

from .reduce_op import ReduceOp
from .work import DistBackendError, DistTimeoutError

_LIB = None
# ncclDataType_t and ncclRedOp_t (nccl.h)
_DTYPE = {"int8": 0, "uint8": 1, "bool": 1, "int32": 2, "int64": 4, "float16": 6, "float32": 7, "float64": 8,
          "bfloat16": 9}
_OP = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.AVG: 4}
_BOOL_OP = {ReduceOp.SUM: 2, ReduceOp.MAX: 2, ReduceOp.PRODUCT: 3, ReduceOp.MIN: 3}  # or = max, and = min


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _find_lib():
    env = os.environ.get("AUTOGRAD_NCCL_LIBRARY")
    if env:
        return env
    try:
        import nvidia.nccl as _nv  # the nvidia-nccl-cu12 wheel: nvidia/nccl/lib/libnccl.so.2

        for d in _nv.__path__:
            hits = sorted(glob.glob(os.path.join(d, "lib", "libnccl.so*")))
            if hits:
                return hits[0]
    except ImportError:
        pass
    return "libnccl.so.2"


def load():
    """The ctypes handle of libnccl (loaded once); OSError when there is none."""
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(_find_lib())
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        _LIB = lib
    return _LIB


def is_available() -> bool:
    try:
        load()
    except OSError:
        return False
    return True


def _check(fn, rc, what):
    if rc != 0:
        msg = _LIB.ncclGetErrorString(rc)
        raise DistBackendError(f"{what}: {fn} failed with NCCL error {rc} "
                               f"({msg.decode() if msg else 'unknown'})")


class NcclWork:
    """An NCCL operation queued on a stream: ``wait()`` orders the current stream after it."""

    def __init__(self, comm, event, what, result=None):
        self._comm, self._event, self._what, self._result = comm, event, what, result

    def is_completed(self) -> bool:
        return self._event.query()

    def wait(self, timeout=None) -> bool:
        from tkernels import cuda

        if os.environ.get("AUTOGRAD_NCCL_BLOCKING_WAIT", os.environ.get("TORCH_NCCL_BLOCKING_WAIT")) == "1":
            self._comm.poll_until(self._event, self._what, timeout)
        else:
            cuda.current_stream(self._comm.device).wait_event(self._event)
        return True

    def result(self):
        self.wait()
        return self._result


class NcclComm:
    """An NCCL communicator over a process group's ranks, on one cuda device."""

    def __init__(self, group, device_index):
        self.group = group
        self.device = device_index
        self.handle = ctypes.c_void_p()
        lib = load()
        uid = _UniqueId()
        what = f"init_process_group(backend={group.backend!r}) NCCL communicator"
        if group.rank() == 0:
            _check("ncclGetUniqueId", lib.ncclGetUniqueId(ctypes.byref(uid)), what)
        raw = np.frombuffer(bytearray(bytes(uid)), np.uint8).copy()
        group.mpi_broadcast(raw, 0, what + " (unique id)").wait()
        ctypes.memmove(ctypes.byref(uid), raw.ctypes.data, 128)
        from tkernels import cuda

        with cuda.device(device_index):
            _check("ncclCommInitRank", lib.ncclCommInitRank(ctypes.byref(self.handle), group.size(), uid,
                                                           group.rank()), what)

    @classmethod
    def for_group(cls, group, device_id):
        try:
            load()
        except OSError as e:
            raise RuntimeError(f"init_process_group: backend 'nccl' needs libnccl.so.2 ({e}). Hint: pip install "
                               f"'tkernels[nccl]' (the nvidia-nccl-cu12 wheel), or set AUTOGRAD_NCCL_LIBRARY") from e
        from tkernels import cuda

        if device_id is not None:
            index = cuda._index(device_id)
        elif os.environ.get("LOCAL_RANK") is not None and cuda.device_count() > int(os.environ["LOCAL_RANK"]):
            index = int(os.environ["LOCAL_RANK"])
        else:
            index = cuda.current_device()
        return cls(group, index)

    # ------------------------------------------------------------------------------------- helpers
    def _args(self, op_name, t, what):
        from tkernels import cuda

        a = t._data
        if a._device.type != "cuda" or a._device.index != self.device:
            raise ValueError(f"{op_name}: the tensor ({t.dtype} {list(t.shape)} on {t.device}) must be on "
                             f"cuda:{self.device}, this rank's NCCL device")
        if not a.is_contiguous():
            raise ValueError(f"{op_name}: the tensor ({t.dtype} {list(t.shape)}) must be contiguous")
        dt = _DTYPE.get(str(a._dtype))
        if dt is None:
            raise TypeError(f"{op_name}: NCCL has no {a._dtype} type. Hint: cast to int32 (and back) for the "
                            f"collective")
        s = cuda.current_stream(self.device)
        t._version.v += 1  # conservatively, as for an in-place op (inputs of out-of-place calls too)
        return ctypes.c_void_p(a.data_ptr()), dt, s

    def _op(self, op_name, op, dtype):
        code = (_BOOL_OP if dtype == "bool" else _OP).get(op)
        if code is None or (op is ReduceOp.AVG and dtype.startswith(("int", "uint", "bool"))):
            raise TypeError(f"{op_name}: ReduceOp.{op.name} is not available for {dtype} on NCCL")
        return code

    def _done(self, s, what, result=None):
        """The operation ran on the current stream, where the tensors' next users (and the allocator's reuse of
        their blocks) are ordered after it, as for any kernel."""
        from tkernels import cuda

        ev = cuda.Event()
        ev.record(s)
        return NcclWork(self, ev, what, result)

    # ----------------------------------------------------------------------------------- operations
    def all_reduce(self, t, op, what):
        p, dt, s = self._args("all_reduce", t, what)
        code = self._op("all_reduce", op, str(t.dtype))
        _check("ncclAllReduce", _LIB.ncclAllReduce(p, p, ctypes.c_size_t(t.numel()), dt, code, self.handle,
                                                   ctypes.c_void_p(s.handle)), what)
        return self._done(s, what)

    def broadcast(self, t, root, what):
        p, dt, s = self._args("broadcast", t, what)
        _check("ncclBroadcast", _LIB.ncclBroadcast(p, p, ctypes.c_size_t(t.numel()), dt, root, self.handle,
                                                   ctypes.c_void_p(s.handle)), what)
        return self._done(s, what)

    def reduce(self, t, op, root, what):
        p, dt, s = self._args("reduce", t, what)
        code = self._op("reduce", op, str(t.dtype))
        _check("ncclReduce", _LIB.ncclReduce(p, p, ctypes.c_size_t(t.numel()), dt, code, root, self.handle,
                                             ctypes.c_void_p(s.handle)), what)
        return self._done(s, what)

    def all_gather_into_tensor(self, out, inp, what):
        pi, dt, s = self._args("all_gather_into_tensor", inp, what)
        po, _, _ = self._args("all_gather_into_tensor", out, what)
        _check("ncclAllGather", _LIB.ncclAllGather(pi, po, ctypes.c_size_t(inp.numel()), dt, self.handle,
                                                   ctypes.c_void_p(s.handle)), what)
        return self._done(s, what)

    def reduce_scatter_tensor(self, out, inp, op, what):
        pi, dt, s = self._args("reduce_scatter_tensor", inp, what)
        po, _, _ = self._args("reduce_scatter_tensor", out, what)
        code = self._op("reduce_scatter_tensor", op, str(out.dtype))
        _check("ncclReduceScatter", _LIB.ncclReduceScatter(pi, po, ctypes.c_size_t(out.numel()), dt, code,
                                                           self.handle, ctypes.c_void_p(s.handle)), what)
        return self._done(s, what)

    def poll_until(self, event, what, timeout=None):
        """Block until ``event`` is done; raise on an asynchronous NCCL error or past the group's timeout."""
        limit = self.group._timeout_s if timeout is None else float(getattr(timeout, "total_seconds",
                                                                            lambda: timeout)())
        start = time.monotonic()
        err = ctypes.c_int(0)
        while not event.query():
            _check("ncclCommGetAsyncError", _LIB.ncclCommGetAsyncError(self.handle, ctypes.byref(err)), what)
            if err.value not in (0, 7):  # 7: ncclInProgress
                _check("NCCL (asynchronous)", err.value, what)
            self.group._check_peers(what)
            if time.monotonic() - start > limit:
                _LIB.ncclCommAbort(self.handle)
                raise DistTimeoutError(f"{what} on rank {self.group._global_rank} timed out after {limit:g} s; "
                                       f"the NCCL communicator was aborted")
            time.sleep(1e-4)

    def destroy(self):
        if self.handle:
            try:
                _LIB.ncclCommDestroy(self.handle)
            finally:
                self.handle = ctypes.c_void_p()
