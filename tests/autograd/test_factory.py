"""Factories, random numbers, dtypes and defaults, compared with NumPy and PyTorch's documented results."""

import numpy as np
import pytest

import autograd as ag


def test_tensor_copies_and_infers_dtype():
    a = np.array([1.0, 2.0])
    t = ag.tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and t.dtype == ag.float64  # NumPy's dtype is kept
    assert ag.tensor([1, 2.5]).dtype == ag.float32  # Python floats: the default dtype
    assert ag.tensor([1, 2]).dtype == ag.int64 and ag.tensor([True]).dtype == ag.bool
    assert ag.tensor(3.0).shape == () and ag.tensor([[1.0], [2.0]]).shape == (2, 1)
    t2 = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    assert t2.requires_grad and t2.is_leaf and t2.dtype == ag.float64
    c = ag.tensor(t2)  # a copy, detached
    assert not c.requires_grad and c.data_ptr() != t2.data_ptr()


def test_as_tensor_and_from_numpy_share_memory():
    a = np.zeros(3)
    t = ag.as_tensor(a)
    f = ag.from_numpy(a)
    a[0] = 5.0
    assert t.tolist()[0] == 5.0 and f.tolist()[0] == 5.0
    f[1] = 7.0
    assert a[1] == 7.0
    x = ag.ones(2)
    assert ag.as_tensor(x) is x
    assert ag.as_tensor(a, dtype=ag.float32).dtype == ag.float32
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        ag.from_numpy([1.0])


@pytest.mark.parametrize("fn,fill", [(ag.zeros, 0.0), (ag.ones, 1.0)])
def test_zeros_ones_sizes(fn, fill):
    for t in (fn(2, 3), fn((2, 3)), fn([2, 3])):
        assert t.shape == (2, 3) and t.dtype == ag.float32 and t.numpy().tolist() == [[fill] * 3] * 2
    assert fn(()).shape == () and fn(0).shape == (0,)
    assert fn(2, dtype=ag.int32).dtype == ag.int32
    assert fn(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match=r"negative dimension -1"):
        fn(2, -1)


def test_empty_full_and_like():
    assert ag.empty(2, 3).shape == (2, 3)
    assert ag.full((2,), 3.0).tolist() == [3.0, 3.0] and ag.full((2,), 3.0).dtype == ag.float32
    assert ag.full((2,), 3).dtype == ag.int64 and ag.full((1,), True).dtype == ag.bool
    x = ag.tensor([[1.0, 2.0]], dtype=ag.float64)
    for t in (ag.zeros_like(x), ag.ones_like(x), ag.empty_like(x), ag.full_like(x, 7), ag.rand_like(x),
              ag.randn_like(x)):
        assert t.shape == (1, 2) and t.dtype == ag.float64 and not t.requires_grad
    assert ag.full_like(x, 7).tolist() == [[7.0, 7.0]] and ag.ones_like(x, dtype=ag.int32).dtype == ag.int32
    assert ag.zeros_like(x, requires_grad=True).requires_grad
    r = ag.randint_like(x, 5)
    assert r.dtype == ag.float64 and all(0 <= v < 5 and v == int(v) for v in r.flatten().tolist())


def test_arange_linspace_eye():
    assert ag.arange(5).tolist() == [0, 1, 2, 3, 4] and ag.arange(5).dtype == ag.int64
    assert ag.arange(1, 4).tolist() == [1, 2, 3]
    a = ag.arange(0, 1, 0.25)
    assert a.dtype == ag.float32 and a.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ag.arange(5, 0, -2).tolist() == [5, 3, 1]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ag.arange(0, 5, 0)
    lin = ag.linspace(-1, 1, 5)
    assert lin.dtype == ag.float32 and lin.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert ag.linspace(0, 1, 1).tolist() == [0.0]
    np.testing.assert_array_equal(ag.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(ag.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))


def test_manual_seed_is_reproducible_for_every_sampler():
    def draw():
        return (ag.rand(3).tolist(), ag.randn(2, 2).tolist(), ag.randint(0, 100, (4,)).tolist(),
                ag.randperm(6).tolist(), ag.normal(1.0, 2.0, size=(3,)).tolist())

    ag.manual_seed(123)
    first = draw()
    ag.manual_seed(123)
    assert draw() == first
    ag.manual_seed(124)
    assert draw() != first


def test_generator_objects_are_independent_and_seedable():
    g1 = ag.Generator().manual_seed(7)
    g2 = ag.Generator().manual_seed(7)
    a = ag.rand(4, generator=g1).tolist()
    ag.rand(10)  # the default generator does not disturb them
    assert ag.rand(4, generator=g2).tolist() == a
    assert ag.rand(4, generator=g1).tolist() != a


