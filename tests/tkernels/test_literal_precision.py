"""Python literals reach every dtype in one rounding (issue 13): creation (asarray, full, arange, linspace,
ag.tensor), fills, item assignment, scalar sides of where/clip and scalar arithmetic store what NumPy's
``np.asarray(v, dtype)`` stores, bit for bit (-0.0 keeps its sign; any NaN matches NaN). They used to round
through float32 first (0.3 became 0.30000001192092896 in float64, 1e-300 became 0.0, 1e300 inf). Integer
targets refuse NaN, infinities and out-of-range values with a ValueError, as ``full`` and PyTorch do.

Properties (hypothesis) run on cpu; the table of cases runs on cpu and interpreted cuda."""

import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd as ag
import tkernels as tk

SETTINGS = settings(deadline=None, max_examples=50, database=None)
DEVICES = ["cpu", "cuda"]
DTYPES = tk.dtypes.all_dtypes

# values that single out a float32 (or double) rounding, a range edge or a sign
FLOATS = [0.3, 0.1, -1.2, 16777217.0, 1e-300, -1e-300, 1e300, -1e300, 5e-324, 2.0 ** -1074 * 3, -0.0, 0.0,
          float("inf"), float("-inf"), float("nan"), 1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -8 + 2 ** -40, 65519.99,
          65520.0, 3.4028235677973366e38, 3.402823669209385e38, 1.401298464324817e-45, 7.1e-46, 6e-8, 1e-8,
          2.0 ** 53 + 2, 2147483647.0, 2147483648.0, -2147483648.0, 255.0, 255.5, -0.5, 127.9, -128.9, 2.7, -2.7]
INTS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 2 ** 24 + 1, 2 ** 31 - 1, 2 ** 31,
        -(2 ** 31) - 1, 2 ** 53 + 1, 2 ** 60 + 2 ** 36 + 1, 2 ** 62 + 1, 2 ** 63 - 1, -(2 ** 63), 2 ** 63,
        -(2 ** 63) - 1, 2 ** 64 + 1]


@st.composite
def dtype_and_value(draw):
    """(dtype, value): any dtype, and a Python float (any bit pattern: subnormals, NaNs, infinities), int
    (beyond 2**53 and int64 too, or in the dtype's range) or bool."""
    d = draw(st.sampled_from(DTYPES))
    values = [st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), st.sampled_from(FLOATS),
              st.floats(min_value=-(2.0 ** 64), max_value=2.0 ** 64), st.sampled_from(INTS),
              st.integers(-(2 ** 64), 2 ** 64), st.booleans()]
    if d.kind in "iu":
        info = np.iinfo(d.numpy)
        values += [st.integers(int(info.min), int(info.max))] * 2
    return d, draw(st.one_of(values))


def refused(v, d) -> bool:
    """An integer dtype refuses NaN, infinities and values outside its range (``full``'s rule, like PyTorch)."""
    if d.kind not in "iu" or isinstance(v, bool):
        return False
    if isinstance(v, float) and not np.isfinite(v):
        return True
    info = np.iinfo(d.numpy)
    return not int(info.min) <= v <= int(info.max)


def ref(v, d) -> np.ndarray:
    """NumPy's one-step conversion (floats past a dtype's range become inf: NumPy warns, we stay silent)."""
    with np.errstate(over="ignore"):
        return np.asarray(v, dtype=d.numpy)


def host(x) -> np.ndarray:
    return np.array((x.detach().cpu() if isinstance(x, ag.Tensor) else x).numpy(), order="C")


