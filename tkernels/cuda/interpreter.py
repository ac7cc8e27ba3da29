"""Interpreted cuda: what Triton's interpreter (``TRITON_INTERPRET=1``) needs to run our kernels on host memory.

The interpreter expects torch tensors: it asks each pointer argument for ``untyped_storage()``, copies that
storage to the host with ``.cpu()``, rebuilds a host tensor with ``new_empty(0).set_(storage, offset, size,
stride)``, reads ``data_ptr()`` as a host address, and copies the storage back with ``copy_``. Our cuda
arrays already live in host memory (the allocator's host backend), so ``KernelArg`` answers that protocol
with the same memory: ``.cpu()`` returns itself and ``copy_`` of a storage onto itself does nothing; kernels
run in place.

Interpreter defects are patched (``apply_fixes``), as measured in notes/triton-torch-free.md §3 and here:
bfloat16 arithmetic, ``tl.dot`` and casts from anything but fp32 operate on bit patterns, and fp32 -> bf16
truncates (we compute in fp32 and round to nearest even with ml_dtypes, like the GPU); Triton 3.6 with
NumPy >= 2.4 fails ``range(0, K, BK)`` with a runtime ``K`` (``__index__`` of a 1-element array); Triton 3.6's
interpreter builder has no ``get_bf16`` (a non-zero bfloat16 constant fails), and a Python float argument
(the interpreter keeps it a Python number) equal to 0 becomes +0.0 (its ``scalar_constant`` maps any 0 to the
null value): -0.0 arrives as an fp32 tensor instead, as a GPU receives it. And its argument specializer
(``mangle_type``) imports torch on first use when torch is installed, as on the real-driver path: it is primed
once with the import blocked (``triton_driver.prime_specializer_without_torch``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["KernelArg", "apply_fixes"]


class _HostStorage:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def data_ptr(self) -> int:
        return self.ptr

    def cpu(self):
        return self

    def copy_(self, other):
        if other.data_ptr() != self.ptr:  # never happens for our in-place storages; kept for the protocol
            raise RuntimeError("interpreted cuda: storages must be updated in place")
        return self


class KernelArg:
    """A cuda Array as the interpreter sees it: host address, dtype (``str()`` is the plain name), metadata."""

    __slots__ = ("dtype", "_storage", "_offset", "_shape", "_strides")

    def __init__(self, array=None):
        if array is not None:
            self.dtype = array._dtype
            self._storage = _HostStorage(array._storage.data.ptr)
            self._offset = array._offset
            self._shape = array._shape
            self._strides = array._strides

    def data_ptr(self) -> int:
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def untyped_storage(self):
        return self._storage

    def storage_offset(self) -> int:
        return self._offset

    def size(self, dim=None):
        return self._shape if dim is None else self._shape[dim]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def new_empty(self, *args, **kwargs):
        out = KernelArg()
        out.dtype = self.dtype
        return out

    def set_(self, storage, offset, size, stride):
        self._storage = storage
        self._offset = offset
        self._shape = tuple(size)
        self._strides = tuple(stride)
        return self

    def element_size(self) -> int:
        return self.dtype.itemsize


_applied = False


def apply_fixes() -> None:
    """Patch the interpreter defects above and block its torch import (idempotent)."""
    global _applied
    if _applied:
        return
    _applied = True
    import triton.language as tl
    from triton.runtime import interpreter as interp

    from .triton_driver import prime_specializer_without_torch

    # 0. the interpreter specializes every argument through mangle_type: 3.6 imports torch there
    prime_specializer_without_torch()

    # 1. Triton 3.6 + NumPy >= 2.4: __index__ of a 1-element tensor (3.9 squeezes already; harmless there)
    orig_patch_tensor = interp._patch_lang_tensor

    def _patch_lang_tensor(tensor, scope):
        orig_patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    interp._patch_lang_tensor = _patch_lang_tensor

    # 2. bf16: the interpreter stores bf16 as raw uint16, so arithmetic, tl.dot and casts from anything but
    #    fp32 work on bit patterns, and its fp32 -> bf16 cast truncates. Compute in fp32 and convert with
    #    ml_dtypes, which rounds to nearest even like the GPU.
    import ml_dtypes

    bf16_np = np.dtype(ml_dtypes.bfloat16)

    def values(h):
        return h.data.view(bf16_np) if h.dtype.scalar == tl.bfloat16 else h.data

    def to_bf16_bits(v):
        return np.asarray(v).astype(np.float32).astype(bf16_np).view(np.uint16)

    def up(h):
        if h.dtype.scalar == tl.bfloat16:
            return interp.TensorHandle(values(h).astype(np.float32), tl.float32)
        return h

    def down(h):
        return interp.TensorHandle(to_bf16_bits(h.data), tl.bfloat16)

    builder = interp.InterpreterBuilder
    orig_cast = builder.cast_impl
    orig_fp_to_fp = builder.create_fp_to_fp

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.bfloat16 or dst_type.scalar == tl.bfloat16:
            v = values(src)
            if dst_type.scalar == tl.bfloat16:
                return interp.TensorHandle(to_bf16_bits(v), tl.bfloat16)
            return interp.TensorHandle(v.astype(np.float32).astype(interp._get_np_dtype(dst_type)), dst_type.scalar)
        return orig_cast(self, src, dst_type)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if src.dtype.scalar == tl.bfloat16 or dst_type.scalar == tl.bfloat16:
            return cast_impl(self, src, dst_type)
        return orig_fp_to_fp(self, src, dst_type, rounding_mode)

    builder.cast_impl = cast_impl
    builder.create_fp_to_fp = create_fp_to_fp
    # 3. Triton 3.6: a -0.0 float argument would become +0.0 (harmless elsewhere: the GPU gets an fp32 too)
    orig_cvt = interp._implicit_cvt

    def _implicit_cvt(arg):
        if arg.__class__ is float and arg == 0.0 and math.copysign(1.0, arg) < 0:
            return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return orig_cvt(arg)

    interp._implicit_cvt = _implicit_cvt
    if not hasattr(builder, "get_bf16"):  # Triton 3.6: bfloat16 constants (3.7+ has it, rounding like ours)
        builder.get_bf16 = lambda self, value: interp.TensorHandle(to_bf16_bits(np.float32(value)).reshape(1),
                                                                   tl.bfloat16)
    for name in ("create_si_to_fp", "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui", "create_fp_ext",
                 "create_fp_trunc"):
        setattr(builder, name, lambda self, src, dst_type, *rest: self.cast_impl(src, dst_type))

    orig_dot = builder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return orig_dot(self, up(a), up(b), d, input_precision, max_num_imprecise_acc)

    builder.create_dot = create_dot
    orig_binary = builder.binary_op
    arith = {np.add, np.subtract, np.multiply, np.divide, np.fmod, np.minimum, np.maximum, np.fmin, np.fmax}

    def binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar == tl.bfloat16 and rhs.dtype.scalar == tl.bfloat16:
            out = orig_binary(self, up(lhs), up(rhs), op)
            return down(out) if op in arith else out
        return orig_binary(self, lhs, rhs, op)

    builder.binary_op = binary_op
