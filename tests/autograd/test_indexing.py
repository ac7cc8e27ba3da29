"""Indexing ops (autograd/ops/indexing.py): values against NumPy, repeated indices, broadcasting masks,
in-place forms through the generic machinery, errors, non-differentiable outputs. Gradients:
gradinfos/indexing.py."""

import numpy as np
import pytest

import autograd as ag

RNG = np.random.default_rng(1)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def eq(t, ref):
    assert tuple(t.shape) == np.shape(ref)
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-12, atol=1e-12)


IDX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])


def np_scatter(x, dim, idx, src, op=None):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        tgt = tuple(tgt)
        out[tgt] = src[pos] if op is None else op(out[tgt], src[pos])
    return out


def test_gather_scatter_values():
    x, s = A(3, 4), A(2, 4)
    eq(ag.gather(T(x), 0, T(IDX)), np.take_along_axis(x, IDX, 0))
    eq(T(x).gather(-1, T(IDX[:, :3])), np.take_along_axis(x[:2], IDX[:, :3], 1))
    eq(ag.scatter_add(T(x), 0, T(IDX), T(s)), np_scatter(x, 0, IDX, s, np.add))
    eq(T(x).scatter(1, T(np.array([[3, 0], [1, 2]])), T(s)),
       np_scatter(x, 1, np.array([[3, 0], [1, 2]]), s))
    eq(T(x).scatter(1, T(np.array([[3, 0]])), 2.5), np_scatter(x, 1, np.array([[3, 0]]), np.full((1, 2), 2.5)))
    eq(ag.scatter(T(x), 1, T(np.array([[3, 0]])), value=-1.0),
       np_scatter(x, 1, np.array([[3, 0]]), np.full((1, 2), -1.0)))
    eq(T(x).scatter(0, T(IDX), T(s), reduce="add"), np_scatter(x, 0, IDX, s, np.add))
    eq(T(x).scatter(0, T(IDX), T(s), reduce="multiply"), np_scatter(x, 0, IDX, s, np.multiply))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x, s = A(3, 4), A(2, 4)
    groups = {}
    for pos in np.ndindex(*IDX.shape):
        groups.setdefault((IDX[pos], pos[1]), []).append(s[pos])
    ref = x.copy()
    fn = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for tgt, vals in groups.items():
        ref[tgt] = fn(vals + [x[tgt]] if include_self else vals)
    eq(T(x).scatter_reduce(0, T(IDX), T(s), reduce, include_self=include_self), ref)
    xi = np.arange(12).reshape(3, 4)
    r = ag.scatter_reduce(T(xi), 0, T(IDX), T(np.arange(8).reshape(2, 4)), reduce, include_self=include_self)
    assert r.dtype == ag.int64 and r.grad_fn is None


def test_scatter_reduce_inplace_and_errors():
    x = T(A(3, 4))
    ref = x.numpy().copy()
    s = A(2, 4)
    x.scatter_reduce_(0, T(IDX), T(s), "amax")
    for pos in np.ndindex(*IDX.shape):
        ref[IDX[pos], pos[1]] = max(ref[IDX[pos], pos[1]], s[pos])
    eq(x, ref)
    with pytest.raises(RuntimeError, match="reduce argument"):
        x.scatter_reduce(0, T(IDX), T(s), "max")
    with pytest.raises(RuntimeError, match="reduce argument"):
        x.scatter(0, T(IDX), T(s), reduce="max")


def test_repeated_index_gradients_accumulate():
    x = T(A(3, 4), requires_grad=True)
    ag.gather(x, 0, T(IDX)).sum().backward()
    ref = np.zeros((3, 4))
    for pos in np.ndindex(*IDX.shape):
        ref[IDX[pos], pos[1]] += 1
    eq(x.grad, ref)
    x = T(A(3, 2), requires_grad=True)
    x.index_select(0, T([2, 2, 0])).sum().backward()
    eq(x.grad, np.array([[1.0, 1], [0, 0], [2, 2]]))
    src = T(A(3, 2), requires_grad=True)
    y = ag.index_add(T(A(3, 2)), 0, T([1, 1, 0]), src, alpha=2)
    (y * T(np.arange(6.0).reshape(3, 2))).sum().backward()
    eq(src.grad, 2 * np.arange(6.0).reshape(3, 2)[[1, 1, 0]])


