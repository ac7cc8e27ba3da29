"""Gradient rows for shape and data-movement ops (autograd/ops/shape.py)."""

import numpy as np

import autograd as ag

from ..harness import Const, GradInfo, Sample, rand


def S(*samples):
    return lambda rng: [Sample(tuple(s(rng) if callable(s) else s for s in smp)) for smp in samples]


def R(*shape):
    return lambda rng: rand(rng, *shape)


GRAD_INFOS = [
    GradInfo("cat", lambda a, b, c: ag.cat([a, b, c], dim=1),
             S((R(2, 3), R(2, 1), R(2, 4)))),
    GradInfo("cat_neg_dim_empty", lambda a, b: ag.cat([a, ag.zeros(0, dtype=a.dtype, device=a.device), b], -2),
             S((R(1, 3), R(2, 3)))),
    GradInfo("cat_promote", lambda a: ag.cat([a, ag.tensor([[1, 2, 3]], device=a.device)], 0), S((R(2, 3),))),
    GradInfo("stack", lambda a, b: ag.stack([a, b], dim=-1), S((R(3, 2), R(3, 2)), (R(), R()))),
    GradInfo("hstack", lambda a, b: ag.hstack([a, b]), S((R(3), R(2)), (R(2, 1), R(2, 3)))),
    GradInfo("vstack", lambda a, b: ag.vstack([a, b]), S((R(3), R(2, 3)))),
    GradInfo("dstack", lambda a, b: ag.dstack([a, b]), S((R(3), R(3)), (R(2, 3), R(2, 3, 2)))),
    GradInfo("column_stack", lambda a, b: ag.column_stack([a, b]), S((R(3), R(3, 2)))),
    GradInfo("flip", lambda x: ag.flip(x, (0, -1)), S((R(3, 2, 5),), (R(),))),
    GradInfo("fliplr_flipud", lambda x: x.fliplr().flipud(), S((R(3, 4),))),
    GradInfo("roll", lambda x: ag.roll(x, (1, -2), (0, -1)), S((R(3, 5),))),
    GradInfo("roll_flat", lambda x: x.roll(4), S((R(3, 5),))),
    GradInfo("repeat", lambda x: x.repeat(2, 1, 3), S((R(3, 2),))),
    GradInfo("repeat_0d", lambda x: x.repeat(3, 2), S((R(),))),
    GradInfo("tile", lambda x: ag.tile(x, (2,)), S((R(2, 3),))),
    GradInfo("repeat_interleave", lambda x: x.repeat_interleave(3, dim=-1), S((R(2, 3),))),
    GradInfo("repeat_interleave_flat", lambda x: ag.repeat_interleave(x, 2), S((R(2, 3),))),
    GradInfo("repeat_interleave_tensor",
             lambda x: ag.repeat_interleave(x, ag.tensor([2, 0, 3], device=x.device), dim=0), S((R(3, 2),))),
    GradInfo("tril", lambda x: ag.tril(x, -1), S((R(4, 3),), (R(2, 3, 5),))),
    GradInfo("triu", lambda x: x.triu(diagonal=1), S((R(3, 4),))),
    GradInfo("broadcast_tensors", lambda a, b: ag.broadcast_tensors(a, b), S((R(3, 1), R(4)))),
    GradInfo("meshgrid_xy", lambda a, b: ag.meshgrid(a, b, indexing="xy"), S((R(3), R(2)))),
    GradInfo("meshgrid_ij", lambda a, b, c: ag.meshgrid([a, b, c], indexing="ij"), S((R(2), R(3), R()))),
    GradInfo("atleast_3d", lambda a, b: ag.atleast_3d(a, b), S((R(3), R(2, 3)))),
    GradInfo("diag_embed", lambda x: ag.diag_embed(x), S((R(2, 3),))),
    GradInfo("diag_embed_offset", lambda x: ag.diag_embed(x, offset=-1, dim1=0, dim2=2), S((R(2, 3),))),
    GradInfo("rot90", lambda x: (ag.rot90(x), ag.rot90(x, 2, (1, 0)), ag.rot90(x, -1)), S((R(2, 3),))),
    GradInfo("unfold", lambda x: x.unfold(-1, 3, 2), S((R(2, 7),), (R(5),))),
    GradInfo("unfold_overlap", lambda x: x.unfold(0, 2, 1), S((R(4, 3),))),
    GradInfo("diff", lambda x: (ag.diff(x), x.diff(n=2, dim=0), ag.diff(x, n=7)), S((R(3, 5),), (R(7),))),
    GradInfo("diff_prepend_append", lambda x, p, a: ag.diff(x, n=3, dim=-2, prepend=p, append=a),
             S((R(2, 3), R(1, 3), R(2, 3)))),
    GradInfo("pad_constant", lambda x: ag.pad(x, (1, 2, 0, 1), value=0.5), S((R(2, 3),))),
    GradInfo("pad_crop", lambda x: ag.pad(x, (-1, 2, 1, -1)), S((R(3, 4),))),
    GradInfo("pad_reflect", lambda x: ag.pad(x, (2, 1, 1, 2), mode="reflect"), S((R(2, 3, 4),))),
    GradInfo("pad_replicate", lambda x: ag.pad(x, (3, 1), mode="replicate"), S((R(2, 3),))),
    GradInfo("pad_circular", lambda x: ag.pad(x, (2, 3, 1, 0), mode="circular"), S((R(2, 3, 4),))),
]

_ = (np, Const)
