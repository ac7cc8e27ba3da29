"""autograd.Function: user-defined ops (forward/backward, ctx API, dirty/non-differentiable outputs, materialized
gradients, double backward, once_differentiable, setup_context style), checked against NumPy and the
composite built from autograd ops."""

import gc
import weakref

import numpy as np
import pytest

import autograd as ag
from autograd.function import Function, FunctionCtx, once_differentiable


def _np(t):
    return t.detach().cpu().numpy()


def _leaf(a, dtype=ag.float64, device="cpu"):
    return ag.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=True)


class Cube(Function):
    @staticmethod
    def forward(ctx, x, k=3):
        ctx.k = k
        ctx.save_for_backward(x)
        return x ** k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return ctx.k * x ** (ctx.k - 1) * g, None


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)  # an output
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulAdd(Function):
    """x * y + c with a Python scalar c in the middle of the arguments (broadcasting x, y)."""

    @staticmethod
    def forward(ctx, x, c, y):
        ctx.save_for_backward(x, y)
        return x * y + c

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (g * y if ctx.needs_input_grad[0] else None), None, (g * x if ctx.needs_input_grad[2] else None)


def test_forward_backward_values_and_node():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(5)
    x = _leaf(a)
    y = Cube.apply(x)
    np.testing.assert_allclose(_np(y), a ** 3)
    assert y.grad_fn.name() == "CubeBackward"
    assert type(y.grad_fn).__name__ == "CubeBackward"
    assert y.grad_fn.next_functions[0][0] is x._edge()[0]  # the leaf's AccumulateGrad
    assert len(y.grad_fn.next_functions) == 1  # the arguments passed (backward's extra None is allowed)
    assert Cube.apply(x, 3).grad_fn.next_functions[1] == (None, 0)  # k: not a tensor
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 3 * a ** 2)


def test_non_tensor_args_and_needs_input_grad():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 1)), rng.standard_normal(4)
    x = _leaf(a)
    y = ag.tensor(b, dtype=ag.float64)  # needs no grad
    seen = {}

    class Probe(MulAdd):
        @staticmethod
        def forward(ctx, x, c, y):
            seen["needs"] = ctx.needs_input_grad
            seen["grad_mode"] = ag.is_grad_enabled()
            return MulAdd.forward(ctx, x, c, y)

    out = Probe.apply(x, 2.5, y)
    assert seen == {"needs": (True, False, False), "grad_mode": False}  # forward runs under no_grad
    assert out.grad_fn.needs_input_grad == (True, False, False)
    np.testing.assert_allclose(_np(out), a * b + 2.5)
    out.backward(ag.ones(3, 4, dtype=ag.float64))
    np.testing.assert_allclose(_np(x.grad), np.broadcast_to(b.sum(), (3, 1)))  # the engine reduced (3,4)->(3,1)
    assert y.grad is None


def test_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(2)
    x = _leaf(rng.standard_normal((2, 3)))
    y = _leaf(rng.standard_normal(3))
    assert ag.gradcheck(lambda a, b: MulAdd.apply(a, 1.5, b), (x, y))
    assert ag.gradgradcheck(lambda a, b: MulAdd.apply(a, 1.5, b), (x, y))
    assert ag.gradcheck(lambda a: Cube.apply(a, 3), (x,))
    assert ag.gradgradcheck(lambda a: Cube.apply(a, 3), (x,))
    assert ag.gradgradcheck(Exp.apply, (x,))


def test_double_backward_values():
    a = np.array([0.5, -1.0, 2.0])
    x = _leaf(a)
    (g,) = ag.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 3 * a ** 2)
    assert g.requires_grad
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(_np(gg), 6 * a)
    # through a saved *output*: d2/dx2 exp = exp
    (g,) = ag.grad(Exp.apply(x).sum(), x, create_graph=True)
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(_np(gg), np.exp(a))


def test_kwargs_bound_like_positional():
    x = _leaf([1.0, 2.0])
    y = Cube.apply(x, k=2)
    np.testing.assert_allclose(_np(y), [1.0, 4.0])
    assert len(y.grad_fn.next_functions) == 2
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])
    with pytest.raises(TypeError, match="Cube.apply"):
        Cube.apply(x, q=1)


