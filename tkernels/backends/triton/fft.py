"""``fft`` on cuda (signature: ``tkernels/fft.py``): every length and kind from ``fft_kernel``
(``tkernels/kernels/fft.py``), on the interleaved layout, with no host round trip.

- a power of two ``N <= MAX_SMALL``: one launch (a program per transform);
- a larger power of two (up to ``MAX_SMALL ** 2``): the four-step FFT, ``N = N1 * N2``, two launches through a
  contiguous temporary ``T[b, k1, j2]``: first the ``N2`` transforms of length ``N1`` along ``j1`` (stride
  ``N2``), multiplied by ``w_N^(j2 k1)`` on store, then the ``N1`` transforms of length ``N2`` of ``T``'s rows,
  stored at the natural index ``k1 + N1 k2`` (a strided store);
- any other length ``n``: Bluestein, ``X_k = c_k sum_j (x_j c_j) conj(c_(k-j))`` with the chirp
  ``c_j = exp(sign i pi j^2 / n)``, a circular convolution of length ``M = 2^ceil(log2(2n - 1))``: the filter's
  spectrum (one transform of the generated filter), the chirped input's spectrum, and the inverse transform of
  their product, chirped and truncated to ``n`` on store.

Operands are described as (real Array, complex shape, strides, stride of the imaginary part): a complex Array
is its interleaved real view (strides doubled, the imaginary part 1 further); real data have ``stride_c`` 0
(``REAL_IN``/``REAL_OUT``). The axes other than the transformed one are collapsed into at most
five batch dimensions (the four-step launches add one).
"""

from __future__ import annotations

import functools

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels import fft as fk
from ...validation import OpValueError
from ._launch import INTERPRETED, collapse, f64_bits, launch
from .memory import empty

