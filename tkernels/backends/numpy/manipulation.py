"""Shape and data movement on NumPy: concat (also serves stack) and repeat by an array of counts."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ...validation import OpValueError
from ._util import npv, wrap


@register("concat", "numpy")
def concat(out, arrays, axis) -> None:
    """Write the non-empty ``arrays`` one after another along ``axis`` of ``out`` (casting to its dtype)."""
    np.concatenate([npv(a) for a in arrays], axis=axis, out=npv(out), casting="unsafe")


@register("repeat", "numpy")
def repeat(x, repeats, axis):
    """Each element of ``x`` along ``axis`` repeated ``repeats[i]`` times (a new Array: its size is data)."""
    r = npv(repeats)
    if r.size and r.min() < 0:
        raise OpValueError(f"repeat: repeats must be non-negative, got {int(r.min())} among the counts")
    return wrap(np.repeat(npv(x), r.astype(np.int64, copy=False), axis=axis), x.dtype)
