"""Bad input to tkernels.ops convolution, pooling, resizing and attention: the exception type, and a message that
names the op and the offending shapes/dtypes/values."""

import re

import numpy as np
import pytest

import tkernels as tk
from tkernels.ops.attention import scaled_dot_product_attention as sdpa
from tkernels.ops.attention import scaled_dot_product_attention_backward as sdpa_backward
from tkernels.ops.conv import conv1d, conv2d, conv2d_backward, conv_transpose2d, conv_transpose2d_backward
from tkernels.ops.pooling import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    interpolate,
    interpolate_backward,
    max_pool2d,
    max_pool2d_backward,
)


def r(*shape, dtype="float32"):
    return tk.asarray(np.random.default_rng(0).standard_normal(shape).astype(dtype))


def m(*parts):
    """A regex matching the parts in order (each escaped)."""
    return ".*".join(re.escape(p) for p in parts)


# -------------------------------------------------------------------------------------------------- conv
def test_conv2d_channel_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=m("conv2d", "3 input channels", "(1, 3, 5, 5)", "(2, 4, 3, 3)",
                                           "= 4 * 1 = 4")):
        conv2d(r(1, 3, 5, 5), r(2, 4, 3, 3))
    with pytest.raises(ValueError, match=m("conv2d", "(1, 4, 5, 5)", "(2, 1, 3, 3)", "= 1 * 2 = 2")):
        conv2d(r(1, 4, 5, 5), r(2, 1, 3, 3), groups=2)


