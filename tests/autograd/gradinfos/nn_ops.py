"""Gradient rows for the fused nn ops (autograd/ops/nn_ops.py, autograd/ops/conv_ops.py)."""

import numpy as np

import autograd as ag

from ..harness import Const, GradInfo, Sample, pos, rand


def _one(*args, **kwargs):
    return lambda rng: [Sample(tuple(a(rng) if callable(a) else a for a in args),
                               {k: (v(rng) if callable(v) else v) for k, v in kwargs.items()})]


def _r(*shape):
    return lambda rng: rand(rng, *shape)


def _p(*shape):
    return lambda rng: pos(rng, *shape, low=0.5, high=1.5)


def _ints(high, *shape, ignore=None):
    def f(rng):
        t = rng.integers(0, high, size=shape)
        if ignore is not None:
            t.flat[0] = ignore
        return Const(t)
    return f


def _probs(*shape):
    def f(rng):
        t = rng.uniform(0.1, 1.0, size=shape)
        return t / t.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    return f


def _distinct(*shape):  # a permutation of spread-out values: max pooling has a unique, stable argmax
    def f(rng):
        return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1
    return f


def _dropout(x):
    ag.manual_seed(0)  # both gradcheck evaluations draw the same mask
    return ag.dropout(x, 0.4)


def _sdpa_dropout(q, k, v):
    ag.manual_seed(0)
    return ag.scaled_dot_product_attention(q, k, v, dropout_p=0.3)


def _bn_train(x, w, b):
    rm = ag.zeros(x.shape[1], dtype=x.dtype, device=x.device)
    rv = ag.ones(x.shape[1], dtype=x.dtype, device=x.device)
    return ag.batch_norm(x, rm, rv, w, b, training=True)


def _bn_eval(x, w, b):
    rm = ag.tensor([0.1, -0.2, 0.3], dtype=x.dtype, device=x.device)
    rv = ag.tensor([0.5, 1.5, 2.0], dtype=x.dtype, device=x.device)
    return ag.batch_norm(x, rm, rv, w, b, training=False)


G = GradInfo

