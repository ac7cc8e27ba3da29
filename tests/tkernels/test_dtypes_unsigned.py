"""uint16, uint32, uint64: names, limits, the array API's promotion of unsigned with signed integers (uint64 with
a signed integer raises, as in PyTorch), can_cast, literals beyond int64, and the ops on cpu and cuda."""

import numpy as np
import pytest

import tkernels as tk
from tkernels.dtypes import as_dtype

UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
SIGNED = ("int8", "int16", "int32", "int64")
WIDE = ("uint16", "uint32", "uint64")

# The array API standard's mixed-kind integer table (unsigned row x signed column); "-" is undefined there
# (PyTorch raises, NumPy 2 gives float64): tkernels raises TypeError.
_MIXED = """
        int8   int16  int32  int64
uint8   int16  int16  int32  int64
uint16  int32  int32  int32  int64
uint32  int64  int64  int64  int64
uint64  -      -      -      -
"""


def _mixed():
    rows = [ln.split() for ln in _MIXED.strip().splitlines()]
    return {(r[0], c): v for r in rows[1:] for c, v in zip(rows[0], r[1:])}


MIXED = _mixed()


@pytest.mark.parametrize("n", WIDE)
def test_names_numpy_and_limits(n):
    d = getattr(tk, n)
    assert str(d) == n and as_dtype(n) is d and as_dtype(np.dtype(n)) is d and as_dtype(getattr(np, n)) is d
    assert d.itemsize == np.dtype(n).itemsize and d.kind == "u" and not d.is_signed
    info = tk.iinfo(d)
    assert (info.min, info.max, info.bits) == (0, int(np.iinfo(n).max), 8 * d.itemsize)
    assert tk.isdtype(d, "unsigned integer") and tk.isdtype(d, "integral") and tk.isdtype(d, "numeric")
    assert not tk.isdtype(d, "signed integer")
    import autograd as ag

    assert getattr(ag, n) is d


def test_unsigned_with_unsigned_is_the_wider():
    for i, a in enumerate(UNSIGNED):
        for b in UNSIGNED[i:]:
            assert tk.promote_types(a, b) is getattr(tk, b) and tk.promote_types(b, a) is getattr(tk, b)
            assert tk.can_cast(a, b) and (a == b or not tk.can_cast(b, a))


@pytest.mark.parametrize("u", UNSIGNED)
def test_unsigned_with_signed_follows_the_array_api_table(u):
    for s in SIGNED:
        want = MIXED[u, s]
        if want == "-":
            with pytest.raises(TypeError, match="uint64 and int"):
                tk.promote_types(u, s)
            with pytest.raises(TypeError, match="no common dtype"):
                tk.asarray([1], dtype=u) + tk.asarray([1], dtype=s)
            assert not tk.can_cast(u, s) and not tk.can_cast(s, u)
            continue
        assert tk.promote_types(u, s) is getattr(tk, want) and tk.promote_types(s, u) is getattr(tk, want)
        assert tk.can_cast(u, s) == (want == s)
        assert (tk.asarray([1], dtype=u) + tk.asarray([1], dtype=s)).dtype is getattr(tk, want)


@pytest.mark.parametrize("u", WIDE)
def test_with_bool_floats_and_weak_scalars(u):
    d = getattr(tk, u)
    assert tk.promote_types(u, "bool") is d and tk.can_cast("bool", u)
    for f in ("float16", "bfloat16", "float32", "float64"):
        assert tk.promote_types(u, f) is getattr(tk, f)
    x = tk.asarray([1, 2], dtype=d)
    assert (x + 1).dtype is d and (x * True).dtype is d and (x + 1.5).dtype is tk.float32
    assert (x + tk.asarray(3, dtype=tk.int64)).dtype is d  # a 0-d array of the same category ranks below


def test_uint64_literals_beyond_int64_are_exact():
    big = 2**64 - 1
    x = tk.asarray([1, 2**63 + 1, big], dtype=tk.uint64)
    np.testing.assert_array_equal(x.numpy(), np.array([1, 2**63 + 1, big], np.uint64))
    assert int(tk.asarray(big, dtype=tk.uint64)) == big
    assert int(tk.full((2,), big, dtype=tk.uint64)[1]) == big
    with pytest.raises(ValueError, match="uint64"):
        tk.asarray([1, 2**64], dtype=tk.uint64)
    with pytest.raises(ValueError, match="uint32"):
        tk.asarray([-1], dtype=tk.uint32)


