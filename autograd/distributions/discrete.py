"""Discrete distributions: ``Bernoulli``, ``Categorical``, ``OneHotCategorical``, each given by ``probs`` or
``logits`` (exactly one), the other computed on first use, as in PyTorch."""

from __future__ import annotations

from tkernels import finfo as _finfo

from .. import factory as _f
from ..grad_mode import no_grad
from ..ops import broadcast_tensors, log, log1p, logsumexp, one_hot, sigmoid, softplus
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical"]


def _one_of(name, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: Either `probs` or `logits` must be specified, but not both.")


def _eps(t):
    return 1e-7 if t.dtype.itemsize <= 4 else 1e-15


def _binary_param(dist, name):
    """``__getattr__`` of a distribution given by ``probs`` or ``logits`` of one binary event (Bernoulli,
    Binomial): the parameter not given, computed once (PyTorch's ``probs_to_logits(is_binary=True)``)."""
    if name == "probs":
        dist.probs = sigmoid(dist.__dict__["logits"])
        return dist.probs
    if name == "logits":
        p = dist.__dict__["probs"]
        e = _eps(p)
        q = p.clamp(e, 1 - e)
        dist.logits = log(q) - log1p(-q)
        return dist.logits
    raise AttributeError(f"'{type(dist).__name__}' object has no attribute {name!r}")


class Bernoulli(Distribution):
    """``Bernoulli(probs=None, logits=None)``: 1 with probability ``probs = sigmoid(logits)``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Bernoulli", probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            shape = self.probs.shape
        else:
            (self.logits,) = broadcast_all(logits)
            shape = self.logits.shape
        super().__init__(shape, validate_args=validate_args)

    def __getattr__(self, name):
        return _binary_param(self, name)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return (self.probs >= 0.5).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return _f.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return value * logits - softplus(logits)

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand: bool = True):
        param = self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]
        values = _f.arange(2, dtype=param.dtype, device=param.device)
        values = values.reshape((2,) + (1,) * len(self.batch_shape))
        return values.expand((2,) + tuple(self.batch_shape)) if expand else values


class Categorical(Distribution):
    """``Categorical(probs=None, logits=None)`` over ``0 .. K-1`` (the last dimension holds the K classes;
    probs are normalised to sum to 1, logits to log-probabilities)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Categorical", probs, logits)
        given = probs if probs is not None else logits
        if not isinstance(given, Tensor) or given.ndim < 1:
            raise ValueError(f"Categorical: `{'probs' if probs is not None else 'logits'}` parameter must be at "
                             f"least one-dimensional (a Tensor whose last dimension holds the classes)")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logsumexp(logits, -1, keepdim=True)
        self._param = given
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], validate_args=validate_args)

    def __getattr__(self, name):
        if name == "probs":
            self.probs = self.__dict__["logits"].softmax(-1)
            return self.probs
        if name == "logits":
            p = self.__dict__["probs"]
            self.logits = log(p.clamp_min(_finfo(p.dtype).smallest_normal))
            return self.logits
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return _f.full(self._extended_shape(), float("nan"), dtype=self._param.dtype, device=self._param.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        n = 1
        for s in shape:
            n *= s
        with no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            per_row = n // max(flat.shape[0], 1) if flat.shape[0] else 0
            draws = _f.multinomial(flat, per_row, replacement=True) if per_row else \
                _f.zeros(flat.shape[0], 0, dtype=_f.int64, device=flat.device)
            return draws.T.reshape(shape) if shape else draws.reshape(())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp_min(_finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = _f.arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """``OneHotCategorical(probs=None, logits=None)``: a Categorical whose samples are one-hot vectors."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.independent(constraints.boolean, 1)
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        k = self._categorical._num_events
        return one_hot(self._categorical.sample(sample_shape), k).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()
