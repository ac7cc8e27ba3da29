"""Fused optimizer steps on cpu: in-place NumPy ufuncs with ``out=`` and one scratch array per tensor, in the
order of the per-parameter reference (nn/optim), so float32/float64 results are bit-identical to it. Python float
scalars meet float32 arrays as float32 (NEP 50), as in the elementwise backend; they are passed to the ufuncs as
0-d arrays of the compute dtype (``_scalars``). float16/bfloat16 tensors compute in float32 copies stored back
once per step (rounded to nearest even)."""

from __future__ import annotations

import math

import numpy as np

from ...array import _contiguous_strides, _prod
from ...dispatch import register
from ._util import HALF_NP, npv

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _compute_dtype(v: np.ndarray) -> np.dtype | None:
    """The dtype the step computes in for a parameter's NumPy view: None when it is the view's own (float32,
    float64), float32 for float16/bfloat16 (the tensors are updated in float32 copies)."""
    dt = v.dtype
    if dt is _F32 or dt is _F64 or dt not in HALF_NP:
        return None
    return _F32


def _scalars(cache: dict, dtype: np.dtype, values) -> list:
    """The step's Python float scalars as 0-d arrays of the compute dtype (None stays None), made once per dtype
    and call (``cache``). A ufunc converts a Python float operand on every call, which costs about as much as the
    operation itself on a small tensor (2x2 float32: ~0.9 µs with a float, ~0.5 µs with a 0-d array); the value
    is the same: the float rounded to the dtype, as NEP 50 converts it."""
    c = cache.get(dtype)
    if c is None:
        c = cache[dtype] = [None if v is None else np.array(v, dtype) for v in values]
    return c


def _grad(g, p, wd, maximize, tmp):
    """The gradient after maximize and coupled weight decay (``wd``: a 0-d array, None for none); a new array
    when either applies (grads stay)."""
    if maximize:
        g = np.negative(g)
        if wd is not None:
            np.multiply(p, wd, out=tmp)
            g += tmp
    elif wd is not None:
        g2 = np.multiply(p, wd)
        g2 += g  # p * wd + g == g + p * wd (addition is commutative in IEEE arithmetic)
        g = g2
    return g


_FLAT_CHUNK = 1 << 16  # elements per flat pass: the temporaries (a gradient run and one scratch) stay small


def _run(arrays) -> np.ndarray | None:
    """One flat NumPy view over ``arrays`` when they are C-contiguous Arrays of one float32/float64 dtype lying
    one after the other in one storage (an optimizer's state made as one buffer: nn.optim.Adam), else None."""
    a0 = arrays[0]
    st, dt = a0._storage, a0._dtype
    start = off = a0._offset
    for a in arrays:
        if a._storage is not st or a._offset != off or a._dtype is not dt \
                or a._strides != _contiguous_strides(a._shape):
            return None
        off += _prod(a._shape)
    npd = dt.numpy
    if npd is not _F32 and npd is not _F64:
        return None
    return np.ndarray((off - start,), npd, st.data, start * dt.itemsize)


def _moments_and_step(g, m, v, x, tmp, s_w1, s_beta2, s_w2, s_bc2, s_eps, s_step) -> None:
    """Adam's moment updates in place (``m``, ``v`` and, with AMSGrad, the running max ``x``) and the step
    ``step_size * m / (sqrt(v or x) / bc2 + eps)`` into ``tmp``: shared by the flat and the per-tensor paths."""
    np.subtract(g, m, out=tmp)  # lerp(m, g, w1) = m + w1 * (g - m)
    tmp *= s_w1
    m += tmp
    v *= s_beta2
    np.multiply(g, g, out=tmp)
    tmp *= s_w2
    v += tmp
    if x is not None:
        np.maximum(x, v, out=x)
        np.sqrt(x, out=tmp)
    else:
        np.sqrt(v, out=tmp)
    tmp /= s_bc2
    tmp += s_eps
    np.divide(m, tmp, out=tmp)
    tmp *= s_step