def test_conv2d_groups():
    with pytest.raises(ValueError, match=m("conv2d", "groups=2 does not divide the 3 input channels",
                                           "(1, 3, 5, 5)")):
        conv2d(r(1, 3, 5, 5), r(4, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match=m("conv2d", "groups=2 does not divide the 3 output channels",
                                           "(3, 2, 3, 3)")):
        conv2d(r(1, 4, 5, 5), r(3, 2, 3, 3), groups=2)
    with pytest.raises(ValueError, match=m("conv2d", "groups must be a positive integer", "0")):
        conv2d(r(1, 4, 5, 5), r(3, 2, 3, 3), groups=0)


def test_conv2d_kernel_larger_than_padded_input():
    with pytest.raises(ValueError, match=m("conv2d", "padded input size per channel (2 x 2)", "kernel size (3 x 3)",
                                           "(1, 1, 2, 2)", "(1, 1, 3, 3)")):
        conv2d(r(1, 1, 2, 2), r(1, 1, 3, 3))
    with pytest.raises(ValueError, match=m("conv2d", "(4 x 4)", "(5 x 5)")):  # dilation 2 makes 3x3 span 5x5
        conv2d(r(1, 1, 2, 2), r(1, 1, 3, 3), padding=1, dilation=2)
    with pytest.raises(ValueError, match=m("conv1d", "(2)", "(3)")):
        conv1d(r(1, 1, 2), r(1, 1, 3))


def test_conv2d_ndim_dtype_and_types():
    with pytest.raises(ValueError, match=m("conv2d", "3-D (C, H, W) or 4-D (N, C, H, W)", "(5, 5)")):
        conv2d(r(5, 5), r(1, 1, 3, 3))
    with pytest.raises(ValueError, match=m("conv2d", "weight must be 4-D", "(1, 3, 3)")):
        conv2d(r(1, 1, 5, 5), r(1, 3, 3))
    with pytest.raises(ValueError, match=m("conv1d", "2-D (C, L) or 3-D (N, C, L)", "(1, 1, 5, 5)")):
        conv1d(r(1, 1, 5, 5), r(1, 1, 3))
    with pytest.raises(TypeError, match=m("conv2d", "same dtype", "float32", "float64")):
        conv2d(r(1, 1, 5, 5), r(1, 1, 3, 3, dtype="float64"))
    with pytest.raises(TypeError, match=m("conv2d", "x must have a floating dtype", "int64")):
        conv2d(tk.ones((1, 1, 5, 5), dtype=tk.int64), r(1, 1, 3, 3))
    with pytest.raises(TypeError, match=m("conv2d", "x must be an Array", "(1, 1, 5, 5)")):
        conv2d(np.ones((1, 1, 5, 5)), r(1, 1, 3, 3))
    with pytest.raises(ValueError, match=m("conv2d", "bias must have shape (2,)", "(3,)")):
        conv2d(r(1, 1, 5, 5), r(2, 1, 3, 3), r(3))
    with pytest.raises(TypeError, match=m("conv2d", "bias must have the dtype of x", "float64")):
        conv2d(r(1, 1, 5, 5), r(2, 1, 3, 3), r(2, dtype="float64"))


@pytest.mark.parametrize("kw,msg", [
    (dict(stride=0), "stride must be positive"), (dict(stride=-1), "stride must be positive"),
    (dict(dilation=0), "dilation must be positive"), (dict(padding=-1), "padding must be non-negative"),
    (dict(stride=(1, 2, 3)), "stride must be an int or a sequence of 2 ints"),
    (dict(padding="full"), "padding must be 'valid', 'same'"),
    (dict(padding="same", stride=2), "padding='same' is not supported for strided convolutions"),
], ids=str)
def test_conv2d_bad_geometry(kw, msg):
    with pytest.raises(ValueError, match=m("conv2d", msg)):
        conv2d(r(1, 1, 5, 5), r(1, 1, 3, 3), **kw)


def test_conv2d_backward_errors_leave_inputs_unchanged():
    x, w = r(1, 2, 5, 5), r(3, 2, 3, 3)
    before = x.numpy().copy()
    with pytest.raises(ValueError, match=m("conv2d_backward", "grad", "(1, 3, 5, 5)", "output shape (1, 3, 3, 3)")):
        conv2d_backward(r(1, 3, 5, 5), x, w)
    with pytest.raises(ValueError, match=m("conv2d_backward", "needs must be three booleans")):
        conv2d_backward(r(1, 3, 3, 3), x, w, needs=(True, False))
    np.testing.assert_array_equal(x.numpy(), before)


def test_conv_transpose2d_errors():
    with pytest.raises(ValueError, match=m("conv_transpose2d", "3 input channels", "(1, 3, 4, 4)", "(4, 2, 3, 3)",
                                           "weight.shape[0] = 4")):
        conv_transpose2d(r(1, 3, 4, 4), r(4, 2, 3, 3))
    with pytest.raises(ValueError, match=m("conv_transpose2d", "output_padding must be smaller than either stride or "
                                                               "dilation", "output_padding=2", "stride=2")):
        conv_transpose2d(r(1, 4, 4, 4), r(4, 2, 3, 3), stride=2, output_padding=2)
    with pytest.raises(ValueError, match=m("conv_transpose2d", "'same'")):
        conv_transpose2d(r(1, 4, 4, 4), r(4, 2, 3, 3), padding="same")
    with pytest.raises(ValueError, match=m("conv_transpose2d", "groups=3 does not divide the 4 input channels")):
        conv_transpose2d(r(1, 4, 4, 4), r(4, 2, 3, 3), groups=3)
    with pytest.raises(ValueError, match=m("conv_transpose2d", "output size (-1, -1) is too small")):
        conv_transpose2d(r(1, 4, 1, 1), r(4, 2, 1, 1), padding=1)
    with pytest.raises(ValueError, match=m("conv_transpose2d_backward", "grad", "(1, 2, 4, 4)", "(1, 2, 6, 6)")):
        conv_transpose2d_backward(r(1, 2, 4, 4), r(1, 4, 4, 4), r(4, 2, 3, 3))


# -------------------------------------------------------------------------------------------------- pooling
def test_pool_padding_rule_and_geometry():
    with pytest.raises(ValueError, match=m("max_pool2d", "padding should be at most half of the kernel size",
                                           "padding=2", "kernel_size=3")):
        max_pool2d(r(1, 1, 8, 8), 3, padding=2)
    with pytest.raises(ValueError, match=m("avg_pool2d", "at most half", "padding=(0, 2)", "kernel_size=(3, 3)")):
        avg_pool2d(r(1, 1, 8, 8), (3, 3), padding=(0, 2))
    with pytest.raises(ValueError, match=m("max_pool2d", "stride must be positive", "0")):
        max_pool2d(r(1, 1, 8, 8), 2, stride=0)
    with pytest.raises(ValueError, match=m("max_pool2d", "kernel_size must be positive")):
        max_pool2d(r(1, 1, 8, 8), 0)
    with pytest.raises(ValueError, match=m("max_pool2d", "output size (0 x 0) is too small", "(1, 1, 2, 2)")):
        max_pool2d(r(1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match=m("avg_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)", "(8, 8)")):
        avg_pool2d(r(8, 8), 2)
    with pytest.raises(TypeError, match=m("max_pool2d", "floating dtype", "int32")):
        max_pool2d(tk.ones((1, 1, 4, 4), dtype=tk.int32), 2)
    with pytest.raises(ValueError, match=m("avg_pool2d", "divisor_override must not be zero")):
        avg_pool2d(r(1, 1, 4, 4), 2, divisor_override=0)


def test_max_pool2d_backward_errors():
    x = r(1, 2, 4, 4)
    out, idx = max_pool2d(x, 2, return_indices=True)
    with pytest.raises(TypeError, match=m("max_pool2d_backward", "indices must be an int64 Array", "float32")):
        max_pool2d_backward(out, x.shape, out, 2)
    with pytest.raises(ValueError, match=m("max_pool2d_backward", "grad", "(1, 2, 3, 3)", "output shape (1, 2, 2, 2)")):
        max_pool2d_backward(r(1, 2, 3, 3), x.shape, idx, 2)
    with pytest.raises(ValueError, match=m("max_pool2d_backward", "input_shape must be (C, H, W) or (N, C, H, W)")):
        max_pool2d_backward(out, (4, 4), idx, 2)
    bad = tk.asarray(np.full((1, 2, 2, 2), 16, np.int64))
    with pytest.raises(IndexError, match=m("max_pool2d_backward", "[0, 16)", "16")):
        max_pool2d_backward(out, x.shape, bad, 2)


def test_adaptive_avg_pool2d_errors():
    with pytest.raises(ValueError, match=m("adaptive_avg_pool2d", "non-negative", "(-1, 2)")):
        adaptive_avg_pool2d(r(1, 1, 4, 4), (-1, 2))
    with pytest.raises(ValueError, match=m("adaptive_avg_pool2d", "an int or a pair", "(1, 2, 3)")):
        adaptive_avg_pool2d(r(1, 1, 4, 4), (1, 2, 3))
    with pytest.raises(ValueError, match=m("adaptive_avg_pool2d", "non-zero height and width", "(1, 1, 0, 4)")):
        adaptive_avg_pool2d(tk.zeros((1, 1, 0, 4)), 2)
    with pytest.raises(ValueError, match=m("adaptive_avg_pool2d_backward", "(1, 3, 2, 2)", "(1, 2, 4, 4)")):
        adaptive_avg_pool2d_backward(r(1, 3, 2, 2), (1, 2, 4, 4))


def test_interpolate_errors():
    x = r(1, 2, 4, 4)
    with pytest.raises(ValueError, match=m("interpolate", "mode must be one of", "'bicubic'")):
        interpolate(x, size=2, mode="bicubic")
    with pytest.raises(ValueError, match=m("interpolate", "exactly one of size and scale_factor", "size=2",
                                           "scale_factor=2")):
        interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match=m("interpolate", "exactly one of size and scale_factor", "size=None")):
        interpolate(x)
    with pytest.raises(ValueError, match=m("interpolate", "align_corners can only be set", "'nearest'")):
        interpolate(x, size=2, align_corners=True)
    with pytest.raises(ValueError, match=m("interpolate", "4-D (N, C, H, W)", "(2, 4, 4)")):
        interpolate(r(2, 4, 4), size=2)
    with pytest.raises(ValueError, match=m("interpolate", "scale_factor must be a positive number", "-2")):
        interpolate(x, scale_factor=-2)
    with pytest.raises(ValueError, match=m("interpolate", "scale_factor=0.1", "output size (0, 0)")):
        interpolate(x, scale_factor=0.1)
    with pytest.raises(ValueError, match=m("interpolate", "size must be positive")):
        interpolate(x, size=(0, 2))
    with pytest.raises(ValueError, match=m("interpolate_backward", "grad", "(1, 2, 3, 3)", "(1, 2, 8, 8)")):
        interpolate_backward(r(1, 2, 3, 3), x.shape, scale_factor=2)


# ------------------------------------------------------------------------------------------------ attention
def test_sdpa_shape_mismatches_name_all_three():
    q, k, v = r(2, 4, 8), r(2, 6, 7), r(2, 6, 8)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "feature sizes of q and k", "(2, 4, 8)",
                                           "(2, 6, 7)", "(2, 6, 8)")):
        sdpa(q, k, v)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "same length S", "(2, 4, 8)",
                                           "(2, 6, 8)", "(2, 5, 8)")):
        sdpa(q, r(2, 6, 8), r(2, 5, 8))
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "batch dimensions", "(2, 4, 4, 8)",
                                           "(2, 2, 6, 8)", "(2, 2, 6, 8)", "enable_gqa=True")):
        sdpa(r(2, 4, 4, 8), r(2, 2, 6, 8), r(2, 2, 6, 8))
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "multiple of", "(1, 3, 4, 8)",
                                           "(1, 2, 6, 8)")):
        sdpa(r(1, 3, 4, 8), r(1, 2, 6, 8), r(1, 2, 6, 8), enable_gqa=True)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "q must have at least 2 dimensions",
                                           "(8,)")):
        sdpa(r(8), k, v)
    with pytest.raises(TypeError, match=m("scaled_dot_product_attention", "share one dtype", "float64")):
        sdpa(q, r(2, 6, 8, dtype="float64"), v)


