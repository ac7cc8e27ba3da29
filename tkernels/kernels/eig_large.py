"""Eigenvalues (and eigenvectors) of general matrices of any size: ``eig_large_kernel``, one program per matrix,
the whole algorithm on a global-memory scratch in pieces: ``TILE x TILE`` tiles and ``VEC`` vectors.

The same algorithm as ``eig_kernel`` (``tkernels/kernels/eig.py``, read its docstring first), for matrices past
its register tile: nothing of size ``N`` lives in registers, every step loops over row/column blocks of the
scratch (per matrix: four ``N x N`` planes, H's and Q^T's real and imaginary parts, row-major, and nine ``N``
vectors: log2 of the balancing D, the Householder vector (later the back substitution's right side and the
eigenvector ``Q x``), the Schur-form solution ``x``, the eigenvalues and the conjugate partners).

1. Two passes over ``A``'s ``TILE x TILE`` tiles (the non-finite check and ``max |a|``; ``A / max |a|`` into
   H), balancing (row i and column i sums by vector blocks), Householder reduction to Hessenberg form (per
   column: ``v`` into the vector scratch, ``A -= tau v (v^H A)`` column block by column block, ``A -= tau (A v)
   v^H`` row block by row block, the products ``v^H A`` and ``A v`` summed over tiles), ``Q`` formed backwards
   in place of the stored reflectors, as ``Q^T`` (so the columns the QR sweeps rotate are contiguous).
2. The complex single-shift QR algorithm with deflation: the scalar logic of ``eig_kernel``; each Givens rotation
   of two rows / two columns (of H and Q) loops over vector blocks of the span it touches (``_rotate``).
3. Eigenvalues (the diagonal, the real-input snapping and conjugate pairing through the vector scratch), and
   the eigenvectors: ``T x = t_kk x`` by back substitution (``x`` and the right side in the scratch; a rescale
   past ``big`` multiplies the stored part of ``x``), then ``v = D Q x`` as a tiled matrix-vector product and
   zgeev's normalization (unit 2-norm, largest component real and positive; real eigenpairs of real input
   real), each a pass over the vector.

Every step that reads what another thread wrote is behind a ``tl.debug_barrier``. Cost: ``O(N^3)`` as the
one-tile kernel, in ``O(N^3 / VEC)`` block steps (a GPU runs one program per matrix: this is for correctness at
any size, not speed). Written and tested on interpreted cuda and compiled ahead of time for sm_90/sm_80 (Triton
3.6 and the newest) without a GPU at hand: ``tests/tkernels/test_linalg_eig_large.py``'s ``gpu`` tests are its
first run on one.
"""

import triton
import triton.language as tl

from .eig import BALANCE_LIM, BALANCE_SWEEPS
from .strided import strided_offset

GPU_TILE = 32  # the tile edge on a GPU (64 x 64 fp64 tiles spilled: 4-9x the compile time)
GPU_VEC = 128  # the vector block on a GPU
GPU_WARPS = 4
_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min


def scratch_size(n: int) -> int:
    """Scratch elements (of the compute dtype) per matrix."""
    return 4 * n * n + 9 * n


