"""Bad input to softmax, the normalizations, the losses, embedding and dropout: each error names the op and the
offending arguments (shapes, dtypes), and a failed op leaves its inputs unchanged."""

import numpy as np
import pytest

import tkernels as tk
from tkernels.ops.activation import log_softmax, softmax, softmax_backward
from tkernels.ops.loss import cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward
from tkernels.ops.normalization import (
    batch_norm,
    batch_norm_backward,
    group_norm,
    group_norm_backward,
    layer_norm,
    layer_norm_backward,
    rms_norm,
    rms_norm_backward,
)
from tkernels.ops.sparse import dropout, dropout_backward, embedding, embedding_backward
from tkernels.random import Generator


def F(*shape, dtype=tk.float32):
    return tk.asarray(np.random.default_rng(0).normal(size=shape).astype(np.float64)).astype(dtype)


def ints(values, dtype=np.int64):
    return tk.asarray(np.asarray(values, dtype))


# -------------------------------------------------------------------------------------------------- softmax
def test_softmax_errors():
    with pytest.raises(TypeError, match=r"softmax: expected an Array, got list \[1.0, 2.0\]"):
        softmax([1.0, 2.0])
    with pytest.raises(TypeError, match=r"softmax: expected a floating array, got .*dtype=int64.*hint: pass dtype"):
        softmax(ints([1, 2]))
    with pytest.raises(IndexError, match=r"log_softmax: axis 2 is out of range for an array of 2 dimension"):
        log_softmax(F(2, 3), 2)
    with pytest.raises(TypeError, match=r"softmax: dtype must be a floating dtype, got int32"):
        softmax(F(3), dtype=tk.int32)
    with pytest.raises(ValueError, match=r"softmax_backward: grad .*shape=\(2, 3\).* and y .*shape=\(3, 2\)"):
        softmax_backward(F(2, 3), F(3, 2), -1)


# ---------------------------------------------------------------------------------------------------- norms
def test_layer_norm_errors():
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(5,\) does not match the trailing "
                                         r"dimensions of x Array\(shape=\(3, 4\)"):
        layer_norm(F(3, 4), 5)
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(2, 4\) does not match .*shape=\(4,\)"):
        layer_norm(F(4), (2, 4))
    with pytest.raises(ValueError, match=r"layer_norm: weight must have shape \(4,\) .* got Array\(shape=\(3,\)"):
        layer_norm(F(3, 4), 4, F(3))
    with pytest.raises(TypeError, match=r"layer_norm: x must be a floating array, got .*int64"):
        layer_norm(ints([[1, 2]]), 2)
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape must have at least one dimension"):
        layer_norm(F(3, 4), ())
    with pytest.raises(ValueError, match=r"layer_norm: negative dimension"):
        layer_norm(F(3, 4), -4)
    with pytest.raises(TypeError, match=r"layer_norm: bias must be a floating array, got .*int64"):
        layer_norm(F(3, 4), 4, None, ints([1, 2, 3, 4]))
    with pytest.raises(ValueError, match=r"layer_norm_backward: mean and rstd are required"):
        layer_norm_backward(F(3, 4), F(3, 4), None, None, None, 4)
    with pytest.raises(ValueError, match=r"layer_norm_backward: mean must have shape \(3,\) .*shape=\(4,\)"):
        layer_norm_backward(F(3, 4), F(3, 4), F(4), F(3), None, 4)
    with pytest.raises(ValueError, match=r"layer_norm_backward: grad .*shape=\(4, 3\).* must have the shape of x"):
        layer_norm_backward(F(4, 3), F(3, 4), F(3), F(3), None, 4)
    with pytest.raises(ValueError, match=r"layer_norm_backward: needs must be a sequence of 3 booleans"):
        layer_norm_backward(F(3, 4), F(3, 4), F(3), F(3), None, 4, needs=(True,))


def test_rms_norm_errors():
    with pytest.raises(ValueError, match=r"rms_norm: normalized_shape \(3,\) does not match .*shape=\(2, 4\)"):
        rms_norm(F(2, 4), 3)
    with pytest.raises(ValueError, match=r"rms_norm: eps must be non-negative, got -1"):
        rms_norm(F(2, 4), 4, None, -1)
    with pytest.raises(ValueError, match=r"rms_norm_backward: rstd is required"):
        rms_norm_backward(F(2, 4), F(2, 4), None, None, 4)


