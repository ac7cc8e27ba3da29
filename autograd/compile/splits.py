"""Kernels a compiled step takes apart on cuda (``autograd.compile``): the parts of a composite backend call that are
a fill or a count launch no kernel of their own once they are fusible ops joining a region.

- ``embedding_backward`` (a float32/float64 ``dweight``, no ``scale_grad_by_freq``): the zero fill of ``dweight``
  becomes a ``fill`` call (fusible) and the scatter-add stays a kernel (``embedding_scatter``).
- ``cross_entropy_backward`` of class-index targets with ``reduction="mean"`` and no class weights: the mean's
  denominator (the number of targets other than ``ignore_index``; eager: a forward launch for the row weights and
  a sum launch) becomes a ``count_ne`` call (fusible: one program counts in blocks; a count of ones is exact, so
  the value is the eager one), and the gradient stays the eager ``ce_bwd_kernel`` reading it.
- A mean cross-entropy whose backward follows with nothing in between reading its loss (a training step's
  ``loss.backward()``): forward and backward become one row op, ``cross_entropy_rows``, with the count and a
  ``loss_mean`` (``fuse_cross_entropy``; it runs first, the backwards it does not take are split as above).

Out-of-range class indices are still recorded in the device's error buffer (the generated row op does it; with
the split backward, the eager kernels do). cpu plans are not rewritten."""

from __future__ import annotations

from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.dispatch import lookup

from .capture import Call

__all__ = ["split_calls", "fuse_cross_entropy", "embedding_scatter", "ce_backward_from_den", "count_ne"]


