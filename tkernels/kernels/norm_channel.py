"""Batch norm and group norm, forward and backward: statistics over segments of an ``(N, C, S)`` array.

The host (``tkernels/backends/triton/ops_norm.py``) views ``x`` (and ``grad``) as ``(N, C, S)`` with one stride per
axis (the spatial axes collapsed; an operand without such a view is first copied to contiguous). Every kernel works
on *segments*: program ``(r, p)`` owns chunk ``p`` (``CHUNK`` elements) of segment ``r``, whose ``L`` elements
``j = o * S + s`` are

- ``GROUP=False`` (a channel, batch norm): channel ``c = r``, sample ``n = o`` (``L = N * S``);
- ``GROUP=True`` (a group of a sample, group norm): ``n = r // G``, channel ``c = (r % G) * CG + o`` (``L = CG * S``).

Three kernels, each with constexpr switches:

- ``channel_reduce_kernel``: per (segment, chunk) partials. Statistics (``GRAD=False``): the chunk's sum and its sum
  of squares about the chunk mean (two passes over the chunk, no cancellation). Gradients (``GRAD=True``): ``sum(g)``
  and ``sum(g * xhat)`` (``g * w`` with ``HAS_W``), ``xhat`` from the statistic of element's ``(n, c)``: index
  ``n * stat_sn + c // CG`` (a channel's own for batch norm, ``(n, group)`` for group norm's per-channel dweight).
- ``channel_finalize_kernel``: merges the ``P`` partials of each segment (Chan et al.: ``M2 = sum(M2_p + n_p (m_p -
  m)^2)``), writes mean and ``1/sqrt(var + eps)`` (biased variance), the saved statistics, and updates the running
  statistics in place (unbiased variance, ``Bessel`` passed by the host); ``GRAD``: plain sums over ``P``.
- ``channel_apply_kernel``: ``y = (x - mean) * rstd * w + b`` or ``dx = rstd * w * (g - mean(g) - xhat * mean(g *
  xhat))`` (``TRAIN``; eval: ``rstd * w * g``); outputs contiguous. ``FROM_VAR``: the second statistic operand is a
  variance (running_var) and ``rstd = 1/sqrt(var + eps)`` is computed here.

Tiles are ``[BLOCK_R, BLOCK]``: ``BLOCK_R`` segments down (many short segments share a program, e.g. group norm's
small groups; in the interpreter, where every program and every op costs, a whole launch is often one program), a
chunk's elements across. Partials are written per (segment, chunk) and merged by a second launch: deterministic, no
atomics. Halves compute in fp32 (``F64``: fp64). Helpers are inlined: a nested ``@triton.jit`` call costs ~10 ms in
the interpreter.
"""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["eps"])
def channel_reduce_kernel(x_ptr, g_ptr, mean_ptr, rstd_ptr, w_ptr, p1_ptr, p2_ptr, R, L, S, G, CG, stat_sn, CHUNK,
                          stride_xn, stride_xc, stride_xs, stride_gn, stride_gc, stride_gs, eps,
                          GRAD: tl.constexpr, GROUP: tl.constexpr, FROM_VAR: tl.constexpr, HAS_W: tl.constexpr,
                          F64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_R, BLOCK], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_R, BLOCK], 0, tl.float32)
    rows1 = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rows = rows1[:, None]
    rmask = rows < R
    p = tl.program_id(1).to(tl.int64)
    part = rows1 * tl.num_programs(1) + p  # this (segment, chunk)'s partial
    lo = p * CHUNK
    hi = tl.minimum(lo + CHUNK, L)
    lanes = tl.arange(0, BLOCK).to(tl.int64)[None, :]
    if GROUP:  # segment rows = (sample, group): n, and the group's first channel
        n_r = rows // G
        c_r = (rows - n_r * G) * CG
    acc1 = zero
    acc2 = zero
    if GRAD:
        e = eps.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)  # a float64 bit pattern
        for j0 in range(lo, hi, BLOCK):
            j = j0 + lanes
            mask = rmask & (j < hi)
            o = j // S
            s = j - o * S
            if GROUP:
                n = n_r
                c = c_r + o
                st = rows
            else:
                n = o
                c = rows
                st = n * stat_sn + c // CG
            x = tl.load(x_ptr + (n * stride_xn + c * stride_xc + s * stride_xs), mask=mask, other=0).to(zero.dtype)
            g = tl.load(g_ptr + (n * stride_gn + c * stride_gc + s * stride_gs), mask=mask, other=0).to(zero.dtype)
            mean = tl.load(mean_ptr + st, mask=mask, other=0).to(zero.dtype)
            rstd = tl.load(rstd_ptr + st, mask=mask, other=1).to(zero.dtype)
            if FROM_VAR:  # a running variance: 1 / sqrt(var + eps), correctly rounded sqrt
                if F64:
                    rstd = 1.0 / tl.sqrt(rstd + e)
                else:
                    rstd = 1.0 / tl.sqrt_rn(rstd + e)
            if HAS_W:
                g = g * tl.load(w_ptr + c, mask=mask, other=0).to(zero.dtype)
            acc1 = acc1 + g  # g is 0 on masked lanes
            acc2 = acc2 + g * ((x - mean) * rstd)
        tl.store(p1_ptr + part, tl.sum(acc1, 1).to(p1_ptr.dtype.element_ty), mask=rows1 < R)
        tl.store(p2_ptr + part, tl.sum(acc2, 1).to(p2_ptr.dtype.element_ty), mask=rows1 < R)
    else:  # the chunk's sum, then its sum of squares about its own mean
        for j0 in range(lo, hi, BLOCK):
            j = j0 + lanes
            o = j // S
            s = j - o * S
            if GROUP:
                off = n_r * stride_xn + (c_r + o) * stride_xc + s * stride_xs
            else:
                off = o * stride_xn + rows * stride_xc + s * stride_xs
            acc1 = acc1 + tl.load(x_ptr + off, mask=rmask & (j < hi), other=0).to(zero.dtype)
        total = tl.sum(acc1, 1)
        m = total[:, None] / (hi - lo).to(zero.dtype)
        for j0 in range(lo, hi, BLOCK):
            j = j0 + lanes
            mask = rmask & (j < hi)
            o = j // S
            s = j - o * S
            if GROUP:
                off = n_r * stride_xn + (c_r + o) * stride_xc + s * stride_xs
            else:
                off = o * stride_xn + rows * stride_xc + s * stride_xs
            x = tl.load(x_ptr + off, mask=mask, other=0).to(zero.dtype)
            xc = tl.where(mask, x - m, zero)
            acc2 = acc2 + xc * xc
        tl.store(p1_ptr + part, total.to(p1_ptr.dtype.element_ty), mask=rows1 < R)
        tl.store(p2_ptr + part, tl.sum(acc2, 1).to(p2_ptr.dtype.element_ty), mask=rows1 < R)


