"""Shape and data-movement ops (autograd/ops/shape.py): values against NumPy, PyTorch's argument rules,
dtype promotion, errors, methods and in-place forms. Gradients: gradinfos/shape.py."""

import warnings

import numpy as np
import pytest

import autograd as ag

RNG = np.random.default_rng(0)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def eq(t, ref):
    assert tuple(t.shape) == np.shape(ref)
    np.testing.assert_array_equal(t.detach().numpy(), ref)


def test_cat_stack_values_and_promotion():
    a, b = A(2, 3), A(2, 1)
    eq(ag.cat([T(a), T(b)], dim=-1), np.concatenate([a, b], -1))
    eq(ag.concat((T(a), T(a)), 0), np.concatenate([a, a]))
    eq(ag.concatenate([T(a)], 1), a)
    r = ag.cat([T(a, dtype=ag.float32), T(np.array([[1, 2, 3]]))])
    assert r.dtype == ag.float32 and r.shape == (3, 3)
    assert ag.cat([T([1, 2]), T([True])]).dtype == ag.int64
    eq(ag.cat([T(a), ag.zeros(0, dtype=ag.float64)], 1), a)  # legacy: 1-D empty tensors are skipped
    eq(ag.stack([T(a), T(a)], dim=-1), np.stack([a, a], -1))
    eq(ag.stack([T(1.0), T(2.0)]), np.array([1.0, 2.0]))
    eq(ag.hstack([T([1, 2]), T([3])]), np.array([1, 2, 3]))
    eq(ag.vstack([T(a), T(a[0])]), np.vstack([a, a[0]]))
    eq(ag.dstack([T(a), T(a)]), np.dstack([a, a]))
    eq(ag.column_stack([T([1, 2]), T([[3], [4]])]), np.column_stack([[1, 2], [[3], [4]]]))


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if ag.cuda.is_available() else []))
def test_cat_skips_legacy_empty_tensors_in_the_shape_check_only(device):
    # PyTorch: a 1-D empty tensor is left out of the shape check, not out of the dtype promotion
    r = ag.cat([T([1, 2], device=device), ag.zeros(0, device=device)])
    assert r.dtype == ag.float32 and r.shape == (2,) and r.device.type == device and r.cpu().tolist() == [1.0, 2.0]
    r = ag.cat([ag.zeros(0, dtype=ag.float64, device=device), T([[1, 2]], dtype=ag.int32, device=device)], 1)
    assert r.dtype == ag.float64 and r.shape == (1, 2) and r.cpu().tolist() == [[1.0, 2.0]]
    r = ag.cat([ag.zeros(0, dtype=ag.int8, device=device), ag.zeros(0, dtype=ag.uint8, device=device)])
    assert r.dtype == ag.int16 and r.shape == (0,)
    assert ag.cat([T([1, 2], device=device), ag.zeros(0, dtype=ag.bool, device=device)]).dtype == ag.int64
    x = ag.zeros(0, device=device, requires_grad=True)
    y = ag.cat([T([1, 2], device=device), x])
    assert type(y.grad_fn).__name__ == "CatBackward0"
    y.sum().backward()
    assert x.grad.shape == (0,) and x.grad.dtype == ag.float32
    r = ag.stack([ag.zeros(0, dtype=ag.int64, device=device), ag.zeros(0, device=device)])
    assert r.dtype == ag.float32 and r.shape == (2, 0)
    with pytest.raises(RuntimeError, match=r"cat\(\): zero-dimensional tensor \(at position 1\).*Hint"):
        ag.cat([T([1.0], device=device), T(2.0, device=device)])


