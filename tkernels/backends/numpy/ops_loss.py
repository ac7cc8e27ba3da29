"""cross_entropy and nll_loss (forward and backward) on NumPy; see ``tkernels.ops.loss`` for the contract.

The class axis is moved last and the input viewed as (M, C) rows. Cross-entropy works from the shifted logits
``t = z - max(z)`` and ``lse0 = log(sum(exp(t)))``: ``-log_softmax(z)[c] = lse0 - t[c]`` is a difference of
two non-negative terms, so nothing cancels catastrophically and no log-probability array is materialized.
"""

from __future__ import annotations

import numpy as np

from ...array import Array
from ...dispatch import register
from ._util import accumulate_dtype as _compute
from ._util import max_last, npv, quiet, quiet_off, quiet_on

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)
# the ufunc reductions behind ndarray.max/.sum, without their Python wrappers (numpy/_core/_methods.py)
_max = np.maximum.reduce
_sum = np.add.reduce
_ROWS: dict = {}  # m -> read-only arange(m) for small batches (np.arange is ~1 µs a call, the size of the math)


def _row_ids(m: int) -> np.ndarray:
    """``np.arange(m)`` (read-only; cached for m <= 4096): the row index of a gather or scatter."""
    r = _ROWS.get(m)
    if r is None:
        r = np.arange(m)
        if m <= 4096:
            r.flags.writeable = False
            if len(_ROWS) >= 32:
                _ROWS.clear()
            _ROWS[m] = r
    return r


def _rows(nd: np.ndarray, axis: int) -> np.ndarray:
    """(M, C) rows with the class axis last (a view when the layout allows it)."""
    if axis != nd.ndim - 1:
        nd = np.moveaxis(nd, axis, -1)
    return nd.reshape(-1, nd.shape[-1])


def _store_rows(out: Array, d: np.ndarray, axis: int) -> None:
    """Write (M, C) rows into ``out`` whose class axis is ``axis``."""
    o = npv(out)
    if axis != o.ndim - 1:
        o = np.moveaxis(o, axis, -1)
    np.copyto(o, d.reshape(o.shape), casting="unsafe")


def _targets(op, target, c, ignore_index):
    """Flat int64 class indices (ignored ones replaced by 0) and the mask of valid rows (None: all valid)."""
    t = npv(target).reshape(-1)
    if t.dtype != np.int64:
        t = t.astype(np.int64)
    if t.size == 0:
        return t, None
    if t.view(np.uint64).max() < c:  # the common case in one pass: negative targets wrap to huge values
        if not 0 <= ignore_index < c:
            return t, None
        valid = t != ignore_index
        return (t, None) if valid.all() else (np.where(valid, t, 0), valid)
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    lo, hi = ts.min(), ts.max()
    if lo < 0 or hi >= c:
        bad = int(lo if lo < 0 else hi)
        raise IndexError(f"{op}: target {bad} is out of bounds for {c} classes (class indices must be in "
                         f"[0, {c - 1}] or equal ignore_index={ignore_index}; target {target.shape}, "
                         f"{target.dtype})")
    return ts, valid


def _row_weights(w, ts, valid, cd):
    """``weight[target]`` per row with 0 for ignored rows; None when every row weighs 1."""
    if w is None:
        return None if valid is None else valid.astype(cd)
    wt = w[ts]
    if valid is not None:
        wt[~valid] = 0
    return wt


def _col(v):
    """A per-row vector as a column; a scalar as itself."""
    return v[:, None] if isinstance(v, np.ndarray) else v


def _weight(weight, cd):
    return None if weight is None else npv(weight).astype(cd, copy=False)


def _reduce(out, rows, reduction, denom) -> None:
    o = npv(out)
    if reduction == "none":
        np.copyto(o, rows.reshape(o.shape), casting="unsafe")
        return
    s = rows.sum(dtype=np.float64)
    if reduction == "mean":
        s = s / np.float64(denom)  # 0/0 is NaN: every target ignored, or an empty batch (PyTorch)
    o[...] = s


def _row_grad(grad, reduction, cd):
    """The incoming gradient per row ((M,) for "none") or as a scalar."""
    if isinstance(grad, Array):
        g = npv(grad)
        return g.reshape(-1).astype(cd, copy=False) if reduction == "none" else float(g)
    return float(grad)


