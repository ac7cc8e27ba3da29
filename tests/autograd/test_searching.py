"""Sorting and searching (autograd/ops/searching.py): values against NumPy, named tuples, stability, NaN
order, PyTorch's argument rules and errors. Gradient checks: gradinfos/searching.py."""

import math

import numpy as np
import pytest

import autograd as ag

RNG = np.random.default_rng(1)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def eq(t, ref):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_array_equal(t.detach().numpy(), ref)


def test_sort():
    a = A(3, 5)
    r = T(a).sort()
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    eq(r.values, np.sort(a, -1))
    eq(r.indices, np.argsort(a, -1, kind="stable"))
    v, i = ag.sort(T(a), 0, descending=True)
    eq(v, -np.sort(-a, 0))
    x = np.array([2.0, 1.0, 2.0, np.nan, 1.0])
    v, i = T(x).sort(descending=True, stable=True)
    assert math.isnan(v[0].item()) and i.tolist() == [3, 0, 2, 1, 4]  # NaN is the largest; ties keep order
    eq(T(x).sort().indices, [1, 4, 0, 2, 3])
    eq(ag.argsort(T(x), descending=True), [3, 0, 2, 1, 4])
    eq(ag.msort(T(a)), np.sort(a, 0))
    v, i = T(1.5).sort()
    assert v.item() == 1.5 and i.item() == 0


def test_sort_gradient_scatters_back():
    x = T(np.array([3.0, 1.0, 2.0]), requires_grad=True)
    v = x.sort(descending=True).values
    (g,) = ag.grad(v, x, T(np.array([10.0, 20.0, 30.0])))
    eq(g, [10.0, 30.0, 20.0])


def test_topk():
    a = A(4, 6)
    r = T(a).topk(3)
    assert type(r).__name__ == "topk"
    eq(r.values, -np.sort(-a, -1)[:, :3])
    eq(r.indices, np.argsort(-a, -1, kind="stable")[:, :3])
    v, i = ag.topk(T(a), 2, dim=0, largest=False)
    eq(v, np.sort(a, 0)[:2])
    v, _ = T(a).topk(6, sorted=False)
    eq(v.sort(descending=True).values, -np.sort(-a, -1))
    with pytest.raises(RuntimeError, match="k=7 out of range"):
        T(a).topk(7)


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if ag.cuda.is_available() else []))
def test_topk_of_a_zero_d_input(device):
    # a 0-d tensor is one element along dim 0 (or -1): k=1 gives 0-d results, k=0 empty ones of shape (0,)
    x = ag.tensor(3.0, device=device)
    for dim in (0, -1):
        v, i = ag.topk(x, 1, dim)
        assert v.shape == () and i.shape == () and v.dtype == ag.float32 and i.dtype == ag.int64
        assert v.item() == 3.0 and i.item() == 0 and v.device.type == device and i.device.type == device
        v, i = ag.topk(x, 0, dim, largest=False)
        assert v.shape == (0,) and i.shape == (0,) and v.dtype == ag.float32 and i.dtype == ag.int64
        assert v.device.type == device and i.device.type == device
    y = ag.tensor(3.0, device=device, requires_grad=True)
    ag.topk(y, 1).values.backward()
    assert y.grad.item() == 1.0
    ag.topk(y, 0).values.sum().backward()
    assert y.grad.item() == 1.0
    with pytest.raises(RuntimeError, match=r"topk\(\): selected index k=2 out of range for a 0-d input .*shape \[\].*"
                                           r"Hint: k must be in \[0, 1\]"):
        ag.topk(x, 2)
    with pytest.raises(RuntimeError, match=r"topk\(\): selected index k=-1 out of range for dim 1 of size 3 "
                                           r"\(input shape \[2, 3\], dtype float32"):
        ag.topk(ag.ones(2, 3, device=device), -1)
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' must be int, not float"):
        ag.topk(x, 1.0)


