"""Fused neural-network ops with PyTorch's functional signatures (what ``nn.functional`` calls): softmax,
log_softmax, the norms, cross_entropy/nll_loss, embedding, dropout and scaled_dot_product_attention
(convolutions, pooling and resizing are in ``conv_ops``).

The forward is one fused ``tkernels.ops`` entry. A plain backward (grad mode off) calls its fused
``*_backward`` entry. Under ``create_graph=True`` the gradient is built from differentiable ops instead: a
closed form where it is short (softmax), the op's adjoint as a node of its own where the backward is linear
(dropout), and otherwise ``composite_grad``: the forward recomputed as a composite of differentiable ops and
differentiated with ``autograd.grad(..., create_graph=True)``.
"""

from __future__ import annotations

import math

import numpy as np

import tkernels as tk
from tkernels import dtypes as _dt

from .. import factory
from ..grad_mode import STATE
from ._base import Node, needs_grad, wrap
from .elementwise import rsqrt, where
from .linalg import matmul
from .views import index_put

__all__ = ["composite_grad", "softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm", "batch_norm",
           "cross_entropy", "nll_loss", "embedding", "dropout", "scaled_dot_product_attention"]
METHODS = ["softmax", "log_softmax"]


def composite_grad(fn, inputs, needs, grads):
    """Gradients of ``fn(*inputs)`` (a composite of differentiable ops) for output gradients ``grads``, as a
    graph when grad mode is on (``create_graph=True``): what a fused op's backward returns when its gradient must
    be differentiable.
    One entry per input, None where ``needs`` is False (or the input is unused)."""
    from ..engine import grad
    from ..grad_mode import enable_grad

    targets = [t for t, n in zip(inputs, needs) if n]
    if not targets:
        return (None,) * len(inputs)
    create = STATE.grad_enabled  # False in a plain backward that cannot use a fused entry
    with enable_grad():
        outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    res = iter(grad(list(outs), targets, list(grads), create_graph=create, allow_unused=True))
    return tuple(next(res) if n else None for n in needs)


def _arr(t):
    return None if t is None else t._data


def _opt(a):
    return None if a is None else wrap(a)


# ------------------------------------------------------------------------------------------- softmax
def _softmax_dim(dim, ndim, op):
    if dim is None:  # PyTorch's legacy implicit dim
        return 0 if ndim in (0, 1, 3) else 1
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                         f"{dim})")
    return dim % n


class SoftmaxBackward0(Node):
    def __init__(self, x, dim):
        super().__init__((x,))
        self.dim = dim
        self.in_dtype = x._data.dtype

    def backward(self, g):
        (y,) = self.saved_tensors
        if not STATE.grad_enabled:
            return (wrap(tk.ops.softmax_backward(g._data, y._data, self.dim, input_dtype=self.in_dtype)),)
        return (y * (g - (g * y).sum(self.dim, keepdim=True)),)


class LogSoftmaxBackward0(SoftmaxBackward0):
    def backward(self, g):
        (y,) = self.saved_tensors
        if not STATE.grad_enabled:
            return (wrap(tk.ops.log_softmax_backward(g._data, y._data, self.dim, input_dtype=self.in_dtype)),)
        return (g - y.exp() * g.sum(self.dim, keepdim=True),)


def _softmax(op, tk_fn, cls, input, dim, dtype):
    d = _softmax_dim(dim, input._data.ndim, op)
    r = tk_fn(input._data, d, dtype=dtype)
    if not needs_grad(input):
        return wrap(r)
    node = cls(input, d)
    out = node.output(r)
    node.save(outputs=(out,))
    return out


def softmax(input, dim=None, dtype=None):
    """``exp(x) / exp(x).sum(dim)``, computed stably; ``dtype`` converts the input first."""
    return _softmax("softmax", tk.ops.softmax, SoftmaxBackward0, input, dim, dtype)


def log_softmax(input, dim=None, dtype=None):
    """``x - logsumexp(x, dim)``, computed stably; ``dtype`` converts the input first."""
    return _softmax("log_softmax", tk.ops.log_softmax, LogSoftmaxBackward0, input, dim, dtype)


