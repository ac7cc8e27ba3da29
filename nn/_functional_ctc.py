"""``nn.functional.ctc_loss``: the connectionist temporal classification loss by the log-space alpha (forward)
recursion over the extended label ``blank, l1, blank, l2, ..., blank``, written with differentiable autograd ops
(so backward is automatic), vectorised over the batch and the extended label positions; one step per frame."""

from __future__ import annotations

import numpy as np

import autograd as ag
from autograd import amp
from tkernels.validation import OpTypeError, OpValueError

__all__ = ["ctc_loss"]

_NEG_INF = float("-inf")


def _lengths(op, name, lengths, n):
    """Host ints from a tuple, list, int or integer tensor of lengths (they size the recursion, as in PyTorch)."""
    if isinstance(lengths, ag.Tensor):
        if lengths.dtype.kind == "f":
            raise OpTypeError(f"{op}: {name} must be integers, got a tensor of dtype {lengths.dtype}")
        vals = [int(v) for v in np.asarray(lengths.detach().cpu().numpy()).reshape(-1)]
    elif isinstance(lengths, int | np.integer):
        vals = [int(lengths)]
    else:
        vals = [int(v) for v in lengths]
    if len(vals) != n:
        raise RuntimeError(f"{op}: {name} must have one length per batch element ({n}), got {len(vals)}")
    if any(v < 0 for v in vals):
        raise RuntimeError(f"{op}: {name} must be non-negative, got {vals}")
    return vals


def _lse(*xs):
    """Elementwise log-sum-exp of same-shape tensors that may hold -inf: where all are -inf the result is -inf
    and the gradient is 0 (the plain formula gives -inf - -inf = NaN there)."""
    m = xs[0].detach()
    for x in xs[1:]:
        m = ag.maximum(m, x.detach())
    finite = m > _NEG_INF
    m0 = ag.where(finite, m, 0.0)
    s = (xs[0] - m0).exp()
    for x in xs[1:]:
        s = s + (x - m0).exp()
    return ag.where(finite, ag.where(finite, s, 1.0).log() + m0, _NEG_INF)


