"""Linear algebra products (also reached as tkernels.linalg.*): matmul (the one backend primitive), and
vecdot, tensordot, outer and einsum composed of it.

``matmul`` is the only op of this family a backend implements. Its entry does the array API shape rules
(1-D operands get a dimension prepended/appended and removed again, leading dimensions broadcast) and hands
the backend three Arrays of one batch shape, as views with any strides::

    impl(out, x1, x2)    x1: (*batch, M, K)   x2: (*batch, K, N)   out: (*batch, M, N)

``out`` has the promoted result dtype; ``x1``/``x2`` may have other dtypes (cast on load); float16/bfloat16
accumulate in float32. The entry never calls the backend with an empty output or with ``K == 0`` (it fills
zeros), and never with an ``out`` that overlaps an operand (it computes into a temporary and copies).

The other ops only permute, broadcast and reshape (views, or one copy when strides forbid a view) around one
batched matmul, so a backend that has ``matmul`` and ``copy_`` serves them all.
"""

from __future__ import annotations

import functools

from . import dtypes as _dt
from ._complex import check_device, conj
from .array import Array
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, as_int, broadcast_shapes, describe

__all__ = ["matmul", "vecdot", "tensordot", "outer", "einsum"]

_PROMO = _dt._PROMO


_CAT = _dt._CAT


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _check_pair(op: str, x1, x2) -> _dt.DType:
    """Both Arrays, numeric, on one device; returns the promoted dtype."""
    if not isinstance(x1, Array) or not isinstance(x2, Array):
        raise OpTypeError(f"{op}: expected two Arrays, got {describe(x1)} and {describe(x2)}; hint: convert with "
                          f"tkernels.asarray(...) first")
    d1, d2 = x1._dtype, x2._dtype
    if d1.kind == "b" or d2.kind == "b":
        raise OpTypeError(f"{op}: bool arrays are not supported ({describe(x1)}, {describe(x2)}); hint: convert "
                          f"with .astype(int64) or a float dtype first")
    if x1._device != x2._device:
        raise RuntimeError(f"{op}: expected both arrays on the same device, but found {x1.device} and "
                           f"{x2.device} ({describe(x1)}, {describe(x2)}); hint: move one with .to(device)")
    dt = d1 if d1 is d2 else _PROMO[d1, d2]
    if dt.kind == "c":
        check_device(op, x1, x2, dtype=dt)
    return dt


def _mm(a: Array, b: Array, dt: _dt.DType, out: Array | None = None, op: str = "matmul") -> Array:
    """Batched matmul of ``a`` (..., M, K) and ``b`` (..., K, N), both at least 2-D, into a new Array of dtype
    ``dt``, or into ``out`` (already checked by the caller and shaped (*batch, M, N))."""
    sa, sb = a._shape, b._shape
    K = sa[-1]
    if K != sb[-2]:
        raise OpValueError(f"{op}: {sa} @ {sb}: inner dimensions {K} and {sb[-2]} differ (the last dimension of "
                           f"the first operand must equal the second-to-last of the second)")
    ba, bb = sa[:-2], sb[:-2]
    if ba == bb:
        batch = ba
    else:
        try:
            batch = broadcast_shapes(ba, bb, op=op)
        except ValueError:
            raise OpValueError(f"{op}: {sa} @ {sb}: the batch dimensions {ba} and {bb} cannot be broadcast "
                               f"together (sizes must match or be 1)") from None
        if ba != batch:
            a = a.broadcast_to(batch + sa[-2:])
        if bb != batch:
            b = b.broadcast_to(batch + sb[-2:])
    full = batch + (sa[-2], sb[-1])
    dev = a._device
    if out is None or out._dtype is not dt or out._storage is a._storage or out._storage is b._storage:
        res = lookup("empty", dev)(full, dt, dev)  # a temporary when out must be cast or is read (a @= b)
    else:
        res = out
    if _prod(full):
        if K:
            lookup("matmul", dev)(res, a, b)
        else:
            lookup("fill", dev)(res, 0)
    if out is not None and res is not out:
        lookup("copy_", dev)(out, res)
        return out
    return res


