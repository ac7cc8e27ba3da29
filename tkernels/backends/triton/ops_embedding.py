"""embedding / embedding_backward on cuda (``tkernels/kernels/embedding.py``); signatures as the NumPy backend
(``tkernels/ops/sparse.py``)::

    embedding(out, weight, indices)
    embedding_backward(dweight, grad, indices, padding_idx, scale_grad_by_freq)
    embedding_renorm_(weight, indices, max_norm, norm_type)         in place

The weight and the gradient are read by strides (no copies); indices are flattened (a copy only when they are
not contiguous). The backward scatter-adds rows with fp32 atomics (fp64 for float64) into a zeroed accumulator:
``dweight`` itself when it is float32/float64, else a temporary cast once at the end. Deviation from the NumPy
backend: indices are not checked on the host (a device-to-host sync); an out-of-range index is recorded in the
device's error buffer (``tkernels/cuda/device_errors.py``: the ``IndexError`` comes at the next synchronising
call), gathers a row of zeros, its gradient row is dropped, and renorm skips it.

``embedding_renorm_`` (``tkernels/kernels/norm.py``: ``renorm_rows_kernel``) renormalizes each referenced row once:
a first launch claims every row for the first position that references it (atomic min into an int64 buffer of
``num_embeddings``), the second computes the norm of each claimed row (fp32; fp64 for float64) and scales it in
place when it exceeds max_norm.
"""

from __future__ import annotations

import math

from ... import dtypes as _dt
from ...dispatch import register
from ...kernels.embedding import COUNT, GATHER, SCATTER, embedding_kernel
from ...kernels.norm import RENORM_INF, RENORM_L0, RENORM_L1, RENORM_L2, RENORM_NEG_INF, RENORM_P, renorm_rows_kernel
from ._launch import INTERPRETED, error_buffer, f64_bits
from .memory import copy_, empty, fill
from .ops_norm import as_rows, contiguous
from .ops_softmax import pow2, run

TILE = 8192 if INTERPRETED else 4096  # elements per program
GPU_BLOCK_D = 256


def _tile(K: int, D: int):
    bd = min(pow2(D), TILE) if INTERPRETED else min(pow2(D), GPU_BLOCK_D)
    bk = min(pow2(K), max(1, TILE // bd)) if INTERPRETED else max(1, TILE // 4 // bd)
    return bk, bd


@register("embedding", "triton")
def embedding(out, weight, indices) -> None:
    K = indices.size
    n, D = weight._shape
    if K == 0 or D == 0:
        return
    idx = contiguous(indices)
    bk, bd = _tile(K, D)
    run(embedding_kernel, (-(-K // bk), -(-D // bd)), idx, weight, out, out, K, D, n, -1, *weight._strides, D, 1,
        error_buffer(out._device), MODE=GATHER, SCALE=False, BLOCK_K=bk, BLOCK_D=bd)


@register("embedding_backward", "triton")
def embedding_backward(dweight, grad, indices, padding_idx, scale_grad_by_freq) -> None:
    n, D = dweight._shape
    K = indices.size
    dev = dweight._device
    acc = dweight if dweight._dtype in (_dt.float32, _dt.float64) else empty((n, D), _dt.float32, dev)
    if acc.size:
        fill(acc, 0.0)
    if K and D:
        idx = contiguous(indices)
        g, sgk, sgd = as_rows(grad, 1)
        bk, bd = _tile(K, D)
        cnt = acc
        if scale_grad_by_freq:
            cnt = empty((n,), _dt.int32, dev)
            fill(cnt, 0)
            run(embedding_kernel, (-(-K // bk), 1), idx, g, acc, cnt, K, D, n, -1, sgk, sgd, D, 1, error_buffer(dev),
                MODE=COUNT,
                SCALE=False, BLOCK_K=bk, BLOCK_D=bd)
        run(embedding_kernel, (-(-K // bk), -(-D // bd)), idx, g, acc, cnt, K, D, n,
            -1 if padding_idx is None else padding_idx, sgk, sgd, D, 1, error_buffer(dev), MODE=SCATTER,
            SCALE=bool(scale_grad_by_freq),
            BLOCK_K=bk, BLOCK_D=bd)
    if acc is not dweight and acc.size:
        copy_(dweight, acc)


def _norm_code(p: float) -> int:
    """The kernel's NORM code for ``norm_type`` (a plain int: constexpr codes are for the kernels)."""
    code = {math.inf: RENORM_INF, -math.inf: RENORM_NEG_INF, 0.0: RENORM_L0, 1.0: RENORM_L1, 2.0: RENORM_L2}
    return int(code.get(p, RENORM_P).value)


@register("embedding_renorm_", "triton")
def embedding_renorm_(weight, indices, max_norm, norm_type) -> None:
    K = indices.size
    n, D = weight._shape
    if K == 0 or D == 0 or n == 0:
        return
    dev = weight._device
    idx = contiguous(indices)
    claim = empty((n,), _dt.int64, dev)
    fill(claim, K)  # no position claims it yet
    if INTERPRETED:  # rows are walked in chunks: a few rows a program, not one long row each
        bd = min(pow2(D), 2048)
        bk = min(pow2(K), max(1, TILE // bd))
    else:
        bk, bd = _tile(K, D)
    args = (idx, weight, claim, K, D, n, *weight._strides)
    one = f64_bits(1.0)  # the claim reads neither the norm nor the scalars: one specialization for every norm
    run(renorm_rows_kernel, (-(-K // bk),), *args, one, one, CLAIM=True, NORM=_norm_code(2.0), F64=False,
        BLOCK_K=bk, BLOCK_D=bd)
    run(renorm_rows_kernel, (-(-K // bk),), *args, f64_bits(max_norm), f64_bits(norm_type), CLAIM=False,
        NORM=_norm_code(norm_type), F64=weight._dtype is _dt.float64, BLOCK_K=bk, BLOCK_D=bd)
