"""The smaller ``torch.nn.functional`` names (``nn/_functional_extra.py``): ``elu_``/``leaky_relu_`` in place,
the ``*_with_indices`` pooling forms, ``gumbel_softmax`` (soft and hard, straight-through gradient), ``pdist``
vs SciPy with gradcheck, ``NLLLoss2d``; torch 2.13 where it is importable."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist as sp_pdist

import autograd as ag
import nn
import nn.functional as F  # noqa: N812 - PyTorch's spelling

RNG = np.random.default_rng(8)


def test_inplace_activations_and_with_indices():
    x = ag.tensor(RNG.standard_normal((3, 4)))
    ref = np.where(x.numpy() > 0, x.numpy(), np.expm1(x.numpy()))
    y = x.clone()
    assert F.elu_(y) is y
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12)
    y = x.clone()
    assert F.leaky_relu_(y, 0.2) is y
    np.testing.assert_allclose(y.numpy(), np.where(x.numpy() > 0, x.numpy(), 0.2 * x.numpy()), rtol=1e-12)
    img = ag.tensor(RNG.standard_normal((1, 2, 5, 6)))
    for fn, args in ((F.max_pool2d_with_indices, (2,)), (F.adaptive_max_pool2d_with_indices, ((2, 3),))):
        out, idx = fn(img, *args)
        base = getattr(F, fn.__name__.replace("_with_indices", ""))(img, *args, return_indices=True)
        np.testing.assert_array_equal(out.numpy(), base[0].numpy())
        np.testing.assert_array_equal(idx.numpy(), base[1].numpy())
    out, idx = F.max_pool1d_with_indices(ag.tensor(RNG.standard_normal((1, 2, 7))), 3)
    assert out.shape == idx.shape == (1, 2, 2)
    assert issubclass(nn.NLLLoss2d, nn.NLLLoss) and nn.NLLLoss2d()(ag.zeros(2, 3, 2, 2), ag.zeros(
        2, 2, 2, dtype=ag.int64)).item() == 0.0


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_gumbel_softmax(device):
    n = 4000 if device == "cpu" else 2000
    logits = ag.tensor(np.log([[0.2, 0.5, 0.3]]), device=device).expand(n, 3)
    ag.manual_seed(1)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).cpu().numpy(), 1.0, rtol=1e-6)
    w = ag.tensor(RNG.standard_normal((n, 3)), device=device)
    lg, lg2 = (logits.detach().clone().requires_grad_() for _ in range(2))
    ag.manual_seed(5)
    hard = F.gumbel_softmax(lg, tau=0.7, hard=True)
    h = hard.detach().cpu().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_allclose(h.mean(0), [0.2, 0.5, 0.3], atol=0.04)  # argmax of logits + Gumbel: the law
    (hard * w).sum().backward()
    ag.manual_seed(5)  # the same noise, soft: the straight-through gradient is the soft sample's
    (F.gumbel_softmax(lg2, tau=0.7) * w).sum().backward()
    np.testing.assert_allclose(lg.grad.cpu().numpy(), lg2.grad.cpu().numpy(), rtol=1e-12, atol=1e-14)


def test_pdist_matches_scipy_and_gradcheck():
    x = RNG.standard_normal((6, 4))
    for p, metric in ((2, "euclidean"), (1, "cityblock"), (3, "minkowski")):
        got = F.pdist(ag.tensor(x), p).numpy()
        want = sp_pdist(x, metric, p=p) if metric == "minkowski" else sp_pdist(x, metric)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert ag.gradcheck(lambda a: F.pdist(a), (ag.tensor(x, requires_grad=True),))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        F.pdist(ag.ones(3))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(F.pdist(ag.tensor(x), 2).numpy(), torch.nn.functional.pdist(torch.tensor(x)).numpy(),
                               rtol=1e-12)
    img = RNG.standard_normal((1, 2, 5, 5))
    o, i = F.max_pool2d_with_indices(ag.tensor(img), 2)
    to, ti = torch.nn.functional.max_pool2d_with_indices(torch.tensor(img), 2)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    x, w, b = (RNG.standard_normal(sh) for sh in ((6, 2, 3), (2, 3, 5), (5,)))
    np.testing.assert_allclose(F.conv_tbc(ag.tensor(x), ag.tensor(w), ag.tensor(b), 1).numpy(),
                               torch.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1).numpy(), rtol=1e-12)
    vol = RNG.uniform(0.1, 2.0, (1, 2, 5, 4, 4))
    np.testing.assert_allclose(F.lp_pool3d(ag.tensor(vol), 3.0, (2, 2, 3), 2, True).numpy(),
                               torch.nn.functional.lp_pool3d(torch.tensor(vol), 3.0, (2, 2, 3), 2, True).numpy(),
                               rtol=1e-10)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_lp_pool3d(device):
    x = RNG.uniform(0.1, 2.0, (1, 2, 4, 5, 3))
    for p, k, s, ceil in ((2.0, 2, None, False), (3.0, (2, 3, 1), (1, 2, 2), True)):
        got = F.lp_pool3d(ag.tensor(x, device=device), p, k, s, ceil).cpu().numpy()
        kk = (k,) * 3 if isinstance(k, int) else k
        ss = kk if s is None else s
        dims = [(-(-(n - kd) // sd) if ceil else (n - kd) // sd) + 1 for n, kd, sd in zip(x.shape[2:], kk, ss)]
        dims = [d - 1 if ceil and (d - 1) * sd >= n else d for d, sd, n in zip(dims, ss, x.shape[2:])]
        ref = np.zeros(x.shape[:2] + tuple(dims))
        for idx in np.ndindex(*dims):
            sl = tuple(slice(i * sd, i * sd + kd) for i, sd, kd in zip(idx, ss, kk))
            ref[(..., *idx)] = (x[(..., *sl)] ** p).sum((-3, -2, -1)) ** (1 / p)
        np.testing.assert_allclose(got, ref, rtol=1e-10)
    m = nn.LPPool3d(2, 2)
    assert m(ag.tensor(x[0], device=device)).shape == (2, 2, 2, 1)  # unbatched
    assert ag.gradcheck(lambda a: F.lp_pool3d(a, 2.0, 2), (ag.tensor(x, requires_grad=True),))


def test_conv_tbc():
    x, w, b = RNG.standard_normal((7, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)
    got = F.conv_tbc(ag.tensor(x), ag.tensor(w), ag.tensor(b), 1).numpy()
    xp = np.pad(x, [(1, 1), (0, 0), (0, 0)])
    ref = np.stack([np.einsum("kbc,kco->bo", xp[t:t + 3], w) for t in range(7)]) + b
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    args = (ag.tensor(x, requires_grad=True), ag.tensor(w, requires_grad=True), ag.tensor(b, requires_grad=True))
    assert ag.gradcheck(lambda *a: F.conv_tbc(*a, 2), args)
    with pytest.raises(RuntimeError, match="conv_tbc: weight"):
        F.conv_tbc(ag.ones(4, 1, 2), ag.ones(2, 3, 1), ag.ones(1))
