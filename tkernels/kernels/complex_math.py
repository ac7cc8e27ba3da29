"""Complex device math on (real, imaginary) pairs of float32 or float64 tensors, for ``complex.py``'s kernels.

Every function takes and returns the two parts separately. Formulas and special cases follow NumPy's
``npymath`` (itself FreeBSD's msun, C99 Annex G): multiply is the plain formula (no Annex G infinity recovery,
as NumPy), division and reciprocal are Smith's algorithm, ``abs`` is an overflow-free hypot, ``log`` switches to
``log1p`` near the unit circle, ``sqrt`` scales large arguments, and ``sin``/``cos``/``tan`` are the hyperbolic
functions of ``i z`` (``sin z = -i sinh(i z)``, ``cos z = cosh(i z)``, ``tan z = -i tanh(i z)``).
Negation is written ``x * -1.0``: Triton 3.6 computes ``-x`` as ``0 - x``, which loses the sign of zero.
"""

import triton
import triton.language as tl

from . import elementwise_math as m

INF = tl.constexpr(float("inf"))


@triton.jit
def _neg(x):
    return x * -1.0


@triton.jit
def is_finite(x):
    return tl.abs(x) < INF


@triton.jit
def cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@triton.jit
def cdiv(ar, ai, br, bi):
    """Smith's algorithm (NumPy's): divide by the larger part of the divisor; 0 / 0 gives inf or NaN parts."""
    abr = tl.abs(br)
    abi = tl.abs(bi)
    real_big = abr >= abi  # False when either is NaN: the second branch, as NumPy
    zero = (abr == 0.0) & (abi == 0.0)
    # first branch: rat = bi / br
    br_safe = tl.where(real_big & (abr != 0.0), br, 1.0)
    rat1 = bi / br_safe
    scl1 = 1.0 / (br + bi * rat1)
    r1 = (ar + ai * rat1) * scl1
    i1 = (ai - ar * rat1) * scl1
    # second branch: rat = br / bi
    bi_safe = tl.where(real_big, 1.0, bi)
    rat2 = br / bi_safe
    scl2 = 1.0 / (bi + br * rat2)
    r2 = (ar * rat2 + ai) * scl2
    i2 = (ai * rat2 - ar) * scl2
    re = tl.where(real_big, r1, r2)
    im = tl.where(real_big, i1, i2)
    re = tl.where(zero, ar / abr, re)
    im = tl.where(zero, ai / abr, im)
    return re, im


@triton.jit
def creciprocal(xr, xi):
    """1 / z as NumPy's reciprocal loop: Smith's algorithm with a numerator of 1."""
    imag_small = tl.abs(xi) <= tl.abs(xr)
    r1 = xi / tl.where(imag_small, xr, 1.0)
    d1 = xr + xi * r1
    r2 = xr / tl.where(imag_small, 1.0, xi)
    d2 = xr * r2 + xi
    re = tl.where(imag_small, 1.0 / d1, r2 / d2)
    im = tl.where(imag_small, _neg(r1) / d1, -1.0 / d2)
    return re, im


@triton.jit
def cabs(xr, xi, F64: tl.constexpr):
    return m.hypot(xr, xi, F64)


@triton.jit
def cangle(xr, xi, F64: tl.constexpr):
    return m.atan2(xi, xr, F64)


@triton.jit
def _exp_scaled(x, c):
    """exp(x) * c without overflowing before the product does (exp(x) alone overflows past ~88.7 / ~709.8)."""
    h = tl.exp(0.5 * x)
    return (h * c) * h


@triton.jit
def cexp(xr, xi, F64: tl.constexpr):
    c = tl.cos(xi)
    s = tl.sin(xi)
    re = _exp_scaled(xr, c)
    im = _exp_scaled(xr, s)
    e = tl.exp(xr)
    y_bad = ~is_finite(xi)
    # exp(+inf + i y) for y inf/NaN: inf + i NaN; exp(-inf + i y): 0 + 0i
    re = tl.where(y_bad & (xr == INF), INF, re)
    re = tl.where(y_bad & (xr == -INF), 0.0, re)
    im = tl.where(y_bad & (xr == -INF), 0.0, im)
    # exp(x + 0i) = exp(x) + 0i with the zero's sign (NaN x too)
    re = tl.where(xi == 0.0, e, re)
    im = tl.where(xi == 0.0, xi, im)
    # a finite result's part times exp(inf) where cos/sin is exactly zero cannot occur in floating point
    return re, im


