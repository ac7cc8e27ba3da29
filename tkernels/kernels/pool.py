"""Window pooling (max, average) and separable resampling (nearest, bilinear, adaptive average), forward and backward.

Every kernel is direct and gather-only: one program per ``BLOCK`` elements of a contiguous output, each element
looping over what it reads with masked loads. The backward kernels are gathers too: each input element visits
the outputs that read it (no atomics, a deterministic sum in a fixed order). Inputs are read in place through
their strides. Halves compute in fp32 (``F64``: float64 operands compute in fp64).

``pool2d_kernel``: max (``MODE`` 0) or average (``MODE`` 1) over a ``KH x KW`` window (runtime loops, so one
compiled variant serves every kernel size), PyTorch's rules: padding reads as -inf for max (NaN wins, the first
maximum in window order gives the int64 index ``ih * W + iw``) and the divisor is ``DIV_MODE`` 0 (window clipped
to the padded input), 1 (clipped to the input: ``count_include_pad=False``) or 2 (``divisor``).

``pool2d_bwd_kernel``: for input ``(ih, iw)``, tap ``(i, j)`` belongs to output ``oh = (ih + PH - i DH) / SH``
when that division is exact and in range; max adds the gradient of the outputs whose saved index is this
element, average adds ``grad / divisor``.

``resample_kernel``: one axis of a separable resize of a ``(P0, P1, P2, L, Q)`` view (the host runs it along H,
then along W, as the NumPy backend's ``mh @ x @ mw.T``). ``MODE``: 0 nearest (``floor(d * sc)`` in fp32), 1
nearest-exact (``floor((d + 0.5) * sc)``), 2 linear with half-pixel centers, 3 linear with ``align_corners``, 4
area (PyTorch's adaptive windows ``[floor(d n / o), ceil((d + 1) n / o))``). ``sc`` is the float64 bit pattern of
the coordinate scale (fp32-exact except linear on float64). Forward: each output reads its one or two taps (or
its window of up to ``KB`` elements). Backward (``BWD``): each input element ``j`` visits the ``KB`` candidate
outputs from an estimate ``lo`` of the first one that reads it (the source index is monotone in ``d``; the host's
``KB`` leaves two candidates of margin each side) and recomputes their taps exactly, adding ``grad * weight``
where a tap is ``j``.
"""

import triton
import triton.language as tl

MAX, AVG = 0, 1
NEAREST, NEAREST_EXACT, LINEAR, LINEAR_ALIGNED, AREA = 0, 1, 2, 3, 4


@triton.jit
def _divisor(h0, w0, KH, KW, H, W, PH, PW, divisor, DIV_MODE: tl.constexpr):
    """PyTorch's avg_pool2d divisor of the windows starting at (h0, w0) (int64)."""
    if DIV_MODE == 2:
        d = h0 * 0 + divisor
    else:
        he = tl.minimum(h0 + KH, H + PH)
        we = tl.minimum(w0 + KW, W + PW)
        if DIV_MODE == 0:
            d = (he - h0) * (we - w0)
        else:
            d = (tl.minimum(he, H) - tl.maximum(h0, 0)) * (tl.minimum(we, W) - tl.maximum(w0, 0))
    return d


