"""Bad input to elementwise ops: each error has the right type and a message naming the op and the offending
shapes/dtypes/devices; a failed op leaves its inputs and ``out`` unchanged."""

import numpy as np
import pytest

import tkernels as tk


def _cuda_available():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except Exception:  # noqa: BLE001 - no runtime layer: no cuda
        return False


def b():
    return tk.asarray([True, False])


def f():
    return tk.asarray([1.5, -2.0], dtype=tk.float32)


# -------------------------------------------------------------------------------------------- bool
def test_bool_negative_and_subtract():
    with pytest.raises(TypeError, match=r"negative: not supported for bool.*shape=\(2,\), dtype=bool"):
        tk.negative(b())
    with pytest.raises(TypeError, match="negative.*bool"):
        -b()
    with pytest.raises(TypeError, match=r"subtract: not supported for bool.*logical_xor"):
        tk.subtract(b(), b())
    with pytest.raises(TypeError, match="subtract.*bool"):
        b() - True
    with pytest.raises(TypeError, match="subtract.*bool"):
        True - b()


def test_bool_subtract_with_an_int_scalar_is_fine():
    # bool - 1 promotes to int64 (weak int of a higher category), like PyTorch
    assert (b() - 1).tolist() == [0, -1]


# --------------------------------------------------------------------------------------------- bitwise
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                "bitwise_right_shift"])
def test_bitwise_on_floats(op):
    fn = getattr(tk, op)
    with pytest.raises(TypeError, match=rf"{op}: only integer and bool.*dtype=float32"):
        fn(f(), f())
    with pytest.raises(TypeError, match=rf"{op}.*float32"):
        fn(tk.asarray([1, 2]), f())
    with pytest.raises(TypeError, match=rf"{op}.*float"):
        fn(tk.asarray([1, 2]), 1.5)


def test_bitwise_invert_on_floats():
    with pytest.raises(TypeError, match=r"bitwise_invert: only integer and bool.*dtype=bfloat16"):
        ~tk.asarray([1.0], dtype=tk.bfloat16)


# ---------------------------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("op", ["add", "multiply", "equal", "logical_and", "maximum", "divide", "atan2"])
def test_shape_mismatch_names_both_shapes_and_the_op(op):
    x = tk.ones((2, 3))
    y = tk.ones((4, 3))
    with pytest.raises(ValueError, match=rf"{op}: shapes \(2, 3\), \(4, 3\) cannot be broadcast"):
        getattr(tk, op)(x, y)


def test_shape_mismatch_through_operators_and_ternaries():
    with pytest.raises(ValueError, match=r"add.*\(3,\).*\(4,\)"):
        tk.ones(3) + tk.ones(4)
    with pytest.raises(ValueError, match=r"where.*\(2,\).*\(3,\)"):
        tk.where(tk.asarray([True, False]), tk.ones(3), 0.0)
    with pytest.raises(ValueError, match=r"clip.*\(3,\).*\(2,\)"):
        tk.clip(tk.ones(3), tk.zeros(2), None)
    with pytest.raises(ValueError, match=r"lerp.*\(3,\).*\(5,\)"):
        tk.lerp(tk.ones(3), tk.ones(5), 0.5)


# ------------------------------------------------------------------------------------------------- out=
def test_out_wrong_shape():
    out = tk.full((4,), 7.0)
    with pytest.raises(ValueError, match=r"add: out has shape \(4,\) but the result has shape \(3,\)"):
        tk.add(tk.ones(3), tk.ones(3), out=out)
    assert out.tolist() == [7.0] * 4
    with pytest.raises(ValueError, match=r"exp: out has shape \(2,\)"):
        tk.exp(tk.ones(3), out=tk.empty(2))


def test_out_wrong_dtype_kind():
    out = tk.full((3,), 7, dtype=tk.int32)
    with pytest.raises(TypeError, match=r"add: the result dtype float32 cannot be cast to the dtype of out \(int32\)"):
        tk.add(tk.ones(3), tk.ones(3), out=out)
    assert out.tolist() == [7, 7, 7]
    with pytest.raises(TypeError, match="sqrt.*float32.*int32"):
        tk.sqrt(tk.ones(3), out=out)
    with pytest.raises(TypeError, match=r"add: the result dtype int64 cannot be cast.*\(bool\)"):
        tk.add(tk.asarray([1, 2]), 1, out=tk.empty(2, dtype=tk.bool))
    eq = tk.empty(3, dtype=tk.bool)  # comparisons write bool
    assert tk.equal(tk.ones(3), tk.ones(3), out=eq) is eq and eq.tolist() == [True] * 3


def test_out_same_kind_narrower_is_accepted():
    out = tk.zeros(2, dtype=tk.float16)
    r = tk.add(tk.asarray([1.0, 2.0], dtype=tk.float64), 1.0, out=out)
    assert r is out and out.tolist() == [2.0, 3.0]


