"""layer_norm / rms_norm and their backward entries on cuda (``tkernels/kernels/norm.py``); signatures as the
NumPy backend (``tkernels/ops/normalization.py``)::

    layer_norm(out, mean, rstd, x, weight, bias, k, eps)
    layer_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, k)
    rms_norm(out, rstd, x, weight, k, eps)
    rms_norm_backward(dx, dweight, grad, x, rstd, weight, k)

``x`` and ``grad`` are read in place whenever their leading axes and their ``k`` normalized axes each collapse to
one strided dimension (contiguous arrays, row slices, transposed matrices...); any other layout is first copied
to a contiguous array on the device (a documented fallback: one copy kernel, no host round trip). Weight, bias
and statistics are small and are made contiguous the same way when they are not. dweight/dbias: each backward
program writes the partial sums of its rows; the ``[P, N]`` partials are reduced over ``P`` by the reduction
backend's column path (deterministic).
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import lookup, register
from ...kernels.norm import norm_bwd_kernel, norm_fwd_kernel
from ._launch import INTERPRETED, collapse, f64_bits
from .memory import copy_, empty, fill
from .ops_softmax import compute_f64, row_tile, run

# backward programs: enough to fill an H200 (132 SMs) with a few each; interpreted, few (programs are the cost)
BWD_PROGRAMS = 4 if INTERPRETED else 528


def _one_dim(sizes, strides):
    """The stride of dimensions that collapse to one (0 when they are all 1), or None when they do not."""
    s, (st,) = collapse(sizes, strides)
    big = [i for i, v in enumerate(s) if v != 1]
    if len(big) > 1:
        return None
    return st[big[0]] if big else 0


def contiguous(a: Array | None) -> Array | None:
    """``a`` itself when contiguous, else a contiguous copy made on the device."""
    if a is None or a.is_contiguous():
        return a
    c = empty(a._shape, a._dtype, a._device)
    copy_(c, a)
    return c


def as_rows(a: Array, k: int):
    """(array, row stride, element stride) viewing ``a`` as rows of its last ``k`` axes (copied if needed)."""
    n = a.ndim - k
    sm = _one_dim(list(a._shape[:n]), list(a._strides[:n]))
    sn = _one_dim(list(a._shape[n:]), list(a._strides[n:]))
    if sm is None or sn is None:
        a = contiguous(a)
        sm, sn = _one_dim(list(a._shape[:n]), list(a._strides[:n])), 1
    return a, sm, sn


def _or(a, b):
    """``a``, or ``b`` standing in for a pointer argument the kernel does not read."""
    return b if a is None else a


def _rows(x: Array, k: int):
    m = n = 1
    for s in x._shape[:x.ndim - k]:
        m *= s
    for s in x._shape[x.ndim - k:]:
        n *= s
    return m, n


def _forward(rms: bool, out, mean, rstd, x, weight, bias, k, eps) -> None:
    M, N = _rows(x, k)
    if M * N == 0:
        for s in (mean, rstd):
            if s is not None and s.size:
                fill(s, float("nan"))
        return
    xa, sxm, sxn = as_rows(x, k)
    weight, bias = contiguous(weight), contiguous(bias)
    one, bm, bn = row_tile(M, N)
    stats = rstd is not None
    run(norm_fwd_kernel, (-(-M // bm),), xa, out, _or(weight, out), _or(bias, out), _or(mean, out),
        _or(rstd, out), M, N, sxm, sxn, f64_bits(eps), RMS=rms, HAS_W=weight is not None, HAS_B=bias is not None,
        STATS=stats, F64=compute_f64(x, weight, bias), ONE_PASS=one, BLOCK_M=bm, BLOCK_N=bn)


def _backward(rms: bool, dx, dweight, dbias, grad, x, mean, rstd, weight, k) -> None:
    M, N = _rows(x, k)
    f64 = compute_f64(grad, x, weight)
    if M * N == 0:
        for d in (dweight, dbias):
            if d is not None and d.size:
                fill(d, 0.0)
        return
    xa, sxm, sxn = as_rows(x, k)
    ga, sgm, sgn = as_rows(grad, k)
    mean, rstd, weight = contiguous(mean), contiguous(rstd), contiguous(weight)
    one, bm, bn = row_tile(M, N)
    tiles = -(-M // bm)
    per = -(-tiles // min(tiles, BWD_PROGRAMS)) * bm  # rows per program: whole tiles
    P = -(-M // per)
    acc = _dt.float64 if f64 else _dt.float32
    dwp = empty((P, N), acc, x._device) if dweight is not None else None
    dbp = empty((P, N), acc, x._device) if dbias is not None else None
    dummy = rstd
    run(norm_bwd_kernel, (P,), xa, ga, _or(mean, dummy), rstd, _or(weight, dummy), _or(dx, dummy), _or(dwp, dummy),
        _or(dbp, dummy), M, N, per, sxm, sxn, sgm, sgn, RMS=rms, HAS_W=weight is not None, HAS_DX=dx is not None,
        HAS_DW=dwp is not None, HAS_DB=dbp is not None, F64=f64, ONE_PASS=one, BLOCK_M=bm, BLOCK_N=bn)
    total = lookup("sum", x._device)
    for d, p in ((dweight, dwp), (dbias, dbp)):
        if d is not None:
            total(d.reshape((N,)) if d.ndim != 1 else d, p, (0,), acc)


@register("layer_norm", "triton")
def layer_norm(out, mean, rstd, x, weight, bias, k, eps) -> None:
    _forward(False, out, mean, rstd, x, weight, bias, k, eps)


@register("layer_norm_backward", "triton")
def layer_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, k) -> None:
    _backward(False, dx, dweight, dbias, grad, x, mean, rstd, weight, k)


@register("rms_norm", "triton")
def rms_norm(out, rstd, x, weight, k, eps) -> None:
    _forward(True, out, None, rstd, x, weight, None, k, eps)


@register("rms_norm_backward", "triton")
def rms_norm_backward(dx, dweight, grad, x, rstd, weight, k) -> None:
    _backward(True, dx, dweight, None, grad, x, None, rstd, weight, k)
