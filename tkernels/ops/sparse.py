"""Embedding lookup and dropout, with their backward entries.

Entries::

    embedding(weight, indices, *, padding_idx=None, max_norm=None, norm_type=2.0) -> out
        weight: (num_embeddings, D), any dtype; indices: int32/int64 of any shape; out: indices.shape + (D,)
        with weight's dtype. An index outside [0, num_embeddings) raises IndexError (negative indices do not
        wrap, as in PyTorch). padding_idx (may be negative) only matters for the backward. With max_norm, the
        referenced rows of ``weight`` whose ``norm_type``-norm exceeds it are rescaled IN PLACE first
        (``torch.embedding_renorm_``), then gathered.
    embedding_backward(grad, indices, num_weights, padding_idx=None, scale_grad_by_freq=False) -> dweight
        grad: indices.shape + (D,); dweight: (num_weights, D) in grad's dtype, the scatter-add of grad's rows
        (each divided by its index's frequency in ``indices`` with scale_grad_by_freq); row padding_idx is 0.

    dropout(x, p=0.5, *, training=True, generator=None, return_mask=False) -> y | (y, mask)
        Zeroes each element with probability p and scales the others by 1 / (1 - p) (0 when p == 1). When
        not training, p == 0, or x is empty, returns ``x`` itself (and mask None), as PyTorch does. Samples
        come from ``generator`` (a tkernels.random.Generator; default: tkernels.random.default_generator).
    dropout_backward(grad, mask, p) -> dx
        dx = grad * mask / (1 - p); ``grad`` itself when mask is None.

``mask`` is opaque: whatever the device's backend needs to reproduce the forward's choice. On cpu it is the
bool Array of kept elements (x's shape). On cuda it is a ``PhiloxDropoutMask`` (tkernels.backends.triton.
ops_dropout): the Philox (seed, offset) the forward kernel drew from, with shape, device and p; no mask array is
ever stored, the backward kernel regenerates the same mask from it (``mask.keep()`` materializes it as a bool
Array when needed); a bool Array mask is accepted on cuda as well. Pass the mask, unchanged, to dropout_backward.
cuda and cpu draw different masks for one seed.

Backend contract (outputs allocated by the entry; ``padding_idx`` non-negative or None; the backend checks
indices against the number of rows and raises IndexError)::

    embedding(out, weight, indices)
    embedding_renorm_(weight, indices, max_norm, norm_type)         in place
    embedding_backward(dweight, grad, indices, padding_idx, scale_grad_by_freq)
    dropout(out, x, p, generator) -> mask                          0 < p <= 1
    dropout_backward(out, grad, mask, p)
"""

from __future__ import annotations

import operator

from .. import random as _random
from ..array import Array
from ..dispatch import lookup
from ..validation import OpTypeError, OpValueError, describe

__all__ = ["embedding", "embedding_backward", "dropout", "dropout_backward"]


def _indices(op, indices, x):
    if not isinstance(indices, Array):
        raise OpTypeError(f"{op}: indices must be an Array, got {describe(indices)}")
    if indices._dtype.name not in ("int32", "int64"):
        raise OpTypeError(f"{op}: indices must be int32 or int64, got {describe(indices)}; hint: convert with "
                          f".astype(int64)")
    if indices._device != x._device:
        raise RuntimeError(f"{op}: indices are on {indices.device} but {describe(x)} is on {x.device}")


def _padding(op, padding_idx, n):
    if padding_idx is None:
        return None
    try:
        p = operator.index(padding_idx)
    except TypeError:
        raise OpTypeError(f"{op}: padding_idx must be an integer or None, got {describe(padding_idx)}") from None
    if not -n <= p < n:
        raise OpValueError(f"{op}: padding_idx {p} must be within num_embeddings {n} (-{n} <= padding_idx < {n})")
    return p % n


