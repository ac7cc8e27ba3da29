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
@pytest.mark.parametrize("op", ["bitwise_left_shift", "bitwise_right_shift", "floor_divide", "remainder", "fmod",
                                "trunc_divide"])
def test_integer_only_ops_refuse_bool(op):  # the array API defines shifts for integers, divisions for numbers
    b = tk.asarray([True, False])
    with pytest.raises(TypeError, match=rf"{op}: .*bool"):
        getattr(tk, op)(b, b)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                "bitwise_right_shift"])
def test_bitwise_on_floats(op):
    fn = getattr(tk, op)
    with pytest.raises(TypeError, match=rf"{op}: only integer.*dtype=float32"):
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
@pytest.mark.parametrize("bad", ["s", [1, 2, 3], None, {"a": 1}, (1.0,), b"x"],
                         ids=["str", "list", "None", "dict", "tuple", "bytes"])
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
DEVICES = ["cpu"] + (["cuda"] if _cuda_available() else [])


def _is_zero_division(e, op):
    # PyTorch (cpu): RuntimeError: ZeroDivisionError; Python's ZeroDivisionError too (what this raised before)
    assert type(e) is tk.ZeroDivisionError and isinstance(e, RuntimeError) and isinstance(e, ZeroDivisionError)
    msg = str(e)
    assert msg.startswith(f"ZeroDivisionError: {op}: integer division by zero"), msg
    assert "dtype=int" in msg and "shape=(2,)" in msg and "hint" in msg, msg


@pytest.mark.parametrize("device", DEVICES)
def test_integer_division_by_zero(device):
    x = tk.asarray([1, 2], device=device)
    host_known = [(lambda: x // 0, "floor_divide"), (lambda: tk.remainder(x, 0), "remainder"),
                  (lambda: x % False, "remainder"),  # a bool scalar computes in the int dtype
                  (lambda: tk.floor_divide(tk.asarray([1, 2], dtype=tk.int8, device=device), 0), "floor_divide"),
                  (lambda: x // tk.asarray(0), "floor_divide")]  # a 0-d cpu array acts as a scalar on cuda too
    if device == "cpu":  # zeros inside an array: the NumPy backend sees them (cuda: see test_elementwise_kernels)
        host_known += [(lambda: tk.remainder(x, tk.asarray([1, 0])), "remainder"),
                       (lambda: tk.asarray([5, 6]) // tk.asarray([[1, 2], [0, 1]]), "floor_divide")]
    for fn, op in host_known:
        with pytest.raises(ZeroDivisionError) as info:
            fn()
        _is_zero_division(info.value, op)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x //= 0
    assert x.tolist() == [1, 2]
    assert (tk.asarray([1.0], device=device) / 0).tolist() == [float("inf")]  # floats follow IEEE
    assert (tk.asarray([1.0], device=device) // 0).tolist() == [float("inf")]
    assert tk.floor_divide(tk.asarray([], dtype=tk.int64, device=device), 0).shape == (0,)  # no element, no error
    assert tk.ZeroDivisionError.__module__ == "tkernels.validation"  # defined once


@pytest.mark.parametrize("device", DEVICES)
def test_integer_negative_power(device):
    x = tk.asarray([1, 2], device=device)
    cases = [lambda: x ** -1, lambda: tk.pow(tk.asarray([1, 2], dtype=tk.uint8, device=device), -2)]
    if device == "cpu":  # (cuda: negative exponents inside an array follow PyTorch's integer pow)
        cases.append(lambda: x ** tk.asarray([1, -2]))
    for fn in cases:
        with pytest.raises(ValueError) as info:  # a ValueError before, and NumPy's; PyTorch: a RuntimeError
            fn()
        e = info.value
        assert type(e) is tk.NegativeIntegerPowerError and isinstance(e, RuntimeError), repr(e)
        msg = str(e)
        assert msg.startswith("pow: Integers to negative integer powers are not allowed"), msg
        assert "dtype=" in msg and "shape=(2,)" in msg and "hint" in msg, msg
    assert (x ** 2).tolist() == [1, 4] and (tk.asarray([2.0], device=device) ** -1).tolist() == [0.5]


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
