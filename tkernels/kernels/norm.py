"""Layer norm and RMS norm over rows, forward and backward (``RMS`` a constexpr), after Triton's layer-norm tutorial.

The host (``tkernels/backends/triton/ops_norm.py``) views ``x`` and ``grad`` as ``M`` rows of ``N`` elements with a
row stride and an element stride each (copying an operand to contiguous only when its layout has no such view);
outputs, statistics, weight and bias are contiguous. Halves compute in fp32 (``F64``: fp64) and store once.

Forward: a row that fits ``BLOCK_N`` is loaded once (``ONE_PASS``, ``BLOCK_M`` rows a program); a longer row is
walked in chunks (mean, then the centered sum of squares, then the output: the two-pass variance of the NumPy
backend, no cancellation).

Backward: ``dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat))`` (RMS: no centering) fused with partial
``dw = sum(g * xhat)`` and ``db = sum(g)``. Unlike the tutorial, which accumulates partials into GROUP_SIZE_M
buffers under a spin lock (order-dependent sums), each program owns a contiguous range of ``ROWS_PER_PROG`` rows
and writes its own partial row (``dwp_ptr[pid, :]``): the host then reduces the ``[P, N]`` partials over ``P``
with the reduction kernels. Deterministic, no atomics, no locks.

Also ``renorm_rows_kernel``: embedding's max_norm (rows rescaled in place to a maximum norm), at the end of the file.
Batch and group norm are in ``norm_channel.py``.
"""

import triton
import triton.language as tl

_SUM = tl.standard._sum_combine


@triton.jit
def _rsqrt(v, F64: tl.constexpr):
    """1 / sqrt(v), correctly rounded sqrt (tl.rsqrt is an approximation; sqrt_rn takes fp32 only)."""
    if F64:
        return 1.0 / tl.sqrt(v)
    else:
        return 1.0 / tl.sqrt_rn(v)