def _padded_targets(op, targets, tl, n):
    """``(N, S)`` targets from the padded form or the 1-D concatenation, S = max target length (at least 1)."""
    s = max(max(tl, default=0), 1)
    if targets.ndim == 2:
        if targets.shape[0] != n:
            raise RuntimeError(f"{op}: targets of shape {list(targets.shape)} must have one row per batch element "
                               f"({n})")
        if max(tl, default=0) > targets.shape[1]:
            raise RuntimeError(f"{op}: a target length ({max(tl)}) exceeds the padded targets' width "
                               f"(targets of shape {list(targets.shape)})")
        tgt = targets[:, :s] if targets.shape[1] >= s else ag.cat(
            [targets, ag.zeros(n, s - targets.shape[1], dtype=targets.dtype, device=targets.device)], 1)
    elif targets.ndim == 1:
        if sum(tl) > targets.shape[0]:
            raise RuntimeError(f"{op}: the target lengths sum to {sum(tl)} but the concatenated targets hold "
                               f"{targets.shape[0]}")
        starts = np.cumsum([0] + tl[:-1])
        idx = np.minimum(starts[:, None] + np.arange(s)[None, :], max(targets.shape[0] - 1, 0))
        if targets.shape[0] == 0:
            return ag.zeros(n, s, dtype=ag.int64, device=targets.device)
        tgt = targets[ag.tensor(idx.astype(np.int64), device=targets.device)]
    else:
        raise RuntimeError(f"{op}: targets must be (N, S) padded or 1-D concatenated, got shape "
                           f"{list(targets.shape)}")
    return tgt.to(ag.int64)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """CTC loss of ``log_probs`` (T, N, C) or unbatched (T, C) (log-softmax outputs) against ``targets``
    (N, S) padded or the 1-D concatenation of the targets; lengths as int tensors or sequences.
    ``reduction="mean"`` divides each loss by its target length, then averages over the batch."""
    op = "ctc_loss"
    if reduction not in ("none", "mean", "sum"):
        raise OpValueError(f"{op}: {reduction!r} is not a valid value for reduction ('none', 'mean' or 'sum')")
    if log_probs.ndim not in (2, 3) or log_probs.dtype.kind != "f":
        raise RuntimeError(f"{op}: log_probs must be a float (T, N, C) or (T, C) tensor, got shape "
                           f"{list(log_probs.shape)} dtype {log_probs.dtype}")
    if targets.dtype.kind == "f":
        raise OpTypeError(f"{op}: targets must hold class indices (an integer dtype), got {targets.dtype}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    (log_probs,) = amp.fp32(log_probs)
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError(f"{op}: blank must be in label range [0, {c}), got {blank}")
    il = _lengths(op, "input_lengths", input_lengths, n)
    tl = _lengths(op, "target_lengths", target_lengths, n)
    if any(v > t_max for v in il):
        raise RuntimeError(f"{op}: Expected input_lengths to have value at most {t_max}, but got {il}")
    dev = log_probs.device
    tgt = _padded_targets(op, targets, tl, n).to(dev)  # (N, S); PyTorch takes cpu targets for cuda log_probs
    s_max = tgt.shape[1]
    pos = ag.arange(s_max, device=dev)
    tl_t = ag.tensor(tl, dtype=ag.int64, device=dev)
    in_target = pos.unsqueeze(0) < tl_t.unsqueeze(1)
    if n and bool((in_target & ((tgt < 0) | (tgt >= c))).any()):
        raise RuntimeError(f"{op}: target values must lie in [0, {c}) (log_probs of shape {list(log_probs.shape)})")
    tgt = ag.where(in_target, tgt, blank)
    # extended labels l' = blank, t1, blank, t2, ..., blank: (N, 2S + 1)
    ext = ag.stack([ag.full((n, s_max), blank, dtype=ag.int64, device=dev), tgt], 2).reshape(n, 2 * s_max)
    ext = ag.cat([ext, ag.full((n, 1), blank, dtype=ag.int64, device=dev)], 1)
    width = 2 * s_max + 1
    # a label may skip the blank before it unless it repeats the label two positions back
    prev2 = ag.cat([ag.full((n, 2), blank, dtype=ag.int64, device=dev), ext[:, :-2]], 1)
    skip = (ext != blank) & (ext != prev2)
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(t_max, n, width))  # (T, N, 2S + 1)
    neg = ag.full((n, width), _NEG_INF, dtype=log_probs.dtype, device=dev)
    wpos = ag.arange(width, device=dev).unsqueeze(0)
    start = (wpos == 0) | ((wpos == 1) & (tl_t.unsqueeze(1) > 0))
    il_t = ag.tensor(il, dtype=ag.int64, device=dev).unsqueeze(1)
    if t_max == 0:
        alpha = neg
    else:
        alpha = ag.where(start & (il_t > 0), emit[0], neg)
    pad1 = neg[:, :1]
    pad2 = neg[:, :2]
    for t in range(1, t_max):
        a1 = ag.cat([pad1, alpha[:, :-1]], 1)
        a2 = ag.where(skip, ag.cat([pad2, alpha[:, :-2]], 1), _NEG_INF)
        new = _lse(alpha, a1, a2) + emit[t]
        alpha = ag.where(il_t > t, new, alpha)  # sequences shorter than t keep their last alpha
    end = (2 * tl_t).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = ag.where(tl_t > 0, alpha.gather(1, (end - 1).clamp_min(0)).squeeze(1), _NEG_INF)
    loss = -_lse(last, before)
    if zero_infinity:
        loss = ag.where(loss == float("inf"), 0.0, loss)
    if reduction == "mean":
        return (loss / tl_t.clamp_min(1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
