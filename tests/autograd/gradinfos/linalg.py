"""Gradient rows for products and linear algebra (autograd/ops/linalg.py, autograd/linalg.py)."""

import importlib
import math

import numpy as np

import autograd as ag

from ..harness import GradInfo, Sample, rand
from .reduction import _spread

LA = importlib.import_module("autograd.linalg")


def E(name, eq, *shapes):
    return GradInfo(f"einsum_{name}", lambda *ops: ag.einsum(eq, *ops),
                    lambda rng: [Sample(tuple(rand(rng, *s) for s in shapes))])


def _sv(rng, *shape, values=(2.5, 1.6, 0.9, 0.4)):
    """Random matrices with well-separated singular values ``values[:min(M, N)]`` (SVD gradients are defined
    for distinct nonzero singular values; the F_ij = 1 / (s_j^2 - s_i^2) terms stay moderate)."""
    *batch, m, n = shape
    k = min(m, n)
    out = np.empty(shape)
    for idx in np.ndindex(*batch):
        u, _ = np.linalg.qr(rng.standard_normal((m, m)))
        v, _ = np.linalg.qr(rng.standard_normal((n, n)))
        out[idx] = (u[:, :k] * np.asarray(values[:k])) @ v[:, :k].T
    return out


def _svd_invariants(A, full_matrices=False):  # noqa: N803
    """Loss terms of svd that do not depend on the signs of the singular vectors (what has a gradient): U S Vh,
    S, u_1 v_1^T and the projectors U U^T, Vh^T Vh onto the leading two singular spaces."""
    U, S, Vh = LA.svd(A, full_matrices=full_matrices)  # noqa: N806
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]  # noqa: N806
    return (ag.matmul(U * S.unsqueeze(-2), Vh), S, U[..., :1] * Vh[..., :1, :],
            ag.matmul(U[..., :2], U[..., :2].mT), ag.matmul(Vh[..., :2, :].mT, Vh[..., :2, :]))