def embedding_scatter(dweight, grad, indices, padding_idx) -> None:
    """The scatter-add of ``embedding_backward`` into an already zeroed float ``dweight``."""
    from tkernels.backends.triton import ops_embedding as oe
    from tkernels.backends.triton._launch import error_buffer

    n, D = dweight._shape
    K = indices.size
    idx = oe.contiguous(indices)
    g, sgk, sgd = oe.as_rows(grad, 1)
    bk, bd = oe._tile(K, D)
    oe.run(oe.embedding_kernel, (-(-K // bk), -(-D // bd)), idx, g, dweight, dweight, K, D, n,
           -1 if padding_idx is None else padding_idx, sgk, sgd, D, 1, error_buffer(dweight._device),
           MODE=oe.SCATTER, SCALE=False, BLOCK_K=bk, BLOCK_D=bd)


def count_ne(out, target, value) -> None:
    """``out[0] = sum(target != value)``: a fusible op (``schedule``'s kind "count"), computed by the generated kernel
    of its region only."""
    raise RuntimeError("autograd.compile: count_ne is computed by its region's generated kernel only")


def ce_backward_from_den(den, d, grad, z, target, lse, ignore_index, ls, axis) -> None:
    """``cross_entropy_backward`` (class targets, mean, no weights) dividing by the recorded denominator ``den``."""
    from tkernels.backends.triton import ops_loss as ol

    f64 = ol.compute_f64(z)
    M, C, (sz, st, sd), args, nd = ol.row_plan(d._shape, axis, z._strides, ol._full_strides(target, axis, False),
                                               d._strides)
    _, bm, bc = ol.row_tile(M, C)
    if isinstance(grad, Array):
        g, g_mode, g_bits = grad, 1, 0
    else:
        g, g_mode, g_bits = d, 0, ol.f64_bits(grad)
    lse = ol.contiguous(lse)
    ol.run(ol.ce_bwd_kernel, (-(-M // bm),), z, target, d, d if lse is None else lse, g, den, d, M, C, ignore_index,
           ol.f64_bits(ls), g_bits, sz, st, 0, sd, *args, PROB=False, NLL=False, HAS_W=False, SMOOTH=ls != 0,
           HAS_LSE=lse is not None, G_MODE=g_mode, MEAN=True, F64=f64, ROW_ND=nd, BLOCK_M=bm, BLOCK_C=bc)


def _embedding_backward(c):
    dweight, grad, indices, padding_idx, scale = c.args
    if scale or dweight._dtype not in (_dt.float32, _dt.float64) or dweight.ndim != 2 or not dweight.size:
        return None
    if not indices.size or not dweight._shape[1]:
        return None
    fill = lookup("fill", dweight._device)
    fill = getattr(fill, "__wrapped__", fill)
    return [Call("fill", fill, (dweight, 0.0), {}, None, c.index),
            Call("embedding_scatter", embedding_scatter, (dweight, grad, indices, padding_idx), {}, None, c.index)]


def _cross_entropy_backward(c):
    from tkernels.backends.triton.memory import empty

    d, grad, z, target, weight, lse, ignore_index, reduction, ls, axis = c.args
    if reduction != "mean" or weight is not None or target._dtype.kind == "f" or not d.size or not target.size:
        return None
    if d._dtype not in (_dt.float32, _dt.float64) or not target.is_contiguous():
        return None
    if isinstance(grad, Array) and grad.size != 1:
        return None
    from tkernels.backends.triton.ops_loss import compute_f64

    den = empty((1,), _dt.float64 if compute_f64(z) else _dt.float32, d._device)
    return [Call("count_ne", count_ne, (den, target, int(ignore_index)), {}, None, c.index),
            Call("cross_entropy_backward_from_den", ce_backward_from_den,
                 (den, d, grad, z, target, lse, ignore_index, ls, axis), {}, None, c.index)]


_SPLITS = {"embedding_backward": _embedding_backward, "cross_entropy_backward": _cross_entropy_backward}


def split_calls(calls) -> list:
    """``calls`` with the composite calls above split (cuda calls only)."""
    from .rows import rewrite_calls
    return rewrite_calls(calls, _SPLITS)


def _ce_pair(calls, i):
    """(j, rows of the fused op) when ``calls[i]``, a ``cross_entropy``, and a later ``cross_entropy_backward`` of
    the same logits, targets and lse can be one row op: class targets, mean, no weights or smoothing, rows over the
    last axis of a float32/float64 matrix, nothing in between touching the loss or lse or writing the logits or
    targets."""
    from .rows import MAX_N
    from .schedule import _barrier, fusible

    out, lse, z, target, weight, ignore, reduction, ls, axis = calls[i].args
    if (reduction != "mean" or weight is not None or ls != 0 or lse is None or z._dtype not in (_dt.float32,
                                                                                               _dt.float64)):
        return None
    if (z.ndim != 2 or int(axis) % 2 != 1 or target._dtype.kind not in "iu" or not target.is_contiguous()
            or target._shape != z._shape[:1] or not z.size or z._shape[1] > MAX_N):
        return None
    if (lse._dtype is not z._dtype or not lse.is_contiguous() or lse.size != z._shape[0] or out._dtype is not
            z._dtype or out.size != 1):
        return None
    loss, inputs = {id(out._storage), id(lse._storage)}, {id(z._storage), id(target._storage)}
    for j in range(i + 1, len(calls)):
        b = calls[j]
        if b is None:
            continue
        if b.op == "cross_entropy_backward" and not b.kwargs and b.refresh is None and b.args[5] is lse:
            d, grad, z2, t2, w2, _, ign2, red2, ls2, ax2 = b.args
            if (z2 is z and t2 is target and w2 is None and ign2 == ignore and red2 == "mean" and ls2 == ls
                    and int(ax2) == int(axis) and d._shape == z._shape and d.is_contiguous()
                    and d._dtype is z._dtype and (not isinstance(grad, Array) or grad.size == 1)):
                return j
            return None
        op = fusible(b)
        if op is not None:
            writes, touched = {id(a._storage) for a in op.outs}, {id(a._storage) for a in [*op.outs, *op.reads]}
        else:
            bar = _barrier(b)
            if bar.touches_all:
                return None
            writes, touched = bar.written, bar.storages
        if touched & loss or writes & inputs:
            return None
    return None


def fuse_cross_entropy(calls) -> list:
    """A mean cross-entropy and its backward (class targets, no weights, no smoothing) as three fusible ops at the
    backward's place: the count of the mean's denominator, ``cross_entropy_rows`` (one row op: per row the
    log-sum-exp, the loss and the gradient of the logits: ``ce_fwd_kernel``'s and ``ce_bwd_kernel``'s formulas)
    and ``loss_mean`` (one program: the row losses' sum in ``loss_sum_kernel``'s order, over the count)."""
    from tkernels.backends.triton.memory import empty

    from .rows import _generated_only

    calls = list(calls)
    for i, c in enumerate(calls):
        if (c is None or isinstance(c, list) or c.op != "cross_entropy" or c.refresh is not None or c.kwargs
                or not isinstance(c.args[0], Array) or c.args[0]._device.type != "cuda"):
            continue
        j = _ce_pair(calls, i)
        if j is None:
            continue
        out, lse, z, target, _, ignore, _, _, _ = c.args
        d, grad = calls[j].args[:2]
        M, C = z._shape
        rows = empty((M,), z._dtype, z._device)
        den = empty((1,), z._dtype, z._device)
        calls[i] = None
        calls[j] = [Call("count_ne", count_ne, (den, target, int(ignore)), {}, None, calls[j].index),
                    Call("cross_entropy_rows", _generated_only, (d, rows, lse, z, target, grad, den, int(ignore), M, C),
                         {}, None, calls[j].index),
                    Call("loss_mean", _generated_only, (out, rows, den, M), {}, None, calls[j].index)]
    flat = []
    for c in calls:
        if isinstance(c, list):
            flat.extend(c)
        elif c is not None:
            flat.append(c)
    return flat
