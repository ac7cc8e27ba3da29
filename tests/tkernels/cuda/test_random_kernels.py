"""Random numbers and dropout on cuda (interpreted on CI): distributions (moments and ranges of ~16k samples drawn
in one program), reproducibility under ``tkernels.random.seed``, offsets advancing per call, values independent of
the block size (so the interpreter and a GPU draw the same streams), permutations (sort and Feistel paths), and
dropout whose backward regenerates the forward's mask. Each interpreted launch costs ~0.2 s (Philox is ~100
Triton ops): the tests draw few, large blocks."""

import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.triton import ops_dropout
from tkernels.backends.triton import random as backend

pytestmark = pytest.mark.skipif(not tk.cuda.is_available(), reason="needs (interpreted) cuda")

N = 16384  # samples per statistical check: one program with the block below


@pytest.fixture
def one_block(monkeypatch):
    """One program for N samples (the interpreter's cost is per program; values do not depend on the block)."""
    monkeypatch.setattr(backend, "ELEMENTWISE_BLOCK", N)
    monkeypatch.setattr(ops_dropout, "ELEMENTWISE_BLOCK", N)


def host(a):
    return np.asarray(a.numpy(), np.float64)


# ----------------------------------------------------------------------------------------- distributions
def test_uniform_moments_range_and_dtypes(one_block):
    tk.random.seed(1)
    u = tk.random.rand((N,), device="cuda")
    assert u.dtype == tk.float32 and u.device.type == "cuda"
    v = host(u)
    assert 0.0 <= v.min() and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.012 and abs(v.var() - 1 / 12) < 0.004
    assert len(np.unique(v)) > N * 0.99  # 24-bit values: few repeats
    w = host(tk.random.uniform(-2.0, 3.0, (128, 128), dtype=tk.float64, device="cuda"))
    assert -2.0 <= w.min() and w.max() < 3.0 and abs(w.mean() - 0.5) < 0.06
    assert abs(w.var() - 25 / 12) < 0.1
    assert len(np.unique(w)) == N  # 53-bit values
    for d in (tk.float16, tk.bfloat16):  # rounding to the half type never reaches `high`
        h = tk.random.uniform(0.0, 1.0, (N,), dtype=d, device="cuda")
        assert h.dtype == d
        hv = host(h)
        assert 0.0 <= hv.min() and hv.max() < 1.0 and abs(hv.mean() - 0.5) < 0.02
    assert (host(tk.random.uniform(2.5, 2.5, (7,), device="cuda")) == 2.5).all()


def test_normal_moments_and_dtypes(one_block):
    tk.random.seed(2)
    z = host(tk.random.randn((N,), device="cuda"))
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.05
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.015 and np.isfinite(z).all()
    assert abs(((z - z.mean()) ** 3).mean()) < 0.1  # symmetric
    y = host(tk.random.normal(2.0, 3.0, (N,), dtype=tk.float64, device="cuda"))
    assert abs(y.mean() - 2.0) < 0.1 and abs(y.std() - 3.0) < 0.08
    b = tk.random.randn((7, 3), dtype=tk.bfloat16, device="cuda")
    assert b.dtype == tk.bfloat16 and b.shape == (7, 3) and np.isfinite(host(b)).all()


def test_randint_uniform_bins_ranges_and_dtypes(one_block):
    tk.random.seed(3)
    r = tk.random.randint(-5, 7, (N,), device="cuda")
    assert r.dtype == tk.int64
    v = r.numpy()
    counts = np.bincount(v + 5, minlength=12)
    assert v.min() == -5 and v.max() == 6 and len(counts) == 12
    expect = N / 12
    assert ((counts - expect) ** 2 / expect).sum() < 40  # chi-square, 11 dof: p ~ 1e-5
    for d, lo, hi in ((tk.int8, -128, 128), (tk.uint8, 0, 256), (tk.int32, -(2**31), 2**31), (tk.int16, 5, 6)):
        s = tk.random.randint(lo, hi, (999,), dtype=d, device="cuda")
        assert s.dtype == d
        sv = s.numpy().astype(np.int64)
        assert lo <= sv.min() and sv.max() < hi
    big = tk.random.randint(0, 2**40, (4096,), device="cuda").numpy()  # two words per element
    assert big.max() < 2**40 and abs(big.mean() / 2**40 - 0.5) < 0.03 and big.max() > 2**39
    full = tk.random.randint(-(2**63), 2**63, (4096,), device="cuda").numpy()  # span 2**64: the raw word
    assert 0.45 < (full < 0).mean() < 0.55 and len(np.unique(full)) == 4096
    f = tk.random.randint(0, 10, (5,), dtype=tk.float32, device="cuda").numpy()
    assert f.dtype == np.float32 and (f == np.floor(f)).all() and (0 <= f).all() and (f < 10).all()


