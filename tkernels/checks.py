"""``device_assert``: a check of values on their device that costs no host sync.

cpu raises at the call. On cuda a kernel records the first failing element in the device's error buffer
(``tkernels/cuda/device_errors.py``) and the exception is raised at the next synchronising call, like PyTorch's
device-side asserts but recoverable; with ``TKERNELS_SYNC_CHECKS=1`` the op itself raises.
"""

from __future__ import annotations

from .array import Array
from .cuda import device_errors as _errors
from .dispatch import lookup
from .validation import OpTypeError

__all__ = ["device_assert"]


def device_assert(ok: Array, op: str, kind: int, bound: int = 0) -> None:
    """Raise (cpu) or record (cuda) the error of ``kind`` (a ``device_errors`` kind) for ``op`` when an element of
    the bool array ``ok`` is False; the first such element's flat position is the value the message names."""
    if ok.dtype.kind != "b":
        raise OpTypeError(f"device_assert: ok must be a bool Array, got {ok.dtype}")
    if ok.size:
        lookup("device_assert", ok.device)(ok, _errors.site(op, kind), op, kind, int(bound))