def assert_stored(got, want: np.ndarray):
    """Every element of ``got`` is ``want`` bit for bit (the sign of -0.0 included); any NaN matches a NaN."""
    got = host(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    flat = got.reshape(-1)
    if want.dtype.kind == "f" and np.isnan(want.astype(np.float64)):
        assert np.isnan(flat.astype(np.float64)).all(), (flat, want)
        return
    bits = want.reshape(1).view(np.uint8)
    assert all(np.array_equal(e.reshape(1).view(np.uint8), bits) for e in flat), (flat, want)


# --------------------------------------------------------------------------- every path that stores a literal
def _setitem(v, d, dev):
    x = tk.zeros(3, dtype=d, device=dev)
    x[1] = v
    return x[1]


def _setitem_list(v, d, dev):
    x = tk.zeros(3, dtype=d, device=dev)
    x[0:2] = [v, v]
    return x[0:2]


def _setitem_mask(v, d, dev):
    x = tk.zeros(3, dtype=d, device=dev)
    x[tk.asarray([True, False, True], device=dev)] = v
    return x[0::2]


STORES = {
    "asarray": lambda v, d, dev: tk.asarray(v, dtype=d, device=dev),
    "asarray_list": lambda v, d, dev: tk.asarray([[v], [v]], dtype=d, device=dev),
    "full": lambda v, d, dev: tk.full((2, 3), v, dtype=d, device=dev),
    "full_like": lambda v, d, dev: tk.full_like(tk.zeros(3, dtype=d, device=dev), v),
    "ag.tensor": lambda v, d, dev: ag.tensor([v, v, v], dtype=d, device=dev),
    "ag.as_tensor": lambda v, d, dev: ag.as_tensor(v, dtype=d, device=dev),
    "ag.full": lambda v, d, dev: ag.full((2,), v, dtype=d, device=dev),
    "fill_": lambda v, d, dev: ag.zeros(4, dtype=d, device=dev).fill_(v),
    "setitem": _setitem,
    "setitem_list": _setitem_list,
    "setitem_mask": _setitem_mask,
}


@pytest.mark.parametrize("path", list(STORES))
@SETTINGS
@given(dv=dtype_and_value())
def test_literal_is_stored_like_numpy(path, dv):
    d, v = dv
    if refused(v, d):
        with pytest.raises(ValueError, match="overflow|cannot store"):
            STORES[path](v, d, "cpu")
        return
    assert_stored(STORES[path](v, d, "cpu"), ref(v, d))


ARITH = {"x+v": operator.add, "v+x": lambda x, v: v + x, "x-v": operator.sub, "v-x": lambda x, v: v - x,
         "x*v": operator.mul, "x/v": operator.truediv}
X64 = np.array([1.5, -0.25, 3.0, 0.1, -0.0, 1e-310, 1e308, 16777217.0])


@pytest.mark.parametrize("op", list(ARITH))
@pytest.mark.parametrize("dtype", [tk.float64, tk.float32], ids=str)
@SETTINGS
@given(v=st.one_of(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), st.sampled_from(FLOATS),
                   st.sampled_from(INTS), st.integers(-(2 ** 64), 2 ** 64), st.booleans()))
def test_scalar_arithmetic_is_numpy_nep50(op, dtype, v):
    """A Python number is weak (NEP 50, PyTorch): float64 (and float32) arrays keep their dtype, and the
    number enters as np.float64(v) (np.float32(v)), not as a float32 first."""
    with np.errstate(all="ignore"):
        xn = X64.astype(dtype.numpy)
        want = ARITH[op](xn, v)
        got = ARITH[op](tk.asarray(xn), v)
    assert got.dtype is dtype and want.dtype == dtype.numpy
    g = got.numpy()
    assert np.array_equal(g, want, equal_nan=True)
    assert np.array_equal(np.signbit(g), np.signbit(want))


# ----------------------------------------------------------------------------- table: cpu and interpreted cuda
F16_TIE = 1 + 2 ** -11 + 2 ** -40  # just above a float16 midpoint that float32 rounds onto: twice rounded is 1.0
BF16_TIE = 1 + 2 ** -8 + 2 ** -40
BF16_INT = 2 ** 24 + 2 ** 16 + 1  # float32 rounds it onto a bfloat16 midpoint too
X = [1.5, -0.25, 3.0]


