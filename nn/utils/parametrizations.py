"""``nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations (PyTorch's API and
state_dict layout: ``parametrizations.weight.original0/1`` for weight norm's g and v,
``parametrizations.weight.original`` plus ``parametrizations.weight.0._u/_v`` for spectral norm); ``orthogonal``
lives in ``_orthogonal.py``."""

from __future__ import annotations

import autograd as ag

from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._orthogonal import orthogonal  # noqa: F401

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim``, keeping dims (``dim=None`` or -1: over all of ``v``,
    a 0-d tensor, as PyTorch's ``norm_except_dim``)."""
    if dim is None or dim == -1:
        return v.norm()
    dims = tuple(i for i in range(v.dim()) if i != dim)
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / norm_except_dim(v, dim))


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` with the norm over every dim but ``dim``."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module, name: str = "weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (``original0`` = g, ``original1`` = v); state dicts
    from the older ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) load into it."""
    wn = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, wn, unsafe=True)

    def _load_old_layout(state_dict, prefix):
        g, v = prefix + name + "_g", prefix + name + "_v"
        if g in state_dict and v in state_dict:
            state_dict[prefix + f"parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[prefix + f"parametrizations.{name}.original1"] = state_dict.pop(v)

    module.register_load_state_dict_pre_hook(_load_old_layout)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of the weight as a matrix (dim ``dim`` first), estimated
    by power iteration on the buffers ``_u``/``_v`` (updated in training mode)."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm: dim must be in [-{ndim}, {ndim - 1}] for a weight of shape "
                             f"{list(weight.shape)}, got {dim}")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: expected n_power_iterations to be positive, got {n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)
            h, w = mat.shape
            u = ag.randn(h, dtype=weight.dtype, device=weight.device)
            v = ag.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, mat, n):
        with ag.no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(ag.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ag.mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ag.dot(u, ag.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Reparametrize ``module.<name>`` as itself divided by its spectral norm (PyTorch's power iteration);
    ``dim`` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if weight is None or not isinstance(weight, ag.Tensor):
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter or buffer named '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