@triton.jit(do_not_specialize=["eps", "momentum", "keep", "bessel"])
def channel_finalize_kernel(p1_ptr, p2_ptr, o1_ptr, o2_ptr, sm_ptr, si_ptr, rm_ptr, rv_ptr, R, P, L, CHUNK,
                            eps, momentum, keep, bessel, GRAD: tl.constexpr, STATS: tl.constexpr,
                            HAS_RM: tl.constexpr, HAS_RV: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr,
                            BLOCK_P: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_R, BLOCK_P], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_R, BLOCK_P], 0, tl.float32)
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < R
    cols = tl.arange(0, BLOCK_P).to(tl.int64)[None, :]
    base = rows[:, None] * P
    acc1 = zero
    acc2 = zero
    if GRAD:
        for p0 in range(0, P, BLOCK_P):
            pp = p0 + cols
            mask = rmask[:, None] & (pp < P)
            acc1 = acc1 + tl.load(p1_ptr + (base + pp), mask=mask, other=0).to(zero.dtype)
            acc2 = acc2 + tl.load(p2_ptr + (base + pp), mask=mask, other=0).to(zero.dtype)
        tl.store(o1_ptr + rows, tl.sum(acc1, 1).to(o1_ptr.dtype.element_ty), mask=rmask)
        tl.store(o2_ptr + rows, tl.sum(acc2, 1).to(o2_ptr.dtype.element_ty), mask=rmask)
    else:
        for p0 in range(0, P, BLOCK_P):
            pp = p0 + cols
            acc1 = acc1 + tl.load(p1_ptr + (base + pp), mask=rmask[:, None] & (pp < P), other=0).to(zero.dtype)
        mean = tl.sum(acc1, 1) / L
        for p0 in range(0, P, BLOCK_P):  # Chan et al.: M2 = sum(M2_p + n_p * (mean_p - mean)^2)
            pp = p0 + cols
            mask = rmask[:, None] & (pp < P)
            cnt = tl.maximum(tl.minimum(L - pp * CHUNK, CHUNK), 1).to(zero.dtype)  # this chunk's elements
            d = tl.load(p1_ptr + (base + pp), mask=mask, other=0).to(zero.dtype) / cnt - mean[:, None]
            m2 = tl.load(p2_ptr + (base + pp), mask=mask, other=0).to(zero.dtype)
            acc2 = acc2 + tl.where(mask, m2 + cnt * d * d, zero)
        var = tl.sum(acc2, 1) / L  # biased, for normalizing
        e = eps.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
        if F64:
            rstd = 1.0 / tl.sqrt(var + e)
        else:
            rstd = 1.0 / tl.sqrt_rn(var + e)
        tl.store(o1_ptr + rows, mean.to(o1_ptr.dtype.element_ty), mask=rmask)
        tl.store(o2_ptr + rows, rstd.to(o2_ptr.dtype.element_ty), mask=rmask)
        if STATS:
            tl.store(sm_ptr + rows, mean.to(sm_ptr.dtype.element_ty), mask=rmask)
            tl.store(si_ptr + rows, rstd.to(si_ptr.dtype.element_ty), mask=rmask)
        m = momentum.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
        k = keep.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)  # 1 - momentum, rounded once in fp64
        if HAS_RM:
            rm = tl.load(rm_ptr + rows, mask=rmask, other=0).to(zero.dtype)
            tl.store(rm_ptr + rows, (k * rm + m * mean).to(rm_ptr.dtype.element_ty), mask=rmask)
        if HAS_RV:  # the unbiased variance: var * L / (L - 1)
            rv = tl.load(rv_ptr + rows, mask=rmask, other=0).to(zero.dtype)
            unbiased = m * var * bessel.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
            tl.store(rv_ptr + rows, (k * rv + unbiased).to(rv_ptr.dtype.element_ty), mask=rmask)


