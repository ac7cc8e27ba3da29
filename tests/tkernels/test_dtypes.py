"""dtypes: names, conversions, limits, PyTorch's promotion table, weak scalars, the default dtype, isdtype, can_cast."""

import pickle

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
from tkernels.dtypes import as_dtype

NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
DT = {n: getattr(tk, n) for n in NAMES}
COMPLEX_NAMES = {"complex64", "complex128"}  # (tested in test_complex.py)
NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
      "float64": np.float64}

# PyTorch's promotion table (torch.promote_types), written out: row dtype x column dtype.
_ABBR = {"b": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
         "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
_TABLE = """
        b    u8   i8   i16  i32  i64  f16  bf16 f32  f64
b       b    u8   i8   i16  i32  i64  f16  bf16 f32  f64
u8      u8   u8   i16  i16  i32  i64  f16  bf16 f32  f64
i8      i8   i16  i8   i16  i32  i64  f16  bf16 f32  f64
i16     i16  i16  i16  i16  i32  i64  f16  bf16 f32  f64
i32     i32  i32  i32  i32  i32  i64  f16  bf16 f32  f64
i64     i64  i64  i64  i64  i64  i64  f16  bf16 f32  f64
f16     f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
bf16    bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64
f32     f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64     f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""


def _parse_table():
    lines = [ln.split() for ln in _TABLE.strip().splitlines()]
    cols = [_ABBR[c] for c in lines[0]]
    table = {}
    for row in lines[1:]:
        for c, v in zip(cols, row[1:]):
            table[_ABBR[row[0]], c] = _ABBR[v]
    return table


PROMOTION = _parse_table()
assert len(PROMOTION) == 100


# ------------------------------------------------------------------------------------------------ names
def test_ten_dtypes_and_plain_names():
    unsigned = {"uint16", "uint32", "uint64"}  # the wider unsigned types: tests/tkernels/test_dtypes_unsigned.py
    assert {d.name for d in tk.dtypes.all_dtypes} - unsigned == set(NAMES) | COMPLEX_NAMES
    for n in NAMES:
        assert str(DT[n]) == n
        assert DT[n].name == n
        assert f"{DT[n]}" == n


def test_itemsize_and_numpy_dtype():
    for n in NAMES:
        assert DT[n].numpy == np.dtype(NP[n])
        assert DT[n].itemsize == np.dtype(NP[n]).itemsize
        assert DT[n].bits == 8 * np.dtype(NP[n]).itemsize


def test_kind_flags():
    assert [n for n in NAMES if DT[n].is_floating_point] == ["float16", "bfloat16", "float32", "float64"]
    assert not tk.uint8.is_signed and not tk.bool.is_signed
    assert tk.int8.is_signed and tk.bfloat16.is_signed


@pytest.mark.parametrize("n", NAMES)
def test_as_dtype_from_names_numpy_and_python_types(n):
    d = DT[n]
    assert as_dtype(n) is d
    assert as_dtype(d) is d
    assert as_dtype(NP[n]) is d
    assert as_dtype(np.dtype(NP[n])) is d
    assert as_dtype(f"torch.{n}") is d
    assert d == n and d == np.dtype(NP[n])
    assert pickle.loads(pickle.dumps(d)) is d


def test_as_dtype_python_types_and_aliases():
    assert as_dtype(float) is tk.float32
    assert as_dtype(int) is tk.int64
    assert as_dtype(bool) is tk.bool
    assert as_dtype("half") is tk.float16
    assert as_dtype("double") is tk.float64
    assert as_dtype("long") is tk.int64
    assert as_dtype("bf16") is tk.bfloat16


@pytest.mark.parametrize("bad", [np.complex256, object, "float128", "floatt"])
def test_as_dtype_refuses_unsupported(bad):
    with pytest.raises(TypeError, match="dtype"):
        as_dtype(bad)


def test_as_dtype_none_is_an_error():
    # np.dtype(None) is float64; a DType must not silently come out of None
    with pytest.raises(TypeError, match="dtype"):
        as_dtype(None)
    assert (tk.float64 == None) is False  # noqa: E711


def test_dtype_equality_with_foreign_objects():
    assert tk.float32 != tk.float64
    assert tk.float32 != 3
    assert tk.float32 != "nonsense"
    assert tk.float32 != np.float64
    assert hash(tk.float32) == hash(as_dtype("float32"))


# ----------------------------------------------------------------------------------------------- limits
@pytest.mark.parametrize("n", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_ml_dtypes(n):
    fi = tk.finfo(DT[n])
    ref = ml_dtypes.finfo(NP[n])
    assert fi.bits == np.dtype(NP[n]).itemsize * 8
    assert fi.eps == float(ref.eps)
    assert fi.max == float(ref.max)
    assert fi.min == float(ref.min)
    assert fi.smallest_normal == float(ref.smallest_normal)
    assert fi.tiny == float(ref.smallest_normal)
    assert fi.resolution == float(ref.resolution)
    assert fi.dtype is DT[n]


def test_finfo_known_values():
    assert tk.finfo(tk.bfloat16).eps == 2.0**-7
    assert tk.finfo(tk.float16).max == 65504.0
    assert tk.finfo(tk.float32).eps == float(np.finfo(np.float32).eps)
    assert tk.finfo(tk.asarray([1.0], dtype=tk.float16)).bits == 16


@pytest.mark.parametrize("n", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_numpy(n):
    ii = tk.iinfo(DT[n])
    ref = np.iinfo(NP[n])
    assert (ii.min, ii.max, ii.bits) == (int(ref.min), int(ref.max), ref.bits)
    assert ii.dtype is DT[n]


def test_iinfo_bool_and_errors():
    assert (tk.iinfo(tk.bool).min, tk.iinfo(tk.bool).max) == (0, 1)
    with pytest.raises(TypeError, match="finfo"):
        tk.finfo(tk.int32)
    with pytest.raises(TypeError, match="iinfo"):
        tk.iinfo(tk.float32)


# -------------------------------------------------------------------------------------------- promotion
@pytest.mark.parametrize("a", NAMES)
def test_promote_types_matches_pytorch_table(a):
    for b in NAMES:
        expected = DT[PROMOTION[a, b]]
        assert tk.promote_types(DT[a], DT[b]) is expected, (a, b)
        assert tk.result_type(DT[a], DT[b]) is expected, (a, b)
        assert tk.promote_types(a, NP[b]) is expected, (a, b)


def test_promotion_table_is_symmetric():
    for a in NAMES:
        for b in NAMES:
            assert PROMOTION[a, b] == PROMOTION[b, a]


@pytest.mark.parametrize("a", NAMES)
def test_binary_op_result_dtype_follows_table(a):
    x = tk.ones((2,), dtype=DT[a])
    for b in NAMES:
        y = tk.ones((2,), dtype=DT[b])
        assert (x * y).dtype is DT[PROMOTION[a, b]], (a, b)


def test_result_type_of_arrays_and_many_arguments():
    x = tk.ones(2, dtype=tk.uint8)
    y = tk.ones(2, dtype=tk.int8)
    assert tk.result_type(x, y) is tk.int16
    assert tk.result_type(x, y, tk.int32) is tk.int32
    assert tk.result_type(tk.uint8, tk.int8, 1.0) is tk.float32
    assert tk.result_type(x, np.dtype("int8")) is tk.int16


def test_result_type_needs_an_argument():
    with pytest.raises(TypeError, match="result_type"):
        tk.result_type()


# --------------------------------------------------------------------------------------- weak scalars
@pytest.mark.parametrize("dtype,scalar,expected", [
    ("int32", 2.5, "float32"), ("float16", 2.5, "float16"), ("bfloat16", 2.5, "bfloat16"),
    ("uint8", 300, "uint8"), ("int8", 1, "int8"), ("bool", 1, "int64"), ("bool", True, "bool"),
    ("int8", True, "int8"), ("bool", 1.5, "float32"), ("float64", 1, "float64"), ("int16", 2, "int16"),
    ("float16", 2, "float16"), ("uint8", -1, "uint8"),
])
def test_weak_python_scalars(dtype, scalar, expected):
    assert tk.result_type(DT[dtype], scalar) is DT[expected]
    x = tk.ones((3,), dtype=DT[dtype])
    assert (x + scalar).dtype is DT[expected]
    assert (scalar + x).dtype is DT[expected]


def test_result_type_of_scalars_alone():
    assert tk.result_type(1, 2.0) is tk.float32
    assert tk.result_type(True) is tk.bool
    assert tk.result_type(3) is tk.int64


# ----------------------------------------------------------------------------------------------- 0-d arrays
def _devices():
    try:
        import tkernels.cuda as tkc

        return ["cpu"] + (["cuda"] if tkc.is_available() else [])
    except Exception:  # noqa: BLE001 - no runtime layer: cpu only
        return ["cpu"]


# torch.result_type ranks a 0-d tensor below a dimensioned one: it decides only when its category is higher.
# (dimensioned dtype, 0-d dtype, result)
ZERO_D = [("float32", "float64", "float32"), ("int32", "int64", "int32"), ("int32", "float64", "float64"),
          ("uint8", "int64", "uint8"), ("int8", "uint8", "int8"), ("float16", "float64", "float16"),
          ("bfloat16", "float16", "bfloat16"), ("bool", "int32", "int32"), ("int64", "bool", "int64")]
_MASK = np.array([True, False, True])
# every op that promotes its operands, with a NumPy reference (x: [1, 0, 3] as the dimensioned dtype, z: 2)
PROMOTING = {
    "add": (lambda x, z: tk.add(x, z), lambda x, z: x + z),
    "add_0d_first": (lambda x, z: tk.add(z, x), lambda x, z: z + x),
    "where": (lambda x, z: tk.where(tk.asarray(_MASK, device=x.device), x, z), lambda x, z: np.where(_MASK, x, z)),
    "where_0d_first": (lambda x, z: tk.where(tk.asarray(_MASK, device=x.device), z, x),
                       lambda x, z: np.where(_MASK, z, x)),
    "clip_min": (lambda x, z: tk.clip(x, z), lambda x, z: np.maximum(x, z)),
    "clip_max": (lambda x, z: tk.clip(x, None, z), lambda x, z: np.minimum(x, z)),
    "lerp": (lambda x, z: tk.lerp(x, z, 0.5), lambda x, z: x + 0.5 * (z - x)),
}


@pytest.mark.parametrize("xd,zd,expected", ZERO_D)
def test_result_type_ranks_zero_d_arrays_below_dimensioned_ones(xd, zd, expected):
    x, z = tk.ones(3, dtype=DT[xd]), tk.ones((), dtype=DT[zd])
    assert tk.result_type(x, z) is DT[expected] and tk.result_type(z, x) is DT[expected]
    assert tk.result_type(z, DT[xd]) is DT[expected]  # a dtype counts as dimensioned
    assert tk.result_type(z, tk.ones((), dtype=DT[xd])) is DT[PROMOTION[xd, zd]]  # two 0-d arrays: the table
    assert tk.result_type(tk.ones((), dtype=tk.int32), 2.5) is tk.float32  # a 0-d array outranks a Python scalar
    assert tk.result_type(tk.ones((), dtype=tk.int16), 7) is tk.int16


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("op,xd,zd,expected", [
    (op, *row) for op in PROMOTING for row in ZERO_D
    if not (op == "lerp" and DT[row[0]].kind != "f") and not (op.startswith("clip") and row[0] == "bool")])
def test_ops_promote_zero_d_arrays_like_result_type(op, xd, zd, expected, device):
    fn, ref = PROMOTING[op]
    x = tk.asarray([1, 0, 3]).astype(DT[xd]).to(device)
    z = tk.asarray(2).astype(DT[zd]).to(device)
    r = fn(x, z)
    assert r.dtype is DT[expected] and r.shape == (3,) and r.device.type == device
    xv = np.array([1, 0, 3]).astype(NP[xd]).astype(np.float64)
    want = ref(xv, float(np.array(2).astype(NP[zd]))).astype(NP[expected])
    np.testing.assert_array_equal(r.to("cpu").numpy().astype(np.float64), want.astype(np.float64))


def test_uint8_plus_out_of_range_int_wraps_like_torch():
    x = tk.asarray([1, 2, 3], dtype=tk.uint8)
    r = x + 300  # 300 is 44 as uint8
    assert r.dtype is tk.uint8
    np.testing.assert_array_equal(r.numpy(), np.array([45, 46, 47], np.uint8))
    np.testing.assert_array_equal((tk.asarray([100], dtype=tk.int8) + 100).numpy(), [-56])
    np.testing.assert_array_equal((tk.asarray([1], dtype=tk.uint8) - 2).numpy(), [255])


def test_weak_scalar_values():
    np.testing.assert_allclose((tk.asarray([1, 2], dtype=tk.int32) + 2.5).numpy(), [3.5, 4.5])
    r = tk.asarray([1.5], dtype=tk.float16) + 2.25
    assert r.dtype is tk.float16 and r.item() == 3.75
    r = tk.asarray([True, False]) + True
    assert r.dtype is tk.bool
    np.testing.assert_array_equal(r.numpy(), [True, True])
    r = tk.asarray([True, False]) + 1
    np.testing.assert_array_equal(r.numpy(), [2, 1])
    assert r.dtype is tk.int64


# --------------------------------------------------------------------------------------- default dtype
def test_default_dtype_is_float32():
    assert tk.get_default_dtype() is tk.float32


def test_set_default_dtype_changes_scalars_and_factories():
    assert tk.get_default_dtype() is tk.float32
    tk.set_default_dtype(tk.float64)
    try:
        assert tk.get_default_dtype() is tk.float64
        assert (tk.asarray([1], dtype=tk.int32) + 2.5).dtype is tk.float64
        assert (tk.asarray([1], dtype=tk.float16) + 2.5).dtype is tk.float16
        assert (tk.arange(3) / 2).dtype is tk.float64
        assert tk.zeros(2).dtype is tk.float64
        assert tk.ones(2).dtype is tk.float64
        assert tk.empty(2).dtype is tk.float64
        assert tk.full(2, 2.0).dtype is tk.float64
        assert tk.full(2, 2).dtype is tk.int64
        assert tk.asarray([1.5]).dtype is tk.float64
        assert tk.asarray(2.5).dtype is tk.float64
        assert tk.arange(2.0).dtype is tk.float64
        assert tk.linspace(0, 1, 3).dtype is tk.float64
        assert tk.eye(2).dtype is tk.float64
        assert tk.random.rand(2).dtype is tk.float64
        assert tk.result_type(1.0) is tk.float64
        assert as_dtype(float) is tk.float64
    finally:
        tk.set_default_dtype(tk.float32)
    assert tk.zeros(2).dtype is tk.float32


def test_set_default_dtype_accepts_names_and_refuses_ints():
    try:
        tk.set_default_dtype("float16")
        assert tk.zeros(1).dtype is tk.float16
    finally:
        tk.set_default_dtype(tk.float32)
    with pytest.raises(TypeError, match="set_default_dtype"):
        tk.set_default_dtype(tk.int32)
    assert tk.get_default_dtype() is tk.float32


# ----------------------------------------------------------------------------------------------- isdtype
@pytest.mark.parametrize("kind,members", [
    ("bool", {"bool"}),
    ("signed integer", {"int8", "int16", "int32", "int64"}),
    ("unsigned integer", {"uint8"}),
    ("integral", {"uint8", "int8", "int16", "int32", "int64"}),
    ("real floating", {"float16", "bfloat16", "float32", "float64"}),
    ("complex floating", set()),  # (of NAMES; complex dtypes: test_complex.py)
    ("numeric", set(NAMES) - {"bool"}),
])
def test_isdtype_kinds(kind, members):
    assert {n for n in NAMES if tk.isdtype(DT[n], kind)} == members


def test_isdtype_tuples_dtypes_and_errors():
    assert tk.isdtype(tk.int32, ("bool", "integral"))
    assert tk.isdtype(tk.bool, ("bool", tk.float32))
    assert not tk.isdtype(tk.float16, ("bool", "integral"))
    assert tk.isdtype(tk.float32, tk.float32)
    assert not tk.isdtype(tk.float32, tk.float64)
    with pytest.raises(ValueError, match="isdtype"):
        tk.isdtype(tk.int32, "foo")


# ---------------------------------------------------------------------------------------------- can_cast
@pytest.mark.parametrize("a", NAMES)
def test_can_cast_follows_the_promotion_lattice(a):
    for b in NAMES:
        assert tk.can_cast(DT[a], DT[b]) == (PROMOTION[a, b] == b), (a, b)


def test_can_cast_examples():
    assert tk.can_cast(tk.float32, tk.float64)
    assert not tk.can_cast(tk.float64, tk.float32)
    assert not tk.can_cast(tk.int8, tk.uint8)
    assert not tk.can_cast(tk.uint8, tk.int8)
    assert tk.can_cast(tk.uint8, tk.int16)
    assert tk.can_cast(tk.bool, tk.int8)
    assert not tk.can_cast(tk.float16, tk.bfloat16)
    assert not tk.can_cast(tk.float16, tk.int64)


def test_comparing_a_dtype_with_anything_never_raises():
    """The array API test suite compares dtypes with a placeholder for the dtypes a library lacks (uint64 here),
    an object whose attribute access raises: == must answer False (it raised inside DType.__eq__)."""

    class Placeholder:
        def __getattr__(self, name):
            raise RuntimeError(f"placeholder: {name} is not available")

        def __array__(self, *args, **kwargs):
            raise RuntimeError("placeholder")

    for d in tk.dtypes.all_dtypes:
        assert (d == Placeholder()) is False and (d != Placeholder()) is True
        assert d == d.name and d != "float128" and d != object()
