"""``Independent(base, reinterpreted_batch_ndims)``: the last batch dimensions of ``base`` become event
dimensions (their log-probabilities and entropies are summed), e.g. a diagonal Gaussian from a ``Normal``."""

from __future__ import annotations

from . import constraints
from .distribution import Distribution

__all__ = ["Independent"]


class Independent(Distribution):
    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims: int, validate_args=None):
        n = int(reinterpreted_batch_ndims)
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{n} vs {len(base_distribution.batch_shape)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=False)
        self._validate_args = base_distribution._validate_args if validate_args is None else bool(validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        base = self.base_dist.support
        return None if base is None else constraints.independent(base, self.reinterpreted_batch_ndims)

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def _sum_rightmost(self, x):
        for _ in range(self.reinterpreted_batch_ndims):
            x = x.sum(-1)
        return x

    def log_prob(self, value):
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_rightmost(self.base_dist.entropy())

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
