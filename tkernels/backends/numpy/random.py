"""Random numbers on NumPy, drawn from the Generator's PCG64 stream."""

from __future__ import annotations

import numpy as np

from ...array import Array
from ...dispatch import register
from ._util import npv


def _store(out, values) -> None:
    np.copyto(npv(out), values, casting="unsafe")


@register("random_uniform", "numpy")
def random_uniform(out, gen, *, low, high) -> None:
    v = gen._np.random(out.shape, dtype=np.float64 if out.dtype.itemsize == 8 else np.float32)
    if low != 0.0 or high != 1.0:
        v = v * (high - low) + low
    if out.dtype.itemsize < 4:  # rounding to half precision may reach `high`: keep samples below it
        hi = np.asarray(high, out.dtype.numpy)
        r = v.astype(out.dtype.numpy)
        v = np.where(r >= hi, np.nextafter(hi, np.asarray(low, out.dtype.numpy)), r)
    _store(out, v)


@register("random_normal", "numpy")
def random_normal(out, gen, *, mean, std) -> None:
    v = gen._np.standard_normal(out.shape, dtype=np.float64 if out.dtype.itemsize == 8 else np.float32)
    if mean != 0.0 or std != 1.0:
        v = v * std + mean
    _store(out, v)


@register("random_integers", "numpy")
def random_integers(out, gen, *, low, high) -> None:
    _store(out, gen._np.integers(low, high, size=out.shape, dtype=np.int64))


@register("random_permutation", "numpy")
def random_permutation(out, gen) -> None:
    _store(out, gen._np.permutation(out.shape[0]))


@register("random_bernoulli", "numpy")
def random_bernoulli(out, gen, *, p) -> None:
    prob = npv(p).astype(np.float64) if isinstance(p, Array) else p
    u = gen._np.random(out.shape)
    _store(out, u < prob)
