"""LU of a batch of matrices vectorised over the batch, and the row permutations and triangular solves built on
it (helpers of ``linalg_lu.py`` and ``linalg_direct.py``; no registrations here).

Why: LAPACK (through SciPy) factors one matrix per call, and the pivots were applied by a Python loop per row
and matrix (the batched small solves ran at 0.03x NumPy's ``solve`` at 10^4 x 16x16). ``getrf`` takes one of:

- small matrices (``max(M, N) <= _SMALL``) of a batch: unblocked LU with the batch as the last, contiguous axis
  (chunks of ``_CHUNK_BYTES``), each column step a few NumPy calls on whole slabs: the pivot search (LAPACK's
  i?amax: the first row of the largest ``|re| + |im|``; a NaN is taken as the pivot), the row swap (one flat
  gather), the scaling by the pivot's reciprocal (a zero pivot's column is left unscaled and ``info`` gets its
  1-based index, as getf2) and the rank-1 update;
- larger matrices with pivoting: LAPACK's getrf per matrix (faster there than any NumPy formulation);
- larger matrices without pivoting (no LAPACK routine): right-looking LU in panels of ``_NB`` columns whose block
  row ``U12 = L11^-1 A12`` and trailing update ``A22 -= L21 U12`` are batched ``np.matmul``s.

``pivot=False``: no search, no swap, the pivots the identity, and a zero pivot's column divided by it (inf/NaN:
PyTorch's "the output matrix may contain inf or NaN"; info is the same). The pivots are LAPACK's, the same as
``scipy.linalg.lu_factor``'s except where rounding differences decide a near tie (rank-deficient matrices).
``permutation`` composes LAPACK's sequential row swaps (laswp) into one gather index per matrix;
``substitute`` is a row-by-row triangular solve on the whole batch (a zero diagonal gives inf/NaN, as trtrs).
"""

from __future__ import annotations

import numpy as np

_NB = 16  # the panel width: the trailing updates are matmuls of (.., M, 16) @ (.., 16, N)
_CHUNK_BYTES = 1 << 20  # the batch is factored in chunks of about this size (the working set of a column step)


def _magnitude(col: np.ndarray) -> np.ndarray:
    """LAPACK's pivot magnitude: ``|x|`` for real, ``|re| + |im|`` (i?amax's cabs1) for complex."""
    if col.dtype.kind == "c":
        return np.abs(col.real) + np.abs(col.imag)
    return np.abs(col)


