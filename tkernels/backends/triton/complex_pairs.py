"""Launch wrappers of the complex kernels (``tkernels/kernels/complex.py``) on real *pair views*.

A complex operand is given as its real view: a float32/float64 Array of the complex shape plus a trailing axis
of 2 with unit stride (what ``view_as_real`` returns; no copy). A real operand is a real Array of the logical
shape, a scalar a Python number (complex, float, int or bool). Outputs are contiguous: a pair view for complex
results, a real or bool Array of the logical shape otherwise. These wrappers know nothing of complex dtypes;
``complex.py`` registers the complex ops of the triton backend on top of them.
"""

from __future__ import annotations

from ...array import Array
from ...kernels import complex as ck
from ...kernels import elementwise as ek
from ._launch import ELEMENTWISE_BLOCK, collapse, f64_bits, grid1d, launch

_PROD_TILES = ((16, 64), (1, 1024))  # (BLOCK_M, BLOCK_R): the first whose BLOCK_R fits R (each is an AOT variant)


def _run(kernel, grid, *args, **meta):
    return launch(kernel, grid, *args, **meta)  # (looked up at call time: tests record launches through it)


def _ct(d) -> int:
    return ek.CT_F64 if d.itemsize == 8 else ek.CT_F32


def _logical(x: Array, is_complex: bool):
    """(shape, strides in real words) of the logical elements of operand ``x``."""
    if is_complex:
        assert x._shape[-1] == 2 and x._strides[-1] == 1, (x._shape, x._strides)
        return x._shape[:-1], x._strides[:-1]
    return x._shape, x._strides


def _bstrides(shape, strides, out_shape) -> tuple:
    lead = len(out_shape) - len(shape)
    return (0,) * lead + tuple(0 if s == 1 and t != 1 else st for s, t, st in zip(shape, out_shape[lead:], strides))


def _contiguous(shape, strides, out_shape, is_complex: bool) -> bool:
    if shape != out_shape:
        return False
    step = 2 if is_complex else 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1 and st != step:
            return False
        step *= s
    return True


def _scalar_parts(v, ct: int):
    c = complex(v)
    if ct == ek.CT_F64:
        return f64_bits(c.real), f64_bits(c.imag)
    return float(c.real), float(c.imag)


def unary(name: str, out: Array, x: Array) -> None:
    """``out = name(x)`` for the pair view ``x``; ``out`` a contiguous pair view (complex results) or a contiguous
    real/bool Array of the logical shape (abs, angle, isnan, isinf, isfinite)."""
    code = ck.CUNARY_CODES[name]
    shape, strides = _logical(x, True)
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return
    ct = _ct(x._dtype) if ck.CUNARY_OUT[code] == ck.OUT_BOOL else _ct(out._dtype)
    if _contiguous(shape, strides, shape, True):
        contiguous, sizes, st = True, [1] * 6, [0] * 6
    else:
        contiguous = False
        sizes, (st,) = collapse(shape, strides)
    _run(ck.complex_unary_kernel, grid1d(n, ELEMENTWISE_BLOCK), x, out, n, *sizes[1:], *st,
         OP=code, CT=ct, CONTIGUOUS=contiguous, BLOCK=ELEMENTWISE_BLOCK)


def binary(name: str, out: Array, a, b, a_complex: bool, b_complex: bool, compute_f64: bool) -> None:
    """``out = a name b`` (add, subtract, multiply, divide, pow, equal, not_equal), broadcasting: ``a``/``b`` pair
    views (``*_complex``), real Arrays or Python scalars; ``out`` a contiguous pair view, or bool for the
    comparisons. ``compute_f64``: compute in float64 (a complex128 result or operand)."""
    code = ck.CBINARY_CODES[name]
    ct = ek.CT_F64 if compute_f64 else ek.CT_F32
    out_shape = out._shape[:-1] if code < 5 else out._shape
    n = 1
    for s in out_shape:
        n *= s
    if n == 0:
        return
    ptrs, scalars, strides, kinds = [], [], [], []
    contiguous = True
    for x, is_c in ((a, a_complex), (b, b_complex)):
        if isinstance(x, Array):
            shape, st = _logical(x, is_c)
            ptrs.append(x)
            scalars.append((0, 0) if ct == ek.CT_F64 else (0.0, 0.0))
            strides.append(_bstrides(shape, st, out_shape))
            kinds.append(ck.C_COMPLEX if is_c else ck.C_REAL)
            contiguous = contiguous and _contiguous(shape, st, out_shape, is_c)
        else:
            ptrs.append(out)  # placeholder pointer, never read
            scalars.append(_scalar_parts(x, ct))
            strides.append((0,) * len(out_shape))
            kinds.append(ck.C_SCALAR)
    if contiguous:
        sizes, strides = [1] * 6, [[0] * 6, [0] * 6]
    else:
        sizes, strides = collapse(out_shape, *strides)
    _run(ck.complex_binary_kernel, grid1d(n, ELEMENTWISE_BLOCK), *ptrs, out, *scalars[0], *scalars[1], n,
         *sizes[1:], *strides[0], *strides[1],
         OP=code, CT=ct, A_KIND=kinds[0], B_KIND=kinds[1], CONTIGUOUS=contiguous, BLOCK=ELEMENTWISE_BLOCK)


