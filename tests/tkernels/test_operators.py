"""Python operators on Arrays: every binary, reflected, in-place, unary and comparison operator, with scalars on
either side, mixed dtypes, NumPy operands, 0-d arrays."""

import operator

import numpy as np
import pytest

import tkernels as tk


def _cuda_available():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except Exception:  # noqa: BLE001 - no runtime layer: no cuda
        return False


INTS = np.array([1, 2, 3, 7], dtype=np.int64)
FLTS = np.array([1.0, 2.5, -4.0, 0.5], dtype=np.float32)

# operator, NumPy reference (NumPy agrees with PyTorch on these for the inputs used)
ARITH = [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
    ("floordiv", operator.floordiv), ("mod", operator.mod), ("pow", operator.pow),
]
BITS = [("and", operator.and_), ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift),
        ("rshift", operator.rshift)]
CMP = [("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
       ("ge", operator.ge)]


def _check(got, expected, dtype):
    assert isinstance(got, tk.Array), type(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    np.testing.assert_allclose(got.numpy().astype(np.float64), np.asarray(expected, np.float64), rtol=1e-6)


@pytest.mark.parametrize("name,op", ARITH, ids=[a[0] for a in ARITH])
def test_arith_array_array_and_scalars_both_sides(name, op):
    f = np.abs(FLTS) if name == "pow" else FLTS  # no negative bases to fractional powers (NaN)
    xf, yf = tk.asarray(f), tk.asarray(f[::-1].copy())
    xi = tk.asarray(INTS)
    fdt = tk.float32
    idt = tk.float32 if name == "truediv" else tk.int64
    _check(op(xf, yf), op(f, f[::-1]), fdt)
    _check(op(xf, 2), op(f, np.float32(2)), fdt)
    _check(op(3, xf), op(np.float32(3), f), fdt)
    _check(op(xi, 2), op(INTS, 2).astype(np.float32) if name == "truediv" else op(INTS, 2), idt)
    _check(op(2, xi), op(2, INTS).astype(np.float32) if name == "truediv" else op(2, INTS), idt)
    _check(op(xi, 0.5), op(INTS.astype(np.float32), np.float32(0.5)), tk.float32)
    _check(op(2.0, xi), op(np.float32(2.0), INTS.astype(np.float32)), tk.float32)


def test_specific_reflected_values():
    x = tk.asarray([1, 2, 3])
    assert (2 - x).tolist() == [1, 0, -1]
    assert (2**x).tolist() == [2, 4, 8] and (2**x).dtype is tk.int64
    assert (2.0**x).tolist() == [2.0, 4.0, 8.0] and (2.0**x).dtype is tk.float32
    assert (7 // x).tolist() == [7, 3, 2]
    assert (7 % x).tolist() == [0, 1, 1]
    assert (1 / x).dtype is tk.float32
    assert (tk.asarray([-7, 7]) % 3).tolist() == [2, 1]  # sign of the divisor, like Python and PyTorch
    assert (tk.asarray([-7, 7]) // 2).tolist() == [-4, 3]  # floor, like Python and PyTorch
    assert (tk.asarray([-7.0, 7.0]) % 3).tolist() == [2.0, 1.0]
    assert (-7 % tk.asarray([3, -3])).tolist() == [2, -1]


@pytest.mark.parametrize("name,op", BITS, ids=[b[0] for b in BITS])
def test_bitwise_operators(name, op):
    x = tk.asarray(INTS)
    y = tk.asarray(np.array([3, 1, 2, 1]))
    _check(op(x, y), op(INTS, np.array([3, 1, 2, 1])), tk.int64)
    _check(op(x, 1), op(INTS, 1), tk.int64)
    _check(op(1, x), op(1, INTS), tk.int64)
    u = tk.asarray(np.array([1, 2, 255], np.uint8))
    _check(op(u, 1), op(np.array([1, 2, 255], np.uint8), np.uint8(1)), tk.uint8)


def test_bitwise_on_bools_and_invert():
    a = tk.asarray([True, True, False])
    b = tk.asarray([True, False, False])
    assert (a & b).tolist() == [True, False, False] and (a & b).dtype is tk.bool
    assert (a | b).tolist() == [True, True, False]
    assert (a ^ b).tolist() == [False, True, False]
    assert (a | True).dtype is tk.bool
    assert (~a).tolist() == [False, False, True]
    assert (~tk.asarray([1, 2, 3])).tolist() == [-2, -3, -4]
    assert (~tk.asarray([0, 255], dtype=tk.uint8)).tolist() == [255, 0]
    assert (tk.asarray([1, 2, 3]) << 1).tolist() == [2, 4, 6]
    assert (1 << tk.asarray([1, 2, 3])).tolist() == [2, 4, 8]
    assert (16 >> tk.asarray([1, 2, 3])).tolist() == [8, 4, 2]


def test_unary_operators():
    x = tk.asarray([-1.5, 0.0, 2.0])
    assert (-x).tolist() == [1.5, -0.0, -2.0]
    assert (+x).tolist() == [-1.5, 0.0, 2.0]
    assert abs(x).tolist() == [1.5, 0.0, 2.0]
    assert abs(tk.asarray([-1, 2], dtype=tk.int8)).dtype is tk.int8
    assert (-tk.asarray([1, -2], dtype=tk.int16)).tolist() == [-1, 2]
    assert (+x) is not x


@pytest.mark.parametrize("name,op", CMP, ids=[c[0] for c in CMP])
def test_comparisons_return_bool_arrays(name, op):
    x = tk.asarray(FLTS)
    y = tk.asarray(np.array([1.0, 3.0, -4.0, 0.0], np.float32))
    for got, exp in ((op(x, y), op(FLTS, np.array([1.0, 3.0, -4.0, 0.0], np.float32))), (op(x, 1.0), op(FLTS, 1.0)),
                     (op(1.0, x), op(1.0, FLTS)), (op(tk.asarray(INTS), 2), op(INTS, 2)),
                     (op(tk.asarray(INTS), 2.5), op(INTS, 2.5))):
        assert isinstance(got, tk.Array) and got.dtype is tk.bool
        np.testing.assert_array_equal(got.numpy(), exp)


def test_comparison_mixed_dtypes_compare_in_promoted_dtype():
    x = tk.asarray([1, 2, 3], dtype=tk.int8)
    assert (x == tk.asarray([1.0, 2.5, 3.0])).tolist() == [True, False, True]
    assert (x < 2.5).tolist() == [True, True, False]
    u = tk.asarray([255], dtype=tk.uint8)
    assert (u > tk.asarray([-1], dtype=tk.int8)).tolist() == [True]  # compared as int16, not wrapped


def test_matmul_operator():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    r = tk.asarray(a) @ tk.asarray(b)
    assert r.shape == (2, 4)
    np.testing.assert_allclose(r.numpy(), a @ b)
    v = tk.asarray([1, 2, 3]) @ tk.asarray([4, 5, 6])
    assert v.shape == () and v.item() == 32
    m = tk.asarray(a.copy())
    m @= tk.asarray(np.eye(3, dtype=np.float32))
    np.testing.assert_allclose(m.numpy(), a)


# ------------------------------------------------------------------------------------------ in-place
INPLACE = [("iadd", operator.iadd, operator.add), ("isub", operator.isub, operator.sub),
           ("imul", operator.imul, operator.mul), ("itruediv", operator.itruediv, operator.truediv),
           ("ifloordiv", operator.ifloordiv, operator.floordiv), ("imod", operator.imod, operator.mod),
           ("ipow", operator.ipow, operator.pow)]


@pytest.mark.parametrize("name,iop,op", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_keeps_identity_and_writes_storage(name, iop, op):
    base = tk.asarray(FLTS.copy())
    view = base[1:]
    alias = base[::-1]
    before_ptr = base.data_ptr()
    r = iop(base, 2.0)
    assert r is base and base.data_ptr() == before_ptr
    exp = op(FLTS, np.float32(2.0))
    np.testing.assert_allclose(base.numpy(), exp, rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), exp[1:], rtol=1e-6)
    np.testing.assert_allclose(alias.numpy(), exp[::-1], rtol=1e-6)


def test_inplace_through_a_view_changes_the_base():
    base = tk.zeros((3, 4))
    col = base[:, 1]
    col += 5
    assert base.tolist()[1] == [0.0, 5.0, 0.0, 0.0]
    blk = base.T[1:3]
    blk *= 2
    assert base[:, 1].tolist() == [10.0] * 3 and base[:, 0].tolist() == [0.0] * 3


@pytest.mark.parametrize("iop,val,exp", [
    (operator.iand, 6, [0, 2, 2, 6]), (operator.ior, 8, [9, 10, 11, 15]), (operator.ixor, 1, [0, 3, 2, 6]),
    (operator.ilshift, 2, [4, 8, 12, 28]), (operator.irshift, 1, [0, 1, 1, 3]),
])
def test_inplace_bitwise(iop, val, exp):
    x = tk.asarray(INTS.copy())
    r = iop(x, val)
    assert r is x and x.tolist() == exp


def test_inplace_with_arrays_and_broadcasting():
    x = tk.zeros((2, 3))
    x += tk.asarray([1.0, 2.0, 3.0])
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2
    x -= tk.asarray([[1.0], [2.0]])
    assert x.tolist() == [[0.0, 1.0, 2.0], [-1.0, 0.0, 1.0]]
    y = tk.arange(9.0).reshape(3, 3)
    y += y.T  # overlap between input and output: the result is as if the input were read first
    np.testing.assert_array_equal(y.numpy(), np.arange(9.0).reshape(3, 3) + np.arange(9.0).reshape(3, 3).T)
    z = tk.arange(5.0)
    z[1:] += z[:-1]
    assert z.tolist() == [0.0, 1.0, 3.0, 5.0, 7.0]


def test_inplace_same_kind_downcast_is_allowed():
    i8 = tk.asarray([1, 2], dtype=tk.int8)
    i8 += tk.asarray([1, 1], dtype=tk.int32)
    assert i8.dtype is tk.int8 and i8.tolist() == [2, 3]
    u = tk.asarray([250], dtype=tk.uint8)
    u += 10
    assert u.tolist() == [4]
    h = tk.asarray([1.0], dtype=tk.float16)
    h *= tk.asarray([3.0], dtype=tk.float64)
    assert h.dtype is tk.float16 and h.item() == 3.0


def test_inplace_dtype_errors_leave_the_target_unchanged():
    z = tk.asarray([1, 2, 3])
    with pytest.raises(TypeError, match="add.*float32.*int64"):
        z += 1.5
    assert z.tolist() == [1, 2, 3] and z.dtype is tk.int64
    with pytest.raises(TypeError, match="divide"):
        z /= 2
    assert z.tolist() == [1, 2, 3]
    b = tk.asarray([True, False])
    with pytest.raises(TypeError, match="add.*bool"):
        b += 1
    assert b.tolist() == [True, False]
    with pytest.raises(TypeError, match="multiply"):
        z *= tk.asarray([1.0, 1.0, 1.0])


def test_inplace_shape_errors_leave_the_target_unchanged():
    y = tk.asarray([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"add.*\(3,\).*\(2, 3\)"):
        y += tk.ones((2, 3))
    assert y.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="subtract"):
        y -= tk.ones((4,))
    assert y.tolist() == [1.0, 2.0, 3.0]


def test_inplace_on_an_expanded_array_is_refused():
    # several elements share one memory location: PyTorch refuses in-place writes there
    x = tk.zeros(3)
    b = x.broadcast_to((2, 3))
    with pytest.raises(RuntimeError, match="add"):
        b += 1
    assert x.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------- mixed dtypes
@pytest.mark.parametrize("a,b,expected", [
    ("uint8", "int8", "int16"), ("int32", "int64", "int64"), ("int64", "float16", "float16"),
    ("bfloat16", "float16", "float32"), ("float16", "float32", "float32"), ("bool", "uint8", "uint8"),
    ("bool", "float64", "float64"), ("int8", "bfloat16", "bfloat16"),
])
def test_mixed_dtype_operators_follow_promotion(a, b, expected):
    x = tk.asarray([1, 2], dtype=getattr(tk, a))
    y = tk.asarray([3, 1], dtype=getattr(tk, b))
    for r in (x + y, y + x, x * y, y - x if a != "bool" else y * x):
        assert r.dtype is getattr(tk, expected)
    exp = np.array(x.tolist(), np.float64) + np.array(y.tolist(), np.float64)
    np.testing.assert_array_equal((x + y).numpy().astype(np.float64), exp)


def test_mixed_uint8_int8_values():
    u = tk.asarray([200, 1], dtype=tk.uint8)
    i = tk.asarray([-1, -100], dtype=tk.int8)
    r = u + i
    assert r.dtype is tk.int16 and r.tolist() == [199, -99]


# ------------------------------------------------------------------------------------ NumPy and 0-d operands
def test_numpy_array_on_the_left_defers_to_array_and_is_refused_clearly():
    # __array_priority__ makes ndarray return NotImplemented, so Array's reflected operator decides:
    # NumPy arrays are not implicitly converted (same as x + ndarray); the message names the op and the type
    n = np.arange(3.0)
    x = tk.arange(3.0)
    for f in (lambda: n + x, lambda: x + n, lambda: n * x, lambda: n < x):
        with pytest.raises(TypeError, match=r"(add|multiply|greater|less).*ndarray.*asarray"):
            f()


def test_numpy_scalars_act_like_python_scalars():
    x = tk.arange(3, dtype=tk.float16)
    r = np.float64(2.0) * x
    assert isinstance(r, tk.Array) and r.dtype is tk.float16 and r.tolist() == [0.0, 2.0, 4.0]
    r = x + np.int64(1)
    assert r.dtype is tk.float16 and r.tolist() == [1.0, 2.0, 3.0]


def test_zero_d_array_broadcasts_like_a_scalar():
    x = tk.asarray([1.0, 2.0, 3.0])
    s = tk.asarray(2.0)
    assert (x * s).tolist() == [2.0, 4.0, 6.0]
    assert (s - x).tolist() == [1.0, 0.0, -1.0]
    assert (x > s).tolist() == [False, False, True]
    assert (s + s).shape == ()
    x += s
    assert x.tolist() == [3.0, 4.0, 5.0]


def test_zero_d_array_promotes_like_torch():
    # PyTorch: a 0-d tensor of the same category does not widen a dimensioned tensor; of a higher category it
    # decides the result dtype (torch.ones(1, dtype=int32) + torch.tensor(1, dtype=int64) is int32)
    assert (tk.ones(2, dtype=tk.int32) + tk.asarray(1, dtype=tk.int64)).dtype is tk.int32
    assert (tk.ones(2, dtype=tk.float16) + tk.asarray(2.5, dtype=tk.float64)).dtype is tk.float16
    assert (tk.ones(2, dtype=tk.int32) + tk.asarray(2.5, dtype=tk.float64)).dtype is tk.float64
    assert (tk.ones(2, dtype=tk.uint8) * tk.asarray(2, dtype=tk.int64)).dtype is tk.uint8
    assert (tk.asarray(1, dtype=tk.int64) + tk.asarray(1, dtype=tk.int32)).dtype is tk.int64  # both 0-d


@pytest.mark.skipif(not _cuda_available(), reason="no cuda device, not even interpreted")
def test_zero_d_cpu_array_acts_like_a_scalar_with_a_cuda_array():
    g = tk.asarray([1.0, 2.0]).to("cuda")
    s = tk.asarray(3.0)
    r = g * s
    assert r.device.type == "cuda" and r.shape == (2,)
    assert r.to("cpu").tolist() == [3.0, 6.0]
    r = s + g
    assert r.device.type == "cuda" and r.to("cpu").tolist() == [4.0, 5.0]