def test_cat_grad_fn_and_out():
    x = T(A(2, 2), requires_grad=True)
    y = ag.cat([x, T(A(1, 2))])
    assert type(y.grad_fn).__name__ == "CatBackward0"
    assert type(ag.stack([x, x]).grad_fn).__name__ == "StackBackward0"
    out = ag.empty(3, 2, dtype=ag.float64)
    ag.cat([T(A(1, 2)), T(A(2, 2))], out=out)
    with pytest.raises(RuntimeError, match="out="):
        ag.cat([x, x], out=ag.empty(4, 2, dtype=ag.float64))
    y.sum().backward()
    eq(x.grad, np.ones((2, 2)))


def test_cat_stack_errors():
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ag.cat([T(1.0), T(2.0)])
    with pytest.raises(RuntimeError, match="dim"):
        ag.cat([T(A(2, 3)), T(A(3, 3))], 1)
    with pytest.raises(RuntimeError, match="same shape"):
        ag.stack([T(A(2)), T(A(3))])
    with pytest.raises(TypeError, match="tuple or list"):
        ag.cat(T(A(2)))
    with pytest.raises(RuntimeError, match="non-empty"):
        ag.stack([])


def test_atleast():
    assert ag.atleast_1d(T(1.0)).shape == (1,)
    assert ag.atleast_2d(T([1.0, 2.0])).shape == (1, 2)
    assert [t.shape for t in ag.atleast_3d(T(1.0), T([1.0, 2.0]), T(A(2, 3)), T(A(1, 2, 3, 4)))] == \
        [(1, 1, 1), (1, 2, 1), (2, 3, 1), (1, 2, 3, 4)]
    assert isinstance(ag.atleast_2d([T(1.0), T(2.0)]), tuple)


def test_flip_roll():
    a = A(2, 3, 4)
    eq(ag.flip(T(a), (0, -1)), a[::-1, :, ::-1])
    eq(T(a).flip(1), a[:, ::-1])
    eq(T(a).flip([0]), a[::-1])
    eq(T(a).fliplr(), np.fliplr(a))
    eq(T(a).flipud(), np.flipud(a))
    eq(ag.flip(T(2.0), (0,)), np.array(2.0))
    with pytest.raises(IndexError, match="out of range"):
        T(a).flip(3)
    with pytest.raises(RuntimeError, match=">= 2-d"):
        T(A(3)).fliplr()
    eq(ag.roll(T(a), 2, 1), np.roll(a, 2, 1))
    eq(T(a).roll((1, -3), (0, 2)), np.roll(a, (1, -3), (0, 2)))
    eq(T(a).roll(5), np.roll(a, 5))
    eq(T(a).roll([1, 1], [2, 2]), np.roll(a, 2, 2))
    with pytest.raises(RuntimeError, match="align"):
        T(a).roll((1, 2), (0,))


def test_repeat_tile_interleave():
    a = A(2, 3)
    eq(T(a).repeat(2, 3), np.tile(a, (2, 3)))
    eq(T(a).repeat(2, 1, 2), np.tile(a, (2, 1, 2)))
    eq(T(a).repeat((0, 1)), np.tile(a, (0, 1)))
    with pytest.raises(RuntimeError, match="can not be smaller"):
        T(a).repeat(2)
    assert not hasattr(ag, "repeat")  # torch.repeat does not exist: Tensor.repeat only
    eq(ag.tile(T(a), (2,)), np.tile(a, 2))
    eq(T(a).tile((2, 1, 1)), np.tile(a, (2, 1, 1)))
    eq(T(a).repeat_interleave(2), np.repeat(a, 2))
    eq(ag.repeat_interleave(T(a), 3, dim=-1), np.repeat(a, 3, -1))
    eq(ag.repeat_interleave(T(a), T([1, 0, 2]), dim=1), np.repeat(a, [1, 0, 2], 1))
    eq(ag.repeat_interleave(T(a), T([2]), dim=0), np.repeat(a, 2, 0))
    r = ag.repeat_interleave(T([2, 0, 1]))
    assert r.dtype == ag.int64
    eq(r, np.array([0, 0, 2]))
    with pytest.raises(RuntimeError, match="same size"):
        ag.repeat_interleave(T(a), T([1, 2]), dim=1)
    with pytest.raises(RuntimeError, match="negative"):
        ag.repeat_interleave(T(a), -1)


