"""Bad input to the shape/data movement family: each error names the op and the offending shapes/dtypes/devices,
and a failed op leaves its inputs unchanged."""

import numpy as np
import pytest

import tkernels as tk


def _cuda():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except ImportError:
        return False


def f32(*shape):
    return tk.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))


# -------------------------------------------------------------------------------------------- concat, stack
def test_concat_shape_mismatch_names_index_and_shapes():
    with pytest.raises(ValueError, match=r"concat: array 2 has shape \(3, 5\) but array 0 has shape \(3, 4\); all "
                                         r"dimensions except axis 0 must match"):
        tk.concat([f32(3, 4), f32(2, 4), f32(3, 5)])
    with pytest.raises(ValueError, match=r"concat: array 1 has shape \(3, 4, 1\) but array 0 has shape \(3, 4\)"):
        tk.concat([f32(3, 4), f32(3, 4, 1)], axis=1)
    with pytest.raises(ValueError, match=r"concat: array 1 has shape \(\) but array 0 has shape \(3,\)"):
        tk.concat([f32(3), f32()])


def test_concat_refuses_0d_and_bad_sequences():
    with pytest.raises(ValueError, match=r"concat: 0-d arrays cannot be concatenated \(array 0: Array\(shape=\(\)"):
        tk.concat([f32(), f32()])
    with pytest.raises(ValueError, match=r"concat: expected a non-empty list"):
        tk.concat([])
    with pytest.raises(TypeError, match=r"concat: expected a list or tuple of Arrays, got .*Array\(shape=\(2, 3\)"):
        tk.concat(f32(2, 3))
    with pytest.raises(TypeError, match=r"concat: element 1 of the sequence is not an Array: ndarray"):
        tk.concat([f32(2), np.ones(2, np.float32)])
    with pytest.raises(IndexError, match=r"concat: axis 2 is out of range for an array of 2 dimension"):
        tk.concat([f32(2, 3), f32(2, 3)], axis=2)


def test_stack_errors():
    with pytest.raises(ValueError, match=r"stack: array 1 has shape \(3, 5\) but array 0 has shape \(3, 4\); all "
                                         r"arrays must have the same shape"):
        tk.stack([f32(3, 4), f32(3, 5)])
    with pytest.raises(IndexError, match=r"stack: axis 3 is out of range for an array of 3 dimension"):
        tk.stack([f32(3, 4), f32(3, 4)], axis=3)
    with pytest.raises(ValueError, match=r"stack: expected a non-empty list"):
        tk.stack(())


@pytest.mark.skipif(not _cuda(), reason="needs a cuda device (interpreted is enough)")
def test_concat_stack_device_mismatch_names_both_devices():
    for fn in (tk.concat, tk.stack):
        with pytest.raises(RuntimeError, match=r"(concat|stack): expected all arrays on the same device, but found "
                                               r"cpu and cuda:0"):
            fn([f32(2), f32(2).to("cuda")])


# ---------------------------------------------------------------------------------------- split, chunk...
def test_split_errors():
    with pytest.raises(ValueError, match=r"split: section sizes \(2, 2\) must be non-negative and add up to 5, the "
                                         r"size of axis 0 of Array\(shape=\(5, 2\)"):
        tk.split(f32(5, 2), [2, 2])
    with pytest.raises(ValueError, match=r"split: section sizes \(-1, 6\)"):
        tk.split(f32(5), [-1, 6])
    with pytest.raises(ValueError, match=r"split: split size must be positive .*got 0 for axis 0"):
        tk.split(f32(5), 0)
    with pytest.raises(ValueError, match=r"split: expected an array of at least 1 dimension, got Array\(shape=\(\)"):
        tk.split(f32(), 1)
    with pytest.raises(TypeError, match=r"split: split_size_or_sections must be an integer, got float"):
        tk.split(f32(4), 1.5)
    with pytest.raises(IndexError, match=r"split: axis -3 is out of range"):
        tk.split(f32(4, 2), 1, axis=-3)


def test_chunk_unstack_errors():
    with pytest.raises(ValueError, match=r"chunk: chunks must be positive, got 0"):
        tk.chunk(f32(4), 0)
    with pytest.raises(ValueError, match=r"chunk: expected an array of at least 1 dimension"):
        tk.chunk(f32(), 2)
    with pytest.raises(ValueError, match=r"unstack: expected an array of at least 1 dimension, got Array\(shape=\(\)"):
        tk.unstack(f32())
    with pytest.raises(IndexError, match=r"unstack: axis 2 is out of range"):
        tk.unstack(f32(2, 2), axis=2)