def test_sdpa_mask_and_arguments():
    q, k, v = r(2, 4, 8), r(2, 6, 8), r(2, 6, 8)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "attn_mask", "(4, 5)",
                                           "cannot be broadcast to the shape (2, 4, 6)")):
        sdpa(q, k, v, tk.ones((4, 5), dtype=tk.bool))
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "(3, 4, 6)", "(2, 4, 6)")):
        sdpa(q, k, v, tk.ones((3, 4, 6), dtype=tk.bool))
    with pytest.raises(TypeError, match=m("scaled_dot_product_attention", "bool, float32 or of q's dtype", "int64")):
        sdpa(q, k, v, tk.ones((4, 6), dtype=tk.int64))
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "attn_mask must be None when "
                                                                           "is_causal=True")):
        sdpa(q, k, v, tk.ones((4, 6), dtype=tk.bool), is_causal=True)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention", "dropout_p must be in [0, 1]", "1.5")):
        sdpa(q, k, v, dropout_p=1.5)
    with pytest.raises(TypeError, match=m("random", "generator must be a tkernels.random.Generator")):
        sdpa(q, k, v, dropout_p=0.5, generator=np.random.default_rng(0))


def test_sdpa_backward_errors():
    q, k, v = r(2, 4, 8), r(2, 6, 8), r(2, 6, 8)
    out, lse, _ = sdpa(q, k, v, return_stats=True)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention_backward", "dropout_p=0.5", "rng_state")):
        sdpa_backward(out, q, k, v, out, lse, dropout_p=0.5)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention_backward", "grad", "(2, 4, 7)",
                                           "output shape (2, 4, 8)")):
        sdpa_backward(r(2, 4, 7), q, k, v, out, lse)
    with pytest.raises(ValueError, match=m("scaled_dot_product_attention_backward", "lse", "(2, 5)", "(2, 4)")):
        sdpa_backward(out, q, k, v, out, r(2, 5))
