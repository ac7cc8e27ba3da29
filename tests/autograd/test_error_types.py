"""The errors of ops are PyTorch's RuntimeError (what a PyTorch program catches) and also the ValueError or
TypeError that Python and the array API standard name (tkernels.validation.OpValueError / OpTypeError)."""

import pytest

import autograd as ag
import nn
import tkernels as tk
from nn import functional as F  # noqa: N812

# (the call, the Python class it also is): PyTorch 2.13 raises RuntimeError for each
CASES = {
    "broadcast": (lambda: ag.ones(2, 3) + ag.ones(3, 2), ValueError),
    "matmul": (lambda: ag.ones(2, 3) @ ag.ones(2, 3), ValueError),
    "view": (lambda: ag.ones(6).view(4, 2), ValueError),
    "expand": (lambda: ag.ones(3, 2).expand(3, 4), ValueError),
    "setitem": (lambda: ag.ones(3, 4).__setitem__(0, ag.ones(2)), ValueError),
    "reshape_two_minus_ones": (lambda: ag.ones(6).reshape(-1, -1), ValueError),
    "int_add_float_in_place": (lambda: ag.tensor([1]).add_(1.5), TypeError),
    "negate_bool": (lambda: -ag.tensor([True]), TypeError),
    "conv2d_channels": (lambda: nn.Conv2d(3, 2, 3)(ag.zeros(1, 4, 5, 5)), ValueError),
    "layer_norm_shape": (lambda: nn.LayerNorm(4)(ag.zeros(2, 3)), ValueError),
    "max_pool_too_small": (lambda: nn.MaxPool2d(5)(ag.zeros(1, 1, 3, 3)), ValueError),
    "gather_out_of_range": (lambda: ag.ones(3).gather(0, ag.tensor([5])), IndexError),
    "max_of_empty": (lambda: ag.tensor([]).max(), IndexError),
    "max_along_empty_dim": (lambda: ag.ones(2, 0).max(1), IndexError),
    "sdpa_features": (lambda: F.scaled_dot_product_attention(ag.ones(1, 2, 4), ag.ones(1, 2, 3), ag.ones(1, 2, 3)),
                      ValueError),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op_errors_are_runtime_errors_too(name):
    fn, py = CASES[name]
    with pytest.raises(RuntimeError) as info:
        fn()
    assert isinstance(info.value, py), type(info.value).__mro__


def test_the_classes():
    assert issubclass(tk.validation.OpValueError, ValueError) and issubclass(tk.validation.OpValueError, RuntimeError)
    assert issubclass(tk.validation.OpTypeError, TypeError) and issubclass(tk.validation.OpTypeError, RuntimeError)
    with pytest.raises(ValueError, match="broadcast"):  # the array API's ValueError is kept
        tk.broadcast_shapes((2, 3), (3, 2))


def test_indexing_a_tensor_out_of_range_stays_a_plain_index_error():
    with pytest.raises(IndexError) as info:  # (PyTorch: IndexError, not RuntimeError)
        ag.ones(3)[5]
    assert not isinstance(info.value, RuntimeError)


def test_cuda_gather_out_of_range_is_both():
    x = ag.ones(3, device="cuda")
    with pytest.raises(RuntimeError) as info:
        x.gather(0, ag.tensor([5], device="cuda")).cpu()
    assert isinstance(info.value, IndexError)
