"""embedding / embedding_backward on cuda (``tkernels/kernels/embedding.py``); signatures as the NumPy backend
(``tkernels/ops/sparse.py``)::

    embedding(out, weight, indices)
    embedding_backward(dweight, grad, indices, padding_idx, scale_grad_by_freq)

The weight and the gradient are read by strides (no copies); indices are flattened (a copy only when they are
not contiguous). The backward scatter-adds rows with fp32 atomics (fp64 for float64) into a zeroed accumulator:
``dweight`` itself when it is float32/float64, else a temporary cast once at the end. Deviation from the NumPy
backend: indices are not checked on the host (a device-to-host sync); an out-of-range index gathers a row of
zeros and its gradient row is dropped. ``embedding_renorm_`` (max_norm) has no cuda kernel yet.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...dispatch import register
from ...kernels.embedding import COUNT, GATHER, SCATTER, embedding_kernel
from ._launch import INTERPRETED
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
        MODE=GATHER, SCALE=False, BLOCK_K=bk, BLOCK_D=bd)


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
            run(embedding_kernel, (-(-K // bk), 1), idx, g, acc, cnt, K, D, n, -1, sgk, sgd, D, 1, MODE=COUNT,
                SCALE=False, BLOCK_K=bk, BLOCK_D=bd)
        run(embedding_kernel, (-(-K // bk), -(-D // bd)), idx, g, acc, cnt, K, D, n,
            -1 if padding_idx is None else padding_idx, sgk, sgd, D, 1, MODE=SCATTER, SCALE=bool(scale_grad_by_freq),
            BLOCK_K=bk, BLOCK_D=bd)
    if acc is not dweight and acc.size:
        copy_(dweight, acc)
