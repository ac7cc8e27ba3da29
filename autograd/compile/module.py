"""``autograd.compile(module)`` called with autograd: the module's forward and its backward recorded together
(``autograd.grad`` of the outputs with respect to the inputs and parameters, from gradient buffers), partitioned
and generated as two plans, and applied as one ``autograd.Function``: its forward replays the forward plan, its
backward copies the incoming gradients into the buffers and replays the backward plan, so ``loss.backward()`` and
optimizers work as with the eager module.

A backward that runs after another forward of the same compiled module (two micro-batches, then their backwards)
replays its own forward again first, from the inputs it saved: the plans' buffers hold the latest forward."""

from __future__ import annotations

from ..function import Function
from ..tensor import Tensor
from .capture import Recorder, record
from .runtime import Plan, _copy, log
from .schedule import _call_arrays

__all__ = ["TrainingEntry", "record_training"]


class TrainingEntry:
    """The two plans of a module call with autograd, and the buffers they read and write."""

    def __init__(self, fwd, bwd, inputs, params, outs, gbufs, grads, single):
        self.fwd, self.bwd, self.inputs, self.params = fwd, bwd, inputs, params
        self.outs, self.gbufs, self.grads, self.single = outs, gbufs, grads, single
        self.generation = 0

    def forward(self, args):
        for dst, src in zip(self.inputs, args):
            _copy(dst._data, src._data)
        self.fwd.run()
        self.generation += 1
        return self.generation


class _Apply(Function):
    @staticmethod
    def forward(ctx, entry, n_in, *tensors):
        args = tensors[:n_in]
        ctx.entry, ctx.n_in = entry, n_in
        ctx.generation = entry.forward(args)
        ctx.save_for_backward(*args)
        return tuple(o.detach().clone() for o in entry.outs)

    @staticmethod
    def backward(ctx, *gs):
        e = ctx.entry
        if e.generation != ctx.generation:  # another forward ran since: this call's buffers are gone
            ctx.generation = e.forward(ctx.saved_tensors)
        for buf, g in zip(e.gbufs, gs):
            if g is None:
                from tkernels.dispatch import lookup

                lookup("fill", buf._data._device)(buf._data, 0.0)
            else:
                _copy(buf._data, g.detach()._data)
        e.bwd.run()
        grads = [None if g is None else g.detach().clone() for g in e.grads]
        return (None, None, *grads)


def record_training(mod, args, name):
    """Record ``mod(*args)`` and its backward; the entry, or None with the reason."""
    import autograd as ag

    if any(not isinstance(a, Tensor) for a in args):
        return None, "module inputs other than tensors"
    inputs = [a.detach().clone().requires_grad_(a.requires_grad) if a.dtype.is_floating_point else a.detach().clone()
              for a in args]
    params = [p for p in mod.parameters() if p.requires_grad]
    rec = Recorder()
    with record(rec):
        out = mod(*inputs)
        single = isinstance(out, Tensor)
        outs = [out] if single else list(out) if isinstance(out, (tuple, list)) else None
        if outs is None or not all(isinstance(o, Tensor) for o in outs):
            return None, f"the module returns {type(out).__name__}, not tensors"
        diff = [o for o in outs if o.requires_grad]
        n_fwd = len(rec.calls)
        with ag.no_grad():
            gbufs = [ag.zeros_like(o) for o in diff]
        n_mid = len(rec.calls)  # (the buffers' fills are neither forward nor backward)
        wrt = [t for t in inputs if t.requires_grad] + params
        grads = list(ag.grad(diff, wrt, grad_outputs=gbufs, allow_unused=True)) if diff and wrt else []
    if rec.reasons:
        return None, rec.reasons[0]
    if len(diff) != len(outs):
        return None, "outputs that do not require grad"
    fwd_calls, bwd_calls = rec.calls[:n_fwd], rec.calls[n_mid:]
    keep = [a for c in bwd_calls for a in _call_arrays(c)]
    fwd = Plan.from_calls(fwd_calls, [o._data for o in outs] + keep, rec.calls)
    bwd = Plan.from_calls(bwd_calls, [g._data for g in grads if g is not None], rec.calls)
    by_input = iter(grads)
    full = [next(by_input) if t.requires_grad else None for t in inputs] + [next(by_input) for _ in params]
    log.info("autograd.compile: %s: forward %d calls -> %d regions, backward %d calls -> %d regions", name,
             len(fwd_calls), fwd.num_regions, len(bwd_calls), bwd.num_regions)
    return TrainingEntry(fwd, bwd, inputs, params, outs, gbufs, full, single), None




def apply(entry: TrainingEntry, args):
    res = _Apply.apply(entry, len(args), *args, *entry.params)
    return res[0] if entry.single else res