@triton.jit
def clog(xr, xi, F64: tl.constexpr):
    """log|z| + i arg z; near |z| = 1, log|z| = log1p((mx - 1)(mx + 1) + mn^2) / 2 without cancelling in mx."""
    ax = tl.abs(xr)
    ay = tl.abs(xi)
    mx = tl.maximum(ax, ay)
    mn = tl.minimum(ax, ay)
    near = (mx > 0.5) & (mx < 2.0) & (mn < 1.0)
    t = tl.where(near, mx, 1.0)
    u = tl.where(near, mn, 0.0)
    re_near = 0.5 * m.log1p((t - 1.0) * (t + 1.0) + u * u, F64)
    re = tl.where(near, re_near, tl.log(m.hypot(xr, xi, F64)))
    return re, m.atan2(xi, xr, F64)


@triton.jit
def csqrt(xr, xi, F64: tl.constexpr):
    """NumPy's csqrt: t = sqrt((|x| + |z|) / 2) on the side of the larger result part; large arguments scaled by
    1/4 first (|x| + |z| would overflow), the result by 2."""
    if F64:
        big_at = 4.49423283715578976932e+307  # DBL_MAX / 4
    else:
        big_at = 8.5070586e+37  # FLT_MAX / 4
    big = (tl.abs(xr) >= big_at) | (tl.abs(xi) >= big_at)
    a = tl.where(big, xr * 0.25, xr)
    b = tl.where(big, xi * 0.25, xi)
    scale = tl.where(big, 2.0, 1.0)
    t = m.sqrt(0.5 * (tl.abs(a) + m.hypot(a, b, F64)), F64)
    pos_r = t * scale
    pos_i = b / (2.0 * t) * scale
    neg_r = tl.abs(b) / (2.0 * t) * scale
    neg_i = m.copysign(t, b, F64) * scale
    re = tl.where(a >= 0.0, pos_r, neg_r)
    im = tl.where(a >= 0.0, pos_i, neg_i)
    # special cases in NumPy's order (later ones win): x NaN, x = +-inf, y = +-inf, z = 0
    nan = m.nan_like(xr, F64)
    re = tl.where(xr != xr, nan, re)
    im = tl.where(xr != xr, nan, im)
    y_nan = xi != xi
    re = tl.where(xr == INF, INF, re)
    im = tl.where(xr == INF, tl.where(y_nan, nan, m.copysign(tl.zeros_like(xi), xi, F64)), im)
    re = tl.where(xr == -INF, tl.where(y_nan, nan, 0.0), re)
    im = tl.where(xr == -INF, m.copysign(tl.zeros_like(xi) + INF, xi, F64), im)
    y_inf = tl.abs(xi) == INF
    re = tl.where(y_inf, INF, re)
    im = tl.where(y_inf, xi, im)
    zero = (xr == 0.0) & (xi == 0.0)
    re = tl.where(zero, 0.0, re)
    im = tl.where(zero, xi, im)
    return re, im


@triton.jit
def _hyperbolic_products(x, y, F64: tl.constexpr):
    """(sinh x cos y, cosh x sin y, cosh x cos y, sinh x sin y); past |x| = 20 as e^|x| / 2 times cos y or sin y,
    scaled so that it overflows only when the product does (sin(1e-30 + 100i) in float32: 1.3e13 + i inf)."""
    c = tl.cos(y)
    s = tl.sin(y)
    ax = tl.abs(x)
    big = ax > 20.0
    neg = big & (x < 0.0)
    sh = m.sinh(x, F64)
    ch = m.cosh(x)
    sc = tl.where(big, _exp_scaled(ax, 0.5 * c), sh * c)
    sc = tl.where(neg, sc * -1.0, sc)
    ss = tl.where(big, _exp_scaled(ax, 0.5 * s), sh * s)
    ss = tl.where(neg, ss * -1.0, ss)
    cs = tl.where(big, _exp_scaled(ax, 0.5 * s), ch * s)
    cc = tl.where(big, _exp_scaled(ax, 0.5 * c), ch * c)
    return sc, cs, cc, ss


