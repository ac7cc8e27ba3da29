"""Automatic mixed precision: ``autocast(device_type, dtype)`` regions run matmul, convolutions and attention
in the lower precision (bfloat16 or float16) and keep precision-sensitive ops (softmax, log_softmax, norms,
losses, reductions, exp/log) in float32, like PyTorch's autocast op lists. Ops call ``lower`` or ``fp32`` on
their tensor inputs; outside a region both return the inputs unchanged (one attribute check)."""

from __future__ import annotations

from tkernels import dtypes as _dt

from .grad_mode import STATE, _DecoratorContextManager

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "lower", "fp32"]

_DEFAULT = {"cuda": _dt.float16, "cpu": _dt.bfloat16}


class autocast(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """``with ag.autocast("cuda", dtype=ag.bfloat16): loss = model(x)`` — see the module docstring. Nested
    regions stack; ``enabled=False`` turns autocast off inside."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if device_type not in _DEFAULT:
            raise ValueError(f"autocast: device_type must be 'cuda' or 'cpu', got {device_type!r}")
        dtype = _DEFAULT[device_type] if dtype is None else _dt.as_dtype(dtype)
        if dtype not in (_dt.float16, _dt.bfloat16):
            raise ValueError(f"autocast: dtype must be float16 or bfloat16, got {dtype}")
        self.device_type = device_type
        self.fast_dtype = dtype
        self.enabled = enabled

    def __enter__(self):
        self.prev = STATE.autocast
        cur = dict(self.prev or {})
        if self.enabled:
            cur[self.device_type] = self.fast_dtype
        else:
            cur.pop(self.device_type, None)
        STATE.autocast = cur or None
        return self

    def __exit__(self, *exc):
        STATE.autocast = self.prev
        return False

    def clone(self):
        return type(self)(self.device_type, self.fast_dtype, self.enabled)


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    return bool(STATE.autocast) and device_type in STATE.autocast


def get_autocast_dtype(device_type: str):
    return (STATE.autocast or {}).get(device_type, _DEFAULT[device_type])


def lower(*tensors):
    """Inputs of a lower-precision op (matmul, conv, attention): floating tensors cast to the region's dtype."""
    ac = STATE.autocast
    if not ac:
        return tensors
    out = []
    for t in tensors:
        if t is not None and hasattr(t, "_data") and t._data.dtype.kind == "f":
            d = ac.get(t._data.device.type)
            if d is not None and t._data.dtype != d:
                t = t.to(dtype=d)
        out.append(t)
    return tuple(out)


def fp32(*tensors):
    """Inputs of a precision-sensitive op: float16/bfloat16 tensors cast to float32 inside a region."""
    ac = STATE.autocast
    if not ac:
        return tensors
    out = []
    for t in tensors:
        if t is not None and hasattr(t, "_data") and t._data.dtype in (_dt.float16, _dt.bfloat16) and \
                t._data.device.type in ac:
            t = t.to(dtype=_dt.float32)
        out.append(t)
    return tuple(out)
