"""``spmm`` / ``sddmm`` on NumPy (``tkernels.ops.spmm``), summed in float32 (float64 for float64)."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._util import npv


def _cd(a):
    return np.float64 if a.dtype == np.float64 else np.float32


@register("spmm", "numpy")
def spmm(out, rows, cols, values, dense) -> None:
    d = npv(dense)
    cd = _cd(d)
    acc = np.zeros(npv(out).shape, cd)
    np.add.at(acc, npv(rows), npv(values).astype(cd)[:, None] * d[npv(cols)].astype(cd))
    np.copyto(npv(out), acc, casting="unsafe")


@register("sddmm", "numpy")
def sddmm(out, rows, cols, a, b) -> None:
    x, y = npv(a), npv(b)
    cd = _cd(x)
    prod = np.einsum("jk,jk->j", x[npv(rows)].astype(cd), y[npv(cols)].astype(cd))
    np.copyto(npv(out), prod, casting="unsafe")
