"""The gradient harness: each ``GradInfo`` row names a differentiable op and gives samples; tests run
``gradcheck`` in float64 on cpu (contiguous and non-contiguous leaves), ``gradgradcheck`` where the backward is
differentiable, and compare float32 gradients on interpreted cuda with cpu's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

import autograd as ag


@dataclasses.dataclass
class Const:
    """A tensor argument that does not require grad (indices, masks, targets...)."""

    value: np.ndarray


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class GradInfo:
    name: str
    op: Callable
    samples: Callable  # rng -> iterable of Sample; float ndarrays in args/kwargs become leaves requiring grad
    gradgrad: bool = True  # gradgradcheck too (the backward is itself differentiable)
    noncontig: bool = True
    cuda: bool = True  # compare float32 gradients on interpreted cuda
    atol: float = 1e-5
    rtol: float = 1e-3
    cuda_atol: float = 1e-4
    cuda_rtol: float = 1e-3
    eps: float = 1e-6


def _leaf(nd, layout, device, dtype):
    nd = np.asarray(nd)
    if layout == "noncontig" and nd.ndim >= 1 and nd.size > 1:
        big = np.zeros(nd.shape[:-1] + (2 * nd.shape[-1],), dtype=nd.dtype)
        big[..., ::2] = nd
        t = ag.from_numpy(big[..., ::2])
        assert not t.is_contiguous()
    else:
        t = ag.tensor(nd)
    t = t.to(device=device, dtype=dtype)
    return t.detach().requires_grad_(True)


def build(sample: Sample, layout="contiguous", device="cpu", dtype=ag.float64):
    """Tensors for a sample: float arrays become leaves that require grad."""
    def conv(a):
        if isinstance(a, Const):
            return ag.tensor(a.value, device=device)
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return _leaf(a, layout, device, dtype)
        if isinstance(a, np.ndarray):
            return ag.tensor(a, device=device)
        if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            return [conv(x) for x in a]
        return a
    return tuple(conv(a) for a in sample.args), {k: conv(v) for k, v in sample.kwargs.items()}


def leaves(args, kwargs):
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, ag.Tensor) and a.requires_grad:
            out.append(a)
        elif isinstance(a, list):
            out.extend(x for x in a if isinstance(x, ag.Tensor) and x.requires_grad)
    return out


def as_func(info, args, kwargs):
    """A function of the leaves only (what gradcheck perturbs)."""
    ls = leaves(args, kwargs)
    ids = {id(x): i for i, x in enumerate(ls)}

    def f(*vals):
        def sub(a):
            if isinstance(a, ag.Tensor) and id(a) in ids:
                return vals[ids[id(a)]]
            if isinstance(a, list):
                return [sub(x) for x in a]
            return a
        return info.op(*[sub(a) for a in args], **{k: sub(v) for k, v in kwargs.items()})
    return f, ls


def rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def pos(rng, *shape, low=0.2, high=2.0):
    return rng.uniform(low, high, size=shape)
