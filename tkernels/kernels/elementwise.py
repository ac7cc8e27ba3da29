"""Elementwise ops: a unary, a binary and a ternary kernel family, the op selected by a constexpr code.

Operands are loaded in their own dtype and converted to the compute type ``CT``: float32 (also for
float16/bfloat16: computed in fp32 and stored back, which is also the cure for the interpreter's bf16
arithmetic), float64 (computed in float64), int32 (bool and integers up to 32 bits: what the GPU's ALUs do
anyway; wrapping arithmetic truncated to the output dtype gives the narrow dtype's result) or int64.
Operands are strided/broadcast through collapsed dimensions (stride 0 where broadcast); a Python scalar
operand is passed as a kernel argument, never materialized (a float64 one as its int64 bit pattern, as
Python floats reach kernels as fp32). The output is written contiguously. Results store through
``.to(output dtype)``; a bool output stores ``!= 0``.

Integer division by zero and integers to negative powers cannot raise in a kernel: the first such element is
recorded in the device's error buffer (``errors.py``; the host raises ``ZeroDivisionError`` /
``NegativeIntegerPowerError`` at its next synchronising call, as the NumPy backend raises at the op), and the
element gets a defined value: ``x // 0`` and ``x % 0`` give 0, ``x ** -k`` gives 1 for x == 1, ±1 for x == -1
and 0 otherwise (PyTorch's rule).
"""

import triton
import triton.language as tl

from . import elementwise_math as m
from . import special as sp
from .errors import FLOOR_DIVIDE_BY_ZERO, FMOD_BY_ZERO, NEGATIVE_POWER, TRUNC_DIVIDE_BY_ZERO, record_error
from .strided import strided_offset

CT_F32, CT_F64, CT_I32, CT_I64 = 0, 1, 2, 3
CT_U32, CT_U64 = 4, 5  # uint32, uint64 (narrower unsigned types compute in int32, which holds them)

UNARY_CODES = {
    "abs": 0, "negative": 1, "positive": 2, "square": 3, "sign": 4, "floor": 5, "ceil": 6, "trunc": 7,
    "round": 8, "round_scaled_up": 9, "round_scaled_down": 10,
    "exp": 11, "expm1": 12, "exp2": 13, "log": 14, "log1p": 15, "log2": 16, "log10": 17, "sqrt": 18, "rsqrt": 19,
    "reciprocal": 20, "sin": 21, "cos": 22, "tan": 23, "asin": 24, "acos": 25, "atan": 26, "sinh": 27, "cosh": 28,
    "tanh": 29, "asinh": 30, "acosh": 31, "atanh": 32,
    "sigmoid": 33, "erf": 34, "gelu": 35, "gelu_tanh": 36, "silu": 37, "softplus": 38, "mish": 39, "elu": 40,
    "leaky_relu": 41, "relu": 42, "logit": 43, "logit_eps": 44,
    "isnan": 45, "isinf": 46, "isfinite": 47, "signbit": 48, "logical_not": 49, "bitwise_invert": 50,
    "nan_to_num": 51, "lgamma": 52, "digamma": 53, "polygamma": 54,
}
BINARY_CODES = {
    "add": 0, "subtract": 1, "multiply": 2, "floor_divide": 3, "remainder": 4, "pow": 5, "maximum": 6,
    "minimum": 7, "divide": 8, "atan2": 9, "hypot": 10, "logaddexp": 11, "copysign": 12, "nextafter": 13,
    "equal": 14, "not_equal": 15, "less": 16, "less_equal": 17, "greater": 18, "greater_equal": 19,
    "logical_and": 20, "logical_or": 21, "logical_xor": 22,
    "bitwise_and": 23, "bitwise_or": 24, "bitwise_xor": 25, "bitwise_left_shift": 26, "bitwise_right_shift": 27,
    "fmod": 28, "trunc_divide": 29,  # arithmetic like 0..13 (numbered after the others: ranges below)
}
LOGICAL_OPS = (20, 21, 22)  # operands enter as (x != 0)
TERNARY_CODES = {"where": 0, "clip": 1, "clip_min": 2, "clip_max": 3, "lerp": 4}

SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


# ------------------------------------------------------------------------------------ loads and stores
@triton.jit
def _to_compute(x, CT: tl.constexpr):
    if CT == 0:
        r = x.to(tl.float32)
    elif CT == 1:
        r = x.to(tl.float64)
    elif CT == 2:
        r = x.to(tl.int32)
    elif CT == 3:
        r = x.to(tl.int64)
    elif CT == 4:
        r = x.to(tl.uint32)
    else:
        r = x.to(tl.uint64)
    return r


@triton.jit
def _scalar_param(p, CT: tl.constexpr, BLOCK: tl.constexpr):
    """A scalar kernel argument as a block of the compute type (float64 ones arrive as int64 bit patterns).
    `zeros + p` works for a scalar tensor (compiled) and the interpreter's Python number alike; float32 multiplies
    ones instead (exact for every float; 0.0 + -0.0 is 0.0, and Triton 3.6 makes a -0.0 constant +0.0). Unsigned
    scalars arrive as the int64 bit pattern of the value (uint32 ones in range, uint64 ones maybe negative)."""
    if CT == 1:
        r = (tl.zeros([BLOCK], dtype=tl.int64) + p).to(tl.float64, bitcast=True)
    elif CT >= 4:
        r = _to_compute((tl.zeros([BLOCK], dtype=tl.int64) + p).to(tl.uint64, bitcast=True), CT)
    elif CT == 0:
        r = tl.full([BLOCK], 1.0, dtype=tl.float32) * p
    else:
        r = _to_compute(tl.zeros([BLOCK], dtype=tl.int32) + p, CT)
    return r


@triton.jit
def _operand(ptr, scalar, idx, mask, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
             SCALAR: tl.constexpr, CONTIGUOUS: tl.constexpr, CT: tl.constexpr, TO_BOOL: tl.constexpr,
             BLOCK: tl.constexpr):
    if SCALAR:
        v = _scalar_param(scalar, CT, BLOCK)
    else:
        if CONTIGUOUS:
            off = idx
        else:
            off = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
        # other=0 keeps masked lanes harmless (the integer power loops until every lane's exponent is spent)
        v = tl.load(ptr + off, mask=mask, other=0)
        if TO_BOOL:
            v = (v != 0).to(tl.int32)
        else:
            v = _to_compute(v, CT)
    return v


