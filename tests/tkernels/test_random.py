"""Random numbers: seeding, generators, states, distributions (moments within 5 sigma), and bad arguments."""

import numpy as np
import pytest

import tkernels as tk
from tkernels import random as rnd

N = 100_000


@pytest.fixture(autouse=True)
def _restore_default_stream():
    state = rnd.get_state()
    yield
    rnd.set_state(state)


def test_same_seed_same_values_different_seed_different_values():
    rnd.seed(1)
    a = rnd.rand((100,)).numpy().copy()
    b = rnd.randn((10,)).numpy().copy()
    rnd.seed(1)
    np.testing.assert_array_equal(rnd.rand((100,)).numpy(), a)
    np.testing.assert_array_equal(rnd.randn((10,)).numpy(), b)
    rnd.seed(2)
    assert not np.array_equal(rnd.rand((100,)).numpy(), a)
    rnd.manual_seed(1)
    np.testing.assert_array_equal(rnd.rand((100,)).numpy(), a)
    assert rnd.initial_seed() == 1


def test_consecutive_draws_differ():
    rnd.seed(0)
    a = rnd.rand((50,)).numpy().copy()
    assert not np.array_equal(rnd.rand((50,)).numpy(), a)


def test_generator_is_independent_of_the_default_stream():
    rnd.seed(7)
    ref = rnd.rand((20,)).numpy().copy()
    rnd.seed(7)
    g = rnd.Generator(123)
    rnd.rand((1000,), generator=g)
    rnd.randn((10,), generator=g)
    np.testing.assert_array_equal(rnd.rand((20,)).numpy(), ref)  # the default stream did not move
    g1 = rnd.Generator(5)
    g2 = rnd.Generator(5)
    np.testing.assert_array_equal(rnd.randn((30,), generator=g1).numpy(), rnd.randn((30,), generator=g2).numpy())
    assert g1.initial_seed() == 5


def test_get_state_set_state_round_trip():
    rnd.seed(3)
    rnd.rand((5,))
    st = rnd.get_state()
    a = rnd.randn((40,)).numpy().copy()
    b = rnd.randint(0, 100, (40,)).numpy().copy()
    rnd.set_state(st)
    np.testing.assert_array_equal(rnd.randn((40,)).numpy(), a)
    np.testing.assert_array_equal(rnd.randint(0, 100, (40,)).numpy(), b)
    g = rnd.Generator(9)
    gs = g.get_state()
    x = rnd.rand((8,), generator=g).numpy().copy()
    g.set_state(gs)
    np.testing.assert_array_equal(rnd.rand((8,), generator=g).numpy(), x)


def test_set_state_refuses_garbage():
    with pytest.raises(ValueError, match="set_state"):
        rnd.set_state({})
    with pytest.raises(ValueError, match="set_state"):
        rnd.set_state({"seed": "x", "numpy": None, "philox_offset": 0})


def test_philox_offset_advances_by_counters():
    g = rnd.Generator(1)
    assert g.philox_next(5) == (1, 0)
    assert g.philox_next(1) == (1, 8)
    assert g.philox_offset == 12


# ----------------------------------------------------------------------------------------- distributions
@pytest.mark.parametrize("dtype", [tk.float32, tk.float64, tk.float16, tk.bfloat16], ids=str)
def test_rand_in_unit_interval(dtype):
    x = rnd.rand((N,), dtype=dtype, generator=rnd.Generator(0))
    assert x.dtype is dtype and x.shape == (N,)
    v = x.numpy().astype(np.float64)
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 5 * np.sqrt(1 / 12 / N) + 2e-3  # + rounding of half types


def test_rand_default_dtype_and_shapes():
    assert rnd.rand(3).shape == (3,)
    assert rnd.rand(()).shape == ()
    assert rnd.rand((2, 0)).shape == (2, 0)
    assert rnd.rand((2, 3)).dtype is tk.float32


def test_uniform_bounds_and_mean():
    x = rnd.uniform(2.0, 5.0, (N,), generator=rnd.Generator(1)).numpy()
    assert x.min() >= 2.0 and x.max() < 5.0
    assert abs(x.mean() - 3.5) < 5 * 3 / np.sqrt(12 * N)
    h = rnd.uniform(-1, 1, (N,), dtype=tk.float16, generator=rnd.Generator(2)).numpy()
    assert h.min() >= -1 and h.max() < 1
    c = rnd.uniform(4.0, 4.0, (3,)).numpy()
    np.testing.assert_array_equal(c, [4.0, 4.0, 4.0])