def _np(v, dt):
    return np.asarray(v, dtype=dt)


def _arange(dev):
    return tk.arange(0.1, 1.0, 0.1, dtype=tk.float64, device=dev)


CASES = [  # (name, make(dev) -> stored values, what NumPy stores)
    ("asarray_list_f64", lambda dev: tk.asarray([0.3, -1.2, 2.0], dtype=tk.float64, device=dev),
     _np([0.3, -1.2, 2.0], np.float64)),
    ("asarray_2**24+1_f64", lambda dev: tk.asarray(16777217.0, dtype=tk.float64, device=dev),
     _np(16777217.0, np.float64)),
    ("asarray_tiny_huge_f64", lambda dev: tk.asarray([1e-300, 1e300, 5e-324], dtype=tk.float64, device=dev),
     _np([1e-300, 1e300, 5e-324], np.float64)),
    ("asarray_-0.0_f64", lambda dev: tk.asarray(-0.0, dtype=tk.float64, device=dev), _np(-0.0, np.float64)),
    ("asarray_default_float32", lambda dev: tk.asarray([0.3, 1e-300], device=dev), _np([0.3, 1e-300], np.float32)),
    ("asarray_1e-300_bool", lambda dev: tk.asarray([1e-300, 0.0], dtype=tk.bool, device=dev),
     _np([True, False], np.bool_)),
    ("asarray_2**53+1_i64", lambda dev: tk.asarray(2 ** 53 + 1, dtype=tk.int64, device=dev),
     _np(2 ** 53 + 1, np.int64)),
    ("asarray_2**62+1_default", lambda dev: tk.asarray([2 ** 62 + 1, -(2 ** 63)], device=dev),
     _np([2 ** 62 + 1, -(2 ** 63)], np.int64)),
    ("asarray_float_and_big_int", lambda dev: tk.asarray([0.5, -(2 ** 63) - 1], device=dev),  # a float: float32
     _np([0.5, -(2 ** 63) - 1], np.float32)),
    ("asarray_f16_tie", lambda dev: tk.asarray([F16_TIE], dtype=tk.float16, device=dev), _np([F16_TIE], np.float16)),
    ("asarray_np_f64_kept", lambda dev: tk.asarray(np.array([0.3]), device=dev), _np([0.3], np.float64)),
    ("full_2**62+1_i64", lambda dev: tk.full((2,), 2 ** 62 + 1, dtype=tk.int64, device=dev),
     _np([2 ** 62 + 1] * 2, np.int64)),
    ("full_f64", lambda dev: tk.full((3,), 0.3, dtype=tk.float64, device=dev), _np([0.3] * 3, np.float64)),
    ("full_-0.0_f64", lambda dev: tk.full((3,), -0.0, dtype=tk.float64, device=dev), _np([-0.0] * 3, np.float64)),
    ("full_-0.0_f32", lambda dev: tk.full((3,), -0.0, dtype=tk.float32, device=dev), _np([-0.0] * 3, np.float32)),
    ("full_-0.0_bf16", lambda dev: tk.full((2,), -0.0, dtype=tk.bfloat16, device=dev),
     _np([-0.0] * 2, ml_dtypes.bfloat16)),
    ("full_f16_tie", lambda dev: tk.full((2,), F16_TIE, dtype=tk.float16, device=dev), _np([F16_TIE] * 2, np.float16)),
    ("full_bf16_tie", lambda dev: tk.full((2,), BF16_TIE, dtype=tk.bfloat16, device=dev),
     _np([BF16_TIE] * 2, ml_dtypes.bfloat16)),
    ("full_bf16_int_tie", lambda dev: tk.full((2,), BF16_INT, dtype=tk.bfloat16, device=dev),
     _np([BF16_INT] * 2, ml_dtypes.bfloat16)),
    ("full_like_f64", lambda dev: tk.full_like(tk.zeros(2, dtype=tk.float64, device=dev), 1e-300),
     _np([1e-300] * 2, np.float64)),
    ("arange_f64", _arange, 0.1 + 0.1 * np.arange(9.0)),  # start + i * step in float64, as PyTorch
    ("arange_i64", lambda dev: tk.arange(2 ** 62, 2 ** 62 + 5, 2, device=dev), 2 ** 62 + np.arange(0, 5, 2)),
    ("linspace_f64", lambda dev: tk.linspace(0.1, 0.7, 7, dtype=tk.float64, device=dev), np.linspace(0.1, 0.7, 7)),
    ("ag.tensor_f64", lambda dev: ag.tensor([0.3, -1.2, 2.0], dtype=ag.float64, device=dev),
     _np([0.3, -1.2, 2.0], np.float64)),
    ("ag.as_tensor_f64", lambda dev: ag.as_tensor([1e-300], dtype=ag.float64, device=dev), _np([1e-300], np.float64)),
    ("ag.full_f64", lambda dev: ag.full((2,), 0.1, dtype=ag.float64, device=dev), _np([0.1] * 2, np.float64)),
    ("ag.arange_f64", lambda dev: ag.arange(0.1, 1.0, 0.1, dtype=ag.float64, device=dev), 0.1 + 0.1 * np.arange(9.0)),
    ("ag.linspace_f64", lambda dev: ag.linspace(0.1, 0.7, 7, dtype=ag.float64, device=dev), np.linspace(0.1, 0.7, 7)),
    ("fill__f64", lambda dev: ag.zeros(3, dtype=ag.float64, device=dev).fill_(0.3), _np([0.3] * 3, np.float64)),
    ("fill__-0.0_f64", lambda dev: ag.zeros(3, dtype=ag.float64, device=dev).fill_(-0.0), _np([-0.0] * 3, np.float64)),
    ("setitem_f64", lambda dev: _setitem(1e-300, tk.float64, dev), _np(1e-300, np.float64)),
    ("setitem_list_f64", lambda dev: _setitem_list(0.3, tk.float64, dev), _np([0.3] * 2, np.float64)),
    ("setitem_mask_f64", lambda dev: _setitem_mask(0.3, tk.float64, dev), _np([0.3] * 2, np.float64)),
    ("setitem_mask_-0.0_f32", lambda dev: _setitem_mask(-0.0, tk.float32, dev), _np([-0.0] * 2, np.float32)),
    ("setitem_index_f16_tie", lambda dev: _put_index(F16_TIE, tk.float16, dev), _np([F16_TIE] * 2, np.float16)),
    ("masked_fill_-0.0_f64", lambda dev: _masked_fill(-0.0, tk.float64, dev), _np([-0.0, -0.25, -0.0], np.float64)),
    ("masked_fill_f16_tie", lambda dev: _masked_fill(F16_TIE, tk.float16, dev),
     _np([F16_TIE, -0.25, F16_TIE], np.float16)),
    ("where_f64", lambda dev: tk.where(_mask(dev), 0.3, tk.asarray(X, dtype=tk.float64, device=dev)),
     _np([0.3, -0.25, 0.3], np.float64)),
    ("where_-0.0_f32", lambda dev: tk.where(_mask(dev), tk.asarray(X, dtype=tk.float32, device=dev), -0.0),
     _np([1.5, -0.0, 3.0], np.float32)),
    ("where_f16_tie", lambda dev: tk.where(_mask(dev), F16_TIE, tk.asarray(X, dtype=tk.float16, device=dev)),
     _np([F16_TIE, -0.25, F16_TIE], np.float16)),
    ("where_bf16_int_tie", lambda dev: tk.where(_mask(dev), BF16_INT, tk.asarray(X, dtype=tk.bfloat16, device=dev)),
     _np([BF16_INT, -0.25, BF16_INT], ml_dtypes.bfloat16)),
    ("clip_f64", lambda dev: tk.clip(tk.asarray(X, dtype=tk.float64, device=dev), 0.3, 2.0 ** 53 + 2),
     _np([1.5, 0.3, 3.0], np.float64)),
    ("clip_f16_tie", lambda dev: tk.clip(tk.asarray(X, dtype=tk.float16, device=dev), F16_TIE, None),
     _np([1.5, F16_TIE, 3.0], np.float16)),
    ("x64+0.1", lambda dev: tk.asarray(X, dtype=tk.float64, device=dev) + 0.1, np.array(X) + np.float64(0.1)),
    ("0.1-x64", lambda dev: 0.1 - tk.asarray(X, dtype=tk.float64, device=dev), np.float64(0.1) - np.array(X)),
    ("x64*1e-300", lambda dev: tk.asarray(X, dtype=tk.float64, device=dev) * 1e-300, np.array(X) * 1e-300),
    ("x64+(2**53+1)", lambda dev: tk.asarray(X, dtype=tk.float64, device=dev) + (2 ** 53 + 1),
     np.array(X) + np.float64(2 ** 53 + 1)),
    ("x32+0.1_weak", lambda dev: tk.asarray(X, dtype=tk.float32, device=dev) + 0.1,
     np.array(X, np.float32) + np.float32(0.1)),
    ("ag_x64*0.3", lambda dev: ag.tensor(X, dtype=ag.float64, device=dev) * 0.3, np.array(X) * 0.3),
    ("ag.isin_f64", lambda dev: ag.isin(ag.tensor([0.3, 0.1], dtype=ag.float64, device=dev), 0.3),
     np.array([True, False])),
    ("ag.searchsorted_weak", lambda dev: ag.searchsorted(ag.tensor([1, 2, 3], device=dev), 2.5),  # 2.5, not int 2
     np.array(2, np.int64)),
]


