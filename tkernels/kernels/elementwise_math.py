"""Device math the elementwise kernels need beyond Triton's portable primitives.

Triton's ``libdevice`` and inline asm do not run in the interpreter, so everything here is built from
``tl.exp``, ``tl.log``, ``tl.sqrt_rn``, ``tl.floor``... and arithmetic. Each function works on float32 or
float64 tensors (``F64`` selects the constants and series lengths) and is accurate to a few ulp in the
dtype it computes in: series are used where the naive formula cancels (expm1, log1p, atan near 0), and
argument reductions keep them short. Signs, zeros, infinities and NaNs follow C99/NumPy.
"""

import triton
import triton.language as tl

# constants are constexpr (compiled kernels read no other globals); keep the tensor on the left of an operator:
# in the interpreter `constexpr - tensor` gives a constexpr wrapping a tensor
PI = tl.constexpr(3.141592653589793)
HALF_PI = tl.constexpr(1.5707963267948966)
LN2 = tl.constexpr(0.6931471805599453)
INV_LN10 = tl.constexpr(0.4342944819032518)


@triton.jit
def int_view(x, F64: tl.constexpr):
    """The bits of a float as a signed integer of the same width."""
    if F64:
        r = x.to(tl.int64, bitcast=True)
    else:
        r = x.to(tl.int32, bitcast=True)
    return r


@triton.jit
def float_view(i, F64: tl.constexpr):
    if F64:
        r = i.to(tl.float64, bitcast=True)
    else:
        r = i.to(tl.float32, bitcast=True)
    return r


@triton.jit
def signbit(x, F64: tl.constexpr):
    """True where the sign bit is set (-0.0 and negative NaNs included)."""
    return int_view(x, F64) < 0


@triton.jit
def copysign(mag, sgn, F64: tl.constexpr):
    # `a * -1.0`, not `-a`: Triton 3.6 negates as `0 - a`, which loses the sign of zero
    a = tl.abs(mag)
    return tl.where(signbit(sgn, F64), a * -1.0, a)


@triton.jit
def nan_like(x, F64: tl.constexpr):
    # a quiet NaN built from its bits: a NaN literal would be folded differently by the compiler and the interpreter
    if F64:
        r = (tl.zeros(x.shape, tl.int64) + 0x7FF8000000000000).to(tl.float64, bitcast=True)
    else:
        r = (tl.zeros(x.shape, tl.int32) + 0x7FC00000).to(tl.float32, bitcast=True)
    return r


@triton.jit
def sqrt(x, F64: tl.constexpr):
    """Correctly rounded square root (``tl.sqrt`` is approximate for fp32; ``tl.sqrt_rn`` takes fp32 only)."""
    if F64:
        r = tl.sqrt(x)
    else:
        r = tl.sqrt_rn(x)
    return r


@triton.jit
def rint(x, F64: tl.constexpr):
    """Round half to even: adding and removing 2**52 (2**23) leaves the nearest even integer under
    round-to-nearest; larger magnitudes are integers already."""
    if F64:
        big = 4503599627370496.0
    else:
        big = 8388608.0
    a = tl.abs(x)
    t = (a + big) - big
    return tl.where(a < big, copysign(t, x, F64), x)


@triton.jit
def trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@triton.jit
def _expm1_series(x, N: tl.constexpr):
    # x (1 + x/2 (1 + x/3 (1 + ... (1 + x/N))))
    p = 1.0 + x * (1.0 / N)
    for k in tl.static_range(N - 1, 1, -1):
        p = 1.0 + x * (1.0 / k) * p
    return x * p


@triton.jit
def expm1(x, F64: tl.constexpr):
    """exp(x) - 1 without the cancellation near 0: a Taylor series for |x| < 0.5 (truncation < 2**-53 / 2**-24)."""
    if F64:
        s = _expm1_series(x, 15)
    else:
        s = _expm1_series(x, 8)
    return tl.where(tl.abs(x) < 0.5, s, tl.exp(x) - 1.0)


@triton.jit
def _atanh_series(s, K: tl.constexpr):
    # 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), K terms
    s2 = s * s
    q = tl.zeros_like(s2) + 1.0 / (2 * K - 1)
    for k in tl.static_range(K - 2, -1, -1):
        q = 1.0 / (2 * k + 1) + s2 * q
    return 2.0 * s * q


@triton.jit
def log1p(x, F64: tl.constexpr):
    """log(1 + x): log1p(x) = 2 atanh(x / (2 + x)), a short series while |x / (2 + x)| <= 0.2
    (x in [-1/3, 1/2]); log(1 + x) elsewhere, where it does not cancel."""
    s = x / (2.0 + x)
    if F64:
        r = _atanh_series(s, 11)
    else:
        r = _atanh_series(s, 6)
    return tl.where(tl.abs(s) <= 0.2, r, tl.log(1.0 + x))


