"""The elementwise kernel families on cuda (interpreted on CI): sizes across program blocks, strided and
broadcast operands, the fast-path decisions, NumPy's special values and integer semantics, accuracy of the
functions built from Triton's primitives, and the documented departures (integer division by zero)."""

import warnings

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from scipy import special

import tkernels as tk
from tkernels.backends.triton import elementwise as backend
from tkernels.backends.triton._launch import launch
from tkernels.kernels.strided import strided_offset

pytestmark = pytest.mark.skipif(not tk.cuda.is_available(), reason="needs (interpreted) cuda")

INTS = ("int8", "int16", "int32", "int64", "uint8")


def cuda(a):
    return tk.asarray(np.asarray(a), device="cuda")


def same(got, want, rtol=0.0, atol=0.0):
    """Values (NaNs and signs of zeros included) equal, or within ``rtol`` (and ``atol``)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (got, want)
    g, w = got[~nan], want[~nan]
    if not atol:
        assert (np.signbit(g[w == 0]) == np.signbit(w[w == 0])).all(), (g, w)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------- blocks and layouts
def test_sizes_across_program_blocks_and_strided_broadcast_operands():
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 5003).astype(np.float32)  # more than one program (4096 interpreted, 1024 on a GPU)
    same(tk.tanh(cuda(x)).numpy(), np.tanh(x), 1e-6)
    base = rng.uniform(-3, 3, (60, 170)).astype(np.float32)
    row = rng.uniform(-3, 3, (85,)).astype(np.float32)
    a = cuda(base)[:, ::2]  # strided (60, 85)
    same(tk.atan2(a, cuda(row)).numpy(), np.arctan2(base[:, ::2], row), 1e-6)
    same(tk.maximum(cuda(row), a.mT.mT).numpy(), np.maximum(row, base[:, ::2]))
    cond = rng.random((60, 1)) < 0.5
    got = tk.where(cuda(cond), a, cuda(row)).numpy()
    same(got, np.where(cond, base[:, ::2], row))
    got = tk.clip(a, cuda(row[:1]) - 1.0, 1.5).numpy()
    same(got, np.clip(base[:, ::2], row[0] - 1, 1.5))


def test_fast_path_decisions(monkeypatch):
    """Contiguous operands (with or without Python scalars) take the index-free path; strided or broadcast
    ones the strided path; a strided out goes through a temporary."""
    seen = []
    monkeypatch.setattr(backend, "launch", lambda kernel, grid, *args, **meta: seen.append(meta))
    x = tk.empty((4, 6), dtype=tk.float32, device="cuda")
    for call in (lambda: tk.multiply(x, 0.5), lambda: tk.add(x, x), lambda: tk.exp(x), lambda: tk.lerp(x, x, 0.3),
                 lambda: tk.where(x > 0, x, 0.0)):
        seen.clear()
        call()
        assert seen[-1]["CONTIGUOUS"], seen
    for call in (lambda: tk.add(x, x[:1]), lambda: tk.exp(x.mT), lambda: tk.multiply(x[:, ::2], 2.0)):
        seen.clear()
        call()
        assert not seen[-1]["CONTIGUOUS"], seen
    assert seen[-1]["B_SCALAR"] and not seen[-1]["A_SCALAR"]


def test_out_into_strided_view_and_aliasing():
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 10
    big = cuda(np.zeros((4, 12), np.float32))
    tk.add(cuda(x), 1.0, out=big[:, ::2])
    want = np.zeros((4, 12), np.float32)
    want[:, ::2] = x + 1
    same(big.numpy(), want)
    a = cuda(x)
    tk.multiply(a, a, out=a)  # in place on itself
    same(a.numpy(), x * x)
    tk.negative(a[::2], out=a[::2])
    want = x * x
    want[::2] *= -1
    same(a.numpy(), want)


def test_out_overlapping_an_operand_goes_through_a_temporary(monkeypatch):
    """Programs must not read what others already wrote: an operand sharing memory with ``out`` otherwise
    than element for element is computed into a temporary (a single interpreted program would not show it)."""
    copies = []
    copy_ = backend.copy_
    monkeypatch.setattr(backend, "copy_", lambda out, x: copies.append(out) or copy_(out, x))
    sq = np.arange(16, dtype=np.float64).reshape(4, 4)
    c = cuda(sq)
    tk.multiply(c, c, out=c)  # element for element: in place
    assert not copies
    tk.add(c, c.mT, out=c)
    tk.subtract(c, c[:1], out=c)
    tk.where(c > 100, c[:, :1], c, out=c)
    assert len(copies) == 3
    want = sq * sq
    want = want + want.T
    want = want - want[:1]
    same(c.numpy(), np.where(want > 100, want[:, :1], want))


def test_empty_and_zero_d():
    assert tk.exp(cuda(np.zeros((0, 3), np.float32))).shape == (0, 3)
    same(tk.pow(cuda(np.float64(2.0)), 0.5).numpy(), np.sqrt(2.0))
    same(tk.where(cuda(np.bool_(True)), cuda(np.int8(3)), 7).numpy(), np.int8(3))


# ----------------------------------------------------------------------------------------- special values
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.5, -2.5, -3.0, 1e-30, -1e-30, 1e-7, 1e30, -1e30, np.inf, -np.inf,
           np.nan, 88.9, -88.9, 100.0, 0.999, -0.999, 2.0**28, 3.7, -0.3]
UNARY_REFS = {"abs": np.abs, "negative": np.negative, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
              "trunc": np.trunc, "round": np.round, "exp": np.exp, "expm1": np.expm1, "exp2": np.exp2, "log": np.log,
              "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "reciprocal": np.reciprocal,
              "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
              "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
              "atanh": np.arctanh, "erf": special.erf, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
              "signbit": np.signbit, "nan_to_num": np.nan_to_num, "logical_not": np.logical_not}
BINARY_REFS = {"atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "copysign": np.copysign,
               "nextafter": np.nextafter, "floor_divide": np.floor_divide, "remainder": np.remainder,
               "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "divide": np.divide}
ULP = {"float32": 4e-7, "float64": 2e-15}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_special_values(dtype):
    x = np.array(SPECIAL, dtype)
    xc = cuda(x)
    with np.errstate(all="ignore"):
        for name, ref in UNARY_REFS.items():
            same(getattr(tk, name)(xc).numpy(), ref(x), ULP[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_special_values(dtype):
    v = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -3.0, 3.0, np.inf, -np.inf, np.nan, 1e-30, 7.0, -0.7, 2.5],
                 dtype)
    a, b = (g.ravel() for g in np.meshgrid(v, v))
    ac, bc = cuda(a), cuda(b)
    with np.errstate(all="ignore"):
        for name, ref in BINARY_REFS.items():
            rtol = 1e-13 if name == "pow" and dtype == "float64" else ULP[dtype]
            same(getattr(tk, name)(ac, bc).numpy(), ref(a, b), rtol)


def test_round_half_to_even_and_decimals():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.675, 1e20, -0.4, 8388609.0], np.float32)
    same(tk.round(cuda(x)).numpy(), np.round(x))
    same(tk.round(cuda(x), decimals=2).numpy(), np.round(x, 2))
    same(tk.round(cuda(x.astype(np.float64)), decimals=-1).numpy(), np.round(x.astype(np.float64), -1))
    h = np.array([0.5, 1.5, 2.5, -2.5, 1000.5], np.float16)
    same(tk.round(cuda(h)).numpy(), np.round(h))


def test_nan_to_num_defaults_are_the_output_dtypes_extremes():
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        npd = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
        info = ml_dtypes.finfo(npd)
        x = np.array([np.inf, -np.inf, np.nan, 1.0]).astype(npd)
        got = tk.nan_to_num(cuda(x)).numpy().astype(np.float64)
        same(got, [float(info.max), float(info.min), 0.0, 1.0])
    got = tk.nan_to_num(cuda(np.array([np.nan, np.inf, -np.inf])), nan=1.5, posinf=1e300, neginf=-2.0).numpy()
    same(got, [1.5, 1e300, -2.0])


def test_parametrized_activations():
    x = np.linspace(-30, 30, 301)
    for dtype in (np.float32, np.float64):
        xs = x.astype(dtype)
        xc = cuda(xs)
        rtol = ULP[np.dtype(dtype).name] * 4
        atol = rtol  # gelu's 1 + tanh(.) cancels for negative x: tiny values, off by an ulp of 1
        same(tk.softplus(xc, beta=2.0, threshold=5.0).numpy(),
             np.where(2 * xs > 5, xs, np.logaddexp(0, 2 * xs) / 2), rtol)
        same(tk.elu(xc, alpha=0.7).numpy(), np.where(xs > 0, xs, 0.7 * np.expm1(xs)), rtol)
        same(tk.leaky_relu(xc, negative_slope=0.2).numpy(), np.where(xs > 0, xs, xs * dtype(0.2)), rtol)
        same(tk.gelu(xc, approximate="tanh").numpy(),
             0.5 * xs * (1 + np.tanh(np.sqrt(2 / np.pi) * (xs + 0.044715 * xs**3))), rtol, atol)
        p = np.linspace(0, 1, 101).astype(dtype)
        with np.errstate(all="ignore"):
            c = np.clip(p, dtype(0.1), dtype(0.9))
            same(tk.logit(cuda(p), eps=0.1).numpy(), np.log(c / (1 - c)), rtol)
    same(tk.leaky_relu(cuda(np.array([-7, 5], np.int32)), negative_slope=-1.5).numpy(), [7, 5])  # slope -> -1


# -------------------------------------------------------------------------------------------- accuracy
def _sweep(rng, lo, hi, n=2000, signed=True):
    m = 10 ** rng.uniform(lo, hi, n)
    return m * rng.choice([-1, 1], n) if signed else m


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_accuracy_of_built_functions(dtype):
    """expm1/log1p/atan/... are built from Triton's exp/log/sqrt: within a few ulp of the exact value (here the
    primitives are NumPy's; on a GPU their own error adds)."""
    rng = np.random.default_rng(1)
    cases = {"expm1": (np.expm1, _sweep(rng, -12, 1.5)), "log1p": (np.log1p, _sweep(rng, -12, 3, signed=False)),
             "atan": (np.arctan, _sweep(rng, -10, 10)), "asin": (np.arcsin, _sweep(rng, -10, 0) * 0.999),
             "acos": (np.arccos, _sweep(rng, -10, 0) * 0.999), "sinh": (np.sinh, _sweep(rng, -10, 1.9)),
             "cosh": (np.cosh, _sweep(rng, -10, 1.9)), "tanh": (np.tanh, _sweep(rng, -10, 1.5)),
             "asinh": (np.arcsinh, _sweep(rng, -10, 20)), "acosh": (np.arccosh, 1 + _sweep(rng, -10, 10, signed=False)),
             "atanh": (np.arctanh, _sweep(rng, -10, 0) * 0.9999)}
    tol = {"float32": 6e-7, "float64": 1.5e-15}[dtype]
    for name, (ref, x) in cases.items():
        x = x.astype(dtype)
        same(getattr(tk, name)(cuda(x)).numpy(), ref(x.astype(np.float64)), tol)
    a, b = _sweep(rng, -8, 8).astype(dtype), _sweep(rng, -8, 8).astype(dtype)
    for name, ref in (("atan2", np.arctan2), ("hypot", np.hypot)):
        same(getattr(tk, name)(cuda(a), cuda(b)).numpy(), ref(a.astype(np.float64), b.astype(np.float64)), tol)
    base, e = _sweep(rng, -3, 3, signed=False).astype(dtype), rng.uniform(-8, 8, 2000).astype(dtype)
    same(tk.pow(cuda(base), cuda(e)).numpy(), np.power(base.astype(np.float64), e.astype(np.float64)),
         {"float32": 6e-8, "float64": 2e-14}[dtype])  # float32 through float64; float64 loses log2's rounding


