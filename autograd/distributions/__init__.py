"""``autograd.distributions`` (≙ ``torch.distributions``): Normal, Uniform, Exponential, Laplace, Bernoulli,
Categorical, OneHotCategorical, Independent, ``kl_divergence``/``register_kl`` and ``constraints``.
Not yet here (they need log-gamma functions this package lacks): Beta, Gamma, Dirichlet, Poisson, Binomial,
MultivariateNormal (needs a Cholesky factorisation), TransformedDistribution."""

from . import constraints
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Bernoulli", "Categorical",
           "OneHotCategorical", "Independent", "kl_divergence", "register_kl", "constraints"]
