"""Reductions with PyTorch names and arguments (``dim``, ``keepdim``, ``dtype``)."""

from __future__ import annotations

import tkernels as tk

from ._base import Node, Tensor, needs_grad, wrap

__all__ = ["sum", "mean", "unreduce", "norm_dims"]


def norm_dims(dim, ndim):
    """PyTorch's ``dim`` argument as a sorted tuple of non-negative axes (None: all)."""
    if dim is None:
        return None
    if isinstance(dim, int):
        dims = (dim,)
    else:
        dims = tuple(dim)
        if not dims:
            return None
    n = max(ndim, 1)
    out = []
    for d in dims:
        d = int(d)
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        out.append(d % n)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(out))


def unreduce(g: Tensor, shape, dims, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back over ``shape`` (differentiable)."""
    if not keepdim and shape:
        dims = range(len(shape)) if dims is None else dims
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return g.expand(tuple(shape))


class SumBackward0(Node):
    def __init__(self, x, dims, keepdim):
        super().__init__((x,))
        self.shape = x._data.shape
        self.dims = dims
        self.keepdim = keepdim

    def backward(self, g):
        return (unreduce(g, self.shape, self.dims, self.keepdim),)


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A001
    a = input._data
    dims = norm_dims(dim, a.ndim)
    if dtype is None and a.dtype.kind in "biu":
        dtype = tk.int64
    if a.ndim == 0:
        r = tk.astype(a, dtype) if dtype is not None else tk.copy(a)
    else:
        r = tk.sum(a, axis=dims, keepdims=keepdim, dtype=dtype)
    if r.dtype.kind == "f" and needs_grad(input):
        return SumBackward0(input, dims, keepdim).output(r)
    return wrap(r)


class MeanBackward0(SumBackward0):
    def backward(self, g):
        n = 1
        for i, s in enumerate(self.shape):
            if self.dims is None or i in self.dims:
                n *= s
        return (unreduce(g / max(n, 1) if n else g * float("nan"), self.shape, self.dims, self.keepdim),)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    a = input._data
    if dtype is not None:
        a = tk.astype(a, dtype)
        input = input.to(dtype)
    if a.dtype.kind != "f":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {a.dtype}. Hint: call .float() first or pass dtype=")
    dims = norm_dims(dim, a.ndim)
    r = tk.copy(a) if a.ndim == 0 else tk.mean(a, axis=dims, keepdims=keepdim)
    if needs_grad(input):
        return MeanBackward0(input, dims, keepdim).output(r)
    return wrap(r)
