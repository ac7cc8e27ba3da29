"""Views and indexing (autograd/ops/views.py): values and view semantics against NumPy, every indexing form of
``x[key]`` and ``x[key] = v``, writes through views of non-leaf tensors with gradients to the base's history and
to the value, PyTorch's int-before-advanced indexing rule, errors. Gradients: gradinfos/views.py."""

import numpy as np
import pytest

import autograd as ag

RNG = np.random.default_rng(2)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def eq(t, ref):
    assert tuple(t.shape) == np.shape(ref)
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-12, atol=1e-12)


def shares(a, b):
    return a._data._storage is b._data._storage


def test_shape_views_share_storage():
    a = A(2, 3, 4)
    x = T(a)
    cases = [
        (x.reshape(6, 4), a.reshape(6, 4)), (x.view(-1), a.reshape(-1)), (x.permute(2, 0, 1), a.transpose(2, 0, 1)),
        (x.transpose(0, -1), a.swapaxes(0, -1)),
        (x[:, :1].expand(5, 2, -1, 4), np.broadcast_to(a[:, :1], (5, 2, 1, 4))),
        (x.unsqueeze(-1), a[..., None]), (x[:, :1].squeeze(1), a[:, 0]), (x.flatten(1), a.reshape(2, 12)),
        (x.unflatten(2, (2, 2)), a.reshape(2, 3, 2, 2)), (x.movedim(0, -1), np.moveaxis(a, 0, -1)),
        (x.select(1, -1), a[:, -1]), (x.narrow(2, 1, 2), a[:, :, 1:3]), (x.diagonal(0, 1, 2), np.diagonal(a, 0, 1, 2)),
        (x.mT, a.swapaxes(-1, -2)), (x.T, a.transpose()),
        (x.as_strided((2, 2), (1, 4), 1), np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (2, 2), (8, 32))),
    ]
    for got, ref in cases:
        eq(got, ref)
        assert shares(got, x)
    for parts, ref in [(x.unbind(1), [a[:, i] for i in range(3)]), (x.split(3, -1), [a[..., :3], a[..., 3:]]),
                       (x.chunk(2, 1), [a[:, :2], a[:, 2:]]), (x.tensor_split(3, 2), np.array_split(a, 3, 2)),
                       (x.split([1, 2], 1), [a[:, :1], a[:, 1:]])]:
        assert len(parts) == len(ref)
        for p, r in zip(parts, ref):
            eq(p, r)
            assert shares(p, x)


def test_view_errors():
    x = T(A(2, 3))
    with pytest.raises(IndexError, match="out of range"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match="out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="permutation"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match="negative size|-1"):
        x.expand(-1, 2, 3)
    with pytest.raises(RuntimeError, match="split_sizes"):
        x.split([1, 1], 1)
    with pytest.raises(RuntimeError, match="exceeds"):  # PyTorch: a RuntimeError (it was an IndexError here)
        x.narrow(1, 2, 2)
    with pytest.raises(RuntimeError, match="t\\(\\) expects"):
        T(A(2, 3, 4)).t()
    with pytest.raises(IndexError, match="0-dim"):
        T(1.0).select(0, 0)
    with pytest.raises(IndexError, match=r"select\(\): Dimension out of range"):  # was wrapped to dim 0
        x.select(2, 0)


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if ag.cuda.is_available() else []))
def test_narrow_like_pytorch(device):
    a = A(3, 5)
    x = T(a, device=device)
    for args, ref in [((1, -2, 2), a[:, 3:]), ((-1, 0, 5), a), ((0, 3, 0), a[3:]), ((1, -5, 1), a[:, :1]),
                      ((0, 1, 2), a[1:3])]:
        got = ag.narrow(x, *args)
        eq(got.cpu(), ref)
        assert shares(got, x) and got.device == x.device
        eq(x.narrow(*args).cpu(), ref)
    x0 = T(3.0, device=device)
    for fn in (lambda: ag.narrow(x0, 0, 0, 1), lambda: x0.narrow(-1, 0, 0)):
        with pytest.raises(RuntimeError, match=r"narrow\(\) cannot be applied to a 0-dim tensor.*shape \[\].*hint"):
            fn()  # was: ZeroDivisionError (integer modulo by zero)
    cases = [((2, 0, 1), IndexError, r"narrow\(\): Dimension out of range .*\[-2, 1\], but got 2"),
             ((-3, 0, 1), IndexError, r"narrow\(\): Dimension out of range"),
             ((1, 6, 0), IndexError, r"start out of range .*\[-5, 5\], but got 6.*shape \[3, 5\]"),
             ((1, -6, 1), IndexError, r"start out of range"),
             ((1, 0, -1), RuntimeError, r"length must be non-negative, got -1"),
             ((1, -2, 3), RuntimeError, r"start \(3\) \+ length \(3\) exceeds dimension size \(5\).*at most 2"),
             ((0, 3, 1), RuntimeError, r"exceeds dimension size \(3\).*shape \[3, 5\]")]
    for args, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            x.narrow(*args)


