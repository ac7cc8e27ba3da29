"""Exact GELU on the cpu keeps 1 + erf(x / sqrt(2)) from its forward for the backward: the same values and bits as
the node that recomputes it, for every shape and dtype, with the graph's usual errors and its double backward."""

import numpy as np
import pytest

import autograd as ag
import tkernels as tk
from autograd.ops import elementwise as ew


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).reshape(-1).view(np.uint8)


def _inputs(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    if x.size > 4:  # the edges: signed zeros, infinities, NaN, big and tiny values
        flat = x.reshape(-1)
        flat[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
        flat[-1] = 1e-30
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (33, 17), (3, 5, 9)])
def test_same_bits_as_the_recomputing_node(dtype, shape):
    rng = np.random.default_rng(len(shape) * 10 + np.dtype(dtype).itemsize)
    xn = _inputs(rng, shape, dtype)
    g = ag.tensor(rng.standard_normal(shape).astype(dtype))
    a, b = ag.tensor(xn, requires_grad=True), ag.tensor(xn, requires_grad=True)
    ya, yb = ag.gelu(a), ew._gelu_any(b, approximate="none")
    assert type(ya.grad_fn) is ew._GeluSavedCdf and type(ya.grad_fn).__name__ == "GeluBackward0"
    assert type(yb.grad_fn) is not ew._GeluSavedCdf
    np.testing.assert_array_equal(_bits(ya), _bits(yb))
    np.testing.assert_array_equal(_bits(ya), _bits(ag.tensor(tk.gelu(tk.asarray(xn)).numpy())))
    ya.backward(g)
    yb.backward(g)
    np.testing.assert_array_equal(_bits(a.grad), _bits(b.grad))


def test_non_contiguous_and_broadcast_gradient():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((9, 12)).astype(np.float32)
    a = ag.tensor(base, requires_grad=True)
    b = ag.tensor(base, requires_grad=True)
    ya = ag.gelu(a[::2, 1::3].t())
    yb = ew._gelu_any(b[::2, 1::3].t(), approximate="none")
    np.testing.assert_array_equal(_bits(ya), _bits(yb))
    (ya * 2.0).sum().backward()
    (yb * 2.0).sum().backward()
    np.testing.assert_array_equal(_bits(a.grad), _bits(b.grad))


def test_values_against_the_float64_formula_and_gradcheck():
    from math import erf, exp, pi, sqrt

    x = np.linspace(-5, 5, 41)
    t = ag.tensor(x, requires_grad=True)
    y = ag.gelu(t)
    y.sum().backward()
    want_y = [v * 0.5 * (1 + erf(v / sqrt(2))) for v in x]
    want_g = [0.5 * (1 + erf(v / sqrt(2))) + v * exp(-v * v / 2) / sqrt(2 * pi) for v in x]
    np.testing.assert_allclose(y.detach().numpy(), want_y, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(t.grad.numpy(), want_g, rtol=1e-13, atol=1e-15)
    assert ag.gradcheck(ag.gelu, (ag.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True),))
    assert ag.gradgradcheck(ag.gelu, (ag.tensor(np.random.default_rng(1).standard_normal(5), requires_grad=True),))


def test_double_backward_uses_the_formula():
    xn = np.array([-1.5, -0.2, 0.0, 0.7, 2.0])
    a, b = ag.tensor(xn, requires_grad=True), ag.tensor(xn, requires_grad=True)
    (ga,) = ag.grad(ag.gelu(a).sum(), a, create_graph=True)
    (gb,) = ag.grad(ew._gelu_any(b, approximate="none").sum(), b, create_graph=True)
    np.testing.assert_array_equal(ga.detach().numpy(), gb.detach().numpy())
    ga.sum().backward()
    gb.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-14)


def test_graph_errors_and_the_saved_memory_are_those_of_a_saved_tensor():
    x = ag.tensor(np.ones((4, 8), np.float32), requires_grad=True)
    h = x * 1.0
    y = ag.gelu(h)
    rep = ag.graph.saved_tensors_report(y)
    assert [r["bytes"] for r in rep.rows if r["op"] == "GeluBackward0"] == [2 * 4 * 8 * 4]  # x and 1 + erf
    y.sum().backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    y.sum().backward()  # kept: a second backward gives the same again
    np.testing.assert_array_equal(x.grad.numpy(), 2 * g1)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    z = ag.gelu(h)
    with ag.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_other_paths_keep_the_recomputing_node():
    x = ag.tensor(np.linspace(-2, 2, 6, dtype=np.float32), requires_grad=True)
    assert type(ag.gelu(x, approximate="tanh").grad_fn) is not ew._GeluSavedCdf
    assert type(ag.gelu(x.to(ag.float16)).grad_fn) is not ew._GeluSavedCdf
    with ag.no_grad():
        assert ag.gelu(x).grad_fn is None
    out = ag.empty(6)
    ag.gelu(x.detach(), out=out)
    np.testing.assert_array_equal(out.numpy(), tk.gelu(tk.asarray(x.detach().numpy())).numpy())


def test_bad_input_is_refused_before_anything_is_saved():
    x = ag.tensor(np.ones(3, np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="gelu\\(\\): argument 'input' must be Tensor, not ndarray"):
        ag.gelu(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'foo'"):
        ag.gelu(x, approximate="foo")