@triton.jit(do_not_specialize=["eps"])
def norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, stride_xm, stride_xn, eps,
                    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, STATS: tl.constexpr,
                    F64: tl.constexpr, ONE_PASS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float32)
    e = eps.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)  # a float64 bit pattern
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    x_row = rows * stride_xm
    y_row = rows * N
    cols = tl.arange(0, BLOCK_N).to(tl.int64)[None, :]
    if ONE_PASS:
        mask = row_mask & (cols < N)
        x = tl.load(x_ptr + (x_row + cols * stride_xn), mask=mask, other=0).to(zero.dtype)
        if RMS:
            xc = x
        else:
            mean = tl.reduce(x, 1, _SUM, keep_dims=True) / N
            xc = tl.where(mask, x - mean, zero)
        var = tl.reduce(xc * xc, 1, _SUM, keep_dims=True) / N
        rstd = _rsqrt(var + e, F64)
        y = xc * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=cols < N, other=0).to(zero.dtype)
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=cols < N, other=0).to(zero.dtype)
        tl.store(y_ptr + (y_row + cols), y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        if RMS:
            mean = tl.reduce(zero, 1, _SUM, keep_dims=True)
        else:
            acc = zero
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                acc = acc + tl.load(x_ptr + (x_row + n * stride_xn), mask=row_mask & (n < N), other=0).to(zero.dtype)
            mean = tl.reduce(acc, 1, _SUM, keep_dims=True) / N
        acc = zero
        for n0 in range(0, N, BLOCK_N):
            n = n0 + cols
            mask = row_mask & (n < N)
            x = tl.load(x_ptr + (x_row + n * stride_xn), mask=mask, other=0).to(zero.dtype)
            xc = tl.where(mask, x - mean, zero)
            acc = acc + xc * xc
        var = tl.reduce(acc, 1, _SUM, keep_dims=True) / N
        rstd = _rsqrt(var + e, F64)
        for n0 in range(0, N, BLOCK_N):
            n = n0 + cols
            mask = row_mask & (n < N)
            x = tl.load(x_ptr + (x_row + n * stride_xn), mask=mask, other=0).to(zero.dtype)
            y = (x - mean) * rstd
            if HAS_W:
                y = y * tl.load(w_ptr + n, mask=n < N, other=0).to(zero.dtype)
            if HAS_B:
                y = y + tl.load(b_ptr + n, mask=n < N, other=0).to(zero.dtype)
            tl.store(y_ptr + (y_row + n), y.to(y_ptr.dtype.element_ty), mask=mask)
    if STATS:
        if not RMS:
            tl.store(mean_ptr + rows, mean.to(mean_ptr.dtype.element_ty), mask=row_mask)
        tl.store(rstd_ptr + rows, rstd.to(rstd_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def norm_bwd_kernel(x_ptr, g_ptr, mean_ptr, rstd_ptr, w_ptr, dx_ptr, dwp_ptr, dbp_ptr, M, N, ROWS_PER_PROG,
                    stride_xm, stride_xn, stride_gm, stride_gn,
                    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_DX: tl.constexpr, HAS_DW: tl.constexpr,
                    HAS_DB: tl.constexpr, F64: tl.constexpr, ONE_PASS: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr):
    if F64:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_N], 0, tl.float32)
    pid = tl.program_id(0).to(tl.int64)
    r_lo = pid * ROWS_PER_PROG
    r_hi = tl.minimum(r_lo + ROWS_PER_PROG, M)
    cols = tl.arange(0, BLOCK_N).to(tl.int64)[None, :]
    part = pid * N  # this program's partial row
    if ONE_PASS:
        cmask = cols < N
        if HAS_W:
            w = tl.load(w_ptr + cols, mask=cmask, other=0).to(zero.dtype)
        dw_acc = zero
        db_acc = zero
        for m0 in range(r_lo, r_hi, BLOCK_M):
            rows = m0 + tl.arange(0, BLOCK_M)[:, None]
            rmask = rows < r_hi
            mask = rmask & cmask
            x = tl.load(x_ptr + (rows * stride_xm + cols * stride_xn), mask=mask, other=0).to(zero.dtype)
            g = tl.load(g_ptr + (rows * stride_gm + cols * stride_gn), mask=mask, other=0).to(zero.dtype)
            rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0).to(zero.dtype)
            if RMS:
                xhat = x * rstd
            else:
                xhat = (x - tl.load(mean_ptr + rows, mask=rmask, other=0).to(zero.dtype)) * rstd
            if HAS_DW:
                dw_acc = dw_acc + g * xhat  # g is 0 off the rows and columns: masked lanes add nothing
            if HAS_DB:
                db_acc = db_acc + g
            if HAS_DX:
                if HAS_W:
                    gw = g * w
                else:
                    gw = g
                c1 = tl.reduce(gw * xhat, 1, _SUM, keep_dims=True) / N
                if RMS:
                    dx = (gw - xhat * c1) * rstd
                else:
                    dx = (gw - tl.reduce(gw, 1, _SUM, keep_dims=True) / N - xhat * c1) * rstd
                tl.store(dx_ptr + (rows * N + cols), dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if HAS_DW:
            tl.store(dwp_ptr + (part + cols), tl.reduce(dw_acc, 0, _SUM, keep_dims=True), mask=cmask)
        if HAS_DB:
            tl.store(dbp_ptr + (part + cols), tl.reduce(db_acc, 0, _SUM, keep_dims=True), mask=cmask)
    else:
        for m0 in range(r_lo, r_hi, BLOCK_M):
            rows = m0 + tl.arange(0, BLOCK_M)[:, None]
            rmask = rows < r_hi
            rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0).to(zero.dtype)
            if RMS:
                mean = rstd * 0
            else:
                mean = tl.load(mean_ptr + rows, mask=rmask, other=0).to(zero.dtype)
            if HAS_DX:  # the row sums first
                s1 = zero
                s2 = zero
                for n0 in range(0, N, BLOCK_N):
                    n = n0 + cols
                    mask = rmask & (n < N)
                    x = tl.load(x_ptr + (rows * stride_xm + n * stride_xn), mask=mask, other=0).to(zero.dtype)
                    g = tl.load(g_ptr + (rows * stride_gm + n * stride_gn), mask=mask, other=0).to(zero.dtype)
                    if HAS_W:
                        g = g * tl.load(w_ptr + n, mask=n < N, other=0).to(zero.dtype)
                    s1 = s1 + g * ((x - mean) * rstd)
                    s2 = s2 + g
                c1 = tl.reduce(s1, 1, _SUM, keep_dims=True) / N
                c2 = tl.reduce(s2, 1, _SUM, keep_dims=True) / N
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                nmask = n < N
                mask = rmask & nmask
                x = tl.load(x_ptr + (rows * stride_xm + n * stride_xn), mask=mask, other=0).to(zero.dtype)
                g = tl.load(g_ptr + (rows * stride_gm + n * stride_gn), mask=mask, other=0).to(zero.dtype)
                xhat = (x - mean) * rstd
                if HAS_DX:
                    if HAS_W:
                        gw = g * tl.load(w_ptr + n, mask=nmask, other=0).to(zero.dtype)
                    else:
                        gw = g
                    if RMS:
                        dx = (gw - xhat * c1) * rstd
                    else:
                        dx = (gw - c2 - xhat * c1) * rstd
                    tl.store(dx_ptr + (rows * N + n), dx.to(dx_ptr.dtype.element_ty), mask=mask)
                # partials: this program's row of the buffer, read back after its first row tile
                if HAS_DW:
                    prev = tl.load(dwp_ptr + (part + n), mask=nmask & ((n * 0 + m0) != r_lo), other=0)
                    tl.store(dwp_ptr + (part + n), prev + tl.reduce(g * xhat, 0, _SUM, keep_dims=True), mask=nmask)
                if HAS_DB:
                    prev = tl.load(dbp_ptr + (part + n), mask=nmask & ((n * 0 + m0) != r_lo), other=0)
                    tl.store(dbp_ptr + (part + n), prev + tl.reduce(g, 0, _SUM, keep_dims=True), mask=nmask)


