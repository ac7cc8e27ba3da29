"""The older hook-based ``nn.utils.weight_norm``/``remove_weight_norm`` and ``nn.utils.spectral_norm``/
``remove_spectral_norm``: the weight is recomputed by a forward pre-hook into a plain attribute, from the parameters
``<name>_g``/``<name>_v`` (weight norm) or ``<name>_orig`` and the buffers ``<name>_u``/``<name>_v`` (spectral
norm), PyTorch's names. New code should prefer ``nn.utils.parametrizations``."""

from __future__ import annotations

import warnings

import autograd as ag

from .. import functional as F
from ..parameter import Parameter
from .parametrizations import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _find(module, cls, name, what):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and hook.name == name:
            return k, hook
    raise ValueError(f"{what} of '{name}' not found in {module}")


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim=0):
    """Replace ``module.<name>`` by ``<name>_g * <name>_v / ||<name>_v||``, recomputed before each forward."""
    warnings.warn("nn.utils.weight_norm is deprecated in favor of nn.utils.parametrizations.weight_norm",
                  FutureWarning, stacklevel=2)
    dim = -1 if dim is None else dim
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            raise RuntimeError(f"weight_norm: cannot register two weight_norm hooks on the same parameter {name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter named '{name}'")
    fn = _WeightNormHook(name, dim)
    del module._parameters[name]
    with ag.no_grad():
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo ``weight_norm``: ``<name>`` becomes a parameter holding the current normalized weight."""
    k, fn = _find(module, _WeightNormHook, name, "weight_norm")
    with ag.no_grad():
        weight = fn.compute_weight(module).detach().clone()
    del module._forward_pre_hooks[k]
    module.__dict__.pop(name, None)
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    module.register_parameter(name, Parameter(weight))
    return module


class _SpectralNormHook:
    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with ag.no_grad():
                for _ in range(self.n_power_iterations):  # PyTorch's order here: v first, then u
                    v.copy_(F.normalize(ag.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ag.mv(mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        return weight / ag.dot(u, ag.mv(mat, v))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Replace ``module.<name>`` by ``<name>_orig / sigma`` (sigma by power iteration, one step per training
    forward), recomputed before each forward."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            raise RuntimeError(f"spectral_norm: cannot register two spectral_norm hooks on the same parameter {name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter named '{name}'")
    if n_power_iterations <= 0:
        raise ValueError(f"spectral_norm: expected n_power_iterations to be positive, got {n_power_iterations}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    dim = dim if dim >= 0 else dim + weight.dim()
    fn = _SpectralNormHook(name, n_power_iterations, dim, eps)
    h, w = fn.matrix(weight).shape
    with ag.no_grad():
        u = F.normalize(ag.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        v = F.normalize(ag.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo ``spectral_norm``: ``<name>`` becomes a parameter holding the weight divided by the current sigma."""
    k, fn = _find(module, _SpectralNormHook, name, "spectral_norm")
    with ag.no_grad():
        weight = fn.compute_weight(module, do_power_iteration=False).detach().clone()
    del module._forward_pre_hooks[k]
    module.__dict__.pop(name, None)
    for suffix in ("_orig",):
        del module._parameters[name + suffix]
    del module._buffers[name + "_u"], module._buffers[name + "_v"]
    module.register_parameter(name, Parameter(weight))
    return module
