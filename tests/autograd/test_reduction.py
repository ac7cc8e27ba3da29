"""Reductions (autograd/ops/reduction.py): values against NumPy, PyTorch's argument rules (named tuples,
keepdim, unbiased/correction, dtypes), gradient conventions (ties, zeros), errors and methods.
Gradient checks: gradinfos/reduction.py."""

import importlib
import math

import numpy as np
import pytest

import autograd as ag

RNG = np.random.default_rng(0)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def close(t, ref, **kw):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-7, atol=1e-12, **kw)


def grad(fn, x):
    x = T(x, requires_grad=True)
    (g,) = ag.grad(fn(x), x)
    return g.numpy()


def test_sum_mean_still_work():
    a = A(3, 4)
    close(T(a).sum(), a.sum())
    close(ag.mean(T(a), (0, 1), keepdim=True), a.mean((0, 1), keepdims=True))
    assert T([1, 2, 3]).sum().dtype == ag.int64


def test_max_min_forms():
    a = A(3, 5)
    r = T(a).max(dim=1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    close(r.values, a.max(1))
    np.testing.assert_array_equal(r.indices.numpy(), a.argmax(1))
    assert r.indices.dtype == ag.int64 and r.indices.grad_fn is None
    v, i = ag.min(T(a), -2, keepdim=True)
    close(v, a.min(0, keepdims=True))
    np.testing.assert_array_equal(i.numpy(), a.argmin(0)[None])
    close(ag.max(T(a)), a.max())
    close(T(a).min(), a.min())
    close(ag.max(T(a), T(a[0])), np.maximum(a, a[0]))  # the binary overload
    close(T(a).min(T(0.0)), np.minimum(a, 0.0))
    v, i = ag.max(T(2.5), 0)
    assert v.shape == () and i.item() == 0
    assert type(ag.min(T(a), 0)).__name__ == "min"


def test_max_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        T(A(2, 3)).max(2)
    with pytest.raises(IndexError, match="non-zero size"):
        ag.max(ag.zeros(0, 3), 0)
    with pytest.raises(IndexError, match="amax.*non-empty"):
        ag.zeros(0).amax()


def test_max_gradient_conventions():
    x = np.array([[1.0, 3.0, 3.0, 3.0], [2.0, 0.0, 2.0, -1.0]])
    # with dim: all of it to the chosen (first) index; without: split evenly among the ties
    np.testing.assert_array_equal(grad(lambda t: t.max(1).values.sum(), x), [[0, 1, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_allclose(grad(lambda t: t.max(), x), [[0, 1 / 3, 1 / 3, 1 / 3], [0, 0, 0, 0]])
    np.testing.assert_allclose(grad(lambda t: t.amax(1).sum(), x), [[0, 1 / 3, 1 / 3, 1 / 3], [0.5, 0, 0.5, 0]])
    np.testing.assert_allclose(grad(lambda t: t.amin(dim=(0, 1)), x), [[0, 0, 0, 0], [0, 0, 0, 1]])
    y = np.array([1.0, np.nan, 2.0])
    assert math.isnan(T(y).amax().item())
    np.testing.assert_array_equal(grad(lambda t: t.amax(), y), [0, 1, 0])


def test_amax_amin_aminmax():
    a = A(2, 3, 4)
    close(T(a).amax(dim=(0, 1)), a.max((0, 1)))
    close(ag.amin(T(a), -1, True), a.min(-1, keepdims=True))
    close(T(a).amax(), a.max())
    r = ag.aminmax(T(a), dim=1)
    assert r._fields == ("min", "max")
    close(r.min, a.min(1))
    close(r.max, a.max(1))
    close(ag.aminmax(T(a)).max, a.max())


def test_argmax_argmin():
    a = A(3, 4)
    r = T(a).argmax()
    assert r.dtype == ag.int64 and r.shape == () and r.item() == a.argmax() and r.grad_fn is None
    np.testing.assert_array_equal(ag.argmin(T(a), 0).numpy(), a.argmin(0))
    np.testing.assert_array_equal(T(a).argmax(1, keepdim=True).numpy(), a.argmax(1)[:, None])
    assert T([1.0, 5.0, 5.0]).argmax().item() == 1  # first of ties
    assert T(3.0).argmax().item() == 0


_DEVICES = ["cpu"] + (["cuda"] if ag.cuda.is_available() else [])


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("op", ["argmax", "argmin", "max", "min"])
def test_dim_reductions_without_identity_on_empty_inputs(op, device):
    # PyTorch raises only when the reduced dim itself is empty: the other dims may be (shape (3, 0, 2), dim 0 -> (0, 2))
    fn = getattr(ag, op)
    x = ag.ones(3, 0, 2, device=device)
    for dim, keepdim, shape in [(0, False, (0, 2)), (-1, False, (3, 0)), (0, True, (1, 0, 2)), (2, True, (3, 0, 1))]:
        r = fn(x, dim, keepdim=keepdim)
        values, indices = (r, r) if op.startswith("arg") else r
        assert tuple(values.shape) == shape and tuple(indices.shape) == shape, (dim, keepdim)
        assert indices.dtype == ag.int64 and values.dtype == (ag.int64 if op.startswith("arg") else ag.float32)
        assert values.device.type == device and indices.device.type == device
    with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim 1 to have non-zero size \(input shape "
                                         rf"\[3, 0, 2\].*Hint"):
        fn(x, 1)
    if op.startswith("arg"):
        with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim to be specified for input.numel\(\) "
                                             rf"== 0 \(input shape \[3, 0, 2\].*Hint"):
            fn(x)
    else:
        with pytest.raises(IndexError, match=rf"{op}\(\): expected a non-empty input.*Hint"):
            fn(x)
        y = ag.ones(3, 0, 2, device=device, requires_grad=True)
        fn(y, 0).values.sum().backward()
        assert tuple(y.grad.shape) == (3, 0, 2)


def test_prod():
    a = A(3, 4)
    close(T(a).prod(), a.prod())
    close(ag.prod(T(a), 1, keepdim=True), a.prod(1, keepdims=True))
    r = T([1, 2, 3], dtype=ag.int32).prod()
    assert r.dtype == ag.int64 and r.item() == 6
    assert ag.prod(T(a), dtype=ag.float32).dtype == ag.float32
    np.testing.assert_allclose(grad(lambda t: t.prod(), np.array([2.0, 3.0, 4.0])), [12, 8, 6])
    np.testing.assert_allclose(grad(lambda t: t.prod(), np.array([2.0, 0.0, 4.0])), [0, 8, 0])
    np.testing.assert_allclose(grad(lambda t: t.prod(), np.array([0.0, 0.0, 4.0])), [0, 0, 0])
    np.testing.assert_allclose(grad(lambda t: t.prod(0).sum(), np.array([[0.0, 2.0], [5.0, 0.0]])),
                               [[5, 0], [0, 2]])


def test_var_std_arguments():
    a = A(4, 5)
    close(T(a).var(), a.var(ddof=1))
    close(T(a).var(unbiased=False), a.var())
    close(T(a).var(False), a.var())  # the positional `unbiased` overload
    close(ag.var(T(a), 1, True, True), a.var(1, ddof=1, keepdims=True))
    close(ag.std(T(a), dim=(0, 1), correction=2), a.std(ddof=2))
    close(T(a).std(0, unbiased=False), a.std(0))
    v, m = ag.var_mean(T(a), 1)
    close(v, a.var(1, ddof=1))
    close(m, a.mean(1))
    s, m = ag.std_mean(T(a), correction=0, keepdim=True, dim=0)
    close(s, a.std(0, keepdims=True))
    close(m, a.mean(0, keepdims=True))
    with pytest.raises(RuntimeError, match="both 'unbiased' and 'correction'"):
        ag.var(T(a), 0, True, correction=0)
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        T([1, 2, 3]).std()
    assert math.isnan(T([1.0]).var().item())
    np.testing.assert_array_equal(grad(lambda t: t.std(), np.ones(3)), [0, 0, 0])  # 0 where std == 0


def test_logsumexp():
    a = A(3, 4)
    close(T(a).logsumexp(-1), np.log(np.exp(a).sum(-1)))
    close(ag.logsumexp(T(a), (0, 1), keepdim=True), np.log(np.exp(a).sum(keepdims=True)))
    close(T([1000.0, 1000.0]).logsumexp(0), 1000 + np.log(2))  # stable
    assert T([1, 2]).logsumexp(0).dtype == ag.get_default_dtype()
    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(grad(lambda t: t.logsumexp(0), x), np.exp(x) / np.exp(x).sum())


def test_any_all_count_nonzero():
    a = np.array([[0, 1, 0], [0, 0, 0]])
    assert ag.any(T(a)).item() is True and T(a).all().item() is False
    np.testing.assert_array_equal(T(a).any(1).numpy(), [True, False])
    np.testing.assert_array_equal(ag.all(T(a == 0), 0, keepdim=True).numpy(), [[True, False, True]])
    assert T(a).any().dtype == ag.bool
    c = ag.count_nonzero(T(a))
    assert c.dtype == ag.int64 and c.item() == 1
    np.testing.assert_array_equal(T(a).count_nonzero(dim=0).numpy(), [0, 1, 0])


@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 3, 0.5, 0])
def test_norm_values(p):
    a = A(3, 4)
    ref = np.linalg.norm(a.reshape(-1), ord=p)
    close(T(a).norm(p), ref)
    close(ag.norm(T(a), p, dim=1, keepdim=True), np.linalg.norm(a, ord=p, axis=1, keepdims=True))
    LA = importlib.import_module("autograd.linalg")
    close(LA.vector_norm(T(a), p, dim=(0, 1)), ref)


def test_norm_conventions():
    a = A(2, 3, 4)
    close(T(a).norm(), np.sqrt((a * a).sum()))
    close(T(a).norm("fro", dim=(1, 2)), np.sqrt((a * a).sum((1, 2))))
    np.testing.assert_array_equal(grad(lambda t: t.norm(), np.zeros(3)), [0, 0, 0])  # PyTorch: 0 at zero
    np.testing.assert_array_equal(grad(lambda t: t.norm(3), np.zeros(3)), [0, 0, 0])
    np.testing.assert_allclose(grad(lambda t: t.norm(math.inf), np.array([1.0, -2.0, 2.0])), [0, -0.5, 0.5])
    assert T(a).norm(dtype=ag.float32).dtype == ag.float32
    close(T(a[0]).norm("nuc"), np.linalg.norm(a[0], "nuc"))
    close(T(a).norm("nuc", dim=(1, 2), keepdim=True), np.linalg.norm(a, "nuc", axis=(1, 2))[:, None, None])
    with pytest.raises(RuntimeError, match="p='nuc' without dim expects a tensor with 2 dimensions"):
        T(a).norm("nuc")
    with pytest.raises(RuntimeError, match="p='nuc' needs dim to be a 2-tuple"):
        T(a).norm("nuc", dim=1)
    with pytest.raises(RuntimeError, match="floating point"):
        T([1, 2]).norm()


def test_nansum_nanmean():
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 3.0]])
    close(ag.nansum(T(a)), np.nansum(a))
    close(T(a).nansum(1, keepdim=True), np.nansum(a, 1, keepdims=True))
    close(ag.nanmean(T(a), 0), np.array([1.0, np.nan, 2.5]), equal_nan=True)
    close(T(a).nanmean(), np.nanmean(a))
    np.testing.assert_array_equal(grad(lambda t: t.nansum(), a), [[1, 0, 1], [0, 0, 1]])
    assert T([1, 2]).nansum().item() == 3