# Row renormalization (embedding's max_norm, ``torch.embedding_renorm_``): the rows of ``w`` referenced by ``idx``
# whose ``NORM`` norm exceeds ``max_norm`` are scaled in place by ``max_norm / (norm + 1e-7)``, each row once
# however often it is referenced. ``CLAIM`` launch first: ``claim[idx[k]] = min k`` (atomic min, order-free); the
# second launch renormalizes row ``idx[k]`` in the program of its first occurrence only (no two programs touch a row).
RENORM_P, RENORM_L1, RENORM_L2, RENORM_INF, RENORM_NEG_INF, RENORM_L0 = (tl.constexpr(v) for v in range(6))


@triton.jit(do_not_specialize=["max_norm", "p"])
def renorm_rows_kernel(idx_ptr, w_ptr, claim_ptr, K, D, n, stride_wk, stride_wd, max_norm, p, CLAIM: tl.constexpr,
                       NORM: tl.constexpr, F64: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):
    ks = tl.program_id(0).to(tl.int64) * BLOCK_K + tl.arange(0, BLOCK_K)[:, None]
    kmask = ks < K
    idx = tl.load(idx_ptr + ks, mask=kmask, other=-1).to(tl.int64)
    ok = kmask & (idx >= 0) & (idx < n)  # out-of-range indices are skipped (no host sync to raise)
    if CLAIM:
        tl.atomic_min(claim_ptr + idx, ks, mask=ok)
    else:
        if F64:
            zero = tl.full([BLOCK_K, BLOCK_D], 0, tl.float64)
        else:
            zero = tl.full([BLOCK_K, BLOCK_D], 0, tl.float32)
        ok = ok & (tl.load(claim_ptr + idx, mask=ok, other=-1) == ks)
        cols = tl.arange(0, BLOCK_D).to(tl.int64)[None, :]
        row = idx * stride_wk
        pe = p.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
        if NORM == RENORM_NEG_INF:
            acc = zero + float("inf")
        else:
            acc = zero
        for d0 in range(0, D, BLOCK_D):
            d = d0 + cols
            mask = ok & (d < D)
            a = tl.abs(tl.load(w_ptr + (row + d * stride_wd), mask=mask, other=0).to(zero.dtype))
            if NORM == RENORM_L2:
                acc = acc + a * a
            elif NORM == RENORM_L1:
                acc = acc + a
            elif NORM == RENORM_INF:
                acc = tl.maximum(acc, a)
            elif NORM == RENORM_NEG_INF:
                acc = tl.where(mask, tl.minimum(acc, a), acc)
            elif NORM == RENORM_L0:
                acc = acc + tl.where(a != 0, 1.0, 0.0).to(zero.dtype)
            else:
                acc = acc + tl.where(a > 0, tl.exp(pe * tl.log(tl.where(a > 0, a, 1.0))), 0.0).to(zero.dtype)
        if NORM == RENORM_INF:
            norm = tl.max(acc, 1, keep_dims=True)
        elif NORM == RENORM_NEG_INF:
            norm = tl.min(acc, 1, keep_dims=True)
        else:
            norm = tl.reduce(acc, 1, _SUM, keep_dims=True)
            if NORM == RENORM_L2:
                norm = tl.sqrt(norm)
            elif NORM == RENORM_P:
                norm = tl.where(norm > 0, tl.exp(tl.log(tl.where(norm > 0, norm, 1.0)) / pe), 0.0).to(zero.dtype)
        mx = max_norm.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
        scale = mx / (norm + 1e-7)
        big = ok & (norm > mx)
        for d0 in range(0, D, BLOCK_D):
            d = d0 + cols
            mask = big & (d < D)
            v = tl.load(w_ptr + (row + d * stride_wd), mask=mask, other=0).to(zero.dtype)
            tl.store(w_ptr + (row + d * stride_wd), (v * scale).to(w_ptr.dtype.element_ty), mask=mask)
