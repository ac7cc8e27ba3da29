"""OpInfos of the shape and data movement family (every dtype: these ops only move values)."""

import numpy as np

import tkernels as tk

from ..harness import ALL, OpInfo, Sample, make

EXACT = {d: (0.0, 0.0) for d in ALL}


def _concat_samples(rng, dtype):
    cases = ((((3, 4), (2, 4), (5, 4)), 0), (((2, 3), (2, 129)), -1), (((2, 3), (4,)), None), (((), ()), None),
             (((0, 4), (3, 4)), 0), (((1,), (7,), (127,)), 0), (((2, 3, 4), (2, 1, 4)), -2), (((3, 5),), 1),
             (((0, 2), (0, 2)), 0))
    for shapes, axis in cases:
        yield Sample(tuple(make(rng, s, dtype) for s in shapes), dict(axis=axis))


# The arrays are passed as separate arguments (the harness and gradcheck then see each one) and joined
# into the list the op takes.
def _concat(*arrays, axis=0):
    return tk.concat(list(arrays), axis=axis)


def _concat_ref(*arrays, axis=0):
    return np.concatenate(arrays, axis=axis)


def _concat_mixed_samples(rng, dtype):
    """A bool array joins every dtype: the result has the promoted dtype (same rule in NumPy and PyTorch)."""
    yield Sample((make(rng, (3, 4), dtype), make(rng, (2, 4), "bool"), make(rng, (1, 4), dtype)))
    yield Sample((make(rng, (2,), "bool"), make(rng, (129,), dtype)), dict(axis=-1))


def _stack_samples(rng, dtype):
    for shape, n, axis in (((3, 4), 3, 0), ((3, 4), 2, -1), ((3, 4), 2, 1), ((), 2, 0), ((0, 3), 2, 1),
                           ((129,), 2, 0), ((1,), 7, -1), ((2, 3), 1, -3)):
        yield Sample(tuple(make(rng, shape, dtype) for _ in range(n)), dict(axis=axis))


def _stack(*arrays, axis=0):
    return tk.stack(arrays, axis=axis)


def _stack_ref(*arrays, axis=0):
    return np.stack(arrays, axis=axis)


def _split_samples(rng, dtype):
    for shape, arg, axis in (((7, 5), 3, 0), ((7, 5), [1, 0, 6], 0), ((3, 129), 64, -1), ((3, 7), (2, 5), 1),
                             ((0, 3), 2, 0), ((1,), 1, 0), ((4, 5), 10, 0), ((2, 6, 3), [6], -2)):
        yield Sample((make(rng, shape, dtype), arg), dict(axis=axis))


