"""Counter-based random numbers (Philox4x32-10) for ``tkernels.random`` on cuda.

The stream of a ``Generator`` is the pair (seed, offset): element ``i`` of a call that draws ``WORDS`` 32-bit
words per element (1, or 2 for float64 and 64-bit integer ranges) uses the words ``offset + WORDS * i ...`` of
the stream, word ``w`` being output ``w % 4`` of Philox with counter ``w // 4`` (low and high 32 bits in the
first two counter words) and key ``seed`` (low, high). The offset is a multiple of 4 (``philox_next``), so the
value of element ``i`` depends only on (seed, offset, i): not on the block size, the grid, or whether the kernel
runs interpreted or on a GPU. These streams differ from the cpu (PCG64) ones, as PyTorch's cuda and cpu
generators differ.

Philox is written out here (``tl.umulhi`` and wrapping 32-bit products, as ``triton.language.random``) rather
than calling ``tl.randint4x`` so the stream cannot change between Triton versions (3.6 and 3.9 treat 64-bit
offsets differently). 64-bit scalars (seed, offset, float64 parameters as bit patterns, int64 bounds) are passed
as two int32 halves: every scalar argument is then an ``i32`` whatever its value, one compiled specialization.
"""

import triton
import triton.language as tl

from .strided import strided_offset

# distributions: the DIST constexpr (host codes; the tl.constexpr twins are what kernels compare with)
UNIFORM = 0  # a * u + b, clamped to <= c          (u uniform in [0, 1))
NORMAL = 1  # a * z + b                            (z standard normal, Box-Muller on adjacent element pairs)
INTEGERS = 2  # a + (word mod (b + 1))              (a = low, b = high - low - 1; Lemire's product for 1 word)
BERNOULLI = 3  # u < p, p = a (scalar) or p_ptr[i] (P_ARRAY)
DIST_UNIFORM = tl.constexpr(UNIFORM)
DIST_NORMAL = tl.constexpr(NORMAL)
DIST_INTEGERS = tl.constexpr(INTEGERS)

PHILOX_KEY_A = tl.constexpr(0x9E3779B9)
PHILOX_KEY_B = tl.constexpr(0xBB67AE85)
PHILOX_ROUND_A = tl.constexpr(0xD2511F53)
PHILOX_ROUND_B = tl.constexpr(0xCD9E8D57)


@triton.jit
def join64(lo, hi):
    """The int64 whose low and high 32 bits are the int32 scalars ``lo`` and ``hi``."""
    lo = tl.to_tensor(lo).to(tl.uint32, bitcast=True).to(tl.int64)
    return (tl.to_tensor(hi).to(tl.int64) << 32) | lo


@triton.jit
def f64_of(lo, hi):
    """The float64 whose bit pattern is (``lo``, ``hi``)."""
    return join64(lo, hi).to(tl.float64, bitcast=True)


@triton.jit
def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counters (c0, c1, c2, c3) (uint32 blocks) with key (k0, k1): four uint32 blocks."""
    for _ in tl.static_range(10):
        _c0, _c2 = c0, c2
        c0 = tl.umulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0
        c2 = tl.umulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1
        c1 = tl.mul(PHILOX_ROUND_B, _c2, sanitize_overflow=False)
        c3 = tl.mul(PHILOX_ROUND_A, _c0, sanitize_overflow=False)
        k0 = tl.add(k0, PHILOX_KEY_A, sanitize_overflow=False)
        k1 = tl.add(k1, PHILOX_KEY_B, sanitize_overflow=False)
    return c0, c1, c2, c3


@triton.jit
def philox_words(seed_lo, seed_hi, ctr_lo, ctr_hi, first, NC: tl.constexpr):
    """Philox outputs (four uint32 blocks of NC) for the counters ``offset // 4 + first + arange(NC)``."""
    ctr = (join64(ctr_lo, ctr_hi) >> 2) + first + tl.arange(0, NC).to(tl.int64)
    c0 = ctr.to(tl.uint32)  # truncates: the low word
    c1 = (ctr >> 32).to(tl.uint32)
    k0 = tl.to_tensor(seed_lo).to(tl.uint32, bitcast=True)
    k1 = tl.to_tensor(seed_hi).to(tl.uint32, bitcast=True)
    return philox(c0, c1, c0 * 0, c0 * 0, k0, k1)


