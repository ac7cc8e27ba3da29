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
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): sub\\(\\): Subtraction.*bool"):
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


# ---------------------------------------------------------------- found with seeds 1-14 (10,000 cases each)
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_half_results_round_their_operands_first(device):
    """int32 70000 is inf in float16 (so inf // 3 is nan, as in PyTorch); fmod(h, 0.001) divides by float16's
    0.0010004 (1000.5 % 0.001 was 0.00027 computed with the exact 0.001, PyTorch 0.00059)."""
    i = ag.tensor([70000, -70000, 3], dtype=ag.int32, device=device)
    h = ag.tensor([3.0, 3.0, float("inf")], dtype=ag.float16, device=device)
    got = ag.div(i, h, rounding_mode="floor").tolist()
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 0.0
    x = np.float16(1000.5)
    want = np.fmod(np.float32(x), np.float32(np.float16(0.001)))
    assert ag.fmod(ag.tensor([x], device=device), 0.001).item() == pytest.approx(float(np.float16(want)))
    assert ag.fmod(ag.tensor([x], device=device), 0.001).item() != pytest.approx(float(np.float16(np.fmod(1000.5,
                                                                                                       0.001))))
    b = ag.tensor([1000.5], dtype=ag.bfloat16, device=device)
    assert ag.remainder(b, 0.001).item() == ag.remainder(b, ag.tensor(0.001, dtype=ag.bfloat16, device=device)).item()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_comparisons_in_a_half_dtype_round_the_integer(device):
    a, h = ag.tensor([2049, 70000], device=device), ag.tensor([2048.0, float("inf")], dtype=ag.float16, device=device)
    assert (a > h).tolist() == [False, False] and (a >= h).tolist() == [True, True]
    assert (ag.tensor([0.1], dtype=ag.float16, device=device) == 0.1).tolist() == [True]


def test_gather_and_scatter_take_zero_d_as_one_d():
    x = ag.arange(3.0, requires_grad=True)
    y = ag.gather(x, -1, ag.tensor(2))
    assert y.shape == () and y.item() == 2.0
    y.backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    assert ag.gather(ag.tensor(5.0), 0, ag.tensor([0])).tolist() == [5.0]
    assert ag.scatter(ag.zeros(3), 0, ag.tensor(1), ag.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]
    assert ag.scatter_add(ag.zeros(3), 0, ag.tensor(1), ag.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]
    with pytest.raises(RuntimeError, match="number of dimensions"):
        ag.gather(ag.zeros(2, 3), 0, ag.tensor(1))


def test_cat_of_legacy_empties_only():
    r = ag.cat([ag.zeros(0, dtype=ag.bfloat16)], dim=1)
    assert r.shape == (0,) and r.dtype == ag.bfloat16
    assert ag.cat([ag.zeros(0), ag.zeros(0, dtype=ag.int64)], dim=-7).dtype == ag.float32


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_float32_norm_and_std_near_the_max(device):
    x = ag.tensor([[3e38, 1.0], [2e38, -2e38]], device=device)
    np.testing.assert_allclose(ag.linalg.vector_norm(x, dim=1).tolist(), [3e38, 2.828427e38], rtol=1e-6)
    assert ag.linalg.vector_norm(ag.tensor([3e38], dtype=ag.bfloat16, device=device)).item() == pytest.approx(
        3e38, rel=1e-2)
    np.testing.assert_allclose(ag.norm(ag.tensor([1e-30, 1e-30], device=device)).item(), 1.4142135e-30, rtol=1e-6)
    # float32 variances accumulate in float64 on every device (PyTorch's cpu does; its cuda overflows)
    np.testing.assert_allclose(ag.std(ag.tensor([2e38, -2e38], device=device)).item(), 2.828427e38, rtol=1e-6)


