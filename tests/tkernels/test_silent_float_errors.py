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