def test_index_ops_values():
    x, s = A(3, 4), A(3, 2)
    eq(T(x).index_select(-1, T([3, 3, 0])), x[:, [3, 3, 0]])
    eq(ag.index_select(T(x), 0, T(1)), x[[1]])
    ref = x.copy()
    np.add.at(ref, (slice(None), [1, 1]), -0.5 * s)
    eq(T(x).index_add(1, T([1, 1]), T(s), alpha=-0.5), ref)
    ref = x.copy()
    ref[:, [3, 0]] = s
    eq(ag.index_copy(T(x), 1, T([3, 0]), T(s)), ref)
    ref = x.copy()
    ref[[2, 0]] = 7.0
    eq(T(x).index_fill(0, T([2, 0]), 7.0), ref)
    eq(T(x).index_fill(0, T([2, 0]), T(7.0)), ref)
    with pytest.raises(RuntimeError, match="0-dimensional"):
        T(x).index_fill(0, T([0]), T([1.0]))
    with pytest.raises(RuntimeError, match="must have shape"):
        T(x).index_copy(1, T([3, 0]), T(A(2, 2)))
    with pytest.raises(RuntimeError, match="int64"):
        T(x).index_select(0, T([0.0]))
    with pytest.raises(IndexError, match="out of bounds"):
        T(x).index_select(0, T([3]))


def test_masks():
    x = A(3, 4)
    m = np.array([True, False, True, False])
    eq(ag.masked_fill(T(x), T(m), 0.5), np.where(m, 0.5, x))
    eq(T(x[:1]).masked_fill(T(np.array([[True], [False]])), -1.0),
       np.where(np.array([[True], [False]]), -1.0, x[:1]))  # broadcast both ways
    eq(T(x).masked_fill(T(m), T(2.0)), np.where(m, 2.0, x))
    with pytest.raises(RuntimeError, match="0-dimensional"):
        T(x).masked_fill(T(m), T([1.0]))
    with pytest.raises(RuntimeError, match="bool"):
        T(x).masked_fill(T(m.astype(np.int64)), 1.0)
    eq(ag.masked_select(T(x), T(m)), np.broadcast_to(x, (3, 4))[np.broadcast_to(m, (3, 4))])
    src = A(9)
    ref = x.copy()
    mb = np.broadcast_to(m, (3, 4))
    ref[mb] = src[:mb.sum()]
    eq(ag.masked_scatter(T(x), T(m), T(src)), ref)
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        T(x).masked_scatter(T(m), T(A(5)))


def test_masked_fill_value_gradient():
    x = T(A(2, 3), requires_grad=True)
    v = T(0.5, requires_grad=True)
    m = T(np.array([[True], [False]]))
    y = x.masked_fill(m, v)
    assert y.grad_fn.name() == "MaskedFillBackward1"
    (y * 2).sum().backward()
    eq(v.grad, np.array(6.0))
    eq(x.grad, np.array([[0.0] * 3, [2.0] * 3]))