def test_kthvalue_median():
    a = A(3, 6)
    r = T(a).kthvalue(2, 1)
    assert type(r).__name__ == "kthvalue"
    eq(r.values, np.sort(a, 1)[:, 1])
    eq(r.values, np.take_along_axis(a, r.indices.numpy()[:, None], 1)[:, 0])
    eq(ag.kthvalue(T(a), 3, 0, keepdim=True).values, np.sort(a, 0)[2:3])
    with pytest.raises(IndexError, match="out of range"):
        T(a).kthvalue(7)
    eq(T(a).median(), np.sort(a.reshape(-1))[(a.size - 1) // 2])  # the lower median, like PyTorch
    m = ag.median(T(a), 1)
    assert type(m).__name__ == "median"
    eq(m.values, np.sort(a, 1)[:, 2])
    eq(m.values, np.take_along_axis(a, m.indices.numpy()[:, None], 1)[:, 0])
    eq(T(a).median(0, keepdim=True).values, np.sort(a, 0)[1:2])
    x = np.array([[1.0, np.nan, 3.0], [4.0, 2.0, 0.0]])
    v = T(x).median(1).values.numpy()
    assert math.isnan(v[0]) and v[1] == 2.0
    assert math.isnan(T(x).median().item())
    assert T(x).nanmedian().item() == 2.0
    eq(ag.nanmedian(T(x), 1).values, [1.0, 2.0])
    assert math.isnan(T([np.nan, np.nan]).nanmedian().item())


def test_median_ties_gradient_even():
    x = T(np.array([0.4, 1.3, 1.3, 2.0]), requires_grad=True)
    (g,) = ag.grad(x.median(), x)
    eq(g, [0.0, 0.5, 0.5, 0.0])


def test_unique():
    a = np.array([[3, 1, 3], [2, 1, 1]])
    eq(T(a).unique(), [1, 2, 3])
    u, inv, cnt = ag.unique(T(a), return_inverse=True, return_counts=True)
    eq(u, [1, 2, 3])
    eq(inv, [[2, 0, 2], [1, 0, 0]])
    eq(cnt, [3, 1, 2])
    u, inv = ag.unique(T(np.array([[1, 2], [1, 2], [0, 5]])), dim=0, return_inverse=True)
    eq(u, [[0, 5], [1, 2]])
    eq(inv, [1, 1, 0])
    assert ag.unique(T(a)).grad_fn is None


def test_unique_consecutive():
    x = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    eq(T(x).unique_consecutive(), [1, 2, 3, 1, 2])
    u, inv, c = ag.unique_consecutive(T(x), return_inverse=True, return_counts=True)
    eq(inv, [0, 0, 1, 1, 2, 3, 3, 4])
    eq(c, [2, 2, 1, 2, 1])
    m = np.array([[1, 1, 2, 2], [3, 3, 4, 5]])
    eq(ag.unique_consecutive(T(m), dim=1), [[1, 2, 2], [3, 4, 5]])
    u, c = ag.unique_consecutive(T(m), dim=0, return_counts=True)
    eq(u, m)
    eq(c, [1, 1])


def test_searchsorted_bucketize():
    s = np.array([1.0, 3.0, 5.0, 7.0])
    v = np.array([[3.0, 6.0], [9.0, 1.0]])
    r = ag.searchsorted(T(s), T(v))
    assert r.dtype == ag.int64
    eq(r, np.searchsorted(s, v))
    eq(ag.searchsorted(T(s), T(v), right=True), np.searchsorted(s, v, side="right"))
    eq(ag.searchsorted(T(s), T(v), side="right"), np.searchsorted(s, v, side="right"))
    assert ag.searchsorted(T(s), 4.0).item() == 2
    assert ag.searchsorted(T(s), T(v), out_int32=True).dtype == ag.int32
    batched = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    eq(ag.searchsorted(T(batched), T(np.array([[2.5], [2.5]]))), [[2], [1]])
    with pytest.raises(RuntimeError, match="opposites"):
        ag.searchsorted(T(s), T(v), right=True, side="left")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        ag.searchsorted(T(batched), T(np.ones((3, 1))))
    eq(ag.bucketize(T(v), T(s)), np.searchsorted(s, v))
    eq(ag.bucketize(T(np.array([3.0, 4.0])), T(s), right=True), [2, 2])
    with pytest.raises(RuntimeError, match="1 dimension"):
        ag.bucketize(T(v), T(batched))


def test_argwhere_isin():
    a = np.array([[0, 2, 0], [1, 0, 3]])
    r = T(a).argwhere()
    assert r.dtype == ag.int64
    eq(r, np.argwhere(a))
    eq(ag.isin(T(a), T([2, 3, 9])), np.isin(a, [2, 3, 9]))
    eq(ag.isin(T(a), 0, invert=True), a != 0)
    eq(ag.isin(T(a), T(np.array([], dtype=np.int64))), np.zeros_like(a, dtype=bool))
    eq(ag.isin(T(np.array([1.0, np.nan])), T(np.array([np.nan, 1.0]))), [True, False])