def prod_rows(out: Array, x: Array) -> None:
    """``out[m] = prod_r x[m, r]``: ``x`` the pair view of an (M, R) complex matrix (any strides), ``out`` the
    contiguous pair view of M complex values (R = 0 gives 1)."""
    (m, r), (sm, sr) = _logical(x, True)
    if m == 0:
        return
    block_m, block_r = next((t for t in _PROD_TILES if t[1] >= r), _PROD_TILES[-1])
    _run(ck.complex_prod_kernel, (-(-m // block_m),), x, out, m, r, sm, sr,
         CT=_ct(out._dtype), BLOCK_M=block_m, BLOCK_R=block_r)


def matmul_pairs(out: Array, a: Array, b: Array) -> None:
    """``out = a @ b`` for complex pair views ``a`` (*batch, M, K, 2), ``b`` (*batch, K, N, 2) (one batch shape,
    broadcast views allowed, K > 0) into the contiguous pair view ``out`` (*batch, M, N, 2), as ONE real matmul
    on the interleaved layout: ``a`` seen as a real (M, 2K) matrix (no copy when its K pairs are adjacent) times
    the real (2K, 2N) block matrix B' with rows 2k = (br, bi) pairs and 2k+1 = (-bi, br) pairs = i b, so that
    out's real (M, 2N) view receives (sum ar br - ai bi, sum ar bi + ai br) pairs directly.

    Against four real matmuls of strided part views (the 4M method, 4 GEMMs + a negation: each GEMM reads every
    other word of a and b, the partial results are added in a second pass) or Gauss's 3M (3 GEMMs + 5
    elementwise passes, less accurate), this is 4 launches (2 copies and a multiply by i build B' from b, then
    the GEMM) with a and out touched once, contiguous: the real matmul's fast path. The cost is B': twice b's
    bytes, built once per call (once for all of a broadcast batch)."""
    from ...dispatch import lookup
    from .memory import copy_, empty

    dev = out._device
    nd = len(out._shape) - 3
    batch = out._shape[:nd]
    (k, n) = b._shape[nd:nd + 2]
    m = a._shape[nd]
    f64 = out._dtype.itemsize == 8
    if any(st for s, st in zip(batch, b._strides[:nd]) if s != 1):
        bb, b_batch = b, batch
    else:  # b shared by the whole batch (a weight): one B'
        bb, b_batch = b._view(b._shape[nd:], b._strides[nd:], b._offset), ()
    bx = empty(b_batch + (k, 2, n, 2), out._dtype, dev)
    lead = (slice(None),) * (len(b_batch) + 1)
    copy_(bx[lead + (0,)], bb)
    ib = empty(b_batch + (k, n, 2), out._dtype, dev)
    binary("multiply", ib, bb, 1j, True, False, f64)
    copy_(bx[lead + (1,)], ib)
    bp = bx._view(b_batch + (2 * k, 2 * n), tuple(bx._strides[:len(b_batch)]) + (2 * n, 1), bx._offset)
    if b_batch == () and nd:
        bp = bp._view(batch + bp._shape, (0,) * nd + bp._strides, bp._offset)
    if a._strides[nd + 1] != 2 or a._dtype is not out._dtype:  # K pairs not adjacent: a contiguous copy
        ac = empty(a._shape, out._dtype, dev)
        copy_(ac, a)
        a = ac
    ap = a._view(batch + (m, 2 * k), a._strides[:nd + 1] + (1,), a._offset)
    op = out._view(batch + (m, 2 * n), out._strides[:nd + 1] + (1,), out._offset)
    lookup("matmul", dev)(op, ap, bp)


def cumprod_rows(out: Array, x: Array, include_initial: bool) -> None:
    """``out[m, :]`` = the running products of ``x[m, :]``: ``x`` the pair view of an (M, L) complex matrix (any
    strides), ``out`` the contiguous pair view of (M, L + include_initial)."""
    (m, n), (sm, sl) = _logical(x, True)
    if m == 0:
        return
    block_m, block_r = next((t for t in _PROD_TILES if t[1] >= n), _PROD_TILES[-1])
    _run(ck.complex_cumprod_kernel, (-(-m // block_m),), x, out, m, n, sm, sl, CT=_ct(out._dtype),
         INITIAL=bool(include_initial), BLOCK_M=block_m, BLOCK_R=block_r)
