"""cross_entropy / nll_loss and their backward entries on cuda (``tkernels/kernels/loss.py``); signatures as the
NumPy backend (``tkernels/ops/loss.py``)::

    cross_entropy(out, lse, logits, target, weight, ignore_index, reduction, label_smoothing, axis)
    cross_entropy_backward(dlogits, grad, logits, target, weight, lse, ignore_index, reduction, label_smoothing,
                           axis)
    nll_loss(out, log_probs, target, weight, ignore_index, reduction, axis)
    nll_loss_backward(dlog_probs, grad, target, weight, ignore_index, reduction, axis)

The class axis may be any axis: logits, targets and the gradient are read and written in place by strides. No
probability array is materialized (the class axis goes in chunks with an online max / sum-exp). Reductions are
deterministic: per-row losses (and row weights, for the weighted mean) go to a scratch vector that one program
sums in a fixed order. Deviation from the NumPy backend: targets are not checked against ``[0, C)`` on the host
(that would need a device-to-host sync); an out-of-range class index gives NaN in its row's loss and gradient and
is recorded in the device's error buffer: the ``IndexError`` comes at the next synchronising call
(``tkernels/cuda/device_errors.py``).
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.loss import ce_bwd_kernel, ce_fwd_kernel, loss_sum_kernel
from ._launch import INTERPRETED, error_buffer, f64_bits
from .memory import empty, fill
from .ops_norm import contiguous
from .ops_softmax import compute_f64, row_plan, row_tile, run

SUM_BLOCK = 4096 if INTERPRETED else 1024  # loss_sum_kernel: one program walks the rows in such blocks


def _full_strides(target: Array, axis: int, prob: bool):
    """Target strides over the logits' axes (class-index targets lack the class axis: stride 0 there)."""
    st = target._strides
    return st if prob else st[:axis] + (0,) + st[axis:]


def _acc(f64: bool):
    return _dt.float64 if f64 else _dt.float32


def _finish(out: Array, rows: Array, rw: Array | None, M: int, reduction: str, f64: bool) -> None:
    run(loss_sum_kernel, (1,), rows, rows if rw is None else rw, out, M, MEAN=reduction == "mean",
        HAS_W=rw is not None, F64=f64, BLOCK=SUM_BLOCK)


def _forward(nll, out, lse, z, target, weight, ignore_index, reduction, ls, axis) -> None:
    prob = target._dtype.kind == "f"
    f64 = compute_f64(z, weight, target if prob else None)
    M = z.size // z._shape[axis]
    if M == 0:  # sum over nothing: 0; mean: 0 / 0
        if reduction != "none":
            fill(out, 0.0 if reduction == "sum" else float("nan"))
        return
    M, C, (sz, st), args, nd = row_plan(z._shape, axis, z._strides, _full_strides(target, axis, prob))
    _, bm, bc = row_tile(M, C)
    dev = z._device
    rows = out if reduction == "none" else empty((M,), _acc(f64), dev)
    rw = empty((M,), _acc(f64), dev) if reduction == "mean" and not prob else None
    w = weight if weight is not None else rows
    run(ce_fwd_kernel, (-(-M // bm),), z, target, w, rows, rows if lse is None else lse, rows if rw is None else rw,
        error_buffer(dev), M, C, ignore_index, f64_bits(ls), sz, st, w._strides[0] if weight is not None else 0, *args,
        PROB=prob,
        NLL=nll, HAS_W=weight is not None, SMOOTH=ls != 0, STORE_LSE=lse is not None, STORE_RW=rw is not None,
        F64=f64, ROW_ND=nd, BLOCK_M=bm, BLOCK_C=bc)
    if reduction != "none":
        _finish(out, rows, rw, M, reduction, f64)


def _backward(nll, d, grad, z, target, weight, lse, ignore_index, reduction, ls, axis) -> None:
    if d.size == 0:
        return
    prob = target._dtype.kind == "f"
    f64 = compute_f64(z, weight, target if prob else None)
    dev = d._device
    M, C, (sz, st, sd), args, nd = row_plan(d._shape, axis, z._strides, _full_strides(target, axis, prob),
                                            d._strides)
    _, bm, bc = row_tile(M, C)
    w = weight if weight is not None else d
    sw = weight._strides[0] if weight is not None else 0
    mean = reduction == "mean"
    den = d
    if mean and not prob:  # the sum of the row weights: the row weights by the forward kernel, then their sum
        acc = _acc(f64)
        rw, scratch, den = empty((M,), acc, dev), empty((M,), acc, dev), empty((1,), acc, dev)
        run(ce_fwd_kernel, (-(-M // bm),), z, target, w, scratch, scratch, rw, error_buffer(dev), M, C, ignore_index,
            0, sz, st, sw,
            *args[:17], PROB=False, NLL=True, HAS_W=weight is not None, SMOOTH=False, STORE_LSE=False,
            STORE_RW=True, F64=f64, ROW_ND=nd, BLOCK_M=bm, BLOCK_C=bc)
        _finish(den, rw, None, M, "sum", f64)
    if isinstance(grad, Array):
        g, g_mode, g_bits = (contiguous(grad), 2, 0) if reduction == "none" else (grad, 1, 0)
    else:
        g, g_mode, g_bits = d, 0, f64_bits(grad)
    lse = contiguous(lse)
    run(ce_bwd_kernel, (-(-M // bm),), z, target, w, d if lse is None else lse, g, den, d, M, C, ignore_index,
        f64_bits(ls), g_bits, sz, st, sw, sd, *args, PROB=prob, NLL=nll, HAS_W=weight is not None, SMOOTH=ls != 0,
        HAS_LSE=lse is not None, G_MODE=g_mode, MEAN=mean, F64=f64, ROW_ND=nd, BLOCK_M=bm, BLOCK_C=bc)


@register("cross_entropy", "triton")
def cross_entropy(out, lse, logits, target, weight, ignore_index, reduction, label_smoothing, axis) -> None:
    _forward(False, out, lse, logits, target, weight, ignore_index, reduction, label_smoothing, axis)


@register("nll_loss", "triton")
def nll_loss(out, log_probs, target, weight, ignore_index, reduction, axis) -> None:
    _forward(True, out, None, log_probs, target, weight, ignore_index, reduction, 0.0, axis)


@register("cross_entropy_backward", "triton")
def cross_entropy_backward(dlogits, grad, logits, target, weight, lse, ignore_index, reduction, label_smoothing,
                           axis) -> None:
    _backward(False, dlogits, grad, logits, target, weight, lse, ignore_index, reduction, label_smoothing, axis)


@register("nll_loss_backward", "triton")
def nll_loss_backward(dlog_probs, grad, target, weight, ignore_index, reduction, axis) -> None:
    # log_probs are not read (only their shape): the gradient itself stands in for their pointer
    _backward(True, dlog_probs, grad, dlog_probs, target, weight, None, ignore_index, reduction, 0.0, axis)
