"""layer_norm / rms_norm and their backward entries on cuda (``tkernels/kernels/norm.py``); signatures as the
NumPy backend (``tkernels/ops/normalization.py``)::

    layer_norm(out, mean, rstd, x, weight, bias, k, eps)
    layer_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, k)
    rms_norm(out, rstd, x, weight, k, eps)
    rms_norm_backward(dx, dweight, grad, x, rstd, weight, k)
    group_norm(out, mean, rstd, x, weight, bias, num_groups, eps)
    group_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, num_groups)
    batch_norm(out, save_mean, save_invstd, x, running_mean, running_var, weight, bias, training, momentum, eps)
    batch_norm_backward(dx, dweight, dbias, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        training, eps)

``x`` and ``grad`` are read in place whenever their leading axes and their ``k`` normalized axes each collapse to
one strided dimension (contiguous arrays, row slices, transposed matrices...); any other layout is first copied
to a contiguous array on the device (a documented fallback: one copy kernel, no host round trip). Weight, bias
and statistics are small and are made contiguous the same way when they are not. dweight/dbias: each backward
program writes the partial sums of its rows; the ``[P, N]`` partials are reduced over ``P`` by the reduction
backend's column path (deterministic).

Batch and group norm (``tkernels/kernels/norm_channel.py``) view ``x`` and ``grad`` as ``(N, C, S)`` with a stride
per axis (spatial axes collapsed, else a contiguous copy) and reduce over segments (a channel; a sample's group) in
chunks: partials per (segment, chunk), then a merge launch (Chan's formula for the variance), then an elementwise
launch. Running statistics are updated in place by the merge (a contiguous copy written back when they are views).
"""

from __future__ import annotations

import math

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import lookup, register
from ...kernels.norm import norm_bwd_kernel, norm_fwd_kernel
from ...kernels.norm_channel import channel_apply_kernel, channel_finalize_kernel, channel_reduce_kernel
from ._launch import INTERPRETED, collapse, f64_bits
from .memory import copy_, empty, fill
from .ops_softmax import compute_f64, pow2, row_tile, run

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


# ----------------------------------------------------------------------------------------- batch and group norm
# Tiles (BLOCK_R segments, BLOCK elements). Interpreted: up to CHANNEL_TILE elements, one chunk per segment up to
# CHANNEL_CHUNK elements (programs are the cost). On a GPU a fixed set: segments up to BLOCK long take the first tile
# that fits; longer ones (1, 1024) in chunks, enough (segment, chunk) programs to fill an H200 (132 SMs) a few times.
CHANNEL_TILE = 8192
CHANNEL_CHUNK = 1 << 16  # interpreted
GPU_CHANNEL_TILES = ((16, 64), (4, 256), (1, 1024))
CHANNEL_PROGRAMS = 528  # GPU
FINALIZE_TILE = (16, 64)  # (BLOCK_R, BLOCK_P) on a GPU


