"""Sparse COO gradients in the optimizers (``nn.Embedding(sparse=True)``), PyTorch's rules: ``SparseAdam`` takes
only sparse gradients, ``SGD``, ``Adagrad`` and ``LBFGS`` take both, every other optimizer refuses them with
PyTorch's message. An update touches only the rows a sparse gradient holds."""

from __future__ import annotations

__all__ = ["is_sparse", "rows", "check_no_sparse"]


def is_sparse(g) -> bool:
    return g is not None and g.__class__.is_sparse is True


def rows(p, grad):
    """``(flat, idx, vals)`` for a sparse gradient of ``p``: ``p`` viewed as (rows of its sparse dims, *dense dims),
    the coalesced gradient's row numbers in that view and its values (same dtype as ``p``)."""
    if tuple(grad.shape) != tuple(p.shape):
        raise RuntimeError(f"sparse gradient of shape {list(grad.shape)} for a parameter of shape {list(p.shape)}")
    c = grad.coalesce()
    sd = c.sparse_dim()
    flat = p.view(-1, *p.shape[sd:]) if sd else p.unsqueeze(0)
    vals = c._v if c._v.dtype == p.dtype else c._v.to(p.dtype)
    return flat, c._linear(), vals


def check_no_sparse(opt) -> None:
    """Raise PyTorch's error when an optimizer that cannot take sparse gradients finds one."""
    for g in opt.param_groups:
        for p in g["params"]:
            gr = p.grad
            if gr is not None and gr.__class__.is_sparse is True:  # is_sparse(gr), inlined (every step, every param)
                raise RuntimeError(opt._sparse_message)