def test_take_put_along_dim():
    x = A(3, 4)
    i = np.array([[0, -1], [5, 11]])
    eq(ag.take(T(x), T(i)), np.take(x, i))
    ref = x.copy().reshape(-1)
    ref[[1, 11, 6]] = [1.0, 2.0, 3.0]
    eq(T(x).put(T([1, -1, 6]), T(np.array([1.0, 2.0, 3.0]))), ref.reshape(3, 4))
    ref = x.copy().reshape(-1)
    np.add.at(ref, [1, 1, 6], [1.0, 2.0, 3.0])
    eq(T(x).put(T([1, 1, 6]), T(np.array([1.0, 2.0, 3.0])), accumulate=True), ref.reshape(3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        T(x).put(T([12]), T(np.array([1.0])))
    with pytest.raises(RuntimeError, match="same number of elements"):
        T(x).put(T([1, 2]), T(np.array([1.0])))
    j = np.array([[0, 3, 3]])
    eq(ag.take_along_dim(T(x), T(j), dim=1), np.take_along_axis(x, np.broadcast_to(j, (3, 3)), 1))
    eq(T(x).take_along_dim(T(np.array([5, 0]))), x.reshape(-1)[[5, 0]])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ag.take_along_dim(T(x), T(np.array([0])), dim=0)


def test_nonzero_argwhere_one_hot():
    x = T(np.array([[0, 1.5], [2.0, 0]]))
    nz = x.nonzero()
    assert nz.dtype == ag.int64 and nz.grad_fn is None
    eq(nz, np.argwhere(x.numpy()))
    eq(ag.argwhere(x), np.argwhere(x.numpy()))
    rows, cols = ag.nonzero(x, as_tuple=True)
    eq(rows, np.array([0, 1]))
    eq(cols, np.array([1, 0]))
    (r,) = ag.nonzero(T(3.0), as_tuple=True)
    eq(r, np.array([0]))
    assert ag.where(T(np.array([True, False, True])))[0].tolist() == [0, 2]
    oh = ag.one_hot(T(np.array([[0, 2], [1, 1]])))
    assert oh.dtype == ag.int64
    eq(oh, np.eye(3, dtype=np.int64)[[[0, 2], [1, 1]]])
    assert ag.one_hot(T([1]), num_classes=4).shape == (1, 4)
    with pytest.raises(RuntimeError, match="LongTensor"):
        ag.one_hot(T([1.0]))
    req = T(np.array([0.0, 1.0]), requires_grad=True)
    assert req.nonzero().grad_fn is None and req.argwhere().requires_grad is False


_M = np.array([True, False, True, False])
_S12, _S24, _S32, _S6, _S2 = A(1, 2), A(2, 4), A(3, 2), A(6), A(2)
INPLACE_CASES = [
    ("scatter", (1, T(np.array([[3, 0]])), T(_S12)), {}),
    ("scatter_add", (0, T(IDX), T(_S24)), {}),
    ("scatter_reduce", (0, T(IDX), T(_S24), "prod"), {"include_self": False}),
    ("index_add", (0, T([2, 2]), T(_S24)), {"alpha": 0.5}),
    ("index_copy", (1, T([1, 0]), T(_S32)), {}),
    ("index_fill", (1, T([1, 0]), 2.0), {}),
    ("masked_fill", (T(_M), 0.0), {}),
    ("masked_scatter", (T(_M), T(_S6)), {}),
    ("put", (T([0, 5]), T(_S2)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_forms(name, args, kwargs):
    x0 = A(3, 4)
    x = T(x0)
    v = x._version.v
    assert getattr(x, name + "_")(*args, **kwargs) is x
    assert x._version.v > v
    eq(x, getattr(T(x0), name)(*args, **kwargs).numpy())
    # with autograd, through a view of a non-leaf: the base's history gets the gradient
    w = T(x0, requires_grad=True)
    y = w * 2
    getattr(y[:, :], name + "_")(*args, **kwargs)
    assert y.grad_fn.name() == "CopySlices"
    (g,) = ag.grad(y.sum(), w)
    (g_ref,) = ag.grad(getattr(w * 2, name)(*args, **kwargs).sum(), w)
    eq(g, g_ref.numpy())
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(T(x0, requires_grad=True), name + "_")(*args, **kwargs)


def test_inplace_gradients_to_source():
    x = T(A(3, 4), requires_grad=True)
    src = T(A(2, 4), requires_grad=True)
    y = x * 1
    y.scatter_add_(0, T(IDX), src)
    (y * y).sum().backward()
    yv = (x.detach().numpy() + np_scatter(np.zeros((3, 4)), 0, IDX, src.detach().numpy(), np.add))
    eq(x.grad, 2 * yv)
    eq(src.grad, np.take_along_axis(2 * yv, IDX, 0))
    x.grad = None
    m = T(np.array([True, False, True, False]))
    y = x * 3
    y.masked_fill_(m, 0.0)
    y.sum().backward()
    eq(x.grad, np.broadcast_to(np.where(m.numpy(), 0.0, 3.0), (3, 4)))
    z = ag.zeros(3, 4, dtype=ag.float64)
    s = T(A(3, 2), requires_grad=True)
    z.index_copy_(1, T([3, 1]), s)
    assert z.grad_fn is not None
    (z * 2).sum().backward()
    eq(s.grad, np.full((3, 2), 2.0))


def test_methods_installed():
    for name in ("gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
                 "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "put",
                 "nonzero", "argwhere", "scatter_", "scatter_add_", "scatter_reduce_", "index_add_",
                 "index_copy_", "index_fill_", "masked_fill_", "masked_scatter_", "put_"):
        assert hasattr(ag.Tensor, name), name
