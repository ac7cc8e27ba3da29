"""CosineSimilarity, PairwiseDistance, Bilinear, EmbeddingBag, AlphaDropout, FeatureAlphaDropout, ChannelShuffle,
UpsamplingNearest2d, UpsamplingBilinear2d, Fold, Unfold, LocalResponseNorm, BatchNorm3d, SyncBatchNorm (modules and
nn.functional): NumPy forms of PyTorch's documented formulas (loops), float32 and float64, gradcheck in float64,
interpreted cuda vs cpu, bad arguments; PyTorch as an optional reference."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812
from tests.nn import nnref

R = np.random.default_rng(1500)
ALPHA_P = 1.7580993408473766


def u(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def ref_unfold(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ci in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for bi in range(oh):
                    for bj in range(ow):
                        out[:, (ci * k[0] + i) * k[1] + j, bi * ow + bj] = xp[:, ci, bi * s[0] + i * d[0],
                                                                              bj * s[1] + j * d[1]]
    return out


def ref_fold(cols, size, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, ck, length = cols.shape
    c = ck // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    img = np.zeros((n, c, hp, wp))
    for ci in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for b in range(length):
                    bi, bj = divmod(b, ow)
                    img[:, ci, bi * s[0] + i * d[0], bj * s[1] + j * d[1]] += cols[:, (ci * k[0] + i) * k[1] + j, b]
    return img[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def ref_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    div = np.zeros_like(x)
    for ci in range(c):
        lo, hi = max(0, ci - size // 2), min(c, ci + (size - 1) // 2 + 1)
        div[:, ci] = (x[:, lo:hi] ** 2).sum(1) / size
    return x / (k + alpha * div) ** beta


def ref_bag(idx_bags, w, mode, psw=None, pad=None):
    out = np.zeros((len(idx_bags), w.shape[1]))
    for b, (ids, ws) in enumerate(idx_bags):
        rows = [w[i] * (1.0 if psw is None else ws[j]) for j, i in enumerate(ids) if i != pad]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](np.stack(rows), 0)
    return out


def cos(a, b, dim=1, eps=1e-8):
    return (a * b).sum(dim) / np.sqrt(np.maximum((a * a).sum(dim) * (b * b).sum(dim), eps * eps))


W_BIL = u(3, 4, 5)
B_BIL = u(3)
EMB = u(10, 3)

# name -> (function of float tensors, NumPy reference, inputs)
OPS = {
    "cosine_similarity": (lambda a, b: nn.CosineSimilarity(dim=1)(a, b), cos, [u(4, 5, 3), u(4, 5, 3)]),
    "cosine_similarity_broadcast": (lambda a, b: F.cosine_similarity(a, b, -1), lambda a, b: cos(a, b, -1),
                                    [u(4, 5), u(1, 5)]),
    "pairwise_distance": (lambda a, b: nn.PairwiseDistance()(a, b),
                          lambda a, b: np.sqrt(((a - b + 1e-6) ** 2).sum(-1)), [u(6, 5), u(6, 5)]),
    "pairwise_distance_p3_keepdim": (lambda a, b: F.pairwise_distance(a, b, 3, 1e-3, True),
                                     lambda a, b: (np.abs(a - b + 1e-3) ** 3).sum(-1, keepdims=True) ** (1 / 3),
                                     [u(6, 5), u(5)]),
    "bilinear": (lambda a, b, w, bias: F.bilinear(a, b, w, bias),
                 lambda a, b, w, bias: np.einsum("...i,oij,...j->...o", a, w, b) + bias,
                 [u(2, 3, 4), u(2, 3, 5), W_BIL, B_BIL]),
    "channel_shuffle": (lambda x: nn.ChannelShuffle(3)(x),
                        lambda x: x.reshape(2, 3, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 2),
                        [u(2, 6, 3, 2)]),
    "unfold": (lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2)),
               lambda x: ref_unfold(x, (2, 3), (2, 1), (1, 2), (1, 2)), [u(2, 3, 5, 6)]),
    "unfold_module": (lambda x: nn.Unfold(2)(x), lambda x: ref_unfold(x, (2, 2)), [u(1, 2, 4, 3)]),
    "fold": (lambda c: F.fold(c, (5, 6), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2)),
             lambda c: ref_fold(c, (5, 6), (2, 3), (2, 1), (1, 2), (1, 2)), [u(2, 18, 20)]),
    "fold_module": (lambda c: nn.Fold((4, 3), 2)(c), lambda c: ref_fold(c, (4, 3), (2, 2)), [u(1, 8, 6)]),
    "local_response_norm": (lambda x: nn.LocalResponseNorm(3, alpha=0.5, beta=0.8, k=1.5)(x),
                            lambda x: ref_lrn(x, 3, 0.5, 0.8, 1.5), [u(2, 5, 3, 2)]),
    "local_response_norm_even_3d": (lambda x: F.local_response_norm(x, 4, alpha=0.3), lambda x: ref_lrn(x, 4, 0.3),
                                    [u(2, 6, 7)]),
    "upsampling_nearest": (lambda x: nn.UpsamplingNearest2d(size=(5, 7))(x),
                           lambda x: nnref.upsample_nearest(x, (5, 7)), [u(2, 3, 3, 4)]),
    "upsampling_bilinear": (lambda x: nn.UpsamplingBilinear2d(scale_factor=2)(x),
                            lambda x: nnref.upsample_bilinear(x, (6, 8), align_corners=True), [u(2, 3, 3, 4)]),
    "embedding_bag_2d_mean": (lambda w: F.embedding_bag(ag.tensor([[1, 2, 4], [4, 3, 9]], device=w.device), w),
                              lambda w: ref_bag([([1, 2, 4], None), ([4, 3, 9], None)], w, "mean"), [EMB]),
    "embedding_bag_offsets_sum_psw": (
        lambda w: F.embedding_bag(ag.tensor([1, 2, 4, 5, 4, 3, 2], device=w.device), w,
                                  ag.tensor([0, 2, 2, 5], device=w.device), mode="sum",
                                  per_sample_weights=ag.tensor([0.5, 1.0, -2.0, 1.5, 0.3, 0.7, 1.1], dtype=w.dtype,
                                                               device=w.device)),
        lambda w: ref_bag([([1, 2], [0.5, 1.0]), ([], []), ([4, 5, 4], [-2.0, 1.5, 0.3]), ([3, 2], [0.7, 1.1])], w,
                          "sum", psw=True), [EMB]),
    "embedding_bag_max_last_offset_padding": (
        lambda w: F.embedding_bag(ag.tensor([1, 2, 4, 5, 4, 3, 2], device=w.device), w,
                                  ag.tensor([0, 3, 3, 7], device=w.device), mode="max", include_last_offset=True,
                                  padding_idx=4),
        lambda w: ref_bag([([1, 2, 4], None), ([], None), ([5, 4, 3, 2], None)], w, "max", pad=4), [EMB]),
    "embedding_bag_mean_padding": (
        lambda w: F.embedding_bag(ag.tensor([[1, 2, 4], [4, 4, 4]], device=w.device), w, padding_idx=4),
        lambda w: ref_bag([([1, 2, 4], None), ([4, 4, 4], None)], w, "mean", pad=4), [EMB]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPS))
def test_forward_matches_the_formula(name, dtype):
    fn, ref, arrays = OPS[name]
    ts = [ag.tensor(a.astype(dtype)) for a in arrays]
    out = fn(*ts)
    assert out.dtype == ts[0].dtype
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out.numpy(), ref(*[a.astype(dtype).astype(np.float64) for a in arrays]), **tol)


@pytest.mark.parametrize("name", list(OPS))
def test_gradcheck_float64(name):
    fn, _, arrays = OPS[name]
    ts = tuple(ag.tensor(a, requires_grad=True) for a in arrays)
    assert ag.gradcheck(fn, ts)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
@pytest.mark.parametrize("name", list(OPS))
def test_cuda_matches_cpu(name):
    fn, _, arrays = OPS[name]
    res = []
    for dev in ("cpu", "cuda"):
        ts = [ag.tensor(a.astype(np.float32), device=dev, requires_grad=True) for a in arrays]
        out = fn(*ts)
        assert out.device.type == dev
        wt = ag.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(out.shape), device=dev)
        (out * wt).sum().backward()
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in ts])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fold_is_the_adjoint_of_unfold_and_inverts_it_with_divisor():
    x = u(2, 3, 7, 5)
    args = dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
    cols = F.unfold(ag.tensor(x), **args)
    c = u(*cols.shape)
    lhs = float((cols * ag.tensor(c)).sum())
    rhs = float((ag.tensor(x) * F.fold(ag.tensor(c), (7, 5), **args)).sum())
    assert abs(lhs - rhs) < 1e-10 * max(1.0, abs(lhs))
    ones = F.fold(F.unfold(ag.ones(1, 3, 7, 5, dtype=ag.float64), **args), (7, 5), **args)
    np.testing.assert_allclose((F.fold(cols, (7, 5), **args) / ones).numpy(), x, rtol=1e-12)
    # unbatched forms
    np.testing.assert_allclose(F.unfold(ag.tensor(x[0]), **args).numpy(), cols.numpy()[0], rtol=1e-12)
    np.testing.assert_allclose(F.fold(ag.tensor(c[0]), (7, 5), **args).numpy(),
                               F.fold(ag.tensor(c), (7, 5), **args).numpy()[0], rtol=1e-12)


def test_bilinear_module_init_and_shapes():
    ag.manual_seed(0)
    m = nn.Bilinear(20, 3, 4)
    assert tuple(m.weight.shape) == (4, 20, 3) and tuple(m.bias.shape) == (4,)
    bound = 1 / np.sqrt(20)
    for p in (m.weight, m.bias):
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound
    assert m.weight.detach().numpy().std() > bound / 3  # U(-b, b) has std b / sqrt(3)
    x1, x2 = u(7, 20), u(7, 3)
    np.testing.assert_allclose(m(ag.tensor(x1, dtype=ag.float32), ag.tensor(x2, dtype=ag.float32)).detach().numpy(),
                               np.einsum("bi,oij,bj->bo", x1, m.weight.detach().numpy(), x2) + m.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert nn.Bilinear(2, 3, 4, bias=False).bias is None
    assert tuple(m(ag.zeros(0, 20), ag.zeros(0, 3)).shape) == (0, 4)
    with pytest.raises(RuntimeError, match=r"bilinear.*\[7, 5\]"):
        m(ag.zeros(7, 5), ag.zeros(7, 3))


def test_embedding_bag_module_gradient_and_max_norm():
    ag.manual_seed(0)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0).double()
    assert np.all(m.weight.detach().numpy()[0] == 0)
    out = m(ag.tensor([0, 1, 1, 2, 5]), ag.tensor([0, 3]))
    out.sum().backward()
    counts = np.zeros(10)
    np.add.at(counts, [1, 1, 2, 5], 1.0)
    np.testing.assert_allclose(m.weight.grad.numpy(), np.repeat(counts[:, None], 3, 1), rtol=1e-12)
    w = ag.tensor(u(10, 3) * 5)
    F.embedding_bag(ag.tensor([[1, 2]]), w, max_norm=1.0)
    assert np.all(np.linalg.norm(w.numpy()[[1, 2]], axis=1) <= 1.0 + 1e-6)  # renormed in place like Embedding
    pre = nn.EmbeddingBag.from_pretrained(ag.tensor(EMB), mode="max")
    assert not pre.weight.requires_grad
    np.testing.assert_allclose(pre(ag.tensor([[1, 3]])).numpy(), EMB[[1, 3]].max(0, keepdims=True), rtol=1e-12)


def test_embedding_bag_per_sample_weights_gradient():
    idx, offs = ag.tensor([1, 2, 4, 5, 4, 3, 2]), ag.tensor([0, 2, 2, 5])
    w = ag.tensor(EMB, requires_grad=True)
    psw = ag.tensor(u(7), requires_grad=True)
    assert ag.gradcheck(lambda w_, p_: F.embedding_bag(idx, w_, offs, mode="sum", per_sample_weights=p_), (w, psw))


def test_embedding_bag_bad_arguments():
    w = ag.tensor(EMB)
    with pytest.raises(ValueError, match="embedding_bag.*offsets has to be None"):
        F.embedding_bag(ag.tensor([[1, 2]]), w, ag.tensor([0]))
    with pytest.raises(ValueError, match="embedding_bag.*offsets"):
        F.embedding_bag(ag.tensor([1, 2]), w)
    with pytest.raises(NotImplementedError, match="embedding_bag.*per_sample_weights.*sum"):
        F.embedding_bag(ag.tensor([[1, 2]]), w, per_sample_weights=ag.ones(1, 2, dtype=ag.float64))
    with pytest.raises(ValueError, match="embedding_bag.*mode"):
        F.embedding_bag(ag.tensor([[1, 2]]), w, mode="min")
    with pytest.raises(ValueError, match="EmbeddingBag.*padding_idx"):
        nn.EmbeddingBag(4, 2, padding_idx=7)


@pytest.mark.parametrize("feature", [False, True])
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_alpha_dropout_keeps_the_selu_statistics(feature, dev):
    if dev == "cuda" and not ag.cuda.is_available():
        pytest.skip("no cuda")
    p = 0.3
    ag.manual_seed(1)
    shape = (40, 50, 3) if feature else (20000,)
    x = ag.tensor(R.standard_normal(shape), device=dev, requires_grad=True)
    m = (nn.FeatureAlphaDropout if feature else nn.AlphaDropout)(p)
    y = m(x)
    a = 1 / np.sqrt((ALPHA_P ** 2 * p + 1) * (1 - p))
    xv, yv = x.detach().cpu().numpy(), y.detach().cpu().numpy()
    dropped = np.isclose(yv, -a * ALPHA_P * (1 - p), rtol=0, atol=1e-12)
    np.testing.assert_allclose(yv[~dropped], a * xv[~dropped] + a * ALPHA_P * p, rtol=1e-12)
    assert abs(dropped.mean() - p) < 0.04 and abs(yv.mean()) < 0.05 and abs(yv.std() - 1) < 0.05
    if feature:  # whole channels
        assert np.all(dropped.all(-1) | ~dropped.any(-1))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(dropped, 0.0, a), rtol=1e-12)
    ag.manual_seed(5)
    ref = m(x)
    ag.manual_seed(5)
    h = x * 1.0  # a non-leaf: in place under autograd gives the out-of-place values and gradients
    got = (nn.FeatureAlphaDropout if feature else nn.AlphaDropout)(p, inplace=True)(h)
    np.testing.assert_array_equal(h.detach().cpu().numpy(), ref.detach().cpu().numpy())
    x.grad = None
    got.sum().backward()
    ref_dropped = np.isclose(ref.detach().cpu().numpy(), -a * ALPHA_P * (1 - p), rtol=0, atol=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(ref_dropped, 0.0, a), rtol=1e-12)
    m.eval()
    assert m(x) is x
    xi = x.detach().clone()
    F.alpha_dropout(xi, 1.0, training=True, inplace=True)
    assert not np.any(xi.cpu().numpy())
    with pytest.raises(ValueError, match="alpha_dropout.*between 0 and 1"):
        F.alpha_dropout(x, 1.5, training=True)


def test_channel_shuffle_errors():
    with pytest.raises(RuntimeError, match="channel_shuffle.*divisible"):
        F.channel_shuffle(ag.ones(1, 5, 2), 2)
    with pytest.raises(RuntimeError, match="channel_shuffle.*3 dimensions"):
        F.channel_shuffle(ag.ones(4, 6), 2)
    assert repr(nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"


def test_fold_unfold_lrn_errors():
    with pytest.raises(RuntimeError, match="unfold.*3D or 4D"):
        F.unfold(ag.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="fold.*sliding blocks"):
        F.fold(ag.ones(1, 4, 5), (3, 3), 2)
    with pytest.raises(RuntimeError, match="fold.*divisible"):
        F.fold(ag.ones(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="unfold.*no block"):
        F.unfold(ag.ones(1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match="local_response_norm.*3D"):
        F.local_response_norm(ag.ones(2, 3), 2)


def test_batchnorm3d_and_syncbatchnorm():
    x = u(3, 4, 2, 3, 2)
    bn = nn.BatchNorm3d(4).double()
    np.testing.assert_allclose(bn(ag.tensor(x)).detach().numpy(), nnref.batch_norm_train(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean((0, 2, 3, 4)), rtol=1e-12)
    with pytest.raises(ValueError, match="BatchNorm3d.*5D"):
        bn(ag.tensor(x[0]))
    sb = nn.SyncBatchNorm(4).double()
    np.testing.assert_allclose(sb(ag.tensor(x)).detach().numpy(), nnref.batch_norm_train(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sb(ag.tensor(x[..., 0])).detach().numpy(), nnref.batch_norm_train(x[..., 0]),
                               rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="SyncBatchNorm.*at least 2D"):
        sb(ag.ones(4))
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.ReLU(), nn.BatchNorm1d(4)))
    model[1].running_mean.fill_(0.5)
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(conv[1], nn.SyncBatchNorm) and isinstance(conv[2][1], nn.SyncBatchNorm)
    assert conv[1].weight is model[1].weight and float(conv[1].running_mean[0]) == 0.5
    assert set(conv.state_dict()) == set(model.state_dict())
    bare = nn.BatchNorm2d(3, affine=False, track_running_stats=False)
    s = nn.SyncBatchNorm.convert_sync_batchnorm(bare)
    assert isinstance(s, nn.SyncBatchNorm) and s.weight is None and s.running_mean is None


def test_syncbatchnorm_warns_that_it_does_not_sync_across_ranks(monkeypatch):
    import sys
    import types

    fake = types.SimpleNamespace(is_initialized=lambda: True, get_world_size=lambda group=None: 2)
    monkeypatch.setitem(sys.modules, "autograd.distributed", fake)
    monkeypatch.setattr(nn.SyncBatchNorm, "_warned", False)
    with pytest.warns(UserWarning, match="SyncBatchNorm.*not synchronised"):
        nn.SyncBatchNorm(3)(ag.randn(4, 3))


@pytest.mark.parametrize("make", [lambda: nn.BatchNorm3d(3), lambda: nn.SyncBatchNorm(3)], ids=["bn3d", "sync"])
def test_batchnorm3d_cuda_matches_cpu(make):
    if not ag.cuda.is_available():
        pytest.skip("no cuda")
    x = u(2, 3, 2, 3, 2).astype(np.float32)
    res = []
    for dev in ("cpu", "cuda"):
        m = make().to(dev)
        t = ag.tensor(x, device=dev, requires_grad=True)
        out = m(t)
        (out * out).sum().backward()
        res.append([out.detach().cpu().numpy(), t.grad.cpu().numpy(), m.running_var.cpu().numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_deprecated_upsample_functions():
    x = u(1, 2, 3, 4)
    with pytest.warns(UserWarning, match="upsample_bilinear is deprecated"):
        out = F.upsample_bilinear(ag.tensor(x), scale_factor=2)
    np.testing.assert_allclose(out.numpy(), nnref.upsample_bilinear(x, (6, 8), align_corners=True), rtol=1e-12)
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        out = F.upsample_nearest(ag.tensor(x), size=(5, 7))
    np.testing.assert_allclose(out.numpy(), nnref.upsample_nearest(x, (5, 7)), rtol=1e-12)
    with pytest.warns(UserWarning, match="upsample is deprecated"):
        out = F.upsample(ag.tensor(x), size=(5, 7))
    np.testing.assert_allclose(out.numpy(), nnref.upsample_nearest(x, (5, 7)), rtol=1e-12)


def test_empty_batches():
    assert tuple(F.unfold(ag.zeros(0, 3, 5, 5), 2).shape) == (0, 12, 16)
    assert tuple(F.fold(ag.zeros(0, 12, 16), (5, 5), 2).shape) == (0, 3, 5, 5)
    assert tuple(F.local_response_norm(ag.zeros(0, 3, 4), 2).shape) == (0, 3, 4)
    assert tuple(F.channel_shuffle(ag.zeros(0, 4, 3), 2).shape) == (0, 4, 3)
    assert tuple(F.embedding_bag(ag.zeros(0, 3, dtype=ag.int64), ag.randn(5, 2)).shape) == (0, 2)
    empty_bags = F.embedding_bag(ag.zeros(0, dtype=ag.int64), ag.randn(5, 2), ag.tensor([0, 0]), mode="max")
    assert tuple(empty_bags.shape) == (2, 2) and not np.any(empty_bags.numpy())
    assert tuple(F.pairwise_distance(ag.zeros(0, 3), ag.zeros(0, 3)).shape) == (0,)
    assert tuple(F.alpha_dropout(ag.zeros(0, 3), 0.5, True).shape) == (0, 3)


def test_module_paths():
    from nn.modules import batchnorm, channelshuffle, distance, dropout, fold, linear, normalization, sparse, upsampling

    assert linear.Bilinear is nn.Bilinear and normalization.LocalResponseNorm is nn.LocalResponseNorm
    assert sparse.EmbeddingBag is nn.EmbeddingBag and dropout.AlphaDropout is nn.AlphaDropout
    assert dropout.FeatureAlphaDropout is nn.FeatureAlphaDropout and fold.Fold is nn.Fold
    assert distance.CosineSimilarity is nn.CosineSimilarity and upsampling.Upsample is nn.Upsample
    assert channelshuffle.ChannelShuffle is nn.ChannelShuffle and batchnorm.SyncBatchNorm is nn.SyncBatchNorm


def test_against_torch_when_available():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x = u(2, 3, 6, 5)
    pairs = [
        (lambda t: F.unfold(t, 3, 2, 1, 2), lambda t: tF.unfold(t, 3, 2, 1, 2), [x]),
        (lambda c: F.fold(c, (6, 5), 2, 1, 1, 2), lambda c: tF.fold(c, (6, 5), 2, 1, 1, 2), [u(2, 12, 12)]),
        (lambda t: F.local_response_norm(t, 3, 0.2), lambda t: tF.local_response_norm(t, 3, 0.2), [x]),
        (lambda t: F.local_response_norm(t, 2, 0.2), lambda t: tF.local_response_norm(t, 2, 0.2), [x[..., 0]]),
        (lambda t: F.channel_shuffle(t, 3), lambda t: tF.channel_shuffle(t, 3), [x]),
        (lambda t: nn.UpsamplingBilinear2d((7, 9))(t), lambda t: torch.nn.UpsamplingBilinear2d((7, 9))(t), [x]),
        (lambda a, b, w: F.bilinear(a, b, w), lambda a, b, w: tF.bilinear(a, b, w), [u(4, 4), u(4, 5), W_BIL]),
        (lambda a, b: F.pairwise_distance(a, b, 1.5), lambda a, b: tF.pairwise_distance(a, b, 1.5),
         [u(4, 5), u(4, 5)]),
    ]
    for mode in ("sum", "mean", "max"):
        pairs.append((lambda w, m=mode: F.embedding_bag(ag.tensor([1, 2, 4, 5, 4, 3]), w, ag.tensor([0, 2, 2]),
                                                        mode=m, padding_idx=5),
                      lambda w, m=mode: tF.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), w, torch.tensor([0, 2, 2]),
                                                         mode=m, padding_idx=5), [EMB]))
    for ours, theirs, arrays in pairs:
        a = [ag.tensor(v, requires_grad=True) for v in arrays]
        b = [torch.tensor(v, requires_grad=True) for v in arrays]
        ya, yb = ours(*a), theirs(*b)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-10, atol=1e-12)
        ya.sum().backward()
        yb.sum().backward()
        for p, q in zip(a, b):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_model_of_the_new_layers_trains():
    ag.manual_seed(0)
    x = ag.tensor(R.standard_normal((16, 2, 5, 5)), dtype=ag.float32)
    y = ag.tensor(R.integers(0, 3, 16))
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.SyncBatchNorm(4), nn.PReLU(4), nn.LocalResponseNorm(2),
                          nn.ChannelShuffle(2), nn.Unfold(2, stride=2), nn.Flatten(), nn.AlphaDropout(0.1),
                          nn.Linear(4 * 4 * 4, 6), nn.GLU(), nn.Hardswish())
    opt = nn.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.MultiMarginLoss()
    losses = []
    for _ in range(25):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0], losses


def _t(*shape):
    return ag.tensor(u(*shape), requires_grad=True)


GRADGRAD = {  # double backward comes free with composites: a sample across the three families
    "glu": (F.glu, lambda: (_t(3, 4),)),
    "celu": (lambda x: F.celu(x, 0.7), lambda: (_t(5),)),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3, 0.5), lambda: (_t(2, 4, 3),)),
    "fold": (lambda c: F.fold(c, (3, 3), 2), lambda: (_t(1, 4, 4),)),
    "bilinear": (lambda a, b: F.bilinear(a, b, ag.tensor(W_BIL[:2, :3])), lambda: (_t(2, 3), _t(2, 5))),
    "gaussian_nll": (lambda x, v: F.gaussian_nll_loss(x, ag.zeros(3, 2, dtype=ag.float64), v.abs() + 0.5),
                     lambda: (_t(3, 2), _t(3, 2))),
    "ctc": (lambda x: F.ctc_loss(F.log_softmax(x, 2), ag.tensor([[1, 2]]), [4], [2]), lambda: (_t(4, 1, 3),)),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_gradgradcheck(name):
    fn, inputs = GRADGRAD[name]
    assert ag.gradgradcheck(fn, inputs())
