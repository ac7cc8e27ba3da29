"""MarginRankingLoss, HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiLabelMarginLoss,
MultiMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, PoissonNLLLoss, GaussianNLLLoss, CTCLoss
(modules and nn.functional): NumPy forms of PyTorch's documented formulas (CTC: a brute-force sum over every
alignment), each reduction and the legacy size_average/reduce, float32 and float64, gradcheck in float64,
interpreted cuda vs cpu, bad arguments; PyTorch as an optional reference."""

import itertools
import math

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

R = np.random.default_rng(150)


def red(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def softplus(z):
    return np.logaddexp(0.0, z)


def ref_multilabel_margin(x, y):
    x2, y2 = np.atleast_2d(x), np.atleast_2d(y)
    out = []
    for xs, ys in zip(x2, y2):
        tgt = []
        for v in ys:
            if v < 0:
                break
            tgt.append(int(v))
        c = len(xs)
        out.append(sum(max(0.0, 1 - (xs[j] - xs[i])) for j in tgt for i in range(c) if i not in tgt) / c)
    out = np.array(out)
    return out if x.ndim == 2 else out[0]


def ref_multi_margin(x, y, p=1, margin=1.0, w=None):
    x2 = np.atleast_2d(x)
    out = []
    for xs, t in zip(x2, np.atleast_1d(y)):
        c = len(xs)
        s = sum((w[t] if w is not None else 1.0) * max(0.0, margin - xs[t] + xs[i]) ** p for i in range(c) if i != t)
        out.append(s / c)
    out = np.array(out)
    return out if x.ndim == 2 else out[0]


def pdist(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def ref_poisson(x, t, log_input=True, full=False, eps=1e-8):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        tt = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, tt * np.log(tt) - tt + 0.5 * np.log(2 * np.pi * tt), 0.0)
    return loss


def ref_gaussian(x, t, v, full=False, eps=1e-6):
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x - t) ** 2 / v)
    return loss + 0.5 * np.log(2 * np.pi) if full else loss


def ints(lo, hi, *shape):
    return R.integers(lo, hi, shape)


def sign(*shape):
    return np.where(R.random(shape) < 0.5, -1.0, 1.0)


