"""Reductions and scans on cuda through ``tkernels/kernels/reduction.py`` (signatures: ``tkernels/reduction.py``).

Every reduction is one launch of ``reduce_kernel`` over ``M`` rows of ``R`` elements: the kept axes and the
reduced axes of ``x`` are collapsed separately (``collapse``), which is the permuted view "kept first, reduced
last" without a copy. When there are too few rows to fill the GPU, long rows are split: a first launch writes
one partial state per (row, split), a second reduces the partials (no atomics, deterministic results).
Two-pass statistics (var, std) and matrix norms (a sum, then a max) chain such reductions through temporaries.
"""

from __future__ import annotations

import functools

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import lookup, register
from ...kernels.reduction import (
    ACC_F32,
    ACC_F64,
    ACC_I64,
    GPU_COLUMN_TILE,
    GPU_ROW_TILES,
    OP_CODES,
    SCAN_PROD,
    SCAN_SUM,
    reduce_kernel,
    scan_kernel,
)
from ._launch import INTERPRETED, collapse, f64_bits, launch
from .memory import copy_, empty, fill

_F32, _F64, _I64 = _dt.float32, _dt.float64, _dt.int64
_INF = float("inf")
_ACC_DTYPE = {ACC_F32: _F32, ACC_F64: _F64, ACC_I64: _I64}
_COUNTS = (OP_CODES["any"], OP_CODES["all"], OP_CODES["count_nonzero"])
_ARGS = (OP_CODES["argmax"], OP_CODES["argmin"])

# Tiles: the interpreter's cost is per program and per operation, hardly per element, so it gets the smallest
# power-of-two tile holding (up to TILE elements of) the rows; a GPU gets the fixed GPU_ROW_TILES/GPU_COLUMN_TILE.
TILE = 8192 if INTERPRETED else 2048
# Splitting long rows: worth it when fewer than TARGET_PROGRAMS programs would run and a row has at least
# SPLIT_MIN_CHUNKS tiles (an H200 has 132 SMs); never in the interpreter, where programs are the cost.
TARGET_PROGRAMS = 1 if INTERPRETED else 528
SPLIT_MIN_CHUNKS = 8
MAX_SPLITS = 1024