@triton.jit
def csinh(xr, xi, F64: tl.constexpr):
    """sinh x cos y + i cosh x sin y, with C99's special cases."""
    sh = m.sinh(xr, F64)
    re, im, _, _ = _hyperbolic_products(xr, xi, F64)
    y_bad = ~is_finite(xi)
    nan = m.nan_like(xr, F64)
    # sinh(+-0 + i inf/NaN) = +-0 + i NaN; sinh(+-inf + i inf/NaN) = inf + i NaN (NumPy's sign)
    re = tl.where(y_bad & (xr == 0.0), xr, re)
    re = tl.where(y_bad & (tl.abs(xr) == INF), INF, re)
    im = tl.where(y_bad, nan, im)
    # sinh(x + 0i) = sinh x + 0i with the zero's sign
    re = tl.where(xi == 0.0, sh, re)
    im = tl.where(xi == 0.0, xi, im)
    return re, im


@triton.jit
def ccosh(xr, xi, F64: tl.constexpr):
    """cosh x cos y + i sinh x sin y, with C99's special cases."""
    ch = m.cosh(xr)
    _, _, re, im = _hyperbolic_products(xr, xi, F64)
    y_bad = ~is_finite(xi)
    nan = m.nan_like(xr, F64)
    # cosh(+-0 + i inf/NaN) = NaN + 0i; cosh(+-inf + i inf/NaN) = inf + i NaN
    re = tl.where(y_bad & (xr == 0.0), nan, re)
    im = tl.where(y_bad & (xr == 0.0), 0.0, im)
    re = tl.where(y_bad & (tl.abs(xr) == INF), INF, re)
    im = tl.where(y_bad & (tl.abs(xr) == INF), nan, im)
    # cosh(x + 0i) = cosh x + i 0 with the sign of x times that of the zero (x infinite or NaN too)
    re = tl.where(xi == 0.0, ch, re)
    im = tl.where(xi == 0.0, m.copysign(tl.zeros_like(xr), xr, F64) * xi, im)
    return re, im


@triton.jit
def ctanh(xr, xi, F64: tl.constexpr):
    """Kahan's formula (NumPy's ctanh): with t = tan y, b = 1 + t^2, s = sinh x, r = sqrt(1 + s^2),
    tanh z = (b r s + i t) / (1 + b s^2); for large |x|, +-1 + i 4 sin y cos y e^(-2|x|)."""
    if F64:
        big_at = 22.0
    else:
        big_at = 9.0
    ax = tl.abs(xr)
    big = ax >= big_at
    xs = tl.where(big, 0.0, xr)
    t = tl.sin(xi) / tl.cos(xi)
    b = 1.0 + t * t
    s = m.sinh(xs, F64)
    rho = m.sqrt(1.0 + s * s, F64)
    den = 1.0 + b * s * s
    re = (b * rho * s) / den
    im = t / den
    one = m.copysign(tl.zeros_like(xr) + 1.0, xr, F64)
    e = tl.exp(-2.0 * tl.where(big, ax, 0.0))
    big_im = 4.0 * tl.sin(xi) * tl.cos(xi) * e
    re = tl.where(big, one, re)
    im = tl.where(big, big_im, im)
    nan = m.nan_like(xr, F64)
    y_bad = ~is_finite(xi)
    # tanh(x + i inf/NaN), x finite: NaN + i NaN (x = 0: 0 + i NaN); tanh(+-inf + i y) = +-1 + i 0 (sign of y)
    re = tl.where(y_bad, tl.where(xr == 0.0, xr, nan), re)
    im = tl.where(y_bad, nan, im)
    x_inf = ax == INF
    re = tl.where(x_inf, one, re)
    sgn = xi  # the array API: +-1 + i copysign(0, y) (C99: the sign of sin 2y)
    im = tl.where(x_inf, m.copysign(tl.zeros_like(xi), sgn, F64), im)
    # NaN x: NaN + i (y if y == 0 else NaN)
    re = tl.where(xr != xr, nan, re)
    im = tl.where(xr != xr, tl.where(xi == 0.0, xi, nan), im)
    return re, im