def u(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


# name -> (loss function of float arrays' tensors, NumPy reference of the unreduced loss, float inputs, int inputs)
X1, X2, Y = u(7, 5), u(7, 5), sign(7, 5)
XC, YL = u(6, 5, lo=-2, hi=2), (R.random((6, 5)) < 0.4).astype(np.float64)
W5 = u(5, lo=0.2, hi=2.0)
YMLM = np.array([[3, 0, -1, 1, 2], [1, 4, 2, 0, -1], [-1, 3, 3, 3, 3], [2, 2, -1, 4, 4], [0, 1, 2, 3, 4],
                 [4, -1, 0, 0, 0]])
YMM = ints(0, 5, 6)
A, P, NG = u(6, 4), u(6, 4), u(6, 4)
XP, TP = u(8, 3, lo=-2, hi=2), R.poisson(2.0, (8, 3)).astype(np.float64)
XG, TG, VG = u(5, 4), u(5, 4), u(5, 4, lo=0.1, hi=2.0)

LOSSES = {
    "margin_ranking": (lambda a, b, r: F.margin_ranking_loss(a, b, ag.tensor(Y, dtype=a.dtype, device=a.device),
                                                              margin=0.3, reduction=r),
                       lambda a, b: np.maximum(0, -Y * (a - b) + 0.3), [X1, X2]),
    "hinge_embedding": (lambda a, r: F.hinge_embedding_loss(a, ag.tensor(Y, dtype=a.dtype, device=a.device),
                                                             margin=0.6, reduction=r),
                        lambda a: np.where(Y == 1, a, np.maximum(0, 0.6 - a)), [X1]),
    "soft_margin": (lambda a, r: F.soft_margin_loss(a, ag.tensor(Y, dtype=a.dtype, device=a.device), reduction=r),
                    lambda a: softplus(-Y * a), [X1]),
    "multilabel_soft_margin": (
        lambda a, r: F.multilabel_soft_margin_loss(a, ag.tensor(YL, dtype=a.dtype, device=a.device),
                                                   weight=ag.tensor(W5, dtype=a.dtype, device=a.device), reduction=r),
        lambda a: ((YL * softplus(-a) + (1 - YL) * softplus(a)) * W5).mean(-1), [XC]),
    "multilabel_margin": (lambda a, r: F.multilabel_margin_loss(a, ag.tensor(YMLM, device=a.device), reduction=r),
                          lambda a: ref_multilabel_margin(a, YMLM), [XC]),
    "multi_margin_p1": (lambda a, r: F.multi_margin_loss(a, ag.tensor(YMM, device=a.device), margin=0.8,
                                                         reduction=r),
                        lambda a: ref_multi_margin(a, YMM, 1, 0.8), [XC]),
    "multi_margin_p2_weight": (
        lambda a, r: F.multi_margin_loss(a, ag.tensor(YMM, device=a.device), p=2,
                                         weight=ag.tensor(W5, dtype=a.dtype, device=a.device), reduction=r),
        lambda a: ref_multi_margin(a, YMM, 2, 1.0, W5), [XC]),
    "triplet": (lambda a, p, n, r: F.triplet_margin_loss(a, p, n, margin=0.7, reduction=r),
                lambda a, p, n: np.maximum(pdist(a, p) - pdist(a, n) + 0.7, 0), [A, P, NG]),
    "triplet_p1_swap": (lambda a, p, n, r: F.triplet_margin_loss(a, p, n, p=1, swap=True, reduction=r),
                        lambda a, p, n: np.maximum(pdist(a, p, 1) - np.minimum(pdist(a, n, 1), pdist(p, n, 1)) + 1,
                                                   0), [A, P, NG]),
    "triplet_with_distance": (
        lambda a, p, n, r: F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda x, y: 1 - F.cosine_similarity(x, y, 1), margin=0.5, reduction=r),
        lambda a, p, n: np.maximum(
            (1 - (a * p).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(p, axis=1))
            - (1 - (a * n).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(n, axis=1)) + 0.5, 0), [A, P, NG]),
    "poisson_log": (lambda a, r: F.poisson_nll_loss(a, ag.tensor(TP, dtype=a.dtype, device=a.device), reduction=r),
                    lambda a: ref_poisson(a, TP), [XP]),
    "poisson_full": (lambda a, r: F.poisson_nll_loss(a, ag.tensor(TP, dtype=a.dtype, device=a.device), full=True,
                                                     reduction=r),
                     lambda a: ref_poisson(a, TP, full=True), [XP]),
    "poisson_rate": (lambda a, r: F.poisson_nll_loss(a, ag.tensor(TP, dtype=a.dtype, device=a.device),
                                                     log_input=False, reduction=r),
                     lambda a: ref_poisson(a, TP, log_input=False), [np.abs(XP) + 0.1]),
    "gaussian": (lambda a, v, r: F.gaussian_nll_loss(a, ag.tensor(TG, dtype=a.dtype, device=a.device), v,
                                                     reduction=r),
                 lambda a, v: ref_gaussian(a, TG, v), [XG, VG]),
    "gaussian_full_homoscedastic": (
        lambda a, v, r: F.gaussian_nll_loss(a, ag.tensor(TG, dtype=a.dtype, device=a.device), v, full=True,
                                            reduction=r),
        lambda a, v: ref_gaussian(a, TG, v[:, None], full=True), [XG, VG[:, 0]]),
    "gaussian_var_broadcast": (
        lambda a, v, r: F.gaussian_nll_loss(a, ag.tensor(TG, dtype=a.dtype, device=a.device), v, reduction=r),
        lambda a, v: ref_gaussian(a, TG, v), [XG, VG[:1]]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_matches_the_formula(name, reduction, dtype):
    fn, ref, arrays = LOSSES[name]
    ts = [ag.tensor(a.astype(dtype)) for a in arrays]
    out = fn(*ts, reduction)
    assert out.dtype == ts[0].dtype
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), red(ref(*[a.astype(dtype).astype(np.float64) for a in arrays]),
                                                reduction), **tol)


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradcheck_float64(name):
    fn, _, arrays = LOSSES[name]
    ts = tuple(ag.tensor(a, requires_grad=True) for a in arrays)
    assert ag.gradcheck(lambda *t: fn(*t, "none"), ts)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
