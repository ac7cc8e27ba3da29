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
