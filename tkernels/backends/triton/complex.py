"""complex64/complex128 on cuda: the triton backend's complex paths, on the interleaved layout (no host round trip).

A complex Array is handed to the kernels as its real pair view (``view_as_real``: float32/float64, shape
``(*s, 2)``, no copy). The backend's entries (elementwise, copy/fill, where, reductions, matmul) branch here on a
complex dtype; ``complex_pairs.py`` launches the kernels. What reuses real kernels on the pair views:
- copies and casts: complex <-> complex is the real copy kernel on the pair views (it converts float32 <->
  float64); real -> complex copies into the real parts and fills the imaginary ones with 0; complex -> real
  copies the real parts (NumPy's and PyTorch's cast); fills write the two parts;
- ``where``: the real ternary kernel on the pair views, the condition broadcast over the pair axis;
- ``sum``/``mean``/``cumulative_sum``: the real reduction and scan kernels on the pair views (the pair axis is
  kept); ``prod`` and ``cumulative_prod`` have their own kernels (complex products);
- ``matmul``: one real GEMM on the interleaved layout (``complex_pairs.matmul_pairs``).
The ops served are added to ``tkernels._complex.CUDA_COMPLEX_OPS``; the others keep refusing complex arrays on
cuda with NotImplementedError.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ..._complex import CUDA_COMPLEX_OPS, view_as_real
from ...array import Array
from ...dispatch import lookup, register
from ...kernels import complex as ck
from ...kernels import elementwise as ek
from . import complex_pairs as cp
from .elementwise import _into_contiguous, _launch
from .memory import copy_, empty, fill

_LOGICAL = ("logical_and", "logical_or", "logical_xor")


def _parts(x: Array):
    """The real and imaginary part views of complex ``x`` (strided float arrays of its shape)."""
    p = view_as_real(x)
    nd = len(x._shape)
    shape, strides = x._shape, p._strides[:nd]
    return p._view(shape, strides, p._offset), p._view(shape, strides, p._offset + 1)


def _as_complex(x: Array, d: _dt.DType) -> Array:
    """``x`` as a complex array of dtype ``d`` (itself when it is one)."""
    if x._dtype is d:
        return x
    y = empty(x._shape, d, x._device)
    copy_complex(y, x)
    return y


# --------------------------------------------------------------------------------------- copies and fills
def copy_complex(out: Array, x: Array) -> None:
    """``copy_`` where ``out`` or ``x`` is complex (``x`` already broadcast to ``out``'s shape)."""
    if out._dtype.kind == "c" and x._dtype.kind == "c":
        copy_(view_as_real(out), view_as_real(x))
    elif out._dtype.kind == "c":
        re, im = _parts(out)
        copy_(re, x)
        fill(im, 0.0)
    else:  # the real part (NumPy / PyTorch astype)
        copy_(out, _parts(x)[0])


def fill_complex(out: Array, value) -> None:
    c = complex(value)
    re, im = _parts(out)
    fill(re, c.real)
    fill(im, c.imag)


# ------------------------------------------------------------------------------------------- elementwise
def unary(name: str, out: Array, x: Array) -> None:
    """``out = name(x)`` for complex ``x`` (``out`` contiguous: complex, real for abs, bool for predicates)."""
    if name == "positive":
        copy_complex(out, x)
        return
    if out._dtype.kind == "c":
        x = _as_complex(x, out._dtype)  # out= of the other precision
        cp.unary(name, view_as_real(out), view_as_real(x))
    else:
        cp.unary(name, out, view_as_real(x))


def _operand(x, rd: _dt.DType):
    """(kernel operand, is complex): complex arrays as pair views, real arrays as float32/float64 (others are
    cast to the compute's real dtype first), Python numbers as they are."""
    if not isinstance(x, Array):
        return x, False
    if x._dtype.kind == "c":
        return view_as_real(x), True
    if x._dtype not in (_dt.float32, _dt.float64):
        x = x.astype(rd)
    return x, False


def binary(name: str, out: Array, x1, x2, compute: _dt.DType) -> None:
    """``out = x1 name x2`` with a complex operand or compute dtype (``out`` contiguous)."""
    if name in _LOGICAL:  # (z != 0) of the complex operands, then the real logical op
        args = []
        for x in (x1, x2):
            if isinstance(x, Array) and x._dtype.kind == "c":
                nz = empty(x._shape, _dt.bool, x._device)
                cp.binary("not_equal", nz, view_as_real(x), 0, True, False, x._dtype is _dt.complex128)
                x = nz
            args.append(x)  # real arrays and scalars: the real op makes them (x != 0)
        lookup(name, out._device)(out, *args, _dt.bool)
        return
    cd = compute if compute.kind == "c" else _dt.to_complex(compute)
    rd = _dt.to_real(cd)
    (a, ac), (b, bc) = _operand(x1, rd), _operand(x2, rd)
    o = view_as_real(out) if out._dtype.kind == "c" else out
    if out._dtype.kind == "c" and out._dtype is not cd:  # out= of the other precision: computed, then cast
        tmp = empty(out._shape, cd, out._device)
        cp.binary(name, view_as_real(tmp), a, b, ac, bc, cd is _dt.complex128)
        copy_complex(out, tmp)
        return
    cp.binary(name, o, a, b, ac, bc, cd is _dt.complex128)


def where(out: Array, cond: Array, x1, x2, compute: _dt.DType) -> None:
    """``where`` on complex values: the real ternary kernel on pair views (scalars and real arrays made complex
    arrays of the compute dtype first; the condition broadcast over the pair axis)."""
    vals = []
    for x in (x1, x2):
        if not isinstance(x, Array):
            c = empty((), compute, out._device)
            fill_complex(c, x)
            x = c
        elif x._dtype.kind != "c":
            x = _as_complex(x, compute)
        vals.append(view_as_real(x))
    cv = cond._view(cond._shape + (1,), cond._strides + (0,), cond._offset)
    rd = _dt.to_real(compute)
    _launch(ek.ternary_kernel, view_as_real(out), (cv, *vals), rd, ek.CT_F64 if rd is _dt.float64 else ek.CT_F32,
            OP=ek.TERNARY_CODES["where"])


# ------------------------------------------------------------------------------------- reductions, matmul
def reduce(op: str, out: Array, x: Array, axes) -> None:
    """sum / mean (the real reduction on the pair views) and prod (the complex product kernel) of complex ``x``
    over ``axes`` into ``out`` (the kept shape; any complex dtype: the compute's precision is ``out``'s)."""
    from .reduction import _acc, _count, _reduce

    if op in ("sum", "mean"):
        ro = view_as_real(out)
        acc = _acc(_dt.to_real(out._dtype))
        scal = float(_count(x._shape, axes)) if op == "mean" else 0.0
        _reduce(op, ro, view_as_real(x), tuple(axes), acc, scal=scal)
        return
    if op != "prod":
        raise NotImplementedError(f"{op}: {x._dtype} on cuda is not implemented (got shape {x._shape}); hint: "
                                  f"compute on cpu with .to('cpu')")
    x = _as_complex(x, out._dtype)
    kept = [i for i in range(len(x._shape)) if i not in axes]
    m = 1
    for i in kept:
        m *= x._shape[i]
    r = 1
    for i in axes:
        r *= x._shape[i]
    rows = x.permute_dims(tuple(kept) + tuple(axes)).reshape((m, r))
    dst = out if out.is_contiguous() else empty(out._shape, out._dtype, out._device)
    cp.prod_rows(view_as_real(dst.reshape((m,))), view_as_real(rows))
    if dst is not out:
        copy_complex(out, dst)


def cumulative_prod(out: Array, x: Array, axis: int, include_initial: bool) -> None:
    """The running complex products along ``axis`` (the complex scan kernel on rows; the scanned axis moved last,
    the result written through a contiguous (M, L) temporary)."""
    x = _as_complex(x, out._dtype)
    nd = len(x._shape)
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    xm = x.permute_dims(perm)
    m = 1
    for s in xm._shape[:-1]:
        m *= s
    rows = xm.reshape((m, xm._shape[-1]))
    om = out.permute_dims(perm)
    tmp = empty(om._shape, out._dtype, out._device)
    cp.cumprod_rows(view_as_real(tmp.reshape((m, om._shape[-1]))), view_as_real(rows), include_initial)
    copy_complex(om, tmp)


def matmul(out: Array, x1: Array, x2: Array) -> None:
    """Complex ``out = x1 @ x2`` (real operands made complex first; ``out`` written through a contiguous
    temporary when it is strided)."""
    a = _as_complex(x1, out._dtype) if x1._dtype.kind != "c" else x1
    b = _as_complex(x2, out._dtype) if x2._dtype.kind != "c" else x2
    dst = out if out.is_contiguous() else empty(out._shape, out._dtype, out._device)
    cp.matmul_pairs(view_as_real(dst), view_as_real(a), view_as_real(b))
    if dst is not out:
        copy_complex(out, dst)


def _conj(out: Array, x: Array) -> None:
    unary("conj", out, x)


register("conj", "triton")(_into_contiguous(_conj))


CUDA_COMPLEX_OPS.update({"astype", "copy_", "diag_embed", "fill", "setitem", "conj", "where", "sum", "prod", "mean",
                         "matmul", "tensordot", "outer",  # (both the complex matmul: tkernels/products.py)
                         "cumulative_sum", "cumulative_prod", "vecdot",
                         "positive", *_LOGICAL, *ck.CUNARY_CODES, *ck.CBINARY_CODES})
