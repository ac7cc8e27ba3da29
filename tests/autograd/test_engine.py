"""The backward engine against PyTorch's documented behaviour: accumulation, retain_graph, create_graph,
``ag.grad`` (grad_outputs, allow_unused, materialize_grads), ``backward(inputs=)``, hooks (tensor, node,
retain_grad, order), long chains, freeing of saved tensors, dtype mixing, broadcasting, misuse errors."""

import gc
import weakref

import numpy as np
import pytest

import autograd as ag


def _leaf(vals, dtype=None):
    return ag.tensor(vals, dtype=dtype, requires_grad=True)


# ------------------------------------------------------------------------------------- accumulation
def test_gradients_accumulate_over_two_backward_calls_in_place():
    x = _leaf([1.0, 2.0])
    (x * x).sum().backward()
    g = x.grad
    assert g.tolist() == [2.0, 4.0] and not g.requires_grad and g.grad_fn is None
    (x * x).sum().backward()
    assert x.grad is g and g.tolist() == [4.0, 8.0]  # accumulated into the same tensor
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_with_gradient_argument_and_shape_check():
    x = _leaf([1.0, 2.0])
    (x * 3).backward(ag.tensor([1.0, 0.5]))
    assert x.grad.tolist() == [3.0, 1.5]
    with pytest.raises(RuntimeError, match=r"mismatch in shape: grad_output\[0\] has a shape of \[3\]"):
        (x * 3).backward(ag.tensor([1.0, 0.5, 2.0]))


def test_grad_is_not_accumulated_into_non_leaves():
    x = _leaf([1.0, 2.0])
    y = x * 2
    (y * y).sum().backward()
    assert y.grad is None and x.grad.tolist() == [8.0, 16.0]


# ------------------------------------------------------------------------------------- retain_graph
def test_second_backward_needs_retain_graph():
    x = _leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"backward through the graph a second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = _leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_saved_tensors_access_after_free_raises():
    x = _leaf([1.0, 2.0])
    y = x.exp()
    assert y.grad_fn.saved_tensors[0].tolist() == pytest.approx(np.exp([1.0, 2.0]).tolist())
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        _ = y.grad_fn.saved_tensors


