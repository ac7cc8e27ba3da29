"""lgamma, digamma and polygamma for the unary kernel (op codes 52-54), computed in float32 or float64.

Each shifts its argument up (``f(x) = f(x + 1) - term``) until it is past a threshold where an asymptotic series
is accurate, and reflects arguments below 1/2 (``Γ(x) Γ(1 - x) = π / sin(πx)``). The thresholds: 8 in float32,
16 in float64, where Stirling's and the digamma series' truncation errors are below the format's precision.
polygamma(n, x), n >= 1, is ``(-1)^(n+1) n! ζ(n + 1, x)``, the Hurwitz zeta by Euler-Maclaurin after the same
shift (no reflection: negative non-integers are shifted past 0, as Cephes does).
"""

import triton
import triton.language as tl

PI = tl.constexpr(3.141592653589793)
HALF_LOG_2PI = tl.constexpr(0.9189385332046728)


@triton.jit
def _reduced(x):
    """x = k + r with k the nearest integer, r in [-1/2, 1/2], and (-1)^k: sin(pi x) = (-1)^k sin(pi r) has the
    relative precision of sin(pi r) near the integers (the poles of digamma's reflection)."""
    k = tl.floor(x + 0.5)
    r = x - k
    sign = 1.0 - 2.0 * (k - 2.0 * tl.floor(k * 0.5))
    return r, sign


@triton.jit
def _sinpi(x):
    r, sign = _reduced(x)
    return sign * tl.sin(r * PI)  # exact zeros at the integers (r = 0)


@triton.jit
def _cospi(x):
    r, sign = _reduced(x)
    return sign * tl.cos(r * PI)


@triton.jit
def lgamma(x, F64: tl.constexpr):
    T: tl.constexpr = 16 if F64 else 8
    reflect = x < 0.5
    z = tl.where(reflect, 1.0 - x, x)
    prod = z * 0.0 + 1.0
    w = z
    for _ in tl.static_range(T):
        small = w < T
        prod = tl.where(small, prod * w, prod)
        w = tl.where(small, w + 1.0, w)
    inv = 1.0 / w
    inv2 = inv * inv
    series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0
                                                                                         - inv2 / 1188.0))))
    lg = (w - 0.5) * tl.log(w) - w + HALF_LOG_2PI + series - tl.log(prod)
    lg = tl.where(w == float("inf"), w, lg)  # +inf (and -inf, reflected) give +inf
    s = tl.abs(_sinpi(x))
    # log(pi) - log|sin(pi x)|: a subnormal x gives a subnormal sine (1 / s would overflow); 0 gives +inf
    refl = 1.1447298858494002 - tl.log(s) - lg
    # below 1e-30 (float32) / 1e-300 (float64) lgamma(x) = -log|x| to the format's precision, and sin(pi x) would
    # lose digits to the subnormals
    TINY: tl.constexpr = 1e-300 if F64 else 1e-30
    refl = tl.where(tl.abs(x) < TINY, -tl.log(tl.abs(x)), refl)
    return tl.where(reflect, tl.where(x == float("-inf"), -x, refl), lg)


@triton.jit
def digamma(x, F64: tl.constexpr):
    T: tl.constexpr = 16 if F64 else 8
    reflect = x < 0.5
    z = tl.where(reflect, 1.0 - x, x)
    acc = z * 0.0
    w = z
    for _ in tl.static_range(T):
        small = w < T
        acc = tl.where(small, acc + 1.0 / w, acc)
        w = tl.where(small, w + 1.0, w)
    inv = 1.0 / w
    inv2 = inv * inv
    series = inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (1.0 / 240.0
                                                                                        - inv2 / 132.0))))
    psi = tl.log(w) - 0.5 * inv - series - acc
    psi = tl.where(w == float("inf"), w, psi)
    s = _sinpi(x)
    refl = psi - _cospi(x) * PI / s
    pole = (x == tl.floor(x)) & reflect  # 0 gives -inf, the negative integers NaN (PyTorch)
    refl = tl.where(pole, tl.where(x == 0.0, float("-inf"), float("nan")), refl)
    return tl.where(reflect, tl.where(x == float("-inf"), float("nan"), refl), psi)


@triton.jit
def polygamma(x, n, F64: tl.constexpr):
    """``polygamma(n, x)`` for an integer n >= 1 (a float here); ``digamma`` is n = 0."""
    T: tl.constexpr = 16 if F64 else 9
    s = n + 1.0
    acc = x * 0.0
    w = x
    # shift past T (a negative x takes as many steps as it is far below: the block loops while any lane must)
    while tl.max(tl.where((w < T) & (w > float("-inf")), 1, 0), axis=0) > 0:  # (NaN and -inf never shift)
        small = (w < T) & (w > float("-inf"))
        acc = tl.where(small, acc + tl.exp(-s * tl.log(tl.abs(w))) * tl.where((w < 0) & (n % 2 == 0), -1.0, 1.0),
                       acc)
        w = tl.where(small, w + 1.0, w)
    # Euler-Maclaurin tail: w^(1-s)/(s-1) + w^-s/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) w^(-s-2j+1)
    lw = tl.log(w)
    ws = tl.exp(-s * lw)
    tail = tl.exp((1.0 - s) * lw) / (s - 1.0) + 0.5 * ws
    inv = 1.0 / w
    fact = s * inv * ws  # s w^(-s-1)
    tail = tail + fact / 12.0  # B2/2! = 1/12
    fact = fact * (s + 1.0) * (s + 2.0) * inv * inv
    tail = tail - fact / 720.0  # B4/4! = -1/720
    fact = fact * (s + 3.0) * (s + 4.0) * inv * inv
    tail = tail + fact / 30240.0  # B6/6!
    fact = fact * (s + 5.0) * (s + 6.0) * inv * inv
    tail = tail - fact / 1209600.0  # B8/8!
    fact = fact * (s + 7.0) * (s + 8.0) * inv * inv
    tail = tail + fact / 47900160.0  # B10/10!
    zeta = acc + tail
    # n! as exp(lgamma(n + 1)), the sign (-1)^(n+1)
    nf = tl.exp(lgamma(n + 1.0, F64))
    sign = tl.where(n % 2 == 1, 1.0, -1.0)
    r = sign * nf * zeta
    at_pole = (x <= 0.0) & (x == tl.floor(x))  # the non-positive integers and -inf (SciPy's limits)
    r = tl.where(x == float("inf"), 0.0, r)
    return tl.where(at_pole, sign * float("inf"), r)