GRAD_INFOS = [
    G("softmax", lambda x: ag.softmax(x, -1), lambda rng: [Sample((rand(rng, 3, 5),)), Sample((rand(rng),))]),
    G("softmax_dim0", lambda x: ag.softmax(x, 0), _one(_r(4, 3))),
    G("log_softmax", lambda x: ag.log_softmax(x, 1), lambda rng: [Sample((rand(rng, 2, 4, 3),)),
                                                                  Sample((rand(rng, 5, 1),))]),
    G("layer_norm", lambda x, w, b: ag.layer_norm(x, (5,), w, b), _one(_r(3, 5), _p(5), _r(5))),
    G("layer_norm_2d_noaffine", lambda x: ag.layer_norm(x, (3, 4), eps=1e-3), _one(_r(2, 3, 4))),
    G("rms_norm", lambda x, w: ag.rms_norm(x, 4, w, eps=1e-4), _one(_r(3, 4), _p(4))),
    G("rms_norm_noweight", lambda x: ag.rms_norm(x, [2, 3]), _one(_r(2, 2, 3))),
    G("group_norm", lambda x, w, b: ag.group_norm(x, 2, w, b), _one(_r(2, 4, 3), _p(4), _r(4))),
    G("batch_norm_train", _bn_train, _one(_r(4, 3, 2), _p(3), _r(3))),
    G("batch_norm_eval", _bn_eval, _one(_r(2, 3, 2), _p(3), _r(3))),
    G("cross_entropy", lambda x, t: ag.cross_entropy(x, t), _one(_r(4, 5), _ints(5, 4))),
    G("cross_entropy_weight_ignore_smooth",
      lambda x, t, w: ag.cross_entropy(x, t, w, ignore_index=1, label_smoothing=0.2),
      _one(_r(5, 3), lambda rng: Const(np.array([0, 1, 2, 2, 1])), lambda rng: Const(pos(rng, 3)))),
    G("cross_entropy_nd_none", lambda x, t: ag.cross_entropy(x, t, reduction="none"),
      _one(_r(2, 3, 2, 2), _ints(3, 2, 2, 2))),
    G("cross_entropy_probs", lambda x, t: ag.cross_entropy(x, t, label_smoothing=0.1),
      _one(_r(3, 4), _probs(3, 4))),
    G("nll_loss", lambda x, t: ag.nll_loss(x, t, reduction="sum"), _one(_r(4, 3), _ints(3, 4))),
    G("nll_loss_weight", lambda x, t, w: ag.nll_loss(x, t, w, ignore_index=0),
      _one(_r(5, 3), lambda rng: Const(np.array([0, 1, 2, 2, 1])), lambda rng: Const(pos(rng, 3)))),
    # padding_idx / scale_grad_by_freq are not the true gradient: checked in test_nn_ops.py
    G("embedding", lambda i, w: ag.embedding(i, w, padding_idx=-1),
      _one(lambda rng: Const(np.array([[0, 1, 2], [2, 2, 0]])), _r(4, 3))),
    G("dropout", _dropout, _one(_r(4, 5)), cuda=False),
    G("conv2d", lambda x, w, b: ag.conv2d(x, w, b, padding=1), _one(_r(1, 2, 4, 4), _r(2, 2, 3, 3), _r(2))),
    G("conv2d_stride_dil_groups", lambda x, w: ag.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                                         groups=2),
      _one(_r(1, 4, 3, 4), _r(2, 2, 2, 2)), noncontig=False),
    G("conv2d_same_unbatched", lambda x, w: ag.conv2d(x, w, padding="same", dilation=2),
      _one(_r(2, 3, 4), _r(2, 2, 2, 2))),
    G("conv1d", lambda x, w, b: ag.conv1d(x, w, b, stride=2, padding=1), _one(_r(1, 2, 7), _r(3, 2, 3), _r(3))),
    G("conv_transpose2d", lambda x, w, b: ag.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
      _one(_r(1, 2, 2, 2), _r(2, 2, 3, 3), _r(2))),
    G("conv_transpose2d_groups_dil", lambda x, w: ag.conv_transpose2d(x, w, groups=2, dilation=(2, 1)),
      _one(_r(2, 4, 2, 3), _r(4, 1, 2, 2)), noncontig=False),
    G("conv_transpose1d", lambda x, w: ag.conv_transpose1d(x, w, stride=3, padding=1),
      _one(_r(2, 4), _r(2, 2, 3))),
    G("max_pool2d", lambda x: ag.max_pool2d(x, 2, padding=1, ceil_mode=True), _one(_distinct(1, 2, 5, 5))),
    G("max_pool2d_indices", lambda x: ag.max_pool2d(x, (3, 2), stride=1, dilation=(1, 2), return_indices=True)[0],
      _one(_distinct(2, 5, 5))),
    G("avg_pool2d", lambda x: ag.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
      _one(_r(1, 2, 5, 5))),
    G("avg_pool2d_divisor", lambda x: ag.avg_pool2d(x, 2, divisor_override=3), _one(_r(2, 4, 5))),
    G("adaptive_avg_pool2d", lambda x: ag.adaptive_avg_pool2d(x, (2, 3)), _one(_r(1, 2, 5, 4))),
    G("interpolate_nearest", lambda x: ag.interpolate(x, scale_factor=2), _one(_r(1, 2, 2, 3))),
    G("interpolate_bilinear", lambda x: ag.interpolate(x, size=(4, 5), mode="bilinear", align_corners=True),
      _one(_r(1, 1, 3, 3))),
    G("interpolate_bilinear_down", lambda x: ag.interpolate(x, scale_factor=0.6, mode="bilinear"),
      _one(_r(1, 2, 5, 5))),
    G("sdpa", lambda q, k, v: ag.scaled_dot_product_attention(q, k, v), _one(_r(1, 3, 2), _r(1, 4, 2), _r(1, 4, 2))),
    G("sdpa_causal_scale", lambda q, k, v: ag.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
      _one(_r(1, 2, 3, 2), _r(1, 2, 3, 2), _r(1, 2, 3, 2))),
    G("sdpa_masks_gqa", lambda q, k, v, m: ag.scaled_dot_product_attention(q, k, v, m, enable_gqa=True),
      _one(_r(2, 3, 2), _r(1, 3, 2), _r(1, 3, 2), lambda rng: Const(np.array([[1, 0, 1], [0, 0, 0], [0, 1, 1]]) > 0))),
    G("sdpa_float_mask_grad", lambda q, k, v, m: ag.scaled_dot_product_attention(q, k, v, m),
      _one(_r(3, 2), _r(4, 2), _r(4, 2), _r(3, 4))),
    G("sdpa_dropout", _sdpa_dropout, _one(_r(1, 3, 2), _r(1, 4, 2), _r(1, 4, 2)), gradgrad=False, cuda=False),
]
