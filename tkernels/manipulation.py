"""Shape and data movement: concat, stack, split, chunk, unstack, pad, flip, roll, repeat, tile, diagonal, diff.

Views where the result can share memory (split, chunk, unstack, diagonal); everything else writes a fresh
array allocated here. Two backend ops serve this family besides ``copy_`` and ``fill``:

    concat(out, arrays, axis)              pieces (non-empty, out.ndim dims, any dtypes: cast on store)
                                           written one after another along ``axis``; stack uses it too
    repeat(x, repeats, axis) -> Array      repeats: an integer Array of shape (x.shape[axis],); the output
                                           size depends on its values, so the backend allocates it

pad (every mode), flip, roll, tile and repeat by an int are ``fill`` and copies of strided views of the input
or of the output itself (slices, negative strides, stride-0 dimensions) through ``copy_``, so they need
nothing more from a backend. ``diff`` is a composite: ``concat``, then subtractions of shifted views.
"""

from __future__ import annotations

import builtins

from . import dtypes as _dt
from .array import Array
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, as_int, check_device, describe, normalize_axes, normalize_axis

__all__ = ["concat", "stack", "split", "chunk", "unstack", "pad", "flip", "roll", "repeat", "tile", "diagonal", "diff"]

_PROMO = _dt._PROMO




