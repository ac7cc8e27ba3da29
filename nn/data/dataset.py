"""Datasets (like ``torch.utils.data.dataset``): map-style ``Dataset``, ``IterableDataset``, and the wrappers
``TensorDataset``, ``Subset``, ``ConcatDataset``, ``ChainDataset``, with ``random_split``."""

from __future__ import annotations

import bisect
import math
import numbers
import warnings
from collections.abc import Sequence

import autograd as ag

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
           "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` returns sample ``i``; subclasses define ``__getitem__`` and usually
    ``__len__``. An optional ``__getitems__(indices)`` returning a list of samples lets the DataLoader fetch a
    whole batch in one call."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}: subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``. With ``num_workers > 0`` every worker gets a
    copy, so shard the stream with ``get_worker_info()`` (``info.id``, ``info.num_workers``) to avoid
    duplicates."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__}: subclasses of IterableDataset should implement "
                                  f"__iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


def _size0(t):
    shape = getattr(t, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"TensorDataset: every tensor needs a first (sample) dimension, got "
                         f"{type(t).__name__} with shape {None if shape is None else tuple(shape)}")
    return int(shape[0])


class TensorDataset(Dataset):
    """Samples are the rows of tensors of one length: ``TensorDataset(X, y)[i] == (X[i], y[i])``.

    Accepts ``autograd.Tensor`` s (and NumPy arrays, indexed as such).
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        sizes = [_size0(t) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
            raise ValueError(f"TensorDataset: size mismatch between tensors: first dimensions {sizes} (shapes "
                             f"{shapes}); every tensor must have the same number of samples")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _size0(self.tensors[0])

    def __reduce__(self):
        # Tensors refuse to pickle; worker processes started with 'spawn' receive the rows as NumPy arrays.
        arrays = []
        for t in self.tensors:
            if isinstance(t, ag.Tensor):
                if t.device.type != "cpu":
                    raise TypeError(f"TensorDataset: a {t.device} tensor cannot be sent to a DataLoader worker "
                                    f"process; keep the dataset on cpu and move each batch to the device")
                arrays.append(("tensor", t.detach().numpy()))
            else:
                arrays.append(("other", t))
        state = {k: v for k, v in self.__dict__.items() if k != "tensors"}
        return (_rebuild_tensor_dataset, (type(self), arrays, state))


def _rebuild_tensor_dataset(cls, arrays, state):
    ds = cls.__new__(cls)
    ds.__dict__.update(state)
    ds.tensors = tuple(ag.from_numpy(a) if kind == "tensor" else a for kind, a in arrays)
    return ds


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        get_many = getattr(self.dataset, "__getitems__", None)
        if callable(get_many):
            return get_many([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class StackDataset(Dataset):
    """Datasets of one length side by side: ``StackDataset(a, b)[i]`` is ``(a[i], b[i])``,
    ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets either as arguments (tuple samples) or as keywords "
                             "(dict samples), not both")
        parts = args or tuple(kwargs.values())
        if not parts:
            raise ValueError("At least one dataset should be passed")
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        return [self[i] for i in indices]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another; ``cumulative_sizes[i]`` is the end of dataset ``i``."""

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset does not support IterableDataset (dataset {i} is "
                                f"{type(d).__name__}); use ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"ConcatDataset: absolute value of index {idx} should not exceed dataset length "
                                 f"{n}")
            idx = n + idx
        elif idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of length {n}")
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[d - 1] if d > 0 else 0
        return self.datasets[d][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (a lazy ``itertools.chain``)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset (dataset {i} is "
                                f"{type(d).__name__})")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator=None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random ``Subset`` s of the given lengths, or fractions summing to
    1 (floors, then the remainder handed out one by one from the first). ``generator`` (default: the global one,
    reproducible under ``ag.manual_seed``) draws the permutation.

    >>> train, test = random_split(range(10), [0.8, 0.2], generator=ag.Generator(0))
    """
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1: {frac}")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this might result in an empty "
                              f"dataset.", stacklevel=2)
        lengths = sizes
    for i, s in enumerate(lengths):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing to 1, got "
                             f"{lengths!r} (entry {i})")
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n})!")
    perm = ag.randperm(n, generator=generator).tolist()
    out, start = [], 0
    for s in lengths:
        out.append(Subset(dataset, perm[start:start + s]))
        start += s
    return out

