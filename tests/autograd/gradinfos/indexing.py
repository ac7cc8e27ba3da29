"""Gradient rows for indexing ops (autograd/ops/indexing.py): repeated indices where gradients accumulate."""

import numpy as np

import autograd as ag

from ..harness import Const, GradInfo, Sample, rand


def S(*samples):
    return lambda rng: [Sample(tuple(s(rng) if callable(s) else s for s in smp)) for smp in samples]


def R(*shape):
    return lambda rng: rand(rng, *shape)


def I(*rows):  # noqa: E743 - an index constant
    return Const(np.array(rows, dtype=np.int64))


def M(*rows):
    return Const(np.array(rows, dtype=bool))


def _distinct(rng, *shape):  # well separated values (amax/amin ties are measure-zero)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) + rng.uniform(0.2, 0.4, shape)) / 4.0


def _nonzero(rng, *shape):
    x = rand(rng, *shape)
    return np.where(np.abs(x) < 0.3, 0.7, x)


_IDX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])  # repeats in every column


GRAD_INFOS = [
    GradInfo("gather", lambda x, i: ag.gather(x, 0, i), S((R(3, 4), Const(_IDX)), (R(3, 5), Const(_IDX)))),
    GradInfo("gather_neg_dim", lambda x, i: x.gather(-1, i), S((R(2, 3), I([0, 0, 2], [1, 2, 1])))),
    GradInfo("scatter", lambda x, i, s: ag.scatter(x, 1, i, s), S((R(2, 4), I([0, 3], [1, 2]), R(2, 2)))),
    GradInfo("scatter_big_src", lambda x, i, s: x.scatter(0, i, s), S((R(3, 2), I([2, 0]), R(2, 3)))),
    GradInfo("scatter_value", lambda x, i: ag.scatter(x, -1, i, value=0.5), S((R(2, 4), I([0, 3], [1, 2])))),
    GradInfo("scatter_add", lambda x, i, s: ag.scatter_add(x, 0, i, s), S((R(3, 4), Const(_IDX), R(2, 4)))),
    GradInfo("scatter_add_src_only", lambda i, s: ag.zeros(3, 5, dtype=s.dtype, device=s.device).scatter_add(0, i, s),
             S((Const(_IDX), R(2, 4)))),
    GradInfo("scatter_reduce_sum", lambda x, i, s: x.scatter_reduce(0, i, s, "sum", include_self=False),
             S((R(3, 4), Const(_IDX), R(2, 4)))),
    GradInfo("scatter_reduce_mean", lambda x, i, s: x.scatter_reduce(0, i, s, "mean"),
             S((R(3, 4), Const(_IDX), R(2, 4)))),
    GradInfo("scatter_reduce_mean_excl", lambda x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False),
             S((R(3, 4), Const(_IDX), R(2, 4)))),
    GradInfo("scatter_reduce_amax", lambda x, i, s: x.scatter_reduce(0, i, s, "amax"),
             lambda rng: [Sample((_distinct(rng, 3, 4), Const(_IDX), _distinct(rng, 2, 4)))]),
    GradInfo("scatter_reduce_amin", lambda x, i, s: x.scatter_reduce(1, i, s, "amin", include_self=False),
             lambda rng: [Sample((_distinct(rng, 2, 3), Const(np.array([[0, 0, 2], [1, 1, 1]])),
                                  _distinct(rng, 2, 3)))]),
    GradInfo("scatter_reduce_prod", lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
             lambda rng: [Sample((_nonzero(rng, 3, 4), Const(_IDX), _nonzero(rng, 2, 4)))]),
    GradInfo("index_select", lambda x, i: ag.index_select(x, -1, i), S((R(2, 3), I(2, 0, 2, 2)), (R(), I(0)))),
    GradInfo("index_add", lambda x, i, s: ag.index_add(x, 0, i, s, alpha=-1.5), S((R(3, 2), I(2, 0, 2), R(3, 2)))),
    GradInfo("index_copy", lambda x, i, s: ag.index_copy(x, 1, i, s), S((R(2, 4), I(3, 0), R(2, 2)))),
    GradInfo("index_fill", lambda x, i: x.index_fill(0, i, -2.0), S((R(3, 2), I(2, 0, 2)))),
    GradInfo("index_fill_tensor", lambda x, i, v: x.index_fill(-1, i, v), S((R(3, 4), I(1, 3, 1), R()))),
    GradInfo("masked_fill", lambda x, m: ag.masked_fill(x, m, 0.5),
             S((R(3, 4), M([True, False, True, True])), (R(2, 1), M([[True, False, True], [False] * 3])))),
    GradInfo("masked_fill_tensor", lambda x, m, v: x.masked_fill(m, v), S((R(2, 3), M([[True], [False]]), R()))),
    GradInfo("masked_select", lambda x, m: ag.masked_select(x, m),
             S((R(2, 3), M([[True, False, True], [False, True, True]])), (R(3, 1), M([True, False])))),
    GradInfo("masked_scatter", lambda x, m, s: ag.masked_scatter(x, m, s),
             S((R(2, 3), M([[True, False, True], [False, False, True]]), R(2, 2)), (R(3), M([[True], [False]]),
                                                                                     R(5)))),
    GradInfo("take", lambda x, i: ag.take(x, i), S((R(3, 4), I([0, -1, 5], [5, 11, 0])))),
    GradInfo("put", lambda x, i, s: ag.put(x, i, s), S((R(3, 4), I(1, -1, 6), R(3)))),
    GradInfo("put_accumulate", lambda x, i, s: x.put(i, s, accumulate=True), S((R(2, 3), I(1, 4, 1), R(3)))),
    GradInfo("take_along_dim", lambda x, i: ag.take_along_dim(x, i, dim=1),
             S((R(3, 4), Const(np.array([[0, 3, 3]]))), (R(1, 4), Const(np.array([[1], [2], [1]]))))),
    GradInfo("take_along_dim_flat", lambda x, i: x.take_along_dim(i), S((R(2, 3), I(5, 0, 5)))),
]
