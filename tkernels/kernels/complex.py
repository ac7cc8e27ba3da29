"""Complex elementwise ops and the complex product reduction on the interleaved layout.

A complex64 (complex128) array is float32 (float64) pairs in memory; kernels take the pointer of that real view
and strides in real elements, so an element's real part sits at its offset and the imaginary part at the next
word. A pair is loaded as a ``[BLOCK, 2]`` tile (one 8/16-byte access per element) and split in two; results are
joined back the same way. Math is done in the compute type ``CT`` (``CT_F32`` or ``CT_F64`` of
``elementwise.py``), formulas in ``complex_math.py``.

Operands of the binary kernel are a complex array (``KIND`` 0), a real array (1: its imaginary part is 0, as
after promotion, without the promoted copy) or a Python scalar (2: its two parts as kernel arguments, float64
ones as int64 bit patterns like the real kernels'). Outputs are written contiguously: complex pairs, a real
array (``abs``, ``angle``) or bool (predicates, comparisons).
"""

import triton
import triton.language as tl

from . import complex_math as cm
from . import elementwise_math as m
from .elementwise import _scalar_param, _to_compute
from .strided import strided_offset

INV_LN2 = tl.constexpr(1.4426950408889634)
C_COMPLEX, C_REAL, C_SCALAR = 0, 1, 2  # operand kinds
OUT_COMPLEX, OUT_REAL, OUT_BOOL = 0, 1, 2  # output kinds

CUNARY_CODES = {
    "negative": 0, "conj": 1, "square": 2, "reciprocal": 3, "exp": 4, "expm1": 5, "log": 6, "log1p": 7,
    "sqrt": 8, "sin": 9, "cos": 10, "tan": 11, "sinh": 12, "cosh": 13, "tanh": 14, "sign": 15,
    "log2": 16, "log10": 17, "exp2": 18, "rsqrt": 19, "sigmoid": 20, "asin": 21, "acos": 22, "atan": 23,
    "asinh": 24, "acosh": 25, "atanh": 26,
    "abs": 27, "angle": 28,  # real output
    "isnan": 29, "isinf": 30, "isfinite": 31, "logical_not": 32,  # bool output
}
FIRST_REAL, FIRST_BOOL = 27, 29
CUNARY_OUT = {c: OUT_COMPLEX if c < FIRST_REAL else (OUT_REAL if c < FIRST_BOOL else OUT_BOOL)
              for c in CUNARY_CODES.values()}
CBINARY_CODES = {"add": 0, "subtract": 1, "multiply": 2, "divide": 3, "pow": 4, "equal": 5, "not_equal": 6}


@triton.jit
def _pair_offsets(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, CONTIGUOUS: tl.constexpr):
    """Offsets [BLOCK, 2] of the real and imaginary words of the elements ``idx`` (strides in real words)."""
    if CONTIGUOUS:
        off = idx * 2
    else:
        off = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
    return off[:, None] + tl.arange(0, 2)[None, :]


