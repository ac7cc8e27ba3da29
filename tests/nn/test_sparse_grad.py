"""Sparse COO gradients: ``nn.Embedding(sparse=True)`` / ``F.embedding(sparse=True)`` / ``EmbeddingBag``, their
accumulation into ``.grad``, and the optimizers that take them (SparseAdam, SGD, Adagrad, LBFGS) against NumPy
transcriptions of PyTorch's update formulas and against torch 2.13 itself; the others refuse them."""

import math

import numpy as np
import pytest

import autograd as ag
import nn
import nn.functional as F  # noqa: N812 - PyTorch's spelling

DEVICES = ["cpu", "cuda"]
RNG = np.random.default_rng(15)


def _emb(n, d, dev, **kw):
    e = nn.Embedding(n, d, sparse=True, device=dev, dtype=ag.float64, **kw)
    return e


@pytest.mark.parametrize("dev", DEVICES)
def test_embedding_sparse_gradient_is_coalesced_and_accumulates(dev):
    e = _emb(7, 3, dev)
    x = ag.tensor([[1, 4, 1], [6, 1, 4]], device=dev)
    w = ag.tensor(RNG.normal(size=(2, 3, 3)), device=dev)
    (e(x) * w).sum().backward()
    g = e.weight.grad
    assert g.is_sparse and g.layout is ag.sparse_coo and g.is_coalesced() and g.device == e.weight.device
    ref = np.zeros((7, 3))
    np.add.at(ref, x.cpu().numpy().ravel(), w.cpu().numpy().reshape(-1, 3))
    assert g.indices().cpu().numpy().tolist() == [[1, 4, 6]]
    np.testing.assert_allclose(g.values().cpu().numpy(), ref[[1, 4, 6]], rtol=1e-12)
    (e(ag.tensor([0, 1], device=dev)).sum() * 2).backward()  # sparse + sparse: stays sparse, coalesced
    ref[[0, 1]] += 2
    g = e.weight.grad
    assert g.is_sparse and g.is_coalesced() and g.indices().cpu().numpy().tolist() == [[0, 1, 4, 6]]
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), ref, rtol=1e-12)
    (e.weight.sum() + e(x).sum()).backward()  # a dense and a sparse path into one leaf: the sum is dense
    np.add.at(ref, x.cpu().numpy().ravel(), 1.0)
    assert not e.weight.grad.is_sparse
    np.testing.assert_allclose(e.weight.grad.cpu().numpy(), ref + 1, rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_padding_idx_rows_are_left_out_and_freq_scaling_refused(dev):
    e = _emb(5, 2, dev, padding_idx=1)
    e(ag.tensor([[1, 1, 2]], device=dev)).sum().backward()
    assert e.weight.grad.indices().cpu().numpy().tolist() == [[2]]
    np.testing.assert_allclose(e.weight.grad.values().cpu().numpy(), [[1.0, 1.0]])
    f = nn.Embedding(5, 2, sparse=True, scale_grad_by_freq=True, device=dev)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        f(ag.tensor([1, 1], device=dev)).sum().backward()


def test_functional_and_bag_forms_and_gradcheck():
    w = ag.tensor(RNG.normal(size=(6, 3)), requires_grad=True)
    x = ag.tensor([3, 0, 3, 5])
    F.embedding(x, w, sparse=True).pow(2).sum().backward()
    dense = ag.tensor(w.detach().numpy(), requires_grad=True)
    F.embedding(x, dense).pow(2).sum().backward()
    np.testing.assert_allclose(w.grad.to_dense().numpy(), dense.grad.numpy(), rtol=1e-12)
    bag = nn.EmbeddingBag(6, 3, mode="sum", sparse=True, dtype=ag.float64)
    bag(ag.tensor([[1, 2], [2, 5]])).sum().backward()
    assert bag.weight.grad.is_sparse
    np.testing.assert_allclose(bag.weight.grad.to_dense().numpy()[:, 0], [0, 1, 2, 0, 0, 1])
    # the sparse gradient's values are those of the dense formula (gradcheck through to_dense)
    v = ag.tensor(RNG.normal(size=(4, 3)), requires_grad=True)
    assert ag.gradcheck(lambda g: F.embedding(x, g, sparse=False).sin().sum(1), (ag.tensor(
        RNG.normal(size=(6, 3)), requires_grad=True),))
    (gw,) = ag.grad(F.embedding(x, w, sparse=True).mul(v).sum(), w)
    assert gw.is_sparse
    np.testing.assert_allclose(gw.to_dense().numpy()[3], v.detach().numpy()[[0, 2]].sum(0), rtol=1e-12)


def _sparse_adam_ref(p, m, s, rows, vals, step, lr, b1, b2, eps):
    m[rows] += (vals - m[rows]) * (1 - b1)
    s[rows] += (vals * vals - s[rows]) * (1 - b2)
    p[rows] -= lr * math.sqrt(1 - b2 ** step) / (1 - b1 ** step) * m[rows] / (np.sqrt(s[rows]) + eps)


@pytest.mark.parametrize("dev", DEVICES)
def test_sparse_adam_updates_only_the_rows_present(dev):
    e = _emb(9, 4, dev)
    p0 = e.weight.detach().cpu().numpy().copy()
    opt = nn.optim.SparseAdam(e.parameters(), lr=0.05)
    p, m, s = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    for step, idx in enumerate(([2, 7, 2], [0, 7]), 1):
        opt.zero_grad()
        e(ag.tensor(idx, device=dev)).pow(2).sum().backward()
        u = np.unique(idx)
        vals = np.array([2 * p[r] * idx.count(r) for r in u])
        _sparse_adam_ref(p, m, s, u, vals, step, 0.05, 0.9, 0.999, 1e-8)
        opt.step()
        np.testing.assert_allclose(e.weight.detach().cpu().numpy(), p, rtol=1e-12, atol=1e-14)
    untouched = [1, 3, 4, 5, 6, 8]
    np.testing.assert_array_equal(e.weight.detach().cpu().numpy()[untouched], p0[untouched])
    st = opt.state_dict()["state"][0]
    assert st["step"] == 2 and set(st) == {"step", "exp_avg", "exp_avg_sq"}
    np.testing.assert_allclose(st["exp_avg_sq"].cpu().numpy(), s, rtol=1e-12)
    e.weight.grad = ag.ones(9, 4, device=dev, dtype=ag.float64)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam"):
        opt.step()


@pytest.mark.parametrize("dev", DEVICES)
def test_sgd_adagrad_lbfgs_take_sparse_gradients_and_the_rest_refuse(dev):
    idx = [3, 1, 3]
    combos = [(kw, fe) for kw in (dict(), dict(momentum=0.9, nesterov=True), dict(weight_decay=0.1, maximize=True))
              for fe in (None, False)]
    for kw, foreach in combos if dev == "cpu" else [combos[0], combos[2]]:  # (interpreted cuda: two of them)
        a, b = _emb(5, 2, dev), _emb(5, 2, dev)
        with ag.no_grad():
            b.weight.copy_(a.weight)
        b.sparse = False
        oa = nn.optim.SGD(a.parameters(), lr=0.1, foreach=foreach, **kw)
        ob = nn.optim.SGD(b.parameters(), lr=0.1, foreach=foreach, **kw)
        for _ in range(2):
            for m, o in ((a, oa), (b, ob)):
                o.zero_grad()
                m(ag.tensor(idx, device=dev)).pow(2).sum().backward()
                o.step()
        assert a.weight.grad.is_sparse and not b.weight.grad.is_sparse
        np.testing.assert_allclose(a.weight.detach().cpu().numpy(), b.weight.detach().cpu().numpy(), rtol=1e-12)
    e = _emb(5, 2, dev)
    p = e.weight.detach().cpu().numpy().copy()
    opt = nn.optim.Adagrad(e.parameters(), lr=0.1, lr_decay=0.01, initial_accumulator_value=0.2)
    acc = np.full_like(p, 0.2)
    for step in (1, 2):
        opt.zero_grad(set_to_none=False)
        e(ag.tensor(idx, device=dev)).pow(2).sum().backward()
        rows = np.array([1, 3])
        g = np.array([2 * p[1], 4 * p[3]])
        acc[rows] += g * g
        p[rows] -= 0.1 / (1 + (step - 1) * 0.01) * g / (np.sqrt(acc[rows]) + 1e-10)
        opt.step()
    np.testing.assert_allclose(e.weight.detach().cpu().numpy(), p, rtol=1e-12)
    np.testing.assert_allclose(opt.state[e.weight]["sum"].cpu().numpy(), acc, rtol=1e-12)
    assert e.weight.grad.is_sparse and e.weight.grad._nnz() == 2
    opt.zero_grad(set_to_none=False)  # PyTorch: a sparse .grad is emptied (nnz 0)
    assert e.weight.grad._nnz() == 0 and e.weight.grad.is_sparse
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        e(ag.tensor(idx, device=dev)).sum().backward()
        nn.optim.Adagrad(e.parameters(), weight_decay=0.1).step()
    lb = nn.optim.LBFGS(e.parameters(), max_iter=2)

    def closure():
        lb.zero_grad()
        loss = e(ag.tensor(idx, device=dev)).pow(2).sum()
        loss.backward()
        return loss

    before = float(closure())
    lb.step(closure)
    assert float(closure()) < before
    for cls, msg in ((nn.optim.Adam, "Adam does not support sparse gradients, please consider SparseAdam instead"),
                     (nn.optim.AdamW, "Adam does not support sparse gradients, please consider SparseAdam"),
                     (nn.optim.RMSprop, "RMSprop does not support sparse gradients"),
                     (nn.optim.NAdam, "NAdam does not support sparse gradients"),
                     (nn.optim.Rprop, "Rprop does not support sparse gradients")):
        o = cls(e.parameters())
        o.zero_grad()
        e(ag.tensor(idx, device=dev)).sum().backward()
        w0 = e.weight.detach().cpu().numpy().copy()
        with pytest.raises(RuntimeError, match=msg):
            o.step()
        np.testing.assert_array_equal(e.weight.detach().cpu().numpy(), w0)


@pytest.mark.parametrize("dev", DEVICES)
def test_clip_grad_norm_with_sparse_gradients(dev):
    e = _emb(6, 3, dev)
    lin = nn.Linear(3, 1, device=dev, dtype=ag.float64)
    lin(e(ag.tensor([2, 2, 5], device=dev))).sum().backward()
    dense = np.concatenate([e.weight.grad.to_dense().cpu().numpy().ravel(), lin.weight.grad.cpu().numpy().ravel(),
                            lin.bias.grad.cpu().numpy().ravel()])
    for norm_type in (2.0, math.inf):
        total = nn.utils.clip_grad_norm_([e.weight, *lin.parameters()], 0.01, norm_type=norm_type)
        ref = np.linalg.norm(dense, ord=norm_type)
        np.testing.assert_allclose(float(total), ref, rtol=1e-6)
        dense = dense * min(1.0, 0.01 / (ref + 1e-6))
        np.testing.assert_allclose(e.weight.grad.to_dense().cpu().numpy().ravel(), dense[:18], rtol=1e-6)
    assert e.weight.grad.is_sparse


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    w0 = RNG.normal(size=(8, 3))
    batches = ([1, 5, 1], [0, 5, 7, 7])
    ours = nn.Embedding(8, 3, sparse=True, _weight=ag.tensor(w0))
    theirs = torch.nn.Embedding(8, 3, sparse=True, _weight=torch.tensor(w0))
    for make in (lambda ps, t: t.SparseAdam(ps, lr=0.1), lambda ps, t: t.Adagrad(ps, lr=0.1),
                 lambda ps, t: t.SGD(ps, lr=0.1, momentum=0.5)):
        oo, ot = make(ours.parameters(), nn.optim), make(theirs.parameters(), torch.optim)
        for b in batches:
            oo.zero_grad()
            ot.zero_grad()
            ours(ag.tensor(b)).pow(3).sum().backward()
            theirs(torch.tensor(b)).pow(3).sum().backward()
            np.testing.assert_allclose(ours.weight.grad.to_dense().numpy(),
                                       theirs.weight.grad.to_dense().numpy(), rtol=1e-12)
            oo.step()
            ot.step()
            np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-10)
