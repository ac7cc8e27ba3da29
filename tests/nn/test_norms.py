"""BatchNorm1d/2d (batch statistics, running statistics with momentum and the unbiased variance, cumulative
average, eval, track_running_stats=False), LayerNorm, RMSNorm, GroupNorm vs NumPy, forward and backward."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

from . import nnref as npref
from .nnref import N, T, check_module, gradcheck_module, rand


def _randomize(m):
    with ag.no_grad():
        for p in m.parameters():
            p.copy_(T(rand(*p.shape, lo=0.5, hi=1.5), dtype=p.dtype))
    return m


# --------------------------------------------------------------------------------------------- BatchNorm
@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (3, 3, 4, 2))])
def test_batchnorm_training_forward_backward(cls, shape):
    m = _randomize(cls(3).double())
    check_module(m, lambda x, w, b: npref.batch_norm_train(x, w, b), rand(*shape, lo=-2, hi=3))


def test_batchnorm_running_stats_momentum_unbiased():
    m = nn.BatchNorm2d(3, momentum=0.3).double()
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        x = rand(4, 3, 2, 3, lo=-1, hi=4)
        m(T(x))
        n = x.size // 3
        mean = x.mean((0, 2, 3))
        var_unbiased = x.var((0, 2, 3)) * n / (n - 1)
        rm = 0.7 * rm + 0.3 * mean
        rv = 0.7 * rv + 0.3 * var_unbiased
        np.testing.assert_allclose(N(m.running_mean), rm, rtol=1e-12)
        np.testing.assert_allclose(N(m.running_var), rv, rtol=1e-12)
        assert int(m.num_batches_tracked) == step + 1
    assert m.num_batches_tracked.dtype == ag.int64


def test_batchnorm_momentum_none_is_cumulative_average():
    m = nn.BatchNorm1d(2, momentum=None).double()
    xs = [rand(5, 2, lo=-1, hi=3) for _ in range(3)]
    for x in xs:
        m(T(x))
    np.testing.assert_allclose(N(m.running_mean), np.mean([x.mean(0) for x in xs], 0), rtol=1e-12)
    np.testing.assert_allclose(N(m.running_var), np.mean([x.var(0, ddof=1) for x in xs], 0), rtol=1e-12)
    assert int(m.num_batches_tracked) == 3


def test_batchnorm_eval_uses_running_stats_and_gradient():
    m = _randomize(nn.BatchNorm2d(2).double())
    for _ in range(2):
        m(T(rand(3, 2, 3, 3, lo=0, hi=5)))
    m.eval()
    rm, rv, nbt = N(m.running_mean).copy(), N(m.running_var).copy(), int(m.num_batches_tracked)
    check_module(m, lambda x, w, b: npref.batch_norm_eval(x, rm, rv, w, b), rand(2, 2, 2, 3))
    np.testing.assert_array_equal(N(m.running_mean), rm)  # eval does not update
    np.testing.assert_array_equal(N(m.running_var), rv)
    assert int(m.num_batches_tracked) == nbt
    m.train()
    x = rand(2, 2, 2, 3)
    np.testing.assert_allclose(N(m(T(x))), npref.batch_norm_train(x, N(m.weight), N(m.bias)), rtol=1e-10)


def test_batchnorm_no_tracking_and_no_affine():
    m = nn.BatchNorm1d(3, track_running_stats=False, affine=False).double()
    assert m.running_mean is None and m.num_batches_tracked is None and m.weight is None
    assert list(m.state_dict()) == []
    x = rand(5, 3)
    m.eval()  # still batch statistics
    np.testing.assert_allclose(N(m(T(x))), npref.batch_norm_train(x), rtol=1e-10)
    check_module(m, lambda x: npref.batch_norm_train(x), x)


def test_batchnorm_state_dict_keys_and_reset():
    m = nn.BatchNorm2d(4)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    m(T(rand(2, 4, 2, 2), dtype=ag.float32))
    m.reset_running_stats()
    np.testing.assert_array_equal(N(m.running_mean), 0)
    np.testing.assert_array_equal(N(m.running_var), 1)
    assert int(m.num_batches_tracked) == 0


def test_batchnorm_input_checks_and_gradcheck():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ag.ones(2, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(ag.ones(2, 3, 1, 1))
    m = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        m(ag.ones(1, 3))
    assert int(m.num_batches_tracked) == 0  # (before: counted the refused batch)
    np.testing.assert_array_equal(N(m.running_mean), 0)
    gradcheck_module(_randomize(nn.BatchNorm1d(2)), rand(4, 2))
    gradcheck_module(_randomize(nn.BatchNorm2d(2)).eval(), rand(2, 2, 1, 2))


def test_functional_batch_norm_updates_given_buffers():
    x = rand(6, 2)
    rm, rv = T(np.zeros(2)), T(np.ones(2))
    y = F.batch_norm(T(x), rm, rv, training=True, momentum=0.5)
    np.testing.assert_allclose(N(y), npref.batch_norm_train(x), rtol=1e-10)
    np.testing.assert_allclose(N(rm), 0.5 * x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(N(rv), 0.5 + 0.5 * x.var(0, ddof=1), rtol=1e-12)


# ------------------------------------------------------------------------------------- LayerNorm, RMSNorm
@pytest.mark.parametrize("shape,ns", [((3, 5), 5), ((2, 3, 4), (3, 4))])
def test_layer_norm(shape, ns):
    m = _randomize(nn.LayerNorm(ns))
    check_module(m, lambda x, w, b: npref.layer_norm(x, m.normalized_shape, w, b), rand(*shape))
    m = nn.LayerNorm(ns, elementwise_affine=False, eps=1e-3)
    assert list(m.state_dict()) == []
    check_module(m, lambda x: npref.layer_norm(x, m.normalized_shape, eps=1e-3), rand(*shape))
    m = _randomize(nn.LayerNorm(ns, bias=False))
    assert m.bias is None
    check_module(m, lambda x, w: npref.layer_norm(x, m.normalized_shape, w), rand(*shape))


def test_rms_norm():
    m = _randomize(nn.RMSNorm(4, eps=1e-4))
    check_module(m, lambda x, w: npref.rms_norm(x, (4,), w, 1e-4), rand(3, 4))
    m = nn.RMSNorm((2, 3))  # eps=None: machine epsilon of the dtype
    check_module(m, lambda x, w: npref.rms_norm(x, (2, 3), w), rand(2, 2, 3))
    x = np.full((2, 3), 1e-4, dtype=np.float32)  # mean(x^2) = 1e-8 is below float32's eps: eps shows
    np.testing.assert_allclose(N(F.rms_norm(T(x), (3,))), 1e-4 / np.sqrt(1e-8 + np.finfo(np.float32).eps),
                               rtol=1e-5)


def test_group_norm():
    m = _randomize(nn.GroupNorm(2, 4))
    check_module(m, lambda x, w, b: npref.group_norm(x, 2, w, b), rand(3, 4, 2, 3))
    check_module(nn.GroupNorm(4, 4, affine=False), lambda x: npref.group_norm(x, 4), rand(2, 4, 3))
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)


def test_norm_gradchecks():
    gradcheck_module(_randomize(nn.LayerNorm(3)), rand(2, 3))
    gradcheck_module(_randomize(nn.RMSNorm(3)), rand(2, 3))
    gradcheck_module(_randomize(nn.GroupNorm(2, 4)), rand(1, 4, 2))


def test_norms_train_eval_only_batchnorm_changes():
    x = T(rand(4, 3), dtype=ag.float32)
    ln = nn.LayerNorm(3)
    a = N(ln(x))
    ln.eval()
    np.testing.assert_array_equal(N(ln(x)), a)
    bn = nn.BatchNorm1d(3)
    a = N(bn(x))
    bn.eval()
    assert not np.allclose(N(bn(x)), a)
