"""Matrix products: matmul (and its aliases mm, bmm, mv, dot), with batch broadcasting."""

from __future__ import annotations

import tkernels as tk

from ._base import Node, check_out, needs_grad, wrap

__all__ = ["matmul", "mm", "bmm", "mv", "dot"]


class MmBackward0(Node):
    def __init__(self, a, b):
        super().__init__((a, b))
        na, nb = self.needs_input_grad
        self.save(b if na else None, a if nb else None)
        self.nd = (a._data.ndim, b._data.ndim)

    def name(self):
        return "MmBackward0" if self.nd == (2, 2) else ("DotBackward0" if self.nd == (1, 1) else "MatmulBackward0")

    def backward(self, g):
        b, a = self.saved_tensors
        na, nb = self.needs_input_grad
        da, db = self.nd
        ga = gb = None
        if da == 1 and db == 1:
            return (g * b if na else None, g * a if nb else None)
        if da == 1:  # (k) @ (..., k, n) -> (..., n)
            if na:
                ga = matmul(b, g.unsqueeze(-1)).squeeze(-1)
            if nb:
                gb = a.unsqueeze(-1) * g.unsqueeze(-2)
            return ga, gb
        if db == 1:  # (..., m, k) @ (k) -> (..., m)
            if na:
                ga = g.unsqueeze(-1) * b
            if nb:
                gb = matmul(a.mT, g.unsqueeze(-1)).squeeze(-1)
            return ga, gb
        if na:
            ga = matmul(g, b.mT)
        if nb:
            gb = matmul(a.mT, g)
        return ga, gb


def matmul(input, other, *, out=None):
    """Matrix product with NumPy/PyTorch semantics (1-d operands promoted, batch dims broadcast)."""
    if out is not None:
        check_out("matmul", out, (input, other))
        tk.matmul(input._data, other._data, out=out._data)
        out._version.v += 1
        return out
    r = tk.matmul(input._data, other._data)
    if r.dtype.kind == "f" and needs_grad(input, other):
        return MmBackward0(input, other).output(r)
    return wrap(r)


def _check_nd(op, t, nd, name):
    if t._data.ndim != nd:
        raise RuntimeError(f"{op}(): {name} must be a {nd}D tensor, got shape {list(t.shape)}")


def mm(input, mat2, *, out=None):
    _check_nd("mm", input, 2, "self")
    _check_nd("mm", mat2, 2, "mat2")
    return matmul(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    _check_nd("bmm", input, 3, "batch1")
    _check_nd("bmm", mat2, 3, "batch2")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch1 and batch2 must have the same batch size, got {list(input.shape)} and "
                           f"{list(mat2.shape)}")
    return matmul(input, mat2, out=out)


def mv(input, vec, *, out=None):
    _check_nd("mv", input, 2, "self")
    _check_nd("mv", vec, 1, "vec")
    return matmul(input, vec, out=out)


def dot(input, other, *, out=None):
    _check_nd("dot", input, 1, "self")
    _check_nd("dot", other, 1, "tensor")
    return matmul(input, other, out=out)