def test_xlogy_nan_other_and_pytorch_gradients():
    x = ag.tensor([0.0, 0.0, 2.0, 0.0], dtype=ag.float64, requires_grad=True)
    y = ag.tensor([float("nan"), 3.0, 0.0, 0.0], dtype=ag.float64, requires_grad=True)
    r = ag.xlogy(x, y)
    np.testing.assert_array_equal(r.tolist(), [np.nan, 0.0, -np.inf, 0.0])
    r.sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), [np.nan, np.log(3.0), -np.inf, 0.0])
    np.testing.assert_array_equal(y.grad.tolist(), [np.nan, 0.0, np.inf, np.nan])
    assert ag.xlogy(ag.tensor([0.0, 2.0]), 0.0).tolist() == [0.0, -np.inf]  # (was Python's math domain error)
    a = ag.rand(5, dtype=ag.float64, requires_grad=True)
    b = (ag.rand(3, 1, dtype=ag.float64) + 0.5).requires_grad_()
    from autograd.gradcheck import gradcheck, gradgradcheck

    assert gradcheck(ag.xlogy, (a, b)) and gradgradcheck(ag.xlogy, (a, b))


def test_subtraction_with_a_bool_tensor_is_refused():
    b, i = ag.tensor([True, False]), ag.tensor([1, 2])
    for f in (lambda: b - i, lambda: i - b, lambda: ag.sub(b, 1), lambda: ag.rsub(b, 1), lambda: i.sub_(b),
              lambda: ag.subtract(i, b, alpha=2)):
        with pytest.raises(RuntimeError, match=r"sub\(\): Subtraction.*bool"):
            f()
    assert (i - 1).tolist() == [0, 1]


def test_bce_of_half_inputs_near_zero_uses_log1p():
    from nn import functional as F

    x, t = ag.tensor(6.104e-05, dtype=ag.float16), ag.tensor(0.0, dtype=ag.float16)
    assert F.binary_cross_entropy(x, t).item() == pytest.approx(6.104e-05, rel=1e-3)


@pytest.mark.parametrize("op, call", [
    ("binary_cross_entropy_with_logits", lambda: __import__("nn").functional.binary_cross_entropy_with_logits(
        ag.ones(2, dtype=ag.bool), ag.ones(2, dtype=ag.bool))),
    ("take_along_dim", lambda: ag.take_along_dim(ag.tensor([4]), ag.tensor([1]), 0)),
])
def test_composites_name_themselves(op, call):
    with pytest.raises((TypeError, IndexError, RuntimeError), match=op):
        call()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_cross_entropy_row_with_a_nan_logit_is_nan(device):
    from nn import functional as F

    z = ag.tensor([[0.3, float("nan"), 0.9], [0.1, 0.2, 0.3]], device=device)
    r = F.cross_entropy(z, ag.tensor([0, 2], device=device), reduction="none").tolist()
    assert np.isnan(r[0]) and r[1] == pytest.approx(float(np.log(np.exp([0.1, 0.2, 0.3]).sum()) - 0.3), rel=1e-6)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_integer_operand_wraps_to_the_result_dtype(device):
    """uint8[n] // int8 0-d computes in uint8: -3 enters as 253 (cuda computed with -3 and wrapped the quotient)."""
    q = ag.div(ag.tensor(-3, dtype=ag.int8, device=device), ag.tensor([8, 20, 9], dtype=ag.uint8, device=device),
               rounding_mode="floor")
    assert q.tolist() == [31, 12, 28]


def test_positive_of_bool_is_refused_on_every_device():
    for device in ("cpu", "cuda"):
        with pytest.raises(TypeError, match="positive: not supported for bool"):
            +ag.tensor([True], device=device)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_tile_of_a_strided_4d_array(device):
    """tile's (r0, s0, r1, s1, ...) view of a non-contiguous 4-d array has 7 strided dims: more than the copy kernel
    indexes (cuda raised "strided kernels support 6 non-mergeable dimensions"); it copies row by row."""
    x = np.random.default_rng(0).random((3, 4, 3, 10)).astype(np.float32)
    r = tk.tile(tk.asarray(x, device=device)[..., ::2], (2, 2, 2))
    np.testing.assert_array_equal(r.numpy(), np.tile(x[..., ::2], (2, 2, 2)))