def test_tril_triu_inplace():
    a = A(3, 4)
    eq(ag.tril(T(a)), np.tril(a))
    eq(T(a).triu(diagonal=-1), np.triu(a, -1))
    b = A(2, 3, 3)
    eq(ag.tril(T(b), 1), np.tril(b, 1))
    x = T(a)
    assert x.tril_(1) is x
    eq(x, np.tril(a, 1))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ag.triu(T(A(3)))
    w = T(a, requires_grad=True)
    y = w * 1
    y.triu_()
    y.sum().backward()
    eq(w.grad, np.triu(np.ones((3, 4))))


def test_broadcast_meshgrid():
    a, b = T(A(3, 1)), T(A(4))
    x, y = ag.broadcast_tensors(a, b)
    assert x.shape == y.shape == (3, 4) and x._data._storage is a._data._storage
    assert ag.broadcast_shapes((3, 1), (4,)) == (3, 4)
    with pytest.raises(RuntimeError, match="broadcast"):
        ag.broadcast_tensors(T(A(3)), T(A(4)))
    u, v = T([1.0, 2.0, 3.0]), T([4.0, 5.0])
    for indexing in ("ij", "xy"):
        got = ag.meshgrid(u, v, indexing=indexing)
        for g, r in zip(got, np.meshgrid(u.numpy(), v.numpy(), indexing=indexing)):
            eq(g, r)
    with pytest.warns(UserWarning, match="indexing argument"):
        g = ag.meshgrid(u, v)
    assert g[0].shape == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.meshgrid([u, v], indexing="ij")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        ag.meshgrid(T(A(2, 2)), indexing="ij")


def test_diag_embed_rot90_unfold():
    a = A(2, 3)
    r = ag.diag_embed(T(a))
    ref = np.zeros((2, 3, 3))
    for i in range(2):
        ref[i] = np.diag(a[i])
    eq(r, ref)
    r = T(a).diag_embed(offset=1, dim1=0, dim2=2)
    assert r.shape == (4, 2, 4)
    np.testing.assert_array_equal(r.numpy()[:, 1, :], np.diag(a[1], 1))
    for k in (-1, 0, 1, 2, 3, 5):
        eq(ag.rot90(T(a), k), np.rot90(a, k))
        eq(T(a).rot90(k, (1, 0)), np.rot90(a, k, (1, 0)))
    with pytest.raises(RuntimeError, match="different"):
        ag.rot90(T(a), 1, (0, 0))
    x = T(np.arange(10.0).reshape(2, 5))
    u = x.unfold(1, 3, 2)
    eq(u, np.lib.stride_tricks.sliding_window_view(x.numpy(), 3, axis=1)[:, ::2])
    assert u._data._storage is x._data._storage
    x[0, 2] = 100.0  # a view: sees writes to the base
    assert u[0, 0, 2].item() == 100.0 and u[0, 1, 0].item() == 100.0
    assert T(3.0).unfold(0, 1, 1).shape == (1,)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(1, 6, 1)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(mode):
    a = A(2, 3, 4)
    pads = (2, 1, 1, 2)
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    ref = np.pad(a, ((0, 0), (1, 2), (2, 1)), mode=np_mode)
    eq(ag.pad(T(a), pads, mode=mode), ref)
    x = T(a, requires_grad=True)
    g = A(*ref.shape)
    (gx,) = ag.grad(ag.pad(x, pads, mode=mode), x, T(g))
    # adjoint: <pad(x), g> == <x, pad^T(g)>
    np.testing.assert_allclose((ref * g).sum(), (a * gx.numpy()).sum())