def matmul(x1, x2, /, *, out: Array | None = None) -> Array:
    """Matrix product with the array API rules: 1-D operands act as a row (x1) or column (x2) vector whose
    dimension is removed from the result; leading (batch) dimensions broadcast. 0-d operands are refused.
    ``out=`` (same shape as the result) receives the result; ``a @= b`` uses it.

    >>> matmul(ones((2, 1, 3, 4)), ones((5, 4, 2))).shape
    (2, 5, 3, 2)
    """
    if x1.__class__ is Array and x2.__class__ is Array and x1._dtype is x2._dtype and x1._device is x2._device \
            and x1._dtype.kind not in "bc":
        dt = x1._dtype  # the common case, which passes every check of _check_pair
    else:
        dt = _check_pair("matmul", x1, x2)
    s1, s2 = x1._shape, x2._shape
    n1, n2 = len(s1), len(s2)
    if n1 == 2 and n2 == 2 and out is None:  # the hot path (a Linear layer): no reshaping, no batch
        M, K = s1
        if K != s2[0]:
            raise OpValueError(f"matmul: {s1} @ {s2}: inner dimensions {K} and {s2[0]} differ (the last "
                               f"dimension of x1 must equal the second-to-last of x2; {describe(x1)}, "
                               f"{describe(x2)})")
        dev = x1._device
        N = s2[1]
        res = lookup("empty", dev)((M, N), dt, dev)
        if M and N:
            if K:
                lookup("matmul", dev)(res, x1, x2)
            else:
                lookup("fill", dev)(res, 0)
        return res
    if n1 == 0 or n2 == 0:
        raise OpValueError(f"matmul: 0-d operands are not allowed ({describe(x1)}, {describe(x2)}); hint: use "
                           f"multiply for scalars")
    a = x1._view((1, s1[0]), (0, x1._strides[0]), x1._offset) if n1 == 1 else x1
    b = x2._view((s2[0], 1), (x2._strides[0], 0), x2._offset) if n2 == 1 else x2
    if a._shape[-1] != b._shape[-2]:
        raise OpValueError(f"matmul: {s1} @ {s2}: inner dimensions {a._shape[-1]} and {b._shape[-2]} differ (the "
                           f"last dimension of x1 must equal the {'only' if n2 == 1 else 'second-to-last'} "
                           f"dimension of x2; {describe(x1)}, {describe(x2)})")
    if out is None:
        r = _mm(a, b, dt)
        if n1 == 1 or n2 == 1:
            sh = r._shape
            sh = sh[:-2] + ((sh[-2],) if n1 > 1 else ()) + ((sh[-1],) if n2 > 1 else ())
            r = r._view(sh, _contiguous(sh), r._offset)
        return r
    try:
        batch = broadcast_shapes(a._shape[:-2], b._shape[:-2], op="matmul")
    except ValueError:
        batch = None  # _mm raises the message with both shapes
    if batch is None:
        return _mm(a, b, dt)
    shape = batch + ((a._shape[-2],) if n1 > 1 else ()) + ((b._shape[-1],) if n2 > 1 else ())
    _check_out("matmul", out, shape, dt, x1)
    st = out._strides
    if n1 == 1 or n2 == 1:  # view out with the removed size-1 dimensions put back (their stride is unused)
        nb = len(batch)
        full = batch + (1 if n1 == 1 else shape[nb], 1 if n2 == 1 else shape[-1])
        fst = st[:nb] + (0 if n1 == 1 else st[nb], 0 if n2 == 1 else st[-1])
        ov = out._view(full, fst, out._offset)
    else:
        ov = out
    _mm(a, b, dt, ov)
    return out