@triton.jit
def _atan_series(t, K: tl.constexpr):
    # atan(t) = t (1 - t^2/3 + t^4/5 - ...), K terms
    t2 = t * t
    if K % 2 == 0:
        q = tl.zeros_like(t2) - 1.0 / (2 * K - 1)
    else:
        q = tl.zeros_like(t2) + 1.0 / (2 * K - 1)
    for k in tl.static_range(K - 2, -1, -1):
        if k % 2 == 0:
            q = 1.0 / (2 * k + 1) + t2 * q
        else:
            q = -1.0 / (2 * k + 1) + t2 * q
    return t * q


@triton.jit
def atan01(t, F64: tl.constexpr):
    """atan(t) for t in [0, 1]: two argument halvings (atan t = 2 atan(t / (1 + sqrt(1 + t^2)))) bring t
    under tan(pi/16) ~ 0.199, where the alternating series is short."""
    t = t / (1.0 + sqrt(1.0 + t * t, F64))
    t = t / (1.0 + sqrt(1.0 + t * t, F64))
    if F64:
        r = _atan_series(t, 12)
    else:
        r = _atan_series(t, 6)
    return 4.0 * r


@triton.jit
def atan(x, F64: tl.constexpr):
    a = tl.abs(x)
    inv = a > 1.0
    r = atan01(tl.where(inv, 1.0 / a, a), F64)
    r = tl.where(inv, -r + HALF_PI, r)
    return copysign(r, x, F64)