@pytest.mark.parametrize("name", list(LOSSES))
def test_cuda_matches_cpu(name):
    fn, _, arrays = LOSSES[name]
    res = []
    for dev in ("cpu", "cuda"):
        ts = [ag.tensor(a.astype(np.float32), device=dev, requires_grad=True) for a in arrays]
        out = fn(*ts, "sum")
        assert out.device.type == dev
        out.backward()
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in ts])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


MODULES = [
    (nn.MarginRankingLoss(margin=0.3), lambda: (ag.tensor(X1), ag.tensor(X2), ag.tensor(Y)), "margin_ranking"),
    (nn.HingeEmbeddingLoss(margin=0.6), lambda: (ag.tensor(X1), ag.tensor(Y)), "hinge_embedding"),
    (nn.SoftMarginLoss(), lambda: (ag.tensor(X1), ag.tensor(Y)), "soft_margin"),
    (nn.MultiLabelSoftMarginLoss(weight=ag.tensor(W5)), lambda: (ag.tensor(XC), ag.tensor(YL)),
     "multilabel_soft_margin"),
    (nn.MultiLabelMarginLoss(), lambda: (ag.tensor(XC), ag.tensor(YMLM)), "multilabel_margin"),
    (nn.MultiMarginLoss(margin=0.8), lambda: (ag.tensor(XC), ag.tensor(YMM)), "multi_margin_p1"),
    (nn.MultiMarginLoss(p=2, weight=ag.tensor(W5)), lambda: (ag.tensor(XC), ag.tensor(YMM)), "multi_margin_p2_weight"),
    (nn.TripletMarginLoss(margin=0.7), lambda: (ag.tensor(A), ag.tensor(P), ag.tensor(NG)), "triplet"),
    (nn.TripletMarginLoss(p=1, swap=True), lambda: (ag.tensor(A), ag.tensor(P), ag.tensor(NG)), "triplet_p1_swap"),
    (nn.PoissonNLLLoss(full=True), lambda: (ag.tensor(XP), ag.tensor(TP)), "poisson_full"),
    (nn.GaussianNLLLoss(), lambda: (ag.tensor(XG), ag.tensor(TG), ag.tensor(VG)), "gaussian"),
]


@pytest.mark.parametrize("i", range(len(MODULES)))
def test_modules_match_the_functional_form(i):
    mod, inputs, name = MODULES[i]
    _, ref, arrays = LOSSES[name]
    np.testing.assert_allclose(mod(*inputs()).numpy(), ref(*arrays).mean(), rtol=1e-11)
    mod.reduction = "none"
    np.testing.assert_allclose(mod(*inputs()).numpy(), ref(*arrays), rtol=1e-11)