def _plain_targets(target, z, ignore_index):
    """The int64 targets (M,) of (M, C) float32/float64 logits ``z`` when every one is a class index and none is
    ignored (the common call), else None (then the general path decides, and raises where it must)."""
    t = npv(target)
    c = z.shape[1]
    if (t.dtype is _I64 and t.ndim == 1 and t.size and (z.dtype is _F32 or z.dtype is _F64)
            and _max(t.view(_U64)) < c and not 0 <= ignore_index < c):  # negative targets wrap to huge values
        return t
    return None


@register("cross_entropy", "numpy")
def cross_entropy(out, lse, logits, target, weight, ignore_index, reduction, label_smoothing, axis) -> None:
    if weight is None and not label_smoothing and axis == 1 and target._dtype.kind != "f":
        z = npv(logits)
        if z.ndim == 2:
            ts = _plain_targets(target, z, ignore_index)
            if ts is not None:
                return _ce_plain(out, lse, z, ts, reduction)
    prob = target.dtype.kind == "f"
    cd = _compute(logits, weight, target if prob else None)
    z = _rows(npv(logits), axis).astype(cd, copy=False)
    m, c = z.shape
    if not prob:
        ts, valid = _targets("cross_entropy", target, c, ignore_index)
    w = _weight(weight, cd)
    ls = label_smoothing
    with quiet():  # np.errstate(all="ignore"), cheaper (see _util.quiet)
        mx = max_last(z, keepdims=True)
        t = z - mx
        lse0 = np.log(np.exp(t).sum(axis=1))
        if prob:
            q = _rows(npv(target), axis).astype(cd, copy=False)
            if ls:
                q = q * cd.type(1 - ls) + cd.type(ls / c)
            wq = q * w if w is not None else q
            rows = lse0 * wq.sum(axis=1) - (wq * t).sum(axis=1)
            denom = m
        else:
            rows = lse0 - t[_row_ids(m), ts]
            wt = _row_weights(w, ts, valid, cd)
            if wt is not None:
                rows *= wt
            if valid is not None:
                rows = np.where(valid, rows, 0)  # an ignored row of inf logits must not give NaN
            if ls:
                smooth = c * lse0 - t.sum(axis=1) if w is None else w.sum() * lse0 - t @ w
                if valid is not None:
                    smooth = np.where(valid, smooth, 0)
                rows = cd.type(1 - ls) * rows + cd.type(ls / c) * smooth
            denom = m if wt is None else wt.sum(dtype=np.float64)
        _reduce(out, rows, reduction, denom)
        if lse is not None:
            o = npv(lse)
            np.copyto(o, (lse0 + mx[:, 0]).reshape(o.shape), casting="unsafe")


def _ce_plain(out, lse, z, ts, reduction) -> None:
    """cross_entropy of (M, C) float32/float64 logits and valid int64 targets, no weight or smoothing: the
    general path's NumPy calls (same values), with fewer temporaries."""
    m = z.shape[0]
    tok = quiet_on()  # np.errstate(all="ignore"), cheaper (see _util.quiet_on)
    try:
        mx = max_last(z)
        t = z - mx[:, None]
        rows = t[_row_ids(m), ts]
        np.exp(t, out=t)
        lse0 = _sum(t, axis=1)
        np.log(lse0, out=lse0)
        np.subtract(lse0, rows, out=rows)
        if reduction == "mean":
            npv(out)[...] = _sum(rows, axis=None, dtype=np.float64) / np.float64(m)
        else:
            _reduce(out, rows, reduction, m)
        if lse is not None:
            o = npv(lse)
            if o.dtype is z.dtype:
                np.add(lse0, mx, out=o)
            else:
                np.copyto(o, lse0 + mx, casting="unsafe")
    finally:
        quiet_off(tok)


