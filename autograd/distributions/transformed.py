"""``TransformedDistribution(base, transforms)``: the law of ``transforms(x)`` for x from ``base`` (change of
variables: ``log p(y) = log p_base(x) - log|det J(x)|``), and ``LogNormal`` built on it."""

from __future__ import annotations

from . import constraints
from .continuous import Normal
from .distribution import Distribution
from .transforms import ComposeTransform, ExpTransform, Transform

__all__ = ["TransformedDistribution", "LogNormal"]


class TransformedDistribution(Distribution):
    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"TransformedDistribution: transforms must be Transforms, got {transforms!r}")
        self.base_dist, self.transforms = base_distribution, list(transforms)
        self._transform = ComposeTransform(self.transforms)
        event_dim = max([len(base_distribution.event_shape)] + [t.event_dim for t in self.transforms])
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    def rsample(self, sample_shape=()):
        return self._transform(self.base_dist.rsample(sample_shape))

    def sample(self, sample_shape=()):
        return self._transform(self.base_dist.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = value
        lp = 0.0
        event_dim = len(self.event_shape)
        for t in reversed(self.transforms):
            x = t.inv(y)
            term = t.log_abs_det_jacobian(x, y)
            for _ in range(event_dim - t.event_dim):
                term = term.sum(-1)
            lp = lp - term
            y = x
        base = self.base_dist.log_prob(y)
        for _ in range(event_dim - len(self.base_dist.event_shape)):
            base = base.sum(-1)
        return lp + base


class LogNormal(TransformedDistribution):
    """``exp(Normal(loc, scale))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        self.loc, self.scale = base.loc, base.scale
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return (self.loc + self.scale * self.scale / 2).exp()

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return (s2.exp() - 1) * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