def _contiguous(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _check_out(op, out, shape, dt, x):
    if not isinstance(out, Array):
        raise OpTypeError(f"{op}: out must be an Array, got {describe(out)}")
    if out._shape != shape:
        raise OpValueError(f"{op}: out has shape {out.shape} but the result has shape {shape}; hint: in-place "
                           f"a @= b needs b square, with a's last dimension")
    if _CAT[dt.kind] > _CAT[out._dtype.kind]:
        raise OpTypeError(f"{op}: the result dtype {dt} cannot be cast to the dtype of out ({out.dtype})")
    if out._device != x._device:
        raise RuntimeError(f"{op}: out is on {out.device} but the inputs are on {x.device}")
    if any(st == 0 and n > 1 for n, st in zip(out._shape, out._strides)):
        raise RuntimeError(f"{op}: out ({describe(out)}) is an expanded view whose elements share memory "
                           f"(stride 0); hint: give an out made with empty(...) or a copy")


def vecdot(x1, x2, /, *, axis: int = -1) -> Array:
    """Dot products of the vectors along ``axis`` (negative, counted from the end: the array API requires it),
    with the other dimensions broadcast; the result drops ``axis``. Complex ``x1`` is conjugated."""
    dt = _check_pair("vecdot", x1, x2)
    n = min(x1.ndim, x2.ndim)
    ax = as_int("vecdot", "axis", axis)
    if not -n <= ax <= -1:
        raise IndexError(f"vecdot: axis {axis} is out of range: it must be negative, in [-{n}, -1] (counted from "
                         f"the last dimension of both operands; {describe(x1)}, {describe(x2)})")
    k1, k2 = x1._shape[ax], x2._shape[ax]
    if k1 != k2:
        raise OpValueError(f"vecdot: the contracted axis {ax} has size {k1} in x1 and {k2} in x2; they must be "
                           f"equal (no broadcasting along it; {describe(x1)}, {describe(x2)})")
    a = x1.moveaxis(ax, -1) if ax != -1 else x1
    b = x2.moveaxis(ax, -1) if ax != -1 else x2
    if a._dtype.kind == "c":  # the array API's (and torch.linalg.vecdot's) sum of conj(x1) * x2
        a = conj(a)
    try:
        batch = broadcast_shapes(a._shape[:-1], b._shape[:-1], op="vecdot")
    except ValueError:
        raise OpValueError(f"vecdot: the non-contracted dimensions of {describe(x1)} and {describe(x2)} cannot be "
                           f"broadcast together (axis={axis})") from None
    a = a.expand_dims(-2)  # (..., 1, K) @ (..., K, 1): batched dot products on the matmul primitive
    b = b.expand_dims(-1)
    r = _mm(a, b, dt, op="vecdot")
    return r._view(batch, _contiguous(batch), r._offset)


def tensordot(x1, x2, /, *, axes=2) -> Array:
    """Sum of products over ``axes``: an int N contracts the last N axes of x1 with the first N of x2; a pair of
    sequences names the axes of each. The result has x1's free axes, then x2's."""
    dt = _check_pair("tensordot", x1, x2)
    n1, n2 = x1.ndim, x2.ndim
    if isinstance(axes, tuple | list) and len(axes) == 2 and all(isinstance(s, tuple | list) for s in axes):
        ax1 = tuple(_axis_in("tensordot", a, n1, "axes[0]") for a in axes[0])
        ax2 = tuple(_axis_in("tensordot", a, n2, "axes[1]") for a in axes[1])
        if len(ax1) != len(ax2):
            raise OpValueError(f"tensordot: axes {tuple(axes[0])} and {tuple(axes[1])} have different lengths")
        if len(set(ax1)) != len(ax1) or len(set(ax2)) != len(ax2):
            raise OpValueError(f"tensordot: repeated axis in axes={axes!r}")
    else:
        try:
            k = as_int("tensordot", "axes", axes)
        except TypeError:
            raise OpTypeError(f"tensordot: axes must be an int or a pair of sequences of ints, got {axes!r}") from None
        if not 0 <= k <= min(n1, n2):
            raise OpValueError(f"tensordot: axes={k} must be in [0, {min(n1, n2)}] for {describe(x1)} and "
                               f"{describe(x2)}")
        ax1, ax2 = tuple(range(n1 - k, n1)), tuple(range(k))
    s1, s2 = x1._shape, x2._shape
    for i, j in zip(ax1, ax2):
        if s1[i] != s2[j]:
            raise OpValueError(f"tensordot: axis {i} of x1 has size {s1[i]} but axis {j} of x2 has size {s2[j]}; "
                               f"contracted axes must have equal sizes ({describe(x1)}, {describe(x2)})")
    free1 = [d for d in range(n1) if d not in ax1]
    free2 = [d for d in range(n2) if d not in ax2]
    K = _prod(s1[i] for i in ax1)
    fs1, fs2 = tuple(s1[d] for d in free1), tuple(s2[d] for d in free2)
    a = x1.permute_dims(free1 + list(ax1)).reshape((_prod(fs1), K))
    b = x2.permute_dims(list(ax2) + free2).reshape((K, _prod(fs2)))
    r = _mm(a, b, dt, op="tensordot")
    shape = fs1 + fs2
    return r._view(shape, _contiguous(shape), r._offset)


def _axis_in(op, a, n, name):
    a = as_int(op, name, a)
    if not -n <= a < n:
        raise IndexError(f"{op}: axis {a} in {name} is out of range for an array of {n} dimension(s)")
    return a % n


def outer(x1, x2, /) -> Array:
    """Outer product of two 1-D arrays: ``out[i, j] = x1[i] * x2[j]``."""
    dt = _check_pair("outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise OpValueError(f"outer: expected two 1-D arrays, got {describe(x1)} and {describe(x2)}; hint: flatten "
                           f"them first")
    a = x1._view((x1._shape[0], 1), (x1._strides[0], 0), x1._offset)
    b = x2._view((1, x2._shape[0]), (0, x2._strides[0]), x2._offset)
    return _mm(a, b, dt, op="outer")


# -------------------------------------------------------------------------------------------------- einsum
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _ell(j: int) -> str:
    return chr(0x100 + j)  # labels of the ellipsis dimensions: outside [a-zA-Z], so no clash with the user's


@functools.lru_cache(maxsize=512)
def _einsum_parse(subscripts: str, ndims: tuple[int, ...]):
    """Subscripts → (one label string per operand, output labels), ellipses expanded to private labels."""
    eq = subscripts.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise OpValueError(f"einsum: {subscripts!r} has {len(terms)} operand term(s) but {len(ndims)} operand(s) "
                           f"were given")
    n_ell = 0
    parsed = []
    for i, (t, nd) in enumerate(zip(terms, ndims)):
        head, dots, tail = t.partition("...")
        for c in head + tail:
            if c not in _LETTERS:
                raise OpValueError(f"einsum: invalid subscript {c!r} in {subscripts!r}; use letters [a-zA-Z] and "
                                   f"at most one '...' per operand")
        k = nd - len(head) - len(tail)
        if (not dots and k != 0) or k < 0:
            raise OpValueError(f"einsum: operand {i} has {nd} dimension(s) but its subscripts {t!r} name "
                               f"{len(head) + len(tail)}{' (with ...)' if dots else ''}")
        parsed.append((head, k if dots else -1, tail))
        n_ell = max(n_ell, k if dots else 0)
    ells = "".join(_ell(j) for j in range(n_ell))
    inputs = tuple(h + (ells[n_ell - k:] if k >= 0 else "") + t for h, k, t in parsed)
    if arrow:
        head, dots, tail = rhs.partition("...")
        for c in head + tail:
            if c not in _LETTERS:
                raise OpValueError(f"einsum: invalid output subscript {c!r} in {subscripts!r}")
        output = head + (ells if dots else "") + tail
        for c in head + tail:
            if output.count(c) > 1:
                raise OpValueError(f"einsum: output subscript {c!r} appears more than once in {subscripts!r}")
            if not any(c in s for s in inputs):
                raise OpValueError(f"einsum: output subscript {c!r} does not appear in the operands of "
                                   f"{subscripts!r}")
    else:
        counts: dict[str, int] = {}
        for s in inputs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = ells + "".join(sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS))
    return inputs, output