def test_bernoulli_probabilities_broadcast_and_dtypes(one_block):
    tk.random.seed(4)
    b = tk.random.bernoulli(0.3, (N,), device="cuda")
    assert b.dtype == tk.float32 and set(np.unique(host(b))) <= {0.0, 1.0}
    assert abs(host(b).mean() - 0.3) < 0.015
    assert host(tk.random.bernoulli(0.0, (99,), device="cuda")).max() == 0.0
    assert host(tk.random.bernoulli(1.0, (99,), dtype=tk.bool, device="cuda")).min() == 1.0
    # an array of probabilities, strided and broadcast against the output shape
    p = tk.asarray(np.array([[0.1, 0.0, 0.5, 0.9]] * 3, np.float32).T, device="cuda")  # (4, 3) transposed view
    out = tk.random.bernoulli(p[:, :1], (4, 4096), dtype=tk.int32, device="cuda")
    assert out.dtype == tk.int32 and out.shape == (4, 4096)
    rates = host(out).mean(axis=1)
    np.testing.assert_allclose(rates, [0.1, 0.0, 0.5, 0.9], atol=0.03)
    assert rates[1] == 0.0
    same = tk.random.bernoulli(tk.asarray(np.full((5, 7), 0.5, np.float64), device="cuda"))
    assert same.dtype == tk.float64 and same.shape == (5, 7)


# --------------------------------------------------------------------------- streams: seeds and offsets
def test_seed_reproduces_and_calls_advance_the_offset():
    tk.random.seed(11)
    a, b = tk.random.rand((64,), device="cuda").numpy(), tk.random.randn((64,), device="cuda").numpy()
    assert tk.random.default_generator.philox_offset == 128
    tk.random.seed(11)
    a2, b2 = tk.random.rand((64,), device="cuda").numpy(), tk.random.randn((64,), device="cuda").numpy()
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    c = tk.random.rand((64,), device="cuda").numpy()
    assert not np.array_equal(a, c)  # the next call draws further along the stream
    tk.random.seed(12)
    assert not np.array_equal(a, tk.random.rand((64,), device="cuda").numpy())
    g = tk.random.Generator(11)  # its own stream, equal to the default one for the same seed
    np.testing.assert_array_equal(tk.random.rand((64,), device="cuda", generator=g).numpy(), a)
    state = g.get_state()
    d = tk.random.randint(0, 100, (9,), device="cuda", generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(tk.random.randint(0, 100, (9,), device="cuda", generator=g).numpy(), d)
    assert g.philox_offset == 64 + 12  # 9 words rounded up to a whole Philox counter


def test_values_depend_on_the_stream_position_not_the_block(monkeypatch):
    """Element i uses stream word offset + i: the interpreter's blocks and a GPU's give the same values, and a
    call drawing after another continues the stream rather than repeating it."""
    g = tk.random.Generator(5)
    whole = tk.random.rand((40,), device="cuda", generator=g).numpy()
    monkeypatch.setattr(backend, "ELEMENTWISE_BLOCK", 16)  # three programs
    g.manual_seed(5)
    np.testing.assert_array_equal(tk.random.rand((40,), device="cuda", generator=g).numpy(), whole)
    g.manual_seed(5)
    first = tk.random.rand((20,), device="cuda", generator=g).numpy()
    second = tk.random.rand((20,), device="cuda", generator=g).numpy()
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)
    g.manual_seed(5)
    n64 = tk.random.rand((20,), dtype=tk.float64, device="cuda", generator=g).numpy()  # two words per element
    assert g.philox_offset == 40 and np.abs(n64 - whole[::2]).max() < 2**-24  # words 2k (high), 2k + 1


def test_philox_known_answer():
    """Random123's Philox4x32-10 known-answer vector: counter 0, key 0 (randint over 2**32 returns the words)."""
    words = tk.random.randint(0, 2**32, (4,), device="cuda", generator=tk.random.Generator(0)).numpy()
    assert [hex(w) for w in words.tolist()] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]


def test_cuda_and_cpu_streams_differ_like_pytorch():
    tk.random.seed(0)
    c = tk.random.rand((8,)).numpy()
    tk.random.seed(0)
    g = tk.random.rand((8,), device="cuda").numpy()
    assert not np.array_equal(c, g)