def _adam_flat(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, values, maximize) -> bool:
    """``adam_step`` over the list with one pass of each ufunc per piece of up to _FLAT_CHUNK elements (whole
    parameters together, or a slice of a larger one: ``_pieces``; the temporaries stay that small) when the states
    are runs of one buffer each (``_run``) and the params and grads have their dtype: a piece's gradients gathered
    into one buffer, its state updated flat, then each parameter's ``p -= update``. The same ufuncs on the same
    values in the same order per element as the loop of ``adam_step`` (elementwise IEEE arithmetic), so the
    results are bit-identical; ~13 + 2 per parameter NumPy calls a piece instead of ~15 per parameter. False
    (nothing done) when it does not apply."""
    m = _run(exp_avgs)
    if m is None:
        return False
    v = _run(exp_avg_sqs)
    x = None if max_exp_avg_sqs is None else _run(max_exp_avg_sqs)
    if v is None or (max_exp_avg_sqs is not None and x is None):
        return False
    states = {id(exp_avgs[0]._storage), id(exp_avg_sqs[0]._storage)}
    if x is not None:
        states.add(id(max_exp_avg_sqs[0]._storage))
    cd = m.dtype
    if len(states) != (2 if x is None else 3) or v.dtype != cd or (x is not None and x.dtype != cd):
        return False
    for pa, ga in zip(params, grads):  # the params and grads: the state's dtype, memory of their own
        if pa._dtype.numpy is not cd or ga._dtype.numpy is not cd or id(pa._storage) in states \
                or id(ga._storage) in states:
            return False
    if values[7] is not None:  # AdamW's p *= decay comes first in the loop, last here: no gradient in a param
        pst = {id(pa._storage) for pa in params}
        if any(id(ga._storage) in pst for ga in grads):
            return False
    run = m, v, x, _scalars({}, cd, values), maximize
    for piece in _pieces([npv(pa) for pa in params], grads):
        _adam_piece(piece, run)
    return True


def _pieces(ps: list, grads: list) -> list:
    """The parameters cut into pieces of up to _FLAT_CHUNK elements, in order, as (params, flat gradients,
    elements, offset in the state): consecutive whole parameters that fit together, a larger C-contiguous
    parameter cut into flat slices of _FLAT_CHUNK (each slice's passes then run in cache: the Adam step of the
    784-1024-1024-10 MLP's 1.86M parameters 6.7 -> 3.3-3.6 ms on one core; splitting the pieces over two threads
    gained nothing more, their many short ufunc calls wait on each other for the GIL), a larger other one
    whole."""
    out, cur_p, cur_g, cur_k, off = [], [], [], 0, 0
    for p, ga in zip(ps, grads):
        g, k = npv(ga), p.size
        if cur_p and cur_k + k > _FLAT_CHUNK:
            out.append((cur_p, cur_g, cur_k, off))
            off += cur_k
            cur_p, cur_g, cur_k = [], [], 0
        if k > _FLAT_CHUNK and p.flags.c_contiguous:
            pf, gf = p.reshape(-1), g.reshape(-1)  # (views of the parameter; of the gradient when contiguous)
            for a in range(0, k, _FLAT_CHUNK):
                b = min(a + _FLAT_CHUNK, k)
                out.append(([pf[a:b]], [gf[a:b]], b - a, off + a))
            off += k
            continue
        cur_p.append(p)
        cur_g.append(g.reshape(-1))  # a view of the gradient when it is contiguous: never written
        cur_k += k
    if cur_p:
        out.append((cur_p, cur_g, cur_k, off))
    return out


def _adam_piece(piece, run) -> None:
    """``_adam_flat``'s update of one of its ``_pieces``, whose state is the run at its offset in the flat ``m``,
    ``v`` (``x``)."""
    ps, gs, k, off = piece
    m, v, x, sc, maximize = run
    m, v = m[off:off + k], v[off:off + k]
    if x is not None:
        x = x[off:off + k]
    s_w1, s_beta2, s_w2, s_bc2, s_eps, s_step, s_wd, s_decay = sc
    if len(gs) == 1:
        g = gs[0]
        own = False
    else:
        g = np.concatenate(gs)
        own = True
    if maximize:
        g = np.negative(g, out=g) if own else np.negative(g)
        own = True
    if s_wd is not None:  # the coupled decay: p * wd + g (after maximize: -g + p * wd), as _grad adds it
        pw = np.concatenate([p.reshape(-1) for p in ps]) if len(ps) > 1 else ps[0].reshape(-1).copy()
        pw *= s_wd
        if own:
            g += pw
        else:
            pw += g  # p * wd + g: IEEE addition is commutative
            g = pw
        pw = None
    tmp = np.empty(k, m.dtype)
    _moments_and_step(g, m, v, x, tmp, s_w1, s_beta2, s_w2, s_bc2, s_eps, s_step)
    o = 0
    for p in ps:
        n = p.size
        if s_decay is not None:
            p *= s_decay
        p -= tmp[o:o + n].reshape(p.shape)
        o += n