# ---------------------------------------------------------------------------------------- integer semantics
@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_power_and_shifts_follow_numpy(dtype):
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -200), min(info.max, 200), 300).astype(dtype)
    b = rng.integers(max(info.min, -20), 20, 300).astype(dtype)
    b[b == 0] = 3
    ac, bc = cuda(a), cuda(b)
    for name, ref in (("floor_divide", np.floor_divide), ("remainder", np.remainder), ("subtract", np.subtract),
                      ("multiply", np.multiply), ("bitwise_xor", np.bitwise_xor), ("less_equal", np.less_equal)):
        np.testing.assert_array_equal(getattr(tk, name)(ac, bc).numpy(), ref(a, b), err_msg=name)
        for s in (3, -7, 300):  # scalars wrap to the dtype, as the NumPy backend casts them
            if not (dtype == "uint8" and s < 0):
                np.testing.assert_array_equal(getattr(tk, name)(ac, s).numpy(), ref(a, np.array(s).astype(dtype)))
    e = rng.integers(0, 12, 300).astype(dtype)
    np.testing.assert_array_equal(tk.pow(ac, cuda(e)).numpy(), np.power(a, e))  # wraps like NumPy
    s = rng.integers(0, 70, 300).astype(dtype)
    for name, ref in (("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)):
        np.testing.assert_array_equal(getattr(tk, name)(ac, cuda(s)).numpy(), ref(a, s), err_msg=name)


def test_integer_departures_documented():
    """A zero divisor or negative exponent in an array is recorded by the kernel and raises at the next sync
    (tkernels/cuda/device_errors.py); the elements get PyTorch's values: x // y and x % y give 0 where y holds 0,
    negative exponents follow PyTorch. A Python-scalar divisor or exponent is known on the host: 0 and negative
    ones raise before the launch, like the NumPy backend."""
    a = cuda(np.array([1, -1, -1, 2, 7, 5], np.int32))
    r = tk.pow(a, cuda(np.array([-3, -3, -2, -1, 2, 0], np.int32)))
    with pytest.raises(tk.NegativeIntegerPowerError, match="pow: .*exponent -3"):
        r.numpy()
    np.testing.assert_array_equal(r.numpy(), [1, -1, 1, 0, 49, 1])
    with pytest.raises(tk.NegativeIntegerPowerError, match="pow: Integers to negative integer powers"):
        tk.pow(a, -2)
    for op in ("floor_divide", "remainder"):
        with pytest.raises(tk.ZeroDivisionError, match=f"ZeroDivisionError: {op}: integer division by zero"):
            getattr(tk, op)(a, 0)
        r = getattr(tk, op)(a, cuda(np.zeros(6, np.int32)))
        with pytest.raises(tk.ZeroDivisionError, match=f"{op}: integer division by zero"):
            r.numpy()
        np.testing.assert_array_equal(r.numpy(), np.zeros(6))


def test_narrow_integers_and_zero_d_operands():
    x = np.array([100, -100, 7], np.int8)
    wide = cuda(np.array(300, np.int64))  # int8[n] op int64 0-d computes in int8: 300 wraps to 44
    np.testing.assert_array_equal(tk.add(cuda(x), wide).numpy(), x + np.int8(44))
    np.testing.assert_array_equal(tk.less(cuda(x), wide).numpy(), x < 44)
    u = np.array([3, 250], np.uint8)
    np.testing.assert_array_equal(tk.subtract(cuda(u), 5).numpy(), u - np.uint8(5))
    np.testing.assert_array_equal(tk.negative(cuda(u)).numpy(), -u)


def test_bool_and_logical_ops():
    p, q = np.array([True, False, True, False]), np.array([True, True, False, False])
    pc, qc = cuda(p), cuda(q)
    for name in ("add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "equal"):
        got = getattr(tk, name)(pc, qc)
        assert got.dtype == tk.bool
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(p, q).astype(bool), err_msg=name)
    np.testing.assert_array_equal(tk.bitwise_invert(pc).numpy(), ~p)
    f = np.array([np.nan, 0.0, -0.0, 0.5, 2.0], np.float32)
    for name in ("logical_and", "logical_or", "logical_xor"):
        fn, ref = getattr(tk, name), getattr(np, name)
        np.testing.assert_array_equal(fn(cuda(f), cuda(f[::-1].copy())).numpy(), ref(f, f[::-1]))
        np.testing.assert_array_equal(fn(cuda(f), 0.5).numpy(), ref(f, 0.5))  # 0.5 is true, not int(0.5)
        np.testing.assert_array_equal(fn(cuda(np.array([0, 2], np.int8)), cuda(f[:2])).numpy(), ref([0, 2], f[:2]))
    np.testing.assert_array_equal(tk.logical_not(cuda(f)).numpy(), np.logical_not(f))


# ----------------------------------------------------------------------------------------- dtypes and scalars
def test_float64_scalars_are_exact_and_halves_round_to_nearest_even():
    x = np.array([1.0, 2.0, 1e-20])
    same(tk.add(cuda(x), 0.1).numpy(), x + 0.1)  # not 0.1 rounded to float32
    same(tk.clip(cuda(x), 1.1, None).numpy(), np.clip(x, 1.1, None))
    same(tk.lerp(cuda(x), 3.3, 0.1).numpy(), x + 0.1 * (3.3 - x))
    b = np.array([1.0, 3.0, 7.0], np.float32)
    got = tk.divide(cuda(b.astype(ml_dtypes.bfloat16)), 3.0).numpy()  # computed in float32, rounded once
    same(got.astype(np.float64), (b / np.float32(3.0)).astype(ml_dtypes.bfloat16).astype(np.float64))
    got = tk.add(cuda(np.array([2048.0, 1.0], np.float16)), 1.0).numpy()
    same(got, np.array([2048.0, 1.0], np.float16) + np.float16(1))  # 2049 ties to even: 2048


def test_mixed_dtypes_promote_like_the_numpy_backend():
    rng = np.random.default_rng(3)
    arrays = {d: rng.uniform(-5, 5, (3, 4)).astype(np.float32).astype(d) for d in ("int8", "uint8", "float16",
                                                                                  "float64", "bool")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d1, a in arrays.items():
            for d2, b in arrays.items():
                for name in ("multiply", "less", "divide", "maximum"):
                    if d1 == d2 == "bool" and name == "divide":
                        continue
                    want = getattr(tk, name)(tk.asarray(a), tk.asarray(b)[:1])
                    got = getattr(tk, name)(cuda(a), cuda(b)[:1])
                    assert got.dtype == want.dtype, (name, d1, d2)
                    same(got.numpy().astype(np.float64), want.numpy().astype(np.float64), 1e-3)


# ---------------------------------------------------------------------------------------------- offsets
@triton.jit
def _offsets_kernel(o_ptr, start, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, BLOCK: tl.constexpr):
    idx = start + tl.arange(0, BLOCK).to(tl.int64)
    tl.store(o_ptr + tl.arange(0, BLOCK), strided_offset(idx, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5))


def test_strided_offsets_are_int64():
    """Linear indices and element offsets past 2**31 (the kernels' ``pid * BLOCK`` is int64 too)."""
    sizes, strides = (3, 5, 7, 11, 13, 2**22), (2**40, 2**33, 2**30, 2**20, 2**10, 3)
    start = 2**33 + 12345
    out = tk.empty((16,), dtype=tk.int64, device="cuda")
    launch(_offsets_kernel, (1,), out, start, *sizes[1:], *strides, BLOCK=16)
    idx = np.unravel_index(np.arange(start, start + 16), sizes)
    np.testing.assert_array_equal(out.numpy(), sum(i * s for i, s in zip(idx, strides)))