def einsum(subscripts: str, /, *operands) -> Array:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)``. Implicit output (labels seen once, sorted),
    repeated labels within an operand take diagonals, ``...`` broadcasts; labels of size 1 broadcast as in
    PyTorch. Ellipsis dimensions left out of an explicit output are summed (PyTorch; NumPy refuses).

    Composite: diagonals are views, sums and contractions are batched matmuls (with a vector of ones for a
    plain sum), so every backend with ``matmul`` runs it. The result is always a new array.
    """
    if not isinstance(subscripts, str):
        raise OpTypeError(f"einsum: subscripts must be a string like 'ij,jk->ik', got {describe(subscripts)}")
    if not operands:
        raise OpValueError("einsum: at least one operand is required")
    for i, x in enumerate(operands):
        if not isinstance(x, Array):
            raise OpTypeError(f"einsum: operand {i} must be an Array, got {describe(x)}")
        if x._dtype.kind == "b":
            raise OpTypeError(f"einsum: bool arrays are not supported (operand {i}: {describe(x)}); hint: convert "
                              f"with .astype(int64) first")
    dev = operands[0]._device
    for x in operands[1:]:
        if x._device != dev:
            raise RuntimeError(f"einsum: expected all operands on the same device, but found {dev} and "
                               f"{x.device} ({', '.join(describe(o) for o in operands)})")
    inputs, output = _einsum_parse(subscripts, tuple(x.ndim for x in operands))
    sizes: dict[str, int] = {}
    terms = []
    for i, (x, spec) in enumerate(zip(operands, inputs)):
        x, spec = _einsum_diagonals(x, spec, i, subscripts)
        for c, s in zip(spec, x._shape):
            t = sizes.setdefault(c, s)
            if s != t:
                if t == 1:
                    sizes[c] = s
                elif s != 1:
                    raise OpValueError(f"einsum: subscript {_label(c)} has size {s} in operand {i} but {t} in "
                                       f"another operand of {subscripts!r} (sizes must match or be 1; "
                                       f"{', '.join(describe(o) for o in operands)})")
        terms.append((x, spec))
    dt = operands[0]._dtype
    for x in operands[1:]:
        dt = _PROMO[dt, x._dtype]
    while len(terms) > 1:  # contract left to right, keeping the labels needed later
        (a, sa), (b, sb) = terms[0], terms[1]
        later = set(output).union(*(s for _, s in terms[2:]))
        a, sa = _einsum_sum(a, sa, later | set(sb))
        b, sb = _einsum_sum(b, sb, later | set(sa))
        terms = [_einsum_contract(a, sa, b, sb, later)] + terms[2:]
    x, spec = terms[0]
    x, spec = _einsum_sum(x, spec, set(output))
    r = x.permute_dims([spec.index(c) for c in output])
    if r._dtype is not dt:
        return r.astype(dt)
    if any(r._storage is o._storage for o in operands):
        r = r.copy()
    return r


def _label(c: str) -> str:
    return repr(c) if c in _LETTERS else "'...'"


def _einsum_diagonals(x: Array, spec: str, i: int, subscripts: str):
    from .manipulation import diagonal

    while len(set(spec)) != len(spec):
        c = next(c for c in spec if spec.count(c) > 1)
        p = spec.index(c)
        q = spec.index(c, p + 1)
        if x._shape[p] != x._shape[q]:
            raise OpValueError(f"einsum: subscript {c!r} is repeated in operand {i} of {subscripts!r} for "
                               f"dimensions of sizes {x._shape[p]} and {x._shape[q]}; they must be equal "
                               f"({describe(x)})")
        x = diagonal(x, axis1=p, axis2=q)
        spec = spec[:p] + spec[p + 1:q] + spec[q + 1:] + c
    return x, spec


def _einsum_sum(x: Array, spec: str, keep: set):
    """Sum out the labels of ``x`` not in ``keep``: (kept, summed) @ ones(summed)."""
    drop = [i for i, c in enumerate(spec) if c not in keep]
    if not drop:
        return x, spec
    kept = [i for i, c in enumerate(spec) if c in keep]
    shape = tuple(x._shape[i] for i in kept)
    S = _prod(x._shape[i] for i in drop)
    a = x.permute_dims(kept + drop).reshape((_prod(shape), S))
    ones = lookup("empty", x._device)((S, 1), x._dtype, x._device)
    lookup("fill", x._device)(ones, 1)
    r = _mm(a, ones, x._dtype, op="einsum")
    return r._view(shape, _contiguous(shape), r._offset), "".join(spec[i] for i in kept)


def _einsum_contract(a: Array, sa: str, b: Array, sb: str, later: set):
    """One batched matmul: (batch, left, contracted) @ (batch, contracted, right); size-1 labels broadcast."""
    batch = [c for c in sa if c in sb and c in later]
    contract = [c for c in sa if c in sb and c not in later]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]

    def both(c):
        s, t = a._shape[sa.index(c)], b._shape[sb.index(c)]
        return t if s == 1 else s

    bs = tuple(both(c) for c in batch)
    ls = tuple(a._shape[sa.index(c)] for c in left)
    rs = tuple(b._shape[sb.index(c)] for c in right)
    cs = tuple(both(c) for c in contract)
    K = _prod(cs)
    a = a.permute_dims([sa.index(c) for c in batch + left + contract]).broadcast_to(bs + ls + cs)
    b = b.permute_dims([sb.index(c) for c in batch + contract + right]).broadcast_to(bs + cs + rs)
    a = a.reshape(bs + (_prod(ls), K))
    b = b.reshape(bs + (K, _prod(rs)))
    r = _mm(a, b, _PROMO[a._dtype, b._dtype], op="einsum")
    shape = bs + ls + rs
    return r._view(shape, _contiguous(shape), r._offset), "".join(batch + left + right)