def _launch(kernel, grid, *args, **meta):
    """``launch``; interpreted, without NumPy's warnings: NaN and inf arithmetic (inf - inf, log(0)) is routine
    here and silent on a GPU."""
    if INTERPRETED:
        with np.errstate(all="ignore"):
            return launch(kernel, grid, *args, **meta)
    return launch(kernel, grid, *args, **meta)


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _tiles(M: int, R: int, column: bool):
    """(BLOCK_M, BLOCK_R) for M rows of R elements; ``column``: the kept axis is the contiguous one."""
    if INTERPRETED:
        br = min(_pow2(R), TILE)
        return min(_pow2(M), max(1, TILE // br)), br
    if column:
        return GPU_COLUMN_TILE
    for bm, br in GPU_ROW_TILES:
        if R <= br:
            return bm, br
    return GPU_ROW_TILES[-1]


def _splits(M: int, R: int, bm: int, br: int):
    """(number of splits, elements per split): one split unless rows are long and few."""
    row_blocks = -(-M // bm)
    chunks = -(-R // br)
    if row_blocks >= TARGET_PROGRAMS or chunks < SPLIT_MIN_CHUNKS:
        return 1, R
    s = min(-(-TARGET_PROGRAMS // row_blocks), chunks // max(SPLIT_MIN_CHUNKS // 2, 1), MAX_SPLITS)
    per = -(-chunks // s) * br
    return -(-R // per), per


def _acc(dtype) -> int:
    """Accumulation code for ``dtype`` (a compute dtype, or an input compared as it is): float64, float32 for
    other floats, int64 for integers and bool (narrow integer results wrap around the same way afterwards)."""
    if dtype is _F64:
        return ACC_F64
    return ACC_F32 if dtype.kind == "f" else ACC_I64


def _nd(sizes) -> int:
    """The kernels' ``*_ND`` code of collapsed sizes: 1 or 2 dimensions inline, 0 for the general offset."""
    n = sum(s != 1 for s in sizes[:-1]) + 1
    return n if n <= 2 else 0


def _group(shape, strides, dims):
    sizes, (st,) = collapse([shape[i] for i in dims], [strides[i] for i in dims])
    n = 1
    for i in dims:
        n *= shape[i]
    return n, (*sizes[1:], *st), _nd(sizes), st[-1]


@functools.lru_cache(maxsize=4096)
def _plan(shape, strides, axes, *tuning):
    """Everything a reduction's launches need from the layout, cached per shape, strides, axes and the tuning
    constants (passed to be part of the key): training loops repeat layouts, and this is ~100 µs of Python."""
    M, k_args, row_nd, k_inner = _group(shape, strides, [i for i in range(len(shape)) if i not in axes])
    R, r_args, red_nd, r_inner = _group(shape, strides, axes)
    bm, br = _tiles(M, R, k_inner == 1 and r_inner != 1 and R > 1)
    s, per = _splits(M, R, bm, br)
    return M, R, k_args, r_args, row_nd, red_nd, bm, br, s, per, _tiles(M, s, False)


_PARTIALS = (1,) * 5 + (0,) * 5  # a [M, s] array of partials: sizes (1, .., 1, M), strides (0, .., 0, s)


def _reduce(op: str, out: Array, x: Array, axes, acc: int, *, to_bool=False, scal=0.0, stat=None) -> None:
    """``out`` (contiguous, the kept axes of ``x`` in order) = ``op`` of ``x`` over ``axes``."""
    M, R, k_args, r_args, row_nd, red_nd, bm, br, s, per, (bm2, br2) = _plan(
        x._shape, x._strides, axes, INTERPRETED, TILE, TARGET_PROGRAMS, SPLIT_MIN_CHUNKS)
    if M == 0:
        return
    if not out.is_contiguous():  # the kernel writes rows contiguously
        tmp = empty(out.shape, out.dtype, out.device)
        _reduce(op, tmp, x, axes, acc, to_bool=to_bool, scal=scal, stat=stat)
        copy_(out, tmp)
        return
    code = OP_CODES[op]
    if s > 1 and op in ("var", "std") and stat is None:  # split rows: the means first, by their own launches
        stat = empty((M,), _ACC_DTYPE[acc], out.device)
        _reduce("mean", stat, x, axes, acc, scal=float(R))
    bits = f64_bits(scal) if scal else 0  # (0.0 and -0.0 alike: no op reads a zero scalar's sign)
    dummy = out  # pointer arguments an op does not read
    stat = dummy if stat is None else stat
    if s == 1:
        _launch(reduce_kernel, (-(-M // bm), 1), x, out, dummy, stat, M, R, R, 1, bits, *k_args, *r_args, OP=code,
               ACC=acc, TO_BOOL=to_bool, STAGE=0, ROW_ND=row_nd, RED_ND=red_nd, BLOCK_M=bm, BLOCK_R=br)
        return
    # two launches: partial states per (row, split), then each row's partials reduced
    part_acc = ACC_I64 if code in _COUNTS else acc
    part = empty((M, s), _ACC_DTYPE[part_acc], out.device)
    if code in _ARGS:
        aux = empty((M, s), _I64, out.device)  # the index of each partial extreme
    elif op == "logsumexp":
        aux = empty((M, s), _ACC_DTYPE[acc], out.device)  # the sum of exp(x - partial shift)
    else:
        aux = dummy
    _launch(reduce_kernel, (-(-M // bm), s), x, part, aux, stat, M, R, per, s, bits, *k_args, *r_args, OP=code,
           ACC=acc, TO_BOOL=to_bool, STAGE=1, ROW_ND=row_nd, RED_ND=red_nd, BLOCK_M=bm, BLOCK_R=br)
    _launch(reduce_kernel, (-(-M // bm2), 1), part, out, aux, dummy, M, s, s, 1, bits,
           *_PARTIALS, s, *_PARTIALS, 1, OP=code, ACC=part_acc, TO_BOOL=False, STAGE=2, ROW_ND=1,
           RED_ND=1, BLOCK_M=bm2, BLOCK_R=br2)


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _compute_acc(compute):
    """(ACC code, TO_BOOL) for a compute dtype: a bool accumulator sums as "any" and multiplies as "all"."""
    return (ACC_I64, True) if compute is _dt.bool else (_acc(compute), False)


def _accumulate(op: str):
    def impl(out: Array, x: Array, axes, compute) -> None:
        if compute.kind == "c":  # on the real pair views (complex.py)
            from .complex import reduce as complex_reduce

            complex_reduce(op, out, x, axes)
            return
        acc, to_bool = _compute_acc(compute)
        _reduce(op, out, x, axes, acc, to_bool=to_bool)

    impl.__name__ = f"triton_{op}"
    return impl


register("sum", "triton")(_accumulate("sum"))
register("prod", "triton")(_accumulate("prod"))
register("logsumexp", "triton")(_accumulate("logsumexp"))


@register("mean", "triton")
def mean(out: Array, x: Array, axes, compute) -> None:
    if compute.kind == "c":
        from .complex import reduce as complex_reduce

        complex_reduce("mean", out, x, axes)
        return
    _reduce("mean", out, x, axes, _acc(compute), scal=float(_count(x.shape, axes)))


def _moment(op: str):
    def impl(out: Array, x: Array, axes, compute, correction) -> None:
        # two passes over each row (the kernel's, or two launches for split rows): the mean, then the sum of the
        # squared deviations from it, as the NumPy backend
        n = _count(x.shape, axes)
        _reduce(op, out, x, axes, _acc(compute), scal=max(n - correction, 0.0))

    impl.__name__ = f"triton_{op}"
    return impl


register("var", "triton")(_moment("var"))
register("std", "triton")(_moment("std"))


def _as_int64(x: Array) -> Array:
    """The same memory read as int64 (a uint64 array's bit patterns)."""
    return Array(x._storage, x._shape, x._strides, x._offset, _I64, x._device)


def _by_value(op: str):
    def impl(out: Array, x: Array, axes) -> None:
        if x.dtype is _dt.uint64 and op in ("max", "min", "argmax", "argmin"):
            # the int64 accumulator orders uint64 values once their top bit is flipped (x ^ 2**63 keeps their
            # order in the signed range); the extreme is flipped back into ``out``'s memory
            xor = lookup("bitwise_xor", x.device)
            flipped = empty(x.shape, _I64, x.device)
            xor(flipped, _as_int64(x), -2**63, _I64)
            if op in ("argmax", "argmin"):
                _reduce(op, out, flipped, axes, ACC_I64)
                return
            res = empty(out.shape, _I64, out.device)
            _reduce(op, res, flipped, axes, ACC_I64)
            xor(_as_int64(out), res, -2**63, _I64)
            return
        _reduce(op, out, x, axes, _acc(x.dtype))

    impl.__name__ = f"triton_{op}"
    return impl


for _op in ("max", "min", "any", "all", "count_nonzero", "argmax", "argmin"):
    register(_op, "triton")(_by_value(_op))

_NORMS = {2.0: "norm2", 1.0: "norm1", _INF: "norm_inf", -_INF: "norm_ninf", 0.0: "norm0"}
_SV_NORMS = {"nuc": "sum", 2.0: "max", -2.0: "min"}  # matrix_norm orders over the singular values


@register("vector_norm", "triton")
def vector_norm(out: Array, x: Array, axes, compute, ord) -> None:  # noqa: A002
    op = _NORMS.get(ord, "norm_p")
    # squares (and p-th powers) of float32/bfloat16 values past ~1.8e19 overflow a float32 accumulator: norm([3e38])
    # would be inf; they accumulate in float64, as the NumPy backend computes them
    acc = ACC_F64 if op in ("norm2", "norm_p") else _acc(compute)
    _reduce(op, out, x, axes, acc, scal=ord)


def _singular_value_norm(out: Array, x: Array, compute, ord) -> None:  # noqa: A002
    """nuc / 2 / -2: the singular values (the ``svd`` backend without vectors: one-sided Jacobi, one program per
    matrix), then their sum, max or min (NaN propagates) by the reduction kernels."""
    k = min(x._shape[-2:])
    if out.size == 0:
        return
    if k == 0:  # an empty matrix has no singular values: their sum is 0 (the entry rejects 2 and -2)
        fill(out, 0.0)
        return
    sv = empty(x._shape[:-2] + (k,), compute, x.device)
    lookup("svd", x._device)(None, sv, None, x, compute)
    _reduce(_SV_NORMS[ord], out, sv, (sv.ndim - 1,), _acc(compute))


@register("matrix_norm", "triton")
def matrix_norm(out: Array, x: Array, compute, ord) -> None:  # noqa: A002
    if ord in ("nuc", 2.0, -2.0):
        _singular_value_norm(out, x, compute, ord)
        return
    n = x.ndim
    acc = _acc(compute)
    if ord == "fro":
        _reduce("norm2", out, x, (n - 2, n - 1), acc)
        return
    # 1 / -1: the max / min column sum of |x|; inf / -inf: the max / min row sum
    summed = n - 2 if abs(ord) == 1.0 else n - 1
    sums = empty(x.shape[:summed] + x.shape[summed + 1:], compute, x.device)
    _reduce("norm1", sums, x, (summed,), acc)
    _reduce("max" if ord > 0 else "min", out, sums, (n - 2,), acc)


@functools.lru_cache(maxsize=1024)
def _scan_plan(shape, x_strides, y_strides, axis, *tuning):
    kept = [i for i in range(len(shape)) if i != axis]
    M = 1
    for i in kept:
        M *= shape[i]
    L = shape[axis]
    ks, (xt, yt) = collapse([shape[i] for i in kept], [x_strides[i] for i in kept], [y_strides[i] for i in kept])
    bm, br = _tiles(M, L, xt[-1] == 1 and x_strides[axis] != 1 and L > 1)
    return M, L, (x_strides[axis], y_strides[axis], *ks[1:], *xt, *yt), _nd(ks), bm, br


def _scan(code: int):
    def impl(out: Array, x: Array, axis: int, compute, include_initial: bool) -> None:
        if compute.kind == "c":  # a sum scan of each part on the real pair views; products: complex.py
            from ..._complex import view_as_real
            from .complex import cumulative_prod

            if code == SCAN_SUM:
                impl(view_as_real(out), view_as_real(x), axis, _dt.to_real(compute), include_initial)
            else:
                cumulative_prod(out, x, axis, include_initial)
            return
        M, L, args, row_nd, bm, br = _scan_plan(x._shape, x._strides, out._strides, axis, INTERPRETED, TILE)
        if M == 0 or out.size == 0:
            return
        acc, to_bool = _compute_acc(compute)
        _launch(scan_kernel, (-(-M // bm),), x, out, M, L, *args, OP=code, ACC=acc, TO_BOOL=to_bool,
               INITIAL=bool(include_initial), ROW_ND=row_nd, BLOCK_M=bm, BLOCK_R=br)

    impl.__name__ = f"triton_cumulative_{('sum', 'prod')[code]}"
    return impl


register("cumulative_sum", "triton")(_scan(SCAN_SUM))
register("cumulative_prod", "triton")(_scan(SCAN_PROD))
