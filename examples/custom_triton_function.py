"""Extending the framework with your own GPU kernel: a Triton kernel wrapped in an ``autograd.Function``.

The extension story, in three steps:

1. **Write the kernels** with ``@triton.jit``, like the Triton tutorials: one program handles ``BLOCK``
   elements, loads are masked, arithmetic is done in fp32 (fp64 for float64 inputs) and cast back on store.
   Here: the forward of the "scaled SiLU" ``y = x * sigmoid(alpha * x)`` and its backward
   ``dx = dy * (s + alpha * x * s * (1 - s))`` with ``s = sigmoid(alpha * x)``, each fused in one pass.
2. **Launch them on tkernels arrays**. A cuda tensor's data is a ``tkernels`` Array (``tensor._data``) in
   memory from our caching allocator; ``launch(kernel, grid, *args)`` passes Arrays as pointer arguments and
   runs the kernel on the array's device and current stream, torch-free. With ``TKERNELS_INTERPRET=1`` (set
   before importing anything) cuda arrays live in host memory and the same kernels run in Triton's
   interpreter, so this file also runs, and is tested, on machines without a GPU.
3. **Wrap them in an ``autograd.Function``**: ``forward`` saves what ``backward`` needs and calls the
   forward kernel; ``backward`` calls the backward kernel. ``alpha`` is a plain Python number: its
   gradient is ``None``. The backward calls a kernel rather than differentiable ops, so it is marked
   ``@once_differentiable``: differentiating it a second time raises a clear error instead of returning a
   silently wrong answer. cpu tensors take a NumPy path (a kernel needs GPU memory, or the interpreter).

Then ``scaled_silu(x, alpha)`` is used like any other op: gradients flow through it, ``gradcheck`` checks it.

Run ``python examples/custom_triton_function.py`` (on cuda when available, else cpu; prefix
``TKERNELS_INTERPRET=1`` to run the kernels interpreted): it compares the Function with the same formula
composed from autograd ops, forward and gradient.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run from a checkout: make the repository's packages importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("TKERNELS_INTERPRET") == "1":  # @triton.jit reads this when the kernels below are defined
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import autograd as ag  # noqa: E402
import tkernels as tk  # noqa: E402
from autograd.function import Function, once_differentiable  # noqa: E402


# ------------------------------------------------------------------------------------------ 1. kernels
@triton.jit
def _scaled_silu_fwd_kernel(x_ptr, y_ptr, n, alpha, F64: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # 64-bit offsets: n may pass 2**31
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    x = x.to(tl.float64) if F64 else x.to(tl.float32)  # fp16/bf16 are computed in fp32
    s = 1.0 / (1.0 + tl.exp(-alpha * x))
    tl.store(y_ptr + offs, (x * s).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _scaled_silu_bwd_kernel(x_ptr, dy_ptr, dx_ptr, n, alpha, F64: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0)
    x = x.to(tl.float64) if F64 else x.to(tl.float32)
    dy = dy.to(tl.float64) if F64 else dy.to(tl.float32)
    s = 1.0 / (1.0 + tl.exp(-alpha * x))
    dx = dy * (s + alpha * x * s * (1.0 - s))  # d/dx [x * sigmoid(alpha x)], recomputing s (nothing saved)
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------------------------------ 2. launch
def _launch(kernel, arrays, out_like, alpha):
    """Run ``kernel(*arrays, out, n, alpha)`` over contiguous cuda Arrays; returns ``out`` (a new Array)."""
    from tkernels.backends.triton._launch import ELEMENTWISE_BLOCK, grid1d, launch

    out = tk.empty(out_like.shape, dtype=out_like.dtype, device=out_like.device)
    n = out.size
    if n:
        launch(kernel, grid1d(n, ELEMENTWISE_BLOCK), *arrays, out, n, float(alpha),
               F64=out.dtype == tk.float64, BLOCK=ELEMENTWISE_BLOCK)
    return out


def _sigmoid_np(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow warning for large |z|


def scaled_silu_forward(x: ag.Tensor, alpha: float) -> ag.Tensor:
    """y = x * sigmoid(alpha * x), no graph (the kernel on cuda, NumPy on cpu)."""
    if x.device.type == "cuda":
        a = x.contiguous()._data  # the kernel indexes elements contiguously
        return ag.Tensor(_launch(_scaled_silu_fwd_kernel, (a,), a, alpha))
    xn = x.detach().numpy()
    return ag.from_numpy((xn * _sigmoid_np(alpha * xn)).astype(xn.dtype, copy=False))


def scaled_silu_backward(x: ag.Tensor, grad_y: ag.Tensor, alpha: float) -> ag.Tensor:
    """dL/dx given dL/dy, no graph."""
    if x.device.type == "cuda":
        a, g = x.contiguous()._data, grad_y.to(x.dtype).contiguous()._data
        return ag.Tensor(_launch(_scaled_silu_bwd_kernel, (a, g), a, alpha))
    xn, gn = x.detach().numpy(), grad_y.detach().numpy()
    s = _sigmoid_np(alpha * xn)
    return ag.from_numpy((gn * (s + alpha * xn * s * (1.0 - s))).astype(xn.dtype, copy=False))


# ------------------------------------------------------------------------------------------ 3. Function
class ScaledSiLU(Function):
    """``x * sigmoid(alpha * x)`` with a fused Triton forward and backward; ``alpha`` is a Python number."""

    @staticmethod
    def forward(ctx, x, alpha=1.0):
        ctx.alpha = float(alpha)
        ctx.save_for_backward(x)  # the input only: backward recomputes the sigmoid (cheaper than storing it)
        return scaled_silu_forward(x, ctx.alpha)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        grad_x = scaled_silu_backward(x, grad_y, ctx.alpha) if ctx.needs_input_grad[0] else None
        return grad_x, None  # one value per forward argument: alpha is not a tensor


def scaled_silu(x: ag.Tensor, alpha: float = 1.0) -> ag.Tensor:
    """``x * sigmoid(alpha * x)`` (SiLU for ``alpha=1``, close to GELU for ``alpha=1.702``)."""
    return ScaledSiLU.apply(x, alpha)


def scaled_silu_composite(x: ag.Tensor, alpha: float = 1.0) -> ag.Tensor:
    """The same function built from autograd ops: the reference the Function is checked against."""
    return x * ag.sigmoid(alpha * x)


def main():
    dev = "cuda" if ag.cuda.is_available() else "cpu"
    mode = " (interpreted)" if dev == "cuda" and ag.cuda.is_interpreted() else ""
    ag.manual_seed(0)
    alpha = 1.702
    x = ag.randn(37, 129).to(dev).requires_grad_()  # drawn on the cpu: the same numbers on every device
    g = ag.randn(37, 129).to(dev)

    y = scaled_silu(x, alpha)
    (dx,) = ag.grad(y, x, grad_outputs=g)
    y_ref = scaled_silu_composite(x, alpha)
    (dx_ref,) = ag.grad(y_ref, x, grad_outputs=g)

    fwd_err = float(np.abs(y.detach().cpu().numpy() - y_ref.detach().cpu().numpy()).max())
    bwd_err = float(np.abs(dx.cpu().numpy() - dx_ref.cpu().numpy()).max())
    print(f"device: {dev}{mode}; y = x * sigmoid({alpha} x) on {list(x.shape)}, grad_fn={y.grad_fn.name()}")
    print(f"max |forward - composite|  = {fwd_err:.3e}")
    print(f"max |gradient - composite| = {bwd_err:.3e}")
    ok = fwd_err < 1e-5 and bwd_err < 1e-5
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