def _split_ref(x, arg, axis=0):
    n = x.shape[axis]
    if isinstance(arg, list | tuple):
        sizes = list(arg)
    else:
        sizes = [arg] * (n // arg) + ([n % arg] if n % arg else []) if n else [0]
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def _chunk_samples(rng, dtype):
    for shape, chunks, axis in (((7, 5), 3, 0), ((6,), 4, 0), ((0, 3), 2, 0), ((129,), 1, 0), ((3, 127), 5, -1),
                                ((2, 1), 3, 1)):
        yield Sample((make(rng, shape, dtype), chunks), dict(axis=axis))


def _chunk_ref(x, chunks, axis=0):
    n = x.shape[axis]
    if n == 0:
        return tuple(np.split(x, [0] * (chunks - 1), axis=axis))
    size = -(-n // chunks)
    return _split_ref(x, size, axis)


def _unstack_samples(rng, dtype):
    for shape, axis in (((3, 4), 0), ((3, 4), -1), ((1,), 0), ((0, 3), 0), ((2, 0, 3), 1), ((7, 2, 3), 1)):
        yield Sample((make(rng, shape, dtype),), dict(axis=axis))


def _unstack_ref(x, axis=0):
    return tuple(np.moveaxis(x, axis, 0))


PAD_CASES = (
    ((3, 4), (1, 2), "constant", 0),
    ((3, 4), (1, 2, 0, 3), "constant", 1.5),
    ((2, 3, 4), (-1, 2, 1, -2), "constant", 0),      # negative pads crop
    ((2, 3, 4), (0, 0, 0, 0, 2, 1), "constant", 0),  # pads on the first dimension too
    ((), (), "constant", 0),                         # 0-d: nothing to pad
    ((0, 3), (1, 1, 2, 0), "constant", 2),           # an empty array padded into a full one
    ((7,), (-7, 0), "constant", 0),                  # cropped to nothing
    ((3, 129), (2, 3), "reflect", 0),
    ((2, 3, 5), (4, 1, 2, 2), "reflect", 0),
    ((3, 4), (3, 0, 1, 1), "replicate", 0),
    ((2, 1, 3), (5, 2, 0, 0), "replicate", 0),
    ((3, 4), (4, 1, 2, 3), "circular", 0),
    ((1, 7), (0, 0, 1, 0), "circular", 0),
)


def _pad_samples(rng, dtype):
    for shape, width, mode, value in PAD_CASES:
        if dtype == "bool" and value not in (0, 1):
            value = 1
        if dtype in ("int8", "int16", "int32", "int64", "uint8") and not float(value).is_integer():
            value = 2
        kwargs = dict(mode=mode) if mode != "constant" else dict(value=value)
        yield Sample((make(rng, shape, dtype), width), kwargs, desc=f"{shape} {width} {mode}")


def _pad_ref(x, width, mode="constant", value=0):
    nd = x.ndim
    pads = [[0, 0] for _ in range(nd)]
    for i in range(len(width) // 2):
        pads[nd - 1 - i] = [width[2 * i], width[2 * i + 1]]
    if not width:
        return x.copy()
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(pads))
    x = x[crop]
    pos = [(max(b, 0), max(a, 0)) for b, a in pads]
    if mode == "constant":
        return np.pad(x, pos, mode="constant", constant_values=np.array(value).astype(x.dtype))
    return np.pad(x, pos, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


def _flip_samples(rng, dtype):
    for shape, axis in (((3, 4), None), ((3, 4), 0), ((2, 3, 4), -1), ((2, 3, 4), (0, 2)), ((), None),
                        ((0, 3), 1), ((129,), 0), ((7, 1), (-2, -1))):
        yield Sample((make(rng, shape, dtype),), dict(axis=axis))


def _flip_ref(x, axis=None):
    return np.flip(x, axis=axis).copy()


def _roll_samples(rng, dtype):
    for shape, shift, axis in (((3, 4), 5, None), ((3, 4), -1, 0), ((2, 3, 4), (1, -2), (0, 2)), ((7,), 9, 0),
                               ((2, 3, 4), 2, (1, 2)), ((), 3, None), ((0, 3), 1, 1), ((3, 129), 64, -1),
                               ((4, 5), (1, 2), (0, 0)), ((3, 4), 0, 1)):
        yield Sample((make(rng, shape, dtype), shift), dict(axis=axis))


def _roll_ref(x, shift, axis=None):
    return np.roll(x, shift, axis=axis)


def _repeat_samples(rng, dtype):
    for shape, reps, axis in (((3, 4), 2, None), ((3, 4), 3, 1), ((2, 3, 4), 1, -2), ((3, 4), 0, 0), ((), 3, None),
                              ((0, 3), 2, 1), ((129,), 2, 0), ((7, 1), 2, -1)):
        yield Sample((make(rng, shape, dtype), reps), dict(axis=axis))


def _repeat_array_samples(rng, dtype):
    for shape, reps, axis in (((3, 4), [1, 0, 3, 2], 1), ((3, 4), [2], 0), ((2, 3), [1, 2, 0, 3, 1, 1], None),
                              ((7, 2), [0] * 7, 0), ((), [4], None), ((0, 3), [2], 0), ((127,), [1] * 127, -1)):
        yield Sample((make(rng, shape, dtype), np.array(reps, dtype=np.int64)), dict(axis=axis),
                     desc=f"{shape} repeats={reps} axis={axis}")


def _repeat_ref(x, repeats, axis=None):
    return np.repeat(x, repeats, axis=axis)


def _tile_samples(rng, dtype):
    for shape, reps in (((3, 4), (2, 1)), ((3, 4), (2,)), ((3,), (2, 1, 2)), ((), (3,)), ((2, 3), (0, 2)),
                        ((0, 3), (2, 2)), ((1, 129), (3, 1)), ((2, 3), ())):
        yield Sample((make(rng, shape, dtype), reps))


def _diagonal_samples(rng, dtype):
    for shape, kw in (((4, 4), {}), ((3, 5), dict(offset=2)), ((5, 3), dict(offset=-1)), ((2, 3, 4), dict(axis1=0,
                      axis2=2)), ((2, 3, 4), dict(offset=1, axis1=-1, axis2=0)), ((3, 3), dict(offset=5)),
                      ((0, 3), {}), ((7, 129), dict(offset=-3))):
        yield Sample((make(rng, shape, dtype),), kw)


def _diagonal_ref(x, offset=0, axis1=-2, axis2=-1):
    return np.diagonal(x, offset, axis1, axis2)


def _diff_samples(rng, dtype):
    half = dtype in ("float16", "bfloat16")  # each step rounds to the dtype: the float32 reference drifts after one
    cases = (((7,), {}), ((3, 129), dict(n=2)), ((2, 3, 4), dict(axis=0, n=3)), ((4, 5), dict(axis=-2)),
             ((127,), {}), ((0, 3), dict(axis=0)), ((3, 0), {}), ((1,), {}), ((5,), dict(n=9)), ((3, 4), dict(n=0)),
             ((3, 4), dict(axis=1, n=2, prepend=(3, 2), append=(3, 1))), ((2, 5), dict(axis=0, prepend=(1, 5))),
             ((4,), dict(n=0, append=(2,))), ((2, 3), dict(axis=0, prepend=(0, 3), append=(0, 3))))
    for shape, kw in cases:
        kw = {k: make(rng, v, dtype) if isinstance(v, tuple) else v for k, v in kw.items()}
        if half and kw.get("n", 1) > 1 and shape[kw.get("axis", -1)] > kw["n"]:
            kw["n"] = 1
        yield Sample((make(rng, shape, dtype),), kw)


def _diff_ref(x, axis=-1, n=1, prepend=None, append=None):
    """The standard's definition: ``n`` differences of the concatenation (NumPy drops prepend/append at n=0)."""
    y = np.concatenate([a for a in (prepend, x, append) if a is not None], axis=axis)
    return np.diff(y, n=n, axis=axis) if n else y


OP_INFOS = [
    OpInfo("concat", _concat, _concat_ref, _concat_samples, ALL, tols=EXACT),
    OpInfo("concat_mixed", _concat, _concat_ref, _concat_mixed_samples, ALL, tols=EXACT),
    OpInfo("stack", _stack, _stack_ref, _stack_samples, ALL, tols=EXACT),
    OpInfo("split", tk.split, _split_ref, _split_samples, ALL, tols=EXACT),
    OpInfo("chunk", tk.chunk, _chunk_ref, _chunk_samples, ALL, tols=EXACT),
    OpInfo("unstack", tk.unstack, _unstack_ref, _unstack_samples, ALL, tols=EXACT),
    OpInfo("pad", tk.pad, _pad_ref, _pad_samples, ALL, tols=EXACT),
    OpInfo("flip", tk.flip, _flip_ref, _flip_samples, ALL, tols=EXACT),
    OpInfo("roll", tk.roll, _roll_ref, _roll_samples, ALL, tols=EXACT),
    OpInfo("repeat", tk.repeat, _repeat_ref, _repeat_samples, ALL, tols=EXACT),
    OpInfo("repeat_array", tk.repeat, _repeat_ref, _repeat_array_samples, ALL, tols=EXACT, grad_args=(0,)),
    OpInfo("tile", tk.tile, np.tile, _tile_samples, ALL, tols=EXACT),
    OpInfo("diagonal", tk.diagonal, _diagonal_ref, _diagonal_samples, ALL, tols=EXACT),
    OpInfo("diff", tk.diff, _diff_ref, _diff_samples, ALL),
]