def test_randn_moments():
    x = rnd.randn((N,), generator=rnd.Generator(3)).numpy().astype(np.float64)
    assert abs(x.mean()) < 5 / np.sqrt(N)
    assert abs(x.std() - 1) < 5 * np.sqrt(0.5 / N)
    assert rnd.randn((2,), dtype=tk.float64).dtype is tk.float64


def test_normal_with_mean_and_std():
    x = rnd.normal(3.0, 2.0, (N,), generator=rnd.Generator(4)).numpy().astype(np.float64)
    assert abs(x.mean() - 3.0) < 5 * 2 / np.sqrt(N)
    assert abs(x.std() - 2.0) < 5 * 2 * np.sqrt(0.5 / N)
    np.testing.assert_array_equal(rnd.normal(1.5, 0.0, (4,)).numpy(), [1.5] * 4)


def test_normal_with_array_parameters():
    mean = tk.asarray([0.0, 100.0])
    x = rnd.normal(mean, 1.0, (N // 10, 2), generator=rnd.Generator(5))
    assert x.shape == (N // 10, 2)
    m = x.numpy().astype(np.float64).mean(axis=0)
    assert abs(m[0]) < 5 / np.sqrt(N // 10) and abs(m[1] - 100) < 5 / np.sqrt(N // 10)
    s = rnd.normal(0.0, tk.asarray([1.0, 10.0]), (N // 10, 2), generator=rnd.Generator(6)).numpy().std(axis=0)
    assert abs(s[0] - 1) < 0.05 and abs(s[1] - 10) < 0.5


def test_randint_bounds_and_dtype():
    x = rnd.randint(-3, 4, (N,), generator=rnd.Generator(7))
    assert x.dtype is tk.int64
    v = x.numpy()
    assert v.min() == -3 and v.max() == 3
    counts = np.bincount(v + 3, minlength=7)
    assert np.all(np.abs(counts - N / 7) < 5 * np.sqrt(N / 7))
    y = rnd.randint(5, shape=(1000,))
    assert y.numpy().min() >= 0 and y.numpy().max() < 5
    z = rnd.randint(3, 5, (100,), dtype=tk.int8)
    assert z.dtype is tk.int8 and set(z.tolist()) <= {3, 4}


def test_permutation_of_n():
    p = rnd.permutation(50, generator=rnd.Generator(8))
    assert p.dtype is tk.int64
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(50))
    assert not np.array_equal(p.numpy(), np.arange(50))
    assert rnd.permutation(0).shape == (0,)


def test_permutation_of_an_array_permutes_rows():
    x = tk.arange(20).reshape(10, 2)
    p = rnd.permutation(x, generator=rnd.Generator(9))
    assert p.shape == (10, 2)
    rows = p.numpy()
    np.testing.assert_array_equal(rows[:, 1] - rows[:, 0], np.ones(10))  # rows stay whole
    np.testing.assert_array_equal(np.sort(rows[:, 0]), np.arange(0, 20, 2))
    assert not np.array_equal(rows, x.numpy())
    np.testing.assert_array_equal(x.numpy(), np.arange(20).reshape(10, 2))  # input untouched


def test_bernoulli_scalar_probability():
    x = rnd.bernoulli(0.3, (N,), generator=rnd.Generator(10))
    assert x.dtype is tk.float32
    v = x.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    assert abs(v.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / N)
    assert rnd.bernoulli(0.0, (100,)).numpy().sum() == 0
    assert rnd.bernoulli(1.0, (100,)).numpy().sum() == 100
    assert rnd.bernoulli(0.5, (3,), dtype=tk.bool).dtype is tk.bool


def test_bernoulli_array_probability():
    p = tk.asarray([0.0, 1.0, 0.25], dtype=tk.float64)
    x = rnd.bernoulli(p.broadcast_to((N // 10, 3)), generator=rnd.Generator(11))
    assert x.dtype is tk.float64 and x.shape == (N // 10, 3)
    m = x.numpy().mean(axis=0)
    assert m[0] == 0.0 and m[1] == 1.0
    assert abs(m[2] - 0.25) < 5 * np.sqrt(0.25 * 0.75 / (N // 10))
    y = rnd.bernoulli(tk.asarray([0.0, 1.0]), shape=(4, 2))
    np.testing.assert_array_equal(y.numpy(), [[0.0, 1.0]] * 4)
    assert rnd.bernoulli(tk.asarray([1.0]), dtype=tk.bool).tolist() == [True]


# -------------------------------------------------------------------------------------------------- errors
def test_errors():
    with pytest.raises(ValueError, match="uniform.*low"):
        rnd.uniform(2, 1, (3,))
    with pytest.raises(ValueError, match="randint.*low"):
        rnd.randint(5, 3, (3,))
    with pytest.raises(ValueError, match="randint.*low"):
        rnd.randint(3, 3, (3,))
    with pytest.raises(ValueError, match="bernoulli.*p"):
        rnd.bernoulli(1.5, (3,))
    with pytest.raises(ValueError, match="bernoulli.*p"):
        rnd.bernoulli(-0.1, (3,))
    with pytest.raises(ValueError, match="normal.*std"):
        rnd.normal(0.0, -1.0, (3,))
    with pytest.raises(TypeError, match="rand.*floating"):
        rnd.rand((3,), dtype=tk.int32)
    with pytest.raises(TypeError, match="randn.*floating"):
        rnd.randn((3,), dtype=tk.bool)
    with pytest.raises(ValueError, match="permutation"):
        rnd.permutation(-1)
    with pytest.raises(TypeError, match="generator"):
        rnd.rand((2,), generator=5)
    with pytest.raises(ValueError, match="rand.*negative"):
        rnd.rand((2, -1))


def test_normal_refuses_nan_std():
    with pytest.raises(ValueError, match="normal.*std"):
        rnd.normal(0.0, float("nan"), (3,))


def test_normal_refuses_negative_std_in_an_array():
    with pytest.raises(ValueError, match="normal.*std"):
        rnd.normal(0.0, tk.asarray([1.0, -1.0]))


def test_bernoulli_refuses_array_probabilities_outside_unit_interval():
    with pytest.raises(ValueError, match="bernoulli.*p"):
        rnd.bernoulli(tk.asarray([0.0, 1.5]))
    with pytest.raises(ValueError, match="bernoulli.*p"):
        rnd.bernoulli(tk.asarray([-0.5, 0.5]))


def test_randint_range_must_fit_the_dtype():
    # values >= 256 would wrap silently in uint8 (PyTorch refuses the range)
    with pytest.raises(ValueError, match="randint.*uint8"):
        rnd.randint(0, 300, (100,), dtype=tk.uint8)
    with pytest.raises(ValueError, match="randint.*int8"):
        rnd.randint(-200, 0, (100,), dtype=tk.int8)
    assert rnd.randint(0, 256, (10,), dtype=tk.uint8).dtype is tk.uint8  # [0, 255] fits


def test_randint_non_integer_bounds_name_the_op():
    with pytest.raises(TypeError, match="randint"):
        rnd.randint(0.5, 3, (2,))


# ---------------------------------------------------------------------------------------- NumPy's names
def _np_gen(seed):
    return np.random.Generator(np.random.PCG64(seed))


def test_numpy_names_draw_numpy_values_on_cpu():
    """``size``/``loc``/``scale`` as in ``numpy.random.Generator``: on cpu the same PCG64 stream, so NumPy's values."""
    f64 = dict(dtype=tk.float64)
    got = rnd.normal(loc=2.0, scale=3.0, size=(4, 7), generator=rnd.Generator(11), **f64).numpy()
    np.testing.assert_allclose(got, _np_gen(11).normal(2.0, 3.0, (4, 7)), rtol=1e-12)
    got = rnd.uniform(-1.0, 5.0, size=(129,), generator=rnd.Generator(12), **f64).numpy()
    np.testing.assert_allclose(got, _np_gen(12).uniform(-1.0, 5.0, (129,)), rtol=1e-12)
    got = rnd.rand(size=(3, 1), generator=rnd.Generator(13), **f64).numpy()
    np.testing.assert_array_equal(got, _np_gen(13).random((3, 1)))
    got = rnd.randn(size=7, generator=rnd.Generator(14), **f64).numpy()
    np.testing.assert_array_equal(got, _np_gen(14).standard_normal(7))
    got = rnd.randint(-5, 9, size=(2, 127), generator=rnd.Generator(15)).numpy()
    np.testing.assert_array_equal(got, _np_gen(15).integers(-5, 9, (2, 127)))
    got = rnd.bernoulli(0.3, size=(1000,), generator=rnd.Generator(16), **f64).numpy()
    np.testing.assert_array_equal(got, _np_gen(16).random(1000) < 0.3)


DEVICES = ["cpu"] + (["cuda"] if tk.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [
    (lambda **k: rnd.normal(1.5, 2.0, (3, 5), **k), lambda **k: rnd.normal(loc=1.5, scale=2.0, size=(3, 5), **k)),
    (lambda **k: rnd.normal(shape=(7,), **k), lambda **k: rnd.normal(size=7, **k)),
    (lambda **k: rnd.normal(tk.asarray([0.0, 9.0], device=k["device"]), 1.0, (3, 2), **k),
     lambda **k: rnd.normal(size=(3, 2), loc=tk.asarray([0.0, 9.0], device=k["device"]), **k)),
    (lambda **k: rnd.normal(0.0, 1.0, (), **k), lambda **k: rnd.normal(**k)),
    (lambda **k: rnd.uniform(2.0, 3.0, (0, 3), **k), lambda **k: rnd.uniform(2.0, 3.0, size=(0, 3), **k)),
    (lambda **k: rnd.uniform(shape=(1,), **k), lambda **k: rnd.uniform(size=1, **k)),
    (lambda **k: rnd.rand((2, 129), **k), lambda **k: rnd.rand(size=(2, 129), **k)),
    (lambda **k: rnd.randn((127,), **k), lambda **k: rnd.randn(size=127, **k)),
    (lambda **k: rnd.randint(3, 8, (9,), **k), lambda **k: rnd.randint(3, 8, size=9, **k)),
    (lambda **k: rnd.randint(4, shape=(5,), **k), lambda **k: rnd.randint(4, size=(5,), **k)),
    (lambda **k: rnd.bernoulli(0.5, (6,), **k), lambda **k: rnd.bernoulli(0.5, size=(6,), **k)),
], ids=["normal", "normal_shape_only", "normal_array_mean", "normal_0d", "uniform_empty", "uniform_1", "rand",
        "randn", "randint", "randint_high_only", "bernoulli"])
def test_numpy_names_equal_the_tkernels_names(device, case):
    ours, numpys = case
    a = ours(device=device, generator=rnd.Generator(21))
    b = numpys(device=device, generator=rnd.Generator(21))
    assert a.shape == b.shape and a.dtype is b.dtype and a.device == b.device
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("call, pattern", [
    (lambda: rnd.normal(0.0, loc=1.0), r"normal: got both mean= \(float 0.0\) and loc= \(float 1.0\)"),
    (lambda: rnd.normal(std=1.0, scale=1.0), "normal: got both std= .* and scale="),
    (lambda: rnd.normal(0.0, 1.0, (2,), size=(2,)), r"normal: got both shape= \(tuple \(2,\)\) and size="),
    (lambda: rnd.normal(loc=tk.zeros(2), mean=tk.zeros(2)), r"normal: got both mean= \(Array\(shape=\(2,\)"),
    (lambda: rnd.uniform(0, 1, (2,), size=3), "uniform: got both shape= .* and size="),
    (lambda: rnd.rand((2,), size=(2,)), "rand: got both shape="),
    (lambda: rnd.randn(shape=(2,), size=(2,)), "randn: got both shape="),
    (lambda: rnd.randint(0, 5, (2,), size=(2,)), "randint: got both shape="),
    (lambda: rnd.bernoulli(0.5, (2,), size=(2,)), "bernoulli: got both shape="),
    (lambda: rnd.rand(), r"rand: missing the shape of the result \(shape=, or NumPy's size=\)"),
    (lambda: rnd.randn(dtype=tk.float64), "randn: missing the shape"),
], ids=lambda v: "" if callable(v) else v.split(":")[0])
def test_a_name_and_its_numpy_alias_together_are_refused(call, pattern):
    with pytest.raises(TypeError, match=pattern):
        call()


def test_numpy_names_keep_the_checks():
    with pytest.raises(ValueError, match="normal: std must be >= 0"):
        rnd.normal(scale=-1.0, size=(2,))
    with pytest.raises(ValueError, match="normal: std must be >= 0 everywhere"):
        rnd.normal(scale=tk.asarray([1.0, -1.0]))
    with pytest.raises(ValueError, match="rand: negative dimension"):
        rnd.rand(size=(2, -1))
    with pytest.raises(TypeError, match="uniform: shape must be an int or a sequence of ints"):
        rnd.uniform(size="x")
