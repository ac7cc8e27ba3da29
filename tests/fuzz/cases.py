"""What a fuzz case is made of: shapes, dtypes, values and layouts, drawn through one small interface.

A ``Draw`` hands out choices; two implementations exist: ``HypothesisDraw`` (inside ``@given``, so hypothesis
can replay and shrink a failing case) and ``RngDraw`` (a seeded NumPy generator, for the counting runner
``python -m tests.fuzz``). Values are not drawn one by one: a case draws a seed and fills its arrays from a
generator seeded by it, mixing ordinary numbers with NaN, ±inf, ±0, the dtype's extremes and subnormals.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
SIDES = (0, 1, 1, 2, 3, 3, 4, 5, 7)
LAYOUTS = ("contiguous", "contiguous", "noncontig", "transposed")


class RngDraw:
    """Choices from a seeded NumPy generator."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def sample(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def int(self, lo: int, hi: int) -> int:  # inclusive bounds
        return int(self.rng.integers(lo, hi + 1))

    def bool(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)


class HypothesisDraw:
    """Choices from hypothesis' ``st.data()``."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def sample(self, seq):
        return self.data.draw(self.st.sampled_from(list(seq)))

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def bool(self, p: float = 0.5) -> bool:
        return self.data.draw(self.st.integers(0, 999)) < p * 1000


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def shape(draw, min_dims=0, max_dims=4, max_size=240) -> tuple:
    nd = draw.int(min_dims, max_dims)
    dims = [draw.sample(SIDES) for _ in range(nd)]
    while math.prod(dims) > max_size:
        dims[dims.index(max(dims))] //= 2
    return tuple(dims)


def broadcast_partner(draw, s: tuple) -> tuple:
    """A shape that broadcasts with ``s`` (mostly), or one that may not."""
    kind = draw.sample(("same", "same", "ones", "suffix", "prefix", "any"))
    if kind == "same":
        return s
    if kind == "ones":
        return tuple(1 if draw.bool() else d for d in s)
    if kind == "suffix":
        return s[draw.int(0, len(s)):]
    if kind == "prefix":
        return (draw.sample((1, 2, 3)),) + tuple(1 if draw.bool(0.3) else d for d in s)
    return shape(draw, max_dims=3)


def specials(dtype: str) -> list:
    if dtype == "bool":
        return [True, False]
    d = np_dtype(dtype)
    if dtype in FLOATS:
        fi = ml_dtypes.finfo(d) if dtype == "bfloat16" else np.finfo(d)
        return [np.nan, np.inf, -np.inf, 0.0, -0.0, float(fi.max), -float(fi.max), float(fi.tiny),
                float(fi.smallest_subnormal), 1.0, -1.0, 0.5, float(fi.eps)]
    ii = np.iinfo(d)
    return [0, 1, -1 if ii.min < 0 else 2, int(ii.max), int(ii.min)]


def values(rng: np.random.Generator, shp: tuple, dtype: str, p_special: float, kind: str = "any") -> np.ndarray:
    """An array of ``dtype``: ordinary numbers, each replaced by a special value with probability ``p_special``.
    ``kind``: "any", "positive" (floats > 0, for logs and the like), "prob" (floats in [0, 1])."""
    d = np_dtype(dtype)
    if dtype == "bool":
        return np.asarray(rng.random(shp) < 0.5)
    if dtype in FLOATS:
        scale = rng.choice([1e-3, 1.0, 1.0, 3.0, 100.0])
        v = rng.standard_normal(shp) * scale
        if kind == "positive":
            v = np.abs(v) + 1e-3
        elif kind == "prob":
            v = rng.random(shp)
    else:
        ii = np.iinfo(d)
        v = rng.integers(max(ii.min, -20), min(ii.max, 20) + 1, shp)
        if kind == "positive":
            v = np.abs(v) + 1
    v = np.asarray(v)
    if p_special and v.size:
        sp = specials(dtype)
        mask = rng.random(shp) < p_special
        picks = np.asarray(sp, dtype=np.float64 if dtype in FLOATS else object)[rng.integers(len(sp), size=shp)]
        if dtype in FLOATS:
            v = np.where(mask, picks, v)
        else:
            v = np.where(mask, picks, v.astype(object))
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(d)