# --------------------------------------------------------------------------------------------- norms
def _norm_shape(normalized_shape):
    return (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in
                                                                                    normalized_shape)


def _normalize(x, dims, eps, center=True):
    """``(x - mean) * rsqrt(var + eps)`` over ``dims`` (biased variance), or the RMS version (differentiable)."""
    if center:
        x = x - x.mean(dims, keepdim=True)
    return x * rsqrt((x * x).mean(dims, keepdim=True) + eps)


class NativeLayerNormBackward0(Node):
    def __init__(self, x, w, b, ns, eps):
        super().__init__((x, w, b))
        self.ns, self.eps = ns, eps

    def backward(self, g):
        x, w, mean, rstd = self.saved_tensors
        nx, nw, nb = self.needs_input_grad
        if not STATE.grad_enabled:
            dx, dw, db = tk.ops.layer_norm_backward(g._data, x._data, mean._data, rstd._data, _arr(w), self.ns,
                                                    needs=(nx, nw, nb))
            return _opt(dx), _opt(dw), _opt(db)
        dims = tuple(range(x.ndim - len(self.ns), x.ndim))

        def f(x, w):
            y = _normalize(x, dims, self.eps)
            return y if w is None else y * w
        gx, gw = composite_grad(f, (x, w), (nx, nw), (g,))
        return gx, gw, (g if nb else None)  # the engine sums the bias gradient over the leading dims


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    ns = _norm_shape(normalized_shape)
    if not needs_grad(input, weight, bias):
        return wrap(tk.ops.layer_norm(input._data, ns, _arr(weight), _arr(bias), eps))
    y, mean, rstd = tk.ops.layer_norm(input._data, ns, _arr(weight), _arr(bias), eps, return_stats=True)
    node = NativeLayerNormBackward0(input, weight, bias, ns, eps)
    node.save(input, weight, wrap(mean), wrap(rstd))
    return node.output(y)


class RmsNormBackward0(Node):
    def __init__(self, x, w, ns, eps):
        super().__init__((x, w))
        self.ns, self.eps = ns, eps

    def name(self):
        return "FusedRmsNormBackward0"

    def backward(self, g):
        x, w, rstd = self.saved_tensors
        nx, nw = self.needs_input_grad
        if not STATE.grad_enabled:
            dx, dw = tk.ops.rms_norm_backward(g._data, x._data, rstd._data, _arr(w), self.ns, needs=(nx, nw))
            return _opt(dx), _opt(dw)
        dims = tuple(range(x.ndim - len(self.ns), x.ndim))

        def f(x, w):
            y = _normalize(x, dims, self.eps, center=False)
            return y if w is None else y * w
        return composite_grad(f, (x, w), (nx, nw), (g,))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x * rsqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims; ``eps=None`` is the
    machine epsilon of the compute dtype (float32 for halves), as ``torch.rms_norm``."""
    ns = _norm_shape(normalized_shape)
    if not needs_grad(input, weight):
        return wrap(tk.ops.rms_norm(input._data, ns, _arr(weight), eps))
    y, rstd = tk.ops.rms_norm(input._data, ns, _arr(weight), eps, return_stats=True)
    d = input._data.dtype
    e = _dt.finfo(_dt.float32 if d.itemsize == 2 else d).eps if eps is None else float(eps)
    node = RmsNormBackward0(input, weight, ns, e)
    node.save(input, weight, wrap(rstd))
    return node.output(y)


def _per_channel(p, ndim):
    """A (C,) parameter shaped to broadcast over (N, C, *)."""
    return p.reshape((1, -1) + (1,) * (ndim - 2))


def _channel_sum(g):
    return g.sum([i for i in range(g.ndim) if i != 1])


class NativeGroupNormBackward0(Node):
    def __init__(self, x, w, b, groups, eps):
        super().__init__((x, w, b))
        self.groups, self.eps = groups, eps

    def backward(self, g):
        x, w, mean, rstd = self.saved_tensors
        nx, nw, nb = self.needs_input_grad
        if not STATE.grad_enabled:
            dx, dw, db = tk.ops.group_norm_backward(g._data, x._data, mean._data, rstd._data, _arr(w),
                                                    self.groups, needs=(nx, nw, nb))
            return _opt(dx), _opt(dw), _opt(db)

        def f(x, w):
            n = x.shape[0]
            y = _normalize(x.reshape(n, self.groups, -1), -1, self.eps).reshape(tuple(x.shape))
            return y if w is None else y * _per_channel(w, x.ndim)
        gx, gw = composite_grad(f, (x, w), (nx, nw), (g,))
        return gx, gw, (_channel_sum(g) if nb else None)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each of ``num_groups`` channel groups of every sample of (N, C, *) ``input``, then scale and
    shift per channel."""
    if not needs_grad(input, weight, bias):
        return wrap(tk.ops.group_norm(input._data, num_groups, _arr(weight), _arr(bias), eps))
    y, mean, rstd = tk.ops.group_norm(input._data, num_groups, _arr(weight), _arr(bias), eps, return_stats=True)
    node = NativeGroupNormBackward0(input, weight, bias, int(num_groups), eps)
    node.save(input, weight, wrap(mean), wrap(rstd))
    return node.output(y)


