"""Shape/data movement semantics the op table does not show: which results are views and which are fresh
copies, PyTorch's split/chunk conventions, dtype promotion in concat/stack, repeat's forms."""

import numpy as np
import pytest

import tkernels as tk


def arr(*shape, dtype=np.float32):
    return tk.asarray(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))


def test_split_chunk_unstack_diagonal_are_views():
    x = arr(6, 4)
    parts = tk.split(x, [1, 5]) + tk.chunk(x, 2, axis=1) + tk.unstack(x, axis=1) + (tk.diagonal(x, offset=1),)
    for p in parts:
        assert p._storage is x._storage
    tk.split(x, 2)[1][0, 0] = -1.0
    assert x.numpy()[2, 0] == -1.0
    tk.diagonal(x)[...] = 7.0
    np.testing.assert_array_equal(np.diagonal(x.numpy()), [7.0] * 4)


@pytest.mark.parametrize("fn", [
    lambda x: tk.flip(x, axis=()), lambda x: tk.roll(x, 0, axis=0), lambda x: tk.roll(x, 6),
    lambda x: tk.repeat(x, 1, axis=1),
    lambda x: tk.repeat(x, tk.asarray([1]), axis=0), lambda x: tk.tile(x, (1, 1)), lambda x: tk.pad(x, (0, 0)),
    lambda x: tk.pad(x, (0, 0), mode="reflect"), lambda x: tk.concat([x]), lambda x: tk.stack([x])[0],
    lambda x: tk.concat([x], axis=None).reshape(x.shape)], ids=lambda f: "")
def test_copies_never_alias_the_input(fn):
    x = arr(2, 3)
    y = fn(x)
    assert y.shape == (2, 3)
    assert y._storage is not x._storage
    y[...] = -1
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3))


def test_split_and_chunk_follow_pytorch():
    x = arr(7)
    assert [p.shape[0] for p in tk.split(x, 3)] == [3, 3, 1]
    assert [p.shape[0] for p in tk.split(x, 10)] == [7]
    assert [p.shape[0] for p in tk.chunk(arr(6), 4)] == [2, 2, 2]  # fewer pieces than asked, like torch.chunk
    assert [p.shape for p in tk.chunk(arr(0, 2), 3)] == [(0, 2)] * 3
    assert [p.shape for p in tk.split(arr(0, 2), 0)] == [(0, 2)]
    assert isinstance(tk.split(x, 3), tuple) and isinstance(tk.unstack(x), tuple)


def test_concat_and_stack_promote_like_pytorch():
    i8, u8 = tk.ones(2, dtype=tk.int8), tk.full((2,), 200, dtype=tk.uint8)
    r = tk.concat([i8, u8])
    assert r.dtype is tk.int16
    np.testing.assert_array_equal(r.numpy(), [1, 1, 200, 200])
    h = tk.stack([tk.ones(2, dtype=tk.float16), tk.ones(2, dtype=tk.bfloat16)])
    assert h.dtype is tk.float32 and h.shape == (2, 2)
    assert tk.concat([tk.ones(2, dtype=tk.bool), tk.ones(1, dtype=tk.int32)]).dtype is tk.int32
    # the array API: every array takes part in the promotion, empty ones too
    e = tk.concat([tk.asarray([1, 2]), tk.zeros((0,))])
    assert e.dtype is tk.float32 and e.numpy().tolist() == [1.0, 2.0]
    assert tk.concat([tk.ones((2, 3), dtype=tk.int32), tk.zeros((0, 3), dtype=tk.float64)]).dtype is tk.float64
    assert tk.stack([tk.zeros((0,), dtype=tk.int8), tk.zeros((0,), dtype=tk.float16)]).dtype is tk.float16


def test_concat_axis_none_accepts_0d_and_mixed_shapes():
    r = tk.concat([tk.asarray(1.0), arr(2, 2)], axis=None)
    np.testing.assert_array_equal(r.numpy(), [1.0, 0, 1, 2, 3])


def test_repeat_forms():
    x = arr(2, 3)
    np.testing.assert_array_equal(tk.repeat(x, [1, 0, 2], axis=1).numpy(), np.repeat(x.numpy(), [1, 0, 2], 1))
    np.testing.assert_array_equal(tk.repeat(x, 2).numpy(), np.repeat(x.numpy(), 2))  # axis=None flattens
    np.testing.assert_array_equal(tk.repeat(tk.asarray(5), 3).numpy(), [5, 5, 5])
    r = tk.repeat(x, tk.asarray(np.array([2], np.int32)), axis=0)  # a size-1 array broadcasts
    np.testing.assert_array_equal(r.numpy(), np.repeat(x.numpy(), 2, 0))


def test_pad_follows_pytorch_pad_order_and_modes():
    x = arr(1, 2, 3)
    r = tk.pad(x, (1, 2, 0, 1), value=-1)  # last dim (1, 2), then the second-to-last (0, 1)
    assert r.shape == (1, 3, 6)
    np.testing.assert_array_equal(r.numpy()[0], [[-1, 0, 1, 2, -1, -1], [-1, 3, 4, 5, -1, -1], [-1] * 6])
    np.testing.assert_array_equal(tk.pad(arr(4), (2, 1), mode="reflect").numpy(), [2, 1, 0, 1, 2, 3, 2])
    np.testing.assert_array_equal(tk.pad(arr(4), (2, 1), mode="replicate").numpy(), [0, 0, 0, 1, 2, 3, 3])
    np.testing.assert_array_equal(tk.pad(arr(4), (2, 1), mode="circular").numpy(), [2, 3, 0, 1, 2, 3, 0])
    np.testing.assert_array_equal(tk.pad(arr(4), (-1, 2)).numpy(), [1, 2, 3, 0, 0])
    assert tk.pad(tk.ones(3, dtype=tk.bool), (1, 0)).numpy().tolist() == [False, True, True, True]


def test_roll_and_flip_match_numpy_on_views():
    base = arr(4, 6)
    x = base[::-1, 1::2]  # negative and step strides
    np.testing.assert_array_equal(tk.roll(x, (1, -1), axis=(0, 1)).numpy(), np.roll(x.numpy(), (1, -1), (0, 1)))
    np.testing.assert_array_equal(tk.roll(x, 5).numpy(), np.roll(x.numpy(), 5))
    np.testing.assert_array_equal(tk.flip(x).numpy(), np.flip(x.numpy()))
    np.testing.assert_array_equal(tk.roll(x, 1, axis=(0, 0)).numpy(), np.roll(x.numpy(), 2, 0))


def test_tile_pads_the_shorter_with_ones():
    assert tk.tile(arr(2, 3), (2,)).shape == (2, 6)
    assert tk.tile(arr(3), (2, 1, 2)).shape == (2, 1, 6)
    assert tk.tile(arr(), (3,)).shape == (3,)
