"""tkernels.isin (array API 2025.12, torch.isin) against np.isin: random values with repeats at odd sizes, every
real dtype pair, non-contiguous views, scalars on either side, empty and 0-d arrays, NaN, invert, on cpu and
interpreted cuda; and the errors."""

import numpy as np
import pytest

import autograd as ag
import tkernels as tk

DEVICES = ["cpu", "cuda"]


def _np(a):
    return np.asarray(a.to_device("cpu").numpy())


PAIRS = [("int64", "int64"), ("int32", "float32"), ("uint8", "int16"), ("float64", "float32"), ("bool", "bool")]


# every pair on cpu; on interpreted cuda (slow: a sort and a search per call) a mixed pair and bool
@pytest.mark.parametrize("device,d1,d2", [("cpu", *p) for p in PAIRS] + [("cuda", *PAIRS[1]), ("cuda", *PAIRS[4])])
def test_matches_numpy(device, d1, d2):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 9, (7, 5)).astype(d1)
    b = rng.integers(0, 9, (11,)).astype(d2)
    x, y = tk.asarray(a, device=device), tk.asarray(b, device=device)
    for inv in (False, True):
        got = tk.isin(x, y, invert=inv)
        assert got.dtype == tk.bool and got.shape == a.shape
        np.testing.assert_array_equal(_np(got), np.isin(a, b, invert=inv))
    np.testing.assert_array_equal(_np(tk.isin(x[::2, 1:], y[::3])), np.isin(a[::2, 1:], b[::3]))  # strided views


@pytest.mark.parametrize("device", DEVICES)
def test_scalars_empty_zero_d_and_nan(device):
    a = np.array([1.0, np.nan, 2.5, -0.0])
    x = tk.asarray(a, device=device)
    np.testing.assert_array_equal(_np(tk.isin(x, 2.5)), [False, False, True, False])
    nan_zero = tk.asarray([np.nan, 0.0], device=device)
    np.testing.assert_array_equal(_np(tk.isin(x, nan_zero)), [False, False, False, True])  # NaN in nothing; -0 == 0
    assert bool(tk.isin(2.5, x)) and _np(tk.isin(2.5, x)).shape == ()
    empty = tk.asarray(np.zeros((0,)), device=device)
    np.testing.assert_array_equal(_np(tk.isin(x, empty)), [False] * 4)
    np.testing.assert_array_equal(_np(tk.isin(x, empty, invert=True)), [True] * 4)
    assert _np(tk.isin(empty, x)).shape == (0,)
    assert bool(tk.isin(tk.asarray(1.0, device=device), x))
    t = ag.tensor(a, device=device)
    np.testing.assert_array_equal(_np(ag.isin(t, ag.tensor([2.5], device=device))._data), [False, False, True, False])
    np.testing.assert_array_equal(_np(ag.isin(t, 1.0, invert=True)._data), [False, True, True, True])


def test_errors():
    with pytest.raises(TypeError, match=r"isin: x1 or x2 must be an Array"):
        tk.isin(1, 2)
    with pytest.raises(TypeError, match=r"isin: x2 must have a real or bool dtype"):
        tk.isin(tk.asarray([1.0]), tk.asarray([1j]))
    with pytest.raises(TypeError, match=r"isin: expected an Array or a Python number"):
        tk.isin(tk.asarray([1.0]), "a")
    with pytest.raises(RuntimeError, match=r"isin: x1 is on .*cpu.* but x2 is on .*cuda"):
        tk.isin(tk.asarray([1.0]), tk.asarray([1.0], device="cuda"))
