"""Gradient rows for views, indexing and in-place writes through views (autograd/ops/views.py)."""

import numpy as np

import autograd as ag

from ..harness import Const, GradInfo, Sample, rand


def S(*samples):
    return lambda rng: [Sample(tuple(s(rng) if callable(s) else s for s in smp)) for smp in samples]


def R(*shape):
    return lambda rng: rand(rng, *shape)


def _set(key):
    """``y = x * 1; y[key] = v``: the gradient reaches both x's history and the value."""
    def f(x, v):
        y = x * 1
        y[key] = v
        return y * y
    return f


def _set_idx(x, v):
    y = x * 1
    y[ag.tensor([2, 0], device=x.device), 1:] = v
    return y.exp()


def _set_mask(x, v):
    y = x * 1
    y[x.detach() > 0] = v
    return y * 2


def _mul_through_view(x):
    y = x * 1
    y[0].mul_(2)
    y[:, 1:3].mul_(y[:, :2] + 1)
    return y * y


def _view_of_view(x, v):
    y = x * 2
    z = y.t()[1:]
    z[0, ::2] = v
    return y, z


GRAD_INFOS = [
    GradInfo("reshape", lambda x: x.reshape(4, -1), S((R(2, 3, 2),))),
    GradInfo("view", lambda x: x.view(3, 4).view(-1), S((R(12),))),
    GradInfo("view_0d", lambda x: x.view(1, 1), S((R(),))),
    GradInfo("permute", lambda x: x.permute(2, 0, -2), S((R(2, 3, 4),))),
    GradInfo("transpose", lambda x: x.transpose(-1, 0), S((R(2, 3, 4),))),
    GradInfo("t_T_mT", lambda x: (x.t(), x.T, x.mT), S((R(3, 2),))),
    GradInfo("expand", lambda x: x.expand(2, -1, 4), S((R(3, 1),), (R(1, 4),))),
    GradInfo("squeeze_unsqueeze", lambda x: x.squeeze(1).unsqueeze(-1).squeeze(), S((R(2, 1, 3),))),
    GradInfo("flatten_unflatten", lambda x: x.flatten(1).unflatten(1, (2, 6)), S((R(2, 3, 4),))),
    GradInfo("movedim", lambda x: x.movedim((0, 1), (2, 0)), S((R(2, 3, 4),))),
    GradInfo("select_narrow", lambda x: (x.select(-1, 1), x.narrow(0, 1, 2)), S((R(3, 4),))),
    GradInfo("unbind", lambda x: x.unbind(1), S((R(2, 3),))),
    GradInfo("split", lambda x: x.split(2, dim=-1), S((R(2, 5),))),
    GradInfo("split_sizes", lambda x: ag.split(x, [1, 3], 0), S((R(4, 2),))),
    GradInfo("chunk_tensor_split", lambda x: x.chunk(3) + x.tensor_split([1, 4], dim=1), S((R(5, 5),))),
    GradInfo("diagonal", lambda x: x.diagonal(1, -2, -1), S((R(2, 3, 4),))),
    GradInfo("as_strided", lambda x: x.contiguous().as_strided((3, 2), (1, 2), 1), S((R(3, 3),))),
    GradInfo("getitem_basic", lambda x: x[1:, None, ..., ::2], S((R(3, 4, 5),))),
    GradInfo("getitem_negative_step", lambda x: (x[-1], x[:, -3:-1], x[..., ::-2]), S((R(3, 4),))),
    GradInfo("getitem_int_list", lambda x: x[[0, 2, 2, -1]], S((R(4, 3),))),
    GradInfo("getitem_tensors", lambda x, i, j: x[i, :, j],
             S((R(3, 2, 4), Const(np.array([[0, 2], [2, 2]])), Const(np.array([3, 0]))))),
    GradInfo("getitem_mixed", lambda x: x[1, :, [0, 0, 3]], S((R(2, 3, 4),))),
    GradInfo("getitem_mask", lambda x, m: x[m], S((R(3, 4), Const(np.array([True, False, True]))),
                                                  (R(2, 3), Const(np.array([[True, False, True],
                                                                            [False, False, True]]))))),
    GradInfo("setitem_basic", _set((slice(None), 1)), S((R(3, 4), R(3)), (R(3, 4), R(1)))),
    GradInfo("setitem_slice_step", _set((slice(1, None), slice(None, None, 2))), S((R(3, 5), R(3)))),
    GradInfo("setitem_advanced", _set_idx, S((R(3, 4), R(2, 3)), (R(3, 4), R(3)))),
    GradInfo("setitem_mask", _set_mask, S((R(3, 4), R(1)))),
    GradInfo("setitem_mixed", _set((0, slice(None), [1, 2])), S((R(2, 3, 4), R(3, 2)))),
    GradInfo("setitem_view_of_view", _view_of_view, S((R(3, 4), R(2)))),
    GradInfo("inplace_through_views", _mul_through_view, S((R(3, 4),))),
    GradInfo("index_put", lambda x, v: ag.index_put(x, (ag.tensor([0, 2], device=x.device),), v),
             S((R(3, 2), R(2)))),
    GradInfo("index_put_accumulate",
             lambda x, v: x.index_put((ag.tensor([0, 2, 0], device=x.device),), v, accumulate=True),
             S((R(3, 2), R(3, 2)))),
]
