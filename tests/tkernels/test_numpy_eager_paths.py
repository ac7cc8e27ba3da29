"""Fast paths of the NumPy backend on the eager training step, against the previous formulas (kept here as the
reference): bit-equal results on random odd-size inputs with the special values (NaN payloads, +-0.0, +-inf,
subnormals), views and every float dtype."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.numpy import elementwise as npe

_SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 1e-45, -1e-45, 3.5, -2.25]
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(_BITS[a.dtype.itemsize])


def _values(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 3
    x[: min(n, len(_SPECIAL))] = _SPECIAL[: min(n, len(_SPECIAL))]
    rng.shuffle(x)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("n", [0, 1, 13, npe._ZERO_RUN, npe._ZERO_RUN + 7, 2 * npe._ZERO_RUN + 333])
def test_relu_matches_maximum_with_scalar_zero(dtype, n):
    x = _values(n, dtype)
    ref = np.maximum(x.astype(np.float32) if x.dtype.itemsize == 2 else x, 0).astype(dtype)  # the previous impl
    got = tk.relu(tk.asarray(x)).numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(_bits(got), _bits(ref))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_views_and_shapes(dtype):
    x = _values(7 * 11 * 5, dtype, seed=1).reshape(7, 11, 5)
    for v in (x, x[:, ::2], x.transpose(2, 0, 1), x[3, 4, 2], x[:, :, :0]):
        ref = np.maximum(v, dtype(0))
        got = tk.relu(tk.asarray(v)).numpy()
        assert got.shape == ref.shape
        np.testing.assert_array_equal(_bits(got), _bits(ref))
    a = tk.asarray(x)
    out = tk.empty((7, 11, 5), dtype=tk.float32 if dtype is np.float32 else tk.float64)
    tk.relu(a, out=out)  # out= path
    np.testing.assert_array_equal(_bits(out.numpy()), _bits(np.maximum(x, dtype(0))))
    tk.relu(a, out=a)  # in place
    np.testing.assert_array_equal(_bits(a.numpy()), _bits(np.maximum(x, dtype(0))))
