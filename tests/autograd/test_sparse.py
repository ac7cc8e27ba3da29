"""Sparse COO tensors (autograd/sparse): construction, coalesce, to_dense/to_sparse round trips (hybrid too),
sparse @ dense against SciPy on random uncoalesced matrices with duplicates, on cpu and interpreted cuda;
gradients to the values and the dense operand (gradcheck in float64); errors; PyTorch when importable."""

import numpy as np
import pytest
import scipy.sparse as sps

import autograd as ag
from autograd.gradcheck import gradcheck

DEVICES = ["cpu", "cuda"]


def _random_coo(rng, n, m, nnz, dup=True):
    r, c = rng.integers(0, n, nnz), rng.integers(0, m, nnz)
    if dup and nnz > 2:
        r[-1], c[-1] = r[0], c[0]  # a duplicate: summed
    return np.stack([r, c]), rng.standard_normal(nnz)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n, m, k, nnz", [(5, 7, 3, 9), (1, 1, 1, 1), (6, 4, 2, 0), (33, 17, 5, 40)])
def test_mm_to_dense_and_coalesce_match_scipy(device, n, m, k, nnz):
    rng = np.random.default_rng(n * 100 + nnz)
    idx, val = _random_coo(rng, n, m, nnz)
    ref = sps.coo_matrix((val, (idx[0], idx[1])), shape=(n, m)).toarray()
    s = ag.sparse_coo_tensor(ag.tensor(idx, device=device), ag.tensor(val, device=device), (n, m))
    assert s.shape == (n, m) and s._nnz() == nnz and s.layout is ag.sparse_coo and s.is_sparse
    np.testing.assert_allclose(s.to_dense().cpu().numpy(), ref, rtol=1e-6, atol=1e-6)
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == len({(a, b) for a, b in idx.T})
    lin = c.indices().cpu().numpy()
    assert (np.diff(lin[0] * m + lin[1]) > 0).all()  # sorted, unique
    np.testing.assert_allclose(c.to_dense().cpu().numpy(), ref, rtol=1e-6, atol=1e-6)
    d = rng.standard_normal((m, k)).astype(np.float32)
    out = ag.sparse.mm(s, ag.tensor(d, device=device))
    np.testing.assert_allclose(out.cpu().numpy(), ref @ d, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((s @ ag.tensor(d[:, 0], device=device)).cpu().numpy(), ref @ d[:, 0], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(ag.mm(s, ag.tensor(d, device=device)).cpu().numpy(), ref @ d, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_reach_the_values_and_the_dense_side(device):
    rng = np.random.default_rng(0)
    idx, val = _random_coo(rng, 4, 5, 7)
    i = ag.tensor(idx, device=device)
    v = ag.tensor(val, dtype=ag.float64, device=device, requires_grad=True)
    d = ag.tensor(rng.standard_normal((5, 3)), dtype=ag.float64, device=device, requires_grad=True)
    assert gradcheck(lambda v, d: ag.sparse.mm(ag.sparse_coo_tensor(i, v, (4, 5)), d), (v, d))
    assert gradcheck(lambda v: ag.sparse_coo_tensor(i, v, (4, 5)).coalesce().to_dense(), (v,))
    s = ag.sparse_coo_tensor(i, v.detach(), (4, 5), requires_grad=True)
    ag.sparse.mm(s, d).sum().backward()
    g = s.grad  # with respect to the tensor's dense value: one entry per distinct index
    assert g.is_sparse and g.is_coalesced() and g._nnz() == len({(a, b) for a, b in idx.T})
    rows, cols = g.indices().cpu().numpy()
    want = d.detach().sum(1).cpu().numpy()[cols]  # d sum(S @ D) / d S[r, c] = sum_j D[c, j]
    np.testing.assert_allclose(g.values().cpu().numpy(), want, rtol=1e-12)
    assert v.grad is None  # (the values tensor of s is a detached copy)


@pytest.mark.parametrize("device", DEVICES)
def test_to_sparse_round_trip_and_hybrid(device):
    x = np.array([[[0, 0], [1.5, 0]], [[0, 0], [0, 0]], [[2, -1], [0, 3]]])
    t = ag.tensor(x, device=device, requires_grad=True)
    s = t.to_sparse()
    assert s._nnz() == 4 and s.sparse_dim() == 3 and s.dense_dim() == 0
    np.testing.assert_array_equal(s.to_dense().detach().cpu().numpy(), x)
    h = t.to_sparse(sparse_dim=2)  # rows (i, j) with any nonzero; values (nnz, 2)
    assert h.sparse_dim() == 2 and h.dense_dim() == 1 and h._nnz() == 3
    np.testing.assert_array_equal(h.to_dense().detach().cpu().numpy(), x)
    (h.to_dense() * 2).sum().backward()
    np.testing.assert_array_equal(t.grad.cpu().numpy(), np.where(np.abs(x).sum(-1, keepdims=True) > 0, 2.0, 0.0)
                                  * np.ones_like(x))


def test_transpose_add_scale_and_repr():
    s = ag.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 3))
    np.testing.assert_array_equal(s.t().to_dense().numpy(), s.to_dense().numpy().T)
    np.testing.assert_array_equal((s + s).to_dense().numpy(), 2 * s.to_dense().numpy())
    np.testing.assert_array_equal((3 * s).to_dense().numpy(), 3 * s.to_dense().numpy())
    np.testing.assert_array_equal((s + ag.ones(2, 3)).numpy(), s.to_dense().numpy() + 1)
    d = ag.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose((d.t() @ s.t()).numpy(), d.numpy().T @ s.to_dense().numpy().T)
    assert ag.sparse.sum(s).item() == 3.0
    assert "layout=autograd.sparse_coo" in repr(s) and "nnz=2" in repr(s)
    inferred = ag.sparse_coo_tensor([[0, 4]], [1.0, 2.0])
    assert inferred.shape == (5,)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_is_refused(device):
    with pytest.raises(RuntimeError, match="indices of nonzero 1 lie outside"):
        ag.sparse_coo_tensor(ag.tensor([[0, 3]], device=device), ag.tensor([1.0, 2.0], device=device), (3,)
                             ).to_dense().tolist()  # cuda: reported at the sync
    with pytest.raises(RuntimeError, match="same number of elements"):
        ag.sparse_coo_tensor([[0, 1]], [1.0], (3,))
    with pytest.raises(RuntimeError, match="indices must be an int64"):
        ag.sparse_coo_tensor([[0.0, 1.0]], [1.0, 2.0], (3,))
    s = ag.sparse_coo_tensor([[0, 0], [1, 1]], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ag.sparse.mm(s, ag.ones(3, 2))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    idx, val = _random_coo(rng, 6, 5, 11)
    d = rng.standard_normal((5, 4))
    ts = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), (6, 5), requires_grad=True)
    td = torch.tensor(d, requires_grad=True)
    torch.sparse.mm(ts, td).pow(2).sum().backward()
    s = ag.sparse_coo_tensor(idx, val, (6, 5), requires_grad=True)
    dd = ag.tensor(d, requires_grad=True)
    ag.sparse.mm(s, dd).pow(2).sum().backward()
    np.testing.assert_allclose(dd.grad.numpy(), td.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(s.grad.coalesce().to_dense().numpy(), ts.grad.to_dense().numpy(), rtol=1e-10)
    c = ts.coalesce()
    np.testing.assert_array_equal(s.coalesce().indices().numpy(), c.indices().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_mm_with_a_strided_dense_operand_and_odd_sizes(device):
    rng = np.random.default_rng(7)
    idx, val = _random_coo(rng, 7, 9, 13)
    ref = sps.coo_matrix((val, (idx[0], idx[1])), shape=(7, 9)).toarray()
    big = rng.standard_normal((9, 10))
    d = ag.tensor(big, device=device)[:, ::2]  # (9, 5), not contiguous
    assert not d.is_contiguous()
    s = ag.sparse_coo_tensor(ag.tensor(idx, device=device), ag.tensor(val, device=device), (7, 9))
    np.testing.assert_allclose(ag.sparse.mm(s, d).cpu().numpy(), ref @ big[:, ::2], rtol=1e-10)
    np.testing.assert_allclose((d.t() @ s.t()).cpu().numpy(), (ref @ big[:, ::2]).T, rtol=1e-10)


def test_mm_refuses_mixed_devices():
    s = ag.sparse_coo_tensor([[0], [1]], [1.0], (2, 2))
    with pytest.raises(RuntimeError, match="sparse.mm\\(\\): mat1 on cpu, mat2 on cuda"):
        ag.sparse.mm(s, ag.ones(2, 2, device="cuda"))
