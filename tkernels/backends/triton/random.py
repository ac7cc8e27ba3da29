"""Random numbers on cuda: Philox kernels (``tkernels.kernels.random``) keyed by the Generator's seed, at its
(seed, offset) counter, which each call advances by the words it draws (``Generator.philox_next``): two calls
differ, and ``tkernels.random.seed(s)`` replays the same cuda sequence. The values differ from the cpu (PCG64)
stream for the same seed, as PyTorch's cuda and cpu generators differ.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.random import BERNOULLI, INTEGERS, NORMAL, UNIFORM, permutation_kernel, random_kernel
from ._launch import ELEMENTWISE_BLOCK, collapse, grid1d, launch

# the single-program sort of permutation: up to this many elements; longer ones use the Feistel bijection
PERMUTATION_SORT_MAX = 256


def halves(v: int) -> tuple[int, int]:
    """A 64-bit integer (signed or unsigned) as two int32 bit patterns (low, high): kernel arguments that are
    always ``i32``, one compiled specialization whatever the value."""
    v &= 0xFFFFFFFFFFFFFFFF
    lo, hi = v & 0xFFFFFFFF, v >> 32
    return lo - (1 << 32) if lo >= 1 << 31 else lo, hi - (1 << 32) if hi >= 1 << 31 else hi


def f64_halves(x: float) -> tuple[int, int]:
    """The float64 bit pattern of ``x`` as int32 halves (see ``halves``)."""
    return halves(int(np.float64(x).view(np.int64)))


def stream(gen, n_words: int) -> tuple[int, int, int, int]:
    """(seed_lo, seed_hi, offset_lo, offset_hi) for a kernel drawing ``n_words`` words; advances the offset."""
    seed, offset = gen.philox_next(n_words)
    return (*halves(seed), *halves(offset))


def _launch_random(out: Array, gen, dist: int, words: int, a=(0, 0), b=(0, 0), c=(0, 0), p: Array | None = None):
    n = out.size
    if n == 0:
        return
    f64 = out.dtype is _dt.float64 and dist in (UNIFORM, NORMAL)  # float64 samples: 53-bit uniforms
    sizes, strides, p_contiguous = [1] * 6, [0] * 6, True
    if p is not None:
        pst = p._strides if p._shape == out._shape else _broadcast_strides(p, out._shape)
        p_contiguous = p._shape == out._shape and p.is_contiguous()
        if not p_contiguous:
            sizes, (strides, _) = collapse(out._shape, pst, out._strides)
    launch(random_kernel, grid1d(n, ELEMENTWISE_BLOCK), out, out if p is None else p, n, *stream(gen, n * words),
           *a, *b, *c, *sizes[1:], *strides,
           DIST=dist, WORDS=words, F64=f64, P_ARRAY=p is not None, P_CONTIGUOUS=p_contiguous,
           TO_BOOL=out.dtype is _dt.bool, BLOCK=ELEMENTWISE_BLOCK)


def _broadcast_strides(x: Array, shape: tuple) -> tuple:
    lead = len(shape) - x.ndim
    return (0,) * lead + tuple(0 if s == 1 and t != 1 else st for s, t, st in zip(x._shape, shape[lead:], x._strides))


def _below(high: float, low: float, dtype) -> float:
    """The largest value of ``dtype`` below ``high`` (``high`` rounded when low == high): samples stay < high."""
    nd = dtype.numpy
    hi = np.asarray(high, nd)
    if low == high:
        return float(hi)
    if float(hi) >= high:
        hi = np.nextafter(hi, np.asarray(low, nd))
    return max(float(hi), float(np.asarray(low, nd)))


@register("random_uniform", "triton")
def random_uniform(out, gen, *, low, high) -> None:
    # u in [0, 1) has 24 bits (53 for float64); the result is clamped below `high` after rounding to the dtype
    words = 2 if out.dtype is _dt.float64 else 1
    _launch_random(out, gen, UNIFORM, words, f64_halves(high - low), f64_halves(low),
                   f64_halves(_below(high, low, out.dtype)))


@register("random_normal", "triton")
def random_normal(out, gen, *, mean, std) -> None:
    words = 2 if out.dtype is _dt.float64 else 1
    _launch_random(out, gen, NORMAL, words, f64_halves(std), f64_halves(mean))


@register("random_integers", "triton")
def random_integers(out, gen, *, low, high) -> None:
    span = high - low  # 1 <= span <= 2**64
    words = 1 if span <= 1 << 32 else 2
    _launch_random(out, gen, INTEGERS, words, halves(low), halves(span - 1))


@register("random_bernoulli", "triton")
def random_bernoulli(out, gen, *, p) -> None:
    if isinstance(p, Array):
        if p.device != out.device:
            raise RuntimeError(f"bernoulli: p is on {p.device}, the output on {out.device}")
        _launch_random(out, gen, BERNOULLI, 1, p=p)
    else:
        _launch_random(out, gen, BERNOULLI, 1, f64_halves(float(p)))


@register("random_permutation", "triton")
def random_permutation(out, gen) -> None:
    n = out.shape[0]
    if n == 0:
        return
    if n <= PERMUTATION_SORT_MAX:  # the sort's size: a power of two (the keys depend only on the index)
        block = max(16, 1 << (n - 1).bit_length())
        launch(permutation_kernel, (1,), out, n, 1, *stream(gen, n), SORT=True, BLOCK=block)
        return
    k = (n - 1).bit_length()  # 2**k >= n
    # the Feistel bijection reads no stream words; advancing by n keeps calls distinct (its rounds are keyed by
    # the offset) and consumes the stream as a sort would
    launch(permutation_kernel, grid1d(n, ELEMENTWISE_BLOCK), out, n, k, *stream(gen, n), SORT=False,
           BLOCK=ELEMENTWISE_BLOCK)