def batch_last(a: np.ndarray) -> np.ndarray:
    """The (B, R, C) stack ``a`` as a fresh C-contiguous (R, C, B) array. The transposing copy goes in blocks of
    about 64 KiB (NumPy's one-shot transposing copy of a (10^4, 1024) float32 stack: 67 ms, blocked 11 ms)."""
    b = a.shape[0]
    flat = a.reshape(b, -1)
    out = np.empty((flat.shape[1], b), a.dtype)
    step = max(8, 65536 // max(1, flat.shape[1] * a.itemsize))
    for s in range(0, b, step):
        out[:, s:s + step] = flat[s:s + step].T
    return out.reshape(a.shape[1:] + (b,))


def batch_first(w: np.ndarray) -> np.ndarray:
    """The inverse of ``batch_last``: (R, C, B) to a fresh C-contiguous (B, R, C)."""
    b = w.shape[-1]
    flat = w.reshape(-1, b)
    out = np.empty((b, flat.shape[0]), w.dtype)
    step = max(8, 65536 // max(1, flat.shape[0] * w.itemsize))
    for s in range(0, b, step):
        out[s:s + step] = flat[:, s:s + step].T
    return out.reshape((b,) + w.shape[:-1])


def _factor_chunk(w: np.ndarray, piv: np.ndarray, info: np.ndarray, pivot: bool) -> None:
    """``getrf`` in place on the C-contiguous (B, M, N) chunk ``w``; ``piv`` (B, K) 0-based, ``info`` (B,)."""
    m, n = w.shape[-2:]
    k_all = min(m, n)
    tiny = np.finfo(w.dtype).tiny
    for k0 in range(0, k_all, _NB):
        k1 = min(k0 + _NB, k_all)
        for k in range(k0, k1):
            if pivot:
                p = np.argmax(_magnitude(w[:, k:, k]), axis=1) + k
                piv[:, k] = p
                moved = np.flatnonzero(p != k)
                if moved.size:
                    rows_p = p[moved]
                    row_k = w[moved, k, :].copy()
                    w[moved, k, :] = w[moved, rows_p, :]
                    w[moved, rows_p, :] = row_k
            d = w[:, k, k]
            zero = d == 0
            if zero.any():
                info[(info == 0) & zero] = k + 1
                if pivot:
                    d = np.where(zero, 1, d)
            if k + 1 == m:
                continue
            col = w[:, k + 1:, k]
            big = np.abs(d) >= tiny  # getf2: a reciprocal scaling unless the pivot is tiny
            if big.all():
                col *= (1 / d)[:, None]
            else:
                col[big] *= (1 / d[big])[:, None]
                col[~big] /= d[~big, None]
            l_ = col[:, :, None]
            if k + 1 < k1:  # the panel's columns right of k, every row below k
                w[:, k + 1:, k + 1:k1] -= l_ * w[:, k, None, k + 1:k1]
        if k1 < n:  # U12 = L11^-1 A12 (after the panel's swaps), row by row
            for i in range(k0 + 1, k1):
                w[:, i, None, k1:] -= np.matmul(w[:, i, None, k0:i], w[:, k0:i, k1:])
            if k1 < m:
                w[:, k1:, k1:] -= np.matmul(w[:, k1:, k0:k1], w[:, k0:k1, k1:])


def _factor_small(w: np.ndarray, piv: np.ndarray, info: np.ndarray, pivot: bool) -> None:
    """Unblocked ``getrf`` in place on ``w`` (M, N, B): the batch is the last, contiguous axis, so each column
    step is a few NumPy calls over whole (rows, cols, B) slabs; ``piv`` (K, B) 0-based, ``info`` (B,)."""
    m, n, b = w.shape
    flat = w.reshape(-1)
    rows = np.arange(n)[:, None] * b + np.arange(b)  # the flat index of row 0 of each matrix, (N, B)
    tiny = np.finfo(w.dtype).tiny
    for k in range(min(m, n)):
        if pivot:
            p = np.argmax(_magnitude(w[k:, k, :]), axis=0) + k
            piv[k] = p
            if (p != k).any():  # swap rows k and p[b] of each matrix b (a flat gather: 5x a 3-index one)
                at = rows + p * (n * b)
                row_p = flat[at]
                flat[at] = w[k]
                w[k] = row_p
        d = w[k, k, :]
        zero = d == 0
        if zero.any():
            info[(info == 0) & zero] = k + 1
            if pivot:  # (the column below is zero too; without pivoting it is divided: inf/NaN, as PyTorch's)
                d = np.where(zero, 1, d)
        if k + 1 == m:
            continue
        col = w[k + 1:, k, :]
        big = np.abs(d) >= tiny  # getf2: a reciprocal scaling unless the pivot is tiny
        if big.all():
            col *= 1 / d
        else:
            col[:] = np.where(big, col * (1 / np.where(big, d, 1)), col / d)
        if k + 1 < n:
            w[k + 1:, k + 1:, :] -= col[:, None, :] * w[k, None, k + 1:, :]


# up to this size the batch-last unblocked LU beats LAPACK called per matrix (10^4 matrices on the 2-core VM:
# 4x4 1.4 ms against 24, 16x16 float32 21 ms against 30; 32x32 150 ms against 65); above it one getrf call per
# matrix (pivot) or the blocked LU (pivot=False)
_SMALL = 16


def getrf(a: np.ndarray, pivot: bool = True):
    """``(lu, piv, info)`` of the (B, M, N) stack ``a`` (not modified): ``lu`` a fresh C-contiguous array of
    ``a``'s dtype, ``piv`` (B, min(M, N)) int32 1-based, ``info`` (B,) int32 (0 or the first zero pivot, 1-based)."""
    b, m, n = a.shape
    k = min(m, n)
    info = np.zeros(b, np.int32)
    if not (b and k):
        return np.array(a, order="C"), np.broadcast_to(np.arange(1, k + 1, dtype=np.int32), (b, k)).copy(), info
    if max(m, n) <= _SMALL and b > 1:
        w = batch_last(a)
        piv = np.empty((k, b), np.intp)
        piv[:] = np.arange(k)[:, None]
        step = max(256, _CHUNK_BYTES // (m * n * w.itemsize))
        with np.errstate(all="ignore"):
            for s in range(0, b, step):
                chunk = np.ascontiguousarray(w[..., s:s + step])
                _factor_small(chunk, piv[:, s:s + step], info[s:s + step], pivot)
                w[..., s:s + step] = chunk
        return batch_first(w), (piv.T + 1).astype(np.int32), info
    if pivot:
        import scipy.linalg as _sl
        getrf_ = _sl.lapack.get_lapack_funcs("getrf", (a,))
        lu = np.empty(a.shape, a.dtype)
        piv = np.empty((b, k), np.int32)
        for i in range(b):
            r, pv, code = getrf_(a[i])
            lu[i], piv[i], info[i] = r, pv[:k] + 1, code
        return lu, piv, info
    lu = np.array(a, order="C", copy=True)
    piv = np.empty((b, k), np.intp)
    piv[:] = np.arange(k)
    step = max(1, _CHUNK_BYTES // max(1, m * n * lu.itemsize))
    with np.errstate(all="ignore"):
        for s in range(0, b, step):
            _factor_chunk(lu[s:s + step], piv[s:s + step], info[s:s + step], pivot)
    return lu, (piv + 1).astype(np.int32), info


def permutation(piv0: np.ndarray, rows: int, reverse: bool = False) -> np.ndarray:
    """The gather index (B, rows) of LAPACK's swaps ``piv0`` (B, P), 0-based: swapping rows ``i`` and
    ``piv0[:, i]`` for ``i = 0..P-1`` (``reverse``: ``P-1..0``) takes row ``perm[:, r]`` of the input to row ``r``."""
    b, p = piv0.shape
    perm = np.empty((b, rows), np.intp)
    perm[:] = np.arange(rows)
    batch = np.arange(b)
    for i in (reversed(range(p)) if reverse else range(p)):
        j = piv0[:, i]
        moved = j != i
        if not moved.any():
            continue
        t = perm[:, i].copy()
        perm[:, i] = perm[batch, j]
        perm[batch, j] = t
    return perm


def substitute(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """``X = A^-1 B`` for the triangular (…, N, N) ``a`` (only its upper or lower triangle is read; ``unit``:
    the diagonal is taken as ones) and (…, N, K) ``b``, row by row on the whole batch: with the batch as the
    last axis for batches of small matrices (``SMALL_TRSM``), else one batched matmul per row."""
    n, k = b.shape[-2:]
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    dt = np.result_type(a, b)
    nb = int(np.prod(shape))
    with np.errstate(all="ignore"):
        if nb > 1 and n <= SMALL_TRSM:
            at = batch_last(np.broadcast_to(a, shape + (n, n)).reshape(nb, n, n))
            bt = batch_last(np.broadcast_to(b, shape + (n, k)).reshape(nb, n, k))
            xt = np.empty((n, k, nb), dt)  # (N, K, B); einsum per row measured fastest (10^4 x 32x32, 32 rhs:
            for i in (reversed(range(n)) if upper else range(n)):  # 80 ms; 100 for a loop of axpys, 180 broadcast)
                done = slice(i + 1, n) if upper else slice(0, i)
                acc = bt[i]
                if done.stop > done.start:
                    acc = acc - np.einsum("jb,jkb->kb", at[i, done], xt[done])
                xt[i] = acc if unit else acc / at[i, i]
            return batch_first(xt).reshape(shape + (n, k))
        x = np.empty(shape + (n, k), dt)
        for i in (reversed(range(n)) if upper else range(n)):
            acc = b[..., i, :]
            done = slice(i + 1, n) if upper else slice(0, i)
            if done.stop > done.start:
                acc = acc - np.matmul(a[..., i, None, done], x[..., done, :])[..., 0, :]
            x[..., i, :] = acc if unit else acc / a[..., i, i, None]
    return x


# triangular solves up to this size run here rather than in LAPACK's trtrs/getrs per matrix: SciPy's batched
# solve_triangular loops in Python (10^4 x 16x16 with 1 rhs: 77 ms, here 3), and OpenBLAS's threaded trsm behind
# trtrs/getrs took 15-20 ms per call, whatever the size, while the 2-core VM was oversubscribed (1 us with
# OPENBLAS_NUM_THREADS=1); substitution costs tens of microseconds for one small system
SMALL_TRSM = 32