@triton.jit
def _pow2i(e, F64: tl.constexpr):
    """2.0 ** e for int32 ``e`` (exact: the exponent bits)."""
    if F64:
        out = ((e + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
    else:
        out = ((e + 127) << 23).to(tl.float32, bitcast=True)
    return out


@triton.jit
def _rotate(pr, pi, off, stride, second, j0, j1, cc, sr, si, zero_j, VEC: tl.constexpr):
    """``[u; w] <- [[c, s], [-conj(s), c]] [u; w]`` on the pair ``u_j = p[off + j stride]``, ``w_j = p[off +
    second + j stride]`` for ``j0 <= j <= j1`` (``pr``/``pi``: the real and imaginary planes); ``w_zero_j`` is set
    to 0 (the bulge chased; -1: none). Rows of H: ``stride`` 1, ``second`` N; columns (``[u, w] G^H``): pass
    ``-si``, ``stride`` N, ``second`` 1."""
    r1 = tl.arange(0, VEC)
    for c0 in range(j0, j1 + 1, VEC):
        j = c0 + r1
        m = j <= j1
        pu = off + j * stride
        pw = pu + second
        u_r = tl.load(pr + pu, mask=m, other=0)
        u_i = tl.load(pi + pu, mask=m, other=0)
        w_r = tl.load(pr + pw, mask=m, other=0)
        w_i = tl.load(pi + pw, mask=m, other=0)
        z = j == zero_j
        tl.store(pr + pu, cc * u_r + sr * w_r - si * w_i, mask=m)
        tl.store(pi + pu, cc * u_i + sr * w_i + si * w_r, mask=m)
        tl.store(pr + pw, tl.where(z, 0.0, cc * w_r - sr * u_r - si * u_i), mask=m)
        tl.store(pi + pw, tl.where(z, 0.0, cc * w_i - sr * u_i + si * u_r), mask=m)


@triton.jit(do_not_specialize=["N", "maxit", "complex_in"])
def eig_large_kernel(x_ptr, s_ptr, w_ptr, v_ptr, info_ptr, N, maxit, complex_in, sx_r, sx_c,
                     bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
                     WANT_VECTORS: tl.constexpr, F64: tl.constexpr, TILE: tl.constexpr, VEC: tl.constexpr):
    """``eig_kernel``'s contract (arguments, outputs, info codes) for any ``N``; ``s_ptr``: ``scratch_size(N)``
    fp elements per matrix."""
    if F64:
        ulp = 2.0**-52
        small = 1e-200
        big = 1e60
    else:
        ulp = 2.0**-23
        small = 1e-20
        big = 1e6
    FT = s_ptr.dtype.element_ty
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    NN = N * N
    hr_p = s_ptr + pid * (4 * NN + 9 * N)
    hi_p = hr_p + NN
    qr_p = hi_p + NN
    qi_p = qr_p + NN
    ld_p = qi_p + NN  # log2 of the balancing D's diagonal (whole numbers)
    ur_p = ld_p + N  # the Householder vector; the back substitution's right side, then Q x
    ui_p = ur_p + N
    xr_p = ui_p + N  # the Schur-form eigenvector x
    xi_p = xr_p + N
    er_p = xi_p + N  # the eigenvalues
    ei_p = er_p + N
    pa_p = ei_p + N  # the conjugate partner's index (-1: none)
    r1 = tl.arange(0, TILE)
    rv = tl.arange(0, VEC)  # the vector block (1-D loops)
    rows = r1[:, None]
    cols = r1[None, :]
    # 1. non-finite check and max |a| (one pass), A / max |a| into H (another)
    bad_t = tl.zeros([TILE, TILE], tl.int32)
    amax_t = tl.zeros([TILE, TILE], FT)
    for i0 in range(0, N, TILE):
        for j0 in range(0, N, TILE):
            ri = i0 + rows
            cj = j0 + cols
            m = (ri < N) & (cj < N)
            offs = x_base + ri * sx_r + cj * sx_c
            ar = tl.load(offs, mask=m, other=0).to(FT)
            ai = tl.load(offs + 1, mask=m & ((ri * 0 + complex_in) != 0), other=0).to(FT)
            nf = (ar != ar) | (ai != ai) | (tl.abs(ar) == float("inf")) | (tl.abs(ai) == float("inf"))
            bad_t = tl.maximum(bad_t, tl.where(nf, 1, 0))
            amax_t = tl.maximum(amax_t, tl.where(nf, 0.0, tl.maximum(tl.abs(ar), tl.abs(ai))))
    bad = tl.reduce(tl.reduce(bad_t, 1, _MAX), 0, _MAX) > 0
    amax = tl.reduce(tl.reduce(amax_t, 1, _MAX), 0, _MAX)
    scale = tl.where(amax > 0, amax, 1.0)
    zero = scale * 0.0
    for i0 in range(0, N, TILE):
        for j0 in range(0, N, TILE):
            ri = i0 + rows
            cj = j0 + cols
            m = (ri < N) & (cj < N)
            offs = x_base + ri * sx_r + cj * sx_c
            ar = tl.load(offs, mask=m, other=0).to(FT)
            ai = tl.load(offs + 1, mask=m & ((ri * 0 + complex_in) != 0), other=0).to(FT)
            tl.store(hr_p + ri * N + cj, tl.where(bad, 0.0, ar / scale), mask=m)
            tl.store(hi_p + ri * N + cj, tl.where(bad, 0.0, ai / scale), mask=m)
    for j0 in range(0, N, VEC):
        tl.store(ld_p + j0 + rv, zero, mask=j0 + rv < N)
    tl.debug_barrier()
    # balancing (gebal's scaling): column i times f, row i over f, f a power of two (the diagonal unchanged)
    bsweep = 0
    changed = 1
    while (changed > 0) & (bsweep < BALANCE_SWEEPS):
        changed = 0
        for i in range(0, N):
            c = zero
            r = zero
            for j0 in range(0, N, VEC):
                j = j0 + rv
                m = (j < N) & (j != i)
                c += tl.reduce(tl.abs(tl.load(hr_p + j * N + i, mask=m, other=0))
                               + tl.abs(tl.load(hi_p + j * N + i, mask=m, other=0)), 0, _SUM)
                r += tl.reduce(tl.abs(tl.load(hr_p + i * N + j, mask=m, other=0))
                               + tl.abs(tl.load(hi_p + i * N + j, mask=m, other=0)), 0, _SUM)
            ok = (c > 0) & (r > 0)
            lc = tl.log2(tl.where(ok, c, 1.0))
            lr = tl.log2(tl.where(ok, r, 1.0))
            ld = tl.load(ld_p + i)
            ldi = ld.to(tl.int32)
            e = tl.floor(0.5 * (lr - lc) + 0.5).to(tl.int32)
            e = tl.minimum(tl.maximum(e, -BALANCE_LIM - ldi), BALANCE_LIM - ldi)
            f = _pow2i(e, F64)
            g = _pow2i(-e, F64)
            apply = ok & (e != 0) & (c * f + r * g < 0.95 * (c + r))
            tl.debug_barrier()  # every thread has read row and column i
            if apply:
                for j0 in range(0, N, VEC):
                    j = j0 + rv
                    m = (j < N) & (j != i)
                    pc = j * N + i
                    tl.store(hr_p + pc, tl.load(hr_p + pc, mask=m, other=0) * f, mask=m)
                    tl.store(hi_p + pc, tl.load(hi_p + pc, mask=m, other=0) * f, mask=m)
                    pr = i * N + j
                    tl.store(hr_p + pr, tl.load(hr_p + pr, mask=m, other=0) * g, mask=m)
                    tl.store(hi_p + pr, tl.load(hi_p + pr, mask=m, other=0) * g, mask=m)
                tl.store(ld_p + i, ld + e.to(FT))
            changed += tl.where(apply, 1, 0)
            tl.debug_barrier()
        bsweep += 1
    # Householder reduction to Hessenberg form
    for k in range(0, N - 2):
        o = (k + 1) * N + k
        alr = tl.load(hr_p + o)
        ali = tl.load(hi_p + o)
        rest = zero
        for j0 in range(k + 2, N, VEC):
            j = j0 + rv
            m = j < N
            xr = tl.load(hr_p + j * N + k, mask=m, other=0)
            xi = tl.load(hi_p + j * N + k, mask=m, other=0)
            rest += tl.reduce(xr * xr + xi * xi, 0, _SUM)
        aal = tl.sqrt(alr * alr + ali * ali)
        nrm = tl.sqrt(aal * aal + rest)
        pr = tl.where(aal > 0, alr / tl.where(aal > 0, aal, 1.0), 1.0)
        pim = tl.where(aal > 0, ali / tl.where(aal > 0, aal, 1.0), 0.0)
        vn = (aal + nrm) * (aal + nrm) + rest
        tau = tl.where(rest > 0, 2.0 / tl.where(rest > 0, vn, 1.0), 0.0)
        rt = tl.sqrt(tau)
        for j0 in range(k + 1, N, VEC):  # v (x with v_k+1 = phase (|alpha| + |x|)) into the vector scratch
            j = j0 + rv
            m = j < N
            xr = tl.load(hr_p + j * N + k, mask=m, other=0)
            xi = tl.load(hi_p + j * N + k, mask=m, other=0)
            vr = tl.where(j == k + 1, pr * (aal + nrm), xr)
            vi = tl.where(j == k + 1, pim * (aal + nrm), xi)
            tl.store(ur_p + j, vr, mask=m)
            tl.store(ui_p + j, vi, mask=m)
            if WANT_VECTORS:  # sqrt(tau) v into row k of Q^T's planes (Q is formed afterwards)
                tl.store(qr_p + k * N + j, vr * rt, mask=m)
                tl.store(qi_p + k * N + j, vi * rt, mask=m)
        tl.debug_barrier()
        if rest > 0:
            # left: rows and columns > k, A -= tau v (v^H A), a column block at a time
            for c0 in range(k + 1, N, TILE):
                cj = c0 + cols
                mc = cj < N
                wr = tl.zeros([TILE], FT)
                wi = tl.zeros([TILE], FT)
                for r0 in range(k + 1, N, TILE):
                    ri = r0 + rows
                    vr = tl.load(ur_p + ri, mask=ri < N, other=0)
                    vi = tl.load(ui_p + ri, mask=ri < N, other=0)
                    ar = tl.load(hr_p + ri * N + cj, mask=(ri < N) & mc, other=0)
                    ai = tl.load(hi_p + ri * N + cj, mask=(ri < N) & mc, other=0)
                    wr += tl.reduce(vr * ar + vi * ai, 0, _SUM)
                    wi += tl.reduce(vr * ai - vi * ar, 0, _SUM)
                for r0 in range(k + 1, N, TILE):
                    ri = r0 + rows
                    m = (ri < N) & mc
                    vr = tl.load(ur_p + ri, mask=ri < N, other=0)
                    vi = tl.load(ui_p + ri, mask=ri < N, other=0)
                    po = ri * N + cj
                    ar = tl.load(hr_p + po, mask=m, other=0)
                    ai = tl.load(hi_p + po, mask=m, other=0)
                    tl.store(hr_p + po, ar - tau * (vr * wr[None, :] - vi * wi[None, :]), mask=m)
                    tl.store(hi_p + po, ai - tau * (vr * wi[None, :] + vi * wr[None, :]), mask=m)
            tl.debug_barrier()
            # right: every row, columns > k, A -= tau (A v) v^H, a row block at a time
            for r0 in range(0, N, TILE):
                ri = r0 + rows
                mr = ri < N
                ur = tl.zeros([TILE], FT)
                ui = tl.zeros([TILE], FT)
                for c0 in range(k + 1, N, TILE):
                    cj = c0 + cols
                    vr = tl.load(ur_p + cj, mask=cj < N, other=0)
                    vi = tl.load(ui_p + cj, mask=cj < N, other=0)
                    ar = tl.load(hr_p + ri * N + cj, mask=mr & (cj < N), other=0)
                    ai = tl.load(hi_p + ri * N + cj, mask=mr & (cj < N), other=0)
                    ur += tl.reduce(ar * vr - ai * vi, 1, _SUM)
                    ui += tl.reduce(ar * vi + ai * vr, 1, _SUM)
                for c0 in range(k + 1, N, TILE):
                    cj = c0 + cols
                    m = mr & (cj < N)
                    vr = tl.load(ur_p + cj, mask=cj < N, other=0)
                    vi = tl.load(ui_p + cj, mask=cj < N, other=0)
                    po = ri * N + cj
                    ar = tl.load(hr_p + po, mask=m, other=0)
                    ai = tl.load(hi_p + po, mask=m, other=0)
                    tl.store(hr_p + po, ar - tau * (ur[:, None] * vr + ui[:, None] * vi), mask=m)
                    tl.store(hi_p + po, ai - tau * (ui[:, None] * vr - ur[:, None] * vi), mask=m)
            # column k exactly: beta on the subdiagonal, zeros below
            for j0 in range(k + 1, N, VEC):
                j = j0 + rv
                m = j < N
                tl.store(hr_p + j * N + k, tl.where(j == k + 1, -pr * nrm, 0.0), mask=m)
                tl.store(hi_p + j * N + k, tl.where(j == k + 1, -pim * nrm, 0.0), mask=m)
        tl.debug_barrier()
    hmax = zero
    for i0 in range(0, N, TILE):
        for j0 in range(0, N, TILE):
            ri = i0 + rows
            cj = j0 + cols
            m = (ri < N) & (cj < N)
            t = tl.abs(tl.load(hr_p + ri * N + cj, mask=m, other=0)) + tl.abs(tl.load(hi_p + ri * N + cj, mask=m,
                                                                                      other=0))
            hmax = tl.maximum(hmax, tl.reduce(tl.reduce(t, 1, _MAX), 0, _MAX))
    if WANT_VECTORS:
        # Q = P_0 ... P_{N-3} I, backwards, in place, stored transposed (Q^T row-major: Q's columns contiguous,
        # the QR sweeps rotate them): the identity where no reflector is stored, then Q^T P_k^T (P_k read from row
        # k, which becomes e_k^T) on rows and columns > k: Q^T[c, s] -= (sum_s Q^T[c, s] conj(v_s)) v_s
        for i0 in range(0, N, TILE):
            for j0 in range(0, N, TILE):
                ri = i0 + rows
                cj = j0 + cols
                m = (ri < N) & (cj < N) & ((ri >= cj) | (ri >= N - 2))
                tl.store(qr_p + ri * N + cj, tl.where(ri == cj, 1.0, 0.0), mask=m)
                tl.store(qi_p + ri * N + cj, tl.where(ri == cj, 1.0, 0.0) * 0.0, mask=m)
        tl.debug_barrier()
        for kk in range(0, N - 2):
            k = N - 3 - kk
            for j0 in range(k + 1, N, VEC):
                j = j0 + rv
                m = j < N
                tl.store(ur_p + j, tl.load(qr_p + k * N + j, mask=m, other=0), mask=m)
                tl.store(ui_p + j, tl.load(qi_p + k * N + j, mask=m, other=0), mask=m)
                tl.store(qr_p + k * N + j, zero, mask=m)
                tl.store(qi_p + k * N + j, zero, mask=m)
            tl.debug_barrier()
            for r0 in range(k + 1, N, TILE):
                ri = r0 + rows
                mr = ri < N
                wr = tl.zeros([TILE], FT)
                wi = tl.zeros([TILE], FT)
                for c0 in range(k + 1, N, TILE):
                    cj = c0 + cols
                    vr = tl.load(ur_p + cj, mask=cj < N, other=0)
                    vi = tl.load(ui_p + cj, mask=cj < N, other=0)
                    ar = tl.load(qr_p + ri * N + cj, mask=mr & (cj < N), other=0)
                    ai = tl.load(qi_p + ri * N + cj, mask=mr & (cj < N), other=0)
                    wr += tl.reduce(vr * ar + vi * ai, 1, _SUM)
                    wi += tl.reduce(vr * ai - vi * ar, 1, _SUM)
                for c0 in range(k + 1, N, TILE):
                    cj = c0 + cols
                    m = mr & (cj < N)
                    vr = tl.load(ur_p + cj, mask=cj < N, other=0)
                    vi = tl.load(ui_p + cj, mask=cj < N, other=0)
                    po = ri * N + cj
                    ar = tl.load(qr_p + po, mask=m, other=0)
                    ai = tl.load(qi_p + po, mask=m, other=0)
                    tl.store(qr_p + po, ar - (wr[:, None] * vr - wi[:, None] * vi), mask=m)
                    tl.store(qi_p + po, ai - (wr[:, None] * vi + wi[:, None] * vr), mask=m)
            tl.debug_barrier()
    tl.debug_barrier()
    # 2. the shifted QR algorithm (eig_kernel's; the rotations by blocks)
    hi = N - 1
    since = 0
    while (hi > 0) & (since < maxit):
        lo = hi
        found = 0
        while (found == 0) & (lo > 0):
            o = lo * N + lo - 1
            h = tl.abs(tl.load(hr_p + o)) + tl.abs(tl.load(hi_p + o))
            tst = (tl.abs(tl.load(hr_p + o - N)) + tl.abs(tl.load(hi_p + o - N))
                   + tl.abs(tl.load(hr_p + o + 1)) + tl.abs(tl.load(hi_p + o + 1)))
            neg = (h <= ulp * tst) | (h <= small)
            found = tl.where(neg, 1, found)
            lo = tl.where(neg, lo, lo - 1)
        tl.debug_barrier()
        if lo > 0:
            tl.store(hr_p + lo * N + lo - 1, zero)
            tl.store(hi_p + lo * N + lo - 1, zero)
        tl.debug_barrier()
        if lo == hi:
            hi = hi - 1
            since = 0
        else:
            since = since + 1
            o = (hi - 1) * N + hi - 1
            a_r = tl.load(hr_p + o)
            a_i = tl.load(hi_p + o)
            b_r = tl.load(hr_p + o + 1)
            b_i = tl.load(hi_p + o + 1)
            c_r = tl.load(hr_p + o + N)
            c_i = tl.load(hi_p + o + N)
            d_r = tl.load(hr_p + o + N + 1)
            d_i = tl.load(hi_p + o + N + 1)
            t_r = (a_r - d_r) * 0.5
            t_i = (a_i - d_i) * 0.5
            bc_r = b_r * c_r - b_i * c_i
            bc_i = b_r * c_i + b_i * c_r
            z_r = t_r * t_r - t_i * t_i + bc_r
            z_i = 2.0 * t_r * t_i + bc_i
            zm = tl.sqrt(z_r * z_r + z_i * z_i)
            p = tl.sqrt(tl.maximum((zm + tl.abs(z_r)) * 0.5, 0.0))
            q = z_i / tl.where(p > 0, 2.0 * p, 1.0)
            s_r = tl.where(z_r >= 0, p, tl.abs(q))
            s_i = tl.where(z_r >= 0, q, tl.where(z_i < 0, -p, p))
            flip = (t_r * s_r + t_i * s_i) < 0
            s_r = tl.where(flip, -s_r, s_r)
            s_i = tl.where(flip, -s_i, s_i)
            e_r = t_r + s_r
            e_i = t_i + s_i
            en = e_r * e_r + e_i * e_i
            inv = tl.where(en > 0, 1.0 / tl.where(en > 0, en, 1.0), 0.0)
            mu_r = d_r - (bc_r * e_r + bc_i * e_i) * inv
            mu_i = d_i - (bc_i * e_r - bc_r * e_i) * inv
            ol = lo * N + lo
            sub_l = tl.abs(tl.load(hr_p + ol + N)) + tl.abs(tl.load(hi_p + ol + N))
            sub_h = tl.abs(c_r) + tl.abs(c_i)
            ex1 = (since % 20) == 10
            ex2 = (since % 20) == 0
            mu_r = tl.where(ex1, tl.load(hr_p + ol) + 0.75 * sub_l, tl.where(ex2, d_r + 0.75 * sub_h, mu_r))
            mu_i = tl.where(ex1, tl.load(hi_p + ol), tl.where(ex2, d_i, mu_i))
            if WANT_VECTORS:
                c_hi = N - 1
                r_lo = 0
            else:
                c_hi = hi
                r_lo = lo
            for k in range(lo, hi):
                km = tl.maximum(k - 1, lo)
                ox = k * N + km
                x_r = tl.load(hr_p + ox) - tl.where(k == lo, mu_r, 0.0)
                x_i = tl.load(hi_p + ox) - tl.where(k == lo, mu_i, 0.0)
                y_r = tl.load(hr_p + ox + N)
                y_i = tl.load(hi_p + ox + N)
                ax = tl.sqrt(x_r * x_r + x_i * x_i)
                rr = tl.sqrt(ax * ax + y_r * y_r + y_i * y_i)
                ok = ax > 0
                den = tl.where(ok, ax * rr, 1.0)
                cc = tl.where(ok, ax / tl.where(rr > 0, rr, 1.0), tl.where(rr > 0, 0.0, 1.0))
                sr = tl.where(ok, (x_r * y_r + x_i * y_i) / den, tl.where(rr > 0, 1.0, 0.0))
                si = tl.where(ok, (x_i * y_r - x_r * y_i) / den, 0.0)
                tl.debug_barrier()
                _rotate(hr_p, hi_p, k * N, 1, N, km, c_hi, cc, sr, si, tl.where(k > lo, k - 1, -1), VEC)
                tl.debug_barrier()
                _rotate(hr_p, hi_p, k, N, 1, r_lo, tl.minimum(k + 2, hi), cc, sr, -si, -1, VEC)
                if WANT_VECTORS:
                    _rotate(qr_p, qi_p, k * N, 1, N, 0, N - 1, cc, sr, -si, -1, VEC)  # Q's columns: Q^T's rows
                tl.debug_barrier()
    info = tl.where(bad, -1, tl.where(hi > 0, hi + 1, 0))
    tl.store(info_ptr + pid, info.to(tl.int32))
    # 3. eigenvalues: the diagonal; for real input rounding-level imaginary parts 0 and the rest paired
    for j0 in range(0, N, VEC):
        j = j0 + rv
        m = j < N
        dr = tl.load(hr_p + j * (N + 1), mask=m, other=0)
        di = tl.load(hi_p + j * (N + 1), mask=m, other=0)
        snap = (complex_in == 0) & (tl.abs(di) <= 8.0 * N * ulp * hmax)
        tl.store(er_p + j, dr, mask=m)
        tl.store(ei_p + j, tl.where(snap, 0.0, di), mask=m)
        tl.store(pa_p + j, zero - 1.0, mask=m)
    tl.debug_barrier()
    if complex_in == 0:
        for k in range(0, N):
            k_r = tl.load(er_p + k)
            k_i = tl.load(ei_p + k)
            pk = tl.load(pa_p + k)
            if (k_i > 0) & (pk < 0):
                best = zero + float("inf")
                bj = N
                for j0 in range(0, N, VEC):
                    j = j0 + rv
                    m = j < N
                    e_r = tl.load(er_p + j, mask=m, other=0)
                    e_i = tl.load(ei_p + j, mask=m, other=0)
                    pa = tl.load(pa_p + j, mask=m, other=0)
                    dist = tl.where((e_i < 0) & (pa < 0) & m, tl.abs(e_r - k_r) + tl.abs(e_i + k_i), float("inf"))
                    cb = tl.reduce(dist, 0, _MIN)
                    cj = tl.reduce(tl.where(dist == cb, j, N), 0, _MIN)
                    take = cb < best
                    bj = tl.where(take, cj, bj)
                    best = tl.where(take, cb, best)
                tl.debug_barrier()
                if best <= k_i:
                    tl.store(pa_p + bj, zero + k)
                    tl.store(pa_p + k, zero + bj)
                    tl.store(er_p + bj, k_r)
                    tl.store(ei_p + bj, -k_i)
            tl.debug_barrier()
    w_base = w_ptr + pid * 2 * N
    for j0 in range(0, N, VEC):
        j = j0 + rv
        m = j < N
        e_r = tl.load(er_p + j, mask=m, other=0)
        e_i = tl.load(ei_p + j, mask=m, other=0)
        pa = tl.load(pa_p + j, mask=m, other=0)
        e_i = tl.where((pa < 0) & (complex_in == 0), 0.0, e_i)  # no conjugate near: a real eigenvalue
        tl.store(ei_p + j, e_i, mask=m)
        tl.store(w_base + 2 * j, (e_r * scale).to(w_ptr.dtype.element_ty), mask=m)
        tl.store(w_base + 2 * j + 1, (e_i * scale).to(w_ptr.dtype.element_ty), mask=m)
    tl.debug_barrier()
    if WANT_VECTORS:
        v_base = v_ptr + pid * 2 * NN
        for k in range(0, N):
            pk = tl.load(pa_p + k).to(tl.int32)
            out_i = tl.load(ei_p + k)
            if (pk < 0) | (out_i > 0):
                lr = tl.load(hr_p + k * (N + 1))
                li = tl.load(hi_p + k * (N + 1))
                smin = tl.maximum(ulp * (tl.abs(lr) + tl.abs(li)), small)
                # T x = lambda x: x_k = 1, the right side b = -T[:k, k]
                for j0 in range(0, k + 1, VEC):
                    j = j0 + rv
                    m = j <= k
                    mb = j < k
                    tl.store(ur_p + j, -tl.load(hr_p + j * N + k, mask=mb, other=0), mask=mb)
                    tl.store(ui_p + j, -tl.load(hi_p + j * N + k, mask=mb, other=0), mask=mb)
                    tl.store(xr_p + j, tl.where(j == k, 1.0, 0.0) + zero, mask=m)
                    tl.store(xi_p + j, zero, mask=m)
                tl.debug_barrier()
                for ii in range(0, k):
                    i = k - 1 - ii
                    g_r = tl.load(hr_p + i * (N + 1)) - lr
                    g_i = tl.load(hi_p + i * (N + 1)) - li
                    tiny = (tl.abs(g_r) + tl.abs(g_i)) < smin
                    g_r = tl.where(tiny, smin, g_r)
                    g_i = tl.where(tiny, 0.0, g_i)
                    gm = tl.abs(g_r) + tl.abs(g_i)
                    g_r = g_r / gm
                    g_i = g_i / gm
                    gn = (g_r * g_r + g_i * g_i) * gm
                    e_r = tl.load(ur_p + i)
                    e_i = tl.load(ui_p + i)
                    s_r = (e_r * g_r + e_i * g_i) / gn
                    s_i = (e_i * g_r - e_r * g_i) / gn
                    mag = tl.abs(s_r) + tl.abs(s_i)
                    f = tl.where(mag > big, 1.0 / tl.where(mag > big, mag, 1.0), 1.0)  # keep x and b finite
                    s_r = s_r * f
                    s_i = s_i * f
                    if mag > big:  # (rare) the part of x found so far rescaled with b
                        for j0 in range(i + 1, k + 1, VEC):
                            j = j0 + rv
                            m = j <= k
                            tl.store(xr_p + j, tl.load(xr_p + j, mask=m, other=0) * f, mask=m)
                            tl.store(xi_p + j, tl.load(xi_p + j, mask=m, other=0) * f, mask=m)
                    tl.store(xr_p + i, s_r)
                    tl.store(xi_p + i, s_i)
                    for j0 in range(0, i, VEC):
                        j = j0 + rv
                        m = j < i
                        t_r = tl.load(hr_p + j * N + i, mask=m, other=0)
                        t_i = tl.load(hi_p + j * N + i, mask=m, other=0)
                        b_r = tl.load(ur_p + j, mask=m, other=0)
                        b_i = tl.load(ui_p + j, mask=m, other=0)
                        tl.store(ur_p + j, b_r * f - (t_r * s_r - t_i * s_i), mask=m)
                        tl.store(ui_p + j, b_i * f - (t_r * s_i + t_i * s_r), mask=m)
                    tl.debug_barrier()
                # v = D Q x = D sum_c x_c Q^T[c, :] (rows 0..k of Q^T) into the u scratch, and max |v|
                vmax = zero
                for r0 in range(0, N, TILE):
                    ri = r0 + r1
                    mr = ri < N
                    acc_r = tl.zeros([TILE], FT)
                    acc_i = tl.zeros([TILE], FT)
                    for c0 in range(0, k + 1, TILE):
                        cr = c0 + rows
                        mc = cr <= k
                        x_r = tl.load(xr_p + cr, mask=mc, other=0)
                        x_i = tl.load(xi_p + cr, mask=mc, other=0)
                        po = cr * N + ri[None, :]
                        q_r = tl.load(qr_p + po, mask=mr[None, :] & mc, other=0)
                        q_i = tl.load(qi_p + po, mask=mr[None, :] & mc, other=0)
                        acc_r += tl.reduce(q_r * x_r - q_i * x_i, 0, _SUM)
                        acc_i += tl.reduce(q_r * x_i + q_i * x_r, 0, _SUM)
                    dv = _pow2i(tl.load(ld_p + ri, mask=mr, other=0).to(tl.int32), F64)
                    acc_r = acc_r * dv
                    acc_i = acc_i * dv
                    tl.store(ur_p + ri, acc_r, mask=mr)
                    tl.store(ui_p + ri, acc_i, mask=mr)
                    vmax = tl.maximum(vmax, tl.reduce(tl.where(mr, tl.abs(acc_r) + tl.abs(acc_i), 0.0), 0, _MAX))
                vmax = tl.where(vmax > 0, vmax, 1.0)
                tl.debug_barrier()
                # the largest component (the first of equal ones) and the 2-norm, of v / max |v|
                top = zero - 1.0
                at = N * 0
                tot = zero
                for r0 in range(0, N, VEC):
                    ri = r0 + rv
                    mr = ri < N
                    v_r = tl.load(ur_p + ri, mask=mr, other=0) / vmax
                    v_i = tl.load(ui_p + ri, mask=mr, other=0) / vmax
                    m2 = tl.where(mr, v_r * v_r + v_i * v_i, -1.0)
                    cm = tl.reduce(m2, 0, _MAX)
                    ci = tl.reduce(tl.where(m2 == cm, ri, N), 0, _MIN)
                    take = cm > top
                    at = tl.where(take, ci, at)
                    top = tl.where(take, cm, top)
                    tot += tl.reduce(tl.where(mr, m2, 0.0), 0, _SUM)
                tot = tl.sqrt(tot)
                p_r = tl.load(ur_p + at) / vmax
                p_i = tl.load(ui_p + at) / vmax
                pn = tl.sqrt(p_r * p_r + p_i * p_i)
                den = tl.where(pn > 0, pn * tot, 1.0)
                f_r = tl.where(pn > 0, p_r / den, 1.0)
                f_i = tl.where(pn > 0, -p_i / den, 0.0)
                real = (complex_in == 0) & (out_i == 0)  # a real eigenvalue of a real matrix: Re(v) is one too
                sq = zero
                if real:
                    for r0 in range(0, N, VEC):
                        ri = r0 + rv
                        mr = ri < N
                        v_r = tl.load(ur_p + ri, mask=mr, other=0) / vmax
                        v_i = tl.load(ui_p + ri, mask=mr, other=0) / vmax
                        o_r = v_r * f_r - v_i * f_i
                        sq += tl.reduce(o_r * o_r, 0, _SUM)
                rn = tl.where(real, tl.sqrt(sq), 1.0)
                for r0 in range(0, N, VEC):
                    ri = r0 + rv
                    mr = ri < N
                    v_r = tl.load(ur_p + ri, mask=mr, other=0) / vmax
                    v_i = tl.load(ui_p + ri, mask=mr, other=0) / vmax
                    o_r = (v_r * f_r - v_i * f_i) / rn
                    o_i = tl.where(real | (ri == at), 0.0, v_r * f_i + v_i * f_r)  # (zgeev's exactly real top)
                    dst = v_base + 2 * (ri * N + k)
                    tl.store(dst, o_r.to(v_ptr.dtype.element_ty), mask=mr)
                    tl.store(dst + 1, o_i.to(v_ptr.dtype.element_ty), mask=mr)
                    if pk >= 0:
                        dst = v_base + 2 * (ri * N + pk)
                        tl.store(dst, o_r.to(v_ptr.dtype.element_ty), mask=mr)
                        tl.store(dst + 1, (-o_i).to(v_ptr.dtype.element_ty), mask=mr)
                tl.debug_barrier()