def test_legacy_size_average_and_reduce():
    with pytest.warns(DeprecationWarning):
        m = nn.SoftMarginLoss(size_average=False)
    assert m.reduction == "sum"
    with pytest.warns(DeprecationWarning):
        out = F.margin_ranking_loss(ag.tensor(X1), ag.tensor(X2), ag.tensor(Y), reduce=False)
    np.testing.assert_allclose(out.numpy(), np.maximum(0, -Y * (X1 - X2)), rtol=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        nn.MultiMarginLoss(reduction="avg")


def test_unbatched_and_empty_inputs():
    np.testing.assert_allclose(F.multi_margin_loss(ag.tensor(XC[0]), ag.tensor(YMM[:1])).numpy(),
                               ref_multi_margin(XC[0], YMM[0]), rtol=1e-12)
    np.testing.assert_allclose(F.multilabel_margin_loss(ag.tensor(XC[1]), ag.tensor(YMLM[1])).numpy(),
                               ref_multilabel_margin(XC[1], YMLM[1]), rtol=1e-12)
    np.testing.assert_allclose(F.triplet_margin_loss(*(ag.tensor(a[0]) for a in (A, P, NG))).numpy(),
                               max(pdist(A[0], P[0]) - pdist(A[0], NG[0]) + 1, 0), rtol=1e-12)
    e = ag.zeros(0, 5)
    assert tuple(F.soft_margin_loss(e, e, reduction="none").shape) == (0, 5)
    assert float(F.multilabel_soft_margin_loss(e, e, reduction="sum")) == 0.0
    assert tuple(F.multi_margin_loss(e, ag.zeros(0, dtype=ag.int64), reduction="none").shape) == (0,)
    assert tuple(F.multilabel_margin_loss(e, ag.zeros(0, 5, dtype=ag.int64), reduction="none").shape) == (0,)


def test_gaussian_var_float_and_clamp():
    x, t = ag.tensor(XG, requires_grad=True), ag.tensor(TG)
    np.testing.assert_allclose(F.gaussian_nll_loss(x, t, 0.5, reduction="none").detach().numpy(),
                               ref_gaussian(XG, TG, 0.5), rtol=1e-12)
    v = ag.tensor(np.full((5, 4), 1e-9), requires_grad=True)  # clamped to eps in value, gradient passes through
    F.gaussian_nll_loss(x, t, v, reduction="sum").backward()
    np.testing.assert_allclose(v.grad.numpy(), 0.5 / 1e-6 - 0.5 * (XG - TG) ** 2 / 1e-12, rtol=1e-9)


def test_bad_arguments_name_the_op():
    x = ag.tensor(XC)
    with pytest.raises(ValueError, match="gaussian_nll_loss.*negative"):
        F.gaussian_nll_loss(x, x, -ag.ones(6, 5))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss.*incorrect size.*\[6, 2\]"):
        F.gaussian_nll_loss(x, x, ag.ones(6, 2))
    with pytest.raises(ValueError, match="multi_margin_loss.*p == 1"):
        F.multi_margin_loss(x, ag.tensor(YMM), p=3)
    with pytest.raises(ValueError, match=r"multi_margin_loss.*\[6, 5\]"):
        F.multi_margin_loss(x, ag.tensor(YMM), weight=ag.ones(6))
    with pytest.raises(ValueError, match=r"multilabel_margin_loss.*\[6, 4\]"):
        F.multilabel_margin_loss(x, ag.zeros(6, 4, dtype=ag.int64))
    with pytest.raises(RuntimeError, match=r"multilabel_margin_loss.*\[-1, 4\]"):
        F.multilabel_margin_loss(x, ag.full((6, 5), 7, dtype=ag.int64))
    with pytest.raises(ValueError, match="soft_margin_loss.*same shape"):
        F.soft_margin_loss(x, ag.ones(6, 4))
    with pytest.raises(RuntimeError, match="triplet_margin_loss.*same number of dimensions"):
        F.triplet_margin_loss(ag.ones(3, 4), ag.ones(3, 4), ag.ones(4))
    with pytest.raises(ValueError, match="TripletMarginLoss.*margin"):
        nn.TripletMarginLoss(margin=0.0)
    with pytest.raises(RuntimeError, match="margin_ranking_loss.*same dimension"):
        F.margin_ranking_loss(ag.ones(3), ag.ones(3), ag.ones(3, 1))


# ------------------------------------------------------------------------------------------------------ CTC
def ctc_brute(lp, target, blank=0):
    """-log of the sum over every length-T path that collapses (merge repeats, drop blanks) to ``target``."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
        if collapsed == list(target):
            total += math.exp(sum(lp[i, k] for i, k in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


def _log_probs(t, n, c, dtype=np.float64):
    z = R.standard_normal((t, n, c))
    return (z - np.log(np.exp(z).sum(-1, keepdims=True))).astype(dtype)


CASES = [  # (T, C, targets per batch element, input lengths, blank)
    (5, 3, [[1, 2], [1, 1], [2], []], [5, 4, 5, 3], 0),
    (6, 3, [[1, 1, 0], [0, 0], [1]], [6, 5, 2], 2),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("form", ["padded", "concatenated"])
def test_ctc_matches_the_sum_over_alignments(case, form):
    t, c, tg, il, blank = CASES[case]
    n = len(tg)
    lp = _log_probs(t, n, c)
    tl = [len(s) for s in tg]
    if form == "padded":
        targets = np.full((n, max(tl)), 1 if blank != 1 else 0)  # pad values are never read
        for i, s in enumerate(tg):
            targets[i, :len(s)] = s
    else:
        targets = np.array([k for s in tg for k in s])
    ref = np.array([ctc_brute(lp[:il[i], i], tg[i], blank) for i in range(n)])
    args = (ag.tensor(targets), ag.tensor(il), ag.tensor(tl))
    out = F.ctc_loss(ag.tensor(lp), *args, blank=blank, reduction="none")
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(F.ctc_loss(ag.tensor(lp), *args, blank=blank, reduction="sum").numpy(), ref.sum(),
                               rtol=1e-10)
    np.testing.assert_allclose(nn.CTCLoss(blank=blank)(ag.tensor(lp), *args).numpy(),
                               (ref / np.maximum(tl, 1)).mean(), rtol=1e-10)
    # lengths as Python sequences, float32
    out32 = F.ctc_loss(ag.tensor(lp.astype(np.float32)), ag.tensor(targets), tuple(il), tl, blank=blank,
                       reduction="none")
    assert out32.dtype == ag.float32
    np.testing.assert_allclose(out32.numpy(), ref, rtol=1e-5)


def test_ctc_gradcheck_and_impossible_alignments():
    lp = ag.tensor(_log_probs(5, 3, 4), requires_grad=True)
    targets, il, tl = ag.tensor([[1, 2, 2], [3, 1, 0], [2, 0, 0]]), ag.tensor([5, 4, 3]), ag.tensor([3, 2, 1])
    assert ag.gradcheck(lambda x: F.ctc_loss(x, targets, il, tl, reduction="sum"), (lp,))
    # "1 1" needs 3 frames (1, blank, 1): with 2 it is impossible -> inf, or 0 (and no NaN gradient) if zeroed
    x = ag.tensor(_log_probs(2, 1, 3), requires_grad=True)
    assert math.isinf(float(F.ctc_loss(x, ag.tensor([[1, 1]]), [2], [2], reduction="sum")))
    out = F.ctc_loss(x, ag.tensor([[1, 1]]), [2], [2], reduction="sum", zero_infinity=True)
    out.backward()
    assert float(out) == 0.0 and np.all(x.grad.numpy() == 0.0)


def test_ctc_with_zero_probabilities_has_no_nan():
    z = R.standard_normal((5, 1, 4))
    z[:, :, 3] = -np.inf  # a class that never occurs, and one frame that cannot emit label 1
    z[2, 0, 1] = -np.inf
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    x = ag.tensor(lp, requires_grad=True)
    out = F.ctc_loss(x, ag.tensor([[1, 2]]), [5], [2], reduction="sum")
    np.testing.assert_allclose(float(out), ctc_brute(lp[:, 0], [1, 2]), rtol=1e-10)
    out.backward()
    assert np.all(np.isfinite(x.grad.numpy()))  # PyTorch 2.13 gives NaN here


def test_ctc_unbatched():
    lp = _log_probs(5, 1, 3)[:, 0]
    out = F.ctc_loss(ag.tensor(lp), ag.tensor([1, 2]), ag.tensor(5), ag.tensor(2), reduction="none")
    assert out.ndim == 0
    np.testing.assert_allclose(out.numpy(), ctc_brute(lp, [1, 2]), rtol=1e-10)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_ctc_cuda_matches_cpu():
    lp = _log_probs(6, 2, 4, np.float32)
    targets, il, tl = np.array([[1, 3, 3], [2, 0, 0]]), [6, 5], [3, 1]
    res = []
    for dev in ("cpu", "cuda"):
        x = ag.tensor(lp, device=dev, requires_grad=True)
        out = F.ctc_loss(x, ag.tensor(targets, device=dev), il, tl)
        out.backward()
        res.append((out.detach().cpu().numpy(), x.grad.cpu().numpy()))
    # cpu targets and lengths with cuda log_probs (what cuDNN's path asks for in PyTorch)
    out = F.ctc_loss(ag.tensor(lp, device="cuda"), ag.tensor(targets.reshape(-1)[[0, 1, 2, 3]]), ag.tensor(il),
                     ag.tensor(tl))
    assert out.device.type == "cuda"
    np.testing.assert_allclose(out.cpu().numpy(), res[0][0], rtol=1e-5)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_ctc_bad_arguments():
    lp = ag.tensor(_log_probs(4, 2, 3))
    tg = ag.tensor([[1, 2], [1, 0]])
    with pytest.raises(RuntimeError, match="ctc_loss.*input_lengths.*at most 4"):
        F.ctc_loss(lp, tg, [5, 4], [2, 1])
    with pytest.raises(RuntimeError, match="ctc_loss.*blank"):
        F.ctc_loss(lp, tg, [4, 4], [2, 1], blank=3)
    with pytest.raises(RuntimeError, match=r"ctc_loss.*target values.*\[0, 3\)"):
        F.ctc_loss(lp, ag.tensor([[1, 5], [1, 0]]), [4, 4], [2, 1])
    with pytest.raises(RuntimeError, match="ctc_loss.*one length per batch element"):
        F.ctc_loss(lp, tg, [4], [2, 1])
    with pytest.raises(RuntimeError, match="ctc_loss.*exceeds"):
        F.ctc_loss(lp, tg, [4, 4], [3, 1])
    with pytest.raises(RuntimeError, match=r"ctc_loss.*\(T, N, C\)"):
        F.ctc_loss(ag.ones(4), tg, [4, 4], [2, 1])
    with pytest.raises(TypeError, match="ctc_loss.*integer"):
        F.ctc_loss(lp, tg.double(), [4, 4], [2, 1])


def test_against_torch_when_available():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional

    def both(ours, theirs, arrays, consts=()):
        a = [ag.tensor(x, requires_grad=True) for x in arrays]
        b = [torch.tensor(x, requires_grad=True) for x in arrays]
        ya = ours(*a, *[ag.tensor(i) for i in consts])
        yb = theirs(*b, *[torch.tensor(i) for i in consts])
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-9, atol=1e-12)
        ya.sum().backward()
        yb.sum().backward()
        for p, q in zip(a, b):
            if q.grad is None:  # a target PyTorch does not differentiate
                assert p.grad is None or not np.any(p.grad.numpy())
            else:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)

    both(F.margin_ranking_loss, tF.margin_ranking_loss, [X1, X2], [Y])
    both(F.hinge_embedding_loss, tF.hinge_embedding_loss, [X1], [Y])
    both(F.soft_margin_loss, tF.soft_margin_loss, [X1], [Y])
    both(lambda x, y: F.multilabel_soft_margin_loss(x, y, ag.tensor(W5)),
         lambda x, y: tF.multilabel_soft_margin_loss(x, y, torch.tensor(W5)), [XC], [YL])
    both(F.multilabel_margin_loss, tF.multilabel_margin_loss, [XC], [YMLM])
    both(lambda x, y: F.multi_margin_loss(x, y, p=2, margin=0.7, weight=ag.tensor(W5)),
         lambda x, y: tF.multi_margin_loss(x, y, p=2, margin=0.7, weight=torch.tensor(W5)), [XC], [YMM])
    both(lambda *t: F.triplet_margin_loss(*t, p=3, swap=True), lambda *t: tF.triplet_margin_loss(*t, p=3, swap=True),
         [A, P, NG])
    both(lambda x, t: F.poisson_nll_loss(x, t, full=True), lambda x, t: tF.poisson_nll_loss(x, t, full=True),
         [XP], [TP])
    both(lambda x, t: F.poisson_nll_loss(x, t, log_input=False),
         lambda x, t: tF.poisson_nll_loss(x, t, log_input=False), [np.abs(XP) + 0.1], [TP])
    both(lambda x, v: F.gaussian_nll_loss(x, ag.tensor(TG), v, full=True),
         lambda x, v: tF.gaussian_nll_loss(x, torch.tensor(TG), v, full=True), [XG, VG[:, :1]])
    # PyTorch's ctc_loss backward returns exp(log_probs) - posterior, the gradient of the logits under a
    # log_softmax, not d loss / d log_probs (which ours is: see the gradcheck); so both go through log_softmax
    z = R.standard_normal((7, 3, 5))
    for red_ in ("none", "mean", "sum"):
        for targets, tl in [(np.array([[1, 2, 2], [3, 4, 0], [1, 0, 0]]), [3, 2, 1]),
                            (np.array([1, 2, 2, 3, 4, 1]), [3, 2, 1])]:
            both(lambda x, tg, il, tl_, r=red_: F.ctc_loss(F.log_softmax(x, 2), tg, il, tl_, reduction=r),
                 lambda x, tg, il, tl_, r=red_: tF.ctc_loss(tF.log_softmax(x, 2), tg, il, tl_, reduction=r),
                 [z], [targets, np.array([7, 6, 4]), np.array(tl)])
