"""``tkernels.ops.linear``: act(x @ weight.T + bias) + residual against NumPy (float64 reference on the operands'
exact values) on cpu and on (interpreted) cuda, every activation and dtype, and its bad-input errors."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.ops import linear

DEVICES = ["cpu"] + (["cuda"] if tkc.is_available() else [])
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}
_erf = np.vectorize(math.erf)
ACTS = {None: lambda y: y, "relu": lambda y: np.maximum(y, 0), "gelu": lambda y: 0.5 * y * (1 + _erf(y / 2**0.5)),
        "gelu_tanh": lambda y: 0.5 * y * (1 + np.tanh((2 / math.pi) ** 0.5 * (y + 0.044715 * y**3))),
        "silu": lambda y: y / (1 + np.exp(-y))}


def _np_dtype(d):
    return np.dtype(ml_dtypes.bfloat16) if d == "bfloat16" else np.dtype(d)


def _rand(rng, shape, d):
    return rng.uniform(-2, 2, shape).astype(_np_dtype(d))


def _ref(x, w, bias=None, act=None, res=None):
    y = x.astype(np.float64) @ w.astype(np.float64).T
    if bias is not None:
        y = y + bias.astype(np.float64)
    y = ACTS[act](y)
    return y if res is None else y + res.astype(np.float64)


def _close(got, want, d):
    assert str(got.dtype) == d
    rtol, atol = TOL[d]
    np.testing.assert_allclose(got.to("cpu").numpy().astype(np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", list(ACTS))
def test_activations(device, act):
    rng = np.random.default_rng(0)
    x, w, b, r = _rand(rng, (7, 33), "float32"), _rand(rng, (5, 33), "float32"), _rand(rng, (5,), "float32"), \
        _rand(rng, (7, 5), "float32")
    got = linear(tk.asarray(x).to(device), tk.asarray(w).to(device), tk.asarray(b).to(device), activation=act,
                 residual=tk.asarray(r).to(device))
    _close(got, _ref(x, w, b, act, r), "float32")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_dtypes_and_shapes(device, dtype):
    rng = np.random.default_rng(1)
    x, w, b = _rand(rng, (2, 3, 17), dtype), _rand(rng, (9, 17), dtype), _rand(rng, (9,), dtype)
    r = _rand(rng, (3, 9), dtype)  # broadcast over the leading dimension
    got = linear(tk.asarray(x).to(device), tk.asarray(w).to(device), tk.asarray(b).to(device), activation="gelu",
                 residual=tk.asarray(r).to(device))
    assert got.shape == (2, 3, 9)
    _close(got, _ref(x, w, b, "gelu", r), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_vector_input_no_bias_out_dtype_noncontiguous(device):
    rng = np.random.default_rng(2)
    x, w = _rand(rng, (17,), "bfloat16"), _rand(rng, (4, 17), "bfloat16")
    got = linear(tk.asarray(x).to(device), tk.asarray(w).to(device), out_dtype="float32")
    assert got.shape == (4,) and got.dtype == tk.float32
    np.testing.assert_allclose(got.to("cpu").numpy(), _ref(x, w), rtol=1e-5, atol=1e-5)
    xs = _rand(rng, (6, 10), "float32")
    X = tk.asarray(xs).to(device)[::2, ::2]  # strided rows and features
    W = tk.asarray(_rand(rng, (5, 3), "float32")).to(device).mT  # weight (N=3, K=5), transposed in memory
    _close(linear(X, W, activation="relu"), _ref(xs[::2, ::2], W.to("cpu").numpy(), None, "relu"), "float32")


@pytest.mark.parametrize("device", DEVICES)
def test_inputs_unchanged_and_fresh_result(device):
    rng = np.random.default_rng(3)
    x, w, r = _rand(rng, (4, 6), "float32"), _rand(rng, (4, 6), "float32"), _rand(rng, (4, 4), "float32")
    X, W, R = (tk.asarray(v).to(device) for v in (x, w, r))
    y = linear(X, W, residual=R)
    for a, v in ((X, x), (W, w), (R, r)):
        np.testing.assert_array_equal(a.to("cpu").numpy(), v)
    assert y._storage is not R._storage


def test_matches_composition_of_ops():
    rng = np.random.default_rng(4)
    x, w, b = (tk.asarray(_rand(rng, s, "float32")) for s in ((5, 8), (3, 8), (3,)))
    want = tk.maximum(x @ w.mT + b, 0)
    np.testing.assert_allclose(linear(x, w, b, activation="relu").numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------------------ errors
def _arr(*shape, dtype="float32"):
    return tk.ones(shape, dtype=dtype)


@pytest.mark.parametrize("args,kw,exc,match", [
    ((np.ones((2, 3)), _arr(4, 3)), {}, TypeError, r"linear: x must be an Array"),
    ((_arr(2, 3, dtype="int64"), _arr(4, 3)), {}, TypeError, r"linear: x must have a floating dtype.*int64"),
    ((_arr(2, 3), _arr(4, 3, 1)), {}, ValueError, r"linear: weight must be 2-D.*\(4, 3, 1\)"),
    ((_arr(2, 3), _arr(4, 5)), {}, ValueError, r"linear: x has 3 features.*weight expects 5"),
    ((_arr(2, 3), _arr(4, 3), _arr(3)), {}, ValueError, r"linear: bias must have shape \(4,\).*\(3,\)"),
    ((_arr(2, 3), _arr(4, 3)), {"activation": "tanh"}, ValueError, r"linear: unknown activation 'tanh'"),
    ((_arr(2, 3), _arr(4, 3)), {"residual": _arr(3, 4)}, ValueError,
     r"linear: residual .*\(3, 4\).*does not broadcast to the result shape \(2, 4\)"),
    ((_arr(2, 3), _arr(4, 3)), {"out_dtype": "int32"}, TypeError, r"linear: out_dtype must be a floating dtype"),
    ((_arr(), _arr(4, 3)), {}, ValueError, r"linear: x must have at least 1 dimension"),
])
def test_errors(args, kw, exc, match):
    with pytest.raises(exc, match=match):
        linear(*args, **kw)


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda")
def test_device_mismatch():
    with pytest.raises(RuntimeError, match=r"linear: expected all arrays on the same device.*cpu.*cuda"):
        linear(_arr(2, 3), _arr(4, 3).to("cuda"))
