"""The CUDA runtime layer: devices, streams, events, the caching allocator and torch-free Triton launches.

Only discovery lives here so far; device memory and kernels plug into the dispatcher as the runtime lands.
"""

from __future__ import annotations

import os

__all__ = ["is_available", "is_interpreted", "device_count", "current_device"]


def is_interpreted() -> bool:
    """True when ``TKERNELS_INTERPRET=1`` was set before import (cuda arrays on host memory, Triton's
    interpreter for kernels)."""
    return os.environ.get("TKERNELS_INTERPRET") == "1"


def is_available() -> bool:
    """Whether cuda arrays can be made in this process (no runtime backend is wired yet: False)."""
    return False


def device_count() -> int:
    return 0


def current_device() -> int:
    raise RuntimeError("cuda: no CUDA device is available in this process (tkernels.cuda.is_available() is "
                       "False); hint: use device='cpu'")
