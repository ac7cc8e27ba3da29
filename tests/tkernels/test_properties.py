"""Property tests (hypothesis): broadcasting, promotion, basic indexing, view round trips and elementwise
arithmetic against NumPy and the explicit promotion table, on random shapes, layouts and dtypes."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tkernels as tk

from .harness import TOLS, make, noncontig
from .test_dtypes import NAMES, PROMOTION

SETTINGS = settings(deadline=None, max_examples=120, database=None)


# ------------------------------------------------------------------------------------------------ helpers
def _offsets(shape, strides):
    if not shape:
        return np.zeros(1, dtype=np.int64)
    idx = np.indices(shape).reshape(len(shape), -1)
    return (np.asarray(strides, dtype=np.int64)[:, None] * idx).sum(0)


def view_possible(x: tk.Array, new_shape) -> bool:
    """Brute force: can the elements of ``x`` (row-major order) be addressed as ``new_shape`` with one stride
    per dimension? That is exactly when reshape can return a view."""
    offs = _offsets(x.shape, x.strides)
    if offs.size == 0:
        return True
    cand = []
    for d, s in enumerate(new_shape):
        if s == 1:
            cand.append(0)
            continue
        unit = [0] * len(new_shape)
        unit[d] = 1
        cand.append(int(offs[np.ravel_multi_index(unit, new_shape)] - offs[0]))
    return np.array_equal(offs[0] + _offsets(new_shape, cand), offs)


def shares(a: tk.Array, b: tk.Array) -> bool:
    return a.size > 0 and b.size > 0 and np.shares_memory(a.numpy(), b.numpy(), max_work=None)


@st.composite
def sources(draw, max_dims=4, max_side=5, min_dims=0):
    """(x, n): an Array that may be permuted and sliced with steps (a strided view), and a NumPy array with the
    same values in separate memory."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))
    n = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    x = tk.asarray(n.copy())
    nd = len(shape)
    if nd and draw(st.booleans()):
        perm = draw(st.permutations(range(nd)))
        x, n = x.permute_dims(perm), n.transpose(perm)
    if nd and draw(st.booleans()):
        key = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in range(nd))
        x, n = x[key], n[key]
    return x, n


@st.composite
def factorization(draw, size, max_dims=4):
    """A random shape with ``size`` elements."""
    k = draw(st.integers(0 if size == 1 else 1, max_dims))
    if size == 0:
        dims = [draw(st.integers(0, 3)) for _ in range(k)]
        dims[draw(st.integers(0, k - 1))] = 0
        return tuple(dims)
    dims = []
    rest = size
    for _ in range(max(k - 1, 0)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    if k:
        dims.append(rest)
    return tuple(draw(st.permutations(dims))) if dims else ()


@st.composite
def basic_keys(draw, shape):
    """A basic index for ``shape``: ints, slices (any start/stop, steps of both signs), None, one Ellipsis."""
    bound = st.none() | st.integers(-7, 7)
    parts = []
    for size in shape:
        kinds = ["slice", "full", "int"] if size else ["slice", "full"]
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            step = draw(st.none() | st.integers(-3, 3).filter(bool))
            parts.append(slice(draw(bound), draw(bound), step))
        else:
            parts.append(slice(None))
    if draw(st.booleans()):  # an Ellipsis stands for a run of full dimensions
        i = draw(st.integers(0, len(parts)))
        j = draw(st.integers(i, len(parts)))
        parts = parts[:i] + [Ellipsis] + parts[j:]
    else:  # trailing dimensions may be left out
        parts = parts[:draw(st.integers(0, len(parts)))]
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if len(parts) == 1 and draw(st.booleans()):
        return parts[0]
    return tuple(parts)


# ------------------------------------------------------------------------------------------- broadcasting
shape_st = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


@SETTINGS
@given(st.lists(shape_st | st.sampled_from([(1,), (1, 1), (3, 1), (1, 3)]), min_size=1, max_size=3))
def test_broadcast_shapes_matches_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="broadcast"):
            tk.broadcast_shapes(*shapes)
        return
    assert tk.broadcast_shapes(*shapes) == expected
    arrays = [tk.zeros(s) for s in shapes]
    assert all(a.shape == expected for a in tk.broadcast_arrays(*arrays))


@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3), st.booleans())
def test_binary_op_broadcasts_like_numpy(shapes, swap):
    s1, s2 = shapes.input_shapes
    if swap:
        s1, s2 = s2, s1
    r = tk.add(tk.zeros(s1), tk.ones(s2))
    assert r.shape == np.broadcast_shapes(s1, s2)


