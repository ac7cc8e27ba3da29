"""The matmul kernel past what the op table reaches (tests/tkernels/opinfos/linalg.py runs matmul, vecdot,
tensordot, outer and einsum on small samples): odd sizes around the interpreter's block sizes, transposed and
strided operands read in place, broadcast batches (folded into M or N, on the grid, or looped), every dtype and
mixed dtypes, the TF32 switch, the fused linear epilogue; large sizes and determinism on a real GPU (``gpu``).

References: NumPy in float64 on the operands' exact values (half operands are representable), so tolerances are
the output dtype's rounding (see opinfos/linalg.py for the reasoning).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
import tkernels.backends.matmul as mm_flags
import tkernels.cuda as tkc
from tkernels.ops import linear

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

if tkc.is_available():
    from tkernels.backends.triton import linalg as backend
    from tkernels.kernels import matmul as mk
else:  # pragma: no cover - the module is skipped
    backend = mk = None

TOL = {"float32": (1e-5, 1e-4), "float64": (1e-12, 1e-12), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}
NP = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _np(dtype):
    return NP.get(dtype, np.dtype(dtype) if dtype != "bfloat16" else None)


def _rand(rng, shape, dtype):
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        return rng.uniform(-2, 2, shape).astype(_np(dtype))
    return rng.integers(-9, 10, shape).astype(_np(dtype))


def _check(actual, expected, dtype):
    a = actual.numpy() if isinstance(actual, tk.Array) else actual
    assert str(actual.dtype) == dtype
    if dtype.startswith(("int", "uint")):
        np.testing.assert_array_equal(a, expected)
    else:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(a.astype(np.float64), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def _ref(a, b):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return np.matmul(a.astype(np.int64), b.astype(np.int64))
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _cuda(x):
    return tk.asarray(x).to("cuda")


@pytest.fixture
def launches(monkeypatch):
    """Record the kernel launches of the matmul backend (they still run)."""
    seen = []
    real = backend.launch

    def record(kernel, grid, *args, **meta):
        seen.append((grid, dict(zip(mk.matmul_kernel.arg_names, args)), meta))
        return real(kernel, grid, *args, **meta)

    monkeypatch.setattr(backend, "launch", record)
    return seen


# ------------------------------------------------------------------------------------------ sizes and dtypes
@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (7, 33, 1), (33, 7, 65), (65, 129, 33), (1, 65, 129), (129, 1, 7)])
def test_odd_sizes_float32(M, K, N):
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a, b = _rand(rng, (M, K), "float32"), _rand(rng, (K, N), "float32")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8"])
def test_dtypes(dtype):
    rng = np.random.default_rng(1)
    a, b = _rand(rng, (33, 65), dtype), _rand(rng, (65, 7), dtype)
    want = _ref(a, b)
    if dtype.startswith(("int", "uint")):
        want = want.astype(_np(dtype))  # integer products wrap to the dtype, like NumPy
    _check(tk.matmul(_cuda(a), _cuda(b)), want, dtype)


def test_integer_wraps_like_numpy():
    a = np.full((2, 40), 100, np.int8)
    b = np.full((40, 3), 7, np.int8)
    got = tk.matmul(_cuda(a), _cuda(b)).numpy()
    np.testing.assert_array_equal(got, np.matmul(a, b))  # 28000 wraps in int8
    np.testing.assert_array_equal(got, tk.matmul(tk.asarray(a), tk.asarray(b)).numpy())


@pytest.mark.parametrize("d1,d2", [("int8", "float16"), ("float16", "float32"), ("bfloat16", "float64"),
                                   ("uint8", "int32"), ("int32", "bfloat16")])
def test_mixed_dtypes_convert_on_load(d1, d2):
    rng = np.random.default_rng(2)
    a, b = _rand(rng, (7, 33), d1), _rand(rng, (33, 5), d2)
    got = tk.matmul(_cuda(a), _cuda(b))
    assert got.dtype == tk.result_type(tk.asarray(a), tk.asarray(b))
    want = _ref(a, b)
    _check(got, want if got.dtype.kind == "f" else want.astype(got.dtype.numpy), str(got.dtype))


def test_block_boundaries_multiple_programs(monkeypatch, launches):
    """Tiles of 16 (forced) over 33 x 40 x 37: partial tiles in M and N, a partial K step, the GROUP_M order."""
    monkeypatch.setattr(backend, "_interp_blocks",
                        lambda M, N, K, dot: {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})
    rng = np.random.default_rng(3)
    a, b = _rand(rng, (33, 37), "float32"), _rand(rng, (37, 40), "float32")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "float32")
    assert launches[0][0] == (3 * 3, 1, 1)


# ------------------------------------------------------------------------------------- layouts in place
def test_transposed_and_strided_operands_are_read_in_place(launches):
    rng = np.random.default_rng(4)
    a, b = _rand(rng, (40, 33), "float32"), _rand(rng, (14, 65), "float32")
    A, B = _cuda(a), _cuda(b)
    x1, x2 = A.mT, B[::2, ::3]  # (33, 40) transposed; (7, 22) strided... K must agree
    x1 = x1[:, :7]
    got = tk.matmul(x1, x2)
    _check(got, _ref(a.T[:, :7], b[::2, ::3]), "float32")
    args = launches[-1][1]
    assert args["a_ptr"] is x1 and args["b_ptr"] is x2  # no copies
    assert (args["stride_am"], args["stride_ak"]) == (1, 33)
    assert (args["stride_bk"], args["stride_bn"]) == (130, 3)


def test_negative_and_zero_strides():
    rng = np.random.default_rng(5)
    a, b = _rand(rng, (9, 6), "float64"), _rand(rng, (6,), "float64")
    A = _cuda(a)[::-1]
    Bc = tk.broadcast_to(_cuda(b)[:, None], (6, 5))  # stride 0 columns
    _check(tk.matmul(A, Bc), _ref(a[::-1], np.broadcast_to(b[:, None], (6, 5))), "float64")


def test_batch_shared_weight_folds_into_m(launches):
    rng = np.random.default_rng(6)
    a, w = _rand(rng, (3, 5, 33), "float32"), _rand(rng, (33, 7), "float32")
    _check(tk.matmul(_cuda(a), _cuda(w)), _ref(a, w), "float32")
    grid, args, _ = launches[-1]
    assert len(launches) == 1 and grid[2] == 1 and args["M"] == 15


def test_batch_shared_left_operand_folds_into_n(launches):
    rng = np.random.default_rng(7)
    a, b = _rand(rng, (1, 33), "float32"), _rand(rng, (6, 33, 1), "float32")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "float32")
    assert len(launches) == 1 and launches[-1][1]["N"] == 6


def test_broadcast_batch_on_the_grid(launches):
    rng = np.random.default_rng(8)
    a, b = _rand(rng, (4, 1, 7, 9), "bfloat16"), _rand(rng, (4, 3, 9, 5), "bfloat16")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "bfloat16")
    # (4, 3) batch: a's strides (63, 0) and b's (135, 45) do not merge: one launch per outer entry, 3 on the grid
    assert [g[2] for g, _, _ in launches] == [3] * 4
    assert launches[0][1]["stride_ab"] == 0


def test_batch_collapses_to_one_grid_axis(launches):
    rng = np.random.default_rng(9)
    a, b = _rand(rng, (2, 3, 5, 9), "float16"), _rand(rng, (2, 3, 9, 4), "float16")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "float16")
    assert len(launches) == 1 and launches[0][0][2] == 6


def test_batch_past_the_grid_limit_is_chunked(monkeypatch, launches):
    monkeypatch.setattr(backend, "MAX_BATCH", 4)
    rng = np.random.default_rng(10)
    a, b = _rand(rng, (10, 3, 17), "float32"), _rand(rng, (10, 17, 2), "float32")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "float32")
    assert [g[2] for g, _, _ in launches] == [4, 4, 2]


def test_k_equal_one_runs_elementwise(launches):
    rng = np.random.default_rng(11)
    a, b = _rand(rng, (3, 5, 1), "bfloat16"), _rand(rng, (3, 1, 4), "bfloat16")
    _check(tk.matmul(_cuda(a), _cuda(b)), _ref(a, b), "bfloat16")
    assert not launches  # an outer product per batch entry: the elementwise multiply


def test_out_and_inplace():
    rng = np.random.default_rng(12)
    a, b = _rand(rng, (7, 7), "float32"), _rand(rng, (7, 7), "float32")
    A = _cuda(a)
    A @= _cuda(b)
    _check(A, _ref(a, b), "float32")


# --------------------------------------------------------------------------------------------------- TF32
def test_tf32_flag_switches_the_path(monkeypatch, launches):
    rng = np.random.default_rng(13)
    a, b = _rand(rng, (5, 17), "float32"), _rand(rng, (17, 3), "float32")
    assert mm_flags.allow_tf32 is False  # the default, like PyTorch
    tk.matmul(_cuda(a), _cuda(b))
    monkeypatch.setattr(mm_flags, "allow_tf32", True)
    got = tk.matmul(_cuda(a), _cuda(b))
    linear(_cuda(a), _cuda(b.T.copy()))
    tk.matmul(_cuda(a.astype(np.float16)), _cuda(b.astype(np.float16)))  # halves: unaffected
    assert [m["DOT"] for _, _, m in launches] == [mk.DOT_F32, mk.DOT_TF32, mk.DOT_TF32, mk.DOT_F16]
    np.testing.assert_allclose(got.numpy(), _ref(a, b), rtol=1e-2, atol=1e-2)  # TF32 accuracy (IEEE interpreted)


# ---------------------------------------------------------------------------------------- linear epilogue
ACTS = {None: lambda y: y, "relu": lambda y: np.maximum(y, 0),
        "gelu": lambda y: 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2))),
        "gelu_tanh": lambda y: 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3))),
        "silu": lambda y: y / (1 + np.exp(-y))}


def _linear_ref(x, w, bias=None, act=None, res=None):
    y = x.astype(np.float64) @ w.astype(np.float64).T
    if bias is not None:
        y = y + bias.astype(np.float64)
    y = ACTS[act](y)
    return y if res is None else y + res.astype(np.float64)


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_linear_epilogue_matches_cpu_and_numpy(act, dtype, launches):
    rng = np.random.default_rng(14)
    x, w = _rand(rng, (2, 7, 33), dtype), _rand(rng, (9, 33), dtype)
    bias, res = _rand(rng, (9,), dtype), _rand(rng, (7, 9), dtype)
    want = _linear_ref(x, w, bias, act, res)
    got = linear(_cuda(x), _cuda(w), _cuda(bias), activation=act, residual=_cuda(res))
    cpu = linear(tk.asarray(x), tk.asarray(w), tk.asarray(bias), activation=act, residual=tk.asarray(res))
    _check(got, want, dtype)
    _check(cpu, want, dtype)
    assert len(launches) == 1 and launches[0][2]["ACT"] == mk.ACT_CODES[act]
    assert launches[0][2]["HAS_BIAS"] and launches[0][2]["HAS_RESIDUAL"]


@pytest.mark.parametrize("case", ["plain", "bias", "residual", "out_dtype", "float64", "strided"])
def test_linear_variants(case, launches):
    rng = np.random.default_rng(15)
    dt = "float64" if case == "float64" else "float16"
    x, w = _rand(rng, (65, 17), dt), _rand(rng, (33, 17), dt)
    kw, want_dt = {}, dt
    bias = res = None
    if case == "bias":
        bias = _rand(rng, (33,), "float32")  # converted to the accumulator
    if case == "residual":
        res = _rand(rng, (33,), dt)  # broadcast over the rows: stride 0
    if case == "out_dtype":
        kw["out_dtype"] = tk.float32
        want_dt = "float32"
    X, W = _cuda(x), _cuda(w)
    if case == "strided":
        X, W, x, w = X[::2], W.mT.mT[:, ::1], x[::2], w
    got = linear(X, W, None if bias is None else _cuda(bias), residual=None if res is None else _cuda(res), **kw)
    want = _linear_ref(x, w, bias, None, res)
    if want_dt == "float32":  # a single rounding of the float32 accumulator
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
        assert got.dtype == tk.float32
    else:
        _check(got, want, want_dt)
    assert len(launches) == 1 and launches[0][1]["c_ptr"].dtype == got.dtype


def test_linear_k_zero_and_empty():
    b = _cuda(np.array([1.0, -2.0], np.float32))
    y = linear(tk.zeros((3, 0), device="cuda"), tk.zeros((2, 0), device="cuda"), b, activation="relu")
    np.testing.assert_array_equal(y.numpy(), [[1.0, 0.0]] * 3)
    assert linear(tk.zeros((0, 4), device="cuda"), tk.zeros((2, 4), device="cuda")).shape == (0, 2)


# ----------------------------------------------------------------------------------------- on a real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_large_half_matmul_vs_float32_reference(dtype):
    rng = np.random.default_rng(20)
    a = rng.standard_normal((2048, 2048)).astype(_np(dtype))
    b = rng.standard_normal((2048, 2048)).astype(_np(dtype))
    want = a.astype(np.float32) @ b.astype(np.float32)
    got = tk.matmul(_cuda(a), _cuda(b)).numpy().astype(np.float32)
    # one rounding to the half dtype of a float32 sum of 2048 products (|result| ~ 45)
    rtol = 2 ** -7 if dtype == "bfloat16" else 2 ** -10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 45)


@pytest.mark.gpu
def test_large_matmul_is_deterministic():
    rng = np.random.default_rng(21)
    a = _cuda(rng.standard_normal((2048, 1536)).astype(ml_dtypes.bfloat16))
    b = _cuda(rng.standard_normal((1536, 1024)).astype(ml_dtypes.bfloat16))
    r1, r2 = tk.matmul(a, b).numpy(), tk.matmul(a, b).numpy()
    assert r1.tobytes() == r2.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_large_ieee_and_transposed(dtype, rtol):
    rng = np.random.default_rng(22)
    a, b = rng.standard_normal((1031, 777)), rng.standard_normal((1500, 1031))
    got = tk.matmul(_cuda(a.astype(dtype)).mT, _cuda(b.astype(dtype)).mT).numpy()
    np.testing.assert_allclose(got, a.T @ b.T, rtol=rtol, atol=rtol * 40)


@pytest.mark.gpu
def test_large_linear_bf16():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((4, 512, 1024)).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((4096, 1024)) / 32).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal(4096).astype(ml_dtypes.bfloat16)
    got = linear(_cuda(x), _cuda(w), _cuda(bias), activation="gelu").numpy().astype(np.float64)
    y = x.astype(np.float32).reshape(-1, 1024) @ w.astype(np.float32).T + bias.astype(np.float32)
    want = ACTS["gelu"](y.astype(np.float64)).reshape(4, 512, 4096)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -7 * 4)