@register("adam_step", "numpy")
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, w1, beta2, w2, eps, weight_decay, decay,
              step_size, bc2_sqrt, maximize) -> None:
    values = (w1, beta2, w2, bc2_sqrt, eps, step_size, weight_decay if weight_decay != 0 else None,
              decay if decay != 1.0 else None)
    if (len(params) > 1 or params and _prod(params[0]._shape) > _FLAT_CHUNK) \
            and _adam_flat(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, values, maximize):
        return  # (one parameter: flat when it is cut into pieces)
    consts = {}  # compute dtype -> values as 0-d arrays
    for i, pa in enumerate(params):
        p, g, m, v = npv(pa), npv(grads[i]), npv(exp_avgs[i]), npv(exp_avg_sqs[i])
        x = npv(max_exp_avg_sqs[i]) if max_exp_avg_sqs is not None else None
        low = _compute_dtype(p)  # the lists share each parameter's dtype (checked by tk.ops.adam_step)
        if low is not None:
            stored = (x, p, m, v)
            p, g, m, v = p.astype(low), g.astype(low), m.astype(low), v.astype(low)
            if x is not None:
                x = x.astype(low)
        s_w1, s_beta2, s_w2, s_bc2, s_eps, s_step, s_wd, s_decay = _scalars(consts, p.dtype, values)
        tmp = np.empty_like(p)
        if maximize or s_wd is not None:
            g = _grad(g, p, s_wd, maximize, tmp)
        if s_decay is not None:
            p *= s_decay
        _moments_and_step(g, m, v, x, tmp, s_w1, s_beta2, s_w2, s_bc2, s_eps, s_step)
        p -= tmp
        if low is not None:
            for val, dst in zip((x, p, m, v), stored):
                if dst is not None:
                    np.copyto(dst, val, casting="unsafe")


@register("adam_step_capturable", "numpy")
def adam_step_capturable(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, w1, beta1, beta2, w2, eps,
                         weight_decay, decay, lr, maximize) -> None:
    """Each parameter's step count incremented in place, then ``adam_step`` with its bias corrections, computed
    from the count as tk.ops.adam_step computes them from a Python step."""
    for i, pa in enumerate(params):
        k = npv(steps[i])
        k += 1
        step = float(k)
        adam_step([pa], [grads[i]], [exp_avgs[i]], [exp_avg_sqs[i]],
                  None if max_exp_avg_sqs is None else [max_exp_avg_sqs[i]], w1, beta2, w2, eps, weight_decay, decay,
                  lr / (1 - beta1**step), math.sqrt(1 - beta2**step), maximize)


@register("sgd_step", "numpy")
def sgd_step(params, grads, momentum_buffers, lr, momentum, damp_w, weight_decay, nesterov, maximize,
             first_step) -> None:
    values = (lr, momentum, damp_w if damp_w != 1.0 else None, weight_decay if weight_decay != 0 else None)
    consts = {}  # compute dtype -> values as 0-d arrays
    for i, pa in enumerate(params):
        p, g = npv(pa), npv(grads[i])
        b = npv(momentum_buffers[i]) if momentum_buffers is not None else None
        low = _compute_dtype(p)
        if low is not None:
            stored = (p, b)
            p, g = p.astype(low), g.astype(low)
            if b is not None:
                b = b.astype(low)
        s_lr, s_mom, s_damp, s_wd = _scalars(consts, p.dtype, values)
        tmp = np.empty_like(p)
        if maximize or s_wd is not None:
            g = _grad(g, p, s_wd, maximize, tmp)
        if b is not None:
            if first_step:
                np.copyto(b, g)
            else:
                b *= s_mom
                if s_damp is not None:
                    np.multiply(g, s_damp, out=tmp)
                    b += tmp
                else:
                    b += g
            if low is not None:
                np.copyto(stored[1], b, casting="unsafe")
            if nesterov:
                np.multiply(b, s_mom, out=tmp)
                g = g + tmp
            else:
                g = b
        np.multiply(g, s_lr, out=tmp)
        p -= tmp
        if low is not None:
            np.copyto(stored[0], p, casting="unsafe")