def embedding(weight, indices, *, padding_idx=None, max_norm=None, norm_type=2.0) -> Array:
    """Rows of ``weight`` (num_embeddings, D) picked by ``indices``: shape ``indices.shape + (D,)``."""
    op = "embedding"
    if not isinstance(weight, Array):
        raise OpTypeError(f"{op}: weight must be an Array, got {describe(weight)}")
    if weight.ndim != 2:
        raise OpValueError(f"{op}: weight must be 2-D (num_embeddings, embedding_dim), got {describe(weight)}")
    _indices(op, indices, weight)
    _padding(op, padding_idx, weight._shape[0])
    dev = weight._device
    if max_norm is not None:
        if weight._dtype.kind != "f":
            raise OpTypeError(f"{op}: max_norm needs a floating weight, got {describe(weight)}")
        lookup("embedding_renorm_", dev)(weight, indices, float(max_norm), float(norm_type))
    out = lookup("empty", dev)(indices._shape + weight._shape[1:], weight._dtype, dev)
    lookup(op, dev)(out, weight, indices)
    return out


def embedding_backward(grad, indices, num_weights, padding_idx=None, scale_grad_by_freq=False) -> Array:
    """Gradient of ``embedding`` with respect to the weight: rows of ``grad`` summed per index."""
    op = "embedding_backward"
    if not isinstance(grad, Array) or grad._dtype.kind != "f":
        raise OpTypeError(f"{op}: grad must be a floating Array, got {describe(grad)}")
    _indices(op, indices, grad)
    try:
        n = operator.index(num_weights)
    except TypeError:
        raise OpTypeError(f"{op}: num_weights must be an integer, got {describe(num_weights)}") from None
    if n < 0:
        raise OpValueError(f"{op}: num_weights must be non-negative, got {n}")
    k = indices.ndim
    if grad.ndim != k + 1 or grad._shape[:k] != indices._shape:
        raise OpValueError(f"{op}: grad {describe(grad)} must have shape indices.shape + (embedding_dim,) with "
                           f"indices {describe(indices)}")
    pad = _padding(op, padding_idx, n)
    dev = grad._device
    out = lookup("empty", dev)((n, grad._shape[-1]), grad._dtype, dev)
    lookup(op, dev)(out, grad, indices, pad, bool(scale_grad_by_freq))
    return out


def _probability(op, p) -> float:
    try:
        q = float(p)
    except (TypeError, ValueError):
        raise OpTypeError(f"{op}: p must be a number, got {describe(p)}") from None
    if not 0.0 <= q <= 1.0:
        raise OpValueError(f"{op}: dropout probability p must be in [0, 1], got {p}")
    return q


def dropout(x, p=0.5, *, training=True, generator=None, return_mask=False):
    """Inverted dropout: zero elements with probability ``p``, scale the rest by ``1 / (1 - p)``."""
    op = "dropout"
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    if x._dtype.kind != "f":
        raise OpTypeError(f"{op}: expected a floating array, got {describe(x)}")
    p = _probability(op, p)
    if not training or p == 0.0 or x.size == 0:
        return (x, None) if return_mask else x
    if generator is None:
        generator = _random.default_generator
    elif not isinstance(generator, _random.Generator):
        raise OpTypeError(f"{op}: generator must be a tkernels.random.Generator, got {describe(generator)}")
    dev = x._device
    out = lookup("empty", dev)(x._shape, x._dtype, dev)
    mask = lookup(op, dev)(out, x, p, generator)
    return (out, mask) if return_mask else out


def dropout_backward(grad, mask, p) -> Array:
    """Gradient of ``dropout``: ``grad * mask / (1 - p)`` with the forward's ``mask`` (grad itself if None)."""
    op = "dropout_backward"
    if not isinstance(grad, Array) or grad._dtype.kind != "f":
        raise OpTypeError(f"{op}: grad must be a floating Array, got {describe(grad)}")
    p = _probability(op, p)
    if mask is None:
        return grad
    if isinstance(mask, Array):
        if mask._dtype.name != "bool" or mask._shape != grad._shape or mask._device != grad._device:
            raise OpValueError(f"{op}: mask {describe(mask)} must be the bool mask of grad's shape and device "
                               f"returned by dropout(..., return_mask=True); grad is {describe(grad)}")
    dev = grad._device
    out = lookup("empty", dev)(grad._shape, grad._dtype, dev)
    lookup(op, dev)(out, grad, mask, p)
    return out
