"""Helpers of the NumPy backend."""

from __future__ import annotations

import numpy as np

from ...array import Array

__all__ = ["npv", "wrap", "operand", "HALF_NP", "accumulate_dtype"]

HALF_NP = (np.dtype(np.float16), np.dtype("bfloat16"))


def npv(x: Array) -> np.ndarray:
    """The NumPy view of a cpu Array."""
    v = x._nd
    return v if v is not None else x._materialize()


def wrap(nd: np.ndarray, dtype=None) -> Array:
    """A cpu Array owning a fresh NumPy result."""
    return Array._wrap(nd, dtype)


def operand(x, np_dtype: np.dtype):
    """An Array operand as a NumPy array of ``np_dtype``; a Python scalar as itself (wrapped to the dtype's
    range for integers, like PyTorch's casts)."""
    if isinstance(x, Array):
        v = x._nd
        if v is None:
            v = x._materialize()
        return v if v.dtype == np_dtype else v.astype(np_dtype)
    if type(x) is int and np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        if not info.min <= x <= info.max:
            return np.array(x).astype(np_dtype)
    return x


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def accumulate_dtype(*arrays) -> np.dtype:
    """float64 when any of the (optional) Arrays is float64, else float32: what statistics accumulate in."""
    for a in arrays:
        if a is not None and a.dtype.numpy == _F64:
            return _F64
    return _F32
