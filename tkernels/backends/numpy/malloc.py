"""The host allocator's policy for cpu arrays (glibc).

NumPy takes array memory from ``malloc``. glibc serves blocks above its mmap threshold (128 KiB at start) with a
fresh ``mmap`` each, and gives the top of the heap back to the kernel whenever more than its trim threshold
(256 KiB at start) is free there. Both thresholds rise on their own once the process frees a large enough
mmapped block, so whether a training step's arrays of a few hundred KiB are recycled in place or mapped,
page-faulted and unmapped on every step depends on what the process happened to free before: measured on the
small MLP step (arrays of 128 KiB), 0 or 80-96 page faults per step (+300 µs of kernel time on a 500 µs step)
for the same code in two processes whose imports differed.

So the cpu backend, when it loads, fixes the thresholds where a long-running training process ends up anyway:
blocks up to 16 MiB come from the heap, and up to 64 MiB of free heap top is kept for reuse (like the caching
allocator on cuda, memory freed by one step serves the next). ``TKERNELS_MALLOC_TUNING=0`` leaves glibc's
defaults; glibc settings the user made (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
``GLIBC_TUNABLES=glibc.malloc...``) are left alone. Other C libraries are not touched. ``STATUS`` says what was
done (the bench prints it).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["STATUS", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 16 << 20
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_USER_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

STATUS = "not applied"


def _tune() -> str:
    if os.environ.get("TKERNELS_MALLOC_TUNING", "1").strip() == "0":
        return "glibc defaults (TKERNELS_MALLOC_TUNING=0)"
    if any(os.environ.get(v) for v in _USER_VARS) or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return "left to the user's glibc malloc settings"
    if not sys.platform.startswith("linux"):
        return f"not glibc ({sys.platform}): allocator defaults"
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "not glibc: allocator defaults"
    version.restype = ctypes.c_char_p
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1 or mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return "mallopt refused: allocator defaults"
    return (f"glibc {version().decode()}: mmap threshold {MMAP_THRESHOLD >> 20} MiB, trim threshold "
            f"{TRIM_THRESHOLD >> 20} MiB (TKERNELS_MALLOC_TUNING=0: glibc defaults)")


STATUS = _tune()
