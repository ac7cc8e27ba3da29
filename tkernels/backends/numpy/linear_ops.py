"""``tkernels.ops.linear`` on NumPy: ``act(x @ weight.T + bias) + residual`` computed in float32 (float64 when the
operands are float64) and rounded once to the output dtype, as the fused cuda kernel does."""

from __future__ import annotations

import numpy as np

from ...dispatch import register
from ._erf import erf as _erf
from ._util import npv

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _act(y: np.ndarray, activation) -> np.ndarray:
    t = y.dtype.type
    if activation == "relu":
        return np.where(y < 0, t(0), y)  # NaN stays NaN
    if activation == "gelu":
        return y * t(0.5) * (1 + _erf(y * t(1 / np.sqrt(2.0))))
    if activation == "gelu_tanh":
        return y * t(0.5) * (1 + np.tanh(t(np.sqrt(2.0 / np.pi)) * (y + t(0.044715) * y * y * y)))
    if activation == "silu":
        return y / (1 + np.exp(-y))
    return y


@register("linear", "numpy")
def linear(out, x, weight, bias, residual, activation) -> None:
    """``out (M, N) = act(x (M, K) @ weight (N, K).T + bias (N,)) + residual (M, N)``."""
    a, w = npv(x), npv(weight)
    o = npv(out)
    cd = o.dtype
    if (cd is _F32 or cd is _F64) and a.dtype is cd and w.dtype is cd and residual is None \
            and (bias is None or bias._dtype.numpy is cd) and (activation is None or activation == "relu"):
        # the common case (float32/float64 throughout, no residual): the GEMM writes the output and the epilogue
        # runs in place, without the temporary and the copy of the general path below (same values: the sums are
        # the same GEMM's, then the same float additions and max)
        np.matmul(a, w.T, out=o)
        if bias is not None:
            o += npv(bias)
        if activation is not None:
            np.copyto(o, 0, where=o < 0)  # NaN and -0.0 stay, as with np.where(y < 0, 0, y)
        return
    cd = _F64 if _F64 in (x._dtype.numpy, weight._dtype.numpy) else _F32
    y = np.matmul(a if a.dtype == cd else a.astype(cd), (w if w.dtype == cd else w.astype(cd)).T)
    if bias is not None:
        y += npv(bias).astype(cd, copy=False)
    y = _act(y, activation)
    if residual is not None:
        y += npv(residual).astype(cd, copy=False)
    np.copyto(npv(out), y, casting="unsafe")


@register("linear_backward", "numpy")
def linear_backward(gx, gw, gb, grad, x, weight) -> None:
    """``gx = grad @ weight``, ``gw = grad.T @ x``, ``gb = grad.sum(0)``: the NumPy calls of the matmul and sum
    backends (the same values), without an entry each."""
    g = npv(grad)
    cd = g.dtype
    if cd is not _F32 and cd is not _F64:  # float16/bfloat16: accumulate in float32, round once (as matmul, sum)
        g = g.astype(_F32)
        if gx is not None:
            np.copyto(npv(gx), np.matmul(g, npv(weight).astype(_F32)), casting="unsafe")
        if gw is not None:
            np.copyto(npv(gw), np.matmul(g.T, npv(x).astype(_F32)), casting="unsafe")
        if gb is not None:
            np.copyto(npv(gb), np.add.reduce(g, axis=(0,)), casting="unsafe")
        return
    if gx is not None:
        np.matmul(g, npv(weight), out=npv(gx))
    if gw is not None:
        np.matmul(g.T, npv(x), out=npv(gw))
    if gb is not None:
        np.add.reduce(g, axis=(0,), out=npv(gb))
