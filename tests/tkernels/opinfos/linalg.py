"""OpInfos of the linear algebra family: matmul, vecdot, tensordot, outer, einsum, svd, svdvals.

References compute in float64 (integers stay integers, exact). Tolerances (rtol, atol):

- float32: rtol 1e-5; atol 1e-5 * sqrt(K_MAX) (K_MAX = 129, the largest contraction in the samples): a
  different summation order (BLAS blocking, a GPU kernel's tiles) moves a sum of K products of size ~9 by
  about sqrt(K) * eps32 * 9, which matters where the result cancels to near zero.
- float16 / bfloat16: the inputs are exactly representable and ``ref_arg`` hands the reference the same
  (upcast) values, so with float32 accumulation the only error is the final rounding, <= 1 ulp of the output
  whatever the accumulation order: rtol = 2 ulps (float16 2^-10 ~ 1e-3 -> 2e-3; bfloat16 2^-7 -> 1.6e-2),
  atol = 1 ulp at magnitude 1 for results that cancel. A kernel accumulating in half precision drifts by
  ~sqrt(K) ulps of the partial sums (~5e-3 relative at K = 129 in float16) and fails, as it should. (A
  float32 reference from unrounded inputs would need atol ~1e-2 * sqrt(K) for bfloat16; we avoid that.)
- einsum with halves rounds between its pairwise steps (like PyTorch, which contracts in the input dtype),
  so it gets twice the half tolerances.
"""

import math

import numpy as np

import tkernels as tk

from ..harness import FLOATS, OpInfo, Sample, make

K_MAX = 129
MM_DTYPES = FLOATS + ("int32", "int64")
MM_TOLS = {"float32": (1e-5, 1e-5 * math.sqrt(K_MAX)), "float64": (1e-7, 1e-7),
           "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}
EINSUM_TOLS = {**MM_TOLS, "float16": (4e-3, 2e-3), "bfloat16": (3.2e-2, 2e-2)}


def _f64(fn):
    """The reference in float64 for float inputs (exact in integers)."""
    def ref(*args, **kwargs):
        args = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
        return fn(*args, **kwargs)

    return ref


MATMUL_SHAPES = (
    ((7,), (7,)),                 # 1-D @ 1-D -> 0-d
    ((7,), (7, 5)),               # 1-D @ 2-D
    ((5, 7), (7,)),               # 2-D @ 1-D
    ((1, 1), (1, 1)),
    ((7, 127), (127, 129)),
    ((129, 7), (7, 1)),
    ((1, 129), (129, 7)),
    ((2, 1, 3, 4), (5, 4, 2)),    # batch broadcast
    ((3, 4), (2, 4, 5)),          # 2-D against a batch
    ((2, 3, 129), (129, 7)),      # a batch against a shared weight (the folded GEMM)
    ((4,), (2, 4, 3)),            # 1-D against a batch
    ((2, 3, 4), (4,)),
    ((3, 0), (0, 4)),             # K = 0: zeros
    ((0, 5), (5, 3)),             # M = 0
    ((3, 5), (5, 0)),             # N = 0
    ((2, 0, 3), (3, 4)),          # empty batch entry
    ((0,), (0,)),                 # K = 0, 1-D: a 0-d zero
)


def _matmul_samples(rng, dtype):
    for s1, s2 in MATMUL_SHAPES:
        yield Sample((make(rng, s1, dtype), make(rng, s2, dtype)))


def _matmul_out(x1, x2):
    out = tk.empty(np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2]) + (x1.shape[-2], x2.shape[-1]),
                   dtype=tk.result_type(x1, x2), device=x1.device)
    r = tk.matmul(x1, x2, out=out)
    assert r is out
    return r


def _matmul_out_samples(rng, dtype):
    for s1, s2 in (((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 0), (0, 2)), ((7, 129), (129, 1))):
        yield Sample((make(rng, s1, dtype), make(rng, s2, dtype)))


def _vecdot_samples(rng, dtype):
    for s1, s2, ax in (((7,), (7,), -1), ((3, 129), (129,), -1), ((2, 1, 5), (3, 5), -1), ((4, 5, 3), (5, 3), -2),
                       ((0, 4), (0, 4), -1), ((3, 0), (3, 0), -1), ((1,), (127, 1), -1)):
        yield Sample((make(rng, s1, dtype), make(rng, s2, dtype)), dict(axis=ax))


def _vecdot_ref(a, b, axis=-1):
    return np.sum(a * b, axis=axis)


def _tensordot_samples(rng, dtype):
    cases = (((3, 4, 5), (4, 5, 6), 2), ((3, 7), (7, 2), 1), ((3,), (4,), 0), ((), (3,), 0),
             ((4, 3, 5), (3, 6, 4), ([1, 0], [0, 2])), ((2, 7), (7, 3), ([-1], [0])), ((0, 4), (4, 3), 1),
             ((3, 0), (0, 2), 1), ((1, 129), (129, 1), 1))
    for s1, s2, axes in cases:
        yield Sample((make(rng, s1, dtype), make(rng, s2, dtype)), dict(axes=axes))


def _outer_samples(rng, dtype):
    for s1, s2 in (((7,), (5,)), ((1,), (129,)), ((0,), (3,)), ((127,), (1,))):
        yield Sample((make(rng, s1, dtype), make(rng, s2, dtype)))


