"""``MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None)``: PyTorch's
parameters (exactly one matrix; the others computed from the lower Cholesky factor ``scale_tril`` on first use),
``rsample`` = ``loc + L eps``, ``log_prob`` through a triangular solve, entropy, mean/mode/variance, and
``kl_divergence`` between two of them; differentiable through ``linalg.cholesky`` and ``linalg.solve_triangular``."""

from __future__ import annotations

import math

from .. import factory as _f
from .. import linalg as _la
from ..ops import broadcast_shapes, log
from . import constraints
from .distribution import Distribution
from .kl import register_kl

__all__ = ["MultivariateNormal"]


def _precision_to_scale_tril(p):
    """PyTorch's: the Cholesky factor of ``P^-1`` from that of the flipped P, without inverting P."""
    lf = _la.cholesky(p.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).mT
    eye = _f.eye(p.shape[-1], dtype=p.dtype, device=p.device)
    return _la.solve_triangular(l_inv, eye.expand(l_inv.shape), upper=False)


def _mahalanobis(L, x):
    """``|L^-1 x|^2`` over the last dim, L (..., k, k) and x (..., k) broadcast together."""
    shape = broadcast_shapes(tuple(L.shape[:-2]), tuple(x.shape[:-1]))
    k = L.shape[-1]
    sol = _la.solve_triangular(L.expand(shape + (k, k)), x.expand(shape + (k,)).unsqueeze(-1), upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        name, mat = given[0]
        if mat.dim() < 2:
            raise ValueError(f"MultivariateNormal: {name} must be at least two-dimensional, with optional leading "
                             f"batch dimensions")
        if mat.shape[-1] != mat.shape[-2] or mat.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: {name} of shape {list(mat.shape)} does not fit loc of shape "
                             f"{list(loc.shape)} (expected (..., {loc.shape[-1]}, {loc.shape[-1]}))")
        batch = broadcast_shapes(tuple(mat.shape[:-2]), tuple(loc.shape[:-1]))
        k = loc.shape[-1]
        setattr(self, name, mat.expand(batch + (k, k)))
        self.loc = loc.expand(batch + (k,))
        super().__init__(batch, (k,), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = mat
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = _la.cholesky(mat)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(mat)

    def __getattr__(self, name):
        d = self.__dict__
        if "_unbroadcasted_scale_tril" not in d:
            raise AttributeError(name)
        L = d["_unbroadcasted_scale_tril"]
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * 2
        if name == "scale_tril":
            self.scale_tril = L.expand(shape)
            return self.scale_tril
        if name == "covariance_matrix":
            self.covariance_matrix = (L @ L.mT).expand(shape)
            return self.covariance_matrix
        if name == "precision_matrix":
            eye = _f.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
            inv = _la.solve_triangular(L, eye, upper=False)  # L^-1
            self.precision_matrix = (inv.mT @ inv).expand(shape)
            return self.precision_matrix
        raise AttributeError(f"'MultivariateNormal' object has no attribute {name!r}")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return L.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = _f.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def sample(self, sample_shape=()):
        from ..grad_mode import no_grad

        with no_grad():
            return self.rsample(sample_shape)

    def _half_log_det(self):
        return log(self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1)).sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _mahalanobis(self._unbroadcasted_scale_tril, diff)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if self._batch_shape else h


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    k = p.event_shape[0]
    shape = broadcast_shapes(tuple(lp.shape[:-2]), tuple(lq.shape[:-2]))
    trace = _la.solve_triangular(lq.expand(shape + (k, k)), lp.expand(shape + (k, k)), upper=False).pow(2).sum(
        (-2, -1))
    m = _mahalanobis(lq, q.loc - p.loc)
    return q._half_log_det() - p._half_log_det() + 0.5 * (trace + m - k)
