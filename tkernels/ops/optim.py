"""Fused multi-tensor optimizer steps: every tensor of a parameter group updated IN PLACE by one call (one kernel
launch on cuda), with PyTorch's single-tensor Adam/AdamW/SGD arithmetic::

    adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, step, lr, beta1, beta2, eps,
              weight_decay, decoupled, amsgrad, maximize) -> None
        step: the step number after this update (>= 1), or (capturable) a list of float32 0-d Arrays on the
        params' device, one per parameter, holding the counts BEFORE this update: they are incremented in place
        and the bias corrections computed from them on the device (no host value, so the step can be captured
        into a CUDA graph: PyTorch's ``capturable=True``); decoupled: AdamW's weight decay p *= 1 - lr * wd
        (else Adam's g += wd * p); max_exp_avg_sqs: a list when amsgrad, else None.
        m = lerp(m, g, 1 - beta1); v = beta2 * v + (1 - beta2) * g * g; [vmax = max(vmax, v)]
        p -= lr / (1 - beta1**step) * m / (sqrt(v or vmax) / sqrt(1 - beta2**step) + eps)
    sgd_step(params, grads, momentum_buffers, *, lr, momentum, dampening, weight_decay, nesterov, maximize,
             first_step) -> None
        momentum_buffers: a list when momentum != 0, else None; first_step: the buffers are new and start as
        the (decayed) gradient, as PyTorch's ``torch.clone(d_p)``.

Lists: params, grads and states have one Array per parameter, of the parameter's shape and dtype (floating;
params of different dtypes may share a call), all on one device. Math is float32 for float32/float16/bfloat16
parameters (state stored back in the parameter's dtype), float64 for float64 ones.

Backend contract (the step's scalars computed here, in Python floats, as PyTorch computes them)::

    adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, w1, beta2, w2, eps, weight_decay, decay,
              step_size, bc2_sqrt, maximize)
    adam_step_capturable(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, w1, beta1, beta2, w2, eps,
                         weight_decay, decay, lr, maximize)
        steps: the count Arrays (incremented first); step_size and bc2_sqrt as below from each new count
        w1 = 1 - beta1, w2 = 1 - beta2; weight_decay: the coupled coefficient (0.0: none); decay: the decoupled
        factor 1 - lr * wd (1.0: none); step_size = lr / (1 - beta1**step); bc2_sqrt = sqrt(1 - beta2**step)
    sgd_step(params, grads, momentum_buffers, lr, momentum, damp_w, weight_decay, nesterov, maximize, first_step)
        damp_w = 1 - dampening
"""

from __future__ import annotations

import math

from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe

__all__ = ["adam_step", "sgd_step"]


_SEQ = (list, tuple)


def _arrays(op, name, xs, n=None) -> list:
    if isinstance(xs, Array) or not isinstance(xs, _SEQ):
        raise OpTypeError(f"{op}: {name} must be a list of Arrays, got {describe(xs)}")
    if n is not None and len(xs) != n:
        raise OpValueError(f"{op}: {name} has {len(xs)} arrays but params has {n}; hint: one per parameter")
    return xs


def _check(op, params, named) -> None:
    """params: floating Arrays on one device; each list of ``named`` matches them one to one."""
    dev = None
    for i, p in enumerate(params):
        if not isinstance(p, Array):
            raise OpTypeError(f"{op}: params[{i}] must be an Array, got {describe(p)}")
        dt, shape = p._dtype, p._shape
        if dt.kind != "f":
            raise OpTypeError(f"{op}: params[{i}] must be floating, got {describe(p)}")
        if dev is None:
            dev = p._device
        elif p._device is not dev and p._device != dev:
            raise RuntimeError(f"{op}: params[{i}] is on {p.device} but params[0] is on {dev}; hint: call the op "
                               f"once per device")
        for name, xs in named:
            x = xs[i]
            if x is p:
                raise OpValueError(f"{op}: {name}[{i}] is params[{i}] itself; hint: state needs its own memory")
            try:  # dtypes and devices are interned: identity is the fast path
                ok = x._shape == shape and (x._dtype is dt or x._dtype == dt) and (x._device is dev or x._device == dev)
            except AttributeError:
                ok = False
            if not ok or not isinstance(x, Array):
                raise OpValueError(f"{op}: {name}[{i}] {describe(x)} must have the shape, dtype and device of "
                                   f"params[{i}] {describe(p)}")


def _lists_ok(params, named) -> bool:
    """The common case of the ``_arrays`` checks in one test: params and every list of ``named`` are lists or
    tuples of one length (when not, ``_arrays`` says what is wrong)."""
    if params.__class__ not in _SEQ:
        return False
    n = len(params)
    for _, xs in named:
        if xs.__class__ not in _SEQ or len(xs) != n:
            return False
    return True