def test_wrong_number_of_gradients_names_function():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x, y = _leaf([1.0]), _leaf([2.0])
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\).*Bad\.backward must return one value"):
        Bad.apply(x, y).sum().backward()


def test_extra_trailing_nones_allowed():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = _leaf([1.0, 3.0])
    Extra.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_gradient_for_non_tensor_input_and_bad_types():
    class GradForScalar(Function):
        @staticmethod
        def forward(ctx, x, c):
            return x * c

        @staticmethod
        def backward(ctx, g):
            return g, g

    class NotATensor(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return 1.0

    x = _leaf([1.0])
    with pytest.raises(RuntimeError, match="gradient different than None at position 2, but the corresponding "
                                           "forward input was not a Tensor"):
        GradForScalar.apply(x, 2.0).sum().backward()
    with pytest.raises(TypeError, match="NotATensorBackward returned a float as gradient 0"):
        NotATensor.apply(x).sum().backward()


def test_gradient_shape_mismatch_is_the_engines_error():
    class WrongShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ag.ones(5, dtype=g.dtype)

    x = _leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"Function WrongShapeBackward returned an invalid gradient at index 0 - "
                                           r"got \[5\] but expected shape compatible with \[3\]"):
        WrongShape.apply(x).sum().backward()


def test_gradient_dtype_cast_to_input():
    class F32Grad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).float()

    x = _leaf([1.0, 2.0])
    F32Grad.apply(x).sum().backward()
    assert x.grad.dtype == ag.float64
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_saved_output_makes_no_reference_cycle():
    x = _leaf([0.1, 0.2])
    gc.collect()
    gc.disable()
    try:
        y = Exp.apply(x)
        ref = weakref.ref(y.grad_fn)
        assert y.grad_fn.saved_tensors[0].grad_fn is y.grad_fn  # unpacked with its history
        del y
        assert ref() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_saved_tensors_freed_after_backward():
    x = _leaf([1.0, 2.0])
    y = Cube.apply(x)
    node = y.grad_fn
    y.sum().backward(retain_graph=True)
    assert len(node.saved_tensors) == 1
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        node.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.sum().backward()


def test_saved_input_modified_in_place_is_detected():
    x = _leaf([1.0, 2.0])
    h = x * 1
    y = Cube.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*is at version 1; expected version 0 "
                                           r"instead \(needed by CubeBackward\)"):
        y.sum().backward()


def test_saved_output_modified_in_place_is_detected():
    x = _leaf([1.0, 2.0])
    y = Exp.apply(x)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of ExpBackward"):
        y.sum().backward()


class AddOneInplace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1.0)  # forward runs under no_grad: a plain write
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 1


def test_mark_dirty_takes_history_and_bumps_version():
    a = np.array([1.0, -2.0, 3.0])
    x = _leaf(a)
    h = x * 2
    v0 = h._version_value
    r = AddOneInplace.apply(h)
    assert r is h
    assert h.grad_fn.name() == "AddOneInplaceBackward"
    assert h._version_value == v0 + 2  # the write, and mark_dirty
    np.testing.assert_allclose(_np(h), 2 * a + 1)
    (h * h).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * (2 * a + 1) * 2)


def test_mark_dirty_leaf_requiring_grad_errors():
    x = _leaf([1.0])
    with pytest.raises(RuntimeError, match="AddOneInplace: a leaf Variable that requires grad .* in-place"):
        AddOneInplace.apply(x)
    with ag.no_grad():  # without a graph it is allowed, as in PyTorch
        AddOneInplace.apply(x)
    np.testing.assert_allclose(_np(x), [3.0])  # both calls wrote (the failing one in forward, before the check)


def test_mark_dirty_not_returned_errors():
    class Forgets(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        Forgets.apply(_leaf([1.0]) * 1)


def test_mark_dirty_through_a_view():
    a = np.arange(6.0).reshape(2, 3) + 1
    x = _leaf(a)
    base = x * 1
    row = base[0]
    AddOneInplace.apply(row)
    np.testing.assert_allclose(_np(base), a * 1 + np.array([[1.0], [0.0]]))
    assert row.grad_fn is not None and base.grad_fn.name() == "CopySlices"
    (base * base).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * (a + np.array([[1.0], [0.0]])))


