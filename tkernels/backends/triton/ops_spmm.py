"""``spmm`` / ``sddmm`` on cuda (``tkernels.ops.spmm``; ``tkernels/kernels/spmm.py``).

Why atomic scatter per nonzero rather than CSR rows: the COO operand comes in any order with duplicates (a
``sparse.mm`` of an uncoalesced tensor, the transposed product of the backward). CSR would need it coalesced and
sorted first (``unique``: a device-to-host read of the count, plus a sort) and a row-pointer search; the scatter
needs nothing: one zero fill and one launch, reading ``nnz * K`` dense elements and adding ``nnz * K`` products
(the composite it replaces, gather -> multiply -> index_add, made 4 launches and moved ``~5 nnz K`` elements
through memory). The price is an atomic summation order (last bits) in rows hit several times.
Dense operands are read by strides (no copies); a float16/bfloat16 product accumulates in a float32 temporary
cast once at the end.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...dispatch import register
from ...kernels.spmm import SCATTER, SDDMM, spmm_kernel
from ._launch import INTERPRETED
from .memory import copy_, empty, fill
from .ops_softmax import pow2, run

TILE = 8192 if INTERPRETED else 4096  # elements per program
GPU_BLOCK_K = 128


def _tile(nnz: int, K: int):
    bk = min(pow2(K), TILE if INTERPRETED else GPU_BLOCK_K)
    bz = min(pow2(nnz), max(1, TILE // bk)) if INTERPRETED else max(1, TILE // 4 // bk)
    return bz, bk


@register("spmm", "triton")
def spmm(out, rows, cols, values, dense) -> None:
    f64 = out._dtype is _dt.float64
    acc = out if out._dtype in (_dt.float32, _dt.float64) else empty(out._shape, _dt.float32, out._device)
    if acc.size:
        fill(acc, 0.0)
    nnz, K = rows.size, out._shape[1]
    if nnz and K:
        bz, bk = _tile(nnz, K)
        run(spmm_kernel, (-(-nnz // bz), -(-K // bk)), rows, cols, values, dense, dense, acc, nnz, K,
            *dense._strides, *dense._strides, MODE=SCATTER, F64=f64, BLOCK_Z=bz, BLOCK_K=bk)
    if acc is not out and acc.size:
        copy_(out, acc)


@register("sddmm", "triton")
def sddmm(out, rows, cols, a, b) -> None:
    nnz, K = rows.size, a._shape[1]
    if not nnz:
        return
    if not K:
        fill(out, 0.0)
        return
    bz, bk = _tile(nnz, K)
    run(spmm_kernel, (-(-nnz // bz),), rows, cols, out, a, b, out, nnz, K, *a._strides, *b._strides,
        MODE=SDDMM, F64=out._dtype is _dt.float64, BLOCK_Z=bz, BLOCK_K=bk)
