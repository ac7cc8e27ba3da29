"""``torch.sparse``: COO tensors (``autograd/sparse/coo.py``) and the products that take them."""

from __future__ import annotations

import tkernels as tk

from ..grad_mode import STATE
from ..ops._base import Node, Tensor, needs_grad
from .coo import SparseCooTensor, sparse_coo_tensor
from .layout import layout, sparse_coo, strided

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "mm", "spmm", "addmm", "sum", "layout", "strided", "sparse_coo"]


def mm(mat1, mat2):
    """``mat1 @ mat2`` with ``mat1`` sparse (n, m) and ``mat2`` dense (m, k) -> dense (n, k), or both sparse ->
    sparse; gradients reach the dense operand and the sparse operand's values."""
    if not isinstance(mat1, SparseCooTensor):
        raise TypeError(f"sparse.mm(): mat1 must be a sparse COO tensor, got {type(mat1).__name__}")
    if mat1.sparse_dim() != 2 or mat1.dense_dim():
        raise RuntimeError(f"sparse.mm(): mat1 must be a 2-D sparse matrix, got size {list(mat1.shape)}")
    if isinstance(mat2, SparseCooTensor):
        return mm(mat1, mat2.to_dense()).to_sparse()
    if not isinstance(mat2, Tensor) or mat2.dim() not in (1, 2):
        raise RuntimeError(f"sparse.mm(): mat2 must be a 1-D or 2-D dense tensor, got "
                           f"{type(mat2).__name__} of shape {list(getattr(mat2, 'shape', []))}")
    n, m = mat1.shape
    if mat2.shape[0] != m:
        raise RuntimeError(f"sparse.mm(): mat1 and mat2 shapes cannot be multiplied ({n}x{m} and "
                           f"{'x'.join(str(s) for s in mat2.shape)})")
    if mat1.device != mat2.device:
        raise RuntimeError(f"sparse.mm(): mat1 on {mat1.device}, mat2 on {mat2.device}; move one with .to()")
    vec = mat2.dim() == 1
    d = mat2.unsqueeze(1) if vec else mat2
    row, col = mat1._i[0], mat1._i[1]
    v = mat1._v
    if v.dtype != d.dtype:
        rt = tk.result_type(v._data, d._data)
        v, d = v.to(rt), d.to(rt)
    if v.dtype.kind == "f":
        out = _spmm(row, col, v, d, n)
    else:  # (integer values: no kernel; the composite of gather, product and index_add)
        out = d.new_zeros((n, d.shape[1])).index_add(0, row, d.index_select(0, col) * v.unsqueeze(1))
    return out.squeeze(1) if vec else out


class SparseMmBackward0(Node):
    """``A @ D`` with A = (rows, cols, values) of shape (n, m): ``dD = A^T @ G`` (the same kernel, indices
    swapped) and ``dvalues = (G D^T)`` at the nonzeros (``tkernels.ops.sddmm``). Under ``create_graph`` the
    gradients are differentiable products of the same kind."""

    def __init__(self, row, col, v, d):
        super().__init__((v, d))
        self.row, self.col, self.m = row, col, d.shape[0]
        self.save(v, d)

    def backward(self, g):
        v, d = self.saved_tensors
        nv, nd = self.needs_input_grad
        if not STATE.grad_enabled:
            ga = g._data
            dv = Tensor._wrap(tk.ops.sddmm(self.row._data, self.col._data, ga, d._data)) if nv else None
            dd = Tensor._wrap(tk.ops.spmm(self.col._data, self.row._data, v._data, ga, self.m)) if nd else None
            return dv, dd
        dv = (g.index_select(0, self.row) * d.index_select(0, self.col)).sum(1) if nv else None
        dd = _spmm(self.col, self.row, v, g, self.m) if nd else None
        return dv, dd


def _spmm(row, col, v, d, n):
    r = tk.ops.spmm(row._data, col._data, v._data, d._data, n)
    if not needs_grad(v, d):
        return Tensor._wrap(r)
    return SparseMmBackward0(row, col, v, d).output(r)


spmm = mm


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse."""
    return beta * mat + alpha * mm(mat1, mat2)


def sum(input, dim=None):  # noqa: A001 - torch.sparse.sum
    """The sum of a sparse tensor's values (a dense 0-d tensor), or over ``dim`` (dense)."""
    return input.sum(dim)