class NativeBatchNormBackward0(Node):
    def __init__(self, x, w, b, training, eps):
        super().__init__((x, w, b))
        self.training, self.eps = training, eps

    def backward(self, g):
        x, w, s1, s2 = self.saved_tensors  # training: save_mean, save_invstd; eval: running_mean, running_var
        nx, nw, nb = self.needs_input_grad
        tr = self.training
        if not STATE.grad_enabled:
            dx, dw, db = tk.ops.batch_norm_backward(
                g._data, x._data, _arr(w), None if tr else s1._data, None if tr else s2._data,
                s1._data if tr else None, s2._data if tr else None, tr, self.eps, needs=(nx, nw, nb))
            return _opt(dx), _opt(dw), _opt(db)

        def f(x, w):
            if tr:
                y = _normalize(x, [i for i in range(x.ndim) if i != 1], self.eps)
            else:
                y = (x - _per_channel(s1, x.ndim)) * _per_channel(rsqrt(s2 + self.eps), x.ndim)
            return y if w is None else y * _per_channel(w, x.ndim)
        gx, gw = composite_grad(f, (x, w), (nx, nw), (g,))
        return gx, gw, (_channel_sum(g) if nb else None)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Per-channel normalization of (N, C, *) ``input`` with batch statistics (``training``; the running
    buffers, when given, are updated in place with ``momentum`` and the unbiased variance) or the running
    ones (eval)."""
    rm, rv = _arr(running_mean), _arr(running_var)
    track = needs_grad(input, weight, bias)
    res = tk.ops.batch_norm(input._data, rm, rv, _arr(weight), _arr(bias), training, momentum, eps,
                            return_stats=track and bool(training))
    if training:
        for buf in (running_mean, running_var):
            if buf is not None:
                buf._version.v += 1
    if not track:
        return wrap(res)
    node = NativeBatchNormBackward0(input, weight, bias, bool(training), eps)
    if training:
        y, sm, si = res
        node.save(input, weight, wrap(sm), wrap(si))
    else:
        y = res
        node.save(input, weight, running_mean, running_var)
    return node.output(y)


# -------------------------------------------------------------------------------------------- losses
def _class_axis(ndim):
    return 0 if ndim == 1 else 1


def _nll_composite(logp, target, weight, ignore_index, reduction, label_smoothing):
    """nll_loss (with cross_entropy's label smoothing) of log-probabilities and class indices, from
    differentiable ops."""
    ax = _class_axis(logp.ndim)
    c = logp.shape[ax]
    lshape = tuple(target.shape)
    lp = logp.movedim(ax, -1).reshape(-1, c)
    t = tk.reshape(target._data, (-1,))
    dev = t.device
    valid = tk.not_equal(t, ignore_index)
    tc = tk.where(valid, t, 0)
    wt = tk.astype(valid, logp.dtype)
    if weight is not None:
        wt = tk.multiply(wt, weight._data[tc])
    wt_t = wrap(wt)
    loss = -(lp[(tk.arange(lp.shape[0], device=dev), tc)] * wt_t)
    if label_smoothing:
        smooth = -((lp * weight).sum(-1) if weight is not None else lp.sum(-1)) * wrap(tk.astype(valid, logp.dtype))
        loss = loss * (1.0 - label_smoothing) + smooth * (label_smoothing / c)
    if reduction == "none":
        return loss.reshape(lshape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wrap(tk.sum(wt))


def _prob_ce_composite(x, target, weight, reduction, label_smoothing):
    ax = _class_axis(x.ndim)
    c = x.shape[ax]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / c
    t = log_softmax(x, ax) * target
    if weight is not None:
        t = t * weight.reshape(tuple(c if i == ax else 1 for i in range(x.ndim)))
    loss = -t.sum(ax)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / max(x.numel() // c, 1) if x.numel() else loss.sum() * float("nan")


class CrossEntropyLossBackward0(Node):
    def __init__(self, x, target, args):
        super().__init__((x, target))
        self.args = args  # weight, ignore_index, reduction, label_smoothing

    def backward(self, g):
        x, target, lse = self.saved_tensors
        weight, ignore_index, reduction, ls = self.args
        nx, nt = self.needs_input_grad
        if not STATE.grad_enabled and not nt:
            return wrap(tk.ops.cross_entropy_backward(g._data, x._data, target._data, _arr(weight),
                                                      ignore_index=ignore_index, reduction=reduction,
                                                      label_smoothing=ls, lse=lse._data)), None
        if target.dtype.kind == "f":
            return composite_grad(lambda x, t: _prob_ce_composite(x, t, weight, reduction, ls), (x, target),
                                  (nx, nt), (g,))
        return composite_grad(lambda x: _nll_composite(log_softmax(x, _class_axis(x.ndim)), target, weight,
                                                       ignore_index, reduction, ls), (x,), (nx,), (g,)) + (None,)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross-entropy of ``softmax(input, 1)`` (classes on dim 1, or 0 for a (C,) input) and ``target``: class
    indices (shape of ``input`` without dim 1) or class probabilities (shape of ``input``)."""
    w = _arr(weight)
    if not needs_grad(input, target):
        return wrap(tk.ops.cross_entropy(input._data, target._data, w, ignore_index=ignore_index,
                                         reduction=reduction, label_smoothing=label_smoothing))
    loss, lse = tk.ops.cross_entropy(input._data, target._data, w, ignore_index=ignore_index, reduction=reduction,
                                     label_smoothing=label_smoothing, return_lse=True)
    node = CrossEntropyLossBackward0(input, target, (weight, int(ignore_index), reduction, float(label_smoothing)))
    node.save(input, target, wrap(lse))
    return node.output(loss)


class NllLossBackward0(Node):
    def __init__(self, x, args):
        super().__init__((x,))
        self.args = args  # weight, ignore_index, reduction

    def backward(self, g):
        x, target = self.saved_tensors
        weight, ignore_index, reduction = self.args
        if not STATE.grad_enabled:
            return (wrap(tk.ops.nll_loss_backward(g._data, x._data, target._data, _arr(weight),
                                                  ignore_index=ignore_index, reduction=reduction)),)
        return composite_grad(lambda x: _nll_composite(x, target, weight, ignore_index, reduction, 0.0), (x,),
                              (True,), (g,))


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of the target classes: ``-weight[t] * input[n, t, ...]``, reduced (the weighted
    mean divides by the weights of the non-ignored targets)."""
    r = tk.ops.nll_loss(input._data, target._data, _arr(weight), ignore_index=ignore_index, reduction=reduction)
    if not needs_grad(input):
        return wrap(r)
    node = NllLossBackward0(input, (weight, int(ignore_index), reduction))
    node.save(input, target)
    return node.output(r)


# ------------------------------------------------------------------------------------ embedding, dropout
class EmbeddingBackward0(Node):
    def __init__(self, w, indices, padding_idx, scale_grad_by_freq, sparse=False):
        super().__init__((w,))  # indices: not differentiable, saved (version-checked) for backward
        self.n = w.shape[0]
        self.padding_idx, self.freq, self.sparse = padding_idx, scale_grad_by_freq, sparse
        self.save(indices)

    def _sparse_backward(self, g):
        """PyTorch's sparse gradient: a COO tensor (n, D) with one entry per looked-up index (uncoalesced;
        ``AccumulateGrad`` coalesces it), the rows at ``padding_idx`` left out; differentiable in ``g``."""
        if self.freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        from ..sparse.coo import SparseCooTensor

        flat = self.saved_tensors[0].reshape(1, -1)
        rows = g.reshape(-1, g.shape[-1])
        if self.padding_idx is not None:
            keep = flat[0] != self.padding_idx % self.n
            flat, rows = flat[:, keep], rows[keep]
        return (SparseCooTensor(flat.long(), rows, (self.n, g.shape[-1])),)

    def backward(self, g):
        if self.sparse:
            return self._sparse_backward(g)
        idx = self.saved_tensors[0]._data
        if not STATE.grad_enabled:
            return (wrap(tk.ops.embedding_backward(g._data, idx, self.n, self.padding_idx, self.freq)),)
        # linear in g: scatter-add of g's rows, as index_put (differentiable in g)
        flat = tk.reshape(idx, (-1,))
        rows = g.reshape(-1, g.shape[-1])
        scale = None
        if self.freq:
            counts = tk.astype(tk.reshape(tk.ops.embedding_backward(tk.ones(idx.shape + (1,), dtype=g.dtype,
                                                                            device=g.device),
                                                                    idx, self.n), (-1,)), g.dtype)
            scale = tk.divide(1.0, counts[flat])
        if self.padding_idx is not None:
            keep = tk.astype(tk.not_equal(flat, self.padding_idx % self.n), g.dtype)
            scale = keep if scale is None else tk.multiply(scale, keep)
        if scale is not None:
            rows = rows * wrap(tk.reshape(scale, (-1, 1)))
        z = factory.zeros((self.n, g.shape[-1]), dtype=g.dtype, device=g.device)
        return (index_put(z, (flat,), rows, accumulate=True),)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, D) picked by the integer ``input``: shape ``input.shape + (D,)``.
    ``max_norm`` renormalizes the referenced rows of ``weight`` in place first, as PyTorch."""
    r = tk.ops.embedding(weight._data, input._data, padding_idx=padding_idx, max_norm=max_norm,
                         norm_type=norm_type)
    if max_norm is not None:
        weight._version.v += 1
    if not needs_grad(weight):
        return wrap(r)
    node = EmbeddingBackward0(weight, input, padding_idx, bool(scale_grad_by_freq), bool(sparse))
    return node.output(r)