def test_mark_dirty_saved_input_is_the_output():
    class MulInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3.0)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            assert y.grad_fn is ctx  # saved as an output (no cycle)
            return g * 3

    x = _leaf([1.0, 2.0])
    h = x * 1
    MulInplace.apply(h).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])


class SortVals(Function):
    """values and indices, the indices marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        idx = ag.tensor(np.argsort(x.detach().numpy()), dtype=ag.int64)
        vals = x[idx]
        fidx = idx.to(x.dtype)  # float, but declared non-differentiable
        ctx.mark_non_differentiable(fidx)
        ctx.save_for_backward(idx)
        return vals, fidx

    @staticmethod
    def backward(ctx, gv, gi):
        (idx,) = ctx.saved_tensors
        SortVals.seen = gi
        g = ag.zeros(gv.shape, dtype=gv.dtype)
        g[idx] = gv
        return g


def test_mark_non_differentiable_gets_zero_gradient():
    a = np.array([3.0, 1.0, 2.0])
    x = _leaf(a)
    vals, fidx = SortVals.apply(x)
    assert not fidx.requires_grad and fidx.grad_fn is None
    np.testing.assert_allclose(_np(vals), np.sort(a))
    np.testing.assert_allclose(_np(fidx), np.argsort(a))
    (vals * ag.tensor([1.0, 10.0, 100.0], dtype=ag.float64)).sum().backward()
    np.testing.assert_allclose(_np(SortVals.seen), [0.0, 0.0, 0.0])  # materialized zeros
    np.testing.assert_allclose(_np(x.grad), [100.0, 1.0, 10.0])


def _two_outputs(materialize):
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            Two.seen = (g1, g2)
            g = ag.zeros_like(g1 if g1 is not None else g2)
            if g1 is not None:
                g = g + 2 * g1
            if g2 is not None:
                g = g + 3 * g2
            return g

    return Two


def test_set_materialize_grads():
    x = _leaf([1.0, 2.0])
    Two = _two_outputs(True)
    a, b = Two.apply(x)
    a.sum().backward()
    g1, g2 = Two.seen
    np.testing.assert_allclose(_np(g2), [0.0, 0.0])
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])
    Two = _two_outputs(False)
    a, b = Two.apply(x)
    assert a.grad_fn._materialize is False and Two.apply(x)[0].grad_fn is not a.grad_fn
    b.sum().backward()
    assert Two.seen[0] is None
    np.testing.assert_allclose(_np(x.grad), [5.0, 5.0])
    assert _two_outputs(True).apply(x)[0].grad_fn._materialize is True  # per node, not global


def test_non_tensor_and_integer_outputs():
    class Mixed(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, "label", (x > 0).to(ag.int64)

        @staticmethod
        def backward(ctx, g, g_label, g_int):
            Mixed.seen = (g_label, g_int)
            return g * 2

    x = _leaf([-1.0, 1.0])
    y, label, pos = Mixed.apply(x)
    assert label == "label" and pos.grad_fn is None and not pos.requires_grad
    np.testing.assert_array_equal(_np(pos), [0, 1])
    y.sum().backward()
    assert Mixed.seen[0] is None  # non-tensor output: None
    np.testing.assert_array_equal(_np(Mixed.seen[1]), [0, 0])  # integer output: zeros
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_returning_an_input_gives_a_new_tensor():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = _leaf([1.0, 2.0])
    y = Ident.apply(x)
    assert y is not x and x.grad_fn is None and y.grad_fn.name() == "IdentBackward"
    assert y._version is x._version  # same data, same version counter
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [5.0, 5.0])
    with ag.no_grad():
        z = Ident.apply(x)
    assert z is not x and z.grad_fn is None and not z.requires_grad


def test_no_graph_without_grad():
    x = ag.tensor([1.0, 2.0])
    y = Cube.apply(x)
    assert y.grad_fn is None and not y.requires_grad
    np.testing.assert_allclose(_np(y), [1.0, 8.0])
    with ag.no_grad():
        y = Cube.apply(_leaf([2.0]))
    assert y.grad_fn is None and not y.requires_grad


def test_duplicate_outputs():
    class Dup(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y

        @staticmethod
        def backward(ctx, g1, g2):
            return 2 * g1 + 2 * g2

    x = _leaf([1.0])
    a, b = Dup.apply(x)
    assert a is not b and a.grad_fn is b.grad_fn
    (a * 3 + b).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [8.0])


def test_once_differentiable():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            Once.grad_mode = ag.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = np.array([1.0, -3.0])
    x = _leaf(a)
    Once.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * a)
    (g,) = ag.grad((Once.apply(x) ** 2).sum(), x, create_graph=True)
    assert Once.grad_mode is False  # the body ran under no_grad
    np.testing.assert_allclose(_np(g), 4 * a ** 3)  # first order is right
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
    (g,) = ag.grad((Once.apply(x) ** 2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):  # autograd.grad reaches it too
        ag.grad(g.sum(), x)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        ag.gradgradcheck(Once.apply, (x,))


class SetupStyle(Function):
    @staticmethod
    def forward(x, w, scale=2.0):
        return (x * w).sum() * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, scale = inputs
        ctx.scale = scale
        ctx.save_for_backward(x, w, output)

    @staticmethod
    def backward(ctx, g):
        x, w, out = ctx.saved_tensors
        SetupStyle.out_fn = out.grad_fn
        return g * w * ctx.scale, g * x * ctx.scale, None


def test_setup_context_style():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    x, w = _leaf(a), _leaf(b)
    y = SetupStyle.apply(x, w)
    np.testing.assert_allclose(_np(y), 2 * (a * b).sum())
    assert y.grad_fn.name() == "SetupStyleBackward" and len(y.grad_fn.next_functions) == 3
    y.backward()
    assert SetupStyle.out_fn is y.grad_fn  # the output was saved as an output
    np.testing.assert_allclose(_np(x.grad), 2 * b)
    np.testing.assert_allclose(_np(w.grad), 2 * a)
    assert ag.gradcheck(lambda p, q: SetupStyle.apply(p, q, scale=0.5), (x, w))


def test_vjp_alias_and_missing_backward():
    class ViaVjp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 4

        @staticmethod
        def vjp(ctx, g):
            return g * 4

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

    x = _leaf([1.0])
    ViaVjp.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [4.0])
    with pytest.raises(NotImplementedError, match="backward or vjp"):
        NoBackward.apply(x).sum().backward()


def test_misuse_errors():
    with pytest.raises(RuntimeError, match="call apply on a subclass"):
        Function.apply(ag.ones(1))
    with pytest.raises(RuntimeError, match=r"call Cube.apply\(...\)"):
        Cube()(ag.ones(1))

    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(TypeError, match="save_for_backward can only save tensors or None, but argument 1 is a int"):
        SavesNumber.apply(_leaf([1.0]))


def test_ctx_is_the_node_and_functionctx():
    x = _leaf([1.0])
    y = Cube.apply(x)
    assert isinstance(y.grad_fn, FunctionCtx) and isinstance(y.grad_fn, ag.graph.Node)
    assert y.grad_fn.k == 3  # attributes set in forward


def test_anomaly_names_the_function():
    class MakesNan(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = _leaf([1.0])
    with ag.detect_anomaly():
        with pytest.raises(RuntimeError, match="Function 'MakesNanBackward' returned nan values in its 0th output"):
            MakesNan.apply(x).sum().backward()


def test_hooks_on_function_node():
    x = _leaf([1.0, 2.0])
    y = Cube.apply(x)
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append((len(gi), len(go))))
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert calls == [(1, 1)]  # one input passed (backward's trailing None for k dropped)
    np.testing.assert_allclose(_np(x.grad), [30.0, 120.0])


@pytest.mark.skipif(not ag.cuda.is_available(), reason="needs cuda (interpreted is enough)")
def test_on_interpreted_cuda_matches_cpu():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal(5)
    res = {}
    for dev in ("cpu", "cuda"):
        x, y = _leaf(a, ag.float32, dev), _leaf(b, ag.float32, dev)
        out = MulAdd.apply(Exp.apply(x), 0.5, y)
        assert out.device.type == dev
        (out * out).sum().backward()
        res[dev] = (_np(out), _np(x.grad), _np(y.grad))
    for c, g in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res["cpu"][0], np.exp(a) * b + 0.5, rtol=1e-5)