def test_pad_constant_value_crop_errors():
    a = A(3, 4)
    eq(ag.pad(T(a), (1, 1), value=2.5), np.pad(a, ((0, 0), (1, 1)), constant_values=2.5))
    eq(ag.pad(T(a), (-1, 1, 0, -2)), np.pad(a, ((0, 0), (0, 1)))[:1, 1:])
    with pytest.raises(RuntimeError, match="divisible by 2"):
        ag.pad(T(a), (1,))
    with pytest.raises(RuntimeError, match="reflect"):
        ag.pad(T(a), (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="value"):
        ag.pad(T(a), (1, 1), mode="replicate", value=1.0)
    assert type(ag.pad(T(a, requires_grad=True), (1, 1), mode="reflect").grad_fn).__name__ == \
        "ReflectionPadBackward0"


def test_int_results_have_no_grad_fn_and_methods():
    x = T([[1, 2], [3, 4]])
    for r in (x.flip(0), x.roll(1), x.repeat(2, 1), ag.cat([x, x]), x.tril(), ag.pad(x, (1, 1))):
        assert r.grad_fn is None and r.dtype == ag.int64
    for name in ("flip", "fliplr", "flipud", "roll", "repeat", "repeat_interleave", "tile", "tril", "triu",
                 "diag_embed", "rot90", "unfold", "tril_", "triu_"):
        assert hasattr(ag.Tensor, name), name


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_diff_values_against_numpy(device):
    if device == "cuda" and not ag.cuda.is_available():
        pytest.skip("no cuda device, not even interpreted")

    def check(t, ref):  # on the host: Tensor.numpy() refuses cuda tensors, as PyTorch's
        assert t.device.type == device
        eq(t.cpu(), ref)

    a = A(3, 7, 5)
    x = T(a, device=device)
    for dim in (0, 1, -1):
        for n in (1, 2, 4, 9):
            check(ag.diff(x, n=n, dim=dim), np.diff(a, n=n, axis=dim))
    p, q = A(3, 2, 5), A(3, 1, 5)
    check(ag.diff(x, 2, 1, prepend=T(p, device=device), append=T(q, device=device)),
          np.diff(a, 2, axis=1, prepend=p, append=q))
    check(x[:, ::2, 1:].diff(), np.diff(a[:, ::2, 1:]))  # a non-contiguous view, the method form
    check(ag.diff(T(np.array([True, False, False, True]), device=device)), np.array([True, False, True]))
    i = T(np.array([3, 1, 4, 1, 5]), device=device)
    check(ag.diff(i, 2), np.diff([3, 1, 4, 1, 5], 2))
    r = ag.diff(i, prepend=T(np.array([0.5], np.float32), device=device))  # cat promotes, as in PyTorch
    assert r.dtype == ag.float32
    check(r, np.diff(np.array([0.5, 3, 1, 4, 1, 5], np.float32)))
    assert ag.diff(x, n=0, prepend=x) is x  # PyTorch: n=0 is the input, prepend/append ignored
    for shape, dim, n, out in (((0,), 0, 3, (0,)), ((3, 0), -1, 1, (3, 0)), ((4, 1), 0, 5, (0, 1)), ((1,), 0, 1, (0,))):
        r = ag.diff(ag.zeros(shape, device=device), n=n, dim=dim)
        assert tuple(r.shape) == out and r.device.type == device


def test_diff_errors():
    x = T(A(3, 4))
    with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
        ag.diff(T(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        ag.diff(x, n=-1)
    with pytest.raises(TypeError, match="argument 'n' must be int"):
        ag.diff(x, n=1.0)
    with pytest.raises(IndexError, match=r"diff\(\): Dimension out of range"):
        ag.diff(x, dim=2)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        ag.diff(x, prepend=T(A(3)))
    with pytest.raises(RuntimeError, match=r"except along the differencing dimension; input.size\(0\) = 3, but got"):
        ag.diff(x, append=T(A(2, 1)))
    with pytest.raises(TypeError, match="argument 'prepend' must be Tensor"):
        ag.diff(x, prepend=1.0)