@triton.jit
def cexpm1(xr, xi, F64: tl.constexpr):
    """exp(z) - 1 (NumPy's nc_expm1): expm1(x) cos y - 2 sin^2(y/2) + i exp(x) sin y; no cancellation near 0.
    The array API's special cases (as the cpu backend): zeros give +0 + i y; x = -inf gives -1 (an imaginary
    zero of y's sign, +0 for y inf/NaN); x = +inf gives inf cis(y) (inf + i y at y = 0, inf + NaN i for y inf or
    NaN); x NaN gives NaN + i y at y = 0, else NaN + NaN i; finite x with y inf/NaN gives NaN + NaN i."""
    a = tl.sin(0.5 * xi)
    nan = m.nan_like(xr, F64)
    re = m.expm1(xr, F64) * tl.cos(xi) - 2.0 * a * a
    im = _exp_scaled(xr, tl.sin(xi))
    zero_im = xi == 0.0
    im = tl.where(zero_im, xi, im)
    re = tl.where(zero_im & (xr == 0.0), 0.0, re)
    bad_im = ~is_finite(xi)
    neg = xr == -INF
    pos = xr == INF
    re = tl.where(neg, -1.0, re)
    im = tl.where(neg, tl.where(bad_im, 0.0, m.copysign(tl.zeros_like(xi), xi, F64)), im)
    re = tl.where(pos & bad_im, INF, re)
    im = tl.where(pos & bad_im, nan, im)
    nan_re = xr != xr
    re = tl.where(nan_re, nan, re)
    im = tl.where(nan_re, tl.where(zero_im, xi, nan), im)
    fin = is_finite(xr) & bad_im
    re = tl.where(fin, nan, re)
    im = tl.where(fin, nan, im)
    return re, im


@triton.jit
def clog1p(xr, xi, F64: tl.constexpr):
    """log(1 + z): the imaginary part atan2(y, 1 + x); near |1 + z| = 1 the real part is
    log1p(x (2 + x) + y^2) / 2, which keeps the digits of small z."""
    u = xr + 1.0
    re, im = clog(u, xi, F64)
    near = (tl.abs(xr) < 0.5) & (tl.abs(xi) < 0.5)
    xs = tl.where(near, xr, 0.0)
    ys = tl.where(near, xi, 0.0)
    re = tl.where(near, 0.5 * m.log1p(xs * (2.0 + xs) + ys * ys, F64), re)
    return re, im


@triton.jit
def csign(xr, xi, F64: tl.constexpr):
    """z / |z| divided per part, +0 + 0i at zeros (the array API's rule, PyTorch's sgn): an infinite part gives
    NaN parts by the division rules (NumPy 2's sign gives a finite direction there)."""
    a = m.hypot(xr, xi, F64)
    zero = a == 0.0
    a_safe = tl.where(zero, 1.0, a)
    return tl.where(zero, 0.0, xr / a_safe), tl.where(zero, 0.0, xi / a_safe)


