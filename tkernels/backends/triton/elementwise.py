"""Elementwise ops on cuda: the unary, binary and ternary kernel families of ``tkernels/kernels/elementwise.py``.

Backend signatures are those of the NumPy backend: unary ``impl(out, x, compute, **params)``, binary
``impl(out, x1, x2, compute)`` (x1/x2 may be Python scalars), ``where(out, cond, x1, x2, compute)``,
``clip(out, x, lo, hi, compute)``, ``lerp(out, start, end, weight, compute)``.

Python scalar operands become kernel arguments in the compute dtype: integers wrapped to its range (as the
NumPy backend casts them), floats as fp32, or as int64 bit patterns when computing in float64. Integer
division by a zero *scalar* and integer ``pow`` with a negative *scalar* exponent raise at the op like the NumPy
backend; a zero or negative element of an array operand is recorded by the kernel in the device's error buffer
(``tkernels/cuda/device_errors.py``: the same exception at the next synchronising call) and the element gets
PyTorch's CUDA value (0 for ``x // 0`` and ``x % 0``; 0, or ±1 for bases ±1, for negative powers).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import lookup, register
from ...elementwise import _HALF, BINARY, UNARY, half_common
from ...kernels import elementwise as ek
from ...validation import integer_division_by_zero, negative_integer_power
from ._launch import ELEMENTWISE_BLOCK, collapse, error_buffer, f64_bits, grid1d, launch
from .memory import copy_, empty

CT = {d: ek.CT_I32 for d in _dt.all_dtypes}
CT.update({_dt.float16: ek.CT_F32, _dt.bfloat16: ek.CT_F32, _dt.float32: ek.CT_F32, _dt.float64: ek.CT_F64,
           _dt.int64: ek.CT_I64, _dt.uint32: ek.CT_U32, _dt.uint64: ek.CT_U64})
_FINITE = {d: (float(ml_dtypes.finfo(d.numpy).max), float(ml_dtypes.finfo(d.numpy).min))
           for d in (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)}
_BOOL = _dt.bool


def _run(kernel, grid, *args, **meta):
    return launch(kernel, grid, *args, **meta)  # (looked up at call time: tests record launches through it)


def _scalar_arg(v, cd: _dt.DType, ct: int):
    """A Python scalar as the kernel receives it in compute dtype ``cd``."""
    if ct == ek.CT_F64:
        return f64_bits(float(v))
    if ct == ek.CT_F32:
        return float(v)
    if cd is _BOOL:
        return int(bool(v))
    v = int(v)
    bits = cd.itemsize * 8
    if ct == ek.CT_U64:  # the int64 bit pattern (see _scalar_param)
        v &= (1 << 64) - 1
        return v - (1 << 64) if v >= 1 << 63 else v
    if cd.kind == "u":
        return v & ((1 << bits) - 1)
    half = 1 << (bits - 1)
    return v if -half <= v < half else ((v + half) & ((1 << bits) - 1)) - half


def _bstrides(x: Array, shape: tuple) -> tuple:
    """Strides of ``x`` broadcast to ``shape`` (0 in the broadcast dimensions)."""
    xs = x._shape
    if xs == shape:
        return x._strides
    lead = len(shape) - len(xs)
    return (0,) * lead + tuple(0 if s == 1 and t != 1 else st for s, t, st in zip(xs, shape[lead:], x._strides))


def _narrowed(x, cd: _dt.DType):
    """An integer operand the compute dtype cannot hold (a 0-d array in PyTorch promotion: int8[n] + int64 0-d
    computes in int8; uint8[n] // int8 0-d in uint8, -3 as 253) wraps to it first, as the NumPy backend casts
    it."""
    if (isinstance(x, Array) and x._dtype is not cd and cd.kind in "iu" and x._dtype.kind in "iu"
            and not np.can_cast(x._dtype.numpy, cd.numpy, "safe")):
        return x.astype(cd)
    return x


def _launch(kernel, out: Array, operands, cd: _dt.DType, ct: int, err=(), **meta) -> None:
    """Launch ``kernel`` over ``out`` (contiguous) with Array or Python-scalar ``operands``; the contiguous
    path (no index arithmetic) serves whenever every Array operand is contiguous in ``out``'s shape. ``err``:
    ``(error buffer,)`` for a kernel that records errors (the binary one)."""
    shape = out._shape
    n = out.size
    ptrs, scalars, strides, flags = [], [], [], []
    contiguous = True
    for x in operands:
        if isinstance(x, Array):
            ptrs.append(x)
            scalars.append(0)
            strides.append(_bstrides(x, shape))
            flags.append(False)
            contiguous = contiguous and x._shape == shape and x.is_contiguous()
        else:
            ptrs.append(out)  # placeholder pointer, never read
            scalars.append(_scalar_arg(x, cd, ct))
            strides.append((0,) * len(shape))
            flags.append(True)
    if contiguous:
        sizes, strides = [1] * 6, [[0] * 6 for _ in operands]
    else:
        sizes, strides = collapse(shape, *strides)
    names = ("A_SCALAR", "B_SCALAR", "C_SCALAR")
    _run(kernel, grid1d(n, ELEMENTWISE_BLOCK), *ptrs, out, *err, *scalars, n, *sizes[1:],
         *(s for st in strides for s in st),
         CT=ct, **dict(zip(names, flags)), CONTIGUOUS=contiguous, BOOL_OUT=out._dtype is _BOOL, BLOCK=ELEMENTWISE_BLOCK,
         **meta)


def _overlaps(out: Array, args) -> bool:
    """An operand shares memory with ``out`` other than element for element (``x.add_(x.mT)``, ``x.add_(x[:1])``):
    programs would read elements that others already wrote."""
    for a in args:
        if isinstance(a, Array) and a._storage is out._storage and (
                a._offset != out._offset or a._strides != out._strides or a._shape != out._shape):
            return True
    return False


def _into_contiguous(impl):
    """The kernels write contiguously: a strided ``out`` (``out=`` a view), or one that overlaps an operand
    otherwise than element for element, is computed into a temporary and copied."""
    def run(out, *args, **kw):
        if out.size == 0:
            return
        if not out.is_contiguous() or _overlaps(out, args):
            tmp = empty(out.shape, out.dtype, out.device)
            impl(tmp, *args, **kw)
            copy_(out, tmp)
            return
        impl(out, *args, **kw)

    run.__name__ = impl.__name__
    return run


# ---------------------------------------------------------------------------------------------- unary
_INT_IDENTITY = {"floor", "ceil", "trunc", "round", "nan_to_num"}


def _unary_code_params(name, out, ct, params):
    """(op code, p0, p1, p2) for unary op ``name`` with the entry's keyword parameters."""
    code = ek.UNARY_CODES[name]
    p = (0.0, 0.0, 0.0)
    if name == "round" and params.get("decimals", 0):
        d = params["decimals"]
        code = ek.UNARY_CODES["round_scaled_up" if d > 0 else "round_scaled_down"]
        p = (10.0 ** abs(d), 0.0, 0.0)
    elif name == "gelu" and params.get("approximate", "none") == "tanh":
        code = ek.UNARY_CODES["gelu_tanh"]
    elif name == "softplus":
        p = (params.get("beta", 1.0), params.get("threshold", 20.0), 0.0)
    elif name == "elu":
        p = (params.get("alpha", 1.0), 0.0, 0.0)
    elif name == "leaky_relu":
        p = (params.get("negative_slope", 0.01), 0.0, 0.0)
    elif name == "logit" and params.get("eps") is not None:
        code = ek.UNARY_CODES["logit_eps"]
        p = (params["eps"], 1.0 - params["eps"], 0.0)
    elif name == "polygamma":
        p = (float(params["n"]), 0.0, 0.0)
    elif name == "nan_to_num":
        hi, lo = _FINITE[out._dtype]
        posinf, neginf = params.get("posinf"), params.get("neginf")
        p = (float(params.get("nan", 0.0)), hi if posinf is None else float(posinf),
             lo if neginf is None else float(neginf))
    if ct == ek.CT_F64:
        return code, *(f64_bits(v) if v else 0 for v in p)
    return code, *(float(v) for v in p)


def _make_unary(name):
    code0 = ek.UNARY_CODES[name]
    kind = UNARY[name]
    simple = name not in ("round", "gelu", "softplus", "elu", "leaky_relu", "logit", "nan_to_num", "polygamma")
    identity = name == "positive"

    def impl(out: Array, x: Array, compute, **params) -> None:
        xd = x._dtype
        if xd.kind == "c":
            _cx.unary(name, out, x)
            return
        if identity or name in _INT_IDENTITY and xd.kind != "f":
            copy_(out, x)  # positive; rounding and nan_to_num are the identity on integers
            return
        # predicates take the input's compute type (compute is bool for logical_not)
        ct = CT[xd] if kind in ("pred", "lnot") else CT[compute]
        if simple:
            code, p0, p1, p2 = code0, 0.0, 0.0, 0.0
            if ct == ek.CT_F64:
                p0 = p1 = p2 = 0
            if name == "bitwise_invert" and xd is _BOOL:
                code = ek.UNARY_CODES["logical_not"]
        else:
            code, p0, p1, p2 = _unary_code_params(name, out, ct, params)
        n = out.size
        if x._shape == out._shape and x.is_contiguous():
            contiguous, sizes, st = True, [1] * 6, [0] * 6
        else:
            contiguous = False
            sizes, (st,) = collapse(out._shape, _bstrides(x, out._shape))
        _run(ek.unary_kernel, grid1d(n, ELEMENTWISE_BLOCK), x, out, p0, p1, p2, n, *sizes[1:], *st,
               OP=code, CT=ct, CONTIGUOUS=contiguous, BOOL_OUT=out._dtype is _BOOL, BLOCK=ELEMENTWISE_BLOCK)

    impl.__name__ = f"triton_{name}"
    return _into_contiguous(impl)


# --------------------------------------------------------------------------------------------- binary
def _complex_operand(x1, x2) -> bool:
    return any(isinstance(x, Array) and x._dtype.kind == "c" for x in (x1, x2))


def _rounded(x, od: _dt.DType):
    """An operand of a binary op with a half result ``od``, cast to ``od`` before the float32 arithmetic, as type
    promotion says and the NumPy backend does (int32 70000 -> float16 inf; ``fmod(h, 0.001)`` divides by float16's
    0.0010004)."""
    if isinstance(x, Array):
        return x if x._dtype is od else x.astype(od)
    with np.errstate(over="ignore"):
        return float(np.asarray(x).astype(od.numpy).astype(np.float32))


def _make_binary(name):
    code = ek.BINARY_CODES[name]
    logical = name in ("logical_and", "logical_or", "logical_xor")
    is_pow = name == "pow"
    int_div = name in ("floor_divide", "remainder", "fmod", "trunc_divide")
    is_cmp = BINARY[name] in ("cmp", "logic")
    is_order = BINARY[name] == "cmp"

    def impl(out: Array, x1, x2, compute) -> None:
        if compute.kind == "c" or logical and _complex_operand(x1, x2):
            _cx.binary(name, out, x1, x2, compute)
            return
        if logical:  # operands enter as (x != 0): scalars are made 0/1 here, arrays in the kernel
            ct, cd = ek.CT_I32, _BOOL
        else:
            ct, cd = CT[compute], compute
            if ct >= ek.CT_I32:
                # a scalar on the host is checked before the launch, as the NumPy backend checks; a zero or
                # negative value inside an array is recorded by the kernel (checking it here would need a sync)
                if not isinstance(x2, Array) and cd.kind in "iu":
                    if is_pow and x2 < 0:
                        raise negative_integer_power("pow", x1, x2)
                    if int_div and x2 == 0:
                        raise integer_division_by_zero(name, x1, x2)
                x1, x2 = _narrowed(x1, cd), _narrowed(x2, cd)
            elif not is_cmp and out._dtype in _HALF:
                x1, x2 = _rounded(x1, out._dtype), _rounded(x2, out._dtype)
            elif is_order and (hd := half_common(x1, x2)) is not None:  # a comparison in a half dtype
                x1, x2 = _rounded(x1, hd), _rounded(x2, hd)
        _launch(ek.binary_kernel, out, (x1, x2), cd, ct, (error_buffer(out._device),), OP=code)

    impl.__name__ = f"triton_{name}"
    return _into_contiguous(impl)


# -------------------------------------------------------------------------------------------- ternary
def _where(out, cond, x1, x2, compute):
    if compute.kind == "c":
        _cx.where(out, cond, x1, x2, compute)
        return
    ct = CT[compute]
    if ct >= ek.CT_I32:
        x1, x2 = _narrowed(x1, compute), _narrowed(x2, compute)
    _launch(ek.ternary_kernel, out, (cond, x1, x2), compute, ct, OP=ek.TERNARY_CODES["where"])


def _clip(out, x, lo, hi, compute):
    if lo is None and hi is None:
        copy_(out, x)
        return
    ct = CT[compute]
    if ct >= ek.CT_I32:
        x, lo, hi = (_narrowed(v, compute) for v in (x, lo, hi))
    op = "clip" if lo is not None and hi is not None else ("clip_min" if hi is None else "clip_max")
    _launch(ek.ternary_kernel, out, (x, 0 if lo is None else lo, 0 if hi is None else hi), compute, ct,
            OP=ek.TERNARY_CODES[op])


def _lerp(out, start, end, weight, compute):
    _launch(ek.ternary_kernel, out, (start, end, weight), compute, CT[compute], OP=ek.TERNARY_CODES["lerp"])


from . import complex as _cx  # noqa: E402 - it uses _launch and _into_contiguous defined above

for _name in UNARY:
    register(_name, "triton")(_make_unary(_name))
for _name in ek.BINARY_CODES:
    register(_name, "triton")(_make_binary(_name))
register("where", "triton")(_into_contiguous(_where))
register("clip", "triton")(_into_contiguous(_clip))
register("lerp", "triton")(_into_contiguous(_lerp))
assert set(UNARY) <= set(ek.UNARY_CODES), set(UNARY) - set(ek.UNARY_CODES)


@register("threshold_backward", "triton")
def threshold_backward(out, grad, y, threshold, compute) -> None:
    """``where(y <= threshold, 0, grad)`` by the compare and where kernels (the threshold of a half dtype rounded
    to it first, as the comparison's promotion says)."""
    d = y._dtype
    if d is _dt.float16 or d is _dt.bfloat16:
        threshold = _dt.literal_scalar(threshold, d, "threshold_backward")
    dev = y._device
    mask = empty(y._shape, _dt.bool, dev)
    lookup("less_equal", dev)(mask, y, threshold, compute)
    lookup("where", dev)(out, mask, 0.0, grad, compute)
