"""Sparse COO tensors: ``indices`` (sparse_dim, nnz) int64 and ``values`` (nnz, *dense_dims), PyTorch's layout.

Operations are composites of differentiable dense ops that have cpu and cuda (Triton) kernels: ``to_dense``
scatters the values with ``index_add``, ``coalesce`` sums duplicates the same way after ``unique``. The sparse @
dense product (``sparse.mm``) is its own op, ``tkernels.ops.spmm`` (one Triton launch on cuda) with its backward
(``spmm`` transposed for the dense operand, ``sddmm`` for the values). So gradients reach the dense operand and
the values (and, through a dense tensor's ``to_sparse``, that tensor). A sparse tensor's ``requires_grad``
is its values': its ``.grad`` is sparse, with its indices and the values' gradient.

Index checks (each index within the size) run on the device (``tkernels.checks.device_assert``): cpu raises at
the construction, cuda at the next synchronising call.
"""

from __future__ import annotations

import math

import tkernels as tk
from tkernels.checks import device_assert
from tkernels.cuda import device_errors as _errors

from ..ops._base import Tensor
from .layout import sparse_coo

__all__ = ["SparseCooTensor", "sparse_coo_tensor"]


def _as_tensor(x, dtype=None, device=None):
    import autograd as ag

    if isinstance(x, Tensor):
        return x if dtype is None and device is None else x.to(device=device or x.device, dtype=dtype or x.dtype)
    return ag.tensor(x, dtype=dtype, device=device)


