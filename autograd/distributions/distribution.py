"""``Distribution``: the base class (``torch.distributions.Distribution``'s interface): ``batch_shape`` and
``event_shape``; ``sample``/``rsample(sample_shape)`` (rsample differentiable where ``has_rsample``);
``log_prob``, ``entropy``, ``mean``, ``variance``, ``stddev``, ``cdf``; parameters and values checked against
``arg_constraints`` and ``support`` when ``validate_args`` (default True, as in PyTorch)."""

from __future__ import annotations

import math

from .. import factory as _f
from ..grad_mode import no_grad
from ..ops import broadcast_tensors
from ..tensor import Size, Tensor
from . import constraints

__all__ = ["Distribution", "broadcast_all"]

_validate_default = True


def broadcast_all(*values):
    """Tensors (numbers become float tensors of the first tensor's dtype and device) broadcast together."""
    ref = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = ref.dtype if ref is not None and ref.is_floating_point() else _f.get_default_dtype()
    device = ref.device if ref is not None else None
    tensors = [v if isinstance(v, Tensor) else _f.tensor(float(v), dtype=dtype, device=device) for v in values]
    return broadcast_tensors(*tensors)


def _describe(t) -> str:
    return f"Tensor of shape {tuple(t.shape)}" if isinstance(t, Tensor) else repr(t)


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        global _validate_default
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        _validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = _validate_default if validate_args is None else bool(validate_args)
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name not in self.__dict__:
                    continue  # a parameter given the other way (probs vs logits), or a wrapper's
                value = getattr(self, name)
                if not bool(constraint.check(value).all()):
                    raise ValueError(f"Expected parameter {name} ({_describe(value)}) of distribution {self!r} to "
                                     f"satisfy the constraint {constraint!r}, but found invalid values:\n{value}")

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        if not isinstance(sample_shape, tuple | list | Size):
            sample_shape = (int(sample_shape),)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"{type(self).__name__}.log_prob: the value must be a Tensor, got "
                             f"{type(value).__name__}")
        support = self.support
        if support is not None and not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({_describe(value)}) to be within the support ({support!r}) "
                             f"of the distribution {self!r}, but found invalid values:\n{value}")

    def sample(self, sample_shape=()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample); use sample()")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__}.mode")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def __repr__(self) -> str:
        params = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                v = self.__dict__[name]
                params.append(f"{name}: {v.item() if v.numel() == 1 else v.shape}")
        return f"{type(self).__name__}({', '.join(params)})"


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
__all__ += ["constraints"]