@triton.jit
def _load_complex(ptr, re_s, im_s, idx, mask, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
                  KIND: tl.constexpr, CONTIGUOUS: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    if KIND == 2:
        re = _scalar_param(re_s, CT, BLOCK)
        im = _scalar_param(im_s, CT, BLOCK)
    elif KIND == 1:
        if CONTIGUOUS:
            off = idx
        else:
            off = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
        re = _to_compute(tl.load(ptr + off, mask=mask, other=0), CT)
        im = tl.zeros_like(re)  # +0, as promotion makes it (-x * 0 would be -0: the other branch of log)
    else:
        off2 = _pair_offsets(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, CONTIGUOUS)
        v = _to_compute(tl.load(ptr + off2, mask=mask[:, None], other=0), CT)
        re, im = tl.split(v)
    return re, im


@triton.jit
def _store_complex(y_ptr, idx, mask, re, im):
    off2 = idx[:, None] * 2 + tl.arange(0, 2)[None, :]
    tl.store(y_ptr + off2, tl.join(re, im).to(y_ptr.dtype.element_ty), mask=mask[:, None])


@triton.jit
def _store_real(y_ptr, idx, mask, r, BOOL_OUT: tl.constexpr):
    if BOOL_OUT:
        r = r != 0
    tl.store(y_ptr + idx, r.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _cunary(xr, xi, OP: tl.constexpr, F64: tl.constexpr):
    if OP == 0:
        re, im = xr * -1.0, xi * -1.0
    elif OP == 1:
        re, im = xr, xi * -1.0
    elif OP == 2:
        re, im = cm.cmul(xr, xi, xr, xi)
    elif OP == 3:  # 1 / z by division (the array API; PyTorch): 1 / 0 is complex infinity, inf + i NaN
        re, im = cm.cdiv(tl.zeros_like(xr) + 1.0, tl.zeros_like(xr), xr, xi)
    elif OP == 4:
        re, im = cm.cexp(xr, xi, F64)
    elif OP == 5:
        re, im = cm.cexpm1(xr, xi, F64)
    elif OP == 6:
        re, im = cm.clog(xr, xi, F64)
    elif OP == 7:
        re, im = cm.clog1p(xr, xi, F64)
    elif OP == 8:
        re, im = cm.csqrt(xr, xi, F64)
    elif OP == 9:  # sin z = -i sinh(i z)
        a, b = cm.csinh(xi * -1.0, xr, F64)
        re, im = b, a * -1.0
        im = tl.where((tl.abs(xi) == cm.INF) & ~cm.is_finite(xr), cm.INF, im)  # NumPy's sign (C99: unspecified)
    elif OP == 10:  # cos z = cosh(i z)
        re, im = cm.ccosh(xi * -1.0, xr, F64)
    elif OP == 11:  # tan z = -i tanh(i z)
        a, b = cm.ctanh(xi * -1.0, xr, F64)
        re, im = b, a * -1.0
    elif OP == 12:
        re, im = cm.csinh(xr, xi, F64)
    elif OP == 13:
        re, im = cm.ccosh(xr, xi, F64)
    elif OP == 14:
        re, im = cm.ctanh(xr, xi, F64)
    elif OP == 15:
        re, im = cm.csign(xr, xi, F64)
    else:
        re, im = _cunary_more(xr, xi, OP, F64)
    return re, im


@triton.jit
def _cunary_more(xr, xi, OP: tl.constexpr, F64: tl.constexpr):
    if OP == 16:
        a, b = cm.clog(xr, xi, F64)
        re, im = a * INV_LN2, b * INV_LN2
    elif OP == 17:
        a, b = cm.clog(xr, xi, F64)
        re, im = a * m.INV_LN10, b * m.INV_LN10
    elif OP == 18:  # 2^z = exp(z ln 2)
        re, im = cm.cexp(xr * m.LN2, xi * m.LN2, F64)
    elif OP == 19:
        a, b = cm.csqrt(xr, xi, F64)
        re, im = cm.cdiv(tl.zeros_like(xr) + 1.0, tl.zeros_like(xr), a, b)  # 1 / sqrt(z): 0 gives inf + i NaN
    elif OP == 20:  # 1 / (1 + exp(-z))
        a, b = cm.cexp(xr * -1.0, xi * -1.0, F64)
        re, im = cm.cdiv(tl.zeros_like(xr) + 1.0, tl.zeros_like(xr), a + 1.0, b)
    elif OP == 21:
        re, im = cm.casin(xr, xi, F64)
    elif OP == 22:
        re, im = cm.cacos(xr, xi, F64)
    elif OP == 23:  # atan z = -i atanh(i z)
        a, b = cm.catanh(xi * -1.0, xr, F64)
        re, im = b, a * -1.0
    elif OP == 24:
        re, im = cm.casinh(xr, xi, F64)
    elif OP == 25:
        re, im = cm.cacosh(xr, xi, F64)
    else:
        re, im = cm.catanh(xr, xi, F64)
    return re, im


@triton.jit
def complex_unary_kernel(x_ptr, y_ptr, n, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                         OP: tl.constexpr, CT: tl.constexpr, CONTIGUOUS: tl.constexpr, BLOCK: tl.constexpr):
    """y = op(x) for complex x; y complex pairs (OP < 27), real (abs, angle) or bool (predicates)."""
    F64: tl.constexpr = CT == 1
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    xr, xi = _load_complex(x_ptr, 0, 0, idx, mask, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                           0, CONTIGUOUS, CT, BLOCK)
    if OP < 27:
        re, im = _cunary(xr, xi, OP, F64)
        _store_complex(y_ptr, idx, mask, re, im)
    elif OP == 27:
        _store_real(y_ptr, idx, mask, cm.cabs(xr, xi, F64), False)
    elif OP == 28:
        _store_real(y_ptr, idx, mask, cm.cangle(xr, xi, F64), False)
    elif OP == 29:
        _store_real(y_ptr, idx, mask, (xr != xr) | (xi != xi), True)
    elif OP == 30:
        _store_real(y_ptr, idx, mask, (tl.abs(xr) == cm.INF) | (tl.abs(xi) == cm.INF), True)
    elif OP == 31:
        _store_real(y_ptr, idx, mask, cm.is_finite(xr) & cm.is_finite(xi), True)
    else:
        _store_real(y_ptr, idx, mask, (xr == 0.0) & (xi == 0.0), True)


@triton.jit(do_not_specialize=["a_re", "a_im", "b_re", "b_im"])
def complex_binary_kernel(a_ptr, b_ptr, y_ptr, a_re, a_im, b_re, b_im, n, s1, s2, s3, s4, s5,
                          at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5,
                          OP: tl.constexpr, CT: tl.constexpr, A_KIND: tl.constexpr, B_KIND: tl.constexpr,
                          CONTIGUOUS: tl.constexpr, BLOCK: tl.constexpr):
    """y = a op b, at least one operand complex; y complex pairs (add..pow) or bool (equal, not_equal)."""
    F64: tl.constexpr = CT == 1
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    ar, ai = _load_complex(a_ptr, a_re, a_im, idx, mask, s1, s2, s3, s4, s5, at0, at1, at2, at3, at4, at5,
                           A_KIND, CONTIGUOUS, CT, BLOCK)
    br, bi = _load_complex(b_ptr, b_re, b_im, idx, mask, s1, s2, s3, s4, s5, bt0, bt1, bt2, bt3, bt4, bt5,
                           B_KIND, CONTIGUOUS, CT, BLOCK)
    if OP >= 5:
        eq = (ar == br) & (ai == bi)
        if OP == 6:
            eq = eq == 0
        _store_real(y_ptr, idx, mask, eq, True)
    else:
        if OP == 0:
            re, im = ar + br, ai + bi
        elif OP == 1:
            re, im = ar - br, ai - bi
        elif OP == 2:
            re, im = cm.cmul(ar, ai, br, bi)
        elif OP == 3:
            re, im = cm.cdiv(ar, ai, br, bi)
        else:
            re, im = cm.cpow(ar, ai, br, bi, F64)
        _store_complex(y_ptr, idx, mask, re, im)


@triton.jit
def _cmul_combine(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@triton.jit
def complex_prod_kernel(x_ptr, y_ptr, M, R, stride_xm, stride_xr, CT: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr):
    """y[m] = prod_r x[m, r] for complex x seen as M rows of R elements (strides in real words); y contiguous
    complex. A program owns BLOCK_M rows, multiplies BLOCK_R-wide tiles into per-lane products and combines
    the lanes at the end (the order of a tree, not NumPy's left to right: rounding differs within a few ulp)."""
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    cols = tl.arange(0, BLOCK_R)
    if CT == 1:
        pr = tl.full([BLOCK_M, BLOCK_R], 1.0, tl.float64)
    else:
        pr = tl.full([BLOCK_M, BLOCK_R], 1.0, tl.float32)
    pi = pr * 0.0
    for r0 in range(0, R, BLOCK_R):
        r = r0 + cols
        ok = row_ok[:, None] & (r < R)[None, :]
        off = rows[:, None] * stride_xm + r[None, :].to(tl.int64) * stride_xr
        xr = _to_compute(tl.load(x_ptr + off, mask=ok, other=1.0), CT)
        xi = _to_compute(tl.load(x_ptr + off + 1, mask=ok, other=0.0), CT)
        nr, ni = cm.cmul(pr, pi, xr, xi)
        pr = tl.where(ok, nr, pr)
        pi = tl.where(ok, ni, pi)
    yr, yi = tl.reduce((pr, pi), 1, _cmul_combine)
    _store_complex(y_ptr, rows, row_ok, yr, yi)


@triton.jit
def complex_cumprod_kernel(x_ptr, y_ptr, M, L, stride_xm, stride_xl, CT: tl.constexpr, INITIAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr):
    """y[m, :] = the running products of x[m, :] (M rows of L complex elements, strides in real words; y
    contiguous, rows of L + INITIAL elements, 1 first with INITIAL). A program scans BLOCK_M rows chunk by chunk:
    a scan within the chunk times the running product of the chunks before it (masked lanes hold 1)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_ok = rows < M
    if CT == 1:
        cr = tl.full([BLOCK_M, 1], 1.0, tl.float64)
    else:
        cr = tl.full([BLOCK_M, 1], 1.0, tl.float32)
    ci = cr * 0.0
    y_row = rows * ((L + INITIAL) * 2)
    if INITIAL:
        tl.store(y_ptr + y_row, cr.to(y_ptr.dtype.element_ty), mask=row_ok)
        tl.store(y_ptr + y_row + 1, ci.to(y_ptr.dtype.element_ty), mask=row_ok)
        y_row = y_row + 2
    cols = tl.arange(0, BLOCK_R).to(tl.int64)
    last = cols[None, :] == BLOCK_R - 1
    for r0 in range(0, L, BLOCK_R):
        r = (r0 + cols)[None, :]
        ok = row_ok & (r < L)
        off = rows * stride_xm + r * stride_xl
        vr = _to_compute(tl.load(x_ptr + off, mask=ok, other=1.0), CT)
        vi = _to_compute(tl.load(x_ptr + off + 1, mask=ok, other=0.0), CT)
        sr, si = tl.associative_scan((vr, vi), 1, _cmul_combine)
        rr, ri = cm.cmul(sr, si, cr, ci)
        tl.store(y_ptr + y_row + r * 2, rr.to(y_ptr.dtype.element_ty), mask=ok)
        tl.store(y_ptr + y_row + r * 2 + 1, ri.to(y_ptr.dtype.element_ty), mask=ok)
        cr = tl.sum(tl.where(last, rr, 0.0), 1, keep_dims=True)  # the last column: the running product
        ci = tl.sum(tl.where(last, ri, 0.0), 1, keep_dims=True)
