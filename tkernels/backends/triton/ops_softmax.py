"""softmax / log_softmax and their backward entries on cuda (``tkernels/kernels/softmax.py``); signatures as the
NumPy backend (``tkernels/ops/activation.py``)::

    softmax(out, x, axis)                  log_softmax(out, x, axis)
    softmax_backward(out, grad, y, axis)   log_softmax_backward(out, grad, y, axis)

Any axis is read in place: the kernel takes each operand's stride along the axis and walks the other (kept)
axes by strides, collapsed jointly to at most 6 dimensions (``row_plan``); nothing is copied. Rows that fit one
block are loaded once; longer rows (large vocabularies) are walked in chunks twice, with an online max/sum-exp.

Also the row-layout helpers the other nn backends share (``row_plan``, ``pow2``, ``run``, ``compute_f64``).
"""

from __future__ import annotations

import functools

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.softmax import OP_CODES, softmax_kernel
from ._launch import INTERPRETED, collapse, launch

# Tiles (BLOCK_M, BLOCK_N). Interpreted: one program costs ~0.5 ms whatever its size, so tiles hold up to TILE
# elements and rows up to MAX_ONE_PASS go in one pass. On a GPU a fixed set (each a compiled variant, all in the
# AOT table): rows up to BLOCK_N long take the first tile that fits; longer rows the two-pass CHUNK tile.
TILE = 8192 if INTERPRETED else 4096
MAX_ONE_PASS = 8192 if INTERPRETED else 4096
GPU_TILES = ((64, 16), (16, 64), (4, 256), (2, 1024), (1, 2048), (1, 4096))
GPU_CHUNK = (1, 2048)


def pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def run(kernel, grid, *args, **meta):
    """``launch``; interpreted, without NumPy's warnings (exp overflow, inf - inf, masked lanes' log(0))."""
    if INTERPRETED:
        with np.errstate(all="ignore"):
            return launch(kernel, grid, *args, **meta)
    return launch(kernel, grid, *args, **meta)


def compute_f64(*arrays) -> bool:
    """Compute in float64 when any operand (Arrays or None) is float64, else in float32."""
    return any(a is not None and a._dtype is _dt.float64 for a in arrays)


def row_tile(M: int, N: int):
    """(ONE_PASS, BLOCK_M, BLOCK_N) for M rows of N elements (the module's settings read at each call)."""
    one = MAX_ONE_PASS
    if INTERPRETED:
        if N <= one:
            bn = pow2(N)
            return True, min(pow2(M), max(1, TILE // bn)), bn
        return False, 1, min(pow2(one), 4096)
    if N <= one:
        for bm, bn in GPU_TILES:
            if N <= bn:
                return True, bm, bn
    return False, *GPU_CHUNK


@functools.lru_cache(maxsize=2048)
def row_plan(shape, axis, *strides_list):
    """Rows along ``axis`` of arrays of ``shape`` with the given strides: (M, N, axis strides, kept args, ROW_ND).

    ``kept args``: the collapsed kept sizes (5, the outermost is implied) then each operand's 6 kept strides."""
    if not shape:  # 0-d: one row of one element
        shape, axis, strides_list = (1,), 0, tuple((0,) for _ in strides_list)
    kept = [i for i in range(len(shape)) if i != axis]
    sizes, sts = collapse([shape[i] for i in kept], *[[st[i] for i in kept] for st in strides_list])
    M = 1
    for i in kept:
        M *= shape[i]
    nd = 1 if all(s == 1 for s in sizes[:-1]) else 0
    args = (*sizes[1:], *(v for st in sts for v in st))
    return M, shape[axis], tuple(st[axis] for st in strides_list), args, nd


def _softmax(op: str, out: Array, x: Array, g: Array | None, axis: int) -> None:
    if out.size == 0:
        return
    if x._dtype.kind != "f":  # softmax(ints, dtype=...): converted first (on the device), as the entry documents
        x = x.astype(out._dtype)
    gg = x if g is None else g  # forward ops do not read g_ptr: x stands in
    M, N, (sx, sg, so), args, nd = row_plan(out._shape, axis, x._strides, gg._strides, out._strides)
    one, bm, bn = row_tile(M, N)
    run(softmax_kernel, (-(-M // bm),), x, gg, out, M, N, sx, sg, so, *args, OP=OP_CODES[op],
        F64=compute_f64(x, g, out), ROW_ND=nd, ONE_PASS=one, BLOCK_M=bm, BLOCK_N=bn)


@register("softmax", "triton")
def softmax(out: Array, x: Array, axis: int) -> None:
    _softmax("softmax", out, x, None, axis)


@register("log_softmax", "triton")
def log_softmax(out: Array, x: Array, axis: int) -> None:
    _softmax("log_softmax", out, x, None, axis)


@register("softmax_backward", "triton")
def softmax_backward(out: Array, grad: Array, y: Array, axis: int) -> None:
    _softmax("softmax_backward", out, y, grad, axis)


@register("log_softmax_backward", "triton")
def log_softmax_backward(out: Array, grad: Array, y: Array, axis: int) -> None:
    _softmax("log_softmax_backward", out, y, grad, axis)