def test_random_ranges_and_shapes():
    ag.manual_seed(0)
    r = ag.rand(1000).numpy()
    assert r.min() >= 0 and r.max() < 1 and 0.4 < r.mean() < 0.6
    n = ag.randn(4000).numpy()
    assert abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1
    ri = ag.randint(3, 7, (500,))
    assert ri.dtype == ag.int64 and set(ri.tolist()) == {3, 4, 5, 6}
    assert ag.randint(10, (2, 3)).shape == (2, 3)
    p = ag.randperm(10)
    assert p.dtype == ag.int64 and sorted(p.tolist()) == list(range(10))
    m = ag.normal(ag.full((2000,), 5.0), 0.5).numpy()
    assert 4.9 < m.mean() < 5.1 and 0.45 < m.std() < 0.55
    s = ag.normal(2.0, ag.ones(3))
    assert s.shape == (3,)
    with pytest.raises(TypeError, match="missing the size argument"):
        ag.randint(10)


def test_default_dtype():
    assert ag.get_default_dtype() == ag.float32
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.get_default_dtype() == ag.float64
        assert ag.tensor([1.5]).dtype == ag.float64 and ag.zeros(1).dtype == ag.float64
        assert ag.arange(0, 1, 0.5).dtype == ag.float64 and ag.tensor([1]).dtype == ag.int64
    finally:
        ag.set_default_dtype(ag.float32)
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        ag.set_default_dtype(ag.int32)


def test_dtype_names_and_aliases():
    assert ag.float is ag.float32 and ag.double is ag.float64 and ag.half is ag.float16
    assert ag.long is ag.int64 and ag.int is ag.int32 and ag.short is ag.int16
    for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        assert getattr(ag, name).name == name
    assert ag.promote_types(ag.float32, ag.float64) == ag.float64
    assert ag.finfo(ag.float32).eps == np.finfo(np.float32).eps


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_zero_d_tensors_promote_below_dimensioned_ones(device):
    # torch.result_type: a 0-d tensor decides the dtype only when its category is higher, in every op that
    # promotes (add, where, clamp with tensor bounds, lerp, addcmul, div, result_type itself)
    if device == "cuda" and not ag.cuda.is_available():
        pytest.skip("no cuda (not even interpreted)")
    c = ag.tensor([[True, False, True]] * 2, device=device)
    x = ag.ones(2, 3, device=device)
    r = ag.where(c, x, ag.tensor(2.0, dtype=ag.float64, device=device))
    assert r.dtype == ag.float32 and r.shape == (2, 3) and r.device.type == device
    assert r.cpu().tolist() == [[1.0, 2.0, 1.0]] * 2
    i32 = ag.tensor([5, -1, 7], dtype=ag.int32, device=device)
    r = ag.where(c[0], ag.tensor(2, device=device), i32)
    assert r.dtype == ag.int32 and r.cpu().tolist() == [2, -1, 2]
    r = ag.where(c[0], i32, ag.tensor(0.5, dtype=ag.float64, device=device))  # a higher category wins
    assert r.dtype == ag.float64 and r.cpu().tolist() == [5.0, 0.5, 7.0]
    assert ag.result_type(x, ag.tensor(2.0, dtype=ag.float64)) == ag.float32
    assert ag.result_type(i32, ag.tensor(2)) == ag.int32
    r = ag.clamp(i32, ag.tensor(0, device=device), ag.tensor(6, device=device))
    assert r.dtype == ag.int32 and r.cpu().tolist() == [5, 0, 6]
    r = ag.clamp(x, max=ag.tensor(0.5, dtype=ag.float64, device=device))
    assert r.dtype == ag.float32 and r.cpu().tolist() == [[0.5] * 3] * 2
    r = ag.lerp(x, ag.tensor(3.0, dtype=ag.float64, device=device), 0.5)
    assert r.dtype == ag.float32 and r.cpu().tolist() == [[2.0] * 3] * 2
    r = ag.addcmul(i32, ag.tensor(2, device=device), ag.tensor(3, device=device))
    assert r.dtype == ag.int32 and r.cpu().tolist() == [11, 5, 13]
    r = ag.div(i32, ag.tensor(2, device=device), rounding_mode="trunc")
    assert r.dtype == ag.int32 and r.cpu().tolist() == [2, 0, 3]


def test_cuda_module_is_tkernels_cuda():
    import tkernels.cuda

    assert ag.cuda is tkernels.cuda
    for name in ("is_available", "synchronize", "device_count", "memory_allocated", "Stream", "Event"):
        assert hasattr(ag.cuda, name), name


def test_factories_on_cuda():
    if not ag.cuda.is_available():
        pytest.skip("no cuda (not even interpreted)")
    z = ag.zeros(2, 3, device="cuda")
    assert z.device.type == "cuda" and z.cpu().tolist() == [[0.0] * 3] * 2
    assert ag.ones(2, device="cuda").cpu().tolist() == [1.0, 1.0]
    assert ag.tensor([1.0, 2.0], device="cuda").cpu().tolist() == [1.0, 2.0]
    assert ag.full((2,), 4.0, device="cuda").cpu().tolist() == [4.0, 4.0]
    assert ag.zeros_like(z).device.type == "cuda"
