"""ForkingPickler reductions of Tensors: their storage travels as shared memory (tkernels/shared_memory.py)."""

from __future__ import annotations

from multiprocessing import reduction

from tkernels import shared_memory

from ..tensor import Tensor
from ..tensor import _rebuild_tensor as _rebuild_plain

__all__ = ["init_reductions", "register_tensor_type"]


def reduce_tensor(t):
    """A Tensor for another process: the same reduction as plain pickle, but non-leaves that need grad are refused
    (autograd graphs do not cross processes); the nested Storage is shared by its own reduction."""
    if t._requires_grad and t.grad_fn is not None:
        raise RuntimeError(f"multiprocessing: refusing to send a non-leaf tensor that requires grad (shape "
                           f"{list(t.shape)}, {t.dtype}, {t.device}, grad_fn={t.grad_fn.name()}): autograd does not "
                           f"cross process boundaries; hint: send t.detach() to share only the data")
    _, args = t.__reduce_ex__(4)
    return _rebuild_tensor, args


def _rebuild_tensor(cls, array, requires_grad, state):
    # importing this module in the receiver registers the reductions there too (it may send tensors back)
    return _rebuild_plain(cls, array, requires_grad, state)


def register_tensor_type(cls) -> None:
    """Check tensors of ``cls`` (a Tensor subclass) like Tensors when they are sent (dispatch is by exact type;
    an unregistered subclass still shares its storage, but skips the non-leaf check)."""
    reduction.ForkingPickler.register(cls, reduce_tensor)


def init_reductions() -> None:
    shared_memory.init_reductions()
    register_tensor_type(Tensor)


init_reductions()
