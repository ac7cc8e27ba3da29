"""The NumPy backend's float32 erf (tkernels/backends/numpy/_erf.py): within 1 ulp of SciPy's float32 erf over the
whole float32 range (every 4099th bit pattern: denormals, both zeros, infinities, NaNs), a dense grid where erf
bends, and the special values; through tk.erf, tk.gelu and the fused linear's GELU on cpu, equal to SciPy's
formulas to float32 rounding."""

import numpy as np
import pytest
from scipy import special

import tkernels as tk
from tkernels.backends.numpy._erf import erf, erf_float32


def _ordered(a: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers ordered like the values (so ulp distance is a difference)."""
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _ulps(got: np.ndarray, x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        want = special.erf(x.astype(np.float64)).astype(np.float32)  # SciPy: the double routine, rounded once
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    return np.abs(_ordered(got[~nan]) - _ordered(want[~nan]))


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754944e-38,
                    3.4028235e38, -3.4028235e38, 3.9, -3.92, 4.0, -4.0, 4.0000005, 0.4769363, -0.4769363], np.float32)


def test_within_one_ulp_over_the_float32_range():
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), SPECIAL,
                        np.linspace(-4.5, 4.5, 400_001, dtype=np.float32),
                        np.geomspace(1e-45, 1.0, 20_001).astype(np.float32)])
    with np.errstate(invalid="ignore"):  # (signalling NaNs among the bit patterns)
        got = erf_float32(x)
    assert got.dtype == np.float32
    assert _ulps(got, x).max() <= 1
    # the signs of the zeros and the limits exactly
    s = erf_float32(SPECIAL[:4])
    assert np.array_equal(s, [0.0, -0.0, 1.0, -1.0]) and np.signbit(s[1]) and not np.signbit(s[0])


def test_out_0d_and_other_dtypes():
    x = np.random.default_rng(0).standard_normal((7, 13)).astype(np.float32)[:, ::2]  # a strided view
    out = np.empty(x.shape, np.float64)
    erf_float32(x, out)
    assert np.array_equal(out, erf_float32(x).astype(np.float64))
    assert _ulps(np.asarray(erf_float32(np.float32(0.3)), np.float32)[None], np.float32([0.3])).max() <= 1
    x64 = np.linspace(-5, 5, 101)
    assert np.array_equal(erf(x64), special.erf(x64))  # float64 stays SciPy's


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_through_the_ops(dtype):
    rng = np.random.default_rng(1)
    xr = (rng.standard_normal((31, 17)) * 3).astype(np.float32)
    x = tk.asarray(xr).astype(getattr(tk, dtype))
    xf = x.astype(tk.float32).numpy().astype(np.float64)
    tol = dict(float32=dict(rtol=1.3e-6, atol=1e-6), float16=dict(rtol=1e-3, atol=1e-3),
               bfloat16=dict(rtol=8e-3, atol=8e-3))[dtype]
    np.testing.assert_allclose(tk.erf(x).astype(tk.float64).numpy(), special.erf(xf), **tol)
    gelu = 0.5 * xf * (1 + special.erf(xf / np.sqrt(2)))
    np.testing.assert_allclose(tk.gelu(x).astype(tk.float64).numpy(), gelu, **tol)
    if dtype == "float32":
        w = tk.asarray(rng.standard_normal((5, 17)).astype(np.float32))
        y = xr.astype(np.float64) @ w.numpy().astype(np.float64).T
        got = tk.ops.linear(x, w, activation="gelu").numpy()
        np.testing.assert_allclose(got, 0.5 * y * (1 + special.erf(y / np.sqrt(2))), rtol=1e-5, atol=1e-5)


def test_chunks_of_large_arrays_give_the_same_bits(monkeypatch):
    from tkernels.backends.numpy import _erf

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 70_001)) * 2).astype(np.float32)  # 210,003 values: 6 full chunks and a part
    x[1, 5] = np.nan
    x[2, -1] = np.inf
    whole = _erf._erf_float32(x, None)
    assert np.array_equal(erf_float32(x), whole, equal_nan=True)
    out64 = np.empty(x.shape, np.float64)
    assert erf_float32(x, out64) is out64 and np.array_equal(out64, whole.astype(np.float64), equal_nan=True)
    inplace = x.copy()
    assert np.array_equal(erf_float32(inplace, inplace), whole, equal_nan=True)  # out may be x
    assert np.array_equal(erf_float32(x[:, ::2]), whole[:, ::2], equal_nan=True)  # strided: unchunked
    assert _ulps(erf_float32(x), x).max() <= 1
    calls = []
    monkeypatch.setattr(_erf, "_erf_float32", lambda a, o: calls.append(a.size) or o)
    erf_float32(x)
    assert calls == [_erf._CHUNK] * 6 + [x.size - 6 * _erf._CHUNK]