class SparseCooTensor:
    """A sparse tensor in COO layout (``layout == autograd.sparse_coo``); build it with ``sparse_coo_tensor``
    or ``Tensor.to_sparse()``."""

    layout = sparse_coo
    is_sparse = True
    __array_priority__ = 1000  # (dense @ sparse goes to __rmatmul__)

    def __init__(self, indices: Tensor, values: Tensor, size, coalesced: bool = False):
        self._i, self._v, self._size, self._coalesced = indices, values, tuple(int(s) for s in size), coalesced

    # ------------------------------------------------------------------------------------------- metadata
    @property
    def shape(self):
        import autograd as ag

        return ag.Size(self._size)

    def size(self, dim=None):
        return self.shape if dim is None else self._size[dim]

    def dim(self) -> int:
        return len(self._size)

    ndim = property(dim)

    @property
    def dtype(self):
        return self._v.dtype

    @property
    def device(self):
        return self._v.device

    @property
    def is_cuda(self) -> bool:
        return self._v.is_cuda

    def sparse_dim(self) -> int:
        return self._i.shape[0]

    def dense_dim(self) -> int:
        return self._v.dim() - 1

    def _nnz(self) -> int:
        return self._i.shape[1]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        return self._i

    def _values(self) -> Tensor:
        return self._v

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("indices(): Cannot get indices on an uncoalesced tensor, please call .coalesce() "
                               "first")
        return self._i

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("values(): Cannot get values on an uncoalesced tensor, please call .coalesce() "
                               "first")
        return self._v

    # ----------------------------------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool:
        return self._v.requires_grad

    def requires_grad_(self, requires_grad: bool = True):
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient with respect to this tensor as a function of its dense value (PyTorch's): coalesced, one
        entry per distinct index (duplicates of an index all received that entry's gradient)."""
        g = self._v.grad
        if g is None:
            return None
        if self._coalesced:
            return SparseCooTensor(self._i, g, self._size, True)
        import autograd as ag

        with ag.no_grad():
            c = SparseCooTensor(self._i, g, self._size, False).coalesce()
            _, inverse = ag.unique(self._linear(), return_inverse=True)
            vals = g.new_zeros(tuple(c._v.shape))
            vals[inverse] = g
        return SparseCooTensor(c._i, vals, self._size, True)

    @property
    def is_leaf(self) -> bool:
        return self._v.is_leaf

    def detach(self):
        return SparseCooTensor(self._i, self._v.detach(), self._size, self._coalesced)

    # ------------------------------------------------------------------------------------------ moving
    def to(self, *args, **kwargs):
        v = self._v.to(*args, **kwargs)
        i = self._i.to(v.device)
        return self if v is self._v and i is self._i else SparseCooTensor(i, v, self._size, self._coalesced)

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=tk.float64)

    def float(self):
        return self.to(dtype=tk.float32)

    # ----------------------------------------------------------------------------------------- algebra
    def _linear(self) -> Tensor:
        """Each nonzero's row-major position in the sparse dims (int64, (nnz,))."""
        strides, s = [], 1
        for n in reversed(self._size[:self.sparse_dim()]):
            strides.append(s)
            s *= n
        lin = None
        for d, st in zip(range(self.sparse_dim()), reversed(strides)):
            term = self._i[d] * st
            lin = term if lin is None else lin + term
        return lin if lin is not None else self._i.new_zeros((self._nnz(),))

    def coalesce(self):
        """The same tensor with sorted, unique indices (duplicates summed)."""
        import autograd as ag

        if self._coalesced:
            return self
        sd = self.sparse_dim()
        uniq, inverse = ag.unique(self._linear(), return_inverse=True)
        vals = self._v.new_zeros((uniq.shape[0],) + tuple(self._v.shape[1:])).index_add(0, inverse, self._v)
        idx, rest = [], uniq
        for n in reversed(self._size[:sd]):
            idx.append(rest % n)
            rest = ag.div(rest, n, rounding_mode="floor")
        i = ag.stack(idx[::-1]) if idx else self._i[:, :uniq.shape[0]]
        return SparseCooTensor(i, vals, self._size, True)

    def to_dense(self) -> Tensor:
        """The dense tensor (duplicates summed); differentiable with respect to the values."""
        sd = self.sparse_dim()
        flat = self._v.new_zeros((math.prod(self._size[:sd]),) + tuple(self._v.shape[1:]))
        return flat.index_add(0, self._linear(), self._v).reshape(self._size)

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(f"t(): expects a 2-D sparse tensor with no dense dims, got size {list(self._size)}")
        return SparseCooTensor(self._i.flip(0), self._v, self._size[::-1], False)

    def transpose(self, dim0: int, dim1: int):
        if self.dense_dim():
            raise RuntimeError("transpose(): sparse tensors with dense dims are not supported here")
        n = self.dim()
        order = list(range(n))
        a, b = dim0 % n, dim1 % n
        order[a], order[b] = order[b], order[a]
        import autograd as ag

        size = tuple(self._size[k] for k in order)
        return SparseCooTensor(ag.stack([self._i[k] for k in order]), self._v, size, False)

    def sum(self, dim=None):
        if dim is None:
            return self._v.sum()
        return self.to_dense().sum(dim)

    def zero_(self):
        """Empty in place (nnz = 0, PyTorch's ``zero_`` of a sparse tensor: what ``zero_grad(set_to_none=False)``
        leaves in a sparse ``.grad``)."""
        self._i = self._i[:, :0]
        self._v = self._v.detach()[:0]
        self._coalesced = True
        return self

    def mul_(self, other):
        """Scale the values in place by a number or a 0-d tensor (``clip_grad_norm_`` on a sparse ``.grad``)."""
        self._v.mul_(other)
        return self

    def __neg__(self):
        return SparseCooTensor(self._i, -self._v, self._size, self._coalesced)

    def __mul__(self, other):
        if isinstance(other, int | float):
            return SparseCooTensor(self._i, self._v * other, self._size, self._coalesced)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, int | float):
            return SparseCooTensor(self._i, self._v / other, self._size, self._coalesced)
        return NotImplemented

    def __add__(self, other):
        import autograd as ag

        if isinstance(other, SparseCooTensor):
            if other._size != self._size:
                raise RuntimeError(f"add(): sparse tensors of sizes {list(self._size)} and {list(other._size)}")
            return SparseCooTensor(ag.cat([self._i, other._i], 1), ag.cat([self._v, other._v]), self._size, False)
        if isinstance(other, Tensor):
            return self.to_dense() + other
        return NotImplemented

    __radd__ = __add__

    def __matmul__(self, other):
        from . import mm

        return mm(self, other)

    def __rmatmul__(self, other):  # dense @ sparse = (sparse^T @ dense^T)^T
        from . import mm

        return mm(self.t(), other.t()).t()

    def __repr__(self) -> str:
        return (f"tensor(indices={self._i!r},\n       values={self._v!r},\n       size={self._size}, "
                f"nnz={self._nnz()}, layout=autograd.sparse_coo)")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> SparseCooTensor:
    """A sparse COO tensor from ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense_dims); ``size``
    defaults to the smallest that holds the indices (PyTorch's rule). Indices out of ``size`` are refused."""
    v = _as_tensor(values, dtype, device)
    i = _as_tensor(indices, None, v.device)
    if i.dtype.kind not in "iu":
        raise RuntimeError(f"sparse_coo_tensor(): indices must be an int64 tensor, got {i.dtype}")
    i = i.long()
    if i.dim() != 2:
        if i.dim() == 1 and i.shape[0] == 0:
            i = i.reshape(1, 0)
        else:
            raise RuntimeError(f"sparse_coo_tensor(): indices must be sparse_dim x nnz, but got: {list(i.shape)}")
    if v.dim() == 0 or v.shape[0] != i.shape[1]:
        raise RuntimeError(f"sparse_coo_tensor(): indices and values must have the same number of elements, but "
                           f"got {i.shape[1]} and {v.shape[0] if v.dim() else 'a 0-d values tensor'}")
    sd = i.shape[0]
    if size is None:
        if i.shape[1] == 0:
            raise RuntimeError("sparse_coo_tensor(): size must be given when there are no indices")
        size = tuple(int(m) + 1 for m in i.amax(1).tolist()) + tuple(v.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + v.dim() - 1 or tuple(size[sd:]) != tuple(v.shape[1:]):
        raise RuntimeError(f"sparse_coo_tensor(): size {list(size)} does not fit indices of sparse_dim {sd} and "
                           f"values of shape {list(v.shape)} (expected {sd} sparse sizes then {list(v.shape[1:])})")
    if i.shape[1]:
        bounds = tk.asarray([[n] for n in size[:sd]], dtype=tk.int64, device=i.device)
        ok = tk.all(tk.logical_and(tk.greater_equal(i._data, 0), tk.less(i._data, bounds)), axis=0)
        device_assert(ok, "sparse_coo_tensor", _errors.SPARSE_INDEX)
    if requires_grad:
        v = v.detach().requires_grad_()
    return SparseCooTensor(i, v, size, bool(is_coalesced))