# ------------------------------------------------------------------------------------------------------ pad
@pytest.mark.parametrize("shape,width,kw,exc,pattern", [
    ((3, 4), (1,), {}, ValueError, r"pad: pad_width \(1,\) must have an even length of at most 2 \* ndim = 4 for "
                                   r"Array\(shape=\(3, 4\)"),
    ((3,), (1, 1, 1, 1), {}, ValueError, r"pad: pad_width \(1, 1, 1, 1\) must have an even length of at most 2"),
    ((3, 4), (1, 1), dict(mode="wrap"), ValueError, r"pad: mode must be one of constant, reflect, replicate, "
                                                     r"circular; got 'wrap'"),
    ((3, 4), (4, 0), dict(mode="reflect"), ValueError, r"pad: reflect pads \(4, 0\) of dimension 1 must be smaller "
                                                        r"than its size 4 \(Array\(shape=\(3, 4\)"),
    ((3, 4), (0, 0, 0, 4), dict(mode="circular"), ValueError, r"pad: circular pads \(0, 4\) of dimension 0 must be "
                                                               r"at most its size 3"),
    ((0, 4), (0, 0, 1, 0), dict(mode="replicate"), ValueError, r"pad: cannot replicate-pad dimension 0 of size 0"),
    ((3, 4), (-1, 0), dict(mode="reflect"), ValueError, r"pad: negative pads \(-1, 0\) crop only in constant mode"),
    ((3, 4), (1, 1), dict(mode="reflect", value=2), ValueError, r"pad: mode 'reflect' does not take a value"),
    ((3, 4), (-3, -2), {}, ValueError, r"pad: pads \(-3, -2\) crop more than the 4 elements of dimension 1 of "
                                       r"Array\(shape=\(3, 4\)"),
    ((3, 4), (1, 1), dict(value="x"), TypeError, r"pad: value must be a number, got str"),
    ((3, 4), (1.5, 1), {}, TypeError, r"pad: pad_width must be an integer, got float"),
])
def test_pad_errors(shape, width, kw, exc, pattern):
    x = f32(*shape)
    before = x.numpy().copy()
    with pytest.raises(exc, match=pattern):
        tk.pad(x, width, **kw)
    np.testing.assert_array_equal(x.numpy(), before)


def test_pad_width_type():
    with pytest.raises(TypeError, match=r"pad: pad_width must be a flat tuple of ints"):
        tk.pad(f32(3), 1)


# ------------------------------------------------------------------------------------------ flip, roll...
def test_flip_roll_errors():
    with pytest.raises(IndexError, match=r"flip: axis 2 is out of range for an array of 2 dimension"):
        tk.flip(f32(2, 3), axis=2)
    with pytest.raises(ValueError, match=r"flip: repeated axis in axis=\(0, -2\)"):
        tk.flip(f32(2, 3), axis=(0, -2))
    with pytest.raises(ValueError, match=r"roll: a tuple shift \(1, 2\) needs a tuple axis"):
        tk.roll(f32(2, 3), (1, 2))
    with pytest.raises(ValueError, match=r"roll: shift \(1, 2\) and axis \(0,\) must have the same length"):
        tk.roll(f32(2, 3), (1, 2), axis=(0,))
    with pytest.raises(ValueError, match=r"roll: a 0-d array has no axis to roll"):
        tk.roll(f32(), 1, axis=0)
    with pytest.raises(IndexError, match=r"roll: axis -3 is out of range"):
        tk.roll(f32(2, 3), 1, axis=-3)
    with pytest.raises(TypeError, match=r"roll: shift must be an integer, got float"):
        tk.roll(f32(2, 3), 1.5, axis=0)


def test_repeat_errors():
    x = f32(3, 4)
    with pytest.raises(ValueError, match=r"repeat: repeats must be non-negative, got -1"):
        tk.repeat(x, -1)
    with pytest.raises(TypeError, match=r"repeat: repeats must be an integer array, got Array\(shape=\(4,\), "
                                        r"dtype=float32"):
        tk.repeat(x, tk.ones(4), axis=1)
    with pytest.raises(ValueError, match=r"repeat: repeats Array\(shape=\(3,\), dtype=int64.* must be 1-D with 1 or 4 "
                                         r"elements \(the size of axis 1"):
        tk.repeat(x, tk.asarray([1, 2, 3]), axis=1)
    with pytest.raises(ValueError, match=r"repeat: repeats Array\(shape=\(2, 2\).* must be 1-D"):
        tk.repeat(x, tk.ones((2, 2), dtype=tk.int64), axis=1)
    with pytest.raises(ValueError, match=r"repeat: repeats must be non-negative, got -2 among the counts"):
        tk.repeat(x, tk.asarray([1, -2, 0, 1]), axis=1)
    with pytest.raises(TypeError, match=r"repeat: repeats must be an integer, got float"):
        tk.repeat(x, 2.0)
    with pytest.raises(IndexError, match=r"repeat: axis 2 is out of range"):
        tk.repeat(x, 2, axis=2)