def test_cumsum_cumprod():
    a = A(3, 4)
    close(T(a).cumsum(0), np.cumsum(a, 0))
    close(ag.cumsum(T(a), -1), np.cumsum(a, -1))
    assert T([1, 2], dtype=ag.int32).cumsum(0).dtype == ag.int64
    assert ag.cumsum(T(a), 0, dtype=ag.float32).dtype == ag.float32
    close(ag.cumprod(T(a), 1), np.cumprod(a, 1))
    close(T(2.0).cumsum(0), 2.0)
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    # d/dx_k sum_i cumprod_i by brute force
    ref = [sum(np.prod(np.delete(x[:i + 1], k)) for i in range(k, 5)) for k in range(5)]
    np.testing.assert_allclose(grad(lambda t: t.cumprod(0).sum(), x), ref)
    with pytest.raises(IndexError, match="Dimension out of range"):
        T(a).cumsum(2)


def test_cummax_cummin():
    x = np.array([1.0, 3.0, 2.0, 3.0, 0.0, 4.0])
    r = T(x).cummax(0)
    assert type(r).__name__ == "cummax"
    np.testing.assert_array_equal(r.values.numpy(), np.maximum.accumulate(x))
    np.testing.assert_array_equal(r.indices.numpy(), [0, 1, 1, 3, 3, 5])  # last index among ties (PyTorch)
    v, i = ag.cummin(T(x), -1)
    np.testing.assert_array_equal(v.numpy(), np.minimum.accumulate(x))
    np.testing.assert_array_equal(i.numpy(), [0, 0, 0, 0, 4, 4])
    a = A(3, 17)
    np.testing.assert_array_equal(T(a).cummax(1).values.numpy(), np.maximum.accumulate(a, 1))
    np.testing.assert_array_equal(ag.cummin(T(a), 0).values.numpy(), np.minimum.accumulate(a, 0))
    v, i = T(np.array([1.0, np.nan, 2.0])).cummax(0)
    assert np.isnan(v.numpy()[1:]).all() and i.tolist() == [0, 1, 1]
    np.testing.assert_array_equal(grad(lambda t: t.cummax(0).values.sum(), x), [1, 2, 0, 2, 0, 1])