@triton.jit
def atan2(y, x, F64: tl.constexpr):
    """The angle of (x, y) in [-pi, pi] with C99's signed zeros and infinities."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    y_big = ay > ax
    mx = tl.where(y_big, ay, ax)
    mn = tl.where(y_big, ax, ay)
    t = mn / mx
    t = tl.where(mx == 0.0, 0.0, t)  # atan2(±0, ±0)
    t = tl.where((ax == float("inf")) & (ay == float("inf")), 1.0, t)  # atan2(±inf, ±inf): odd multiples of pi/4
    r = atan01(t, F64)
    r = tl.where(y_big, -r + HALF_PI, r)
    r = tl.where(signbit(x, F64), -r + PI, r)
    r = copysign(r, y, F64)
    return tl.where((x != x) | (y != y), x + y, r)


@triton.jit
def asin(x, F64: tl.constexpr):
    return atan(x / sqrt((1.0 - x) * (1.0 + x), F64), F64)


@triton.jit
def acos(x, F64: tl.constexpr):
    # 2 atan(sqrt((1 - x) / (1 + x))): accurate near both ends, pi at x = -1
    return 2.0 * atan(sqrt((1.0 - x) / (1.0 + x), F64), F64)


@triton.jit
def tanh(x, F64: tl.constexpr):
    a = tl.abs(x)
    u = expm1(2.0 * tl.where(a > 20.0, 20.0, a), F64)  # NaN-preserving clamp (tl.minimum drops NaNs)
    r = tl.where(a > 20.0, 1.0, u / (u + 2.0))
    return copysign(r, x, F64)


@triton.jit
def _exp_half_squared(a):
    # exp(a) / 2 for large a without overflowing before the result does
    h = tl.exp(0.5 * a)
    return (0.5 * h) * h


@triton.jit
def sinh(x, F64: tl.constexpr):
    a = tl.abs(x)
    u = expm1(tl.where(a > 20.0, 20.0, a), F64)
    r = tl.where(a > 20.0, _exp_half_squared(a), 0.5 * (u + u / (u + 1.0)))
    return copysign(r, x, F64)


@triton.jit
def cosh(x):
    a = tl.abs(x)
    e = tl.exp(tl.where(a > 20.0, 20.0, a))
    return tl.where(a > 20.0, _exp_half_squared(a), 0.5 * (e + 1.0 / e))


@triton.jit
def asinh(x, F64: tl.constexpr):
    a = tl.abs(x)
    big = a > 268435456.0  # 2**28: sqrt(1 + a^2) == a, and a^2 may overflow
    small = tl.where(big, 1.0, a)
    r = log1p(small + small * small / (1.0 + sqrt(1.0 + small * small, F64)), F64)
    r = tl.where(big, tl.log(a) + LN2, r)
    return copysign(r, x, F64)


@triton.jit
def acosh(x, F64: tl.constexpr):
    big = x > 268435456.0
    t = tl.where(big, 1.0, x) - 1.0
    r = log1p(t + sqrt(t, F64) * sqrt(t + 2.0, F64), F64)  # NaN below 1 (no overflow to inf)
    return tl.where(big, tl.log(x) + LN2, r)


@triton.jit
def atanh(x, F64: tl.constexpr):
    # (log1p(x) - log1p(-x)) / 2: no cancellation near 0 (opposite signs) nor near ±1
    return 0.5 * (log1p(x, F64) - log1p(-x, F64))


@triton.jit
def log_add_exp(a, b, F64: tl.constexpr):
    """log(exp(a) + exp(b)) as NumPy computes it (equal arguments, infinities included, give a + log 2)."""
    d = a - b
    r = tl.where(d > 0, a + log1p(tl.exp(-d), F64), b + log1p(tl.exp(d), F64))
    return tl.where(a == b, a + LN2, r)


@triton.jit
def hypot(x, y, F64: tl.constexpr):
    ax = tl.abs(x)
    ay = tl.abs(y)
    x_big = ax > ay
    mx = tl.where(x_big, ax, ay)
    mn = tl.where(x_big, ay, ax)
    t = mn / mx
    r = mx * sqrt(1.0 + t * t, F64)
    r = tl.where(mx == 0.0, 0.0, r)
    r = tl.where((ax != ax) | (ay != ay), ax + ay, r)
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), r)  # C99: hypot(inf, nan) = inf


@triton.jit
def pow_float(a, b, F64: tl.constexpr):
    """a ** b with C99's special cases (negative bases to integer powers, zeros, infinities, ±1); integer
    exponents below 128 in magnitude by repeated squaring (x**2, x**3, x**-1 exact as NumPy's), others as
    exp2(b log2 |a|), for float32 in float64: the product's rounding error would be amplified by |b log2 a|."""
    if F64:
        r = tl.exp2(b * tl.log2(tl.abs(a)))
    else:
        r = tl.exp2(b.to(tl.float64) * tl.log2(tl.abs(a).to(tl.float64))).to(tl.float32)
    b_int = b == tl.floor(b)
    hb = 0.5 * b
    r = tl.where(signbit(a, F64) & b_int & (hb != tl.floor(hb)), r * -1.0, r)  # odd powers keep the sign
    r = tl.where((a < 0) & (a != float("-inf")) & (b_int == 0), nan_like(r, F64), r)
    small = b_int & (tl.abs(b) < 128.0)
    e = tl.where(small, tl.abs(b), 0.0).to(tl.int32)
    p = tl.zeros_like(a) + 1.0
    base = tl.where(b < 0, 1.0 / a, a)  # (1/a)**k: no overflow on the way to a result that does not
    for _ in tl.static_range(7):
        p = tl.where((e & 1) != 0, p * base, p)
        base = base * base
        e = e >> 1
    r = tl.where(small, p, r)
    one = (b == 0.0) | (a == 1.0) | ((tl.abs(a) == 1.0) & (tl.abs(b) == float("inf")))
    return tl.where(one, 1.0, r)


@triton.jit
def next_after(a, b, F64: tl.constexpr):
    """The float next to a in the direction of b (C99 nextafter), by stepping the bit pattern."""
    ia = int_view(a, F64)
    step = tl.where((a < b) == (a > 0.0), 1, -1)
    r = float_view(ia + step, F64)
    if F64:
        tiny = tl.where(signbit(b, F64), -9223372036854775807, 1).to(tl.int64)
    else:
        tiny = tl.where(signbit(b, F64), -2147483647, 1).to(tl.int32)
    r = tl.where(a == 0.0, float_view(tiny, F64), r)
    r = tl.where(a == b, b, r)
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit
def floor_divide_float(a, b, F64: tl.constexpr):
    """NumPy's float floor division (npy_divmod): exact quotient of a - fmod(a, b), rounded to an integer."""
    mod = a % b  # fmod on floats
    div = (a - mod) / b
    div = tl.where((mod != 0.0) & ((b < 0.0) != (mod < 0.0)), div - 1.0, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    q = a / b
    fl = tl.where(div == 0.0, copysign(tl.zeros_like(a), q, F64), fl)
    return tl.where(b == 0.0, q, fl)


@triton.jit
def remainder_float(a, b, F64: tl.constexpr):
    """NumPy's float remainder: the result has the sign of the divisor (fmod where b == 0: NaN)."""
    mod = a % b
    fixed = tl.where((mod != 0.0) & ((b < 0.0) != (mod < 0.0)), mod + b, mod)
    fixed = tl.where(mod == 0.0, copysign(tl.zeros_like(a), b, F64), fixed)
    return tl.where(b == 0.0, mod, fixed)
