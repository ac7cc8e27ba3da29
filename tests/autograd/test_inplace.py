"""In-place ops and autograd: version counters, saved-tensor checks naming the op and the versions, writes
through views (CopySlices) checked against analytic gradients, leaves."""

import numpy as np
import pytest

import autograd as ag


def _leaf(vals):
    return ag.tensor(vals, requires_grad=True)


def test_in_place_ops_bump_the_version_and_keep_the_storage():
    x = ag.zeros(3)
    ptr = x.data_ptr()
    x.add_(1)
    x.mul_(ag.tensor([1.0, 2.0, 3.0]))
    x[1:] = 7.0
    assert x._version == 3 and x.data_ptr() == ptr and x.tolist() == [1.0, 7.0, 7.0]


def test_modified_saved_input_raises_naming_op_and_versions():
    x = _leaf([1.0, 2.0])
    q = x * 1
    r = q * q  # MulBackward0 saves q (version 0)
    q.add_(1)
    # like PyTorch, the message names the tensor's current grad_fn (AddBackward0 after add_)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[float32 \[2\]\], which is output 0 "
                                           r"of AddBackward0, is at version 1; expected version 0 instead \(needed "
                                           r"by MulBackward0\)"):
        r.sum().backward()


def test_modified_saved_output_raises():
    x = _leaf([1.0, 2.0])
    y = (x * 1).exp()  # ExpBackward0 saves its output
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"output 0 of ExpBackward0, is at version 1; expected version 0"):
        y.sum().backward()


def test_modified_saved_leaf_raises():
    x = _leaf([1.0, 2.0])
    y = x * x
    with ag.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=r"which is a leaf tensor, is at version 1; expected version 0"):
        y.sum().backward()


def test_in_place_on_unsaved_tensor_is_fine_and_correct():
    x = _leaf([1.0, 2.0])
    y = x * 2
    y.add_(3)  # AddBackward0 on y: mul's backward needs only the scalar
    y.mul_(y.detach().clone())  # y * c: saves the old y (a copy), not the overwritten one
    y.sum().backward()
    # y_final = (2x + 3)^2 with the second factor detached: d/dx = 2 * (2x + 3)
    assert x.grad.tolist() == [10.0, 14.0]
    assert y.grad_fn.name() == "MulBackward0" and y.tolist() == [25.0, 49.0]


def test_setitem_then_view_in_place_matches_analytic_gradient():
    x = _leaf([1.0, 2.0, 3.0, 4.0])
    w = ag.tensor([1.0, 2.0, 3.0, 4.0])
    y = x * 1
    y[0] = 10.0
    z = y.view(2, 2)
    z.mul_(2)
    assert y.grad_fn.name() == "CopySlices" and z._version == y._version == 2
    assert y.tolist() == [20.0, 4.0, 6.0, 8.0] and z.tolist() == [[20.0, 4.0], [6.0, 8.0]]
    (y * w).sum().backward()
    # y = 2 * [10, x1, x2, x3]: dL/dx = 2 * w, except x0 which was overwritten
    assert x.grad.tolist() == [0.0, 4.0, 6.0, 8.0]


def test_write_of_a_differentiable_value_through_a_view():
    x = _leaf([1.0, 2.0, 3.0, 4.0])
    v = ag.tensor(5.0, requires_grad=True)
    y = x * 1
    y[1] = v * 2
    z = y.view(2, 2)
    z.mul_(y.view(2, 2).detach() + 0)  # y <- y * y (second factor constant)
    y.sum().backward()
    assert y.tolist() == [1.0, 100.0, 9.0, 16.0]
    assert x.grad.tolist() == [1.0, 0.0, 3.0, 4.0]
    assert v.grad.item() == 20.0


def test_view_sees_history_of_base_written_in_place():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * 1
    v = y[1:]
    y.mul_(3)  # through the base: the view's grad_fn is regenerated from the new base
    assert v.tolist() == [6.0, 9.0]
    (v * ag.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 3.0, 30.0]


def test_in_place_through_view_of_leaf_raises():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        x[0:1].mul_(2)


def test_in_place_matches_out_of_place_numerically():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    for name in ("add", "sub", "mul", "div"):
        x = _leaf(a)
        y = x * 1
        getattr(y, name + "_")(ag.tensor(b))
        y.sum().backward()
        x2 = _leaf(a)
        getattr(x2 * 1, name)(ag.tensor(b)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)


def test_in_place_with_a_detached_alias_of_itself_raises():
    x = _leaf([1.0, 2.0])
    y = x * 2
    y.mul_(y.detach())  # the detached alias shares y's version counter, saved at version 0 (PyTorch raises too)
    with pytest.raises(RuntimeError, match=r"which is a leaf tensor, is at version 1; expected version 0"):
        y.sum().backward()


def test_chained_in_place_ops_give_correct_gradients():
    # generic in-place ops compute out of place and copy: each node saves its own result, so (unlike
    # PyTorch, which raises here) a later write does not invalidate an earlier save
    x = _leaf([0.5, 1.0])
    y = x * 1
    y.exp_()
    y.exp_()
    y.sum().backward()
    a = np.array([0.5, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.exp(a)) * np.exp(a), rtol=1e-6)


def test_inplace_binary_without_graph_matches_out_of_place():
    """x.op_(other) without a graph (the direct tkernels path) equals x.op(other) for tensors (same shape and
    broadcast), Python floats and ints, float and int dtypes; bumps the shared version counter; writes through a
    view into its base."""
    rng = np.random.default_rng(0)
    for dt in (ag.float32, ag.float64, ag.int64):
        for name in ("add", "sub", "mul", "div"):
            if dt is ag.int64 and name == "div":
                continue
            others = (ag.tensor(rng.integers(1, 5, (3, 4)), dtype=dt), ag.tensor(rng.integers(1, 5, (4,)), dtype=dt), 3,
                      0.5 if dt is not ag.int64 else 2)
            for other in others:
                x = ag.tensor(rng.integers(-5, 5, (3, 4)), dtype=dt)
                want = getattr(x, name)(other).numpy()
                v0 = x._version.v
                with ag.no_grad():
                    r = getattr(x, name + "_")(other)
                assert r is x and x._version.v == v0 + 1
                np.testing.assert_array_equal(x.numpy(), want)
    base = ag.zeros(2, 3)
    view = base[1]
    v0 = base._version.v
    with ag.no_grad():
        view.add_(2.0)
    assert base._version.v == v0 + 1
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0], [2, 2, 2]])
    with pytest.raises(TypeError, match="add"):
        ag.ones(3, dtype=ag.int64).add_(0.5)