# ------------------------------------------------------------------------------------- create_graph
def test_double_backward_of_cube():
    x = _leaf(2.0)
    y = x ** 3
    (g,) = ag.grad(y, x, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad  # 3x^2
    (g2,) = ag.grad(g, x, create_graph=True)
    assert g2.item() == 12.0  # 6x
    (g3,) = ag.grad(g2, x)
    assert g3.item() == 6.0


def test_backward_create_graph_makes_grad_differentiable():
    x = _leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.tolist() == [3.0, 12.0]
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_grad_retains_graph_when_creating_it():
    x = _leaf([1.0, 2.0])
    y = (x * x).sum()
    ag.grad(y, x, create_graph=True)
    (g,) = ag.grad(y, x)  # retain_graph defaults to create_graph
    assert g.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------------------------------- ag.grad
def test_grad_with_grad_outputs_and_leaves_untouched():
    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    ga, gb = ag.grad(a * b, [a, b], grad_outputs=ag.tensor([1.0, 10.0]))
    assert ga.tolist() == [3.0, 40.0] and gb.tolist() == [1.0, 20.0]
    assert a.grad is None and b.grad is None


def test_grad_allow_unused_and_materialize_grads():
    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    with pytest.raises(RuntimeError, match=r"inputs\[1\].*appears to not have been used.*allow_unused=True"):
        ag.grad((a * 2).sum(), [a, b])
    ga, gb = ag.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert ga.tolist() == [2.0, 2.0] and gb is None
    ga, gb = ag.grad((a * 2).sum(), [a, b], materialize_grads=True)
    assert gb.tolist() == [0.0, 0.0] and gb.shape == b.shape


def test_grad_of_intermediate_tensor():
    x = _leaf([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = ag.grad(y, h)
    assert gh.tolist() == [6.0, 12.0]


def test_grad_errors():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        ag.grad(x * 2, x)
    with pytest.raises(RuntimeError, match="inputs is empty"):
        ag.grad((x * 2).sum(), [])
    with pytest.raises(RuntimeError, match=r"inputs\[0\].*does not require grad"):
        ag.grad((x * 2).sum(), ag.ones(2))


# ------------------------------------------------------------------------------- backward(inputs=)
def test_backward_inputs_accumulates_only_there():
    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    (a * b).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None
    (a * b).sum().backward(inputs=b)
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]


def test_backward_inputs_non_leaf():
    x = _leaf([1.0, 2.0])
    q = x * 2
    (q * q).sum().backward(inputs=[q])
    assert q.grad.tolist() == [4.0, 8.0] and x.grad is None


# ------------------------------------------------------------------------------------------- hooks
def test_leaf_hook_replaces_gradient_and_can_be_removed():
    x = _leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 2)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    h.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_non_leaf_hooks_run_in_registration_order_and_chain():
    x = _leaf([1.0, 2.0])
    seen = []
    c = x * 3
    c.register_hook(lambda g: seen.append(("first", g.tolist())))
    c.register_hook(lambda g: g + 1)
    c.register_hook(lambda g: seen.append(("third", g.tolist())))
    c.sum().backward()
    assert seen == [("first", [1.0, 1.0]), ("third", [2.0, 2.0])]
    assert x.grad.tolist() == [6.0, 6.0]


def test_hook_in_ag_grad_applies_to_captured_leaf_gradient():
    x = _leaf([1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    (g,) = ag.grad((x * 1).sum(), x)
    assert g.tolist() == [10.0, 10.0] and x.grad is None


def test_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ag.ones(2).register_hook(lambda g: g)


@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_sees_hooked_gradient_whatever_the_order(retain_first):
    # PyTorch 2: the retains_grad hook always runs after the tensor's other hooks
    x = _leaf([1.0, 2.0])
    q = x * 2
    if retain_first:
        q.retain_grad()
    q.register_hook(lambda g: g * 10)
    if not retain_first:
        q.retain_grad()
    assert q.retains_grad
    q.sum().backward()
    assert q.grad.tolist() == [10.0, 10.0] and x.grad.tolist() == [20.0, 20.0]


def test_retain_grad_accumulates_and_leaf_is_noop():
    x = _leaf([1.0, 2.0])
    x.retain_grad()
    assert not x.retains_grad  # leaves keep .grad anyway
    c = x * 3
    c.retain_grad()
    (c * c).sum().backward(retain_graph=True)
    assert c.grad.tolist() == [6.0, 12.0]
    (c * c).sum().backward()
    assert c.grad.tolist() == [12.0, 24.0]
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ag.ones(2).retain_grad()


def test_node_hooks_and_prehooks():
    x = _leaf([1.0, 2.0])
    c = x * 3
    log = []
    c.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    h = c.grad_fn.register_hook(lambda gi, go: log.append(
        ("post", [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
    c.sum().backward(retain_graph=True)
    assert log == [("pre", [[1.0, 1.0]]), ("post", [[3.0, 3.0], None], [[1.0, 1.0]])]
    h.remove()
    log.clear()
    c.grad_fn.register_hook(lambda gi, go: (gi[0] * 0, None))  # replaces the gradients it returns
    x.grad = None
    c.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0] and log == [("pre", [[1.0, 1.0]])]


def test_prehook_replaces_grad_outputs():
    x = _leaf([1.0, 2.0])
    c = x * 3
    c.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    c.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_post_accumulate_grad_hook():
    x = _leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


# ----------------------------------------------------------------------------------- long chains
def test_ten_thousand_op_chain_has_no_recursion_limit():
    x = _leaf([1.0])
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 10_000, rel=1e-3)


def _saved_storages(root):
    refs, node = [], root.grad_fn
    while node is not None and node.next_functions:
        for st in node._saved or ():
            if st is not None:
                refs.append(weakref.ref(st.array._storage))
        node = node.next_functions[0][0]
    return refs


def test_saved_tensors_of_a_deep_chain_are_freed_after_backward():
    was_on = gc.isenabled()
    gc.disable()  # freed by reference counting alone: no cycles between nodes and saved outputs
    try:
        x = ag.ones(100, dtype=ag.float64, requires_grad=True)
        y = x
        for i in range(10_000):
            y = (y * 1.0).exp() if i % 2 else y * 0.5
        loss = y.sum()
        del y
        refs = _saved_storages(loss)
        report = ag.graph.saved_tensors_report(loss)
        assert len(refs) >= 5000 and report.total >= 5000 * 800
        loss.backward()
        alive = sum(r() is not None and r() is not x._data._storage for r in refs)
        assert alive == 0, f"{alive} saved storages still alive after backward"
        assert ag.graph.saved_tensors_report(loss).total == 0
        assert x.grad.shape == (100,)
    finally:
        if was_on:
            gc.enable()


def test_dropping_the_loss_frees_the_graph_without_gc():
    was_on = gc.isenabled()
    gc.disable()
    try:
        x = ag.ones(100, requires_grad=True)
        y = x
        for _ in range(100):
            y = (y * 1.0).exp()
        refs = _saved_storages(y)
        assert len(refs) >= 100
        del y
        assert sum(r() is not None and r() is not x._data._storage for r in refs) == 0
    finally:
        if was_on:
            gc.enable()


# ------------------------------------------------------------------------------------- misuse errors
def test_non_scalar_backward_without_gradient():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*\[2\]"):
        (x * 2).backward()


def test_backward_on_tensor_that_does_not_require_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ag.tensor([1.0]).sum().backward()
    x = _leaf([1.0])
    with ag.no_grad():
        y = x * 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_in_place_on_leaf_requiring_grad():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad .* in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0
    with ag.no_grad():
        x.add_(1)  # the optimizer's way
    assert x.tolist() == [2.0, 3.0] and x.is_leaf and x.requires_grad


# --------------------------------------------------------------------------------- dtype and shape
def test_dtype_mixing_gives_each_input_its_own_dtype():
    p = _leaf([1.0, 2.0])
    q = _leaf([3.0, 4.0], dtype=ag.float64)
    r = p * q
    assert r.dtype == ag.float64
    r.sum().backward()
    assert p.grad.dtype == ag.float32 and p.grad.tolist() == [3.0, 4.0]
    assert q.grad.dtype == ag.float64 and q.grad.tolist() == [1.0, 2.0]


def test_broadcasting_reduces_gradients_to_input_shapes():
    p = ag.ones(3, 1, requires_grad=True)
    q = ag.arange(4.0).requires_grad_()
    s = ag.tensor(2.0, requires_grad=True)
    ((p * q) * s).sum().backward()
    assert p.grad.shape == (3, 1) and p.grad.tolist() == [[12.0]] * 3  # 2 * (0+1+2+3)
    assert q.grad.shape == (4,) and q.grad.tolist() == [6.0] * 4  # 2 * 3
    assert s.grad.shape == () and s.grad.item() == 18.0  # 3 * 6


def test_multiple_roots_and_shared_subgraph():
    x = _leaf([1.0, 2.0])
    h = x * x
    ag.backward([h.sum(), (h * 2).sum()], retain_graph=True)
    assert x.grad.tolist() == [6.0, 12.0]  # d(3 x^2)/dx
    x.grad = None
    ag.backward([h, h * 2], [ag.ones(2), ag.ones(2)])
    assert x.grad.tolist() == [6.0, 12.0]


def test_queue_callback_runs_once_after_the_outermost_backward():
    import autograd.engine as eng

    seen = []
    w = ag.tensor([1.0, 2.0], requires_grad=True)

    def hook(p):
        seen.append(("hook", p.grad.tolist()))
        eng.queue_callback(lambda: seen.append(("end", w.grad.tolist())))

    w.register_post_accumulate_grad_hook(hook)
    (w * w).sum().backward()
    assert seen == [("hook", [2.0, 4.0]), ("end", [2.0, 4.0])]
    with pytest.raises(RuntimeError, match="no backward pass"):
        eng.queue_callback(lambda: None)


# (PyTorch 2.13's outcome of a second backward without retain_graph: nodes that saved no tensor run again)
_SECOND_BACKWARD = {
    "x+1": (lambda x: (x + 1).sum(), [2.0, 2.0]), "x+x": (lambda x: (x + x).sum(), [4.0, 4.0]),
    "-x": (lambda x: (-x).sum(), [-2.0, -2.0]), "x-1": (lambda x: (x - 1).sum(), [2.0, 2.0]),
    "view": (lambda x: x.view(2, 1).sum(), [2.0, 2.0]), "t": (lambda x: x.reshape(1, 2).t().sum(), [2.0, 2.0]),
    "x[0]": (lambda x: x[0], [2.0, 0.0]), "mean": (lambda x: x.mean(), [1.0, 1.0]),
    "cat": (lambda x: ag.cat([x, x]).sum(), [4.0, 4.0]), "expand": (lambda x: x.expand(3, 2).sum(), [6.0, 6.0]),
    "clone": (lambda x: x.clone().sum(), [2.0, 2.0]), "double": (lambda x: x.double().sum(), [2.0, 2.0]),
    "x*2": (lambda x: (x * 2).sum(), None), "x*x": (lambda x: (x * x).sum(), None),
    "exp": (lambda x: x.exp().sum(), None), "relu": (lambda x: x.relu().sum(), None),
    "x/2": (lambda x: (x / 2).sum(), None), "abs": (lambda x: x.abs().sum(), None),
    "pow2": (lambda x: (x ** 2).sum(), None),
}


@pytest.mark.parametrize("name", list(_SECOND_BACKWARD))
def test_second_backward_without_retain_graph(name):
    fn, want = _SECOND_BACKWARD[name]
    x = ag.ones(2, requires_grad=True)
    y = fn(x)
    y.backward()
    if want is None:  # a node freed what it saved
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()
    else:
        y.backward()
        assert x.grad.tolist() == want


def test_tensor_hooks_must_keep_the_gradients_shape_dtype_and_type():
    x = ag.ones(3, 4, requires_grad=True)
    x.register_hook(lambda g: g.sum())  # on a leaf
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        (x * 2).sum().backward()
    x = ag.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())  # on an intermediate
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        y.sum().backward()
    x = ag.ones(3, requires_grad=True)
    x.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="must return a Tensor or None"):
        (x * 2).sum().backward()
    x = ag.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 3)
    x.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0, 7.0]