@triton.jit
def cpow(ar, ai, br, bi, F64: tl.constexpr):
    """a ** b as NumPy's nc_pow: b = 0 gives 1; a = 0 gives 0 for Re b > 0 (NaN otherwise); integer
    real b in (-100, 100) by repeated squaring (then 1 / the power for negative b); else exp(b log a)."""
    lr, li = clog(ar, ai, F64)
    wr, wi = cmul(br, bi, lr, li)
    re, im = cexp(wr, wi, F64)
    n_int = (bi == 0.0) & (br == tl.floor(br)) & (tl.abs(br) < 100.0)
    e = tl.where(n_int, tl.abs(br), 0.0).to(tl.int32)
    pr = tl.zeros_like(ar) + 1.0
    pi = tl.zeros_like(ar)
    qr = ar
    qi = ai
    for _ in tl.static_range(7):
        odd = (e & 1) != 0
        tr, ti = cmul(pr, pi, qr, qi)
        pr = tl.where(odd, tr, pr)
        pi = tl.where(odd, ti, pi)
        qr, qi = cmul(qr, qi, qr, qi)
        e = e >> 1
    one = tl.zeros_like(ar) + 1.0
    nr, ni = cdiv(one, tl.zeros_like(ar), pr, pi)
    pr = tl.where(br < 0.0, nr, pr)
    pi = tl.where(br < 0.0, ni, pi)
    re = tl.where(n_int, pr, re)
    im = tl.where(n_int, pi, im)
    a_zero = (ar == 0.0) & (ai == 0.0)
    nan = m.nan_like(ar, F64)
    re = tl.where(a_zero, tl.where(br > 0.0, 0.0, nan), re)
    im = tl.where(a_zero, tl.where(br > 0.0, 0.0, nan), im)
    b_zero = (br == 0.0) & (bi == 0.0)
    re = tl.where(b_zero, 1.0, re)
    im = tl.where(b_zero, 0.0, im)
    return re, im


@triton.jit
def _sqrt_1pm(xr, xi, F64: tl.constexpr):
    """sqrt(1 - z) and sqrt(1 + z), with 1 - z = (1 - x) - i y keeping the sign of a zero y (the branch cuts)."""
    ar, ai = csqrt(1.0 - xr, _neg(xi), F64)
    br, bi = csqrt(1.0 + xr, xi, F64)
    return ar, ai, br, bi


@triton.jit
def _big_at(F64: tl.constexpr):
    # past this, 1 +- z^2 is z^2 to working precision (FreeBSD's catrig: 1 / epsilon)
    if F64:
        r = 1e150
    else:
        r = 1e18
    return r


