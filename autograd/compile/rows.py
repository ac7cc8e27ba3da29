"""Row reductions a compiled step generates on cuda (``autograd.compile``): the recorded calls of layer norm are
rewritten into *row ops* (``schedule``'s kind "row": one program per block of rows, the normalized dimensions the
last ones) that the code generator computes inside a region's segment, fused with the elementwise ops over the same
index space before them (the gradient they read) and after them (the residual gradient added to ``dx``).

- ``layer_norm(out, mean, rstd, x, w, b, k, eps)`` becomes ``layer_norm_rows``: mean, variance, normalize, affine.
- ``layer_norm_backward(dx, dw, db, g, x, mean, rstd, w, k)`` becomes ``layer_norm_backward_rows`` (``dx`` from
  the two row sums, and per program the column sums of ``g * xhat`` and ``g`` into ``[P, N]`` partials) and two
  ``sum`` calls over the partials' rows (fusible: they join a later region): ``dw`` and ``db``.
- ``softmax``/``log_softmax(out, x, axis)`` over the last axis become ``softmax_rows`` (row max, sum of exps), their
  backward ``(out, g, y, axis)`` ``softmax_backward_rows`` (the row sum of ``g * y``, or of ``g``).

The generated code follows the eager kernels' formulas and row reductions (``kernels/norm.py``,
``kernels/softmax.py``), so the element-wise results are the eager ones.

Only float32/float64 arrays whose rows collapse the way the generated code indexes them (``dx``/``out``
contiguous, statistics and affine parameters contiguous) and rows of at most ``MAX_N`` elements are rewritten; the
other calls stay the existing kernels. cpu plans are not rewritten (the NumPy kernels run as recorded)."""

from __future__ import annotations

from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.dispatch import lookup

from .capture import Call

__all__ = ["expand_rows", "row_tile", "ROW_OPS", "MAX_N"]

MAX_N = 4096  # elements of a row (one program holds whole rows)
# elements of a program's tile: interpreted, programs are the cost; on a GPU, registers (a row op keeps a few
# tile-sized values live)
TILE, GPU_TILE = 4096, 1024
ROW_OPS = ("layer_norm_rows", "layer_norm_backward_rows", "softmax_rows", "softmax_backward_rows",
           "cross_entropy_rows")  # (the last made by ``splits.fuse_cross_entropy``)


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def row_tile(M: int, N: int):
    """(BLOCK_M, BLOCK_N) of a row segment: whole rows (a power of two >= N), rows filling ``TILE`` elements."""
    from tkernels.backends.triton._launch import INTERPRETED

    bn = _pow2(N)
    return max(1, min(_pow2(M), (TILE if INTERPRETED else GPU_TILE) // bn)), bn


def rows_of(x: Array, k: int):
    m = n = 1
    for s in x._shape[:x.ndim - k]:
        m *= s
    for s in x._shape[x.ndim - k:]:
        n *= s
    return m, n


def _generated_only(*args, **kwargs):
    raise RuntimeError("autograd.compile: a row op is computed by its region's generated kernel only")


def _ok(a, dtype, contiguous=True) -> bool:
    return a is None or (isinstance(a, Array) and a._dtype is dtype and (a.is_contiguous() or not contiguous))


def _layer_norm(c):
    out, mean, rstd, x, w, b, k, eps = c.args
    dt = x._dtype
    if dt not in (_dt.float32, _dt.float64) or x.size == 0:
        return None
    M, N = rows_of(x, k)
    if N > MAX_N or out._shape != x._shape or not all(_ok(a, dt) for a in (out, mean, rstd, w, b)):
        return None
    if not _ok(x, dt, contiguous=False) or any(s is not None and s.size != M for s in (mean, rstd)):
        return None  # (statistics are None without autograd)
    return [Call("layer_norm_rows", _generated_only, (out, mean, rstd, x, w, b, M, N, float(eps)), {}, None,
                 c.index)]


def _layer_norm_backward(c):
    from tkernels.backends.triton.memory import empty

    dx, dw, db, g, x, mean, rstd, w, k = c.args
    dt = x._dtype
    if dt not in (_dt.float32, _dt.float64) or dx is None or mean is None or x.size == 0:
        return None
    M, N = rows_of(x, k)
    if N > MAX_N or dx._shape != x._shape or g._shape != x._shape:
        return None
    if not all(_ok(a, dt) for a in (dx, dw, db, mean, rstd, w)) or not all(_ok(a, dt, False) for a in (g, x)):
        return None
    if mean.size != M or rstd.size != M:
        return None
    bm, _ = row_tile(M, N)
    P = -(-M // bm)
    dwp = empty((P, N), dt, x._device) if dw is not None else None
    dbp = empty((P, N), dt, x._device) if db is not None else None
    calls = [Call("layer_norm_backward_rows", _generated_only, (dx, dwp, dbp, g, x, mean, rstd, w, M, N), {}, None,
                  c.index)]
    total = lookup("sum", x._device)
    total = getattr(total, "__wrapped__", total)
    for d, p in ((dw, dwp), (db, dbp)):
        if d is not None:
            d1 = d.reshape((N,)) if d.ndim != 1 else d
            calls.append(Call("sum", total, (d1, p, (0,), dt), {}, None, c.index))
    return calls


def _last_axis_rows(out, arrays, axis):
    """(M, N) when ``out`` and ``arrays`` are float arrays of one shape and dtype reduced over the last axis."""
    dt = out._dtype
    nd = out.ndim
    if dt not in (_dt.float32, _dt.float64) or not nd or out.size == 0 or int(axis) % nd != nd - 1:
        return None
    if not out.is_contiguous() or any(not _ok(a, dt, False) or a._shape != out._shape for a in arrays):
        return None
    M, N = rows_of(out, 1)
    return None if N > MAX_N else (M, N)


def _softmax(c):
    out, x, axis = c.args
    mn = _last_axis_rows(out, [x], axis)
    return None if mn is None else [Call("softmax_rows", _generated_only, (out, x, *mn, c.op == "log_softmax"),
                                         {}, None, c.index)]


def _softmax_backward(c):
    out, g, y, axis = c.args
    mn = _last_axis_rows(out, [g, y], axis)
    return None if mn is None else [Call("softmax_backward_rows", _generated_only,
                                         (out, g, y, *mn, c.op == "log_softmax_backward"), {}, None, c.index)]


_REWRITES = {"layer_norm": _layer_norm, "layer_norm_backward": _layer_norm_backward, "softmax": _softmax,
             "log_softmax": _softmax, "softmax_backward": _softmax_backward,
             "log_softmax_backward": _softmax_backward}


def expand_rows(calls) -> list:
    """``calls`` with the row reductions above rewritten into row ops (cuda calls only)."""
    return rewrite_calls(calls, _REWRITES)


def rewrite_calls(calls, table) -> list:
    """``calls`` with each cuda call whose op is in ``table`` (op -> rewrite returning a list of calls, or None
    to keep the call) replaced by its rewrite; shared by the row rewrites here and splits.py."""
    out = []
    for c in calls:
        f = table.get(c.op)
        new = None
        if f is not None and c.refresh is None and not c.kwargs and isinstance(c.args[0], Array) and \
                c.args[0]._device.type == "cuda":
            new = f(c)
        out.extend([c] if new is None else new)
    return out