def test_methods_from_the_brief():
    x = T(A(3, 4))
    assert x.max(dim=1).values.shape == (3,)
    assert x.var(unbiased=False).shape == ()
    assert x.norm().shape == () and x.argmax().shape == () and x.prod().shape == ()
    assert x.logsumexp(-1).shape == (3,) and x.cumsum(0).shape == (3, 4)
    assert x.any().dtype == ag.bool and x.amax(dim=(0, 1)).shape == ()
    for name in ("prod", "amin", "argmin", "aminmax", "std", "all", "count_nonzero", "nansum", "nanmean",
                 "cumprod", "cummax", "cummin", "min"):
        assert callable(getattr(x, name))


def test_grad_fn_names():
    x = T(A(3, 4), requires_grad=True)
    assert x.max().grad_fn.name() == "MaxBackward1"
    assert x.max(1).values.grad_fn.name() == "MaxBackward0"
    assert x.amax().grad_fn.name() == "AmaxBackward0"
    assert x.prod(1).grad_fn.name() == "ProdBackward1"
    assert x.std().grad_fn.name() == "StdBackward0"
    assert x.cumsum(0).grad_fn.name() == "CumsumBackward0"
    assert x.norm().grad_fn.name() == "LinalgVectorNormBackward0"
    assert x.argmax().grad_fn is None and x.any().grad_fn is None