@triton.jit
def _store(y_ptr, idx, r, mask, BOOL_OUT: tl.constexpr):
    if BOOL_OUT:
        r = r != 0
    tl.store(y_ptr + idx, r.to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------- unary ops
@triton.jit
def _unary_basic(x, p0, OP: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    F64: tl.constexpr = CT == 1
    if OP == 0:
        r = tl.abs(x)
    elif OP == 1:
        if CT < 2:
            r = x * -1.0  # IEEE negation of zero (Triton 3.6 computes -x as 0 - x)
        else:
            r = -x
    elif OP == 2:
        r = x
    elif OP == 3:
        r = x * x
    elif OP == 4:
        if CT >= 4:  # unsigned: no negative constant may meet an unsigned block
            r = (x != 0).to(x.dtype)
        else:
            r = tl.where(x > 0, 1, tl.where(x < 0, -1, tl.where(x != x, x, 0))).to(x.dtype)  # NaN passes, -0 -> 0
    elif OP == 5:
        r = tl.floor(x)
    elif OP == 6:
        r = tl.ceil(x)
    elif OP == 7:
        r = m.trunc(x)
    elif OP == 8:
        r = m.rint(x, F64)
    elif OP == 9:  # round(x, decimals > 0), as NumPy: rint(x * 10**d) / 10**d
        f = _scalar_param(p0, CT, BLOCK)
        r = m.rint(x * f, F64) / f
    else:  # round(x, decimals < 0): rint(x / 10**-d) * 10**-d
        f = _scalar_param(p0, CT, BLOCK)
        r = m.rint(x / f, F64) * f
    return r


@triton.jit
def _unary_transcendental(x, OP: tl.constexpr, CT: tl.constexpr):
    F64: tl.constexpr = CT == 1
    if OP == 11:
        r = tl.exp(x)
    elif OP == 12:
        r = m.expm1(x, F64)
    elif OP == 13:
        r = tl.exp2(x)
    elif OP == 14:
        r = tl.log(x)
    elif OP == 15:
        r = m.log1p(x, F64)
    elif OP == 16:
        r = tl.log2(x)
    elif OP == 17:
        r = tl.log(x) * m.INV_LN10
    elif OP == 18:
        r = m.sqrt(x, F64)
    elif OP == 19:
        if F64:
            r = 1.0 / tl.sqrt(x)
        else:
            r = tl.rsqrt(x)
    elif OP == 20:
        r = 1.0 / x
    elif OP == 21:
        r = tl.sin(x)
    elif OP == 22:
        r = tl.cos(x)
    elif OP == 23:
        r = tl.sin(x) / tl.cos(x)
    elif OP == 24:
        r = m.asin(x, F64)
    elif OP == 25:
        r = m.acos(x, F64)
    elif OP == 26:
        r = m.atan(x, F64)
    elif OP == 27:
        r = m.sinh(x, F64)
    elif OP == 28:
        r = m.cosh(x)
    elif OP == 29:
        r = m.tanh(x, F64)
    elif OP == 30:
        r = m.asinh(x, F64)
    elif OP == 31:
        r = m.acosh(x, F64)
    else:
        r = m.atanh(x, F64)
    return r


@triton.jit
def _softplus(x, beta, threshold, F64: tl.constexpr):
    # log(1 + exp(bx)) / beta computed as NumPy's logaddexp(0, bx): max(bx, 0) + log1p(exp(-|bx|)); linear above
    bx = x * beta
    y = (tl.where(bx > 0, bx, 0.0) + m.log1p(tl.exp(-tl.abs(bx)), F64)) / beta
    return tl.where(bx > threshold, x, y)


@triton.jit
def _unary_activation(x, p0, p1, OP: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    F64: tl.constexpr = CT == 1
    if OP == 33:
        r = 1.0 / (1.0 + tl.exp(-x))  # exp overflows to inf for very negative x: the exact 0
    elif OP == 34:
        r = tl.erf(x)
    elif OP == 35:
        r = 0.5 * x * (1.0 + tl.erf(x * SQRT1_2))
    elif OP == 36:
        r = 0.5 * x * (1.0 + m.tanh((x + 0.044715 * x * x * x) * SQRT_2_OVER_PI, F64))
    elif OP == 37:
        r = x / (1.0 + tl.exp(-x))
    elif OP == 38:
        r = _softplus(x, _scalar_param(p0, CT, BLOCK), _scalar_param(p1, CT, BLOCK), F64)
    elif OP == 39:
        r = x * m.tanh(_softplus(x, 1.0, 20.0, F64), F64)
    elif OP == 40:
        r = tl.where(x > 0, x, _scalar_param(p0, CT, BLOCK) * m.expm1(tl.where(x > 0, 0.0, x), F64))
    elif OP == 41:
        if CT >= 4:  # unsigned: nothing is negative (and the float slope cannot meet an unsigned block)
            r = x
        else:
            r = tl.where(x > 0, x, x * _scalar_param(p0, CT, BLOCK))
    elif OP == 42:
        r = tl.where(x < 0, 0, x)  # NaN passes, like NumPy's maximum
    elif OP == 43:
        r = tl.log(x / (1.0 - x))
    else:  # logit with eps: clamp to [eps, 1 - eps] (NaN passes)
        lo = _scalar_param(p0, CT, BLOCK)
        hi = _scalar_param(p1, CT, BLOCK)
        c = tl.where(x < lo, lo, tl.where(x > hi, hi, x))
        r = tl.log(c / (1.0 - c))
    return r


@triton.jit
def _unary_predicate(x, p0, p1, p2, OP: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    IS_FLOAT: tl.constexpr = CT < 2
    if OP == 45:
        r = x != x
    elif OP == 46:
        if IS_FLOAT:
            r = tl.abs(x) == float("inf")
        else:
            r = x != x
    elif OP == 47:
        if IS_FLOAT:
            r = tl.abs(x) < float("inf")
        else:
            r = x == x
    elif OP == 48:
        if IS_FLOAT:
            r = m.signbit(x, CT == 1)
        else:
            r = x < 0
    elif OP == 49:
        r = x == 0
    elif OP == 50:
        if CT == 4:  # CT_U32: x ^ all ones, made signed (Triton 3.6's interpreter cannot build ~ of an unsigned)
            r = x ^ tl.full(x.shape, -1, tl.int32).to(tl.uint32, bitcast=True)
        elif CT == 5:  # CT_U64
            r = x ^ tl.full(x.shape, -1, tl.int64).to(tl.uint64, bitcast=True)
        else:
            r = ~x
    else:  # nan_to_num(nan=p0, posinf=p1, neginf=p2)
        r = tl.where(x == float("inf"), _scalar_param(p1, CT, BLOCK), x)
        r = tl.where(x == float("-inf"), _scalar_param(p2, CT, BLOCK), r)
        r = tl.where(x != x, _scalar_param(p0, CT, BLOCK), r)
    return r


@triton.jit(do_not_specialize=["p0", "p1", "p2"])
def unary_kernel(x_ptr, y_ptr, p0, p1, p2, n, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                 OP: tl.constexpr, CT: tl.constexpr, CONTIGUOUS: tl.constexpr, BOOL_OUT: tl.constexpr,
                 BLOCK: tl.constexpr):
    # p0..p2: the op's float parameters (softplus beta/threshold, elu alpha, logit bounds, nan_to_num values...)
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    x = _operand(x_ptr, 0, idx, mask, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                 False, CONTIGUOUS, CT, False, BLOCK)
    if OP < 11:
        r = _unary_basic(x, p0, OP, CT, BLOCK)
    elif OP < 33:
        r = _unary_transcendental(x, OP, CT)
    elif OP < 45:
        r = _unary_activation(x, p0, p1, OP, CT, BLOCK)
    elif OP < 52:
        r = _unary_predicate(x, p0, p1, p2, OP, CT, BLOCK)
    elif OP == 52:
        r = sp.lgamma(x, CT == 1)
    elif OP == 53:
        r = sp.digamma(x, CT == 1)
    else:  # polygamma(n = p0, x), n >= 1
        r = sp.polygamma(x, _scalar_param(p0, CT, BLOCK), CT == 1)
    _store(y_ptr, idx, r, mask, BOOL_OUT)


# --------------------------------------------------------------------------------------- binary ops
@triton.jit
def _pow_int(a, b, UNSIGNED: tl.constexpr):
    """Exact integer power by repeated squaring (wrapping like NumPy); the loop runs as many times as the
    block's largest exponent has bits."""
    e = tl.where(b > 0, b, 0)
    r = tl.zeros_like(a) + 1
    base = a
    while tl.max(e, axis=0) > 0:
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    if UNSIGNED:  # no negative exponent (nor a base of -1)
        res = r
    else:
        neg = tl.where(a == 1, 1, tl.where(a == -1, 1 - 2 * (b & 1), 0))
        res = tl.where(b < 0, neg, r)
    return res


@triton.jit
def _floor_divide_int(a, b, REMAINDER: tl.constexpr):
    # C truncating division, corrected to Python's floor (the remainder takes the sign of the divisor)
    bs = tl.where(b == 0, 1, b)
    q = a // bs
    rem = a - q * bs
    fix = (rem != 0) & ((rem < 0) != (bs < 0))
    if REMAINDER:
        r = tl.where(fix, rem + bs, rem)
    else:
        r = tl.where(fix, q - 1, q)
    return tl.where(b == 0, 0, r)


@triton.jit
def _binary_arith(a, b, OP: tl.constexpr, CT: tl.constexpr):
    IS_FLOAT: tl.constexpr = CT < 2
    F64: tl.constexpr = CT == 1
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = a - b
    elif OP == 2:
        r = a * b
    elif OP == 3:
        if IS_FLOAT:
            r = m.floor_divide_float(a, b, F64)
        else:
            r = _floor_divide_int(a, b, False)
    elif OP == 4:
        if IS_FLOAT:
            r = m.remainder_float(a, b, F64)
        else:
            r = _floor_divide_int(a, b, True)
    elif OP == 5:
        if IS_FLOAT:
            r = m.pow_float(a, b, F64)
        else:
            r = _pow_int(a, b, CT >= 4)
    elif OP == 6:
        if IS_FLOAT:
            r = tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
        else:
            r = tl.maximum(a, b)
    elif OP == 7:
        if IS_FLOAT:
            r = tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
        else:
            r = tl.minimum(a, b)
    elif OP == 8:
        r = a / b
    elif OP == 9:
        r = m.atan2(a, b, F64)
    elif OP == 10:
        r = m.hypot(a, b, F64)
    elif OP == 11:
        r = m.log_add_exp(a, b, F64)
    elif OP == 12:
        r = m.copysign(a, b, F64)
    elif OP == 13:
        r = m.next_after(a, b, F64)
    elif OP == 28:
        if IS_FLOAT:
            r = a % b  # fmod on floats (exact)
        else:
            bs = tl.where(b == 0, 1, b)
            r = tl.where(b == 0, 0, a - (a // bs) * bs)  # // truncates on integers
    else:
        if IS_FLOAT:
            r = m.trunc(a / b)
        else:
            r = tl.where(b == 0, 0, a // tl.where(b == 0, 1, b))
    return r


@triton.jit
def _binary_compare_bits(a, b, OP: tl.constexpr, CT: tl.constexpr):
    if OP == 14:
        r = a == b
    elif OP == 15:
        r = a != b
    elif OP == 16:
        r = a < b
    elif OP == 17:
        r = a <= b
    elif OP == 18:
        r = a > b
    elif OP == 19:
        r = a >= b
    elif (OP == 20) | (OP == 23):  # logical operands are 0/1
        r = a & b
    elif (OP == 21) | (OP == 24):
        r = a | b
    elif (OP == 22) | (OP == 25):
        r = a ^ b
    else:
        # NumPy: shifts by >= the bit width (or negative) give 0, or the sign for right shifts of negatives;
        # narrow dtypes compute in int32, where shifting past their width already gives that
        BITS: tl.constexpr = 64 if (CT == 3) | (CT == 5) else 32
        ok = (b >= 0) & (b < BITS)
        s = tl.where(ok, b, 0)
        if OP == 26:
            r = tl.where(ok, a << s, 0)
        elif CT >= 4:  # unsigned: a logical shift
            r = tl.where(ok, a >> s, 0)
        else:
            r = tl.where(ok, a >> s, tl.where(a < 0, -1, 0))
    return r


@triton.jit(do_not_specialize=["a_scalar", "b_scalar"])
def binary_kernel(a_ptr, b_ptr, y_ptr, err_ptr, a_scalar, b_scalar, n, s1, s2, s3, s4, s5,
                  at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5,
                  OP: tl.constexpr, CT: tl.constexpr, A_SCALAR: tl.constexpr, B_SCALAR: tl.constexpr,
                  CONTIGUOUS: tl.constexpr, BOOL_OUT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    LOGICAL: tl.constexpr = (OP >= 20) & (OP <= 22)
    a = _operand(a_ptr, a_scalar, idx, mask, s1, s2, s3, s4, s5, at0, at1, at2, at3, at4, at5,
                 A_SCALAR, CONTIGUOUS, CT, LOGICAL, BLOCK)
    b = _operand(b_ptr, b_scalar, idx, mask, s1, s2, s3, s4, s5, bt0, bt1, bt2, bt3, bt4, bt5,
                 B_SCALAR, CONTIGUOUS, CT, LOGICAL, BLOCK)
    if (OP < 14) | (OP >= 28):
        if CT >= 2:  # integers: a zero divisor, a negative exponent is an error (recorded, see the docstring)
            if (OP == 3) | (OP == 4):
                record_error(err_ptr, mask & (b == 0), a, idx, FLOOR_DIVIDE_BY_ZERO + (OP - 3), n)
            elif OP == 28:
                record_error(err_ptr, mask & (b == 0), a, idx, FMOD_BY_ZERO, n)
            elif OP == 29:
                record_error(err_ptr, mask & (b == 0), a, idx, TRUNC_DIVIDE_BY_ZERO, n)
            elif OP == 5:
                record_error(err_ptr, mask & (b < 0), b, idx, NEGATIVE_POWER, n)
        r = _binary_arith(a, b, OP, CT)
    else:
        r = _binary_compare_bits(a, b, OP, CT)
    _store(y_ptr, idx, r, mask, BOOL_OUT)


# -------------------------------------------------------------------------------------- ternary ops
@triton.jit(do_not_specialize=["a_scalar", "b_scalar", "c_scalar"])
def ternary_kernel(a_ptr, b_ptr, c_ptr, y_ptr, a_scalar, b_scalar, c_scalar, n, s1, s2, s3, s4, s5,
                   at0, at1, at2, at3, at4, at5, bt0, bt1, bt2, bt3, bt4, bt5, ct0, ct1, ct2, ct3, ct4, ct5,
                   OP: tl.constexpr, CT: tl.constexpr, A_SCALAR: tl.constexpr, B_SCALAR: tl.constexpr,
                   C_SCALAR: tl.constexpr, CONTIGUOUS: tl.constexpr, BOOL_OUT: tl.constexpr, BLOCK: tl.constexpr):
    # where(a, b, c) (a: the condition, any dtype); clip(a, b=min, c=max) (clip_min/clip_max: one bound, the
    # other slot a placeholder scalar); lerp(a=start, b=end, c=weight)
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    a = _operand(a_ptr, a_scalar, idx, mask, s1, s2, s3, s4, s5, at0, at1, at2, at3, at4, at5,
                 A_SCALAR, CONTIGUOUS, CT, OP == 0, BLOCK)
    b = _operand(b_ptr, b_scalar, idx, mask, s1, s2, s3, s4, s5, bt0, bt1, bt2, bt3, bt4, bt5,
                 B_SCALAR, CONTIGUOUS, CT, False, BLOCK)
    c = _operand(c_ptr, c_scalar, idx, mask, s1, s2, s3, s4, s5, ct0, ct1, ct2, ct3, ct4, ct5,
                 C_SCALAR, CONTIGUOUS, CT, False, BLOCK)
    if OP == 0:
        r = tl.where(a != 0, b, c)
    elif OP == 4:
        r = a + c * (b - a)
    else:  # clip: NaN in x or a bound propagates (NumPy's maximum/minimum)
        r = a
        if OP != 3:
            if CT < 2:
                r = tl.maximum(r, b, propagate_nan=tl.PropagateNan.ALL)
            else:
                r = tl.maximum(r, b)
        if OP != 2:
            if CT < 2:
                r = tl.minimum(r, c, propagate_nan=tl.PropagateNan.ALL)
            else:
                r = tl.minimum(r, c)
    _store(y_ptr, idx, r, mask, BOOL_OUT)
