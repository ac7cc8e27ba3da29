"""OpInfos of the linear algebra family: matmul, vecdot, tensordot, outer, einsum.

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
