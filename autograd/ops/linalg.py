"""Matrix products: matmul (and its aliases mm, bmm, mv, dot) with batch broadcasting, and the products
composed from it: outer, inner, tensordot, einsum, addmm/addmv/addbmm/baddbmm, vecdot, kron, trace, diag.
Composites are built from differentiable ops, so every order of gradient works."""

from __future__ import annotations

import math

import tkernels as tk
from tkernels.validation import OpValueError

from .. import amp
from ..grad_mode import STATE
from ._base import Node, Tensor, check_out, needs_grad, wrap

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "outer", "ger", "inner", "tensordot", "einsum", "addmm", "addmv",
           "addbmm", "baddbmm", "vecdot", "vdot", "kron", "trace", "diag"]

METHODS = ["outer", "ger", "inner", "addmm", "addmv", "addbmm", "baddbmm", "kron", "trace", "diag", "vdot"]


class MmBackward0(Node):
    def __init__(self, a, b):
        super().__init__((a, b))
        na, nb = self.needs_input_grad
        self.save(b if na else None, a if nb else None)
        self.nd = (a._data.ndim, b._data.ndim)

    def name(self):
        return "MmBackward0" if self.nd == (2, 2) else ("DotBackward0" if self.nd == (1, 1) else "MatmulBackward0")

    def backward(self, g):
        b, a = self.saved_tensors
        na, nb = self.needs_input_grad
        da, db = self.nd
        ga = gb = None
        if da == 1 and db == 1:
            return (g * b if na else None, g * a if nb else None)
        if da == 1:  # (k) @ (..., k, n) -> (..., n)
            if na:
                ga = matmul(b, g.unsqueeze(-1)).squeeze(-1)
            if nb:
                gb = a.unsqueeze(-1) * g.unsqueeze(-2)
            return ga, gb
        if db == 1:  # (..., m, k) @ (k) -> (..., m)
            if na:
                ga = g.unsqueeze(-1) * b
            if nb:
                gb = matmul(a.mT, g.unsqueeze(-1)).squeeze(-1)
            return ga, gb
        if not STATE.grad_enabled and not STATE.autocast:
            # no graph of the backward (the common case): the same tkernels calls, without the autograd views
            if na:
                ga = wrap(tk.matmul(g._data, b._data.mT))
            if nb:
                gb = wrap(tk.matmul(a._data.mT, g._data))
            return ga, gb
        if na:
            ga = matmul(g, b.mT)
        if nb:
            gb = matmul(a.mT, g)
        return ga, gb


def matmul(input, other, *, out=None):
    """Matrix product with NumPy/PyTorch semantics (1-d operands promoted, batch dims broadcast)."""
    if (input.__class__ is not Tensor or other.__class__ is not Tensor) and (
            getattr(input, "is_sparse", False) or getattr(other, "is_sparse", False)):
        from ..sparse import mm as _sparse_mm

        if input.is_sparse:
            return _sparse_mm(input, other)
        return _sparse_mm(other.t(), input.t()).t()  # dense @ sparse = (sparse^T @ dense^T)^T
    if STATE.autocast:  # inside ag.autocast: the lower precision, like PyTorch's autocast op list
        input, other = amp.lower(input, other)
    if out is not None:
        check_out("matmul", out, (input, other))
        tk.matmul(input._data, other._data, out=out._data)
        out._version.v += 1
        return out
    r = tk.matmul(input._data, other._data)
    if r.dtype.kind in "fc" and needs_grad(input, other):
        return MmBackward0(input, other).output(r)
    return wrap(r)


def _check_nd(op, t, nd, name):
    if t._data.ndim != nd:
        raise RuntimeError(f"{op}(): {name} must be a {nd}D tensor, got shape {list(t.shape)}")


def mm(input, mat2, *, out=None):
    if getattr(input, "is_sparse", False):  # a sparse COO matrix times a dense one (torch.mm accepts it)
        from ..sparse import mm as _sparse_mm

        return _sparse_mm(input, mat2)
    _check_nd("mm", input, 2, "self")
    _check_nd("mm", mat2, 2, "mat2")
    return matmul(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    _check_nd("bmm", input, 3, "batch1")
    _check_nd("bmm", mat2, 3, "batch2")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch1 and batch2 must have the same batch size, got {list(input.shape)} and "
                           f"{list(mat2.shape)}")
    return matmul(input, mat2, out=out)


def mv(input, vec, *, out=None):
    _check_nd("mv", input, 2, "self")
    _check_nd("mv", vec, 1, "vec")
    return matmul(input, vec, out=out)


