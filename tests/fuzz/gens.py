"""Input generators of the op tables: each draws the array specs and the keyword parameters of one case.

A generator is ``gen(draw, dtypes) -> (specs, params)``; a spec is ``Spec(shape, dtype, kind)`` (an array to
fill), a Python scalar, or a list of specs (an argument that is a sequence of arrays, as ``cat`` takes).
Parameters are drawn from ranges a little wider than the valid ones, so that both sides must also agree on
what they refuse (a dim out of range, a shape that does not fit).
"""

from __future__ import annotations

import dataclasses
import math

from .cases import DTYPES, FLOATS, broadcast_partner, shape


@dataclasses.dataclass(frozen=True)
class Spec:
    shape: tuple
    dtype: str
    kind: str = "any"  # "any" | "positive" | "prob" | "index" (int64 in [0, hi)) | "mask" (bool)
    hi: int = 0


def pick_dtype(draw, dtypes):
    """Mostly one the op supports, sometimes any (both sides must then refuse it or agree)."""
    return draw.sample(dtypes) if draw.bool(0.9) else draw.sample(DTYPES)


def dim_of(draw, nd, wider=True):
    lo, hi = (-nd - 1, nd) if wider else (-max(nd, 1), max(nd, 1) - 1)
    return draw.int(lo, hi)


def scalar(draw, dtype):
    if dtype == "bool" or draw.bool(0.1):
        return draw.sample((True, False))
    if dtype in FLOATS or draw.bool(0.2):
        return draw.sample((0.0, -0.0, 1.5, -2.25, 1e-3, 3.0, float("nan"), float("inf"), -float("inf"), 7.0))
    return draw.sample((0, 1, -1, 2, 3, 5, -7))


def unary(kind="any", min_dims=0):
    def gen(draw, dtypes):
        return [Spec(shape(draw, min_dims=min_dims), pick_dtype(draw, dtypes), kind)], {}
    return gen


def binary(kind="any", scalars=True):
    def gen(draw, dtypes):
        s1 = shape(draw)
        d1 = pick_dtype(draw, dtypes)
        a = Spec(s1, d1, kind)
        if scalars and draw.bool(0.15):
            b = scalar(draw, d1)
        else:
            b = Spec(broadcast_partner(draw, s1), d1 if draw.bool(0.6) else pick_dtype(draw, dtypes), kind)
        if draw.bool(0.5):
            a, b = b, a
            if not isinstance(a, Spec):  # a scalar first: keep the tensor first (torch's functions need one)
                a, b = b, a
        return [a, b], {}
    return gen


def with_params(gen, **param_gens):
    """``gen``'s inputs plus parameters, each ``f(draw, specs)``."""
    def g(draw, dtypes):
        specs, params = gen(draw, dtypes)
        for k, f in param_gens.items():
            params[k] = f(draw, specs)
        return specs, params
    return g


def nd0(specs):
    return len(specs[0].shape)


def p_dim(draw, specs):
    return dim_of(draw, nd0(specs))


def p_dim_or_none(draw, specs):
    if draw.bool(0.25):
        return None
    if nd0(specs) >= 2 and draw.bool(0.2):
        n = nd0(specs)
        return tuple(sorted({draw.int(-n, n - 1) % n for _ in range(2)}))
    return dim_of(draw, nd0(specs))


def p_bool(draw, specs):
    return draw.bool()


def reduce_gen(kind="any", dims=True, keepdim=True, dtypes=None):
    params = {}
    if dims:
        params["dim"] = p_dim_or_none
    if keepdim:
        params["keepdim"] = p_bool
    return with_params(unary(kind), **params)


def factor_shape(draw, specs):
    """A new shape for reshape: same size (mostly, sometimes with -1), or a wrong one."""
    size = math.prod(specs[0].shape)
    if draw.bool(0.1):
        return (size + 1,)
    dims = []
    rest = size
    for _ in range(draw.int(0, 3)):
        divs = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
        d = draw.sample(divs)
        dims.append(d)
        rest = rest // d if d else 0
    if size:
        dims.append(rest)
    elif not dims or 0 not in dims:
        dims.append(0)
    if dims and size and draw.bool(0.3):
        dims[draw.int(0, len(dims) - 1)] = -1
    return tuple(dims)


def perm_of(draw, specs):
    n = nd0(specs)
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = draw.int(0, i)
        p[i], p[j] = p[j], p[i]
    if n and draw.bool(0.2):
        p[0] = p[-1] if n > 1 else 1  # a repeated or out-of-range axis
    return tuple(p)


def seq_of_arrays(max_n=3, same=True):
    """A list of arrays for cat/stack: shapes equal except (for cat) along one dim."""
    def gen(draw, dtypes):
        s = shape(draw, max_dims=3)
        n = draw.int(1, max_n)
        d = pick_dtype(draw, dtypes)
        nd = len(s)
        dim = dim_of(draw, nd if not same else nd + 1) if nd or not same else draw.int(-1, 1)
        specs = []
        for _ in range(n):
            si = list(s)
            if not same and nd and draw.bool(0.7):
                si[dim % nd if -nd <= dim < nd else 0] = draw.sample((0, 1, 2, 3))
            if draw.bool(0.05):
                si = list(shape(draw, max_dims=3))
            specs.append(Spec(tuple(si), d if draw.bool(0.8) else pick_dtype(draw, dtypes)))
        return [specs], {"dim": dim}
    return gen