def _num(op, name, v, lo=None) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: {name} must be a number, got {describe(v)}") from None
    if lo is not None and not f >= lo:
        raise OpValueError(f"{op}: {name} must be >= {lo}, got {v}")
    return f


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, step, lr, beta1, beta2, eps,
              weight_decay=0.0, decoupled=False, amsgrad=False, maximize=False) -> None:
    """Adam/AdamW step over lists of Arrays, in place (see the module docstring)."""
    op = "adam_step"
    if step.__class__ in _SEQ:
        return _adam_capturable(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, beta1, beta2,
                                eps, weight_decay, decoupled, amsgrad, maximize)
    named = [("grads", grads), ("exp_avgs", exp_avgs), ("exp_avg_sqs", exp_avg_sqs)]
    if amsgrad:
        named.append(("max_exp_avg_sqs", max_exp_avg_sqs))
    try:  # the common case in one test (once per optimizer step); the checks one by one say what is wrong
        nums = float(step), float(lr), float(eps), float(weight_decay), float(beta1), float(beta2)
        s, a, e, w, b1, b2 = nums
        ok = (s >= 1 and a >= 0 and e >= 0 and w >= 0 and 0 <= b1 < 1 and 0 <= b2 < 1
              and (amsgrad or max_exp_avg_sqs is None) and _lists_ok(params, named))
    except Exception:  # noqa: BLE001 - any failure: the checks below raise it, or the error that comes first
        ok = False
    if not ok:
        nums = _adam_checks(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, beta1, beta2, eps,
                            weight_decay, amsgrad)
    step, lr, eps, wd, beta1, beta2 = nums
    _check(op, params, named)
    if not params:
        return
    bc1 = 1 - beta1**step
    bc2_sqrt = math.sqrt(1 - beta2**step)
    coupled = wd if wd != 0 and not decoupled else 0.0
    decay = 1 - lr * wd if wd != 0 and decoupled else 1.0
    lookup(op, params[0]._device)(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else None,
                                  1 - beta1, beta2, 1 - beta2, eps, coupled, decay, lr / bc1, bc2_sqrt,
                                  bool(maximize))


def _adam_capturable(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, eps,
                     weight_decay, decoupled, amsgrad, maximize) -> None:
    """adam_step with device step counts (see the module docstring)."""
    _, lr, eps, wd, beta1, beta2 = _adam_checks(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, 1, lr,
                                                beta1, beta2, eps, weight_decay, amsgrad)
    named = [("grads", grads), ("exp_avgs", exp_avgs), ("exp_avg_sqs", exp_avg_sqs)]
    if amsgrad:
        named.append(("max_exp_avg_sqs", max_exp_avg_sqs))
    _check(op, params, named)
    _arrays(op, "step", steps, len(params))
    for i, (k, p) in enumerate(zip(steps, params)):
        if not isinstance(k, Array) or k._shape != () or k._dtype.name != "float32" or (
                k._device is not p._device and k._device != p._device):
            raise OpValueError(f"{op}: step[{i}] {describe(k)} must be a float32 0-d Array on the device of "
                               f"params[{i}] {describe(p)}; hint: capturable Adam keeps each parameter's step count "
                               f"as torch.zeros((), dtype=float32, device=param.device)")
    if not params:
        return
    coupled = wd if wd != 0 and not decoupled else 0.0
    decay = 1 - lr * wd if wd != 0 and decoupled else 1.0
    lookup("adam_step_capturable", params[0]._device)(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else None, steps, 1 - beta1, beta1, beta2,
        1 - beta2, eps, coupled, decay, lr, bool(maximize))


def _adam_checks(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, beta1, beta2, eps,
                 weight_decay, amsgrad) -> tuple:
    """adam_step's list and number checks one by one (the detailed errors); the numbers as floats."""
    n = len(_arrays(op, "params", params))
    _arrays(op, "grads", grads, n)
    _arrays(op, "exp_avgs", exp_avgs, n)
    _arrays(op, "exp_avg_sqs", exp_avg_sqs, n)
    if amsgrad:
        if max_exp_avg_sqs is None:
            raise OpValueError(f"{op}: amsgrad=True needs max_exp_avg_sqs (one Array per parameter), got None")
        _arrays(op, "max_exp_avg_sqs", max_exp_avg_sqs, n)
    elif max_exp_avg_sqs is not None:
        raise OpValueError(f"{op}: max_exp_avg_sqs given with amsgrad=False; hint: pass None")
    step = _num(op, "step", step, 1)
    lr, eps, wd = _num(op, "lr", lr, 0), _num(op, "eps", eps, 0), _num(op, "weight_decay", weight_decay, 0)
    beta1, beta2 = _num(op, "beta1", beta1, 0), _num(op, "beta2", beta2, 0)
    if not (beta1 < 1 and beta2 < 1):
        raise OpValueError(f"{op}: betas must be in [0, 1), got ({beta1}, {beta2})")
    return step, lr, eps, wd, beta1, beta2


def sgd_step(params, grads, momentum_buffers, *, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
             nesterov=False, maximize=False, first_step=False) -> None:
    """SGD step (momentum, dampening, Nesterov, weight decay, maximize) over lists of Arrays, in place."""
    op = "sgd_step"
    n = len(_arrays(op, "params", params))
    named = [("grads", _arrays(op, "grads", grads, n))]
    lr, momentum = _num(op, "lr", lr, 0), _num(op, "momentum", momentum, 0)
    dampening, wd = _num(op, "dampening", dampening), _num(op, "weight_decay", weight_decay, 0)
    if nesterov and (momentum == 0 or dampening != 0):
        raise OpValueError(f"{op}: nesterov needs a momentum and zero dampening, got momentum={momentum}, "
                           f"dampening={dampening}")
    if momentum != 0:
        if momentum_buffers is None:
            raise OpValueError(f"{op}: momentum={momentum} needs momentum_buffers (one Array per parameter), "
                               f"got None")
        named.append(("momentum_buffers", _arrays(op, "momentum_buffers", momentum_buffers, n)))
    elif momentum_buffers is not None:
        raise OpValueError(f"{op}: momentum_buffers given with momentum=0; hint: pass None")
    _check(op, params, named)
    if n == 0:
        return
    lookup(op, params[0]._device)(params, grads, momentum_buffers if momentum != 0 else None, lr, momentum,
                                  1 - dampening, wd, bool(nesterov), bool(maximize), bool(first_step))
