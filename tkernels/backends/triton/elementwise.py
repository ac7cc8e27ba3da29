"""Elementwise ops on cuda through the binary kernel family (``tkernels/kernels/elementwise.py``)."""

from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels.elementwise import BINARY_CODES, binary_kernel
from ._launch import ELEMENTWISE_BLOCK, collapse, f64_bits, grid1d, launch
from .memory import copy_, empty

_HALF = (_dt.float16, _dt.bfloat16)


def _make_binary(name: str, code: int):
    def impl(out: Array, x1, x2, compute) -> None:
        n = out.size
        if n == 0:
            return
        if not out.is_contiguous():  # the kernel writes contiguously; in-place into a strided view goes via a temp
            tmp = empty(out.shape, out.dtype, out.device)
            impl(tmp, x1, x2, compute)
            copy_(out, tmp)
            return
        shape = out.shape
        f64 = out.dtype is _dt.float64
        args, strides, scal = [], [], []
        for x in (x1, x2):
            if isinstance(x, Array):
                xb = x.broadcast_to(shape) if x.shape != shape else x
                args.append(xb)
                strides.append(xb.stride())
                scal.append((0, False))
            else:
                args.append(out)  # placeholder pointer, never read
                strides.append((0,) * len(shape))
                v = f64_bits(float(x)) if f64 else (float(x) if out.dtype.kind == "f" else int(x))
                scal.append((v, True))
        contiguous = all(isinstance(x, Array) and x.is_contiguous() and x.shape == shape for x in (x1, x2))
        sizes, (sa, sb) = collapse(shape, *strides)
        launch(binary_kernel, grid1d(n, ELEMENTWISE_BLOCK), args[0], args[1], out, scal[0][0], scal[1][0], n,
               *sizes[1:], *sa, *sb, OP=code, A_SCALAR=scal[0][1], B_SCALAR=scal[1][1], F64_BITS=f64,
               CONTIGUOUS=contiguous, COMPUTE_F32=out.dtype in _HALF, BOOL_OUT=out.dtype is _dt.bool,
               BLOCK=ELEMENTWISE_BLOCK)

    impl.__name__ = f"triton_{name}"
    return impl


for _name, _code in BINARY_CODES.items():
    register(_name, "triton")(_make_binary(_name, _code))
