"""``Array.__getitem__`` / ``__setitem__`` against NumPy: basic indices (ints, slices of any step, None,
Ellipsis), integer and boolean array indices (lists, NumPy arrays, Arrays), their mixtures (NumPy's placement
rule for advanced indices separated by a slice), 0-d arrays, empty results, views versus copies, and bad keys."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tkernels as tk

SHAPE = (4, 5, 6)


@pytest.fixture
def base():
    a = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    return a, tk.asarray(a.copy())


def np_key(key):
    """The key with Arrays replaced by their NumPy values (the reference's key)."""
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(k.numpy() if isinstance(k, tk.Array) else k for k in key)


def kid(key) -> str:
    """A short test id for a key."""
    if isinstance(key, tuple):
        return "(" + ",".join(kid(k) for k in key) + ")"
    if isinstance(key, tk.Array | np.ndarray):
        return f"{type(key).__name__}{key.shape}{key.dtype}"
    if isinstance(key, slice):
        return f"{key.start}:{key.stop}:{key.step}"
    return "..." if key is Ellipsis else repr(key)[:24]


def check_get(a, x, key):
    expected = a[np_key(key)]
    got = x[key]
    assert isinstance(got, tk.Array)
    assert got.shape == expected.shape, (key, got.shape, expected.shape)
    assert got.dtype == tk.dtypes.as_dtype(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected, err_msg=repr(key))
    return got


def check_set(a, x, key, value):
    """``x[key] = value`` as NumPy does it to ``a`` (which is updated: it stays x's expected value)."""
    a[np_key(key)] = value.numpy() if isinstance(value, tk.Array) else value
    x[key] = value
    np.testing.assert_array_equal(x.numpy(), a, err_msg=repr(key))


B = np.zeros(SHAPE, bool)
B[1, 2:, ::2] = True
M2 = np.zeros((4, 5), bool)  # two true elements
M2[1, 2] = M2[3, 0] = True
BASIC_KEYS = [
    0, -1, 3, -4, (1, 2), (1, -2, -6), (-1, 4, 5),
    slice(None), slice(1, 3), slice(None, None, -1), slice(3, 0, -2), slice(-1, -5, -1), slice(None, None, 3),
    slice(10, 20), slice(-100, 100, 2), slice(2, 2), slice(3, 1),
    (slice(None), slice(None, None, -2), slice(1, None, 4)), (slice(3, 0, -2), None, Ellipsis, 2),
    Ellipsis, (Ellipsis, None), (None,), (), (Ellipsis, 0), (0, Ellipsis, -1), (None, 1, None, slice(None), None),
    (1, slice(None, None, -1), Ellipsis), (Ellipsis, slice(4, None, -3)),
]
ADVANCED_KEYS = [
    [0, 2], [-1, 0, -1], [[0, 1], [2, 3]], np.array([3, -4, 1]), tk.asarray([1, 3]), tk.asarray([[0], [-1]]),
    ([0, 1], [2, 3]), ([0, 1], [2, 3], [4, 5]), ([[0], [1]], [0, 1, 2]),
    (slice(None), [0, -1]), (Ellipsis, [1, 2]), (None, [1, 2]), ([1, 2], None),
    (slice(None, None, -1), tk.asarray([4, 0]), slice(1, 5, 2)),
    (np.int64(1), [0, 1]), (tk.asarray(2),), (np.array(2),),
    [], np.array([], dtype=np.int64), tk.asarray(np.zeros(0, np.int32)),
    tk.asarray(np.array([0, 2], np.int32)), tk.asarray(np.array([1], np.int16)), tk.asarray(np.array([1, 0], np.uint8)),
]
MASK_KEYS = [
    B, tk.asarray(B), B[:, :, 0], (1, tk.asarray(B[1])), (0, B[0] | True), [True, False, True, False],
    (slice(None), [True, False, True, False, True]), (Ellipsis, tk.asarray(np.arange(6) % 2 == 0)),
    np.zeros(SHAPE, bool), True, False, (M2, [0, 5]), ([1, 2], np.array([True, False, False, True, False])),
]
# NumPy's rule: advanced indices next to each other keep their place; separated by a slice (or an int, which
# counts as advanced) they go first
PLACEMENT_KEYS = [
    (([0, 1], slice(None), [2, 3]), (2, 5)),
    ((slice(None), [0, 1], [2, 3]), (4, 2)),
    (([0, 1], [2, 3], slice(None)), (2, 6)),
    ((0, slice(None), [1, 2]), (2, 5)),
    (([1, 2], 1, [2, 3]), (2,)),
    ((slice(None), 1, [2, 3]), (4, 2)),
    (([[0], [1]], slice(1, 3), [[0, 1, 2]]), (2, 3, 2)),
    ((tk.asarray([0, 1]), Ellipsis, tk.asarray([0, 5])), (2, 5)),
    ((None, [0, 1], None, [2, 3]), (2, 1, 1, 6)),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=kid)
def test_basic_getitem_matches_numpy_and_is_a_view(base, key):
    a, x = base
    got = check_get(a, x, key)
    assert got._storage is x._storage
    if got.size:
        before = x.numpy().copy()
        got[...] = 42.0  # writing through the view changes the base
        e = before.copy()
        e[np_key(key)] = 42.0
        np.testing.assert_array_equal(x.numpy(), e)


@pytest.mark.parametrize("key", ADVANCED_KEYS + MASK_KEYS, ids=kid)
def test_advanced_getitem_matches_numpy_and_is_a_copy(base, key):
    a, x = base
    got = check_get(a, x, key)
    if got.size:
        got[...] = 42.0
        np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("key,shape", PLACEMENT_KEYS, ids=lambda v: "" if isinstance(v[0], int) else kid(v))
def test_mixed_advanced_and_basic_follow_numpy_placement(base, key, shape):
    a, x = base
    assert check_get(a, x, key).shape == shape


@pytest.mark.parametrize("step", [1, 2, 3, 7, -1, -2, -3, -7])
def test_every_slice_matches_numpy(step):
    a = np.arange(7 * 3).reshape(7, 3).astype(np.int64)
    x = tk.asarray(a)
    bounds = [None, 0, 1, 3, 6, 7, 50, -1, -3, -7, -50]
    for start in bounds:
        for stop in bounds:
            s = slice(start, stop, step)
            np.testing.assert_array_equal(x[s].numpy(), a[s], err_msg=repr(s))
            np.testing.assert_array_equal(x[:, s].numpy(), a[:, s], err_msg=repr(s))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_basic_indices_property(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = tk.asarray(a.copy())
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    got = check_get(a, x, key)
    assert got._storage is x._storage
    value = data.draw(st.sampled_from(["scalar", "full", "row"]))
    sel = a[key].shape
    v = -1.0 if value == "scalar" else tk.asarray(-np.arange(int(np.prod(sel)), dtype=np.float64).reshape(sel))
    if value == "row" and sel:
        v = tk.asarray(-np.arange(sel[-1], dtype=np.float64) - 1)
    check_set(a, x, key, v)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_integer_array_indices_property(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = tk.asarray(a.copy())
    idx = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(min_dims=0, max_dims=2)))
    n = data.draw(st.integers(1, len(shape)))
    kind = data.draw(st.sampled_from(["numpy", "list", "array"]))
    key = tuple(i if kind == "numpy" else i.tolist() if kind == "list" and i.ndim else tk.asarray(i) for i in idx[:n])
    check_get(a, x, key)
    check_set(a, x, key, 7.0)


# ---------------------------------------------------------------------------------------------- 0-d and empty
def test_zero_d_array_indexing():
    z = tk.asarray(np.float32(3.5))
    for key, shape in (((), ()), (Ellipsis, ()), (None, (1,)), (True, (1,)), (False, (0,)), ((None, Ellipsis), (1,))):
        r = z[key]
        assert r.shape == shape, key
        np.testing.assert_array_equal(r.numpy(), np.float32(3.5)[key])
    assert z[()]._storage is z._storage
    z[()] = 5
    assert z.item() == 5.0
    z[...] = tk.asarray(np.float32(6))
    assert z.item() == 6.0
    z[True] = 7
    assert z.item() == 7.0
    z[False] = 8
    assert z.item() == 7.0
    with pytest.raises(IndexError, match=r"too many indices for an array of 0 dimension"):
        z[0]


@pytest.mark.parametrize("key", [slice(2, 2), (slice(None), slice(5, None)), [], (Ellipsis, []),
                                 np.zeros(SHAPE, bool), (slice(0, 0), [1, 2])], ids=kid)
def test_empty_results(base, key):
    a, x = base
    got = check_get(a, x, key)
    assert got.size == 0
    check_set(a, x, key, 1.0)


def test_empty_array_indexing():
    a = np.zeros((0, 3), np.float32)
    x = tk.asarray(a)
    for key in ((slice(None), 1), (Ellipsis, [0, 2]), (slice(None, None, -1),), ([],)):
        check_get(a, x, key)


# ---------------------------------------------------------------------------------------------------- setitem
SET_CASES = [
    (1, 7.0), (-1, np.float32(2)), ((1, 2, 3), -3.0), ((slice(None, None, -1), 2), "row"), ((Ellipsis, 0), "full"),
    ((None, 1), "col"), (slice(1, 4, 2), "row"), ((), 4.0), (Ellipsis, "row"),
    ((slice(3, 0, -2), slice(None, None, -1)), "full"),
    ([0, 2], 1.0), ([0, 2], "full"), ([0, 2], "row"), ([-1, -4], "col"), (([0, 1], [2, 3]), "col"),
    ((slice(None), [0, 1], [2, 3]), "full"), ((0, slice(None), [1, 2]), "row"), (([1, 2], 1, [2, 3]), "full"),
    (tk.asarray([1, 3]), "row"), (np.array([[0], [3]]), "full"),
    (B, -1.0), (B, "full"), (tk.asarray(B), 2.0), (B[:, :, 0], "row"), ((Ellipsis, np.arange(6) % 2 == 0), "col"),
    (True, 1.0), (False, 1.0), ([], 1.0), ((M2, [0, 5]), "full"),
]


def _value(a, key, kind):
    """A value for ``x[key] = value``: a scalar, or an Array of the selection's shape / its last row / a column."""
    if not isinstance(kind, str):
        return kind
    sel = a[np_key(key)].shape
    n = int(np.prod(sel))
    if kind == "full":
        return tk.asarray(np.arange(n, dtype=np.float32).reshape(sel) + 100)
    if kind == "row":
        return tk.asarray(np.arange(sel[-1], dtype=np.float32) + 100)
    return tk.asarray(np.arange(sel[-2] if len(sel) > 1 else 1, dtype=np.float32).reshape(-1, 1) + 100)


@pytest.mark.parametrize("key,kind", SET_CASES, ids=lambda v: kid(v) if not isinstance(v, str) else v)
def test_setitem_matches_numpy(base, key, kind):
    a, x = base
    check_set(a, x, key, _value(a, key, kind))


def test_setitem_values_of_other_kinds(base):
    a, x = base
    check_set(a, x, 0, np.ones((5, 6)))  # a NumPy value
    check_set(a, x, [1], np.full((5, 6), 2.0))
    check_set(a, x, (2, 0), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # a list value
    check_set(a, x, ([3], 1), tk.asarray(np.arange(6, dtype=np.float64)))  # another dtype: cast
    xi = tk.asarray(np.zeros(4, np.int32))
    xi[1:] = tk.asarray([1.7, -2.7, 3.2])  # floats to ints truncate toward zero
    xi[[0]] = 9.9
    np.testing.assert_array_equal(xi.numpy(), [9, 1, -2, 3])
    xb = tk.asarray(np.zeros(4, bool))
    xb[1:] = 2
    xb[[0]] = 0
    np.testing.assert_array_equal(xb.numpy(), [False, True, True, True])
    xh = tk.asarray(np.zeros(3, np.float32)).astype(tk.bfloat16)
    xh[[0, 2]] = tk.asarray([1.5, 2.5])
    np.testing.assert_array_equal(xh.numpy().astype(np.float32), [1.5, 0, 2.5])


def test_setitem_overlapping_value(base):
    a, x = base
    x[1:] = x[:-1]
    e = a.copy()
    e[1:] = a[:-1]
    np.testing.assert_array_equal(x.numpy(), e)
    x = tk.asarray(a.copy())
    x[[1, 2, 3]] = x[:3]
    np.testing.assert_array_equal(x.numpy(), e)
    x = tk.asarray(a.copy())
    x[::-1] = x
    np.testing.assert_array_equal(x.numpy(), a[::-1])


@pytest.mark.parametrize("key,shape", [(slice(0, 2), (3, 5, 6)), ([0, 1], (3, 5, 6)), (B, (3,)),
                                       ((slice(None), 0), (5,))], ids=kid)
def test_setitem_value_must_broadcast(base, key, shape):
    a, x = base
    with pytest.raises(ValueError, match=r"setitem: cannot (write|assign) a value of shape \(.*\) (in)?to"):
        x[key] = tk.asarray(np.ones(shape, np.float32))
    np.testing.assert_array_equal(x.numpy(), a)


# ------------------------------------------------------------------------------------------------- bad keys
@pytest.mark.parametrize("key,axis,index,size", [
    ((4,), 0, 4, 4), ((-5,), 0, -5, 4), ((0, 5), 1, 5, 5), ((0, 0, -7), 2, -7, 6),
    (([0, 4],), 0, 4, 4), ((slice(None), [5]), 1, 5, 5), ((Ellipsis, np.array([-7])), 2, -7, 6),
    ((tk.asarray([0, 9]),), 0, 9, 4), ((None, [0, 5]), 0, 5, 4),
], ids=kid)
def test_out_of_range_index_names_axis_and_size(base, key, axis, index, size):
    a, x = base
    msg = rf"index {index} is out of bounds for axis {axis} with size {size}"
    with pytest.raises(IndexError, match=r"^index: .*" + msg):
        x[key]
    with pytest.raises(IndexError, match=r"^(setitem|index): .*" + msg):
        x[key] = 1.0
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("key", [[1.0], np.array([0.0, 1.0]), tk.asarray([1.0]), (0, tk.asarray([0.5])), 1.5,
                                 np.float64(1.0)], ids=kid)
def test_float_indices_are_rejected(base, key):
    a, x = base
    with pytest.raises(IndexError, match=r"integer"):
        x[key]
    with pytest.raises(IndexError, match=r"integer"):
        x[key] = 0.0
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("key", [(0, 0, 0, 0), (Ellipsis, 0, 0, 0, 0), ([0], [0], [0], [0]), (B, 0),
                                 (0, slice(None), 0, [0])], ids=kid)
def test_too_many_indices(base, key):
    a, x = base
    with pytest.raises(IndexError, match=r"too many indices"):
        x[key]
    with pytest.raises(IndexError, match=r"too many indices"):
        x[key] = 0.0


@pytest.mark.parametrize("key,match", [
    ((Ellipsis, Ellipsis), r"single ellipsis"), ("a", r"valid indices"), ([0, slice(None)], r"cannot use"),
    (np.zeros((2, 5), bool), r"boolean index did not match"), ([True, False], r"boolean index did not match"),
    (([0, 1], [0, 1, 2]), r"broadcast"),
], ids=kid)
def test_bad_keys(base, key, match):
    _, x = base
    with pytest.raises(IndexError, match=match):
        x[key]


def test_zero_step_is_an_error(base):
    _, x = base
    with pytest.raises(ValueError, match=r"step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match=r"step cannot be zero"):
        x[[0], ::0]


def test_bfloat16_and_bool_keep_their_dtype():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    xb = tk.asarray(a).astype(tk.bfloat16)
    for key in (1, (slice(None), [0, 2]), xb > 2):
        assert xb[key].dtype == tk.bfloat16
    xbool = tk.asarray(a > 2)
    assert xbool[[0, 1], [2, 0]].dtype == tk.bool
    np.testing.assert_array_equal(xbool[[0, 1], [2, 0]].numpy(), [False, True])


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_nan_into_an_integer_array_is_refused_by_advanced_setitem():
    xi = tk.asarray(np.zeros(4, np.int32))
    with pytest.raises(ValueError, match=r"nan"):
        xi[[0]] = float("nan")


def test_integer_overflow_in_setitem_is_refused():
    xi = tk.asarray(np.zeros(4, np.int8))
    with pytest.raises((ValueError, OverflowError, RuntimeError)):
        xi[0] = 300
