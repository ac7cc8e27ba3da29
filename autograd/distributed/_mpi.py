"""The MPI backend: collectives on contiguous NumPy buffers (no copy: MPI reads and writes the arrays' own
memory), started non-blocking and handed back as ``Work`` handles that poll against the group's deadline.

float16/bfloat16 reductions are summed in float32 (MPI has no half types; one cast each way, and a more
accurate sum than adding halves); bool reductions are MAX (SUM: logical or) and MIN (PRODUCT: logical and) on
its bytes, as PyTorch does. Every other operation moves raw bytes, so it serves every dtype unchanged.
"""

from __future__ import annotations

import numpy as np

from .reduce_op import ReduceOp
from .work import Work

_HALF = ("float16", "bfloat16")


def _u8(buf: np.ndarray) -> np.ndarray:
    return buf.reshape(-1).view(np.uint8)


class MPIOps:
    """Mixin of ProcessGroup: the MPI calls. ``self.comm`` is the group's communicator."""

    def _mpi_op(self, op: ReduceOp, dtype: str):
        key = (op, dtype)
        try:
            return self._ops[key]
        except KeyError:
            mop = self._ops[key] = self._mpi_op_uncached(op, dtype)
            return mop

    def _mpi_op_uncached(self, op: ReduceOp, dtype: str):
        MPI = self._MPI
        if dtype == "bool":
            return {ReduceOp.SUM: MPI.MAX, ReduceOp.MAX: MPI.MAX, ReduceOp.PRODUCT: MPI.MIN, ReduceOp.MIN: MPI.MIN,
                    ReduceOp.BOR: MPI.MAX, ReduceOp.BAND: MPI.MIN}.get(op)
        if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and not dtype.startswith(("int", "uint")):
            return None
        if op is ReduceOp.AVG and not dtype.startswith(("float", "bfloat")):
            return None
        return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
                ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]

    def _reducible(self, buf: np.ndarray, dtype: str, op: ReduceOp, opname: str):
        """(the buffer MPI reduces, the MPI op, what to do after): a half buffer becomes a float32 copy."""
        mop = self._mpi_op(op, dtype)
        if mop is None:
            raise TypeError(f"{opname}: ReduceOp.{op.name} is not defined for dtype {dtype}. Hint: AVG needs a "
                            f"floating dtype, BAND/BOR/BXOR an integer or bool one")
        size = self.size()
        if dtype in _HALF:
            work = buf.astype(np.float32)

            def back(dst=buf):
                if op is ReduceOp.AVG:
                    work[...] /= size
                dst[...] = work.astype(dst.dtype)
            return work, mop, back
        if dtype == "bool":
            return buf.view(np.uint8), mop, None
        if op is ReduceOp.AVG:
            def avg(dst=buf):
                np.divide(dst, size, out=dst, casting="unsafe")
            return buf, mop, avg
        return buf, mop, None

    def mpi_all_reduce(self, buf, dtype, op, what):
        b, mop, back = self._reducible(buf, dtype, op, what)
        req = self.comm.Iallreduce(self._MPI.IN_PLACE, b, mop)
        return Work(self, [req], what, back, keep=(b,))

    def mpi_reduce(self, buf, dtype, op, root, what):
        b, mop, back = self._reducible(buf, dtype, op, what)
        if self.rank() == root:
            req = self.comm.Ireduce(self._MPI.IN_PLACE, b, mop, root)
        else:
            req = self.comm.Ireduce(b, None, mop, root)
            back = None  # non-root tensors are left as they were
        return Work(self, [req], what, back, keep=(b,))

    def mpi_reduce_scatter(self, out, inp, dtype, op, what):
        o, mop, back = self._reducible(out, dtype, op, what)
        i, _, _ = self._reducible(inp, dtype, ReduceOp.SUM if op is ReduceOp.AVG else op, what)
        req = self.comm.Ireduce_scatter_block(i, o, mop)
        return Work(self, [req], what, back, keep=(o, i))

    def mpi_broadcast(self, buf, root, what):
        req = self.comm.Ibcast([_u8(buf), self._MPI.BYTE], root)
        return Work(self, [req], what, keep=(buf,))

    def mpi_all_gather(self, out, inp, what, finish=None):
        MPI = self._MPI
        req = self.comm.Iallgather([_u8(inp), MPI.BYTE], [_u8(out), MPI.BYTE])
        return Work(self, [req], what, finish, keep=(out, inp))

    def mpi_gather(self, out, inp, root, what, finish=None):
        MPI = self._MPI
        recv = [_u8(out), MPI.BYTE] if self.rank() == root else None
        req = self.comm.Igather([_u8(inp), MPI.BYTE], recv, root)
        return Work(self, [req], what, finish, keep=(out, inp))

    def mpi_scatter(self, out, inp, root, what):
        MPI = self._MPI
        send = [_u8(inp), MPI.BYTE] if self.rank() == root else None
        req = self.comm.Iscatter(send, [_u8(out), MPI.BYTE], root)
        return Work(self, [req], what, keep=(out, inp))

    def mpi_all_to_all(self, out, out_counts, inp, in_counts, what, finish=None):
        """Byte counts per peer; displacements are the running sums (the pieces lie back to back)."""
        MPI = self._MPI
        sd = np.concatenate([[0], np.cumsum(in_counts)[:-1]]).astype(np.int64)
        rd = np.concatenate([[0], np.cumsum(out_counts)[:-1]]).astype(np.int64)
        sc = np.asarray(in_counts, np.int64)
        rc = np.asarray(out_counts, np.int64)
        req = self.comm.Ialltoallv([_u8(inp), (sc.tolist(), sd.tolist()), MPI.BYTE],
                                   [_u8(out), (rc.tolist(), rd.tolist()), MPI.BYTE])
        return Work(self, [req], what, finish, keep=(out, inp))

    def mpi_barrier(self, what):
        return Work(self, [self.comm.Ibarrier()], what)

    def mpi_send(self, buf, dst, tag, what):
        return Work(self, [self.comm.Isend([_u8(buf), self._MPI.BYTE], dst, tag)], what, keep=(buf,))

    def mpi_recv(self, buf, src, tag, what, finish=None):
        MPI = self._MPI
        status = MPI.Status()
        src = MPI.ANY_SOURCE if src is None else src
        req = self.comm.Irecv([_u8(buf), MPI.BYTE], src, tag)
        work = Work(self, [req], what, keep=(buf,), status=status)
        work._finish = lambda: setattr(work, "_result", self.ranks[status.Get_source()])
        return work
