"""One row per bug the fuzzer found and we fixed: the smallest case that showed it."""

import numpy as np
import pytest

import autograd as ag
import tkernels as tk


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nan_to_num_half_defaults_are_the_dtypes_extremes(dtype):
    x = tk.asarray(np.array([np.inf, -np.inf, np.nan], np.float32)).astype(getattr(tk, dtype))
    fi = tk.finfo(getattr(tk, dtype))
    np.testing.assert_array_equal(tk.nan_to_num(x).astype(tk.float32).numpy(), [fi.max, fi.min, 0.0])


@pytest.mark.parametrize("op, call", [
    ("sum", lambda x: ag.sum(x, 3)), ("mean", lambda x: ag.mean(x, -4)), ("max", lambda x: ag.max(x, 3)),
    ("argmax", lambda x: ag.argmax(x, 3)), ("sort", lambda x: ag.sort(x, 5)), ("cumsum", lambda x: ag.cumsum(x, 3)),
    ("var", lambda x: ag.var(x, 3)), ("topk", lambda x: ag.topk(x, 1, 3)),
    ("movedim", lambda x: ag.movedim(x, -4, -2)), ("split", lambda x: ag.split(x, 2, 3)),
    ("chunk", lambda x: ag.chunk(x, 2, -4)), ("permute", lambda x: ag.permute(x, (0, 1, 5))),
])
def test_dim_out_of_range_raises_naming_the_op(op, call):
    with pytest.raises(IndexError, match=rf"{op}\(\): Dimension out of range"):
        call(ag.ones(5, 1, 2))


def test_zero_d_split_chunk_movedim():
    x = ag.tensor(1.5)
    for f in (lambda: ag.split(x, 1, 0), lambda: ag.chunk(x, 2, -1)):
        with pytest.raises(RuntimeError, match="1-dimensional"):
            f()
    assert ag.movedim(x, -1, 0).shape == ()
    with pytest.raises(RuntimeError, match="permute"):
        ag.permute(ag.ones(3), (0, 0))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("op", [ag.fmod, lambda a, b: ag.div(a, b, rounding_mode="trunc")])
def test_integer_fmod_and_trunc_division_by_zero_raise(op, device):
    a, b = ag.tensor([4, 3], dtype=ag.int8, device=device), ag.tensor([0, 2], dtype=ag.int8, device=device)
    with pytest.raises(tk.ZeroDivisionError, match="division by zero"):
        op(a, b).tolist()  # cuda reports at the next synchronising call


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_large_int64_trunc_division_and_fmod_are_exact(device):
    x = ag.tensor([3000000000000000001, -3000000000000000001, 7, -7], device=device)
    assert ag.div(x, 7, rounding_mode="trunc").tolist() == [428571428571428571, -428571428571428571, 1, -1]
    assert ag.fmod(x, ag.tensor([-2, 5, 3, -3], device=device)).tolist() == [1, -1, 1, -1]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_fmod_of_a_zero_d_half_dividend_broadcast(device):
    y = np.linspace(-3, 3, 15).reshape(3, 5).astype(np.float16)
    r = ag.fmod(ag.tensor(np.float16(3.5), device=device), ag.tensor(y, device=device))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.asarray(r.tolist(), np.float16), np.fmod(np.float16(3.5), y))


@pytest.mark.parametrize("op", ["bitwise_left_shift", "bitwise_right_shift", "floor_divide", "remainder", "pow"])
def test_bool_shifts_and_divisions_raise(op):
    b = ag.tensor([True, False])
    with pytest.raises(TypeError, match=rf"{op}: .*bool"):
        getattr(ag, op)(b, b)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bfloat16_std_near_the_max_is_finite(device):
    x = ag.tensor([3.3e38, -3.3e38, 1.65e38, 0.0], device=device).to(ag.bfloat16)
    ref = np.std(np.asarray(x.float().tolist(), np.float64), ddof=1)
    np.testing.assert_allclose(ag.std(x).float().item(), ref, rtol=1e-2)
    assert np.isinf(ag.var(x).float().item())  # past the dtype's max, as PyTorch


def _f():
    from nn import functional as F

    return F