def _dropout_mask_apply(g, mask, p):
    """``g * mask / (1 - p)``: dropout's backward, linear in ``g`` and self-adjoint (differentiable)."""
    r = tk.ops.dropout_backward(g._data, mask, p)
    if not needs_grad(g):
        return wrap(r)
    node = NativeDropoutBackwardBackward0((g,))
    node.mask, node.p = mask, p
    return node.output(r)


class NativeDropoutBackward0(Node):
    def backward(self, g):
        return (_dropout_mask_apply(g, self.mask, self.p),)


class NativeDropoutBackwardBackward0(NativeDropoutBackward0):
    pass


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``; the input itself when
    not ``training`` or ``p == 0``. Reproducible under ``autograd.manual_seed``."""
    a = input._data
    if a.dtype.kind == "c":  # complex (PyTorch's): the real and imaginary parts share one mask
        if not training or p == 0:
            tk.ops.dropout(tk.real(a), p, training=False)  # validates p
            return input
        keep = tk.ops.dropout(tk.ones(a.shape, dtype=tk.dtypes.to_real(a.dtype), device=a.device), p,
                              training=True)  # 0 or 1 / (1 - p)
        out = input * wrap(keep)
        return input.copy_(out) if inplace else out
    if not training or p == 0:
        tk.ops.dropout(input._data, p, training=False)  # validates p
        return input
    if inplace:
        from ._base import inplace as _inplace

        return _inplace("dropout_", input, lambda old: dropout(old, p, training), needs_old=False)
    y, mask = tk.ops.dropout(input._data, p, training=True, return_mask=True)
    if not needs_grad(input):
        return wrap(y)
    node = NativeDropoutBackward0((input,))
    node.mask, node.p = mask, float(p)
    return node.output(y)


# ---------------------------------------------------------------------------------------------- attention
def _sdpa_composite(q, k, v, mask, is_causal, scale, enable_gqa):
    """softmax(q k^T * scale + mask) v from differentiable ops (PyTorch's math path; no dropout)."""
    L, E = q.shape[-2:]
    S = k.shape[-2]
    if enable_gqa and min(q.ndim, k.ndim) >= 3 and q.shape[-3] != k.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]

        def heads(t):
            s = tuple(t.shape)
            return t.unsqueeze(-3).expand(s[:-2] + (rep,) + s[-2:]).reshape(s[:-3] + (s[-3] * rep,) + s[-2:])
        k, v = heads(k), heads(v)
    sc = (1.0 / math.sqrt(E) if E else 1.0) if scale is None else float(scale)
    scores = matmul(q, k.mT) * sc
    allowed = None
    if is_causal:
        allowed = tk.asarray(np.tril(np.ones((L, S), dtype=bool)), device=q.device)
    elif mask is not None and mask.dtype.kind == "b":
        allowed = mask._data
    elif mask is not None:
        scores = scores + mask
    if allowed is not None:
        scores = where(wrap(allowed), scores, _dt.finfo(scores.dtype).min)
    p = softmax(scores, -1)
    if allowed is not None:  # fully masked rows give zeros (PyTorch's _safe_softmax)
        p = where(wrap(tk.any(allowed, axis=-1, keepdims=True)), p, 0.0)
    return matmul(p, v)


