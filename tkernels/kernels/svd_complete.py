"""An orthonormal completion of the factor the Jacobi SVD kernels build from W's columns: ``svd_complete_kernel``.

``svd_kernel`` (``svd.py``) and ``csvd_kernel`` (``svd_complex.py``) write ``K`` vectors of ``R`` elements,
``w_k / S_k``, sorted by singular value; where ``S_k = 0`` that vector is zero, and where ``S_k`` is at the rounding
noise of the largest its column was never rotated (noise against noise never converges), so it is a unit vector
that is not orthogonal to the others. The host (``tkernels/backends/triton/linalg_svd.py``) launches this kernel
after the SVD kernel, one program per matrix, whenever vectors are wanted. It walks the ``K`` vectors in order
and replaces every vector ``k`` whose singular value is at most ``2^-12`` (float32 compute) or ``2^-26`` (float64)
times ``S_0`` (a superset of the unrotated ones: above that bound a column is rotated to convergence, and so is
orthogonal to the others to ``~eps sqrt(R)``) by an orthonormal completion:

1. the vector itself, orthogonalized against vectors ``0 .. k-1`` by modified Gram-Schmidt, twice (the second
   pass removes what rounding left of the first: "twice is enough"), into a compute-precision scratch vector;
2. if less than half of it is left (a zero vector, or one in the span of the others), the standard basis vector
   ``e_i`` least covered by the vectors before it (the smallest ``sum_j |q_j[i]|^2``; its residual is at least
   ``sqrt((R - k) / R)`` since those sums add up to ``k``), orthogonalized the same way;
3. divided by its norm and written back in place (in the factor's dtype).

Vectors ``0 .. k-1`` are orthonormal when vector ``k`` is done (the rotated ones by convergence, the others by
construction), so the factor comes out with orthonormal columns (U) or rows (Vh) to working precision. The change
to ``U diag(S) Vh`` is ``S_k`` times the change to vector ``k``: below the bound, at the noise the SVD kernel
already leaves (or rounding, for a converged vector of a small but genuine singular value); full-rank,
well-conditioned input (every ``S_k`` above the bound) is left bit for bit as it was. Complex vectors
(``COMPLEX``) are addressed through the real pair view, as ``csvd_kernel`` writes them: element ``r`` is the words
at ``r * u_el`` and ``+ 1``, and the inner products are ``q^H x``. Non-finite singular values compare false and
leave their vectors alone.
"""

import triton
import triton.language as tl

# the bound, as the reciprocal that multiplies S_k (no underflow for tiny S_0): 2^12 = 1 / sqrt(2^-24) for
# float32 compute, 2^26 for float64
INV_BOUND_F32 = tl.constexpr(4096.0)
INV_BOUND_F64 = tl.constexpr(67108864.0)
_SUM = tl.standard._sum_combine
_MIN = tl.standard._elementwise_min


@triton.jit
def _orthogonalize(x_re, x_im, u_base, u_vec, u_el, R, k, zero, COMPLEX: tl.constexpr, BLOCK_R: tl.constexpr):
    """The scratch vector ``x`` (planes ``x_re``, ``x_im``) minus its components along vectors ``0 .. k-1`` of the
    factor, by modified Gram-Schmidt twice, in place; returns its norm."""
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    for _pass in range(0, 2):
        q = u_base
        for _j in range(0, k):
            dre = zero
            dim = zero
            for r0 in range(0, R, BLOCK_R):
                r = r0 + rows
                rm = r < R
                qr = tl.load(q + r * u_el, mask=rm, other=0).to(zero.dtype)
                xr = tl.load(x_re + r, mask=rm, other=0)
                dre += qr * xr
                if COMPLEX:
                    qi = tl.load(q + r * u_el + 1, mask=rm, other=0).to(zero.dtype)
                    xi = tl.load(x_im + r, mask=rm, other=0)
                    dre += qi * xi
                    dim += qr * xi - qi * xr  # conj(q) x
            d_re = tl.reduce(dre, 0, _SUM)
            d_im = tl.reduce(dim, 0, _SUM)
            for r0 in range(0, R, BLOCK_R):
                r = r0 + rows
                rm = r < R
                qr = tl.load(q + r * u_el, mask=rm, other=0).to(zero.dtype)
                xr = tl.load(x_re + r, mask=rm, other=0)
                if COMPLEX:
                    qi = tl.load(q + r * u_el + 1, mask=rm, other=0).to(zero.dtype)
                    xi = tl.load(x_im + r, mask=rm, other=0)
                    tl.store(x_re + r, xr - (d_re * qr - d_im * qi), mask=rm)
                    tl.store(x_im + r, xi - (d_re * qi + d_im * qr), mask=rm)
                else:
                    tl.store(x_re + r, xr - d_re * qr, mask=rm)
            tl.debug_barrier()
            q += u_vec
    sq = zero
    for r0 in range(0, R, BLOCK_R):
        r = r0 + rows
        rm = r < R
        xr = tl.load(x_re + r, mask=rm, other=0)
        sq += xr * xr
        if COMPLEX:
            xi = tl.load(x_im + r, mask=rm, other=0)
            sq += xi * xi
    return tl.sqrt(tl.reduce(sq, 0, _SUM))