@pytest.mark.parametrize("op, call", [
    ("expand", lambda: ag.ones(2, 3).expand(4, 3)),
    ("xlogy", lambda: ag.xlogy(ag.ones(2, 3), ag.ones(4, 3))),
    ("float_power", lambda: ag.float_power(ag.ones(2, 3), ag.ones(4, 3))),
    ("fmod", lambda: ag.fmod(ag.ones(2, 3), ag.ones(4, 3))),
    ("normalize", lambda: _f().normalize(ag.ones(2, 3), dim=5)),
    ("median", lambda: ag.median(ag.ones(0, dtype=ag.uint8))),
    ("nansum", lambda: ag.nansum(ag.ones(2, 3), 5)),
    ("binary_cross_entropy", lambda: _f().binary_cross_entropy(ag.ones(2, 3) * 0.5, ag.ones(4, 3))),
    ("binary_cross_entropy_with_logits", lambda: _f().binary_cross_entropy_with_logits(ag.ones(2, 3), ag.ones(4, 3))),
    ("repeat_interleave", lambda: ag.repeat_interleave(ag.tensor(1), 2, 0)),
    ("take_along_dim", lambda: ag.take_along_dim(ag.tensor(1.0), ag.tensor(0), -1)),
])
def test_errors_name_the_op_called(op, call):
    with pytest.raises((TypeError, ValueError, IndexError, RuntimeError), match=rf"^{op}(\(\)|:)"):
        call()


def test_moveaxis_of_zero_d_and_chunk_of_an_empty_dim():
    assert tk.moveaxis(tk.asarray(1.0), 0, 0).shape == ()
    assert [c.shape for c in ag.chunk(ag.ones(4, 3, 1, 0), 3, -1)] == [(4, 3, 1, 0)] * 3
    assert ag.repeat_interleave(ag.tensor(1), 2).tolist() == [1, 1]


def test_bf16_matmul_with_infinities_agrees_on_cpu_and_cuda():
    # only overflow past float32's max may differ (deviation matmul-fp32-overflow); infinities alone must not
    a = np.array([[[0.5, np.inf, 2.0], [-np.inf, 1.0, 3.0]]] * 2, np.float32)
    b = np.array([[[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]]] * 2, np.float32)
    x, y = tk.asarray(a).astype(tk.bfloat16), tk.asarray(b).astype(tk.bfloat16)
    c = tk.matmul(x, y).astype(tk.float32).numpy()
    g = tk.matmul(x.to("cuda"), y.to("cuda")).astype(tk.float32).to("cpu").numpy()
    np.testing.assert_array_equal(c, g)
    np.testing.assert_array_equal(c, np.matmul(a.astype(np.float64), b))


def test_half_sinc_and_mixed_xlogy_compute_in_float32():
    x = ag.tensor([1e-8, 0.3, 2.5, 0.0]).to(ag.bfloat16)
    ref = np.sinc(np.asarray(x.float().tolist(), np.float64))
    np.testing.assert_allclose(ag.sinc(x).float().tolist(), ref, rtol=8e-3)
    b = ag.tensor([0.3, 2.1, 5.0]).to(ag.bfloat16)
    r = ag.xlogy(ag.tensor([1.0, 2.0, 0.0]), b)
    np.testing.assert_allclose(r.tolist(), [1, 2, 0] * np.log(np.asarray(b.float().tolist(), np.float64)), rtol=1e-6)


def test_roll_pairs_shifts_with_dims_as_pytorch():
    with pytest.raises(RuntimeError, match="roll\\(\\): shifts and dimensions must align. shifts: 1, dims: 2"):
        ag.roll(ag.ones(3, 4), -2, (0, 1))
    np.testing.assert_array_equal(ag.roll(ag.arange(6.0).reshape(2, 3), (1,), (1,)).numpy(),
                                  np.roll(np.arange(6.0).reshape(2, 3), 1, 1))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_pointwise_losses_name_themselves(name):
    from nn import functional as F  # noqa: N812

    f = getattr(F, name)
    with pytest.raises(TypeError, match=f"{name}\\(\\): subtract: not supported for bool"):
        f(ag.ones(3, dtype=ag.bool), ag.ones(3, dtype=ag.bool))
    with pytest.raises(ValueError, match=f"{name}\\(\\): subtract: shapes"):
        f(ag.ones(4, 0), ag.ones(2, 5))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_take_checks_indices_when_the_result_is_empty(device):
    x = tk.asarray(np.zeros((3, 0), np.float32), device=device)
    with pytest.raises(IndexError, match="take: index 5 is out of bounds for axis 0 with size 3"):
        tk.take(x, tk.asarray(np.array([5]), device=device), axis=0)
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 0 with size 0"):
        tk.take(tk.asarray(np.zeros((0, 0), bool), device=device), tk.asarray(np.array([-1]), device=device), axis=0)
    assert tk.take(x, tk.asarray(np.array([2, -3]), device=device), axis=0).shape == (2, 0)
    with pytest.raises(IndexError, match="out of bounds"):
        ag.index_select(ag.ones(0, 3, 1, dtype=ag.uint8, device=device), 2, ag.tensor([0, 1], device=device))
