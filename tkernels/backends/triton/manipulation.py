"""concat and repeat-by-counts on cuda (everything else in the family is views, fills and ``copy_``).

``concat`` is one strided ``copy_`` per piece into its slice of the output (casting on store). ``repeat`` by
an array of counts: the inclusive prefix sum of the counts gives each input slice its output range; one
read of the total (the output size, data-dependent, as in PyTorch's ``repeat_interleave``), then every
output slice finds its source by a binary search in the prefix sums and a gather copies the data.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...dispatch import lookup, register
from ...indexing import _along
from ...kernels import gather as gk
from ...kernels.creation import range_kernel
from ...kernels.sort import searchsorted_kernel
from ...validation import OpValueError
from ._launch import ELEMENTWISE_BLOCK, grid1d, launch
from .indexing import axis_op, check_indices
from .memory import copy_, empty, to_numpy

BLOCK = ELEMENTWISE_BLOCK


@register("concat", "triton")
def concat(out, arrays, axis) -> None:
    start = 0
    for a in arrays:
        m = a._shape[axis]
        copy_(out._view(out._shape[:axis] + (m,) + out._shape[axis + 1:], out._strides,
                        out._offset + start * out._strides[axis]), a)
        start += m


@register("repeat", "triton")
def repeat(x, repeats, axis):
    m = x._shape[axis]
    dev = x._device
    if m:
        bad, _ = check_indices(repeats, 0, 2**62)
        if bad is not None:
            raise OpValueError(f"repeat: repeats must be non-negative, got {int(bad)} among the counts")
        counts = repeats if repeats._dtype is _dt.int64 else repeats.astype(_dt.int64)
        ends = empty((m,), _dt.int64, dev)
        lookup("cumulative_sum", dev)(ends, counts, 0, _dt.int64, False)
        total = int(to_numpy(ends._view((), (), m - 1)))
    else:
        total = 0
    shape = x._shape[:axis] + (total,) + x._shape[axis + 1:]
    out = empty(shape, x._dtype, dev)
    if total == 0 or out.size == 0:
        return out
    # source slice of output slice p: the number of prefix sums <= p
    pos = empty((total,), _dt.int64, dev)
    launch(range_kernel, grid1d(total, BLOCK), pos, total, 0, 1, 0, INT=True, SET_LAST=False, BLOCK=BLOCK)
    src = empty((total,), _dt.int64, dev)
    launch(searchsorted_kernel, grid1d(total, BLOCK), ends, pos, ends, src, total, total, m, 0, 0,
           m.bit_length(), RIGHT=True, SORTER=False, CT=0, BLOCK=BLOCK)
    axis_op(gk.GET, x, _along(src, axis, shape), out, axis, False)
    return out