@register("cross_entropy_backward", "numpy")
def cross_entropy_backward(dlogits, grad, logits, target, weight, lse, ignore_index, reduction, label_smoothing,
                           axis) -> None:
    if (weight is None and not label_smoothing and axis == 1 and lse is not None and reduction != "none"
            and target._dtype.kind != "f"):
        z = npv(logits)
        if z.ndim == 2:
            ts = _plain_targets(target, z, ignore_index)
            if ts is not None and lse._dtype is logits._dtype:
                return _ce_plain_backward(dlogits, grad, z, ts, npv(lse), reduction)
    prob = target.dtype.kind == "f"
    cd = _compute(logits, weight, target if prob else None)
    z = _rows(npv(logits), axis).astype(cd, copy=False)
    m, c = z.shape
    if not prob:
        ts, valid = _targets("cross_entropy_backward", target, c, ignore_index)
    w = _weight(weight, cd)
    ls = label_smoothing
    g = _row_grad(grad, reduction, cd)
    with quiet():  # np.errstate(all="ignore"), cheaper (see _util.quiet)
        if lse is None:
            p = np.exp(z - max_last(z, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
        else:
            p = np.exp(z - npv(lse).reshape(-1, 1).astype(cd))
        if prob:
            q = _rows(npv(target), axis).astype(cd, copy=False)
            if ls:
                q = q * cd.type(1 - ls) + cd.type(ls / c)
            wq = q * w if w is not None else q
            if reduction == "mean":
                g = g / m if m else g
            p *= wq.sum(axis=1, keepdims=True)
            p -= wq
            p *= g[:, None] if isinstance(g, np.ndarray) else cd.type(g)
        else:
            wt = _row_weights(w, ts, valid, cd)
            if reduction == "mean":
                denom = m if wt is None else wt.sum(dtype=np.float64)
                g = g / denom if denom else 0.0
            if valid is not None:
                g = np.where(valid, g, 0).astype(cd, copy=False)
            # per row: d = a (p - onehot(t)) + b (W p - w), a = g w[t] (1 - ls), b = g ls / C; scalars when every
            # row shares them (the common unweighted mean), else (M,) vectors
            a = g * (1 - ls) if wt is None else g * wt * cd.type(1 - ls)
            ar = _row_ids(m)
            if ls:
                b = g * (ls / c)
                p *= _col(a + b * (c if w is None else w.sum()))
                p[ar, ts] -= a
                p -= _col(b) if w is None else _col(b) * w
            else:
                p *= _col(a)
                p[ar, ts] -= a
    _store_rows(dlogits, p, axis)


def _ce_plain_backward(dlogits, grad, z, ts, lse, reduction) -> None:
    """cross_entropy_backward for ``_ce_plain``'s case with a reduced loss and the forward's lse: the general
    path's NumPy calls (same values), written straight into ``dlogits``."""
    m = z.shape[0]
    g = float(npv(grad)) if isinstance(grad, Array) else float(grad)
    if reduction == "mean":
        g = g / m
    d = npv(dlogits)
    tok = quiet_on()  # np.errstate(all="ignore"), cheaper (see _util.quiet_on)
    try:
        np.subtract(z, lse[:, None], out=d)
        np.exp(d, out=d)
        d *= g
        d.reshape(-1)[_row_ids(m) * z.shape[1] + ts] -= g  # flat indices: ~1 µs less than d[rows, ts] at 128
    finally:
        quiet_off(tok)


@register("nll_loss", "numpy")
def nll_loss(out, log_probs, target, weight, ignore_index, reduction, axis) -> None:
    cd = _compute(log_probs, weight)
    x = _rows(npv(log_probs), axis).astype(cd, copy=False)
    m, c = x.shape
    ts, valid = _targets("nll_loss", target, c, ignore_index)
    wt = _row_weights(_weight(weight, cd), ts, valid, cd)
    rows = -x[_row_ids(m), ts]
    with quiet():  # np.errstate(all="ignore"), cheaper (see _util.quiet)
        if wt is not None:
            rows *= wt
        if valid is not None:
            rows = np.where(valid, rows, 0)
        _reduce(out, rows, reduction, m if wt is None else wt.sum(dtype=np.float64))


@register("nll_loss_backward", "numpy")
def nll_loss_backward(dlog_probs, grad, target, weight, ignore_index, reduction, axis) -> None:
    shape = dlog_probs.shape
    c = shape[axis]
    cd = _compute(dlog_probs, weight)
    ts, valid = _targets("nll_loss_backward", target, c, ignore_index)
    m = ts.size
    wt = _row_weights(_weight(weight, cd), ts, valid, cd)
    g = _row_grad(grad, reduction, cd)
    if reduction == "mean":
        denom = m if wt is None else wt.sum(dtype=np.float64)
        g = g / denom if denom else 0.0
    gi = -np.broadcast_to(np.asarray(g, cd), (m,))
    if wt is not None:
        gi = gi * wt
    if valid is not None:
        gi = np.where(valid, gi, 0)
    d = np.zeros((m, c), cd)
    d[_row_ids(m), ts] = gi
    _store_rows(dlog_probs, d, axis)
