"""``eig`` on cuda (signature: ``tkernels/linalg_eig.py``): Hessenberg reduction, the complex shifted QR
algorithm and the eigenvectors from the Schur form, one program per matrix: up to ``MAX_N x MAX_N`` in registers
(``eig_kernel`` in ``tkernels/kernels/eig.py``), larger ones on a global-memory scratch in blocks
(``eig_large_kernel`` in ``tkernels/kernels/eig_large.py``). Real and complex inputs are read in place with their
strides (a complex one through its real pair view); results, scratch and info codes stay on the device."""

from __future__ import annotations

import functools

from ... import dtypes as _dt
from ..._complex import CUDA_COMPLEX_OPS, view_as_real
from ...array import Array
from ...dispatch import register
from ...kernels.eig import GPU_BLOCKS, MAX_N, eig_kernel
from ...kernels.eig_large import GPU_TILE, GPU_VEC, GPU_WARPS, eig_large_kernel, scratch_size
from ...validation import describe
from ._launch import INTERPRETED, collapse
from .memory import empty
from .reduction import _launch, _pow2

_F64 = _dt.float64
SMALL_MAX = MAX_N  # the largest N for eig_kernel; larger ones take eig_large_kernel
LARGE_MAX = 23169  # 4 N^2 + 9 N < 2^31 (the largest such N): eig_large_kernel's int32 offsets within a matrix's scratch
LARGE_TILE = None  # eig_large_kernel's TILE interpreted (None: pow2(N)); tests force small ones
LARGE_VEC = None  # its VEC interpreted (None: as LARGE_TILE)
CUDA_COMPLEX_OPS.update({"linalg.eig", "linalg.eigvals"})  # complex input has its kernel path here


@functools.lru_cache(maxsize=1024)
def _batch(shape, strides):
    sizes, (st,) = collapse(list(shape) or [1], list(strides) or [0])
    return (*sizes[1:], *st)


def max_iterations(n: int) -> int:
    """QR iterations allowed between two deflations (LAPACK's zlahqr: 30 max(10, n))."""
    return 30 * max(10, n)


def _block(n: int) -> int:
    if INTERPRETED:
        return max(_pow2(n), 2)
    return next(b for b in GPU_BLOCKS if n <= b)


def _warps(block: int) -> int:
    """16 warps for the 64 tile: its fp64 Hessenberg tiles with 4 warps made a 1.7 MB cubin (spilled registers,
    53 s to compile for sm_80 on Triton 3.9), with 16 warps 0.58 MB in 2.7 s."""
    return 16 if block > GPU_BLOCKS[0] else 4


def _large_blocks(n: int) -> tuple[int, int]:
    """(TILE, VEC) of eig_large_kernel."""
    if INTERPRETED:
        b = LARGE_TILE or max(_pow2(n), 2)
        return b, LARGE_VEC or b
    return GPU_TILE, GPU_VEC


@register("eig", "triton")
def eig(w: Array, v, info: Array, x: Array, compute) -> None:
    n = x._shape[-1]
    if n > LARGE_MAX:
        raise NotImplementedError(f"linalg.eig: the cuda kernel indexes a matrix's scratch with 32-bit offsets, so "
                                  f"matrices up to {LARGE_MAX} x {LARGE_MAX}; got {describe(x)}; hint: one program "
                                  f"per matrix would run for days at this size: use x.to('cpu')")
    cplx = x._dtype.kind == "c"
    xv = view_as_real(x) if cplx else x
    st = xv._strides[:-1] if cplx else xv._strides  # strides in real words
    cd = _F64 if compute is _F64 else _dt.float32
    B = info.size
    wv = view_as_real(w)
    vv = wv if v is None else view_as_real(v)
    args = (n, max_iterations(n), int(cplx), st[-2], st[-1], *_batch(x._shape[:-2], st[:-2]))
    if n <= SMALL_MAX:
        scratch = empty((B, 4, n, n), cd, x.device)
        block = _block(n)
        _launch(eig_kernel, (B,), xv, scratch, wv, vv, info, *args, WANT_VECTORS=v is not None, F64=cd is _F64,
                BLOCK_N=block, num_warps=_warps(block))
        return
    scratch = empty((B, scratch_size(n)), cd, x.device)
    tile, vec = _large_blocks(n)
    _launch(eig_large_kernel, (B,), xv, scratch, wv, vv, info, *args, WANT_VECTORS=v is not None, F64=cd is _F64,
            TILE=tile, VEC=vec, num_warps=GPU_WARPS)
