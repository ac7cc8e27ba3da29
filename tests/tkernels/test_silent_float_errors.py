"""Overflow, inf - inf and inf * 0 are values, not warnings (PyTorch and our GPU kernels are silent; NumPy warns):
each op gives NumPy's values with no warning escaping, even under the caller's np.errstate(all="raise")."""

import warnings

import numpy as np
import pytest

import tkernels as tk

INF = np.inf
A = np.array([[INF, -INF, 3e38, 3e38], [1.0, INF, -3e38, 2.0]], np.float32)
B = np.array([[-INF, INF, 3e38, 0.0], [INF, 0.0, -3e38, 1.0]], np.float32)

CASES = [
    ("add", lambda t, a, b: t.add(a, b), lambda a, b: a + b),
    ("subtract", lambda t, a, b: t.subtract(a, a), lambda a, b: a - a),
    ("multiply", lambda t, a, b: t.multiply(a, b), lambda a, b: a * b),
    ("add_scalar", lambda t, a, b: a + 3e38, lambda a, b: a + np.float32(3e38)),
    ("sum", lambda t, a, b: t.sum(a, axis=1), lambda a, b: a.sum(axis=1)),
    ("sum_all", lambda t, a, b: t.sum(b), lambda a, b: b.sum()),
    ("mean", lambda t, a, b: t.mean(a, axis=0), lambda a, b: a.mean(axis=0)),
    ("cumulative_sum", lambda t, a, b: t.cumulative_sum(a, axis=1), lambda a, b: np.cumsum(a, axis=1)),
    ("prod", lambda t, a, b: t.prod(a, axis=1), lambda a, b: a.prod(axis=1)),
    ("matmul", lambda t, a, b: t.matmul(a, b.T), lambda a, b: a @ b.T),
    ("linear", lambda t, a, b: t.ops.linear(a, b, b[:, 3]), lambda a, b: a @ b.T + b[:, 3]),
    ("linear_relu", lambda t, a, b: t.ops.linear(a, b, activation="relu"), lambda a, b: np.maximum(a @ b.T, 0)),
    # grad a (2, 4), x b (2, 4), weight (4, 4): the gradients of x, weight and bias
    ("linear_backward", lambda t, a, b: t.concat([r.reshape(-1) for r in t.ops.linear_backward(
        a, b, t.concat([a, b]))]),
     lambda a, b: np.concatenate([(a @ np.concatenate([a, b])).ravel(), (a.T @ b).ravel(), a.sum(0)])),
]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name, ours, ref", CASES, ids=[c[0] for c in CASES])
def test_no_warning_and_numpy_values(device, name, ours, ref):
    a, b = tk.asarray(A, device=device), tk.asarray(B, device=device)
    with np.errstate(all="ignore"):
        want = ref(A, B)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            got = ours(tk, a, b).to("cpu").numpy()
    assert np.isnan(want).any() or np.isinf(want).any()  # (the case does hit a floating-point error)
    np.testing.assert_array_equal(got, want)


BIG = np.float32(3e38)
X = np.array([[INF, -INF, 1.0, BIG], [BIG, BIG, -BIG, np.nan]], np.float32)


def _training_ops():
    import autograd as ag
    import nn
    from nn import functional as F  # noqa: N812

    def t(a):
        return ag.tensor(np.asarray(a, np.float32), requires_grad=True)

    def adam():
        p = nn.Parameter(ag.tensor(np.ones(4, np.float32)))
        p.grad = ag.tensor(np.array([INF, BIG, 1.0, np.nan], np.float32))  # (grad squared overflows)
        nn.optim.Adam([p]).step()
        return p.detach()

    img = X.reshape(1, 1, 2, 4)
    return {
        "layer_norm": lambda: F.layer_norm(t(X), (4,)),
        "batch_norm": lambda: F.batch_norm(t(X), None, None, training=True),
        "conv2d": lambda: F.conv2d(t(img), t(np.ones((1, 1, 2, 2)))),
        "avg_pool2d": lambda: F.avg_pool2d(t(img), 2),
        "attention": lambda: F.scaled_dot_product_attention(*(t(X.reshape(1, 2, 2, 2)) for _ in range(3))),
        "cross_entropy": lambda: F.cross_entropy(t(X), ag.tensor([0, 1])),
        "mse_loss": lambda: F.mse_loss(t(X), t(-X)),
        "adam": adam,
    }


@pytest.mark.parametrize("name", list(_training_ops()))
def test_training_ops_on_non_finite_values_are_silent(name):
    """A diverging model on the cpu: forward and backward of the usual layers on inf/NaN/overflowing values give
    inf/NaN without a NumPy warning (every numpy backend call runs with them off, tkernels/backends/numpy)."""
    fn = _training_ops()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = fn()
        if y.requires_grad:
            y.sum().backward()
    assert not np.isfinite(y.detach().numpy()).all()


def test_every_numpy_implementation_is_handed_out_silenced():
    from tkernels import dispatch

    cpu = tk.Device("cpu")
    ops = sorted(op for op, backends in dispatch.implementations().items() if "numpy" in backends)
    assert len(ops) > 100
    for op in ops:
        fn = dispatch.lookup(op, cpu)
        assert (op == "empty") != hasattr(fn, "__wrapped__"), op