@triton.jit
def pool2d_kernel(x_ptr, y_ptr, idx_ptr, total, C, H, W, HO, WO, sxn, sxc, sxh, sxw, KH, KW, SH, SW, PH, PW, DH, DW,
                  divisor, MODE: tl.constexpr, INDICES: tl.constexpr, DIV_MODE: tl.constexpr, F64: tl.constexpr,
                  BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    ow = offs % WO
    t = offs // WO
    oh = t % HO
    t = t // HO
    base = (t // C) * sxn + (t % C) * sxc
    h0 = oh * SH - PH
    w0 = ow * SW - PW
    if F64:
        zero = tl.zeros([BLOCK], tl.float64)
    else:
        zero = tl.zeros([BLOCK], tl.float32)
    if MODE == 0:
        acc = zero + float("-inf")
        if INDICES:  # the window's first valid element (PyTorch's index when every element is -inf)
            hs = tl.where(h0 < 0, h0 + ((DH - 1 - h0) // DH) * DH, h0)
            ws = tl.where(w0 < 0, w0 + ((DW - 1 - w0) // DW) * DW, w0)
            arg = hs * W + ws
    else:
        acc = zero
    for i in range(0, KH):
        ih = h0 + i * DH
        hin = mask & (ih >= 0) & (ih < H)
        for j in range(0, KW):
            iw = w0 + j * DW
            m = hin & (iw >= 0) & (iw < W)
            if MODE == 0:
                v = tl.load(x_ptr + (base + ih * sxh + iw * sxw), mask=m, other=float("-inf")).to(zero.dtype)
                upd = (v > acc) | (v != v)  # the first maximum; a later NaN replaces it (PyTorch's rule)
                acc = tl.where(upd, v, acc)
                if INDICES:
                    arg = tl.where(upd, ih * W + iw, arg)
            else:
                acc += tl.load(x_ptr + (base + ih * sxh + iw * sxw), mask=m, other=0).to(zero.dtype)
    if MODE == 1:
        acc = acc / _divisor(h0, w0, KH, KW, H, W, PH, PW, divisor, DIV_MODE).to(zero.dtype)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    if MODE == 0:
        if INDICES:
            tl.store(idx_ptr + offs, arg, mask=mask)


@triton.jit
def pool2d_bwd_kernel(g_ptr, idx_ptr, dx_ptr, total, C, H, W, HO, WO, sgn, sgc, sgh, sgw, sin, sic, sih, siw,
                      KH, KW, SH, SW, PH, PW, DH, DW, divisor, MODE: tl.constexpr, DIV_MODE: tl.constexpr,
                      F64: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    iw = offs % W
    t = offs // W
    ih = t % H
    t = t // H
    n = t // C
    c = t % C
    g_base = n * sgn + c * sgc
    i_base = n * sin + c * sic
    me = ih * W + iw
    if F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, KH):
        th = ih + PH - i * DH
        oh = tl.maximum(th, 0) // SH
        okh = mask & (th >= 0) & (oh * SH == th) & (oh < HO)
        for j in range(0, KW):
            tw = iw + PW - j * DW
            ow = tl.maximum(tw, 0) // SW
            m = okh & (tw >= 0) & (ow * SW == tw) & (ow < WO)
            g = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=m, other=0).to(acc.dtype)
            if MODE == 0:
                k = tl.load(idx_ptr + (i_base + oh * sih + ow * siw), mask=m, other=-1)
                acc += tl.where(k == me, g, 0.0)
            else:
                d = _divisor(oh * SH - PH, ow * SW - PW, KH, KW, H, W, PH, PW, divisor, DIV_MODE)
                acc += g / d.to(acc.dtype)
    tl.store(dx_ptr + offs, acc.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _taps(d, sc, n, zero, MODE: tl.constexpr):
    """(i0, i1, w0, w1): the source taps of output positions ``d`` along an axis of ``n`` inputs (weights in the
    dtype of ``zero``)."""
    if MODE == 0:
        i0 = tl.minimum(tl.floor(d.to(tl.float32) * sc.to(tl.float32)).to(tl.int64), n - 1)
        i1 = i0
        w0 = zero + 1.0
        w1 = zero
    elif MODE == 1:
        src = ((d.to(tl.float64) + 0.5) * sc).to(tl.float32)
        i0 = tl.minimum(tl.floor(src).to(tl.int64), n - 1)
        i1 = i0
        w0 = zero + 1.0
        w1 = zero
    else:
        s = sc.to(zero.dtype)
        if MODE == 3:
            src = d.to(zero.dtype) * s
        else:
            src = tl.maximum(s * (d.to(zero.dtype) + 0.5) - 0.5, 0.0)
        i0 = tl.minimum(tl.floor(src).to(tl.int64), n - 1)
        lam = tl.minimum(tl.maximum(src - i0.to(zero.dtype), 0.0), 1.0)
        i1 = tl.minimum(i0 + 1, n - 1)
        w0 = 1.0 - lam
        w1 = lam
    return i0, i1, w0, w1


@triton.jit
def resample_kernel(x_ptr, y_ptr, total, P1, P2, LY, Q, sx0, sx1, sx2, sxl, sxq, n, o, sc_bits, KB,
                    MODE: tl.constexpr, BWD: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    q = offs % Q
    t = offs // Q
    lpos = t % LY  # the position along the axis in y: an output (forward) or an input (backward)
    t = t // LY
    p2 = t % P2
    t = t // P2
    base = (t // P1) * sx0 + (t % P1) * sx1 + p2 * sx2 + q * sxq
    sc = sc_bits.to(tl.int64).to(tl.float64, bitcast=True)
    if F64:
        zero = tl.zeros([BLOCK], tl.float64)
    else:
        zero = tl.zeros([BLOCK], tl.float32)
    acc = zero
    if not BWD:
        if MODE == 4:
            s = lpos * n // o
            e = ((lpos + 1) * n + o - 1) // o
            for k in range(0, KB):
                acc += tl.load(x_ptr + (base + (s + k) * sxl), mask=mask & (s + k < e), other=0).to(zero.dtype)
            acc = acc / (e - s).to(zero.dtype)
        else:
            i0, i1, w0, w1 = _taps(lpos, sc, n, zero, MODE)
            v0 = tl.load(x_ptr + (base + i0 * sxl), mask=mask, other=0).to(zero.dtype)
            if MODE < 2:
                acc = v0  # a gather: exact, inf and NaN stay where they are
            else:
                v1 = tl.load(x_ptr + (base + i1 * sxl), mask=mask, other=0).to(zero.dtype)
                acc = w0 * v0 + w1 * v1
    else:
        jf = lpos.to(tl.float64)
        if MODE == 0:
            lo = tl.floor(jf / sc).to(tl.int64) - 2
        elif MODE == 1:
            lo = tl.floor(jf / sc - 0.5).to(tl.int64) - 2
        elif MODE == 2:
            lo = tl.floor((jf - 0.5) / sc - 0.5).to(tl.int64) - 2
        elif MODE == 3:  # sc is 0 when n is 1: every output reads input 0
            lo = tl.floor(tl.where(sc > 0, (jf - 1.0) / tl.where(sc > 0, sc, 1.0), 0.0)).to(tl.int64) - 2
        else:
            lo = lpos * o // n
        lo = tl.maximum(lo, 0)
        for k in range(0, KB):
            d = lo + k
            if MODE == 4:
                s = d * n // o
                e = ((d + 1) * n + o - 1) // o
                w = tl.where((s <= lpos) & (lpos < e), 1.0 / (e - s).to(zero.dtype), 0.0)
            else:
                i0, i1, w0, w1 = _taps(d, sc, n, zero, MODE)
                w = tl.where(i0 == lpos, w0, 0.0) + tl.where(i1 == lpos, w1, 0.0)
            m = mask & (d < o) & (w != 0.0)
            acc += tl.load(x_ptr + (base + d * sxl), mask=m, other=0).to(zero.dtype) * tl.where(m, w, 0.0)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)