@triton.jit(do_not_specialize=["eps"])
def channel_apply_kernel(x_ptr, g_ptr, y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr, s1_ptr, s2_ptr, R, L, S, C, G, CG,
                         CHUNK, stride_xn, stride_xc, stride_xs, stride_gn, stride_gc, stride_gs, eps,
                         BWD: tl.constexpr, TRAIN: tl.constexpr, GROUP: tl.constexpr, FROM_VAR: tl.constexpr,
                         HAS_W: tl.constexpr, HAS_B: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr,
                         BLOCK: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_R, BLOCK], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_R, BLOCK], 0, tl.float32)
    rows = (tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R))[:, None]
    rmask = rows < R
    lo = tl.program_id(1).to(tl.int64) * CHUNK
    hi = tl.minimum(lo + CHUNK, L)
    lanes = tl.arange(0, BLOCK).to(tl.int64)[None, :]
    mean = tl.load(mean_ptr + rows, mask=rmask, other=0).to(zero.dtype)
    rstd = tl.load(rstd_ptr + rows, mask=rmask, other=1).to(zero.dtype)
    if FROM_VAR:
        e = eps.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
        if F64:
            rstd = 1.0 / tl.sqrt(rstd + e)
        else:
            rstd = 1.0 / tl.sqrt_rn(rstd + e)
    if BWD and TRAIN:
        c1 = tl.load(s1_ptr + rows, mask=rmask, other=0).to(zero.dtype) / L
        c2 = tl.load(s2_ptr + rows, mask=rmask, other=0).to(zero.dtype) / L
    scale = rstd
    if GROUP:  # segment rows = (sample, group)
        n_r = rows // G
        c_r = (rows - n_r * G) * CG
    else:  # a channel: weight and bias are per row (scale = invstd * w, as the NumPy backend)
        if HAS_W:
            scale = rstd * tl.load(w_ptr + rows, mask=rmask, other=0).to(zero.dtype)
        if HAS_B:
            shift = tl.load(b_ptr + rows, mask=rmask, other=0).to(zero.dtype)
    for j0 in range(lo, hi, BLOCK):
        j = j0 + lanes
        mask = rmask & (j < hi)
        o = j // S
        s = j - o * S
        if GROUP:
            n = n_r
            c = c_r + o
            if HAS_W:
                w = tl.load(w_ptr + c, mask=mask, other=0).to(zero.dtype)
            if HAS_B:
                shift = tl.load(b_ptr + c, mask=mask, other=0).to(zero.dtype)
        else:
            n = o
            c = rows
        if BWD:
            g = tl.load(g_ptr + (n * stride_gn + c * stride_gc + s * stride_gs), mask=mask, other=0).to(zero.dtype)
            if GROUP and HAS_W:
                g = g * w
            if TRAIN:
                x = tl.load(x_ptr + (n * stride_xn + c * stride_xc + s * stride_xs), mask=mask,
                            other=0).to(zero.dtype)
                y = (g - c1 - ((x - mean) * rstd) * c2) * scale
            else:
                y = g * scale
        else:
            x = tl.load(x_ptr + (n * stride_xn + c * stride_xc + s * stride_xs), mask=mask, other=0).to(zero.dtype)
            y = (x - mean) * scale
            if GROUP and HAS_W:
                y = y * w
            if HAS_B:
                y = y + shift
        tl.store(y_ptr + ((n * C + c) * S + s), y.to(y_ptr.dtype.element_ty), mask=mask)
