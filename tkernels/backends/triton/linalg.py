"""Matrix products on cuda through ``tkernels/kernels/matmul.py``: ``matmul`` (signature: ``tkernels/linalg.py``)
and ``linear`` (``tkernels/ops/linear.py``), the second being the first with a fused epilogue.

``matmul(out, x1, x2)``: ``x1 (*batch, M, K) @ x2 (*batch, K, N)`` into ``out (*batch, M, N)``, one batch shape,
any strides (0 in broadcast dimensions), K > 0, no overlap with ``out``. The batch dimensions are collapsed per
operand; one that remains runs on the grid's third axis with a stride per operand; a batch that only the first
operand has (a shared weight) is folded into M when its strides allow (one tall GEMM instead of B small ones).
Batches that do not collapse to one dimension (mixed broadcasting) loop over the outer dimensions on the host.

Compute path by result dtype (``kernels/matmul.py``): float16/bfloat16 on tensor cores with float32
accumulation, float32 IEEE or TF32 (``tkernels.backends.matmul.allow_tf32``), float64 in float64, integers in
int64 (wrapping to the output dtype like NumPy; PyTorch refuses integer matmul on cuda, we do not, so that
integer matmul and einsum behave the same on both devices).

On a GPU the kernel is autotuned per (M, N, K, path, dtypes) over ``TC_CONFIGS``/``F64_CONFIGS``/``I64_CONFIGS``.
Interpreted, it runs once with power-of-two blocks that cover the problem (up to 128): one program for the
small matrices of the tests.
"""

from __future__ import annotations

import itertools

import numpy as np

from ... import dtypes as _dt
from ...cuda.autotune import autotune
from ...dispatch import lookup, register
from ...kernels import matmul as mk
from .. import matmul as _flags
from ._launch import INTERPRETED, launch

_DOT = {_dt.float16: mk.DOT_F16, _dt.bfloat16: mk.DOT_BF16, _dt.float32: mk.DOT_F32, _dt.float64: mk.DOT_F64}
_TUNED = {}  # DOT code -> the autotuned kernel of its class (built once, tuned at the first launch)
_tc = autotune(mk.TC_CONFIGS, key=mk.AUTOTUNE_KEY)(mk.matmul_kernel)
_TUNED.update({mk.DOT_F16: _tc, mk.DOT_BF16: _tc, mk.DOT_F32: _tc, mk.DOT_TF32: _tc})
_TUNED[mk.DOT_F64] = autotune(mk.F64_CONFIGS, key=mk.AUTOTUNE_KEY)(mk.matmul_kernel)
_TUNED[mk.DOT_I64] = autotune(mk.I64_CONFIGS, key=mk.AUTOTUNE_KEY)(mk.matmul_kernel)
_COMPUTE = {_dt.float16: _dt.float32, _dt.bfloat16: _dt.float32}  # what the elementwise kernels compute in
MAX_BATCH = 65535  # the grid's third axis


def dot_code(cd: _dt.DType) -> int:
    """The kernel's DOT path for compute dtype ``cd`` (reads the TF32 switch)."""
    code = _DOT.get(cd, mk.DOT_I64)
    if code == mk.DOT_F32 and _flags.allow_tf32:
        return mk.DOT_TF32
    return code


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _interp_blocks(M: int, N: int, K: int, dot: int) -> dict:
    bk = min(max(_pow2(K), 16), 16 if dot == mk.DOT_I64 else 128)  # int64: a (BM, BK, BN) product tensor
    return {"BLOCK_M": min(max(_pow2(M), 16), 128), "BLOCK_N": min(max(_pow2(N), 16), 128), "BLOCK_K": bk,
            "GROUP_M": 8}