def test_out_must_be_an_array():
    with pytest.raises(TypeError, match="add: out must be an Array.*ndarray"):
        tk.add(tk.ones(3), tk.ones(3), out=np.empty(3))
    with pytest.raises(TypeError, match="exp: out must be an Array.*list"):
        tk.exp(tk.ones(3), out=[0.0, 0.0, 0.0])


# ------------------------------------------------------------------------------------- non-array operands
@pytest.mark.parametrize("bad", ["s", [1, 2, 3], None, {"a": 1}, (1.0,), b"x", 1 + 2j],
                         ids=["str", "list", "None", "dict", "tuple", "bytes", "complex"])
def test_binary_non_number_operands(bad):
    x = tk.ones(3)
    with pytest.raises(TypeError, match="add"):
        tk.add(x, bad)
    with pytest.raises(TypeError, match="multiply"):
        tk.multiply(bad, x)
    with pytest.raises(TypeError, match="subtract"):
        x - bad
    with pytest.raises(TypeError, match="less"):
        _ = x < bad


def test_binary_message_names_the_operand_type_and_hint():
    with pytest.raises(TypeError, match=r"add: expected an Array or a Python number, got str 's'.*asarray"):
        tk.add(tk.ones(3), "s")
    with pytest.raises(TypeError, match=r"add: expected an Array or a Python number, got list"):
        tk.ones(3) + [1, 2, 3]


def test_binary_needs_an_array():
    with pytest.raises(TypeError, match="add: at least one argument must be an Array"):
        tk.add(2, 3)


@pytest.mark.parametrize("op", ["exp", "negative", "sqrt", "logical_not", "isnan", "bitwise_invert", "floor"])
def test_unary_non_arrays(op):
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got list"):
        getattr(tk, op)([1.0])
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got float"):
        getattr(tk, op)(1.0)


def test_unary_on_a_numpy_array_names_ndarray():
    with pytest.raises(TypeError, match=r"exp: expected an Array, got (numpy\.)?ndarray"):
        tk.exp(np.arange(3.0))


def test_binary_on_a_numpy_array_names_ndarray():
    with pytest.raises(TypeError, match=r"add: expected an Array or a Python number, got (numpy\.)?ndarray"):
        tk.add(tk.ones(3), np.ones(3))


# ------------------------------------------------------------------------------------------ value errors
def test_integer_division_by_zero():
    x = tk.asarray([1, 2])
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        x // 0
    with pytest.raises(ZeroDivisionError, match="remainder"):
        tk.remainder(x, tk.asarray([1, 0]))
    assert (tk.asarray([1.0]) / 0).tolist() == [float("inf")]  # floats follow IEEE


def test_integer_negative_power():
    with pytest.raises(ValueError, match="pow.*negative"):
        tk.asarray([1, 2]) ** -1
    with pytest.raises(ValueError, match="pow.*negative"):
        tk.asarray([1, 2]) ** tk.asarray([1, -2])


def test_failed_inplace_op_leaves_inputs_unchanged():
    x = tk.asarray([1, 2])
    y = tk.asarray([1, 0])
    with pytest.raises(ZeroDivisionError):
        x //= y
    assert x.tolist() == [1, 2]


def test_parametrized_ops_validate():
    with pytest.raises(ValueError, match="gelu.*approximate"):
        tk.gelu(f(), approximate="fast")
    with pytest.raises(TypeError, match="clip.*bool"):
        tk.clip(b(), 0, 1)
    with pytest.raises(TypeError, match="lerp.*floating"):
        tk.lerp(tk.asarray([1]), tk.asarray([2]), 1)
    with pytest.raises(TypeError, match="where.*condition"):
        tk.where([True], f(), f())
    for cond in (tk.asarray([1, 0, 2], dtype=tk.uint8), tk.asarray([1.0, 0.0, 2.0])):  # a bool condition only
        with pytest.raises(TypeError, match=r"where: condition must be a bool array.*astype\(bool\)"):
            tk.where(cond, tk.ones(3), 0.0)
    with pytest.raises(TypeError, match="conj"):
        tk.conj([1.0])


# ---------------------------------------------------------------------------------------------- devices
@pytest.mark.skipif(not _cuda_available(), reason="no cuda device, not even interpreted")
def test_device_mismatch_names_both_devices():
    c = tk.ones(3)
    g = tk.ones(3).to("cuda")
    with pytest.raises(RuntimeError, match=r"add: expected all arrays on the same device.*cuda:0.*cpu.*hint"):
        tk.add(g, c)
    with pytest.raises(RuntimeError, match=r"multiply: .*same device.*cpu.*cuda:0"):
        c * g
    with pytest.raises(RuntimeError, match="add: out is on cuda:0 but the inputs are on cpu"):
        tk.add(c, c, out=g)
    with pytest.raises(RuntimeError, match="where.*same device"):
        tk.where(tk.asarray([True, False, True]), g, c)
