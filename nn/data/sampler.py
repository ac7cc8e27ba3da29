"""Samplers (like ``torch.utils.data.sampler``): iterables of dataset indices, or of lists of them
(``BatchSampler``). Random ones take ``generator=`` (an ``ag.Generator``); without one they draw a fresh seed
from the global generator on every ``iter``, so ``ag.manual_seed`` makes a run reproducible."""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

import autograd as ag
import tkernels.random as _rnd

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler"]


def _draw_seed(generator=None) -> int:
    """A 63-bit seed from ``generator`` (default: the global generator that ``ag.manual_seed`` seeds)."""
    g = _rnd.default_generator if generator is None else generator
    if not isinstance(g, ag.Generator):
        raise TypeError(f"generator must be an ag.Generator, got {type(generator).__name__}")
    return int(g._np.integers(0, 2**63 - 1))


def _positive_int(op, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{op}: {name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


def _boolean(op, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} should be a boolean value, but got {name}={value!r}")
    return value


class Sampler:
    """Base class: subclasses define ``__iter__`` (yielding indices) and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__}: subclasses of Sampler should implement __iter__.")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation (repeated to fill ``num_samples``), or ``num_samples`` draws with
    replacement."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = _boolean("RandomSampler", "replacement", replacement)
        self._num_samples = num_samples
        self.generator = generator
        _positive_int("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        g = self.generator if self.generator is not None else ag.Generator(_draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from ag.randint(0, n, (32,), generator=g).tolist()
            yield from ag.randint(0, n, (self.num_samples % 32,), generator=g).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from ag.randperm(n, generator=g).tolist()
            yield from ag.randperm(n, generator=g).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a fresh permutation on every ``iter``)."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in ag.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (1-D, non-negative)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        self.num_samples = _positive_int("WeightedRandomSampler", "num_samples", num_samples)
        self.replacement = _boolean("WeightedRandomSampler", "replacement", replacement)
        w = np.asarray(weights.detach().cpu().numpy() if isinstance(weights, ag.Tensor) else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but given weights have "
                             f"shape {tuple(w.shape)}")
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement from "
                             f"{np.count_nonzero(w)} non-zero weights")
        self.weights = ag.tensor(w, dtype=ag.float64)
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand = ag.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from rand.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``).

    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool):
        self.batch_size = _positive_int("BatchSampler", "batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """The share of ``dataset`` for replica ``rank`` of ``num_replicas``: indices ``rank::num_replicas`` of a
    (shuffled, with ``seed + epoch``) permutation, padded by repeating (or, with ``drop_last``, trimmed) so that
    every rank gets the same number. Call ``set_epoch(e)`` before each epoch to reshuffle.

    ``num_replicas``/``rank`` default to the default process group's size and rank when one is initialized,
    else to the ``WORLD_SIZE``/``RANK`` environment variables (as set by launchers), else to a single replica.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        dist = sys.modules.get("autograd.distributed")  # only when the script uses it (no MPI import here)
        pg = dist is not None and dist.is_initialized()
        if num_replicas is None:
            num_replicas = dist.get_world_size() if pg else int(os.environ.get("WORLD_SIZE", 1))
        if rank is None:
            rank = dist.get_rank() if pg else int(os.environ.get("RANK", 0))
        num_replicas = _positive_int("DistributedSampler", "num_replicas", num_replicas)
        if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank!r}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = int(rank)
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = ag.randperm(n, generator=ag.Generator(self.seed + self.epoch)).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch`` (the same on every rank, so the shares stay disjoint)."""
        self.epoch = epoch