def _plan(R: int, L: int):
    """(P, CHUNK, BLOCK_R, BLOCK) for ``R`` segments of ``L`` elements: chunks per segment, elements per chunk
    (whole tiles), the tile."""
    if INTERPRETED:
        chunk = min(L, CHANNEL_CHUNK)
        block = min(pow2(chunk), CHANNEL_TILE)
        br = min(pow2(R), max(1, CHANNEL_TILE // block))
    else:
        br, block = next((t for t in GPU_CHANNEL_TILES if L <= t[1]), GPU_CHANNEL_TILES[-1])
        tiles = -(-L // block)
        per = -(-tiles // max(1, min(tiles, -(-CHANNEL_PROGRAMS // -(-R // br)))))
        chunk = per * block
    return -(-L // chunk), chunk, br, block


def as_ncs(a: Array):
    """(array, stride_n, stride_c, stride_s) viewing ``a`` (N, C, *) as (N, C, S) (copied when needed)."""
    ss = _one_dim(list(a._shape[2:]), list(a._strides[2:]))
    if ss is None:
        a = contiguous(a)
        ss = 1
    return a, a._strides[0], a._strides[1], ss


def _ncs(x: Array):
    s = 1
    for v in x._shape[2:]:
        s *= v
    return x._shape[0], x._shape[1], s


def _partials(R, plan, f64, L, xv, gv, mean, rstd, w, layout, eps=0.0, grad=False, group=False, from_var=False,
              outs=(None, None)):
    """The ``(R * P,)`` partials of ``channel_reduce_kernel``; ``xv``/``gv``: ``as_ncs`` views, ``layout``:
    (S, G, CG, stat_sn). With one chunk a segment, the sums go straight into ``outs`` of the compute dtype."""
    P, chunk, br, block = plan
    acc = _dt.float64 if f64 else _dt.float32
    p1, p2 = (o if P == 1 and o is not None and o._dtype is acc else empty((R * P,), acc, xv[0]._device)
              for o in outs)
    gv = xv if gv is None else gv
    run(channel_reduce_kernel, (-(-R // br), P), xv[0], gv[0], _or(mean, p1), _or(rstd, p1), _or(w, p1), p1, p2, R, L,
        *layout, chunk, *xv[1:], *gv[1:], f64_bits(eps), GRAD=grad, GROUP=group, FROM_VAR=from_var,
        HAS_W=w is not None, F64=f64, BLOCK_R=br, BLOCK=block)
    return p1, p2


def _finalize(R, plan, f64, L, p1, p2, grad, stats=(None, None), running=(None, None), eps=0.0, momentum=0.0):
    """Merge the partials: (sums of p1, sums of p2) with ``grad``, else (mean, rstd) (also written to ``stats``,
    running statistics updated in place), each ``(R,)`` in the compute dtype."""
    P, chunk = plan[:2]
    if grad and P == 1:
        return p1, p2
    acc = _dt.float64 if f64 else _dt.float32
    o1, o2 = empty((R,), acc, p1._device), empty((R,), acc, p1._device)
    (sm, si), (rm, rv) = stats, running
    bessel = L / (L - 1) if L > 1 else float("inf")
    br, bp = (min(pow2(R), 1024), min(pow2(P), 8)) if INTERPRETED else FINALIZE_TILE
    run(channel_finalize_kernel, (-(-R // br),), p1, p2, o1, o2, _or(sm, o1), _or(si, o1), _or(rm, o1), _or(rv, o1),
        R, P, L, chunk, f64_bits(eps), f64_bits(momentum), f64_bits(1 - momentum), f64_bits(bessel), GRAD=grad,
        STATS=sm is not None, HAS_RM=rm is not None, HAS_RV=rv is not None, F64=f64, BLOCK_R=br, BLOCK_P=bp)
    return o1, o2


def _apply(R, plan, f64, L, out, xv, gv, mean, rstd, w, b, sums, C, layout, eps=0.0, bwd=False, train=True,
           group=False, from_var=False):
    """``channel_apply_kernel``: y (forward) or dx (``bwd``) into the contiguous ``out``."""
    P, chunk, br, block = plan
    gv = xv if gv is None else gv
    s1, s2 = sums
    S, G, CG = layout
    run(channel_apply_kernel, (-(-R // br), P), xv[0], gv[0], out, mean, rstd, _or(w, out), _or(b, out), _or(s1, out),
        _or(s2, out), R, L, S, C, G, CG, chunk, *xv[1:], *gv[1:], f64_bits(eps), BWD=bwd, TRAIN=train, GROUP=group,
        FROM_VAR=from_var, HAS_W=w is not None, HAS_B=b is not None, F64=f64, BLOCK_R=br, BLOCK=block)


@register("batch_norm", "triton")
def batch_norm(out, save_mean, save_invstd, x, running_mean, running_var, weight, bias, training, momentum,
               eps) -> None:
    N, C, S = _ncs(x)
    L = N * S
    f64 = compute_f64(x, weight, bias, running_mean, running_var)
    if training and L == 0:  # PyTorch: an empty batch leaves the running stats alone
        if save_mean is not None and C:
            fill(save_mean, 0.0)
            fill(save_invstd, 1.0 / math.sqrt(eps) if eps else math.inf)
        return
    if C * L == 0:
        return
    xv = as_ncs(x)
    weight, bias = contiguous(weight), contiguous(bias)
    plan = _plan(C, L)
    if training:
        rm, rv = contiguous(running_mean), contiguous(running_var)
        p1, p2 = _partials(C, plan, f64, L, xv, None, None, None, None, (S, 1, 1, 0))
        mean, rstd = _finalize(C, plan, f64, L, p1, p2, False, (save_mean, save_invstd), (rm, rv), eps, momentum)
        for r, dst in ((rm, running_mean), (rv, running_var)):
            if r is not dst:
                copy_(dst, r)
        _apply(C, plan, f64, L, out, xv, None, mean, rstd, weight, bias, (None, None), C, (S, 1, 1))
    else:
        mean, var = contiguous(running_mean), contiguous(running_var)
        _apply(C, plan, f64, L, out, xv, None, mean, var, weight, bias, (None, None), C, (S, 1, 1), eps,
               from_var=True)


@register("batch_norm_backward", "triton")
def batch_norm_backward(dx, dweight, dbias, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        training, eps) -> None:
    N, C, S = _ncs(x)
    L = N * S
    if C == 0:
        return
    if L == 0:
        for d in (dweight, dbias):
            if d is not None:
                fill(d, 0.0)
        return
    f64 = compute_f64(grad, x, weight)
    xv, gv = as_ncs(x), as_ncs(grad)
    weight = contiguous(weight)
    mean, rstd = contiguous(save_mean if training else running_mean), contiguous(save_invstd if training else
                                                                                running_var)
    plan = _plan(C, L)
    sums = (None, None)
    if dweight is not None or dbias is not None or (dx is not None and training):
        p1, p2 = _partials(C, plan, f64, L, xv, gv, mean, rstd, None, (S, 1, 1, 0), eps, grad=True,
                           from_var=not training, outs=(dbias, dweight))
        sums = _finalize(C, plan, f64, L, p1, p2, True)
        for d, s in ((dbias, sums[0]), (dweight, sums[1])):
            if d is not None and d is not s:
                copy_(d, s)
    if dx is not None:
        _apply(C, plan, f64, L, dx, xv, gv, mean, rstd, weight, None, sums, C, (S, 1, 1), eps, bwd=True,
               train=training, from_var=not training)


@register("group_norm", "triton")
def group_norm(out, mean, rstd, x, weight, bias, num_groups, eps) -> None:
    N, C, S = _ncs(x)
    G = num_groups
    R, CG = N * G, C // G
    L = CG * S
    if x.size == 0:
        for s in (mean, rstd):
            if s is not None and s.size:
                fill(s, float("nan"))
        return
    f64 = compute_f64(x, weight, bias)
    xv = as_ncs(x)
    weight, bias = contiguous(weight), contiguous(bias)
    plan = _plan(R, L)
    p1, p2 = _partials(R, plan, f64, L, xv, None, None, None, None, (S, G, CG, 0), group=True)
    mu, rs = _finalize(R, plan, f64, L, p1, p2, False, (mean, rstd), eps=eps)
    _apply(R, plan, f64, L, out, xv, None, mu, rs, weight, bias, (None, None), C, (S, G, CG), group=True)


@register("group_norm_backward", "triton")
def group_norm_backward(dx, dweight, dbias, grad, x, mean, rstd, weight, num_groups) -> None:
    N, C, S = _ncs(x)
    G = num_groups
    CG = C // G
    if x.size == 0:
        for d in (dweight, dbias):
            if d is not None and d.size:
                fill(d, 0.0)
        return
    f64 = compute_f64(grad, x, weight)
    xv, gv = as_ncs(x), as_ncs(grad)
    mean, rstd, weight = contiguous(mean), contiguous(rstd), contiguous(weight)
    if dweight is not None or dbias is not None:  # per channel: over samples and space, with each (n, group)'s stats
        L = N * S
        plan = _plan(C, L)
        p1, p2 = _partials(C, plan, f64, L, xv, gv, mean, rstd, None, (S, G, CG, G), grad=True, outs=(dbias, dweight))
        sums = _finalize(C, plan, f64, L, p1, p2, True)
        for d, s in ((dbias, sums[0]), (dweight, sums[1])):
            if d is not None and d is not s:
                copy_(d, s)
    if dx is not None:  # per (sample, group): sums of g * w and g * w * xhat, then dx
        R, L = N * G, CG * S
        plan = _plan(R, L)
        p1, p2 = _partials(R, plan, f64, L, xv, gv, mean, rstd, weight, (S, G, CG, 0), grad=True,
                           group=True)
        sums = _finalize(R, plan, f64, L, p1, p2, True)
        _apply(R, plan, f64, L, dx, xv, gv, mean, rstd, weight, None, sums, C, (S, G, CG), bwd=True,
               group=True)