@triton.jit
def element_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid, BLOCK: tl.constexpr, WORDS: tl.constexpr):
    """The random words of elements ``pid * BLOCK + arange(BLOCK)``, in element order: (hi, lo) uint32 blocks;
    with WORDS == 1 only ``hi`` is drawn (``lo`` is the same block)."""
    if WORDS == 1:
        r0, r1, r2, r3 = philox_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid * (BLOCK // 4), BLOCK // 4)
        w = tl.interleave(tl.interleave(r0, r2), tl.interleave(r1, r3))  # r0 r1 r2 r3 of counter 0, then 1...
        return w, w
    else:
        r0, r1, r2, r3 = philox_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid * (BLOCK // 2), BLOCK // 2)
        return tl.interleave(r0, r2), tl.interleave(r1, r3)  # element 2k: (r0, r1) of counter k, 2k + 1: (r2, r3)


@triton.jit
def uniform_f32(w):
    """A float32 in [0, 1 - 2**-24] from the top 24 bits of uint32 ``w`` (every value exact)."""
    return (w >> 8).to(tl.int32).to(tl.float32) * 5.9604644775390625e-08


@triton.jit
def uniform_f64(hi, lo):
    """A float64 in [0, 1 - 2**-53] from the top 53 bits of the 64-bit word (hi, lo)."""
    x = (hi.to(tl.uint64) << 32) | lo.to(tl.uint64)
    return (x >> 11).to(tl.int64).to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def box_muller(u, BLOCK: tl.constexpr):
    """Standard normals from uniforms ``u`` in [0, 1): elements 2k and 2k + 1 are r cos t, r sin t of the pair."""
    u1, u2 = tl.split(tl.reshape(u, (BLOCK // 2, 2)))
    r = tl.sqrt(-2.0 * tl.log(1.0 - u1))  # 1 - u1 in (0, 1]: log is finite
    t = 6.283185307179586 * u2
    return tl.reshape(tl.join(r * tl.cos(t), r * tl.sin(t)), (BLOCK,))


@triton.jit(do_not_specialize=["seed_lo", "seed_hi", "ctr_lo", "ctr_hi", "a_lo", "a_hi", "b_lo", "b_hi", "c_lo",
                               "c_hi"])
def random_kernel(y_ptr, p_ptr, n, seed_lo, seed_hi, ctr_lo, ctr_hi, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi,
                  s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
                  DIST: tl.constexpr, WORDS: tl.constexpr, F64: tl.constexpr, P_ARRAY: tl.constexpr,
                  P_CONTIGUOUS: tl.constexpr, TO_BOOL: tl.constexpr, BLOCK: tl.constexpr):
    """Fill contiguous ``y`` (n elements) with samples of DIST. Float parameters a, b, c are float64 bit patterns
    (computed in float64 with F64, else float32); INTEGERS reads a = low, b = span - 1 as int64 halves.
    BERNOULLI with P_ARRAY reads p from ``p_ptr`` (strided/broadcast: sizes s1..s5, strides t0..t5)."""
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    hi, lo = element_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid, BLOCK, WORDS)
    if DIST == DIST_INTEGERS:
        low = join64(a_lo, a_hi)
        if WORDS == 1:  # span <= 2**32: the high 32 bits of word * span (Lemire, without rejection)
            span = (join64(b_lo, b_hi) + 1).to(tl.uint64, bitcast=True)
            r = ((hi.to(tl.uint64) * span) >> 32).to(tl.int64)
        else:  # the 64-bit word modulo span; span = 2**64 (b + 1 wraps to 0) takes the word itself
            span = (join64(b_lo, b_hi) + 1).to(tl.uint64, bitcast=True)
            x = (hi.to(tl.uint64) << 32) | lo.to(tl.uint64)
            r = tl.where(span == 0, x, x % tl.maximum(span, 1)).to(tl.int64, bitcast=True)
        v = low + r
    else:
        if F64:
            u = uniform_f64(hi, lo)
            a = f64_of(a_lo, a_hi)
            b = f64_of(b_lo, b_hi)
        else:
            u = uniform_f32(hi)
            a = f64_of(a_lo, a_hi).to(tl.float32)
            b = f64_of(b_lo, b_hi).to(tl.float32)
        if DIST == DIST_UNIFORM:
            v = u * a + b
        elif DIST == DIST_NORMAL:
            v = box_muller(u, BLOCK) * a + b
        else:
            if P_ARRAY:
                if P_CONTIGUOUS:
                    po = idx
                else:
                    po = strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5)
                p = tl.load(p_ptr + po, mask=mask, other=0).to(tl.float32)
            else:
                p = a.to(tl.float32)
            v = u.to(tl.float32) < p
    if TO_BOOL:
        out = v != 0
    else:
        out = v.to(y_ptr.dtype.element_ty)
        if DIST == DIST_UNIFORM:  # rounding to the output dtype may reach `high`: c is the largest value below it
            if F64:
                out = tl.minimum(out, f64_of(c_lo, c_hi))
            else:
                out = tl.minimum(out.to(tl.float32), f64_of(c_lo, c_hi).to(tl.float32)).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + idx, out, mask=mask)


@triton.jit(do_not_specialize=["seed_lo", "seed_hi", "ctr_lo", "ctr_hi", "k"])
def permutation_kernel(y_ptr, n, k, seed_lo, seed_hi, ctr_lo, ctr_hi, SORT: tl.constexpr, BLOCK: tl.constexpr):
    """A random permutation of range(n) into ``y``.

    SORT (n <= BLOCK, one program): every index draws a 31-bit key and the (key, index) pairs, packed in an int64,
    are sorted; ties (probability ~n**2 / 2**32) keep index order. Otherwise y[i] = F(i) for a pseudo-random
    bijection F of range(n): a 4-round (unbalanced when k is odd) Feistel network on k bits (2**k >= n) whose
    round function is Philox (a strong pseudo-random permutation, Luby-Rackoff), restricted to range(n) by cycle
    walking (apply F again while the value is >= n; fewer than 2 steps on average). Every element is computed
    independently, so any n runs on many programs without a sort; the permutation is not drawn exactly uniformly
    from all n!, as the sort-based one is, but is indistinguishable from such a draw in practice.
    """
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if SORT:
        w, _ = element_words(seed_lo, seed_hi, ctr_lo, ctr_hi, pid, BLOCK, 1)
        key = tl.where(mask, ((w >> 1).to(tl.int64) << 32) | idx, 0x7FFFFFFFFFFFFFFF)
        key = tl.sort(key)
        tl.store(y_ptr + idx, (key & 0xFFFFFFFF).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        k0 = tl.to_tensor(seed_lo).to(tl.uint32, bitcast=True)
        k1 = tl.to_tensor(seed_hi).to(tl.uint32, bitcast=True)
        c2 = tl.to_tensor(ctr_lo).to(tl.uint32, bitcast=True)  # the call's offset: distinct bijections per call
        c3 = tl.to_tensor(ctr_hi).to(tl.uint32, bitcast=True)
        one = tl.to_tensor(1).to(tl.int64)
        x = idx
        todo = mask
        while tl.max(todo.to(tl.int32), axis=0) > 0:
            hw = k - k // 2  # the widths of the high and low parts; a round swaps them
            lw = k // 2
            y = x
            for r in tl.static_range(4):
                left = y >> lw
                right = y & ((one << lw) - 1)
                c0 = right.to(tl.uint32)
                f, _, _, _ = philox(c0, c0 * 0 + r, c0 * 0 + c2, c0 * 0 + c3, k0, k1)
                y = (right << hw) | (left ^ (f.to(tl.int64) & ((one << hw) - 1)))
                hw, lw = lw, hw
            x = tl.where(todo, y, x)
            todo = todo & (x >= n)
        tl.store(y_ptr + idx, x.to(y_ptr.dtype.element_ty), mask=mask)
