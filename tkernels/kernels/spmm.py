"""Sparse COO times dense (``tkernels.ops.spmm``), two modes of one kernel over tiles of ``[BLOCK_Z, BLOCK_K]``
(nonzeros down, the dense operand's columns across: contiguous, coalesced):

``SCATTER``: ``out[rows[j], :] += vals[j] * dense[cols[j], :]`` by atomic adds into an fp32 (fp64 for float64)
accumulator: the product ``A @ D`` (and, with rows and cols swapped, ``A^T @ G``: the dense operand's gradient).
Atomic adds make the order of a row's sum, hence its last bits, depend on scheduling.
``SDDMM``: ``out[j] = sum_k a[rows[j], k] * b[cols[j], k]`` (the values' gradient ``(G D^T)`` at the nonzeros),
each program its BLOCK_Z nonzeros over all K in BLOCK_K steps; exact order, repeatable.
"""

import triton
import triton.language as tl

SCATTER = tl.constexpr(0)
SDDMM = tl.constexpr(1)


@triton.jit
def spmm_kernel(rows_ptr, cols_ptr, vals_ptr, a_ptr, b_ptr, out_ptr, nnz, K, stride_ar, stride_ak, stride_br,
                stride_bk, MODE: tl.constexpr, F64: tl.constexpr, BLOCK_Z: tl.constexpr, BLOCK_K: tl.constexpr):
    """SCATTER: ``a`` is the dense operand (rows by ``cols``), ``out`` the (n, K) contiguous accumulator, ``b``
    unused. SDDMM: ``a`` (by ``rows``) and ``b`` (by ``cols``), ``out`` (nnz,) contiguous, ``vals`` unused."""
    ct = tl.float64 if F64 else tl.float32
    zs = tl.program_id(0).to(tl.int64) * BLOCK_Z + tl.arange(0, BLOCK_Z)[:, None]
    zmask = zs < nnz
    r = tl.load(rows_ptr + zs, mask=zmask, other=0).to(tl.int64)
    c = tl.load(cols_ptr + zs, mask=zmask, other=0).to(tl.int64)
    if MODE == SCATTER:
        ks = tl.program_id(1).to(tl.int64) * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)[None, :]
        mask = zmask & (ks < K)
        v = tl.load(vals_ptr + zs, mask=zmask, other=0).to(ct)
        d = tl.load(a_ptr + (c * stride_ar + ks * stride_ak), mask=mask, other=0).to(ct)
        tl.atomic_add(out_ptr + (r * K + ks), v * d, mask=mask)
    else:
        acc = tl.zeros([BLOCK_Z, BLOCK_K], ct)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K).to(tl.int64)[None, :]
            mask = zmask & (ks < K)
            x = tl.load(a_ptr + (r * stride_ar + ks * stride_ak), mask=mask, other=0).to(ct)
            y = tl.load(b_ptr + (c * stride_br + ks * stride_bk), mask=mask, other=0).to(ct)
            acc += x * y
        tl.store(out_ptr + zs, tl.sum(acc, axis=1)[:, None].to(out_ptr.dtype.element_ty), mask=zmask)