@triton.jit
def _log_large(x, y, F64: tl.constexpr):
    """(log|z| + log 2, atan2(|y|, |x|)) for large or infinite z (log|z| without overflowing through hypot)."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    mx = tl.maximum(ax, ay)
    mn = tl.minimum(ax, ay)
    q = tl.where(mx == INF, 0.0, mn / mx)
    lg = tl.log(mx) + 0.5 * m.log1p(q * q, F64) + m.LN2
    lg = tl.where((ax != ax) | (ay != ay), ax + ay, lg)  # NaN with inf: inf (hypot's rule); else NaN
    lg = tl.where((ax == INF) | (ay == INF), INF, lg)
    return lg, m.atan2(ay, ax, F64)


@triton.jit
def casinh(xr, xi, F64: tl.constexpr):
    """asinh z = -i asin(i z), by Kahan's asin; large |z|: +-(log 2|z| + i arg(+-z)) with the signs of x and y
    (C99's infinities come out of it); asinh(NaN + 0i) = NaN + 0i."""
    ar, ai, br, bi = _sqrt_1pm(xi * -1.0, xr, F64)  # asin(w) for w = i z = -y + i x
    a = m.atan2(xi * -1.0, ar * br - ai * bi, F64)
    b = m.asinh(ar * bi - ai * br, F64)
    re, im = b, a * -1.0
    big = (tl.abs(xr) > _big_at(F64)) | (tl.abs(xi) > _big_at(F64))
    lg, ang = _log_large(xr, xi, F64)
    re = tl.where(big, m.copysign(lg, xr, F64), re)
    im = tl.where(big, m.copysign(ang, xi, F64), im)
    nan_x = xr != xr
    re = tl.where(nan_x & (xi == 0.0), xr, re)
    im = tl.where(nan_x & (xi == 0.0), xi, im)
    return re, im


@triton.jit
def casin(xr, xi, F64: tl.constexpr):
    """asin z = -i asinh(i z)."""
    a, b = casinh(_neg(xi), xr, F64)
    im = tl.where((tl.abs(xr) == INF) & (xi != xi), INF, _neg(a))  # NumPy's sign (C99: unspecified)
    return b, im


@triton.jit
def cacos(xr, xi, F64: tl.constexpr):
    """Kahan's acos: 2 atan2(Re sqrt(1 - z), Re sqrt(1 + z)) + i asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z)));
    large |z|: |arg z| -+ i (log 2|z|), minus for y >= +0 (FreeBSD's catrig)."""
    ar, ai, br, bi = _sqrt_1pm(xr, xi, F64)
    re = 2.0 * m.atan2(ar, br, F64)
    im = m.asinh(br * ai - bi * ar, F64)
    big = (tl.abs(xr) > _big_at(F64)) | (tl.abs(xi) > _big_at(F64))
    lg, _ = _log_large(xr, xi, F64)
    re = tl.where(big, tl.abs(m.atan2(xi, xr, F64)), re)
    im = tl.where(big, tl.where(m.signbit(xi, F64), lg, _neg(lg)), im)
    re = tl.where((xr == 0.0) & (xi != xi), m.HALF_PI, re)  # acos(+-0 + i NaN) = pi/2 + i NaN
    return re, im


@triton.jit
def cacosh(xr, xi, F64: tl.constexpr):
    """acosh z = +-i acos z: |Im acos z| + i copysign(Re acos z, y) (C99 / catrig, with its NaN cases)."""
    a, b = cacos(xr, xi, F64)
    re = tl.abs(b)
    im = m.copysign(a, xi, F64)
    re = tl.where(a != a, tl.where(b != b, b, tl.abs(b)), re)
    im = tl.where(a != a, a, im)
    re = tl.where((b != b) & (a == a), b, re)
    im = tl.where((b != b) & (a == a), b, im)
    im = tl.where((xr == 0.0) & (xi != xi), m.HALF_PI, im)  # acosh(+-0 + i NaN) = NaN + i pi/2 (NumPy)
    return re, im


@triton.jit
def catanh(xr, xi, F64: tl.constexpr):
    """Re = log1p(4x / ((1 - x)^2 + y^2)) / 4, Im = atan2(2y, (1 - x)(1 + x) - y^2) / 2 (Kahan's forms of
    (log(1 + z) - log(1 - z)) / 2: no cancellation near 0, nor for large |z|); past 1/eps or infinite:
    Re(1 / z) + i copysign(pi / 2, y) (C99)."""
    ax = tl.abs(xr)  # Re is odd in x: computed for |x| (no cancellation in 1 + q for x near -1)
    one_m = 1.0 - ax
    q = 4.0 * ax / (one_m * one_m + xi * xi)
    # q > 1 (z near 1, where the squares may underflow): (log|1 + z| - log|1 - z|) / 2 by hypot, which does not
    # square; the logs differ by more than log(2) / 2 there: little cancellation
    far = 0.5 * (tl.log(m.hypot(1.0 + ax, xi, F64)) - tl.log(m.hypot(one_m, xi, F64)))
    re = m.copysign(tl.where(q > 1.0, far, 0.25 * m.log1p(q, F64)), xr, F64)
    im = 0.5 * m.atan2(2.0 * xi, (1.0 - xr) * (1.0 + xr) - xi * xi, F64)
    big = (tl.abs(xr) > _big_at(F64)) | (tl.abs(xi) > _big_at(F64))
    fin = is_finite(xr) & is_finite(xi)
    rr, _ = creciprocal(tl.where(fin, xr, 1.0), tl.where(fin, xi, 0.0))
    rr = tl.where(fin, rr, m.copysign(tl.zeros_like(xr), xr, F64))
    rr = tl.where((xi != xi) & is_finite(xr), xi, rr)  # atanh(x + i NaN) = NaN + i NaN for finite x
    re = tl.where(big, rr, re)
    im = tl.where(big, tl.where(xi != xi, xi, m.copysign(tl.zeros_like(xi) + m.HALF_PI, xi, F64)), im)
    # NaN real part: NaN + i NaN, but atanh(NaN +- i inf) = +-0 +- i pi/2; atanh(+-0 + i NaN) = +-0 + i NaN
    nan = m.nan_like(xr, F64)
    nan_x = xr != xr
    re = tl.where(nan_x, tl.where(tl.abs(xi) == INF, 0.0, nan), re)
    im = tl.where(nan_x & (tl.abs(xi) != INF), nan, im)
    re = tl.where((xi != xi) & (xr == 0.0), xr, re)
    return re, im