KEYS = [
    (1,), (-1,), (slice(None, None, 2),), (slice(1, None), slice(None, None, -2)), (Ellipsis, 1),
    (None, 0, Ellipsis, None), (slice(None), None, 2), ([0, 1, 1],), ([[0], [1]], [2, 0]),
    (slice(None), [2, 0, 2], slice(1, 3)), (Ellipsis, [3, 3]), ([0, 1], slice(None), [1, 3]),
    (np.array([True, False]),), (slice(None), np.array([True, False, True])),
    (np.array([[True, False, True], [False, False, True]]),), (True,), (slice(None), 1, np.array([0, 3])),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_getitem_like_numpy(key):
    a = A(2, 3, 4)
    got = T(a)[key]
    eq(got, a[key])
    tk_key = tuple(T(k) if isinstance(k, np.ndarray) else k for k in key)
    eq(T(a)[tk_key], a[key])  # index tensors work like arrays


def test_getitem_ints_before_advanced_like_pytorch():
    a = A(2, 3, 4, 5)
    x = T(a)
    assert x[0, :, [1, 2]].shape == (3, 2, 5)  # NumPy: (2, 3, 5)
    eq(x[0, :, [1, 2]], a[0][:, [1, 2]])
    assert x[1, [0, 2], 3, [1, 4]].shape == (2,)
    eq(x[[0, 1], 1], a[[0, 1], 1])
    x[0, :, [1, 2]] = T(np.zeros((3, 2, 1)))
    a[0][:, [1, 2]] = 0
    eq(x, a)


def test_basic_index_is_view_advanced_is_copy():
    x = T(A(3, 4))
    v = x[1:, ::2]
    assert shares(v, x)
    x[2, 0] = 9.0
    assert v[1, 0].item() == 9.0
    c = x[[0, 1]]
    assert not shares(c, x)
    x[0, 0] = -9.0
    assert c[0, 0].item() != -9.0


def test_setitem_forms():
    a = A(3, 4)
    x = T(a.copy())
    v = x._version.v
    x[0] = 1.0
    a[0] = 1.0
    x[:, 1] = T(np.arange(3.0))
    a[:, 1] = np.arange(3.0)
    x[1:, ::2] = T(np.array([5.0, 6.0]))  # broadcasts
    a[1:, ::2] = [5.0, 6.0]
    x[[0, 2], -1] = T(np.array([7.0, 8.0]))
    a[[0, 2], -1] = [7.0, 8.0]
    x[x > 1.5] = 0.0
    a[a > 1.5] = 0.0
    x[..., None, 0] = -1.0
    a[..., None, 0] = -1.0
    x[T([1, 1])] = T(np.array([3.0, 3.0, 3.0, 3.0]))
    a[[1, 1]] = 3.0
    eq(x, a)
    assert x._version.v > v
    i = T(np.zeros(3, dtype=np.int64))
    i[1] = 5
    assert i.tolist() == [0, 5, 0]


def test_setitem_through_view_of_non_leaf():
    x = T(A(3, 4), requires_grad=True)
    v = T(A(3), requires_grad=True)
    y = x * 1
    y[:, 1] = v
    assert y.grad_fn.name() == "CopySlices"
    y.sum().backward()
    eq(x.grad, np.array([[1.0, 0, 1, 1]] * 3))
    eq(v.grad, np.ones(3))
    x.grad = None
    y = x * 1
    y[0].mul_(2)
    (y * y).sum().backward()
    eq(x.grad, 2 * x.detach().numpy() * np.array([[4.0], [1], [1]]))
    x.grad = v.grad = None
    y = x * 1
    y[[2, 0, 2], 1:] = v  # repeated advanced index: the last write wins, gradients like PyTorch's
    (y * 3).sum().backward()
    eq(x.grad, np.array([[3.0, 0, 0, 0], [3, 3, 3, 3], [3, 0, 0, 0]]))
    eq(v.grad, np.full(3, 9.0))


def test_view_of_written_base_takes_new_history():
    x = T(A(3, 4), requires_grad=True)
    y = x * 2
    row = y[1]
    y[1, 2] = 0.0
    assert row[2].item() == 0.0
    (row * 1).sum().backward()
    eq(x.grad, np.array([[0.0] * 4, [2, 2, 0, 2], [0] * 4]))


def test_inplace_on_leaf_and_saved_tensor_errors():
    x = T(A(3, 4), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0].mul_(2)
    y = x.exp()
    y[0] = 0.0  # exp saved its output: backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with ag.no_grad():
        x[0] = 1.0
    eq(x[0], np.ones(4))


def test_setitem_leaf_without_grad_gets_history_from_value():
    z = ag.zeros(2, 3, dtype=ag.float64)
    v = T(A(3), requires_grad=True)
    z[1] = v
    assert z.requires_grad and not z.is_leaf
    (z * z).sum().backward()
    eq(v.grad, 2 * v.detach().numpy())


def test_index_put_and_index_errors():
    x = T(A(3, 2))
    eq(x.index_put((T([0, 0]),), T(np.array([1.0, 2.0])), accumulate=True), x.numpy() + [[2.0, 4.0], [0, 0], [0, 0]])
    x.index_put_((T([2]),), T(np.array(5.0)))
    assert x[2].tolist() == [5.0, 5.0]
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[[0, 5]]
    with pytest.raises(IndexError, match="integer or bool"):
        x[T([0.5])]