def _run(c, a, b, bias, r, M, N, K, nb, sa, sb, sc, sr, dot, act):
    """One launch: 2-D operands (views), ``nb`` batch entries with batch strides ``s*[0]``."""
    args = (a, b, c, bias if bias is not None else c, r if r is not None else c, M, N, K,
            sa[0], sa[1], sa[2], sb[0], sb[1], sb[2], sc[0], sc[1], sc[2],
            bias._strides[0] if bias is not None else 0, sr[0], sr[1], sr[2])
    meta = {"DOT": dot, "ACT": act, "HAS_BIAS": bias is not None, "HAS_RESIDUAL": r is not None}
    if INTERPRETED:
        blocks = _interp_blocks(M, N, K, dot)
        grid = (-(-M // blocks["BLOCK_M"]) * -(-N // blocks["BLOCK_N"]), 1, nb)
        with np.errstate(all="ignore"):  # masked-off lanes and activations overflow in NumPy, silently on a GPU
            launch(mk.matmul_kernel, grid, *args, **meta, **blocks)
        return

    def grid(meta):
        return (triton_cdiv(M, meta["BLOCK_M"]) * triton_cdiv(N, meta["BLOCK_N"]), 1, nb)

    launch(_TUNED[dot], grid, *args, **meta)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _merge(sizes, *strides):
    """Drop size-1 dimensions and merge neighbours contiguous in every operand: (sizes, strides per operand)."""
    keep = [i for i, s in enumerate(sizes) if s != 1]
    sz = [sizes[i] for i in keep]
    st = [[s[i] for i in keep] for s in strides]
    k = len(sz) - 1
    while k > 0:
        if all(s[k - 1] == s[k] * sz[k] for s in st):
            sz[k - 1] *= sz[k]
            del sz[k]
            for s in st:
                s[k - 1] = s[k]
                del s[k]
        k -= 1
    return sz, st


def _view(x, offset):
    return x if offset == 0 else x._view(x._shape, x._strides, x._offset + offset)


def launch_matmul(out, x1, x2, bias=None, residual=None, act: int = 0, dot: int | None = None) -> None:
    """``out = act(x1 @ x2 + bias) + residual`` (``residual`` shaped like ``out``, any strides)."""
    if dot is None:
        dot = dot_code(out._dtype)
    M, K = x1._shape[-2:]
    N = out._shape[-1]
    nd = len(out._shape) - 2
    if nd == 0:
        z = (0,)
        _run(out, x1, x2, bias, residual, M, N, K, 1, z + x1._strides, z + x2._strides, z + out._strides,
             z + (residual._strides if residual is not None else (0, 0)), dot, act)
        return
    batch = out._shape[:nd]
    ba, bb, bc = x1._strides[:nd], x2._strides[:nd], out._strides[:nd]
    br = residual._strides[:nd] if residual is not None else (0,) * nd
    sa, sb, sc = x1._strides[nd:], x2._strides[nd:], out._strides[nd:]
    sr = residual._strides[nd:] if residual is not None else (0, 0)
    if residual is None:
        # an operand shared by the whole batch (a weight): fold the batch into M (x2 shared) or N (x1 shared, no
        # bias) when the strides allow: one tall GEMM instead of B small ones
        z = (0,)
        if not any(st for n, st in zip(batch, bb) if n != 1):
            sizes, (fa, fc) = _merge(batch + (M,), ba + sa[:1], bc + sc[:1])
            if len(sizes) <= 1:
                ra, rc = (fa[0], sa[1]) if fa else sa, (fc[0], sc[1]) if fc else sc
                _run(out, x1, x2, bias, None, M * _prod(batch), N, K, 1, z + ra, z + sb, z + rc, z + sr, dot, act)
                return
        if bias is None and not any(st for n, st in zip(batch, ba) if n != 1):
            sizes, (fb, fc) = _merge(batch + (N,), bb + sb[1:], bc + sc[1:])
            if len(sizes) <= 1:
                rb, rc = (sb[0], fb[0]) if fb else sb, (sc[0], fc[0]) if fc else sc
                _run(out, x1, x2, None, None, M, N * _prod(batch), K, 1, z + sa, z + rb, z + rc, z + sr, dot, act)
                return
    sizes, (ga, gb, gc, gr) = _merge(batch, ba, bb, bc, br)
    if not sizes:
        sizes, ga, gb, gc, gr = [1], [0], [0], [0], [0]
    n_inner = sizes[-1]
    for outer in itertools.product(*(range(s) for s in sizes[:-1])):
        for start in range(0, n_inner, MAX_BATCH):
            idx = outer + (start,)
            oa, ob, oc, orr = (sum(i * s for i, s in zip(idx, g)) for g in (ga, gb, gc, gr))
            _run(_view(out, oc), _view(x1, oa), _view(x2, ob), bias, _view(residual, orr) if residual is not None
                 else None, M, N, K, min(MAX_BATCH, n_inner - start), (ga[-1],) + sa, (gb[-1],) + sb,
                 (gc[-1],) + sc, (gr[-1],) + sr, dot, act)


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@register("matmul", "triton")
def matmul(out, x1, x2) -> None:
    """``out (*batch, M, N) = x1 (*batch, M, K) @ x2 (*batch, K, N)``; one batch shape, any strides, K > 0."""
    if out._dtype.kind == "c":  # one real GEMM on the interleaved layout (complex.py)
        from .complex import matmul as complex_matmul

        complex_matmul(out, x1, x2)
        return
    shape = out._shape
    if x1._shape[-1] == 1 and len(shape) <= 6:
        # K == 1 (outer products, einsum's Hadamard products): one elementwise multiply of broadcast views, rounded
        # once like the kernel, instead of a (mostly masked) tile per batch entry
        nd = len(shape) - 2
        a = x1._view(shape, x1._strides[:nd] + (x1._strides[nd], 0), x1._offset)
        b = x2._view(shape, x2._strides[:nd] + (0, x2._strides[nd + 1]), x2._offset)
        lookup("multiply", out._device)(out, a, b, _COMPUTE.get(out._dtype, out._dtype))
        return
    launch_matmul(out, x1, x2)


@register("linear_backward", "triton")
def linear_backward(gx, gw, gb, grad, x, weight) -> None:
    """The three products and the column sum by the matmul and sum kernels (a K = 0 product is zeros)."""
    dev = grad._device
    (M, N), K = grad._shape, (gx if gx is not None else gw)._shape[1] if gx is not None or gw is not None else 0
    if gx is not None and M and K:
        if N:
            lookup("matmul", dev)(gx, grad, weight)
        else:
            lookup("fill", dev)(gx, 0)
    if gw is not None and N and K:
        if M:
            lookup("matmul", dev)(gw, grad.mT, x)
        else:
            lookup("fill", dev)(gw, 0)
    if gb is not None and N:
        d = gb._dtype
        lookup("sum", dev)(gb, grad, (0,), _dt.float32 if d is _dt.float16 or d is _dt.bfloat16 else d)


@register("linear", "triton")
def linear(out, x, weight, bias, residual, activation) -> None:
    """``out (M, N) = act(x (M, K) @ weight (N, K).T + bias (N,)) + residual (M, N)`` in one kernel; float
    operands, computed in their promoted dtype (float32 accumulation for halves), rounded once to out's dtype."""
    cd = _dt._PROMO[x._dtype, weight._dtype] if x._dtype is not weight._dtype else x._dtype
    launch_matmul(out, x, weight.mT, bias, residual, mk.ACT_CODES[activation], dot_code(cd))