# ---------------------------------------------------------------------------------------------- promotion
@SETTINGS
@given(st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_promotion_of_random_pairs_matches_the_table(a, b):
    expected = getattr(tk, PROMOTION[a, b])
    assert tk.promote_types(a, b) is expected
    assert tk.result_type(tk.zeros(1, dtype=getattr(tk, a)), getattr(tk, b)) is expected
    x = tk.ones((2,), dtype=getattr(tk, a))
    y = tk.ones((3, 1), dtype=getattr(tk, b))
    assert tk.multiply(x, y).dtype is expected
    assert tk.equal(x, y).dtype is tk.bool


# --------------------------------------------------------------------------------------------- indexing
@st.composite
def indexing_case(draw):
    x, n = draw(sources(max_dims=4, max_side=5))
    return x, n, draw(basic_keys(x.shape))


@SETTINGS
@given(indexing_case())
def test_basic_indexing_matches_numpy_and_is_a_view(case):
    x, n, key = case
    r = x[key]
    e = n[key]
    assert r.shape == np.shape(e), key
    np.testing.assert_array_equal(r.numpy(), e)
    # a view: writing through it changes the source exactly where NumPy's index points
    r[...] = -1.0
    n[key] = -1.0
    np.testing.assert_array_equal(x.numpy(), n)


# ------------------------------------------------------------------------------------------ view round trips
@st.composite
def reshape_case(draw):
    x, n = draw(sources())
    return x, n, draw(factorization(x.size))


@SETTINGS
@given(reshape_case())
def test_reshape_round_trip_and_view_rule(case):
    x, n, shape = case
    r = x.reshape(shape)
    np.testing.assert_array_equal(r.numpy(), n.reshape(shape))
    back = r.reshape(x.shape)
    np.testing.assert_array_equal(back.numpy(), n)
    if x.size:
        assert shares(r, x) == view_possible(x, shape), (x.shape, x.strides, shape)
        if view_possible(x, shape):
            np.testing.assert_array_equal(x.view(shape).numpy(), n.reshape(shape))
        else:
            with pytest.raises(RuntimeError, match="view"):
                x.view(shape)


@st.composite
def permute_case(draw):
    x, n = draw(sources())
    return x, n, draw(st.permutations(range(x.ndim)))


@SETTINGS
@given(permute_case())
def test_permute_and_inverse_permute(case):
    x, n, perm = case
    p = tk.permute_dims(x, tuple(perm))
    np.testing.assert_array_equal(p.numpy(), n.transpose(perm))
    inv = tuple(int(i) for i in np.argsort(perm))
    q = p.permute_dims(inv)
    assert q.shape == x.shape and q.strides == x.strides and q.storage_offset() == x.storage_offset()
    np.testing.assert_array_equal(q.numpy(), n)
    if x.size:
        assert shares(p, x)


@st.composite
def expand_case(draw):
    x, n = draw(sources(max_dims=3))
    k = draw(st.integers(1, 3))
    axes = draw(st.lists(st.integers(0, x.ndim + k - 1), min_size=k, max_size=k, unique=True))
    neg = draw(st.booleans())
    return x, n, tuple(a - (x.ndim + k) if neg else a for a in axes)


@SETTINGS
@given(expand_case())
def test_expand_dims_then_squeeze(case):
    x, n, axes = case
    e = tk.expand_dims(x, axis=axes)
    np.testing.assert_array_equal(e.numpy(), np.expand_dims(n, axes))
    s = tk.squeeze(e, axis=axes)
    assert s.shape == x.shape
    np.testing.assert_array_equal(s.numpy(), n)
    if x.size:
        assert shares(e, x) and shares(s, x)


@st.composite
def flatten_case(draw):
    x, n = draw(sources(min_dims=1))
    a = draw(st.integers(0, x.ndim - 1))
    b = draw(st.integers(a, x.ndim - 1))
    return x, n, a, b


@SETTINGS
@given(flatten_case())
def test_flatten_then_unflatten(case):
    x, n, a, b = case
    f = tk.flatten(x, a, b)
    merged = x.shape[:a] + (math.prod(x.shape[a:b + 1]),) + x.shape[b + 1:]
    assert f.shape == merged
    np.testing.assert_array_equal(f.numpy(), n.reshape(merged))
    u = tk.unflatten(f, a, x.shape[a:b + 1])
    assert u.shape == x.shape
    np.testing.assert_array_equal(u.numpy(), n)
    if x.size:
        assert shares(f, x) == view_possible(x, merged)


# ------------------------------------------------------------------------------------------- elementwise
@st.composite
def arith_case(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=5))
    return (shapes.input_shapes, draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES)),
            draw(st.integers(0, 2**32 - 1)), draw(st.booleans()), draw(st.sampled_from(["add", "multiply"])))


@SETTINGS
@given(arith_case())
def test_add_multiply_match_numpy(case):
    (s1, s2), d1, d2, seed, strided, op = case
    if (s1 == ()) != (s2 == ()):
        d2 = d1  # a 0-d operand with a dimensioned one follows its own rule (test_operators checks it)
    rng = np.random.default_rng(seed)
    a, b = make(rng, s1, d1), make(rng, s2, d2)
    x, y = tk.asarray(a), tk.asarray(b)
    if strided:
        x, y = noncontig(x), noncontig(y)
    rd = PROMOTION[d1, d2]
    if rd == "bool" and op == "add":
        expected = np.logical_or(a, b)  # bool + bool is "or" (PyTorch)
    else:
        cd = np.float32 if rd in ("float16", "bfloat16") else np.dtype(rd)
        expected = getattr(np, op)(a.astype(cd), b.astype(cd)).astype(tk.dtypes.as_dtype(rd).numpy)
    r = getattr(tk, op)(x, y)
    assert r.dtype is getattr(tk, rd) and r.shape == expected.shape
    if rd in TOLS:
        rtol, atol = TOLS[rd]
        np.testing.assert_allclose(r.numpy().astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(r.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), a)  # inputs unchanged
