"""AccumulateGrad takes a fresh gradient as .grad without a copy only when nothing else can reach it."""

import numpy as np

import autograd as ag


def _leaf(shape=(3, 4)):
    return ag.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32), requires_grad=True)


def test_fresh_gradient_is_taken_and_correct():
    a = _leaf()
    (a * 3.0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 4), 3.0, np.float32))
    (a * 3.0).sum().backward()  # accumulates in place into the taken buffer
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 4), 6.0, np.float32))


def test_user_gradient_is_copied():
    a = _leaf()
    g = ag.ones((3, 4))
    (a + 0.0).backward(g)  # AddBackward passes g through
    a.grad.add_(1.0)
    np.testing.assert_allclose(g.numpy(), np.ones((3, 4), np.float32))  # g itself untouched


def test_shared_gradient_of_two_leaves_is_not_aliased():
    a, b = _leaf(), _leaf()
    (a + b).sum().backward()  # one gradient tensor for both leaves
    a.grad.mul_(5.0)
    np.testing.assert_allclose(b.grad.numpy(), np.ones((3, 4), np.float32))
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 4), 5.0, np.float32))


def test_gradient_kept_by_tensor_hook_is_copied():
    a = _leaf()
    kept = []
    a.register_hook(lambda g: kept.append(g))
    (a * 2.0).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(kept[0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_gradient_kept_by_node_hook_is_copied():
    a = _leaf()
    kept = []
    y = a * 2.0
    y.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))
    y.sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(kept[0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_gradient_kept_by_prehook_on_nonleaf_is_copied():
    a = _leaf()
    kept = []
    y = a * 1.0
    z = y * 2.0
    y.register_hook(lambda g: kept.append(g))  # y's gradient is passed through MulBackward(1.0)? no: g*1.0
    z.sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(kept[0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_retained_nonleaf_grad_not_aliased_with_leaf_grad():
    a = _leaf()
    y = a + 0.0  # AddBackward passes its gradient to a
    y.retain_grad()
    (y * 2.0).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(y.grad.numpy(), np.full((3, 4), 2.0, np.float32))


def test_custom_function_returning_saved_tensor_is_copied():
    class F(ag.Function):
        @staticmethod
        def forward(ctx, x, keep):
            ctx.keep = keep
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return ctx.keep, None

    a = _leaf()
    keep = ag.ones((3, 4))
    F.apply(a, keep).sum().backward()
    a.grad.add_(1.0)
    np.testing.assert_allclose(keep.numpy(), np.ones((3, 4), np.float32))


def test_numpy_view_of_gradient_memory_is_detected():
    views = []

    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            r = g * 2.0
            views.append(r._data._nd[:])  # a NumPy view of the gradient's buffer
            return r

    a = _leaf()
    F.apply(a).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(views[0], np.full((3, 4), 2.0, np.float32))


def test_array_shared_by_another_tensor_is_copied():
    others = []

    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            r = g * 2.0
            others.append(r.detach())  # another Tensor on the same Array
            return r

    a = _leaf()
    F.apply(a).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(others[0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_weakly_referenced_gradient_is_copied():
    import weakref

    refs = []

    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            r = g * 2.0
            refs.append(weakref.ref(r._data))
            refs.append(r._data)  # keep the Array alive too
            return r

    a = _leaf()
    F.apply(a).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(refs[1].numpy(), np.full((3, 4), 2.0, np.float32))


def test_create_graph_keeps_gradient_graph():
    a = _leaf()
    (a * a).sum().backward(create_graph=True)
    assert a.grad.grad_fn is not None


def test_gradients_returned_in_a_list_the_function_keeps_are_copied():
    """A leaf reached by its only edge is accumulated as its gradient is made: a gradient that the node's
    backward still holds (in the list it returned) must not become .grad."""
    kept = []

    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            out = [g * 2.0]
            kept.append(out)
            return out

    a = _leaf()
    F.apply(a).sum().backward()
    a.grad.zero_()
    np.testing.assert_allclose(kept[0][0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_a_leaf_reached_by_its_only_edge_gets_the_gradient_once():
    a, b = _leaf(), _leaf()
    y = a * b  # one edge to each leaf, accumulated where MulBackward returns them
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy())
    np.testing.assert_allclose(b.grad.numpy(), a.detach().numpy())
    (a * 2.0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy() + 2.0)


def test_root_gradient_is_fresh_each_pass():
    """The implicit ones of backward() are copied from a cache: hooks that change them in place, and a scalar
    leaf whose .grad they become, must not change the next pass's."""
    w = ag.tensor(np.float32(2.0), requires_grad=True)
    w.backward()  # the root is a leaf: the ones become .grad
    w.grad.mul_(7.0)
    v = ag.tensor(np.float32(3.0), requires_grad=True)
    v.backward()
    assert float(v.grad) == 1.0 and float(w.grad) == 7.0
    a = _leaf()
    for _ in range(2):
        a.grad = None
        loss = (a * 3.0).sum()
        loss.register_hook(lambda g: g.mul_(10.0))
        loss.backward()
        np.testing.assert_allclose(a.grad.numpy(), np.full((3, 4), 30.0, np.float32))