# -------------------------------------------------------------------------------------------- permutation
def test_permutation_sort_path():
    """n <= PERMUTATION_SORT_MAX: the argsort of the stream's words (31-bit keys) in one program, so the
    permutation is as uniform as the words are; reproducible under seed; the next call differs."""
    g = tk.random.Generator(6)
    words = tk.random.randint(0, 2**32, (100,), device="cuda", generator=g).numpy()
    g.manual_seed(6)
    p = tk.random.permutation(100, device="cuda", generator=g)
    assert p.dtype == tk.int64 and p.shape == (100,) and g.philox_offset == 100
    np.testing.assert_array_equal(p.numpy(), np.argsort(words >> 1, kind="stable"))
    tk.random.seed(6)
    a = tk.random.permutation(20, dtype=tk.int32, device="cuda").numpy()
    assert a.dtype == np.int32
    np.testing.assert_array_equal(np.sort(a), np.arange(20))
    b = tk.random.permutation(20, dtype=tk.int32, device="cuda").numpy()
    assert not np.array_equal(a, b)
    tk.random.seed(6)
    np.testing.assert_array_equal(tk.random.permutation(20, dtype=tk.int32, device="cuda").numpy(), a)
    assert tk.random.permutation(0, device="cuda").shape == (0,)
    np.testing.assert_array_equal(tk.random.permutation(1, device="cuda").numpy(), [0])


def test_permutation_feistel_path(monkeypatch):
    monkeypatch.setattr(backend, "PERMUTATION_SORT_MAX", 64)
    tk.random.seed(7)
    for n in (300, 65):  # odd and even bit widths (unbalanced and balanced rounds), cycle walking
        v = tk.random.permutation(n, dtype=tk.int32, device="cuda").numpy()
        assert v.dtype == np.int32
        np.testing.assert_array_equal(np.sort(v), np.arange(n))
        assert (v != np.arange(n)).mean() > 0.9
        assert abs(np.corrcoef(v, np.arange(n))[0, 1]) < 0.3


# ----------------------------------------------------------------------------------------------- dropout
def test_dropout_forward_scales_and_drops_p(one_block):
    rng = np.random.default_rng(0)
    xn = rng.uniform(1.0, 2.0, (128, 256)).astype(np.float32)
    x = tk.asarray(xn, device="cuda")[:, ::2]  # strided input, N elements
    tk.random.seed(8)
    y, mask = tk.ops.dropout(x, 0.3, return_mask=True)
    assert isinstance(mask, ops_dropout.PhiloxDropoutMask) and mask.shape == (128, 128) and mask.p == 0.3
    yn = y.numpy()
    kept = yn != 0
    assert abs(kept.mean() - 0.7) < 0.015
    np.testing.assert_allclose(yn[kept], xn[:, ::2][kept] / np.float32(0.7), rtol=1e-6)
    np.testing.assert_array_equal(mask.keep().numpy(), kept)
    tk.random.seed(8)
    np.testing.assert_array_equal(tk.ops.dropout(x, 0.3).numpy(), yn)  # reproducible
    assert not np.array_equal(tk.ops.dropout(x, 0.3).numpy(), yn)  # the next call: another mask
    assert tk.ops.dropout(x, 0.3, training=False) is x
    assert (tk.ops.dropout(x, 1.0).numpy() == 0).all()


def test_dropout_backward_regenerates_the_same_mask():
    rng = np.random.default_rng(1)
    for d, tol in ((tk.float32, 1e-6), (tk.float64, 1e-15), (tk.float16, 1e-3), (tk.bfloat16, 1e-2)):
        x = tk.asarray(rng.uniform(1.0, 2.0, (33, 65)), device="cuda").astype(d)
        y, mask = tk.ops.dropout(x, 0.25, return_mask=True)
        assert y.dtype == d
        kept = host(y) != 0
        np.testing.assert_allclose(host(y)[kept], host(x)[kept] / 0.75, rtol=tol)
        gn = rng.standard_normal((65, 33))
        g = tk.asarray(gn, device="cuda").astype(d).mT  # a transposed (strided) gradient
        dx = tk.ops.dropout_backward(g, mask, 0.25)
        assert dx.dtype == d and dx.shape == (33, 65)
        want = host(g) * kept / 0.75
        np.testing.assert_allclose(host(dx), want, rtol=tol, atol=0)
        np.testing.assert_array_equal(host(dx) != 0, kept & (host(g) != 0))


def test_dropout_backward_refuses_foreign_masks():
    x = tk.asarray(np.ones((4, 5), np.float32), device="cuda")
    _, mask = tk.ops.dropout(x, 0.5, return_mask=True)
    with pytest.raises(ValueError, match=r"dropout_backward: the mask was drawn for shape \(4, 5\)"):
        tk.ops.dropout_backward(tk.asarray(np.ones((5, 4), np.float32), device="cuda"), mask, 0.5)
    with pytest.raises(TypeError, match="dropout_backward: on cuda the mask must be the PhiloxDropoutMask"):
        tk.ops.dropout_backward(x, object(), 0.5)
    _, cpu_mask = tk.ops.dropout(tk.ones((4, 5)), 0.5, return_mask=True)
    with pytest.raises(TypeError, match="dropout_backward: on cpu the mask must be the bool Array"):
        tk.ops.dropout_backward(tk.ones((4, 5)), mask, 0.5)
    with pytest.raises(ValueError, match="dropout_backward: mask .* must be the bool mask"):
        tk.ops.dropout_backward(x, cpu_mask, 0.5)