def test_tile_diagonal_errors():
    with pytest.raises(ValueError, match=r"tile: repetitions must be non-negative, got \(2, -1\)"):
        tk.tile(f32(2, 3), (2, -1))
    with pytest.raises(TypeError, match=r"tile: repetitions must be an integer"):
        tk.tile(f32(2, 3), (2.5,))
    with pytest.raises(ValueError, match=r"diagonal: needs at least 2 dimensions, got Array\(shape=\(3,\)"):
        tk.diagonal(f32(3))
    with pytest.raises(ValueError, match=r"diagonal: axis1 and axis2 must differ, got 0 and -2"):
        tk.diagonal(f32(3, 3), axis1=0, axis2=-2)
    with pytest.raises(IndexError, match=r"diagonal: axis2 5 is out of range"):
        tk.diagonal(f32(3, 3), axis2=5)


@pytest.mark.parametrize("fn", [tk.flip, tk.unstack, tk.diagonal, lambda x: tk.pad(x, (1, 1)),
                                lambda x: tk.roll(x, 1), lambda x: tk.tile(x, (2,)), lambda x: tk.repeat(x, 2),
                                lambda x: tk.split(x, 1), lambda x: tk.chunk(x, 2)])
def test_non_arrays_are_refused(fn):
    with pytest.raises(TypeError, match=r"expected an Array, got ndarray"):
        fn(np.ones((2, 2), np.float32))


# ---------------------------------------------------------------------------------------------------- diff
def test_diff_errors_name_the_op_and_the_arguments():
    x = f32(2, 4)
    with pytest.raises(ValueError, match=r"diff: expected an array of at least 1 dimension, got Array\(shape=\(\)"):
        tk.diff(f32())
    with pytest.raises(ValueError, match=r"diff: n must be non-negative, got -1 \(for Array\(shape=\(2, 4\)"):
        tk.diff(x, n=-1)
    with pytest.raises(TypeError, match="diff: n must be an integer, got float 1.0"):
        tk.diff(x, n=1.0)
    with pytest.raises(IndexError, match=r"diff: axis 2 is out of range for an array of 2 dimension\(s\)"):
        tk.diff(x, axis=2)
    with pytest.raises(IndexError, match="diff: axis -3 is out of range"):
        tk.diff(x, axis=-3)
    with pytest.raises(ValueError, match=r"diff: prepend has shape \(3, 1\) but x has shape \(2, 4\); they must "
                                         r"match except along axis 1"):
        tk.diff(x, prepend=f32(3, 1))
    with pytest.raises(ValueError, match=r"diff: append has shape \(2, 4\) but x has shape \(2, 4, 1\); .* axis 0"):
        tk.diff(f32(2, 4, 1), axis=0, append=x)
    with pytest.raises(ValueError, match=r"diff: append has shape \(1,\)"):
        tk.diff(x, append=f32(1))
    with pytest.raises(TypeError, match=r"diff: prepend has dtype int64 but x has float32 .*prepend.astype\(float32\)"):
        tk.diff(x, prepend=tk.zeros((2, 1), dtype=tk.int64))
    with pytest.raises(TypeError, match="diff: append must be an Array or None, got float 1.0"):
        tk.diff(x, append=1.0)
    with pytest.raises(TypeError, match="diff: expected an Array, got list"):
        tk.diff([1, 2])
    np.testing.assert_array_equal(x.numpy(), np.arange(8).reshape(2, 4))


@pytest.mark.skipif(not _cuda(), reason="no cuda device, not even interpreted")
def test_diff_prepend_on_another_device():
    with pytest.raises(RuntimeError, match="diff: expected all arrays on the same device"):
        tk.diff(f32(2, 4).to("cuda"), prepend=f32(2, 1))
    with pytest.raises(ValueError, match=r"diff: expected an array of at least 1 dimension"):
        tk.diff(f32().to("cuda"))


def test_diff_n_zero_and_huge_n():
    x = f32(3)
    assert tk.diff(x, n=0) is x  # nothing to compute (NumPy returns x too)
    np.testing.assert_array_equal(tk.diff(x, n=0, prepend=f32(2)).numpy(), [0, 1, 0, 1, 2])  # the standard's rule
    r = tk.diff(x, n=10**12)  # the axis empties after 3 steps: no more steps run
    assert r.shape == (0,) and r.dtype is tk.float32 and r._storage is not x._storage
    x0 = f32(0)
    e = tk.diff(x0, n=3)
    assert e.shape == (0,) and e is not x0
