"""Embedding lookup (a row gather) and its weight gradient (a row scatter-add), one kernel with a constexpr mode.

``GATHER``: ``dst[k, :] = src[idx[k], :]`` for ``K`` indices and rows of ``D`` elements (any dtype, copied as is).
``SCATTER``: ``dst[idx[k], :] += src[k, :]`` by atomic adds into an fp32 (fp64) accumulator; rows whose index is
``pad`` (padding_idx; -1: none) are skipped, and with ``SCALE`` each row is divided by its index's count (from a
``COUNT`` launch first: ``cnt[idx[k]] += 1``). Atomic adds make the summation order, hence the last bits of a
row hit several times, depend on scheduling (as PyTorch's CUDA embedding backward with atomics); every other
result is exact and repeatable. An index outside ``[0, n)`` is recorded in the device's error buffer (``errors.py``:
the host raises the ``IndexError`` at its next synchronising call); gathering it reads zeros, scattering it is
skipped.

Tiles are ``[BLOCK_K, BLOCK_D]``: indices down, the embedding dimension across (contiguous, coalesced).
"""

import triton
import triton.language as tl

from . import errors

GATHER = tl.constexpr(0)
SCATTER = tl.constexpr(1)
COUNT = tl.constexpr(2)


@triton.jit
def embedding_kernel(idx_ptr, src_ptr, dst_ptr, cnt_ptr, K, D, n, pad, stride_sk, stride_sd, stride_dk, stride_dd,
                     err_ptr, MODE: tl.constexpr, SCALE: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):
    ks = tl.program_id(0).to(tl.int64) * BLOCK_K + tl.arange(0, BLOCK_K)[:, None]
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D).to(tl.int64)[None, :]
    kmask = ks < K
    idx = tl.load(idx_ptr + ks, mask=kmask, other=-1).to(tl.int64)
    ok = kmask & (idx >= 0) & (idx < n)
    if MODE == GATHER:
        if tl.program_id(1) == 0:  # one column of programs checks the indices
            errors.record_error(err_ptr, kmask & (ok == 0), idx, ks, errors.EMBEDDING, n)
        mask = kmask & (cols < D)
        v = tl.load(src_ptr + (idx * stride_sk + cols * stride_sd), mask=ok & (cols < D), other=0)
        tl.store(dst_ptr + (ks * stride_dk + cols * stride_dd), v, mask=mask)
    elif MODE == COUNT:
        tl.atomic_add(cnt_ptr + idx, tl.full([BLOCK_K, 1], 1, tl.int32), mask=ok)
    else:
        if tl.program_id(1) == 0:
            errors.record_error(err_ptr, kmask & (ok == 0), idx, ks, errors.EMBEDDING_BACKWARD, n)
        ok = ok & (idx != pad)
        mask = ok & (cols < D)
        v = tl.load(src_ptr + (ks * stride_sk + cols * stride_sd), mask=mask, other=0).to(dst_ptr.dtype.element_ty)
        if SCALE:
            v = v / tl.load(cnt_ptr + idx, mask=ok, other=1).to(v.dtype)
        tl.atomic_add(dst_ptr + (idx * stride_dk + cols * stride_dd), v, mask=mask)