def test_dropout_backward_accepts_an_explicit_bool_mask():
    """The cpu contract works on cuda too: a bool Array mask (here strided) is read instead of regenerated."""
    rng = np.random.default_rng(3)
    keep = rng.random((5, 9)) < 0.6
    g = rng.standard_normal((5, 9)).astype(np.float32)
    m = tk.asarray(np.ascontiguousarray(keep.T), device="cuda").mT
    got = tk.ops.dropout_backward(tk.asarray(g, device="cuda"), m, 0.4).numpy()
    np.testing.assert_allclose(got, g * keep / np.float32(0.6), rtol=1e-6)
    np.testing.assert_array_equal(got, tk.ops.dropout_backward(tk.asarray(g), tk.asarray(keep), 0.4).numpy())


def test_autograd_dropout_on_cuda_seeds_backward_and_double_backward():
    import autograd as ag

    rng = np.random.default_rng(2)
    x = ag.tensor(rng.uniform(1.0, 2.0, (20, 30)).astype(np.float32), device="cuda", requires_grad=True)
    ag.manual_seed(3)
    y = ag.dropout(x, 0.25)
    ag.manual_seed(3)
    y2 = ag.dropout(x, 0.25)
    yn = y.detach().cpu().numpy()
    np.testing.assert_array_equal(yn, y2.detach().cpu().numpy())
    kept = yn != 0
    y.backward(ag.ones_like(y))
    np.testing.assert_allclose(x.grad.cpu().numpy(), kept / np.float32(0.75), rtol=1e-6)
    g = ag.tensor(rng.standard_normal((20, 30)).astype(np.float32), device="cuda", requires_grad=True)
    (gx,) = ag.grad(y2, x, g, create_graph=True)
    assert gx.grad_fn.name() == "NativeDropoutBackwardBackward0"
    (gg,) = ag.grad(gx.sum(), g)  # linear in the input: the same mask again
    np.testing.assert_allclose(gg.cpu().numpy(), kept / np.float32(0.75), rtol=1e-6)


# ------------------------------------------------------------------------------------ on a real GPU only
@pytest.mark.gpu
def test_gpu_large_statistics_and_determinism():
    n = 1 << 24
    tk.random.seed(123)
    u = tk.random.rand((n,), device="cuda")
    z = tk.random.randn((n,), device="cuda")
    r = tk.random.randint(0, 1000, (n,), device="cuda")
    uv, zv, rv = host(u), host(z), r.numpy()
    assert abs(uv.mean() - 0.5) < 5e-4 and abs(uv.var() - 1 / 12) < 2e-4 and uv.max() < 1.0
    assert abs(zv.mean()) < 1e-3 and abs(zv.var() - 1) < 2e-3 and abs((np.abs(zv) < 2).mean() - 0.9545) < 5e-4
    counts = np.bincount(rv, minlength=1000)
    assert ((counts - n / 1000) ** 2 / (n / 1000)).sum() < 1200  # chi-square, 999 dof
    tk.random.seed(123)
    np.testing.assert_array_equal(tk.random.rand((n,), device="cuda").numpy(), uv.astype(np.float32))
    p = tk.random.permutation(1 << 20, device="cuda").numpy()  # Feistel path
    np.testing.assert_array_equal(np.sort(p), np.arange(1 << 20))
    x = tk.random.randn((4096, 4096), dtype=tk.bfloat16, device="cuda")
    y, mask = tk.ops.dropout(x, 0.1, return_mask=True)
    kept = host(y) != 0
    assert abs(kept.mean() - 0.9) < 1e-3
    dx = tk.ops.dropout_backward(tk.ones_like(x), mask, 0.1)
    np.testing.assert_array_equal(host(dx) != 0, kept)


@pytest.mark.gpu
def test_gpu_matches_the_interpreter_stream():
    """The same (seed, offset) gives the same words on a GPU as in the interpreter (pinned values)."""
    g = tk.random.Generator(2024)
    got = tk.random.randint(0, 2**31, (8,), device="cuda", generator=g).numpy()
    np.testing.assert_array_equal(got, PINNED_RANDINT)


# tk.random.randint(0, 2**31, (8,), device="cuda", generator=Generator(2024)) in the interpreter
PINNED_RANDINT = [1296414137, 576735267, 2114409692, 179521097, 743639671, 936075833, 1928217937, 996276266]