# ------------------------------------------------------------------------------------------------ ops
import tkernels.cuda as _tkc  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if _tkc.is_available() else [])


def _pair(n):
    top = 2 ** (8 * np.dtype(n).itemsize) - 1  # the largest value: where a signed reading goes wrong
    a = np.array([3, 7, top, 0, 5, top - 1, 12], dtype=n)
    b = np.array([2, 1, 3, 4, 5, 63, 7], dtype=n)
    return a, b


_OPS = {  # name: (tkernels, NumPy) on arrays x, y (a, b)
    "add": (lambda x, y: x + y, lambda a, b: a + b), "subtract": (lambda x, y: x - y, lambda a, b: a - b),
    "multiply": (lambda x, y: x * y, lambda a, b: a * b), "floor_divide": (lambda x, y: x // y, lambda a, b: a // b),
    "remainder": (lambda x, y: x % y, lambda a, b: a % b),
    "pow": (lambda x, y: y ** (y % 5), lambda a, b: b ** (b % 5)),
    "and": (lambda x, y: x & y, lambda a, b: a & b), "or": (lambda x, y: x | y, lambda a, b: a | b),
    "xor": (lambda x, y: x ^ y, lambda a, b: a ^ b), "invert": (lambda x, y: ~x, lambda a, b: ~a),
    "lshift": (lambda x, y: x << y, lambda a, b: a << b), "rshift": (lambda x, y: x >> y, lambda a, b: a >> b),
    "less": (lambda x, y: x < y, lambda a, b: a < b), "greater_equal": (lambda x, y: x >= y, lambda a, b: a >= b),
    "equal": (lambda x, y: x == y, lambda a, b: a == b), "maximum": (tk.maximum, np.maximum),
    "where": (lambda x, y: tk.where(x > y, x, y), lambda a, b: np.where(a > b, a, b)),
    "clip": (lambda x, y: tk.clip(x, 1, 6), lambda a, b: np.clip(a, 1, 6)),
    "abs": (lambda x, y: tk.abs(x), lambda a, b: a), "sign": (lambda x, y: tk.sign(x), lambda a, b: np.sign(a)),
    "scalar": (lambda x, y: (x + 2) * 3 - 1, lambda a, b: (a + 2) * 3 - 1),
    "max": (lambda x, y: tk.max(x), lambda a, b: a.max()), "min": (lambda x, y: tk.min(x), lambda a, b: a.min()),
    "argmax": (lambda x, y: tk.argmax(x), lambda a, b: a.argmax()),
    "argmin": (lambda x, y: tk.argmin(y), lambda a, b: b.argmin()),
    "sum": (lambda x, y: tk.sum(x), lambda a, b: a.sum(dtype=np.uint64)),
    "prod": (lambda x, y: tk.prod(y), lambda a, b: b.prod(dtype=np.uint64)),
    "cumulative_sum": (lambda x, y: tk.cumulative_sum(x), lambda a, b: a.cumsum(dtype=np.uint64)),
    "sort": (lambda x, y: tk.sort(x), lambda a, b: np.sort(a)),
    "argsort": (lambda x, y: tk.argsort(x), lambda a, b: np.argsort(a)),
    "unique": (lambda x, y: tk.unique_values(x), lambda a, b: np.unique(a)),
    "searchsorted": (lambda x, y: tk.searchsorted(tk.sort(x), y), lambda a, b: np.searchsorted(np.sort(a), b)),
    "take": (lambda x, y: tk.take(x, tk.asarray([2, 0, 2], device=x.device)), lambda a, b: a[[2, 0, 2]]),
    "strided": (lambda x, y: x[::2][:3] + y[1::2], lambda a, b: a[::2][:3] + b[1::2]),
    "astype": (lambda x, y: x.astype(tk.float64), lambda a, b: a.astype(np.float64)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", ("uint32", "uint64"))  # (uint16 computes in int32 like uint8: its values fit)
def test_ops_match_numpy(n, device):
    a, b = _pair(n)
    x, y = tk.asarray(a.copy(), device=device), tk.asarray(b.copy(), device=device)
    for name, (f, g) in _OPS.items():
        got, want = f(x, y), np.asarray(g(a, b))
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_uint16_ops_and_setitem(device):
    a, b = _pair("uint16")
    x, y = tk.asarray(a.copy(), device=device), tk.asarray(b.copy(), device=device)
    for name in ("multiply", "lshift", "invert", "less", "sort", "sum"):
        f, g = _OPS[name]
        got, want = f(x, y), np.asarray(g(a, b))
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    x[1] = 65535
    assert int(x[1]) == 65535 and "dtype=uint16" in repr(x)


@pytest.mark.parametrize("device", DEVICES)
def test_floor_divide_with_infinities_follows_numpy_and_pytorch(device):
    """The documented choice (tkernels.floor_divide's docstring): NumPy's and PyTorch's values, not the array
    API's special cases (+-inf // finite is NaN there too; finite // -+inf of the opposite sign is -1.0)."""
    inf = float("inf")
    a = np.array([inf, -inf, inf, 1.0, -1.0, 1.0, 7.0], np.float64)
    b = np.array([2.0, 2.0, -3.0, -inf, inf, inf, -2.0], np.float64)
    got = tk.floor_divide(tk.asarray(a, device=device), tk.asarray(b, device=device)).numpy()
    with np.errstate(invalid="ignore"):
        want = np.floor_divide(a, b)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[:3]).all() and list(got[3:]) == [-1.0, -1.0, 0.0, -4.0]


@pytest.mark.parametrize("n", WIDE)
def test_dlpack_round_trips_with_numpy(n):
    a = np.array([0, 5, np.iinfo(n).max], dtype=n)
    x = tk.asarray(a)
    back = np.from_dlpack(x)
    assert back.dtype == a.dtype and np.array_equal(back, a)
    y = tk.from_dlpack(a)
    assert y.dtype == getattr(tk, n) and np.array_equal(y.numpy(), a)


def test_autograd_tensors_of_unsigned_dtypes():
    import autograd as ag

    x = ag.tensor([1, 2, 2**32 - 1], dtype=ag.uint32)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        x.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        ag.tensor([1], dtype=ag.uint64, requires_grad=True)
    assert (x & 3).tolist() == [1, 2, 3] and (x >> 1).tolist() == [0, 1, 2**31 - 1]
    assert (x > 1).tolist() == [False, True, True] and x[2].item() == 2**32 - 1
    assert x.sum().dtype is ag.int64 and x.sum().item() == 2**32 + 2  # PyTorch's int64 for integer sums
    assert x.to(ag.float64).tolist() == [1.0, 2.0, 2.0**32 - 1] and ag.zeros(2, dtype=ag.uint16).dtype is ag.uint16
    assert "dtype=autograd.uint32" in repr(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", ("uint32", "uint64"))
def test_indexing_scatter_and_axis_reductions(n, device):
    top = np.iinfo(n).max
    a = np.array([[5, top, 0], [top - 1, 2, 2]], n)
    x = tk.asarray(a.copy(), device=device)
    idx = np.array([[2, 0, 1], [1, 1, 0]])
    np.testing.assert_array_equal(tk.take_along_axis(x, tk.asarray(idx, device=device), axis=1).numpy(),
                                  np.take_along_axis(a, idx, axis=1))
    y = tk.asarray(a.copy(), device=device)
    y[tk.asarray([1, 0], device=device)] = x  # scatter through an index array
    np.testing.assert_array_equal(y.numpy(), a[[1, 0]])
    z, want = tk.asarray(a.copy(), device=device), a.copy()
    z[z > 3] = 7
    want[want > 3] = 7
    np.testing.assert_array_equal(z.numpy(), want)
    u, (v, _, _, c) = tk.unique_all(x), np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.values.numpy(), v)
    np.testing.assert_array_equal(u.counts.numpy(), c)
    np.testing.assert_array_equal(tk.max(x, axis=1).numpy(), a.max(1))
    np.testing.assert_array_equal(tk.argmin(x, axis=0).numpy(), a.argmin(0))
    np.testing.assert_array_equal(tk.sort(x, axis=0, descending=True).numpy(), np.sort(a, axis=0)[::-1])
