"""Discrete Fourier transforms on the interleaved layout: ``fft_kernel``, a Stockham radix-4/2 FFT of a power of
two ``N``, one transform per program iteration.

Complex data are real arrays whose last axis holds (re, im): element ``(t, j)`` of transform ``t`` is read at
``x_ptr + batch_offset(t) + j * stride_xn`` (+ ``stride_xc`` for the imaginary part), so a transform may run
along any axis of any view. The host (``tkernels/backends/triton/fft.py``) builds every length from this one
kernel: a power of two up to ``MAX_SMALL`` in one launch, larger ones as ``N = N1 * N2`` in two launches (the
four-step FFT: ``N2`` transforms of length ``N1`` whose outputs are multiplied by the twiddles
``w_N^(j2 k1)``, then ``N1`` transforms of length ``N2``), other lengths by Bluestein's chirp-z algorithm
(three transforms of a power of two ``M >= 2n - 1``).

One transform: a load pass copies the input (times an optional pre-factor, zero past ``N_IN``) into a
per-program scratch ``w`` of two ping-pong buffers; ``LOG // 2`` radix-4 passes and, for an odd ``LOG``, one
radix-2 pass (Stockham autosort: each pass reads butterfly inputs ``N / R`` apart and writes the outputs in
natural order, no bit reversal); a store pass writes (times an optional post-factor and ``scale``) the first
``N_OUT`` outputs. A pass with sub-transform length ``p`` (1, 4, 16, ... then ``2p``) is, for ``i < N / R``::

    k = i % p,  u_r = x[i + r N / R] w^(r k)  (w = exp(sign 2 pi i / (R p))),  v = DFT_R(u),
    y[(i - k) R + k + r p] = v_r

Passes are separated by ``tl.debug_barrier()``: the scratch is global memory shared by the program's threads.
Twiddles are computed in float64 (then cast for float32 data): ``w^r`` from one cos/sin pair by products.
The grid is persistent (``NPROG`` programs loop over the ``B`` transforms), so the scratch (``NPROG * 4 N``
reals) stays small enough to live in L2 on a GPU.

Pre-factors (``PRE``), of the *logical* input index ``j * LSTRIDE + (t % bs5) * LOFF`` (the index in the whole
length-``TW_N`` sequence when this launch is the first of a four-step pair, else ``j``):
``PRE_CHIRP`` Bluestein's ``exp(CHIRP_SIGN i pi j^2 / CHIRP_N)``; ``PRE_MUL`` a contiguous interleaved
multiplier ``m_ptr[logical]`` (a spectrum); ``PRE_BLUESTEIN_B`` ignores ``x`` and loads Bluestein's filter
``exp(-CHIRP_SIGN i pi m^2 / CHIRP_N)``, ``m = j`` or ``TW_N - j`` near either end, else 0. ``HERM_N > 0``
(the c2r transforms, irfft and hfft, of length ``HERM_N``) doubles the inputs ``0 < j != HERM_N / 2``: the real
part of the transform of a half spectrum so doubled is that of its Hermitian extension.
Post-factors (``POST``), of the output index ``k`` and logical index ``k * OSTRIDE + (t % bs5) * OOFF``:
``POST_TWIDDLE`` ``exp(sign 2 pi i ((t % bs5) k mod TW_N) / TW_N)`` (the four-step twiddle), ``POST_CHIRP``
as ``PRE_CHIRP``. ``REAL_IN`` reads real data (imaginary part 0), ``REAL_OUT`` writes the real part only.
"""

import triton
import triton.language as tl

from .strided import strided_offset

MAX_SMALL = 4096  # the longest power of two one program transforms (longer: four-step)
GPU_BLOCKS = (128, 1024)  # lanes per pass on a GPU: short transforms (N <= 512) and the rest
PRE_NONE, PRE_CHIRP, PRE_MUL, PRE_BLUESTEIN_B = 0, 1, 2, 3
POST_NONE, POST_TWIDDLE, POST_CHIRP = 0, 1, 2
# Python float constants in a kernel are float32: pi enters the float64 angle as a float64 tensor
_PI = tl.constexpr(3.141592653589793)


@triton.jit
def _chirp(j, n, sign):
    """exp(sign i pi j^2 / n) in float64 (j^2 reduced mod 2n in int64 first: the angle stays exact)."""
    e = (j * j) % (2 * n)
    ang = (sign * e).to(tl.float64) * tl.full([], _PI, tl.float64) / n
    return tl.cos(ang), tl.sin(ang)


@triton.jit(do_not_specialize=["B", "NPROG", "N", "LOG", "N_IN", "N_OUT", "LSTRIDE", "LOFF", "OSTRIDE", "OOFF",
                               "TW_N", "CHIRP_N", "CHIRP_SIGN", "HERM_N", "stride_xn", "stride_xc", "stride_yn",
                               "stride_yc"])