GRAD_INFOS = [
    GradInfo("matmul", lambda a, b: ag.matmul(a, b), lambda rng: [
        Sample((rand(rng, 3, 3), rand(rng, 3, 2))), Sample((rand(rng, 3), rand(rng, 2, 3, 3))),
        Sample((rand(rng, 2, 1, 3, 3), rand(rng, 3, 3, 2))), Sample((rand(rng, 2), rand(rng, 2))),
        Sample((rand(rng, 2, 3, 3), rand(rng, 3)))]),
    GradInfo("mm_bmm_mv_dot", lambda a, b, c, v: ag.mm(a, b).sum() + ag.bmm(c, c.mT).sum() + ag.mv(a, v).sum()
             + ag.dot(v, v), lambda rng: [Sample((rand(rng, 3, 3), rand(rng, 3, 2), rand(rng, 2, 3, 3),
                                                  rand(rng, 3)))]),
    GradInfo("outer", lambda a, b: ag.outer(a, b), lambda rng: [Sample((rand(rng, 3), rand(rng, 2)))]),
    GradInfo("ger", lambda a, b: a.ger(b), lambda rng: [Sample((rand(rng, 1), rand(rng, 3)))]),
    GradInfo("inner", lambda a, b: ag.inner(a, b), lambda rng: [
        Sample((rand(rng, 3, 3), rand(rng, 2, 2, 3))), Sample((rand(rng, 3), rand(rng, 3))),
        Sample((rand(rng), rand(rng, 2, 3)))]),
    GradInfo("tensordot", lambda a, b, dims: ag.tensordot(a, b, dims), lambda rng: [
        Sample((rand(rng, 2, 3, 3), rand(rng, 3, 3, 2), 2)), Sample((rand(rng, 2, 3, 3), rand(rng, 3, 2, 3),
                                                                     ([1, -1], [2, 0]))),
        Sample((rand(rng, 3), rand(rng, 2), 0))]),
    E("mm", "ij,jk->ik", (3, 3), (3, 2)), E("bmm", "bij,bjk->bik", (2, 3, 3), (2, 3, 3)),
    E("diag", "ii->i", (3, 3)), E("trace", "ii", (3, 3)), E("implicit", "ij,kj", (3, 3), (2, 3)),
    E("ellipsis", "...ij,...jk->...ik", (2, 1, 3, 3), (3, 3, 2)), E("outer3", "i,j,k->ijk", (2,), (3,), (2,)),
    E("sum_out", "ijk->j", (2, 3, 3)), E("chain", "ij,jk,kl->li", (2, 3), (3, 3), (3, 2)),
    E("batch_diag", "bii,bi->b", (2, 3, 3), (2, 3)), E("broadcast1", "ij,ij->i", (1, 3), (3, 3)),
    GradInfo("addmm", lambda i, a, b, **k: ag.addmm(i, a, b, **k), lambda rng: [
        Sample((rand(rng, 3, 2), rand(rng, 3, 3), rand(rng, 3, 2))),
        Sample((rand(rng, 2), rand(rng, 3, 3), rand(rng, 3, 2)), {"beta": 0.5, "alpha": -2.0})]),
    GradInfo("addmv", lambda i, a, v, **k: i.addmv(a, v, **k), lambda rng: [
        Sample((rand(rng, 3), rand(rng, 3, 3), rand(rng, 3)), {"beta": 2.0}),
        Sample((rand(rng, 1), rand(rng, 3, 3), rand(rng, 3)))]),
    GradInfo("addbmm", lambda i, a, b, **k: ag.addbmm(i, a, b, **k), lambda rng: [
        Sample((rand(rng, 3, 2), rand(rng, 2, 3, 3), rand(rng, 2, 3, 2)), {"alpha": 0.5})]),
    GradInfo("baddbmm", lambda i, a, b, **k: ag.baddbmm(i, a, b, **k), lambda rng: [
        Sample((rand(rng, 2, 3, 2), rand(rng, 2, 3, 3), rand(rng, 2, 3, 2))),
        Sample((rand(rng, 3, 1), rand(rng, 2, 3, 3), rand(rng, 2, 3, 2)), {"beta": -1.0, "alpha": 3.0})]),
    GradInfo("vecdot", lambda a, b, **k: ag.vecdot(a, b, **k), lambda rng: [
        Sample((rand(rng, 3, 3), rand(rng, 3))), Sample((rand(rng, 3, 3), rand(rng, 3, 1)), {"dim": 0})]),
    GradInfo("kron", lambda a, b: ag.kron(a, b), lambda rng: [
        Sample((rand(rng, 2, 3), rand(rng, 3, 2))), Sample((rand(rng, 3), rand(rng, 2, 2)))]),
    GradInfo("trace", lambda a: ag.trace(a), lambda rng: [Sample((rand(rng, 2, 3),)), Sample((rand(rng, 3, 3),))]),
    GradInfo("diag", lambda a, *k: ag.diag(a, *k), lambda rng: [
        Sample((rand(rng, 3),)), Sample((rand(rng, 3), 1)), Sample((rand(rng, 2, 3), -1)),
        Sample((rand(rng, 3, 2),)), Sample((rand(rng, 2), -2))]),
    GradInfo("linalg_vector_norm", lambda x, *a, **k: LA.vector_norm(x, *a, **k), lambda rng: [
        Sample((rand(rng, 3, 3),)), Sample((rand(rng, 3, 3), 3.0, -1)), Sample((rand(rng, 2, 3, 3), 2, (0, 2), True))]),
    GradInfo("linalg_matrix_norm", lambda x, *a, **k: LA.matrix_norm(x, *a, **k), lambda rng: [
        Sample((rand(rng, 3, 3),)), Sample((_spread(rng, 2, 3, 3) + 0.05, 1)),
        Sample((_spread(rng, 3, 3) + 0.05, -math.inf), {"keepdim": True}),
        Sample((_spread(rng, 3, 2, 3) + 0.05, -1, (0, 2)))]),
    GradInfo("linalg_matrix_norm_svd", lambda x, *a, **k: LA.matrix_norm(x, *a, **k), lambda rng: [
        Sample((_sv(rng, 3, 3), "nuc")), Sample((_sv(rng, 2, 4, 3), 2)),
        Sample((_sv(rng, 3, 4), -2), {"keepdim": True}),
        Sample((_sv(rng, 3, 2, 4).transpose(0, 2, 1), "nuc", (0, 2)))], atol=1e-4),
    GradInfo("linalg_svdvals", lambda x: LA.svdvals(x), lambda rng: [
        Sample((_sv(rng, 3, 3),)), Sample((_sv(rng, 2, 4, 3),)), Sample((_sv(rng, 2, 4),))], atol=1e-4),
    GradInfo("linalg_svd", _svd_invariants, lambda rng: [
        Sample((_sv(rng, 3, 3),)), Sample((_sv(rng, 4, 3),), {"full_matrices": True}), Sample((_sv(rng, 2, 2, 4),))],
             atol=1e-4),
    GradInfo("norm_nuc", lambda x, *a, **k: x.norm("nuc", *a, **k), lambda rng: [
        Sample((_sv(rng, 3, 4),)), Sample((_sv(rng, 2, 3, 3),), {"dim": (-1, -2), "keepdim": True})], atol=1e-4),
    GradInfo("linalg_norm", lambda x, *a, **k: LA.norm(x, *a, **k), lambda rng: [
        Sample((rand(rng, 3, 3),)), Sample((_spread(rng, 3, 3) + 0.05, math.inf)), Sample((rand(rng, 2), 3)),
        Sample((rand(rng, 2, 3, 3),), {"dim": (1, 2)}), Sample((rand(rng, 2, 3, 3),), {"dim": 1})]),
    GradInfo("linalg_vecdot", lambda a, b: LA.vecdot(a, b, dim=-2), lambda rng: [
        Sample((rand(rng, 3, 3), rand(rng, 2, 3, 3)))]),
    # the top-level names (torch.det, ...): thin forms of autograd.linalg's, each through its own entry once
    GradInfo("det", lambda a: ag.det(a), lambda rng: [
        Sample((_wellcond(rng, 3, 3),)), Sample((_wellcond(rng, 2, 3, 3),))]),
    GradInfo("slogdet", lambda a: ag.slogdet(a)[1], lambda rng: [Sample((_wellcond(rng, 3, 3),))]),
    GradInfo("logdet", lambda a: ag.logdet(a @ a.mT), lambda rng: [Sample((_wellcond(rng, 3, 3),))]),
    GradInfo("inverse", lambda a: a.inverse(), lambda rng: [Sample((_wellcond(rng, 2, 3, 3),))]),
    GradInfo("matrix_power", lambda a: ag.matrix_power(a, -2), lambda rng: [Sample((_wellcond(rng, 3, 3),))]),
    GradInfo("pinverse", lambda a: a.pinverse(), lambda rng: [Sample((_sv(rng, 3, 4),))], cuda=False),
    GradInfo("cholesky", lambda a: ag.cholesky(a @ a.mT + 3 * ag.eye(3, dtype=a.dtype, device=a.device),
                                               upper=True), lambda rng: [Sample((rand(rng, 3, 3),))]),
]


def _wellcond(rng, *shape):
    """Random matrices kept away from singular (a multiple of the identity added)."""
    return rand(rng, *shape) + 3 * np.eye(shape[-1])