def index_gen(index_len=None, same_nd=False, for_gather=False):
    """An array and an int64 index into it along ``dim`` (mostly in range)."""
    def gen(draw, dtypes):
        s = shape(draw, min_dims=0)
        d = pick_dtype(draw, dtypes)
        nd = len(s)
        dim = dim_of(draw, nd)
        size = s[dim] if -nd <= dim < nd else (1 if nd == 0 else 3)
        if for_gather:
            ishape = tuple(max(0, k - draw.int(0, 1)) for k in s)
            if draw.bool(0.1):
                ishape = shape(draw, max_dims=nd)
        else:
            ishape = (draw.sample((0, 1, 2, 3, 5)),) if draw.bool(0.85) else ()
        return [Spec(s, d), Spec(ishape, "int64", "index", size)], {"dim": dim}
    return gen


def take_gen(draw, dtypes):
    s = shape(draw)
    size = math.prod(s)
    return [Spec(s, pick_dtype(draw, dtypes)), Spec(shape(draw, max_dims=2), "int64", "index", size)], {}


def mask_gen(draw, dtypes):
    s = shape(draw)
    d = pick_dtype(draw, dtypes)
    return [Spec(s, d), Spec(broadcast_partner(draw, s), "bool", "mask")], {"value": scalar(draw, d)}


def where_gen(draw, dtypes):
    s = shape(draw)
    d1 = pick_dtype(draw, dtypes)
    d2 = d1 if draw.bool(0.7) else pick_dtype(draw, dtypes)
    y = Spec(broadcast_partner(draw, s), d2) if draw.bool(0.85) else scalar(draw, d2)
    return [Spec(broadcast_partner(draw, s), "bool", "mask"), Spec(s, d1), y], {}


def matmul_gen(draw, dtypes):
    d = pick_dtype(draw, dtypes)
    m, k, n = (draw.sample((0, 1, 2, 3, 5)) for _ in range(3))
    kind = draw.sample(("mm", "mv", "vm", "vv", "bmm", "bcast", "bad"))
    a, b = {"mm": ((m, k), (k, n)), "mv": ((m, k), (k,)), "vm": ((k,), (k, n)), "vv": ((k,), (k,)),
            "bmm": ((2, m, k), (2, k, n)), "bcast": ((3, 1, m, k), (2, k, n)),
            "bad": ((m, k), (k + 1, n))}[kind]
    return [Spec(a, d), Spec(b, d if draw.bool(0.9) else pick_dtype(draw, dtypes))], {}


def class_gen(target="index", kind="any"):
    """(N, C) logits (or (C,) / (N, C, d)) and a target: class indices, or probabilities of the same shape."""
    def gen(draw, dtypes):
        d = pick_dtype(draw, dtypes)
        n, c = draw.sample((0, 1, 2, 3, 5)), draw.sample((1, 2, 3, 4))
        form = draw.sample(("nc", "nc", "c", "ncd"))
        x = {"nc": (n, c), "c": (c,), "ncd": (n, c, 2)}[form]
        if target == "index":
            t = {"nc": (n,), "c": (), "ncd": (n, 2)}[form]
            ts = Spec(t, "int64", "index", c)
        else:
            ts = Spec(x, d, kind)
        return [Spec(x, d), ts], {}
    return gen


def loss_pair(kind="any", target_kind=None):
    def gen(draw, dtypes):
        s = shape(draw)
        d = pick_dtype(draw, dtypes)
        s2 = s if draw.bool(0.85) else broadcast_partner(draw, s)
        return [Spec(s, d, kind), Spec(s2, d, target_kind or kind)], {
            "reduction": draw.sample(("mean", "sum", "none"))}
    return gen


def topk_gen(draw, dtypes):
    specs, _ = unary()(draw, dtypes)
    nd = nd0(specs)
    dim = dim_of(draw, nd)
    size = specs[0].shape[dim] if -nd <= dim < nd else 1
    return specs, {"k": draw.int(0, size + 1), "dim": dim, "largest": draw.bool(), "sorted": True}


def narrow_gen(draw, dtypes):
    specs, _ = unary()(draw, dtypes)
    nd = nd0(specs)
    dim = dim_of(draw, nd)
    size = specs[0].shape[dim] if -nd <= dim < nd else 1
    start = draw.int(-size - 1, size)
    return specs, {"dim": dim, "start": start, "length": draw.int(0, size + 1)}


def expand_gen(draw, dtypes):
    specs, _ = unary()(draw, dtypes)
    s = specs[0].shape
    new = tuple(draw.sample((d, d, -1, 3)) if d == 1 else draw.sample((d, d, -1, d + 1)) for d in s)
    if draw.bool(0.3):
        new = (draw.sample((1, 2)),) + new
    return specs, {"size": new}