def fft_kernel(x_ptr, y_ptr, w_ptr, m_ptr, B, NPROG, N, LOG, N_IN, N_OUT, LSTRIDE, LOFF, OSTRIDE, OOFF,
               TW_N, CHIRP_N, CHIRP_SIGN, HERM_N, stride_xn, stride_xc, stride_yn, stride_yc,
               bs1, bs2, bs3, bs4, bs5, xt0, xt1, xt2, xt3, xt4, xt5, yt0, yt1, yt2, yt3, yt4, yt5, scale_bits,
               INVERSE: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr, REAL_IN: tl.constexpr,
               REAL_OUT: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr):
    """Transforms ``t = pid, pid + NPROG, ... < B`` of length ``N = 2^LOG`` (module docstring), from ``x_ptr``
    into ``y_ptr`` (may be the same memory: a transform is read whole before it is written)."""
    if F64:
        cd = tl.float64
    else:
        cd = tl.float32
    if INVERSE:
        sgn = 1.0
    else:
        sgn = -1.0
    scale = scale_bits.to(tl.int64).to(tl.float64, bitcast=True)
    two_pi = tl.full([], 2 * _PI, tl.float64) * sgn
    pid = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK).to(tl.int64)
    w_base = w_ptr + pid * 4 * N
    n4 = N // 4
    n2 = N // 2
    for t in range(pid, B, NPROG):
        inner = t % bs5
        x_base = x_ptr + strided_offset(t, bs1, bs2, bs3, bs4, bs5, xt0, xt1, xt2, xt3, xt4, xt5)
        y_base = y_ptr + strided_offset(t, bs1, bs2, bs3, bs4, bs5, yt0, yt1, yt2, yt3, yt4, yt5)
        tl.debug_barrier()  # the previous transform's store pass has read the scratch
        # load pass: x (times the pre-factor, zero past N_IN) -> scratch buffer 0
        for j0 in range(0, N, BLOCK):
            j = j0 + lanes
            lj = j * LSTRIDE + inner * LOFF
            jm = (j < N) & (lj < N_IN)
            if PRE == 3:
                m = tl.where(lj < CHIRP_N, lj, TW_N - lj)
                keep = jm & ((lj < CHIRP_N) | (lj > TW_N - CHIRP_N))
                cr, ci = _chirp(m, CHIRP_N, -CHIRP_SIGN)
                re = tl.where(keep, cr, 0.0).to(cd)
                im = tl.where(keep, ci, 0.0).to(cd)
            else:
                re = tl.load(x_base + j * stride_xn, mask=jm, other=0).to(cd)
                if REAL_IN:
                    im = tl.zeros([BLOCK], cd)
                else:
                    im = tl.load(x_base + j * stride_xn + stride_xc, mask=jm, other=0).to(cd)
                # the interior of a half spectrum counts twice (the real part of the inverse of the Hermitian
                # extension, which c2r computes, equals that of the half spectrum with those doubled)
                dbl = tl.where((HERM_N > 0) & (lj > 0) & (2 * lj != HERM_N), 2.0, 1.0).to(cd)
                re = re * dbl
                im = im * dbl
                if PRE == 1:
                    cr, ci = _chirp(lj, CHIRP_N, CHIRP_SIGN)
                    cr = cr.to(cd)
                    ci = ci.to(cd)
                    re, im = re * cr - im * ci, re * ci + im * cr
                if PRE == 2:
                    mr = tl.load(m_ptr + 2 * lj, mask=jm, other=0).to(cd)
                    mi = tl.load(m_ptr + 2 * lj + 1, mask=jm, other=0).to(cd)
                    re, im = re * mr - im * mi, re * mi + im * mr
            tl.store(w_base + 2 * j, re, mask=j < N)
            tl.store(w_base + 2 * j + 1, im, mask=j < N)
        # radix-4 passes: p = 1, 4, 16, ...
        p = 1
        slot = 0
        for _s in range(0, LOG // 2):
            tl.debug_barrier()
            src = w_base + slot * 2 * N
            dst = w_base + (1 - slot) * 2 * N
            for i0 in range(0, n4, BLOCK):
                i = i0 + lanes
                im_ = i < n4
                k = i % p
                ang = two_pi * k.to(tl.float64) / (4 * p)
                c1 = tl.cos(ang)
                s1 = tl.sin(ang)
                c2 = c1 * c1 - s1 * s1
                s2 = 2.0 * c1 * s1
                c3 = c2 * c1 - s2 * s1
                s3 = c2 * s1 + s2 * c1
                c1 = c1.to(cd)
                s1 = s1.to(cd)
                c2 = c2.to(cd)
                s2 = s2.to(cd)
                c3 = c3.to(cd)
                s3 = s3.to(cd)
                a0r = tl.load(src + 2 * i, mask=im_, other=0)
                a0i = tl.load(src + 2 * i + 1, mask=im_, other=0)
                br = tl.load(src + 2 * (i + n4), mask=im_, other=0)
                bi = tl.load(src + 2 * (i + n4) + 1, mask=im_, other=0)
                a1r = br * c1 - bi * s1
                a1i = br * s1 + bi * c1
                br = tl.load(src + 2 * (i + 2 * n4), mask=im_, other=0)
                bi = tl.load(src + 2 * (i + 2 * n4) + 1, mask=im_, other=0)
                a2r = br * c2 - bi * s2
                a2i = br * s2 + bi * c2
                br = tl.load(src + 2 * (i + 3 * n4), mask=im_, other=0)
                bi = tl.load(src + 2 * (i + 3 * n4) + 1, mask=im_, other=0)
                a3r = br * c3 - bi * s3
                a3i = br * s3 + bi * c3
                # DFT of 4: (u1 - u3) * (sign i) = (-sign im, sign re)
                er = a0r + a2r
                ei = a0i + a2i
                fr = a0r - a2r
                fi = a0i - a2i
                gr = a1r + a3r
                gi = a1i + a3i
                hr = -sgn * (a1i - a3i)
                hi = sgn * (a1r - a3r)
                o = (i - k) * 4 + k
                tl.store(dst + 2 * o, er + gr, mask=im_)
                tl.store(dst + 2 * o + 1, ei + gi, mask=im_)
                tl.store(dst + 2 * (o + p), fr + hr, mask=im_)
                tl.store(dst + 2 * (o + p) + 1, fi + hi, mask=im_)
                tl.store(dst + 2 * (o + 2 * p), er - gr, mask=im_)
                tl.store(dst + 2 * (o + 2 * p) + 1, ei - gi, mask=im_)
                tl.store(dst + 2 * (o + 3 * p), fr - hr, mask=im_)
                tl.store(dst + 2 * (o + 3 * p) + 1, fi - hi, mask=im_)
            p = p * 4
            slot = 1 - slot
        # the radix-2 pass of an odd LOG: p = N / 2
        if LOG % 2 == 1:
            tl.debug_barrier()
            src = w_base + slot * 2 * N
            dst = w_base + (1 - slot) * 2 * N
            for i0 in range(0, n2, BLOCK):
                i = i0 + lanes
                im_ = i < n2
                k = i % p
                ang = two_pi * k.to(tl.float64) / (2 * p)
                c1 = tl.cos(ang).to(cd)
                s1 = tl.sin(ang).to(cd)
                a0r = tl.load(src + 2 * i, mask=im_, other=0)
                a0i = tl.load(src + 2 * i + 1, mask=im_, other=0)
                br = tl.load(src + 2 * (i + n2), mask=im_, other=0)
                bi = tl.load(src + 2 * (i + n2) + 1, mask=im_, other=0)
                a1r = br * c1 - bi * s1
                a1i = br * s1 + bi * c1
                o = (i - k) * 2 + k
                tl.store(dst + 2 * o, a0r + a1r, mask=im_)
                tl.store(dst + 2 * o + 1, a0i + a1i, mask=im_)
                tl.store(dst + 2 * (o + p), a0r - a1r, mask=im_)
                tl.store(dst + 2 * (o + p) + 1, a0i - a1i, mask=im_)
            slot = 1 - slot
        tl.debug_barrier()
        # store pass: scratch (times the post-factor and scale) -> y, the first N_OUT logical outputs
        src = w_base + slot * 2 * N
        for k0 in range(0, N, BLOCK):
            k = k0 + lanes
            lk = k * OSTRIDE + inner * OOFF
            km = (k < N) & (lk < N_OUT)
            re = tl.load(src + 2 * k, mask=km, other=0).to(tl.float64)
            im = tl.load(src + 2 * k + 1, mask=km, other=0).to(tl.float64)
            if POST == 1:
                e = (inner * k) % TW_N
                ang = two_pi * e.to(tl.float64) / TW_N
                cr = tl.cos(ang)
                ci = tl.sin(ang)
                re, im = re * cr - im * ci, re * ci + im * cr
            if POST == 2:
                cr, ci = _chirp(lk, CHIRP_N, CHIRP_SIGN)
                re, im = re * cr - im * ci, re * ci + im * cr
            re = re * scale
            tl.store(y_base + k * stride_yn, re.to(y_ptr.dtype.element_ty), mask=km)
            if not REAL_OUT:
                im = im * scale
                tl.store(y_base + k * stride_yn + stride_yc, im.to(y_ptr.dtype.element_ty), mask=km)
