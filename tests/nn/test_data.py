"""nn.data: datasets, samplers, collation and the single-process DataLoader (PyTorch's semantics)."""

import collections
import warnings

import numpy as np
import pytest

import autograd as ag
from nn.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from nn.data import dataloader as dl_mod


def _np(t):
    return t.detach().cpu().numpy()


def _xy(n=10):
    return TensorDataset(ag.tensor(np.arange(2 * n, dtype=np.float32).reshape(n, 2)), ag.arange(n))


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ------------------------------------------------------------------------------------------------ datasets
def test_tensor_dataset_rows_and_length():
    ds = _xy(5)
    x, y = ds[3]
    assert _np(x).tolist() == [6.0, 7.0] and int(y) == 3
    assert len(ds) == 5


def test_tensor_dataset_size_mismatch_names_shapes():
    with pytest.raises(ValueError, match=r"size mismatch.*\[3, 4\].*\(3, 2\), \(4,\)"):
        TensorDataset(ag.zeros(3, 2), ag.zeros(4))


def test_subset_concat_chain_and_add():
    sq = Squares(5)
    sub = Subset(sq, [4, 0, 2])
    assert [sub[i] for i in range(3)] == [16, 0, 4] and len(sub) == 3
    assert sub.__getitems__([2, 0]) == [4, 16]
    cat = ConcatDataset([sq, Squares(3)])
    assert len(cat) == 8 and cat.cumulative_sizes == [5, 8]
    assert [cat[i] for i in range(8)] == [0, 1, 4, 9, 16, 0, 1, 4]
    assert cat[-1] == 4 and cat[-8] == 0
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        cat[-9]
    with pytest.raises(IndexError):
        cat[8]
    assert [(sq + Squares(2))[i] for i in range(7)] == [0, 1, 4, 9, 16, 0, 1]
    assert list(ChainDataset([Stream(2), Stream(3)])) == [0, 1, 0, 1, 2]
    assert list(Stream(2) + Stream(1)) == [0, 1, 0]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])


def test_dataset_base_class_needs_getitem():
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]


def test_random_split_lengths_fractions_and_generator():
    ds = range(10)
    a, b = random_split(ds, [7, 3], generator=ag.Generator(42))
    assert len(a) == 7 and len(b) == 3
    assert sorted(list(a) + list(b)) == list(range(10))
    a2, b2 = random_split(ds, [7, 3], generator=ag.Generator(42))
    assert list(a) == list(a2) and list(b) == list(b2)
    parts = random_split(ds, [0.33, 0.33, 0.34], generator=ag.Generator(0))
    assert [len(p) for p in parts] == [4, 3, 3]  # floors 3, 3, 3; the remainder goes to the first
    ag.manual_seed(5)
    g1 = [list(p) for p in random_split(ds, [0.5, 0.5])]
    ag.manual_seed(5)
    assert [list(p) for p in random_split(ds, [0.5, 0.5])] == g1
    with pytest.raises(ValueError, match=r"sum of input lengths \(9\) does not equal.*\(10\)"):
        random_split(ds, [5, 4])


# ------------------------------------------------------------------------------------------------ samplers
def test_sequential_and_random_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    s = RandomSampler(range(10), generator=ag.Generator(3))
    first = list(s)
    assert sorted(first) == list(range(10)) and len(s) == 10
    assert list(RandomSampler(range(10), generator=ag.Generator(3))) == first
    assert list(s) != first  # the generator moves on: a new order each epoch


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=ag.Generator(0))
    out = list(s)
    assert len(out) == 10 and sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [0, 1, 2, 3]
    r = list(RandomSampler(range(3), replacement=True, num_samples=100, generator=ag.Generator(0)))
    assert len(r) == 100 and set(r) == {0, 1, 2}


def test_random_sampler_without_generator_follows_manual_seed():
    ag.manual_seed(11)
    a = list(RandomSampler(range(20)))
    ag.manual_seed(11)
    assert list(RandomSampler(range(20))) == a