def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _contiguous(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _check(op: str, x) -> Array:
    if not isinstance(x, Array):
        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    return x


def _sequence(op: str, arrays) -> list[Array]:
    """A non-empty list/tuple of Arrays on one device."""
    if isinstance(arrays, Array) or not isinstance(arrays, list | tuple):
        raise OpTypeError(f"{op}: expected a list or tuple of Arrays, got {describe(arrays)}")
    if not arrays:
        raise OpValueError(f"{op}: expected a non-empty list of Arrays")
    for i, a in enumerate(arrays):
        if not isinstance(a, Array):
            raise OpTypeError(f"{op}: element {i} of the sequence is not an Array: {describe(a)}")
    check_device(op, *arrays)
    return list(arrays)


def _promote(arrays) -> _dt.DType:
    dt = arrays[0]._dtype
    for a in arrays[1:]:
        if a._dtype is not dt:
            dt = _PROMO[dt, a._dtype]
    return dt


def _narrow(x: Array, axis: int, start: int, length: int) -> Array:
    """The view ``x[..., start:start + length, ...]`` along ``axis``."""
    shape = x._shape[:axis] + (length,) + x._shape[axis + 1:]
    off = x._offset + start * x._strides[axis] if length else x._offset
    return x._view(shape, x._strides, off)


def _empty(shape, dtype, device) -> Array:
    return lookup("empty", device)(shape, dtype, device)


# ------------------------------------------------------------------------------------------ concat, stack
def concat(arrays, /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing ``axis`` (``None``: flatten them first); dtypes promote (PyTorch)."""
    arrays = _sequence("concat", arrays)
    dt = _promote(arrays)
    if axis is None:
        arrays = [a.reshape(-1) for a in arrays]
        ax = 0
    else:
        first = arrays[0]
        nd = first.ndim
        if nd == 0:
            raise OpValueError(f"concat: 0-d arrays cannot be concatenated (array 0: {describe(first)}); hint: use "
                               f"stack, or axis=None")
        ax = normalize_axis(axis, nd, "concat")
        s0 = first._shape
        for i, a in enumerate(arrays):
            s = a._shape
            if s != s0 and (len(s) != nd or s[:ax] != s0[:ax] or s[ax + 1:] != s0[ax + 1:]):
                raise OpValueError(f"concat: array {i} has shape {s} but array 0 has shape {s0}; all dimensions "
                                   f"except axis {ax} must match (and the number of dimensions; {describe(a)})")
    shape = list(arrays[0]._shape)
    shape[ax] = sum(a._shape[ax] for a in arrays)
    dev = arrays[0]._device
    out = _empty(tuple(shape), dt, dev)
    pieces = [a for a in arrays if _prod(a._shape)]
    if pieces:
        lookup("concat", dev)(out, pieces, ax)
    return out


def stack(arrays, /, *, axis: int = 0) -> Array:
    """Join arrays of one shape along a new ``axis``; dtypes promote (PyTorch)."""
    arrays = _sequence("stack", arrays)
    dt = _promote(arrays)
    s0 = arrays[0]._shape
    for i, a in enumerate(arrays):
        if a._shape != s0:
            raise OpValueError(f"stack: array {i} has shape {a.shape} but array 0 has shape {s0}; all arrays must "
                               f"have the same shape ({describe(a)})")
    ax = normalize_axis(axis, len(s0) + 1, "stack")
    shape = s0[:ax] + (1,) + s0[ax:]
    views = [a._view(shape, a._strides[:ax] + (0,) + a._strides[ax:], a._offset) for a in arrays]
    dev = arrays[0]._device
    out = _empty(s0[:ax] + (len(arrays),) + s0[ax:], dt, dev)
    if _prod(s0):
        lookup("concat", dev)(out, views, ax)
    return out


# ----------------------------------------------------------------------------------- split, chunk, unstack
def _axis_of(op: str, x: Array, axis) -> int:
    if x.ndim == 0:
        raise OpValueError(f"{op}: expected an array of at least 1 dimension, got {describe(x)}")
    return normalize_axis(axis, x.ndim, op)


def split(x, split_size_or_sections, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Views of ``x`` cut along ``axis`` (PyTorch ``split``): an int is the size of every piece (the last may
    be smaller), a sequence gives the size of each piece (they must add up to the axis size)."""
    _check("split", x)
    ax = _axis_of("split", x, axis)
    d = x._shape[ax]
    if isinstance(split_size_or_sections, list | tuple):
        sizes = [as_int("split", "sections", s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes) or sum(sizes) != d:
            raise OpValueError(f"split: section sizes {tuple(sizes)} must be non-negative and add up to {d}, the "
                               f"size of axis {ax} of {describe(x)}")
    else:
        size = as_int("split", "split_size_or_sections", split_size_or_sections)
        if size < 0 or (size == 0 and d):
            raise OpValueError(f"split: split size must be positive (0 only for an empty axis), got {size} for "
                               f"axis {ax} of {describe(x)}")
        sizes = [size] * (d // size) + ([d % size] if d % size else []) if d else [0]
    out, start = [], 0
    for s in sizes:
        out.append(_narrow(x, ax, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks: int, /, *, axis: int = 0) -> tuple[Array, ...]:
    """At most ``chunks`` views of ``x`` along ``axis``, each of size ``ceil(size / chunks)`` but the last
    (PyTorch ``chunk``: fewer pieces when the size does not allow more; ``chunks`` empty views of an empty
    axis)."""
    _check("chunk", x)
    n = as_int("chunk", "chunks", chunks)
    if n <= 0:
        raise OpValueError(f"chunk: chunks must be positive, got {n}")
    ax = _axis_of("chunk", x, axis)
    d = x._shape[ax]
    if d == 0:
        return tuple(_narrow(x, ax, 0, 0) for _ in range(n))
    return split(x, -(-d // n), axis=ax)


def unstack(x, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The views ``x[..., i, ...]`` along ``axis`` (array API ``unstack``)."""
    _check("unstack", x)
    ax = _axis_of("unstack", x, axis)
    shape = x._shape[:ax] + x._shape[ax + 1:]
    strides = x._strides[:ax] + x._strides[ax + 1:]
    st = x._strides[ax]
    return tuple(x._view(shape, strides, x._offset + i * st) for i in range(x._shape[ax]))


# -------------------------------------------------------------------------------------------------- pad
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x, pad_width, /, *, mode: str = "constant", value=0) -> Array:
    """Pad ``x`` like ``torch.nn.functional.pad``: ``pad_width`` is a flat sequence of (before, after) pairs
    starting from the LAST dimension: ``(left, right, top, bottom, ...)``. Modes: ``constant`` (``value``;
    negative pads crop), ``reflect`` (mirror without the edge; pads < size), ``replicate`` (repeat the edge),
    ``circular`` (wrap around; pads <= size). Any number of dimensions may be padded, in every mode."""
    _check("pad", x)
    if mode not in _PAD_MODES:
        raise OpValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}; got {mode!r}")
    if isinstance(pad_width, Array) or not isinstance(pad_width, list | tuple):
        raise OpTypeError(f"pad: pad_width must be a flat tuple of ints (left, right, top, bottom, ...), got "
                          f"{describe(pad_width)}")
    flat = [as_int("pad", "pad_width", p) for p in pad_width]
    nd = x.ndim
    if len(flat) % 2 or len(flat) > 2 * nd:
        raise OpValueError(f"pad: pad_width {tuple(flat)} must have an even length of at most 2 * ndim = {2 * nd} "
                           f"for {describe(x)} (pairs from the last dimension backwards)")
    pads = [(0, 0)] * nd
    for i in range(len(flat) // 2):
        pads[nd - 1 - i] = (flat[2 * i], flat[2 * i + 1])
    if mode == "constant":
        if isinstance(value, Array):
            value = value.item()
        if not isinstance(value, builtins.bool | builtins.int | builtins.float) and not hasattr(value, "__float__"):
            raise OpTypeError(f"pad: value must be a number, got {describe(value)}")
        for d, (s, (b, a)) in enumerate(zip(x._shape, pads)):
            if s + min(b, 0) + min(a, 0) < 0:
                raise OpValueError(f"pad: pads ({b}, {a}) crop more than the {s} elements of dimension {d} of "
                                   f"{describe(x)}")
            if b < 0 or a < 0:  # negative pads crop: a narrower view of x, then non-negative pads
                x = _narrow(x, d, max(-b, 0), s + min(b, 0) + min(a, 0))
                pads[d] = (max(b, 0), max(a, 0))
    else:
        if value != 0:
            raise OpValueError(f"pad: mode {mode!r} does not take a value (got value={value!r})")
        for d, (s, (b, a)) in enumerate(zip(x._shape, pads)):
            if b < 0 or a < 0:
                raise OpValueError(f"pad: negative pads ({b}, {a}) crop only in constant mode, not {mode!r}")
            if not (b or a):
                continue
            if mode == "reflect" and max(b, a) >= s:
                raise OpValueError(f"pad: reflect pads ({b}, {a}) of dimension {d} must be smaller than its size "
                                   f"{s} ({describe(x)})")
            if mode == "circular" and max(b, a) > s:
                raise OpValueError(f"pad: circular pads ({b}, {a}) of dimension {d} must be at most its size {s} "
                                   f"({describe(x)})")
            if s == 0:
                raise OpValueError(f"pad: cannot {mode}-pad dimension {d} of size 0 ({describe(x)})")
    shape = tuple(s + b + a for s, (b, a) in zip(x._shape, pads))
    dev = x._device
    out = _empty(shape, x._dtype, dev)
    if not _prod(shape):
        return out
    inner = out
    for d, (b, a) in enumerate(pads):
        if b or a:
            inner = _narrow(inner, d, b, x._shape[d])
    if mode == "constant":
        if inner._shape != shape:
            lookup("fill", dev)(out, value)
        if _prod(inner._shape):
            lookup("copy_", dev)(inner, x)
        return out
    copy_ = lookup("copy_", dev)
    copy_(inner, x)
    # Fill the borders one dimension at a time from regions of ``out`` itself, over the full extent of the
    # other dimensions: corners come out right because each later dimension copies rows that an earlier one
    # completed (the separable scheme of np.pad). Sources and destinations never overlap.
    for d, (b, a) in enumerate(pads):
        n = x._shape[d]
        for length, dst_start, src in ((b, 0, _pad_source(out, d, mode, b, n, b, True)),
                                       (a, b + n, _pad_source(out, d, mode, a, n, b, False))):
            if length:
                copy_(_narrow(out, d, dst_start, length), src)
    return out


def _pad_source(out: Array, d: int, mode: str, length: int, n: int, b: int, before: bool) -> Array | None:
    """The view of ``out`` that fills a border of ``length`` along ``d`` (interior: [b, b + n))."""
    if not length:
        return None
    if mode == "circular":
        return _narrow(out, d, n if before else b, length)
    if mode == "replicate":
        edge = _narrow(out, d, b if before else b + n - 1, 1)
        st = list(edge._strides)
        st[d] = 0
        return edge._view(edge._shape[:d] + (length,) + edge._shape[d + 1:], tuple(st), edge._offset)
    # reflect: out[b - 1 - i] = out[b + 1 + i] before, out[b + n + j] = out[b + n - 2 - j] after: reversed views
    src = _narrow(out, d, b + 1 if before else b + n - 1 - length, length)
    st = list(src._strides)
    off = src._offset + (length - 1) * st[d]
    st[d] = -st[d]
    return src._view(src._shape, tuple(st), off)


# ---------------------------------------------------------------------------------------- flip, roll
def flip(x, /, *, axis=None) -> Array:
    """A copy of ``x`` with the order of elements reversed along ``axis`` (an int, a tuple, or all axes)."""
    _check("flip", x)
    axes = normalize_axes(axis, x.ndim, "flip")
    strides = list(x._strides)
    off = x._offset
    if _prod(x._shape):
        for a in axes:
            off += (x._shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    out = _empty(x._shape, x._dtype, x._device)
    if _prod(x._shape):
        lookup("copy_", x._device)(out, x._view(x._shape, tuple(strides), off))
    return out


def roll(x, /, shift, *, axis=None) -> Array:
    """A copy of ``x`` with elements shifted by ``shift`` along ``axis`` (wrapping around); with
    ``axis=None`` the flattened array is rolled. ``shift`` and ``axis`` may be tuples of one length, or an int
    shift applies to every axis of a tuple."""
    _check("roll", x)
    if axis is None:
        if isinstance(shift, list | tuple):
            raise OpValueError(f"roll: a tuple shift {tuple(shift)} needs a tuple axis of the same length")
        pairs = [(0, as_int("roll", "shift", shift))]
        src = x.reshape(-1) if x.ndim != 1 else x
    else:
        axes = list(axis) if isinstance(axis, list | tuple) else [axis]
        shifts = list(shift) if isinstance(shift, list | tuple) else [shift] * len(axes)
        if len(shifts) != len(axes):
            raise OpValueError(f"roll: shift {shift} and axis {axis} must have the same length")
        if x.ndim == 0:
            raise OpValueError(f"roll: a 0-d array has no axis to roll ({describe(x)}); hint: use axis=None")
        total: dict[int, int] = {}
        for a, s in zip(axes, shifts):
            a = normalize_axis(a, x.ndim, "roll")
            total[a] = total.get(a, 0) + as_int("roll", "shift", s)
        pairs = list(total.items())
        src = x
    out = _empty(x._shape, x._dtype, x._device)
    if not _prod(x._shape):
        return out
    dst = out._view(src._shape, _contiguous(src._shape), 0) if src._shape != x._shape else out
    pieces = [(dst, src)]
    for a, s in pairs:  # split every piece in two along each rolled axis: out[s:] = x[:n-s], out[:s] = x[n-s:]
        n = src._shape[a]
        s %= n
        if s:
            pieces = [p for d, v in pieces for p in ((_narrow(d, a, s, n - s), _narrow(v, a, 0, n - s)),
                                                      (_narrow(d, a, 0, s), _narrow(v, a, n - s, s)))]
    copy_ = lookup("copy_", x._device)
    for d, v in pieces:
        copy_(d, v)
    return out


# -------------------------------------------------------------------------------------------- repeat, tile
def repeat(x, repeats, /, *, axis: int | None = None) -> Array:
    """Repeat each element ``repeats`` times along ``axis`` (``None``: of the flattened array), like
    ``np.repeat`` / ``torch.repeat_interleave``. ``repeats``: an int, or a 1-D integer Array (or sequence) of
    one count per element (size 1 broadcasts)."""
    _check("repeat", x)
    if axis is None or x.ndim == 0:
        if axis is not None:
            normalize_axis(axis, 0, "repeat")
        x = x.reshape(-1) if x.ndim != 1 else x
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim, "repeat")
    m = x._shape[ax]
    if isinstance(repeats, list | tuple):
        from .creation import asarray

        repeats = asarray(repeats, dtype=_dt.int64, device=x._device)
    if isinstance(repeats, Array):
        if repeats._dtype.kind not in "iu":
            raise OpTypeError(f"repeat: repeats must be an integer array, got {describe(repeats)}")
        if repeats._device != x._device:
            raise RuntimeError(f"repeat: repeats is on {repeats.device} but x is on {x.device}")
        if repeats.ndim > 1 or repeats.ndim == 1 and repeats._shape[0] not in (1, m):
            raise OpValueError(f"repeat: repeats {describe(repeats)} must be 1-D with 1 or {m} elements (the size "
                               f"of axis {ax} of the array to repeat)")
        if repeats._shape != (m,):
            repeats = repeats.broadcast_to((m,))
        return lookup("repeat", x._device)(x, repeats, ax)
    r = as_int("repeat", "repeats", repeats)
    if r < 0:
        raise OpValueError(f"repeat: repeats must be non-negative, got {r}")
    s = x._shape
    # x viewed as (..., m, r, ...) with a stride-0 repeat dimension, copied into the contiguous result
    bshape = s[:ax + 1] + (r,) + s[ax + 1:]
    view = x._view(bshape, x._strides[:ax + 1] + (0,) + x._strides[ax + 1:], x._offset)
    out = _empty(s[:ax] + (m * r,) + s[ax + 1:], x._dtype, x._device)
    if _prod(bshape):
        lookup("copy_", x._device)(out._view(bshape, _contiguous(bshape), out._offset), view)
    return out


def tile(x, repetitions, /) -> Array:
    """``x`` repeated ``repetitions[i]`` times along dimension ``i`` (array API ``tile``: the shorter of the
    two is padded with leading ones)."""
    _check("tile", x)
    reps = repetitions if isinstance(repetitions, list | tuple) else (repetitions,)
    reps = tuple(as_int("tile", "repetitions", r) for r in reps)
    if any(r < 0 for r in reps):
        raise OpValueError(f"tile: repetitions must be non-negative, got {reps}")
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + x._shape
    strides = (0,) * (nd - x.ndim) + x._strides
    # view (r0, s0, r1, s1, ...) with stride 0 on every r: one copy writes the whole result
    bshape = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    bstrides = tuple(v for st in strides for v in (0, st))
    out = _empty(tuple(r * s for r, s in zip(reps, shape)), x._dtype, x._device)
    if _prod(bshape):
        lookup("copy_", x._device)(out._view(bshape, _contiguous(bshape), out._offset),
                                   x._view(bshape, bstrides, x._offset))
    return out


# -------------------------------------------------------------------------------------------------- views
def diagonal(x, /, *, offset: int = 0, axis1: int = -2, axis2: int = -1) -> Array:
    """A view of the diagonal ``offset`` (above the main one when positive) of the planes ``(axis1, axis2)``;
    those two axes are removed and the diagonal becomes the last axis (NumPy/PyTorch ``diagonal``)."""
    _check("diagonal", x)
    if x.ndim < 2:
        raise OpValueError(f"diagonal: needs at least 2 dimensions, got {describe(x)}")
    a = normalize_axis(axis1, x.ndim, "diagonal", "axis1")
    b = normalize_axis(axis2, x.ndim, "diagonal", "axis2")
    if a == b:
        raise OpValueError(f"diagonal: axis1 and axis2 must differ, got {axis1} and {axis2} for {describe(x)}")
    k = as_int("diagonal", "offset", offset)
    n1, n2 = x._shape[a], x._shape[b]
    s1, s2 = x._strides[a], x._strides[b]
    length = max(0, min(n1, n2 - k) if k >= 0 else min(n1 + k, n2))
    off = x._offset + ((k * s2 if k >= 0 else -k * s1) if length else 0)
    keep = [d for d in range(x.ndim) if d != a and d != b]
    return x._view(tuple(x._shape[d] for d in keep) + (length,), tuple(x._strides[d] for d in keep) + (s1 + s2,),
                   off)


# -------------------------------------------------------------------------------------------------- diff
def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Array:
    """Array API ``diff``: the ``n``-th forward difference along ``axis`` (``out[i] = x[i + 1] - x[i]``, ``n``
    times) of ``concat([prepend, x, append], axis=axis)``; that axis ends up with ``max(0, M + N1 + N2 - n)``
    elements. ``prepend``/``append``: arrays of ``x``'s dtype, device and shape except along ``axis``. bool
    arrays differ by ``!=`` (NumPy, PyTorch). ``n=0`` is the concatenation itself, by the standard's size rule
    (NumPy returns ``x`` and ignores ``prepend``/``append`` there).

    >>> import tkernels as tk
    >>> tk.diff(tk.asarray([1, 4, 9, 16]), prepend=tk.asarray([0]))
    Array([1, 3, 5, 7], dtype=int64, device=cpu)
    """
    _check("diff", x)
    if x.ndim == 0:
        raise OpValueError(f"diff: expected an array of at least 1 dimension, got {describe(x)}; hint: "
                           f"x.reshape(1) if a 1-element array is meant")
    ax = normalize_axis(axis, x.ndim, "diff")
    k = as_int("diff", "n", n)
    if k < 0:
        raise OpValueError(f"diff: n must be non-negative, got {k} (for {describe(x)})")
    pieces = [x]
    for name, p in (("prepend", prepend), ("append", append)):
        if p is None:
            continue
        if not isinstance(p, Array):
            raise OpTypeError(f"diff: {name} must be an Array or None, got {describe(p)}; hint: "
                              f"tkernels.asarray(...) of the values, shaped like x except along axis {ax}")
        if p._dtype is not x._dtype:
            raise OpTypeError(f"diff: {name} has dtype {p.dtype} but x has {x.dtype} ({name}: {describe(p)}, x: "
                              f"{describe(x)}); hint: {name}.astype({x.dtype})")
        check_device("diff", x, p)
        if p.ndim != x.ndim or p._shape[:ax] + p._shape[ax + 1:] != x._shape[:ax] + x._shape[ax + 1:]:
            raise OpValueError(f"diff: {name} has shape {p.shape} but x has shape {x.shape}; they must match except "
                               f"along axis {ax} ({name}: {describe(p)})")
        pieces.insert(0 if name == "prepend" else len(pieces), p)
    y = concat(pieces, axis=ax) if len(pieces) > 1 else x
    # each step shortens the axis by one; once it is empty, further steps change nothing (n may be huge)
    for _ in range(min(k, max(y._shape[ax], 1))):
        m = max(y._shape[ax] - 1, 0)
        hi, lo = _narrow(y, ax, 1, m), _narrow(y, ax, 0, m)
        y = hi != lo if y._dtype is _dt.bool else hi - lo
    return y
