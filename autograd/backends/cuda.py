"""``autograd.backends.cuda``: PyTorch's cuBLAS and attention switches. ``matmul.allow_tf32`` is our matmul
kernels' switch (``tkernels.backends.matmul.allow_tf32``: TF32 tensor cores for float32 products); the others
are accepted with no effect (there is no cuBLAS; attention is our Triton kernel). ``is_built()`` says whether
cuda can be used at all."""

import tkernels.backends.matmul as _flags
import tkernels.cuda as _cuda


class _Matmul:
    @property
    def allow_tf32(self) -> bool:
        return _flags.allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _flags.allow_tf32 = bool(value)

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    return _cuda.is_available()


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)
