"""squeeze_/unsqueeze_/t_/transpose_/swapdims_/swapaxes_ and resize_ (PyTorch's in-place shape ops): the tensor
itself takes the new shape, sharing its storage; refused where PyTorch refuses (a leaf that requires grad) and
where this framework does not follow (a tensor inside an autograd graph: a clear NotImplementedError)."""

import numpy as np
import pytest

import autograd as ag


def test_view_ops_in_place_change_the_tensor_itself():
    z = ag.arange(6.0).reshape(2, 3)
    v0 = z._version.v
    assert z.t_() is z and tuple(z.shape) == (3, 2) and not z.is_contiguous()
    assert z.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and z._version.v > v0
    z.unsqueeze_(0)
    assert tuple(z.shape) == (1, 3, 2)
    z.squeeze_()
    assert tuple(z.shape) == (3, 2)
    z.transpose_(0, 1)
    assert z.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    z.swapdims_(0, 1).swapaxes_(0, 1)
    assert tuple(z.shape) == (2, 3)
    b = ag.zeros(2, 3)
    v = b[0]
    v.unsqueeze_(0)
    v.fill_(5.0)  # (still a view of b)
    assert b.tolist() == [[5.0] * 3, [0.0] * 3] and tuple(v.shape) == (1, 3)


def test_view_ops_in_place_refusals():
    x = ag.ones(1, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.squeeze_()
    with pytest.raises(NotImplementedError, match="x = x.unsqueeze"):
        (x * 2).unsqueeze_(0)
    with ag.no_grad():
        x.squeeze_()
    assert tuple(x.shape) == (3,) and x.requires_grad


def test_resize_():
    w = ag.arange(6.0)
    assert w.resize_(2, 3) is w and w.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    w.resize_(2, 2)
    assert w.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    w.resize_((5,))
    assert w.tolist()[:4] == [0.0, 1.0, 2.0, 3.0] and tuple(w.shape) == (5,)
    t = ag.tensor(np.arange(6.0).reshape(2, 3)).t()
    t.resize_(6)  # (a non-contiguous tensor: its elements in row-major order of its shape)
    assert t.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    with pytest.raises(RuntimeError, match="require grad"):
        ag.ones(2, requires_grad=True).resize_(3)
