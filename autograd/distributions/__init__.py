"""``autograd.distributions`` (≙ ``torch.distributions``): Normal, Uniform, Exponential, Laplace, Gamma, Beta,
Dirichlet, LogNormal, Poisson, Binomial, Bernoulli, Categorical, OneHotCategorical, Independent,
TransformedDistribution and ``transforms``, ``kl_divergence``/``register_kl`` and ``constraints``.
MultivariateNormal (through ``autograd.linalg.cholesky``/``solve_triangular``)."""

from . import constraints, transforms
from .binomial import Binomial
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .poisson import Poisson
from .transformed import LogNormal, TransformedDistribution

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Bernoulli", "Categorical",
           "OneHotCategorical", "Independent", "kl_divergence", "register_kl", "constraints", "Gamma", "Beta",
           "Dirichlet", "TransformedDistribution", "LogNormal", "transforms", "Poisson", "Binomial",
           "MultivariateNormal"]