def dot(input, other, *, out=None):
    _check_nd("dot", input, 1, "self")
    _check_nd("dot", other, 1, "tensor")
    return matmul(input, other, out=out)


def _write(op, out, r, tensors):
    if out is None:
        return r
    check_out(op, out, tensors)
    if tuple(out.shape) != tuple(r.shape):
        raise RuntimeError(f"{op}(): out= has shape {list(out.shape)} but the result has shape {list(r.shape)}")
    tk.copy_into(out._data, r._data)
    out._version.v += 1
    return out


def outer(input, vec2, *, out=None):
    """Outer product of two 1-d tensors: ``(n,), (m,) -> (n, m)``."""
    _check_nd("outer", input, 1, "self")
    _check_nd("outer", vec2, 1, "vec2")
    return _write("outer", out, input.unsqueeze(1) * vec2, (input, vec2))


ger = outer


def inner(input, other, *, out=None):
    """Sum over the last dims: ``(..., k), (..., k) -> input.shape[:-1] + other.shape[:-1]``; a scalar
    operand multiplies."""
    if input.ndim == 0 or other.ndim == 0:
        return _write("inner", out, input * other, (input, other))
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner(): inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _write("inner", out, tensordot(input, other, ([-1], [-1])), (input, other))


def _dims_list(op, dims, nd):
    dims = [dims] if isinstance(dims, int) else [int(d) for d in dims]
    for d in dims:
        if not -nd <= d < max(nd, 1):
            raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but "
                             f"got {d})")
    return [d % nd for d in dims]


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (an int: the last ``dims`` of ``a`` with the first of ``b``; or two lists)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot(): dims must be in [0, {min(a.ndim, b.ndim)}] for shapes "
                               f"{list(a.shape)} and {list(b.shape)}, got {dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError(f"tensordot(): dims must be an int or a pair of dim lists, got {dims!r}")
        da, db = _dims_list("tensordot", dims[0], a.ndim), _dims_list("tensordot", dims[1], b.ndim)
        if len(da) != len(db):
            raise RuntimeError(f"tensordot(): both dim lists should have same length, got {da} and {db}")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"tensordot(): contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in dim {j} (shapes "
                               f"{list(a.shape)} and {list(b.shape)})")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [j for j in range(b.ndim) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    sa, sb = [a.shape[i] for i in fa], [b.shape[j] for j in fb]
    am = a.permute(fa + da).reshape(math.prod(sa), k)
    bm = b.permute(db + fb).reshape(k, math.prod(sb))
    return _write("tensordot", out, matmul(am, bm).reshape(sa + sb), (a, b))


# ------------------------------------------------------------------------------------------------ einsum
def _einsum_parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise OpValueError(f"einsum(): the equation {equation!r} has {len(terms)} operand(s) but "
                           f"{len(operands)} tensor(s) were given")
    ell = 0
    for t, op in zip(terms, operands):
        if "..." in t:
            ell = max(ell, op.ndim - (len(t) - 3))
    ell_labels = [chr(0x100 + i) for i in range(ell)]  # never a letter of the equation
    labels = []
    for t, op in zip(terms, operands):
        if "..." in t:
            pre, _, post = t.partition("...")
            n = op.ndim - len(pre) - len(post)
            if n < 0 or "." in pre + post:
                raise OpValueError(f"einsum(): operand {t!r} does not fit a tensor of shape {list(op.shape)}")
            lab = list(pre) + ell_labels[ell - n:] + list(post)
        else:
            lab = list(t)
        if len(lab) != op.ndim or not all(c.isalpha() or ord(c) >= 0x100 for c in lab):
            raise OpValueError(f"einsum(): the subscript {t!r} does not match an operand of shape "
                               f"{list(op.shape)} (one letter per dimension)")
        labels.append(lab)
    if arrow:
        pre, dots, post = rhs.partition("...")
        out = list(pre) + (ell_labels if dots else []) + list(post)
        seen = {c for lab in labels for c in lab}
        for c in out:
            if c not in seen or out.count(c) > 1:
                raise OpValueError(f"einsum(): output subscript {c!r} in {equation!r} "
                                   f"{'appears more than once' if c in seen else 'does not appear in an input'}")
    else:
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        out = ell_labels + sorted(c for c, n in counts.items() if n == 1 and ord(c) < 0x100)
    return labels, out


def _einsum_prepare(t, lab, keep):
    """Diagonals for repeated labels, then sum labels needed nowhere else."""
    lab = list(lab)
    while len(set(lab)) != len(lab):
        c = next(c for c in lab if lab.count(c) > 1)
        i = lab.index(c)
        j = lab.index(c, i + 1)
        t = t.diagonal(0, i, j)
        lab = [x for n, x in enumerate(lab) if n not in (i, j)] + [c]
    drop = [i for i, c in enumerate(lab) if c not in keep]
    if drop:
        t = t.sum(dim=drop)
        lab = [c for i, c in enumerate(lab) if i not in drop]
    return t, lab


def einsum(equation, *operands):
    """Einstein summation (``"ij,jk->ik"``, ``...`` broadcasting, repeated labels for diagonals), evaluated
    left to right as batched matmuls of differentiable ops."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not operands:
        raise OpValueError("einsum(): must provide at least one operand")
    labels, out = _einsum_parse(equation, operands)
    size = {}
    for t, lab in zip(operands, labels):
        for c, s in zip(lab, t.shape):
            if size.get(c, 1) not in (1, s) and s != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript {c!r} "
                                   f"has size {size[c]} for one operand and {s} for another (equation "
                                   f"{equation!r})")
            size[c] = max(size.get(c, 1), s)

    def need(rest):
        return set(out).union(*[set(lab) for lab in rest]) if rest else set(out)

    cur, lc = _einsum_prepare(operands[0], labels[0], need(labels[1:]))
    for n in range(1, len(operands)):
        rest = need(labels[n + 1:])
        cur, lc = _einsum_prepare(cur, lc, rest | set(labels[n]))
        nxt, ln = _einsum_prepare(operands[n], labels[n], rest | set(lc))
        batch = [c for c in lc if c in ln and c in rest]
        contr = [c for c in lc if c in ln and c not in rest]
        fa = [c for c in lc if c not in ln]
        fb = [c for c in ln if c not in lc]
        cur = cur.expand(tuple(size[c] if c in ln else s for c, s in zip(lc, cur.shape)))
        nxt = nxt.expand(tuple(size[c] if c in lc else s for c, s in zip(ln, nxt.shape)))
        sz = {**dict(zip(lc, cur.shape)), **dict(zip(ln, nxt.shape))}
        nb, na, nk, nf = (math.prod(sz[c] for c in g) for g in (batch, fa, contr, fb))
        am = cur.permute([lc.index(c) for c in batch + fa + contr]).reshape(nb, na, nk)
        bm = nxt.permute([ln.index(c) for c in batch + contr + fb]).reshape(nb, nk, nf)
        lc = batch + fa + fb
        cur = matmul(am, bm).reshape(tuple(sz[c] for c in lc))
    cur, lc = _einsum_prepare(cur, lc, set(out))
    return cur.permute([lc.index(c) for c in out]) if lc != out else cur


# ------------------------------------------------------------------------------------- fused-style products
def _scaled_add(op, input, product, beta, alpha, out):
    r = product if alpha == 1 else product * alpha
    if beta != 0:  # beta == 0: input is ignored, NaN and all (PyTorch)
        r = (input if beta == 1 else input * beta) + r
    elif tuple(r.shape) != tuple(input.shape):
        tk.broadcast_shapes(input._data.shape, r._data.shape)
    return _write(op, out, r, (input, product))


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` (input broadcast to the product's shape)."""
    return _scaled_add("addmm", input, mm(mat1, mat2), beta, alpha, out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_add("addmv", input, mv(mat, vec), beta, alpha, out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _scaled_add("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha, out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return _scaled_add("baddbmm", input, bmm(batch1, batch2), beta, alpha, out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product along ``dim`` with broadcasting over the other dims; complex ``x`` is conjugated."""
    if x.shape[dim] != y.shape[dim]:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same size in dimension {dim}, got shapes "
                           f"{list(x.shape)} and {list(y.shape)}")
    from .complex_ops import conj

    return _write("vecdot", out, (conj(x) * y).sum(dim), (x, y))


def vdot(input, other, *, out=None):
    """``sum(conj(input) * other)`` of two 1-D tensors (``torch.vdot``)."""
    _check_nd("vdot", input, 1, "self")
    _check_nd("vdot", other, 1, "other")
    from .complex_ops import conj

    return dot(conj(input), other, out=out)


def kron(input, other, *, out=None):
    """Kronecker product: block ``(i, j)`` is ``input[i, j] * other`` (any number of dims)."""
    nd = max(input.ndim, other.ndim)
    sa = [1] * (nd - input.ndim) + list(input.shape)
    sb = [1] * (nd - other.ndim) + list(other.shape)
    a = input.reshape([v for s in sa for v in (s, 1)])
    b = other.reshape([v for s in sb for v in (1, s)])
    return _write("kron", out, (a * b).reshape([x * y for x, y in zip(sa, sb)]), (input, other))


def trace(input):
    """Sum of the main diagonal of a 2-d tensor."""
    _check_nd("trace", input, 2, "self")
    return input.diagonal().sum()


def diag(input, diagonal: int = 0, *, out=None):
    """1-d input: a square matrix with ``input`` on diagonal ``diagonal``; 2-d input: that diagonal (a copy)."""
    if input.ndim == 2:
        return _write("diag", out, input.diagonal(diagonal).clone(), (input,))
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D (shape {list(input.shape)})")
    from . import views

    n = input.shape[0]
    m = n + abs(diagonal)
    dev = input._data.device
    ar = tk.arange(n, dtype=tk.int64, device=dev)
    rows = wrap(tk.add(ar, max(-diagonal, 0)))
    cols = wrap(tk.add(ar, max(diagonal, 0)))
    z = wrap(tk.zeros((m, m), dtype=input._data.dtype, device=dev))
    return _write("diag", out, views.index_put(z, (rows, cols), input), (input,))


class LinearBackward0(Node):
    def __init__(self, x, w, b):
        super().__init__((x, w, b))
        nx, nw, _ = self.needs_input_grad
        self.save(x if nw else None, w if nx else None)

    def name(self):
        return "AddmmBackward0"

    def backward(self, g):
        x, w = self.saved_tensors
        nx, nw, nb = self.needs_input_grad
        if not STATE.grad_enabled and not STATE.autocast:
            # no graph of the backward (the common case): the tkernels calls of the ops below, without their
            # autograd layer (views, nodes) in between
            ga = g._data
            wa = w._data if nx else None
            xa = x._data if nw else None
            if (wa is None or wa._dtype is ga._dtype) and (xa is None or xa._dtype is ga._dtype):
                # the products and the bias sum in one tkernels call (one entry instead of three)
                gx, gw, gb = tk.ops.linear_backward(ga, xa, wa, needs=(nx, nw, nb))
                return (None if gx is None else wrap(gx), None if gw is None else wrap(gw),
                        None if gb is None else wrap(gb))
            gx = wrap(tk.matmul(ga, wa)) if nx else None
            gw = gb = None
            if nw or nb:
                gs = ga._shape
                g2 = ga if len(gs) == 2 else ga.reshape((-1, gs[-1]))
                if nw:
                    xs = xa._shape
                    # .T of the 2-D g2 is its .mT (a view made directly, without mT's lists)
                    gw = wrap(tk.matmul(g2.T, xa if len(xs) == 2 else xa.reshape((-1, xs[-1]))))
                if nb:
                    gb = wrap(tk.sum(g2, axis=0))  # an int axis: the reduction's hot case
            return gx, gw, gb
        gx = matmul(g, w) if nx else None
        gw = gb = None
        if nw or nb:
            g2 = g.reshape(-1, g.shape[-1]) if g.dim() != 2 else g
            if nw:
                gw = matmul(g2.mT, x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x)
            if nb:
                gb = g2.sum(0)
        return gx, gw, gb


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one fused op (``tkernels.ops.linear``: the matmul epilogue adds the bias
    on cuda); differentiable in all three."""
    if STATE.autocast:
        input, weight, bias = amp.lower(input, weight, bias)
    xa, wa = input._data, weight._data
    if xa._dtype.kind == "c" or wa._dtype.kind == "c":  # complex (PyTorch's): matmul and add, differentiable
        y = matmul(input, weight.mT)
        return y if bias is None else y + bias
    b = None if bias is None else bias._data
    xs, ws = xa._shape, wa._shape
    if not xs or len(ws) != 2 or xs[-1] != ws[1] or (b is not None and b._shape not in ((ws[0],), ())):
        raise RuntimeError(f"linear(): input {list(input.shape)} @ weight.T {list(weight.shape)[::-1]} + bias "
                           f"{None if bias is None else list(bias.shape)}: shapes do not match (input's last "
                           f"dimension must equal weight.shape[1], bias must have weight.shape[0] elements)")
    if xa._dtype is not wa._dtype or (b is not None and b._dtype is not wa._dtype):
        raise RuntimeError(f"linear(): expected input, weight and bias of one dtype, got {input.dtype}, "
                           f"{weight.dtype}, {None if bias is None else bias.dtype}")
    if b is not None and not b._shape:
        b = tk.broadcast_to(b, (ws[0],))
    r = tk.ops.linear(xa, wa, b)
    if needs_grad(input, weight, bias):
        return LinearBackward0(input, weight, bias).output(r)
    return wrap(r)


__all__.append("linear")
