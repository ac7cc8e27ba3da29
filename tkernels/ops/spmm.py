"""Sparse (COO) times dense: the product and the values' gradient, for ``autograd.sparse.mm``.

Entries::

    spmm(rows, cols, values, dense, n) -> out
        rows, cols: int64 (nnz,) (any order, duplicates allowed: they add up); values (nnz,) and dense (m, K)
        floating, one dtype; out (n, K) in that dtype: ``out[rows[j]] += values[j] * dense[cols[j]]``, i.e.
        ``A @ dense`` for the (n, m) COO matrix A. Swapping rows and cols gives ``A^T @ dense``. Indices are not
        checked here (``sparse_coo_tensor`` checked them). Summed in float32 (float64 for float64).
    sddmm(rows, cols, a, b) -> out
        a (n, K), b (m, K) floating, one dtype; out (nnz,): ``out[j] = a[rows[j]] . b[cols[j]]``, the gradient of
        ``spmm``'s values (with a the output's gradient and b the dense operand).

One kernel launch on cuda each (plus a zero fill and, for half dtypes, a cast: ``tkernels/kernels/spmm.py``).

Backend contract (outputs allocated by the entry; index arrays contiguous)::

    spmm(out, rows, cols, values, dense)
    sddmm(out, rows, cols, a, b)
"""

from __future__ import annotations

from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe

__all__ = ["spmm", "sddmm"]


def _check(op, rows, cols, *floats):
    arrays = (("rows", rows), ("cols", cols)) + floats
    for name, x in arrays:
        if not isinstance(x, Array):
            raise OpTypeError(f"{op}: {name} must be an Array, got {describe(x)}")
    for name, x in (("rows", rows), ("cols", cols)):
        if x.dtype.name != "int64" or x.ndim != 1:
            raise OpTypeError(f"{op}: {name} must be a 1-D int64 Array, got {describe(x)}")
    if rows.shape != cols.shape:
        raise OpValueError(f"{op}: rows and cols must have one length, got {describe(rows)} and {describe(cols)}")
    ref = floats[0][1]
    for name, x in floats:
        if x.dtype.kind != "f" or x.dtype != ref.dtype:
            raise OpTypeError(f"{op}: {name} must be floating of one dtype with the others, got {describe(x)} (and "
                              f"{describe(ref)})")
    for name, x in arrays:
        if x.device != rows.device:
            raise RuntimeError(f"{op}: {name} is on {x.device} but rows are on {rows.device}")


def spmm(rows: Array, cols: Array, values: Array, dense: Array, n: int) -> Array:
    op = "spmm"
    _check(op, rows, cols, ("values", values), ("dense", dense))
    if values.shape != rows.shape or dense.ndim != 2:
        raise OpValueError(f"{op}: expected values (nnz,) and dense (m, K), got {describe(values)} and "
                           f"{describe(dense)}")
    dev = dense.device
    out = lookup("empty", dev)((int(n), dense.shape[1]), dense.dtype, dev)
    lookup(op, dev)(out, rows.contiguous(), cols.contiguous(), values.contiguous(), dense)
    return out


def sddmm(rows: Array, cols: Array, a: Array, b: Array) -> Array:
    op = "sddmm"
    _check(op, rows, cols, ("a", a), ("b", b))
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise OpValueError(f"{op}: expected a (n, K) and b (m, K), got {describe(a)} and {describe(b)}")
    dev = a.device
    out = lookup("empty", dev)(rows.shape, a.dtype, dev)
    lookup(op, dev)(out, rows.contiguous(), cols.contiguous(), a, b)
    return out
