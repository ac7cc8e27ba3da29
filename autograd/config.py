"""Process-wide switches with PyTorch's names: cpu threads, float32 matmul precision, deterministic algorithms,
print options and memory formats (``torch.set_num_threads``, ``torch.set_float32_matmul_precision``...)."""

from __future__ import annotations

import sys

import tkernels as tk
import tkernels.backends.matmul as _matmul_flags
from tkernels.validation import OpTypeError, OpValueError

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_printoptions", "memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format"]

set_num_threads = tk.set_num_threads
get_num_threads = tk.get_num_threads
_interop = [1]


def set_num_interop_threads(n: int) -> None:
    """Accepted for PyTorch programs: ops run one at a time on the calling thread (no inter-op pool)."""
    if not isinstance(n, int) or n < 1:
        raise OpValueError(f"set_num_interop_threads: expected a positive int, got {n!r}")
    _interop[0] = n


def get_num_interop_threads() -> int:
    return _interop[0]


_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """"highest": float32 matrix products in IEEE float32 (the default); "high" and "medium": TF32 on cuda tensor
    cores (``tkernels.backends.matmul.allow_tf32``). The cpu computes float32 in IEEE either way."""
    if precision not in _PRECISIONS:
        raise OpValueError(f"set_float32_matmul_precision: expected one of {', '.join(map(repr, _PRECISIONS))}, "
                           f"got {precision!r}")
    _matmul_flags.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    return "high" if _matmul_flags.allow_tf32 else "highest"


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded for PyTorch programs. Every cpu op is deterministic; on cuda, float sums that use atomics
    (embedding and index_add/scatter_add backward, the fused norm's weight gradient) can differ in the last bits
    between runs, and this switch does not replace them."""
    if not isinstance(mode, bool):
        raise OpTypeError(f"use_deterministic_algorithms: mode must be a bool, got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """How tensors print (``torch.set_printoptions``): digits after the point, how many elements print before
    summarizing, how many per edge then, the line width, a ``profile`` ("default", "short", "full") setting all
    four, and ``sci_mode`` (True/False forces scientific notation on or off, None chooses per tensor)."""
    t = sys.modules["autograd.tensor"]  # (the module: ``autograd.tensor`` is the factory function)

    if profile is not None:
        if profile not in _PROFILES:
            raise OpValueError(f"set_printoptions: profile must be one of {', '.join(_PROFILES)}, got {profile!r}")
        p = _PROFILES[profile]
        t._PRECISION, t._THRESHOLD, t._EDGEITEMS, t._LINEWIDTH = (p["precision"], p["threshold"], p["edgeitems"],
                                                                  p["linewidth"])
    for name, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                    ("linewidth", linewidth)):
        if v is not None:
            if not isinstance(v, (int, float)) or v < 0:
                raise OpValueError(f"set_printoptions: {name} must be a non-negative number, got {v!r}")
            setattr(t, f"_{name.upper()}", v)
    t._SCI_MODE = sci_mode if sci_mode is None else bool(sci_mode)


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory format (``autograd.contiguous_format``, ``channels_last``...): accepted where PyTorch takes
    ``memory_format=``; tensors here are laid out row-major (contiguous) whatever it says."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"autograd.{self._name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