class ScaledDotProductAttentionBackward0(Node):
    def __init__(self, q, k, v, mask, args):
        super().__init__((q, k, v, mask))
        self.args = args  # dropout_p, is_causal, scale, enable_gqa, rng_state

    def backward(self, g):
        q, k, v, mask, lse, out = self.saved_tensors
        p, causal, scale, gqa, state = self.args
        nq, nk, nv, nm = self.needs_input_grad
        if not STATE.grad_enabled and not nm:
            return tuple(_opt(a) for a in tk.ops.scaled_dot_product_attention_backward(
                g._data, q._data, k._data, v._data, out._data, lse._data, _arr(mask), p, causal, scale,
                enable_gqa=gqa, rng_state=state, needs=(nq, nk, nv))) + (None,)
        if p > 0:
            raise RuntimeError("double backward not supported for scaled_dot_product_attention with dropout_p > 0 "
                               f"(dropout_p={p}); hint: use dropout_p=0.0 when differentiating twice (or a "
                               f"gradient of a mask)")
        return composite_grad(lambda q, k, v, m: _sdpa_composite(q, k, v, m, causal, scale, gqa), (q, k, v, mask),
                              (nq, nk, nv, nm), (g,))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + attn_mask) @ value`` (PyTorch's semantics: bool masks select, float
    masks add; ``is_causal``; dropout on the attention weights; grouped-query attention with ``enable_gqa``)."""
    qa, ka, va, ma = query._data, key._data, value._data, _arr(attn_mask)
    if not needs_grad(query, key, value, attn_mask):
        return wrap(tk.ops.scaled_dot_product_attention(qa, ka, va, ma, dropout_p, is_causal, scale,
                                                        enable_gqa=enable_gqa))
    out, lse, state = tk.ops.scaled_dot_product_attention(qa, ka, va, ma, dropout_p, is_causal, scale,
                                                          enable_gqa=enable_gqa, return_stats=True)
    node = ScaledDotProductAttentionBackward0(query, key, value, attn_mask,
                                              (float(dropout_p), bool(is_causal), scale, bool(enable_gqa), state))
    t = node.output(out)
    node.save(query, key, value, attn_mask, wrap(lse), outputs=(t,))
    return t

