"""Parameters as one flat vector and back."""

from __future__ import annotations

import autograd as ag

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated (differentiable)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    dev = params[0].device
    for p in params:
        if p.device != dev:
            raise TypeError(f"Found two parameters on different devices, this is currently not supported "
                            f"({dev} and {p.device})")
    return ag.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of ``vec`` into the parameters (in place, not recorded)."""
    if not isinstance(vec, ag.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: vec has shape {list(vec.shape)} but the parameters hold {total} "
                           f"elements")
    offset = 0
    with ag.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].view_as(p))
            offset += n
