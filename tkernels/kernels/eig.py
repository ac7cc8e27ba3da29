"""Eigenvalues (and eigenvectors) of a batch of small general matrices: ``eig_kernel``, one program per matrix.

The host (``tkernels/backends/triton/linalg_eig.py``) passes each ``N x N`` matrix (``N <= BLOCK_N``, real or
complex: its real pair view, strides in real words) by its strides. Complex arithmetic is done on pairs of real
values throughout (``*r``/``*i``), in fp32 (float32 and halves) or fp64.

1. The matrix, divided by ``max |a_ij|`` (the eigenvalues are scaled back, the vectors do not depend on it) and
   balanced (``D^-1 A D``, D diagonal of powers of two: row and column norms made comparable, as LAPACK's gebal
   without its permutations; the vectors are multiplied by D at the end), is reduced to upper Hessenberg form
   ``H = Q^H A Q`` in registers, as two ``BLOCK_N x BLOCK_N`` tiles: ``N - 2`` Householder reflectors
   ``P = I - tau v v^H`` (``tau = 2 / |v|^2``, Hermitian and unitary) applied from both sides, each a pair of
   tile reductions and rank-1 updates; with vectors, ``sqrt(tau) v`` is kept in the scratch and
   ``Q = P_0 ... P_{N-3}`` formed afterwards (two tiles live at a time, not four). Non-finite input sets
   ``info = -1`` and the rest runs on zeros (the host raises PyTorch's error).
2. ``H`` (and ``Q``) go to a scratch (four ``N x N`` planes per matrix: H's real and imaginary parts, Q's), and
   the complex single-shift QR algorithm runs on it, as LAPACK's zlahqr: the active block ``[lo, hi]`` ends where
   a subdiagonal entry is negligible (``|h_k,k-1| <= ulp (|h_k-1,k-1| + |h_kk|)``, |z| as ``|re| + |im|``, set to
   0); a 1x1 block is a converged eigenvalue (``hi`` moves up); otherwise one implicit QR sweep with the
   Wilkinson shift (the eigenvalue of the trailing 2x2 block nearer ``h_hi,hi``; exceptional shifts after 10
   and 20 iterations without a deflation), a chain of Givens rotations ``G = [[c, s], [-conj(s), c]]`` chasing
   the bulge down, each applied to two rows and two columns (vectors of ``BLOCK_N`` loaded from the scratch) and,
   with vectors, to two columns of ``Q``. With vectors the rotations span the whole rows and columns, so the
   result is the Schur form ``T = Q^H A Q``; without, only the active block. More than ``maxit`` iterations
   without a deflation set ``info = hi + 1`` (the number of eigenvalues not found; LAPACK's code).
3. Eigenvalues: ``T``'s diagonal (times the scale; for real input, as LAPACK's real algorithm gives them:
   imaginary parts below ``8 N ulp |H|`` set to 0 and those eigenvectors real, ``Re(v)`` normalized, and the
   others in exact conjugate pairs, the nearest conjugate matched greedily where it is nearer than the real
   axis, with conjugate vectors; one left without a partner is a real eigenvalue and made real).
   Eigenvectors: ``T x = t_kk x`` by back substitution (``x_k = 1``, rows above by columns of ``T``; a diagonal
   difference below ``ulp |t_kk|`` replaced by that, as ztrevc; the partial solution rescaled when it grows past
   ``big``), ``v = Q x`` summed along with it (Q's columns from the scratch: no tile is live), scaled to unit
   2-norm with its largest component real and positive (zgeev's normalization).

Cost: the reduction ``O(N)`` tile steps; a sweep ``hi - lo`` rotations of ``O(N)`` each (about two or three
sweeps per eigenvalue on random input); the vectors ``N^2 / 2`` vector steps.
"""

import triton
import triton.language as tl

from .strided import strided_offset

GPU_BLOCKS = (16, 64)  # BLOCK_N on a GPU: small matrices and the rest up to 64 (both in the AOT table)
MAX_N = GPU_BLOCKS[-1]
_SUM = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min
BALANCE_SWEEPS = tl.constexpr(10)
BALANCE_LIM = tl.constexpr(60)  # |log2 d_i|: D v stays finite in fp32 (|v| <= big = 1e6 before it)