@pytest.mark.parametrize("kwargs, exc, msg", [
    ({"replacement": 1}, TypeError, "replacement should be a boolean value"),
    ({"num_samples": 0}, ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
])
def test_random_sampler_rejects_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        RandomSampler(range(3), **kwargs)


def test_subset_random_and_weighted_samplers():
    idx = [10, 20, 30, 40]
    out = list(SubsetRandomSampler(idx, generator=ag.Generator(1)))
    assert sorted(out) == idx
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=ag.Generator(0)))
    assert len(w) == 200 and set(w) == {1, 3} and w.count(3) > w.count(1)
    nr = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=ag.Generator(0)))
    assert sorted(nr) == [0, 1, 2]
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(2, 2\)"):
        WeightedRandomSampler([[1.0, 2.0], [3.0, 4.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)


def test_batch_sampler_exact_batches_and_len():
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 1, "no")


def test_distributed_sampler_splits_pads_and_reshuffles():
    ranks = [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert ranks == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded with the first indices
    dropped = [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True)) for r in range(3)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    shuffled = [DistributedSampler(range(12), 4, r, shuffle=True, seed=7) for r in range(4)]
    e0 = [list(s) for s in shuffled]
    assert sorted(sum(e0, [])) == list(range(12)) and all(len(s) == 3 for s in shuffled)
    assert [list(s) for s in shuffled] == e0  # same epoch, same order
    for s in shuffled:
        s.set_epoch(1)
    e1 = [list(s) for s in shuffled]
    assert e1 != e0 and sorted(sum(e1, [])) == list(range(12))
    with pytest.raises(ValueError, match=r"invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(10), num_replicas=3, rank=3)


# ------------------------------------------------------------------------------------------------- collate
def test_default_collate_types_and_dtypes():
    b = default_collate([np.array([1, 2], dtype=np.int16), np.array([3, 4], dtype=np.int16)])
    assert b.dtype == ag.int16 and _np(b).tolist() == [[1, 2], [3, 4]]
    f = default_collate([1.5, 2.5])
    assert f.dtype == ag.float64 and _np(f).tolist() == [1.5, 2.5]
    i = default_collate([1, 2])
    assert i.dtype == ag.int64 and _np(i).tolist() == [1, 2]
    assert default_collate([True, False]).dtype == ag.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    t = default_collate([ag.ones(2), ag.zeros(2)])
    assert t.shape == (2, 2) and _np(t).tolist() == [[1, 1], [0, 0]]
    s = default_collate([np.float32(1.0), np.float32(2.0)])
    assert s.dtype == ag.float32 and s.shape == (2,)


def test_default_collate_nested_structures():
    Point = collections.namedtuple("Point", "x y")
    batch = [{"img": np.zeros((2,), np.float32), "meta": (1, "a"), "p": Point(1.0, 2)},
             {"img": np.ones((2,), np.float32), "meta": (2, "b"), "p": Point(3.0, 4)}]
    out = default_collate(batch)
    assert set(out) == {"img", "meta", "p"}
    assert _np(out["img"]).tolist() == [[0, 0], [1, 1]]
    assert isinstance(out["meta"], list) and _np(out["meta"][0]).tolist() == [1, 2]
    assert out["meta"][1] == ("a", "b")  # (PyTorch 2.13: the tuple zip made)
    assert isinstance(out["p"], Point) and _np(out["p"].x).tolist() == [1.0, 3.0] and out["p"].y.dtype == ag.int64


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; found"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size.*\[2\].*\[3\]"):
        default_collate([ag.zeros(2), ag.zeros(3)])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float64(2.0), "s"), "c": 5})
    assert isinstance(out["a"], ag.Tensor) and _np(out["a"]).tolist() == [0, 1, 2]
    assert isinstance(out["b"], list) and isinstance(out["b"][0], ag.Tensor) and out["b"][1] == "s"
    assert out["c"] == 5
    strings = np.array(["x", "y"])
    assert default_convert(strings) is strings