EINSUM_CASES = (
    ("ij,jk->ik", (7, 5), (5, 3)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("ij,kj", (3, 4), (5, 4)),                   # implicit output: ik
    ("Ab,bC->AC", (3, 4), (4, 2)),               # upper-case labels
    ("ii->i", (4, 4)),                           # diagonal
    ("ii", (5, 5)),                              # trace (implicit: 0-d)
    ("bii->bi", (2, 3, 3)),
    ("iij->j", (3, 3, 4)),
    ("ij->ji", (3, 7)),                          # a permutation (returns a copy)
    ("ij->", (3, 4)),                            # total sum
    ("ij->j", (1, 129)),
    ("i->", (0,)),                               # empty sum: 0
    ("...ij,...jk->...ik", (2, 3, 4), (4, 5)),   # ellipsis broadcasting
    ("i...,...->...", (3, 2), (2,)),
    ("...ii->...i", (2, 3, 3)),
    ("i,i->", (7,), (7,)),
    ("i,j->ij", (3,), (4,)),
    ("ij,ij->ij", (3, 129), (3, 129)),           # Hadamard: every label a batch label
    ("ij,j->i", (3, 4), (1,)),                   # a size-1 label broadcasts
    ("ijk,ikl->jl", (2, 3, 4), (2, 4, 5)),       # two contracted labels
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),    # three operands, left to right
    ("ij,jk->", (3, 0), (0, 2)),
)


def _einsum_samples(rng, dtype):
    for eq, *shapes in EINSUM_CASES:
        yield Sample((eq,) + tuple(make(rng, s, dtype, low=-2, high=2) for s in shapes), desc=eq)


def _einsum_ref(eq, *ops):
    return np.asarray(np.einsum(eq, *ops))


OP_INFOS = [
    OpInfo("matmul", tk.matmul, _f64(np.matmul), _matmul_samples, MM_DTYPES, tols=MM_TOLS),
    OpInfo("matmul_out", _matmul_out, _f64(np.matmul), _matmul_out_samples, MM_DTYPES, tols=MM_TOLS,
           differentiable=False),
    OpInfo("vecdot", tk.vecdot, _f64(_vecdot_ref), _vecdot_samples, MM_DTYPES, tols=MM_TOLS),
    OpInfo("tensordot", tk.tensordot, _f64(np.tensordot), _tensordot_samples, MM_DTYPES, tols=MM_TOLS),
    OpInfo("outer", tk.outer, _f64(np.outer), _outer_samples, MM_DTYPES, tols=MM_TOLS),
    OpInfo("einsum", tk.einsum, _f64(_einsum_ref), _einsum_samples, MM_DTYPES, tols=EINSUM_TOLS),
]


# ------------------------------------------------------------------------------------------------------- svd
# Singular vectors are unique only up to sign (and rotations within repeated singular values), so the svd rows
# compare S with NumPy's, rebuild U S Vh against the input and check that U and Vh are orthonormal, all relative
# to the largest singular value. The samples are random (distinct, nonzero singular values); halves round U, S
# and Vh to their precision (a few ulps of 1).
SVD_TOLS = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2)}
SVD_SHAPES = ((1, 1), (7, 5), (5, 7), (2, 3, 4), (129, 3), (3, 129), (4, 4), (0, 3), (2, 0, 3), (3, 1))


def _svd_samples(rng, dtype):
    for s in SVD_SHAPES:
        yield Sample((make(rng, s, dtype),), dict(full_matrices=bool(len(s) % 2) or s[-1] == 4))
    yield Sample((make(rng, (7, 5), dtype),), dict(full_matrices=True))
    yield Sample((make(rng, (3, 5), dtype),), dict(full_matrices=False))


def _svd_ref(a, full_matrices=True):
    return a.astype(np.float64), full_matrices


def _compare_svd(result, expected, dtype, rtol, atol, msg):
    a, full = expected
    assert isinstance(result, tuple) and len(result) == 3, f"{msg}: expected (U, S, Vh)"
    assert type(result).__name__ == "SVDResult" and result.S is result[1], msg
    u, s, vh = (np.asarray(r.to("cpu").numpy()).astype(np.float64) for r in result)
    assert all(r.dtype == result[0].dtype for r in result), msg
    *batch, m, n = a.shape
    k = min(m, n)
    assert u.shape == (*batch, m, m if full else k) and s.shape == (*batch, k), f"{msg}: {u.shape}, {s.shape}"
    assert vh.shape == (*batch, n if full else k, n), f"{msg}: {vh.shape}"
    want = np.linalg.svd(a, compute_uv=False)
    scale = max(1.0, float(want.max())) if want.size else 1.0
    np.testing.assert_allclose(s, want, rtol=rtol, atol=atol * scale, err_msg=msg + " S")
    rebuilt = (u[..., :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=atol * scale * 4, rtol=0, err_msg=msg + " U S Vh")
    for q, name in ((u, "U"), (np.swapaxes(vh, -1, -2), "Vh")):
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2]
                                   + (q.shape[-1],) * 2), atol=atol * 4, rtol=0, err_msg=f"{msg} {name} orthonormal")


def _svdvals_samples(rng, dtype):
    for s in SVD_SHAPES:
        yield Sample((make(rng, s, dtype),))


def _svdvals_ref(a):
    return np.linalg.svd(a.astype(np.float64), compute_uv=False)


OP_INFOS += [
    OpInfo("svd", tk.linalg.svd, _svd_ref, _svd_samples, FLOATS, tols=SVD_TOLS, compare=_compare_svd),
    OpInfo("svdvals", tk.linalg.svdvals, _svdvals_ref, _svdvals_samples, FLOATS, tols=SVD_TOLS),
]