@triton.jit(do_not_specialize=["N", "maxit", "complex_in"])
def eig_kernel(x_ptr, s_ptr, w_ptr, v_ptr, info_ptr, N, maxit, complex_in, sx_r, sx_c,
               bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5,
               WANT_VECTORS: tl.constexpr, F64: tl.constexpr, BLOCK_N: tl.constexpr):
    """The eigenvalues of matrix ``pid`` (``x_ptr``: real values, or the real view of complex ones when
    ``complex_in`` is 1: a runtime flag, one compiled variant fewer; strides ``sx_r``/``sx_c`` in real words)
    into ``w_ptr`` (the real view of a contiguous complex ``N`` vector per matrix) and, when ``WANT_VECTORS``,
    the unit eigenvectors into the columns of ``v_ptr`` (the real view of contiguous complex ``N x N``
    matrices); ``s_ptr``: a ``4 N N`` fp scratch per matrix; ``info_ptr[pid]``: 0, -1 (non-finite input) or
    the number of eigenvalues that did not converge within ``maxit`` iterations of one deflation (the module
    docstring)."""
    if F64:
        ulp = 2.0**-52
        small = 1e-200  # below the scaled matrix's rounding; x / small stays finite (the back substitution)
        big = 1e60
    else:
        ulp = 2.0**-23
        small = 1e-20
        big = 1e6
    pid = tl.program_id(0).to(tl.int64)
    x_base = x_ptr + strided_offset(pid, bs1, bs2, bs3, bs4, bs5, bt0, bt1, bt2, bt3, bt4, bt5)
    NN = N * N
    hr_p = s_ptr + pid * 4 * NN
    hi_p = hr_p + NN
    qr_p = hi_p + NN
    qi_p = qr_p + NN
    r1 = tl.arange(0, BLOCK_N)
    rows = r1[:, None]
    cols = r1[None, :]
    inside = (rows < N) & (cols < N)
    offs = x_base + rows * sx_r + cols * sx_c
    imag = inside & ((rows * 0 + complex_in) != 0)  # (a tile comparison: the interpreter's masks need one)
    if F64:
        ar = tl.load(offs, mask=inside, other=0).to(tl.float64)
        ai = tl.load(offs + 1, mask=imag, other=0).to(tl.float64)
    else:
        ar = tl.load(offs, mask=inside, other=0).to(tl.float32)
        ai = tl.load(offs + 1, mask=imag, other=0).to(tl.float32)
    # 1. non-finite check, scaling, Householder reduction to Hessenberg form (in registers)
    nonfinite = (ar != ar) | (ai != ai) | (tl.abs(ar) == float("inf")) | (tl.abs(ai) == float("inf"))
    bad = tl.reduce(tl.reduce(tl.where(nonfinite, 1, 0), 1, _MAX), 0, _MAX) > 0
    ar = tl.where(bad, 0.0, ar)
    ai = tl.where(bad, 0.0, ai)
    amax = tl.reduce(tl.reduce(tl.maximum(tl.abs(ar), tl.abs(ai)), 1, _MAX), 0, _MAX)
    scale = tl.where(amax > 0, amax, 1.0)
    zero = scale * 0.0
    ar = ar / scale
    ai = ai / scale
    # balancing (LAPACK's gebal, scaling only): D^-1 A D with D's entries powers of two (exact), each row and
    # column pair brought to about equal off-diagonal 1-norms while that shrinks their sum by 5%
    log_d = r1 * 0  # log2 of D's diagonal, kept within +-LIM (the eigenvectors are D times the balanced ones')
    offd = (rows != cols) & inside
    bsweep = 0
    changed = 1
    while (changed > 0) & (bsweep < BALANCE_SWEEPS):
        changed = 0
        for i in range(0, N):
            absa = tl.where(offd, tl.abs(ar) + tl.abs(ai), 0.0)
            c = tl.reduce(tl.reduce(tl.where(cols == i, absa, 0.0), 1, _SUM), 0, _SUM)
            r = tl.reduce(tl.reduce(tl.where(rows == i, absa, 0.0), 1, _SUM), 0, _SUM)
            ok = (c > 0) & (r > 0)
            lc = tl.log2(tl.where(ok, c, 1.0))
            lr = tl.log2(tl.where(ok, r, 1.0))
            ld = tl.reduce(tl.where(r1 == i, log_d, 0), 0, _SUM)
            e = tl.floor(0.5 * (lr - lc) + 0.5).to(tl.int32)  # c 2^e ~ r 2^-e
            e = tl.minimum(tl.maximum(e, -BALANCE_LIM - ld), BALANCE_LIM - ld)
            if F64:
                f = ((e + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
                g = ((1023 - e).to(tl.int64) << 52).to(tl.float64, bitcast=True)
            else:
                f = ((e + 127) << 23).to(tl.float32, bitcast=True)
                g = ((127 - e) << 23).to(tl.float32, bitcast=True)
            apply = ok & (e != 0) & (c * f + r * g < 0.95 * (c + r))
            f = tl.where(apply, f, 1.0)
            g = tl.where(apply, g, 1.0)
            fc = tl.where(cols == i, f, 1.0) * tl.where(rows == i, g, 1.0)  # column i times f, row i over f
            ar = ar * fc
            ai = ai * fc
            log_d = tl.where(r1 == i, log_d + tl.where(apply, e, 0), log_d)
            changed += tl.where(apply, 1, 0)
        bsweep += 1
    for k in range(0, N - 2):
        xr = tl.where(r1 > k, tl.reduce(tl.where(cols == k, ar, 0.0), 1, _SUM), 0.0)  # column k below row k
        xi = tl.where(r1 > k, tl.reduce(tl.where(cols == k, ai, 0.0), 1, _SUM), 0.0)
        alr = tl.reduce(tl.where(r1 == k + 1, xr, 0.0), 0, _SUM)
        ali = tl.reduce(tl.where(r1 == k + 1, xi, 0.0), 0, _SUM)
        rest = tl.reduce(tl.where(r1 > k + 1, xr * xr + xi * xi, 0.0), 0, _SUM)
        aal = tl.sqrt(alr * alr + ali * ali)
        nrm = tl.sqrt(aal * aal + rest)
        pr = tl.where(aal > 0, alr / tl.where(aal > 0, aal, 1.0), 1.0)  # the phase of alpha
        pim = tl.where(aal > 0, ali / tl.where(aal > 0, aal, 1.0), 0.0)
        # v = x - beta e1 with beta = -phase |x|: v_1 = phase (|alpha| + |x|); P x = beta e1
        vr = tl.where(r1 == k + 1, pr * (aal + nrm), xr)
        vi = tl.where(r1 == k + 1, pim * (aal + nrm), xi)
        vn = (aal + nrm) * (aal + nrm) + rest
        tau = tl.where(rest > 0, 2.0 / tl.where(rest > 0, vn, 1.0), 0.0)
        # left: A -= tau v (v^H A)
        wr = tl.reduce(vr[:, None] * ar + vi[:, None] * ai, 0, _SUM)
        wi = tl.reduce(vr[:, None] * ai - vi[:, None] * ar, 0, _SUM)
        ar = ar - tau * (vr[:, None] * wr[None, :] - vi[:, None] * wi[None, :])
        ai = ai - tau * (vr[:, None] * wi[None, :] + vi[:, None] * wr[None, :])
        # right: A -= tau (A v) v^H, Q -= tau (Q v) v^H
        ur = tl.reduce(ar * vr[None, :] - ai * vi[None, :], 1, _SUM)
        ui = tl.reduce(ar * vi[None, :] + ai * vr[None, :], 1, _SUM)
        ar = ar - tau * (ur[:, None] * vr[None, :] + ui[:, None] * vi[None, :])
        ai = ai - tau * (ui[:, None] * vr[None, :] - ur[:, None] * vi[None, :])
        if WANT_VECTORS:  # v times sqrt(tau) into column k of Q's planes (Q is formed afterwards)
            rt = tl.sqrt(tau)
            tl.store(qr_p + r1 * N + k, vr * rt, mask=(r1 > k) & (r1 < N))
            tl.store(qi_p + r1 * N + k, vi * rt, mask=(r1 > k) & (r1 < N))
        # column k exactly: beta on the subdiagonal, zeros below
        below = (cols == k) & (rows > k + 1)
        sub = (cols == k) & (rows == k + 1)
        ar = tl.where(below, 0.0, tl.where(sub, tl.where(rest > 0, -pr * nrm, alr), ar))
        ai = tl.where(below, 0.0, tl.where(sub, tl.where(rest > 0, -pim * nrm, ali), ai))
    tile = rows * N + cols
    hmax = tl.reduce(tl.reduce(tl.abs(ar) + tl.abs(ai), 1, _MAX), 0, _MAX)
    tl.store(hr_p + tile, ar, mask=inside)
    tl.store(hi_p + tile, ai, mask=inside)
    if WANT_VECTORS:
        # Q = P_0 P_1 ... P_{N-3} I, backwards (P_k Q touches rows > k only): two tiles live, not four
        tl.debug_barrier()
        qr = tl.where((rows == cols) & inside, 1.0, ar * 0.0)
        qi = ar * 0.0
        for kk in range(0, N - 2):
            k = N - 3 - kk
            vm = (r1 > k) & (r1 < N)
            vr = tl.load(qr_p + r1 * N + k, mask=vm, other=0)
            vi = tl.load(qi_p + r1 * N + k, mask=vm, other=0)
            wr = tl.reduce(vr[:, None] * qr + vi[:, None] * qi, 0, _SUM)
            wi = tl.reduce(vr[:, None] * qi - vi[:, None] * qr, 0, _SUM)
            qr = qr - (vr[:, None] * wr[None, :] - vi[:, None] * wi[None, :])
            qi = qi - (vr[:, None] * wi[None, :] + vi[:, None] * wr[None, :])
        tl.debug_barrier()
        tl.store(qr_p + tile, qr, mask=inside)
        tl.store(qi_p + tile, qi, mask=inside)
    tl.debug_barrier()
    # 2. the shifted QR algorithm on the scratch
    hi = N - 1
    since = 0
    while (hi > 0) & (since < maxit):
        # the start lo of the active block: the lowest lo <= hi with h[lo, lo-1] negligible (or 0)
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
        tl.debug_barrier()  # every thread has read the entries before one is zeroed
        if lo > 0:
            tl.store(hr_p + lo * N + lo - 1, zero)
            tl.store(hi_p + lo * N + lo - 1, zero)
        tl.debug_barrier()
        if lo == hi:  # a converged eigenvalue
            hi = hi - 1
            since = 0
        else:
            since = since + 1
            # the shift: Wilkinson's, or an exceptional one
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
            p = tl.sqrt(tl.maximum((zm + tl.abs(z_r)) * 0.5, 0.0))  # sqrt(z) = (s_r, s_i) without cancellation
            q = z_i / tl.where(p > 0, 2.0 * p, 1.0)
            s_r = tl.where(z_r >= 0, p, tl.abs(q))
            s_i = tl.where(z_r >= 0, q, tl.where(z_i < 0, -p, p))
            flip = (t_r * s_r + t_i * s_i) < 0  # the root with |t + s| largest
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
                # every thread has its copy of the shift and of x, y before rows k, k+1 change (on a GPU a
                # thread may store while another one has yet to load)
                tl.debug_barrier()
                # rows k, k+1 (columns km..c_hi): [r_k; r_k1] <- [[c, s], [-conj(s), c]] [r_k; r_k1]
                jm = (r1 >= km) & (r1 <= c_hi)
                pk = k * N + r1
                uk_r = tl.load(hr_p + pk, mask=jm, other=0)
                uk_i = tl.load(hi_p + pk, mask=jm, other=0)
                ul_r = tl.load(hr_p + pk + N, mask=jm, other=0)
                ul_i = tl.load(hi_p + pk + N, mask=jm, other=0)
                nk_r = cc * uk_r + sr * ul_r - si * ul_i
                nk_i = cc * uk_i + sr * ul_i + si * ul_r
                nl_r = cc * ul_r - sr * uk_r - si * uk_i
                nl_i = cc * ul_i - sr * uk_i + si * uk_r
                chased = (r1 == k - 1) & (k > lo)  # the bulge just chased: exactly 0
                tl.store(hr_p + pk, nk_r, mask=jm)
                tl.store(hi_p + pk, nk_i, mask=jm)
                tl.store(hr_p + pk + N, tl.where(chased, 0.0, nl_r), mask=jm)
                tl.store(hi_p + pk + N, tl.where(chased, 0.0, nl_i), mask=jm)
                tl.debug_barrier()
                # columns k, k+1 (rows r_lo..min(k+2, hi)): [c_k, c_k1] <- [c_k, c_k1] G^H
                im = (r1 >= r_lo) & (r1 <= tl.minimum(k + 2, hi))
                pc = r1 * N + k
                uk_r = tl.load(hr_p + pc, mask=im, other=0)
                uk_i = tl.load(hi_p + pc, mask=im, other=0)
                ul_r = tl.load(hr_p + pc + 1, mask=im, other=0)
                ul_i = tl.load(hi_p + pc + 1, mask=im, other=0)
                tl.store(hr_p + pc, cc * uk_r + sr * ul_r + si * ul_i, mask=im)
                tl.store(hi_p + pc, cc * uk_i + sr * ul_i - si * ul_r, mask=im)
                tl.store(hr_p + pc + 1, cc * ul_r - sr * uk_r + si * uk_i, mask=im)
                tl.store(hi_p + pc + 1, cc * ul_i - sr * uk_i - si * uk_r, mask=im)
                if WANT_VECTORS:
                    qm = r1 < N
                    uk_r = tl.load(qr_p + pc, mask=qm, other=0)
                    uk_i = tl.load(qi_p + pc, mask=qm, other=0)
                    ul_r = tl.load(qr_p + pc + 1, mask=qm, other=0)
                    ul_i = tl.load(qi_p + pc + 1, mask=qm, other=0)
                    tl.store(qr_p + pc, cc * uk_r + sr * ul_r + si * ul_i, mask=qm)
                    tl.store(qi_p + pc, cc * uk_i + sr * ul_i - si * ul_r, mask=qm)
                    tl.store(qr_p + pc + 1, cc * ul_r - sr * uk_r + si * uk_i, mask=qm)
                    tl.store(qi_p + pc + 1, cc * ul_i - sr * uk_i - si * uk_r, mask=qm)
                tl.debug_barrier()
    info = tl.where(bad, -1, tl.where(hi > 0, hi + 1, 0))
    tl.store(info_ptr + pid, info.to(tl.int32))
    # 3. eigenvalues: the diagonal (scaled back)
    w_base = w_ptr + pid * 2 * N
    dm = r1 < N
    dr = tl.load(hr_p + r1 * (N + 1), mask=dm, other=0)
    di = tl.load(hi_p + r1 * (N + 1), mask=dm, other=0)
    # a real matrix: imaginary parts at the rounding level are zeros (as LAPACK's real Schur form gives them;
    # the complex arithmetic leaves ~ulp |H| there), and those eigenvectors real
    snap = (complex_in == 0) & (tl.abs(di) <= 8.0 * N * ulp * hmax)
    er = dr
    ei = tl.where(snap, 0.0, di)
    # and its complex eigenvalues in exact conjugate pairs (the nearest conjugate, greedily, if it is nearer
    # than the real axis), the second vector of a pair the conjugate of the first's
    partner = r1 * 0 - 1
    if complex_in == 0:
        for k in range(0, N):
            k_r = tl.reduce(tl.where(r1 == k, er, 0.0), 0, _SUM)
            k_i = tl.reduce(tl.where(r1 == k, ei, 0.0), 0, _SUM)
            pk = tl.reduce(tl.where(r1 == k, partner, 0), 0, _SUM)
            if (k_i > 0) & (pk < 0):
                dist = tl.where((ei < 0) & (partner < 0) & dm, tl.abs(er - k_r) + tl.abs(ei + k_i), float("inf"))
                best = tl.reduce(dist, 0, _MIN)
                j = tl.reduce(tl.where(dist == best, r1, BLOCK_N), 0, _MIN)
                if best <= k_i:  # nearer its conjugate than the real axis (not a noisy real eigenvalue)
                    partner = tl.where(r1 == j, k, tl.where(r1 == k, j, partner))
                    er = tl.where(r1 == j, k_r, er)
                    ei = tl.where(r1 == j, -k_i, ei)
        # one with no conjugate near it is a real eigenvalue that rounding moved off the axis (an ill-conditioned
        # one: its imaginary part above the threshold): real
        ei = tl.where(partner < 0, 0.0, ei)
    tl.store(w_base + 2 * r1, (er * scale).to(w_ptr.dtype.element_ty), mask=dm)
    tl.store(w_base + 2 * r1 + 1, (ei * scale).to(w_ptr.dtype.element_ty), mask=dm)
    if WANT_VECTORS:
        v_base = v_ptr + pid * 2 * NN
        for k in range(0, N):
            pk = tl.reduce(tl.where(r1 == k, partner, 0), 0, _SUM)
            out_i = tl.reduce(tl.where(r1 == k, ei, 0.0), 0, _SUM)
            if (pk < 0) | (out_i > 0):  # (the second of a pair is written with the first)
                lr = tl.reduce(tl.where(r1 == k, dr, 0.0), 0, _SUM)
                li = tl.reduce(tl.where(r1 == k, di, 0.0), 0, _SUM)
                smin = tl.maximum(ulp * (tl.abs(lr) + tl.abs(li)), small)
                # T x = lambda x: x_k = 1, b = -T[:k, k]; rows above by substitution
                cm = r1 < k
                b_r = -tl.load(hr_p + r1 * N + k, mask=cm, other=0)
                b_i = -tl.load(hi_p + r1 * N + k, mask=cm, other=0)
                v_r = tl.load(qr_p + r1 * N + k, mask=dm, other=0)  # v = Q x accumulated with x: Q's column k
                v_i = tl.load(qi_p + r1 * N + k, mask=dm, other=0)
                for ii in range(0, k):
                    i = k - 1 - ii
                    g_r = tl.reduce(tl.where(r1 == i, dr, 0.0), 0, _SUM) - lr
                    g_i = tl.reduce(tl.where(r1 == i, di, 0.0), 0, _SUM) - li
                    tiny = (tl.abs(g_r) + tl.abs(g_i)) < smin
                    g_r = tl.where(tiny, smin, g_r)
                    g_i = tl.where(tiny, 0.0, g_i)
                    gm = tl.abs(g_r) + tl.abs(g_i)  # e / g through g / |g|_1: |g|^2 may underflow
                    g_r = g_r / gm
                    g_i = g_i / gm
                    gn = (g_r * g_r + g_i * g_i) * gm
                    e_r = tl.reduce(tl.where(r1 == i, b_r, 0.0), 0, _SUM)
                    e_i = tl.reduce(tl.where(r1 == i, b_i, 0.0), 0, _SUM)
                    s_r = (e_r * g_r + e_i * g_i) / gn
                    s_i = (e_i * g_r - e_r * g_i) / gn
                    mag = tl.abs(s_r) + tl.abs(s_i)
                    f = tl.where(mag > big, 1.0 / tl.where(mag > big, mag, 1.0), 1.0)  # keep x and b finite
                    s_r = s_r * f
                    s_i = s_i * f
                    q_r = tl.load(qr_p + r1 * N + i, mask=dm, other=0)
                    q_i = tl.load(qi_p + r1 * N + i, mask=dm, other=0)
                    v_r = v_r * f + (q_r * s_r - q_i * s_i)
                    v_i = v_i * f + (q_r * s_i + q_i * s_r)
                    um = r1 < i
                    t_r = tl.load(hr_p + r1 * N + i, mask=um, other=0)
                    t_i = tl.load(hi_p + r1 * N + i, mask=um, other=0)
                    b_r = b_r * f - (t_r * s_r - t_i * s_i)
                    b_i = b_i * f - (t_r * s_i + t_i * s_r)
                # D v (balancing), then unit norm (v / max |v| first: no overflow in the squares), largest component
                # real and positive
                if F64:
                    dv = ((log_d + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
                else:
                    dv = ((log_d + 127) << 23).to(tl.float32, bitcast=True)
                v_r = v_r * dv
                v_i = v_i * dv
                vmax = tl.reduce(tl.where(dm, tl.abs(v_r) + tl.abs(v_i), 0.0), 0, _MAX)
                vmax = tl.where(vmax > 0, vmax, 1.0)
                v_r = v_r / vmax
                v_i = v_i / vmax
                m2 = v_r * v_r + v_i * v_i
                top = tl.reduce(m2, 0, _MAX)
                at = tl.reduce(tl.where(m2 == top, r1, BLOCK_N), 0, _MIN)
                p_r = tl.reduce(tl.where(r1 == at, v_r, 0.0), 0, _SUM)
                p_i = tl.reduce(tl.where(r1 == at, v_i, 0.0), 0, _SUM)
                pn = tl.sqrt(p_r * p_r + p_i * p_i)
                tot = tl.sqrt(tl.reduce(m2, 0, _SUM))
                den = tl.where(pn > 0, pn * tot, 1.0)
                f_r = tl.where(pn > 0, p_r / den, 1.0)
                f_i = tl.where(pn > 0, -p_i / den, 0.0)
                o_r = v_r * f_r - v_i * f_i
                o_i = tl.where(r1 == at, 0.0, v_r * f_i + v_i * f_r)  # the largest exactly real, as zgeev's
                if (complex_in == 0) & (out_i == 0):  # a real eigenvalue of a real matrix: Re(v) is one too
                    o_r = o_r / tl.sqrt(tl.reduce(o_r * o_r, 0, _SUM))
                    o_i = o_i * 0.0
                dst = v_base + 2 * (r1 * N + k)
                tl.store(dst, o_r.to(v_ptr.dtype.element_ty), mask=dm)
                tl.store(dst + 1, o_i.to(v_ptr.dtype.element_ty), mask=dm)
                if pk >= 0:
                    dst = v_base + 2 * (r1 * N + pk)
                    tl.store(dst, o_r.to(v_ptr.dtype.element_ty), mask=dm)
                    tl.store(dst + 1, (-o_i).to(v_ptr.dtype.element_ty), mask=dm)