# --------------------------------------------------------------------------------- DataLoader (no workers)
def test_loader_exact_batches_len_and_drop_last():
    ds = _xy(10)
    batches = list(DataLoader(ds, batch_size=4))
    assert [_np(y).tolist() for _, y in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert _np(batches[1][0]).tolist() == [[8, 9], [10, 11], [12, 13], [14, 15]]
    assert len(DataLoader(ds, batch_size=4)) == 3 and len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [_np(y).tolist() for _, y in DataLoader(ds, batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_loader_batch_size_none_converts_single_samples():
    items = list(DataLoader(Squares(3), batch_size=None))
    assert items == [0, 1, 4]
    arrays = list(DataLoader([np.arange(2), np.arange(2) + 5], batch_size=None))
    assert [_np(a).tolist() for a in arrays] == [[0, 1], [5, 6]]


def test_loader_shuffle_reproducible_with_generator_and_manual_seed():
    ds = Squares(12)

    def order(**kw):
        return [v for b in DataLoader(ds, batch_size=5, shuffle=True, **kw) for v in _np(b).tolist()]

    a = order(generator=ag.Generator(9))
    assert sorted(a) == sorted(i * i for i in range(12)) and a != [i * i for i in range(12)]
    assert order(generator=ag.Generator(9)) == a
    ag.manual_seed(123)
    b = order()
    ag.manual_seed(123)
    assert order() == b
    loader = DataLoader(ds, batch_size=12, shuffle=True, generator=ag.Generator(1))
    e1, e2 = (_np(next(iter(loader))).tolist() for _ in range(2))
    assert e1 != e2  # each epoch reshuffles


def test_loader_sampler_batch_sampler_and_collate_fn():
    ds = Squares(6)
    assert [_np(b).tolist() for b in DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0])] == [
        [25, 16], [9, 4], [1, 0]]
    bs = [[0, 5], [1], [2, 3, 4]]
    assert [_np(b).tolist() for b in DataLoader(ds, batch_sampler=bs)] == [[0, 25], [1], [4, 9, 16]]
    assert len(DataLoader(ds, batch_sampler=bs)) == 3
    assert list(DataLoader(ds, batch_size=4, collate_fn=sum)) == [14, 41]


def test_loader_uses_getitems_when_the_dataset_has_it():
    class Batched(Squares):
        calls = []

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [i * 10 for i in idx]

    ds = Batched(5)
    assert [_np(b).tolist() for b in DataLoader(ds, batch_size=2)] == [[0, 10], [20, 30], [40]]
    assert ds.calls == [[0, 1], [2, 3], [4]]


def test_loader_iterable_dataset_batches_and_len():
    assert [_np(b).tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [_np(b).tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3 and len(DataLoader(Stream(7), batch_size=3,
                                                                           drop_last=True)) == 2
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert get_worker_info() is None


@pytest.mark.parametrize("kwargs, msg", [
    ({"shuffle": True, "sampler": [0, 1]}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive with batch_size"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"num_workers": -1}, "num_workers option should be a non-negative int"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"batch_size": None, "drop_last": True}, "mutually exclusive with drop_last"),
    ({"multiprocessing_context": "spawn"}, "multiprocessing_context can only be used with multi-process loading"),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, "should specify a valid start method"),
])
def test_loader_rejects_bad_option_combinations(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        DataLoader(Squares(4), **kwargs)


def test_loader_rejects_shuffle_for_iterable_and_frozen_attributes():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    loader = DataLoader(Squares(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    with pytest.raises(TypeError, match="generator must be an ag.Generator"):
        DataLoader(Squares(4), generator=3)


def test_loader_pin_memory(monkeypatch):
    ds = _xy(4)
    xb, yb = next(iter(DataLoader(ds, batch_size=2, pin_memory=True)))
    assert xb.is_pinned() and yb.is_pinned() and _np(yb).tolist() == [0, 1]
    monkeypatch.setattr(dl_mod._cuda, "is_available", lambda: False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        loader = DataLoader(ds, batch_size=2, pin_memory=True)
    assert any("no accelerator is found" in str(w.message) for w in rec)
    xb, _ = next(iter(loader))
    assert not xb.is_pinned()


def test_loader_whole_batch_indexing_idiom():
    """A BatchSampler as ``sampler`` with ``batch_size=None`` hands the dataset whole index lists: one fancy
    index per tensor instead of one per sample."""
    ds = _xy(7)
    loader = DataLoader(ds, sampler=BatchSampler(SequentialSampler(ds), 3, False), batch_size=None)
    out = [(_np(x).tolist(), _np(y).tolist()) for x, y in loader]
    assert [y for _, y in out] == [[0, 1, 2], [3, 4, 5], [6]]
    assert out[2][0] == [[12.0, 13.0]]
    assert len(loader) == 3


def test_default_collate_mixed_tensor_dtypes_promote():
    out = default_collate([ag.ones(2, dtype=ag.float32), ag.zeros(2, dtype=ag.float64)])
    assert out.dtype == ag.float64 and _np(out).tolist() == [[1, 1], [0, 0]]
    assert default_collate([ag.ones(2, dtype=ag.bfloat16)] * 2).dtype == ag.bfloat16