_F64 = _dt.float64
# the GPU's persistent grid: enough programs to fill an H200 (132 SMs) several times, with a scratch
# (4 N reals a program) that stays within L2
GPU_MIN_PROGRAMS = 528
GPU_SCRATCH_BYTES = 24 << 20


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _contiguous(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return st[::-1]


def _outer(shape, *strides):
    """Collapse the batch dimensions of the operands: (sizes, [strides per operand]), at most 5 dimensions."""
    sizes, sts = collapse(list(shape) or [1], *[list(s) or [0] for s in strides])
    k = next((i for i, s in enumerate(sizes) if s != 1), len(sizes))
    if k == 0:
        raise OpValueError(f"fft: the axes other than the transformed one ({tuple(shape)}) collapse to more than 5 "
                           f"dimensions; hint: make the input contiguous first")
    return sizes[k:], [st[k:] for st in sts]


def _prod(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _run(x, y, m, N, sizes, xt, yt, sx, sy, *, inverse, pre=fk.PRE_NONE, post=fk.POST_NONE, real_in=False,
         real_out=False, n_in, n_out, lstride=1, loff=0, ostride=1, ooff=0, tw_n=0, chirp_n=1, chirp_sign=-1,
         herm_n=0, scale=1.0):
    """One launch of ``fft_kernel`` over the transforms of the batch ``sizes`` (strides ``xt``/``yt``); ``sx``,
    ``sy``: (stride along the transform, stride of the imaginary part)."""
    B = _prod(sizes)
    pad = 6 - len(sizes)
    sizes = [1] * pad + list(sizes)
    xt = [0] * pad + list(xt)
    yt = [0] * pad + list(yt)
    cd = _F64 if x.dtype is _F64 else _dt.float32
    if INTERPRETED:  # the interpreter's cost is per operation: one chunk per pass, a program per transform
        block = max(2, min(_pow2(N), 8192))
        nprog = B
    else:
        block = fk.GPU_BLOCKS[0] if N <= 4 * fk.GPU_BLOCKS[0] else fk.GPU_BLOCKS[1]
        nprog = min(B, max(GPU_MIN_PROGRAMS, GPU_SCRATCH_BYTES // (4 * N * cd.itemsize)))
    w = empty((nprog, 4 * N), cd, x.device)
    launch(fk.fft_kernel, (nprog,), x, y, w, w if m is None else m, B, nprog, N, N.bit_length() - 1, n_in, n_out,
           lstride, loff, ostride, ooff, tw_n or N, chirp_n, chirp_sign, herm_n, sx[0], sx[1], sy[0], sy[1],
           *sizes[1:], *xt, *yt, f64_bits(scale), INVERSE=inverse, PRE=pre, POST=post, REAL_IN=real_in,
           REAL_OUT=real_out, F64=cd is _F64, BLOCK=block)


@functools.lru_cache(maxsize=64)
def _split(N: int):
    """N = N1 * N2 for the four-step FFT, both powers of two <= MAX_SMALL (N1 >= N2)."""
    log = N.bit_length() - 1
    n1 = 1 << ((log + 1) // 2)
    return n1, N // n1


def _transform(x, y, m, N, sizes, xt, yt, sx, sy, **kw):
    """A power-of-two transform of length ``N``: one launch, or the four-step pair."""
    if N <= fk.MAX_SMALL:
        _run(x, y, m, N, sizes, xt, yt, sx, sy, **kw)
        return
    if N > fk.MAX_SMALL**2:
        raise OpValueError(f"fft: transforms longer than {fk.MAX_SMALL**2} points (here {N}, a power of two or the "
                           f"Bluestein length of a longer one) are not supported on cuda; hint: split the axis")
    n1, n2 = _split(N)
    t = empty(tuple(sizes) + (n1, n2, 2), x.dtype if x.dtype in (_F64, _dt.float32) else _dt.float32, x.device)
    tt = [s * n1 * n2 * 2 for s in _contiguous(sizes)]
    first = {k: kw[k] for k in ("inverse", "pre", "real_in", "n_in", "chirp_n", "chirp_sign", "herm_n") if k in kw}
    # N2 transforms of length N1 (along j1 = stride N2 of x), twiddled: T[b, k1, j2]
    _run(x, t, m, n1, list(sizes) + [n2], list(xt) + [sx[0]], tt + [2], (n2 * sx[0], sx[1]), (2 * n2, 1),
         lstride=n2, loff=1, post=fk.POST_TWIDDLE, tw_n=N, n_out=n1, **first)
    # N1 transforms of length N2 (T's rows), stored at k1 + N1 k2
    last = {k: kw[k] for k in ("inverse", "post", "real_out", "n_out", "chirp_n", "chirp_sign", "scale") if k in kw}
    _run(t, y, None, n2, list(sizes) + [n1], tt + [2 * n2], list(yt) + [sy[0]], (2, 1), (n1 * sy[0], sy[1]),
         n_in=n2, ostride=n1, ooff=1, **last)


def _describe(a):
    """(real Array, shape, strides in reals, stride of the imaginary part) of a complex or real Array."""
    if a._dtype.kind != "c":
        return a, a._shape, a._strides, 0
    re = Array(a._storage, (*a._shape, 2), (*(2 * s for s in a._strides), 1), 2 * a._offset, _dt.to_real(a._dtype),
               a._device)
    return re, a._shape, tuple(2 * s for s in a._strides), 1


@register("fft", "triton")
def fft(out, x, axis: int, n: int, inverse: bool, scale: float, hermitian: bool) -> None:
    """``out = scale * DFT_n(x)`` along ``axis``, sign + when ``inverse`` (the first ``out.shape[axis]``
    outputs); ``hermitian``: the real part of the transform of the Hermitian extension of the half spectrum."""
    x, xs, xst, xc = _describe(x)
    out, ys, yst, yc = _describe(out)
    real_in, real_out = xc == 0, hermitian
    L = xs[axis]
    n_in = min(L, n // 2 + 1 if real_out else n)
    n_out = ys[axis]
    oshape = xs[:axis] + xs[axis + 1:]
    if _prod(oshape) == 0 or n_out == 0:
        return
    herm_n = n if real_out else 0
    sx, sy = (xst[axis], xc), (yst[axis], yc)
    rest = lambda st: st[:axis] + st[axis + 1:]  # noqa: E731
    sign = 1 if inverse else -1
    if n == _pow2(n):
        sizes, (xt, yt) = _outer(oshape, rest(xst), rest(yst))
        _transform(x, out, None, n, sizes, xt, yt, sx, sy, inverse=inverse, real_in=real_in, real_out=real_out,
                   n_in=n_in, n_out=n_out, herm_n=herm_n, scale=scale)
        return
    M = _pow2(2 * n - 1)
    cd = _F64 if x.dtype is _F64 else _dt.float32
    # the filter's spectrum: conj(c_m) at m and M - m (|m| < n), transformed
    bf = empty((M, 2), cd, x.device)
    _transform(bf, bf, None, M, [], [], [], (2, 1), (2, 1), inverse=False, pre=fk.PRE_BLUESTEIN_B, n_in=M,
               n_out=M, chirp_n=n, chirp_sign=sign)
    a = empty(tuple(oshape) + (M, 2), cd, x.device)
    sizes, (xt, yt, at) = _outer(oshape, rest(xst), rest(yst), [2 * M * s for s in _contiguous(oshape)])
    # the chirped input's spectrum
    _transform(x, a, None, M, sizes, xt, at, sx, (2, 1), inverse=False, pre=fk.PRE_CHIRP, real_in=real_in,
               n_in=n_in, n_out=M, herm_n=herm_n, chirp_n=n, chirp_sign=sign)
    # the convolution (the inverse transform of the product, unnormalized: 1 / M), chirped, the first n_out
    _transform(a, out, bf, M, sizes, at, yt, (2, 1), sy, inverse=True, pre=fk.PRE_MUL, post=fk.POST_CHIRP,
               real_out=real_out, n_in=M, n_out=n_out, chirp_n=n, chirp_sign=sign, scale=scale / M)