def test_group_norm_errors():
    with pytest.raises(ValueError, match=r"group_norm: num_groups 3 must be positive and divide the 4 channels of x "
                                         r"Array\(shape=\(2, 4, 5\)"):
        group_norm(F(2, 4, 5), 3)
    with pytest.raises(ValueError, match=r"group_norm: num_groups 0 must be positive"):
        group_norm(F(2, 4, 5), 0)
    with pytest.raises(ValueError, match=r"group_norm: x must have shape \(N, C, \*\) .*shape=\(4,\)"):
        group_norm(F(4), 2)
    with pytest.raises(ValueError, match=r"group_norm: weight must have shape \(4,\) .*shape=\(2,\)"):
        group_norm(F(2, 4, 5), 2, F(2))
    with pytest.raises(TypeError, match=r"group_norm: num_groups must be an integer, got float"):
        group_norm(F(2, 4, 5), 2.0)
    with pytest.raises(ValueError, match=r"group_norm_backward: mean must have shape \(2, 2\)"):
        group_norm_backward(F(2, 4, 5), F(2, 4, 5), F(2, 4), F(2, 2), None, 2)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"batch_norm: running_mean and running_var are required in evaluation mode"):
        batch_norm(F(4, 3), None, None)
    with pytest.raises(ValueError, match=r"batch_norm: expected more than 1 value per channel when training, got x "
                                         r"Array\(shape=\(1, 3\)"):
        batch_norm(F(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match=r"batch_norm: running_mean must have shape \(3,\) .*shape=\(4,\)"):
        batch_norm(F(4, 3), F(4), F(3), training=True)
    with pytest.raises(ValueError, match=r"batch_norm: x must have shape \(N, C, \*\)"):
        batch_norm(F(4), F(4), F(4))
    with pytest.raises(ValueError, match=r"batch_norm_backward: save_mean and save_invstd are required when training"):
        batch_norm_backward(F(4, 3), F(4, 3), None, None, None, None, None, True)
    with pytest.raises(ValueError, match=r"batch_norm_backward: running_mean and running_var are required"):
        batch_norm_backward(F(4, 3), F(4, 3), None, None, None, F(3), F(3), False)


def test_failed_batch_norm_leaves_running_stats_unchanged():
    rm, rv = F(3), F(3)
    before = rm.numpy().copy(), rv.numpy().copy()
    with pytest.raises(ValueError, match=r"batch_norm: bias must have shape \(3,\)"):
        batch_norm(F(4, 3), rm, rv, F(3), F(2), training=True)
    np.testing.assert_array_equal(rm.numpy(), before[0])
    np.testing.assert_array_equal(rv.numpy(), before[1])


# --------------------------------------------------------------------------------------------------- losses
def test_cross_entropy_target_errors():
    z = F(3, 5)
    with pytest.raises(IndexError, match=r"cross_entropy: target 5 is out of bounds for 5 classes"):
        cross_entropy(z, ints([0, 5, 1]))
    with pytest.raises(IndexError, match=r"cross_entropy: target -1 is out of bounds for 5 classes"):
        cross_entropy(z, ints([0, -1, 1]))
    with pytest.raises(IndexError, match=r"cross_entropy_backward: target 9 is out of bounds for 5 classes"):
        cross_entropy_backward(1.0, z, ints([9, 0, 1]))
    with pytest.raises(ValueError, match=r"cross_entropy: target Array\(shape=\(4,\).* does not match logits "
                                         r"Array\(shape=\(3, 5\).*need shape \(3,\)"):
        cross_entropy(z, ints([0, 1, 2, 3]))
    with pytest.raises(ValueError, match=r"cross_entropy: floating target Array\(shape=\(3,\), dtype=float32.*"
                                         r"hint: class indices must be integers"):
        cross_entropy(z, F(3))
    with pytest.raises(TypeError, match=r"cross_entropy: target must be an integer array of class indices or a "
                                        r"floating array of class probabilities, got .*dtype=bool"):
        cross_entropy(z, tk.asarray(np.array([True, False, True])))
    with pytest.raises(TypeError, match=r"nll_loss: target must be an integer array of class indices, got "
                                        r".*dtype=float32"):
        nll_loss(z, F(3, 5))
    with pytest.raises(IndexError, match=r"nll_loss: target 7 is out of bounds for 5 classes"):
        nll_loss(z, ints([7, 0, 0], np.int32))
    with pytest.raises(IndexError, match=r"nll_loss_backward: target 5 is out of bounds for 5 classes"):
        nll_loss_backward(1.0, z, ints([5, 0, 0]))


def test_cross_entropy_argument_errors():
    z, t = F(3, 5), ints([0, 1, 2])
    with pytest.raises(ValueError, match=r"cross_entropy: weight Array\(shape=\(4,\).* must have shape \(5,\)"):
        cross_entropy(z, t, F(4))
    with pytest.raises(ValueError, match=r"cross_entropy: reduction must be one of 'none', 'mean', 'sum', got 'avg'"):
        cross_entropy(z, t, reduction="avg")
    with pytest.raises(ValueError, match=r"cross_entropy: label_smoothing must be in \[0, 1\], got 1.5"):
        cross_entropy(z, t, label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"cross_entropy: logits must have a class axis, got a 0-d array"):
        cross_entropy(F(), ints(0))
    with pytest.raises(ValueError, match=r"cross_entropy: the class axis 1 of logits .*shape=\(3, 0\).* has size 0"):
        cross_entropy(F(3, 0), t)
    with pytest.raises(IndexError, match=r"cross_entropy: axis 2 is out of range"):
        cross_entropy(z, t, axis=2)
    with pytest.raises(TypeError, match=r"cross_entropy: logits must be a floating array, got .*int64"):
        cross_entropy(ints([[1, 2]]), ints([0]))
    with pytest.raises(TypeError, match=r"cross_entropy: ignore_index must be an integer, got float"):
        cross_entropy(z, t, ignore_index=1.5)
    with pytest.raises(ValueError, match=r"cross_entropy_backward: grad Array\(shape=\(3, 1\).* must have the "
                                         r"loss's shape \(3,\)"):
        cross_entropy_backward(F(3, 1), z, t, reduction="none")
    with pytest.raises(TypeError, match=r"cross_entropy_backward: grad must be an Array of shape \(3,\), got float"):
        cross_entropy_backward(1.0, z, t, reduction="none")
    with pytest.raises(ValueError, match=r"cross_entropy_backward: lse must be the floating Array of shape \(3,\)"):
        cross_entropy_backward(1.0, z, t, lse=F(5))


# --------------------------------------------------------------------------------------------------- sparse
def test_embedding_errors():
    w = F(10, 3)
    with pytest.raises(IndexError, match=r"embedding: index 10 is out of range for 10 embeddings"):
        embedding(w, ints([[0, 10]]))
    with pytest.raises(IndexError, match=r"embedding: index -1 is out of range for 10 embeddings"):
        embedding(w, ints([-1, 2], np.int32))
    with pytest.raises(TypeError, match=r"embedding: indices must be int32 or int64, got .*float32"):
        embedding(w, F(2))
    with pytest.raises(TypeError, match=r"embedding: indices must be int32 or int64, got .*int16"):
        embedding(w, ints([1], np.int16))
    with pytest.raises(ValueError, match=r"embedding: weight must be 2-D .*shape=\(10,\)"):
        embedding(F(10), ints([1]))
    with pytest.raises(ValueError, match=r"embedding: padding_idx 10 must be within num_embeddings 10"):
        embedding(w, ints([1]), padding_idx=10)
    with pytest.raises(ValueError, match=r"embedding_backward: grad Array\(shape=\(2, 4\).* must have shape "
                                         r"indices.shape \+ \(embedding_dim,\) with indices Array\(shape=\(3,\)"):
        embedding_backward(F(2, 4), ints([0, 1, 2]), 10)
    with pytest.raises(IndexError, match=r"embedding_backward: index 12 is out of range for 10 embeddings"):
        embedding_backward(F(2, 4), ints([0, 12]), 10)


def test_failed_embedding_with_max_norm_leaves_weight_unchanged():
    w = F(4, 3) * 10
    before = w.numpy().copy()
    with pytest.raises(IndexError, match=r"embedding: index 4 is out of range for 4 embeddings"):
        embedding(w, ints([0, 1, 4]), max_norm=1.0)
    np.testing.assert_array_equal(w.numpy(), before)


def test_dropout_errors():
    x = F(4)
    for p in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"dropout: dropout probability p must be in \[0, 1\], got"):
            dropout(x, p)
    with pytest.raises(ValueError, match=r"dropout: dropout probability p must be in \[0, 1\], got 2"):
        dropout(x, 2, training=False)  # checked even when dropout is off, as torch
    with pytest.raises(TypeError, match=r"dropout: expected a floating array, got .*int64"):
        dropout(ints([1, 2]), 0.5)
    with pytest.raises(TypeError, match=r"dropout: generator must be a tkernels.random.Generator, got Generator"):
        dropout(x, 0.5, generator=np.random.default_rng(0))
    _, mask = dropout(x, 0.5, generator=Generator(0), return_mask=True)
    with pytest.raises(ValueError, match=r"dropout_backward: mask Array\(shape=\(4,\), dtype=bool.* grad is "
                                         r"Array\(shape=\(5,\)"):
        dropout_backward(F(5), mask, 0.5)
    with pytest.raises(TypeError, match=r"dropout_backward: on cpu the mask must be the bool Array"):
        dropout_backward(F(4), (1, 2), 0.5)