def _mask(dev):
    return tk.asarray([True, False, True], device=dev)


def _put_index(v, d, dev):
    x = tk.zeros(3, dtype=d, device=dev)
    x[tk.asarray([0, 2], device=dev)] = v
    return x[0::2]


def _masked_fill(v, d, dev):
    return tk.masked_fill(tk.asarray(X, dtype=d, device=dev), _mask(dev), v)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("make,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_literal_cases(dev, make, want):
    got = host(make(dev))
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert np.array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8)), (got, want)  # -0.0 too


REFUSED = [  # integer targets refuse what they cannot hold, as full and PyTorch do (no silent wrap or float trip)
    ("asarray_300_uint8", lambda dev: tk.asarray(300, dtype=tk.uint8, device=dev)),
    ("asarray_list_300_uint8", lambda dev: tk.asarray([1, 300], dtype=tk.uint8, device=dev)),
    ("asarray_list_nan_int32", lambda dev: tk.asarray([1.0, float("nan")], dtype=tk.int32, device=dev)),
    ("asarray_2**63", lambda dev: tk.asarray(2 ** 63, device=dev)),
    ("asarray_list_2**63", lambda dev: tk.asarray([2 ** 63], device=dev)),
    ("asarray_list_-2**63-1", lambda dev: tk.asarray([[1], [-(2 ** 63) - 1]], device=dev)),
    ("asarray_list_2**64", lambda dev: tk.asarray([2 ** 64 + 1], device=dev)),
    ("ag.tensor_-1_uint8", lambda dev: ag.tensor([-1], dtype=ag.uint8, device=dev)),
    ("full_inf_int64", lambda dev: tk.full((2,), float("inf"), dtype=tk.int64, device=dev)),
    ("setitem_list_1e10_int32", lambda dev: _setitem_list(1e10, tk.int32, dev)),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("make", [c[1] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_integer_targets_refuse_what_they_cannot_hold(dev, make):
    with pytest.raises(ValueError, match=r"(asarray|full|setitem).*(overflow|cannot store)"):
        make(dev)