@triton.jit(do_not_specialize=["R", "K"])
def svd_complete_kernel(u_ptr, s_ptr, w_ptr, R, K, u_batch, u_vec, u_el, s_batch, w_batch,
                        COMPLEX: tl.constexpr, F64: tl.constexpr, BLOCK_R: tl.constexpr):
    """The completion of the module docstring for matrix ``pid``: its ``K`` vectors of ``R`` elements at
    ``u_ptr + pid * u_batch`` (vector ``k`` ``u_vec`` words on, elements ``u_el`` words apart; a real pair view
    when ``COMPLEX``), its singular values at ``s_ptr + pid * s_batch`` (descending), and a scratch of ``R``
    (``2 R`` when ``COMPLEX``) compute-type words at ``w_ptr + pid * w_batch``."""
    if F64:
        zero = tl.zeros([BLOCK_R], tl.float64)
        inv_bound = INV_BOUND_F64
    else:
        zero = tl.zeros([BLOCK_R], tl.float32)
        inv_bound = INV_BOUND_F32
    pid = tl.program_id(0).to(tl.int64)
    u_base = u_ptr + pid * u_batch
    s_base = s_ptr + pid * s_batch
    x_re = w_ptr + pid * w_batch
    x_im = x_re + R
    rows = tl.arange(0, BLOCK_R).to(tl.int64)
    s0 = tl.load(s_base).to(zero.dtype)
    dst = u_base
    for k in range(0, K):
        sk = tl.load(s_base + k).to(zero.dtype)
        if sk * inv_bound <= s0:
            # 1. the vector itself, orthogonalized against the ones before it
            for r0 in range(0, R, BLOCK_R):
                r = r0 + rows
                rm = r < R
                tl.store(x_re + r, tl.load(dst + r * u_el, mask=rm, other=0).to(zero.dtype), mask=rm)
                if COMPLEX:
                    tl.store(x_im + r, tl.load(dst + r * u_el + 1, mask=rm, other=0).to(zero.dtype), mask=rm)
            tl.debug_barrier()
            res = _orthogonalize(x_re, x_im, u_base, u_vec, u_el, R, k, zero, COMPLEX, BLOCK_R)
            if res < 0.5:
                # 2. the standard basis vector least covered by the vectors before this one
                best = tl.reduce(zero, 0, _SUM) + float("inf")
                bi = k * 0
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    rm = r < R
                    cover = zero
                    q = u_base
                    for _j in range(0, k):
                        qr = tl.load(q + r * u_el, mask=rm, other=0).to(zero.dtype)
                        cover += qr * qr
                        if COMPLEX:
                            qi = tl.load(q + r * u_el + 1, mask=rm, other=0).to(zero.dtype)
                            cover += qi * qi
                        q += u_vec
                    cover = tl.where(rm, cover, float("inf"))
                    low = tl.reduce(cover, 0, _MIN)
                    first = tl.reduce(tl.where(cover == low, r0 + tl.arange(0, BLOCK_R), R), 0, _MIN)
                    take = low < best
                    bi = tl.where(take, first, bi)
                    best = tl.where(take, low, best)
                for r0 in range(0, R, BLOCK_R):
                    r = r0 + rows
                    rm = r < R
                    tl.store(x_re + r, tl.where(r == bi, 1.0, zero), mask=rm)
                    if COMPLEX:
                        tl.store(x_im + r, zero, mask=rm)
                tl.debug_barrier()
                res = _orthogonalize(x_re, x_im, u_base, u_vec, u_el, R, k, zero, COMPLEX, BLOCK_R)
            # 3. normalized, written back
            inv = 1.0 / res
            for r0 in range(0, R, BLOCK_R):
                r = r0 + rows
                rm = r < R
                xr = tl.load(x_re + r, mask=rm, other=0)
                tl.store(dst + r * u_el, (xr * inv).to(u_ptr.dtype.element_ty), mask=rm)
                if COMPLEX:
                    xi = tl.load(x_im + r, mask=rm, other=0)
                    tl.store(dst + r * u_el + 1, (xi * inv).to(u_ptr.dtype.element_ty), mask=rm)
            tl.debug_barrier()
        dst += u_vec
