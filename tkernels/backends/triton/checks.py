"""``device_assert`` on cuda (``tkernels/checks.py``): ``assert_kernel`` records the first False element of a
bool array in the device's error buffer; nothing is read back here."""

from __future__ import annotations

from ...array import Array
from ...dispatch import register
from ...kernels.errors import assert_kernel
from ._launch import ELEMENTWISE_BLOCK, error_buffer, grid1d, launch


@register("device_assert", "triton")
def device_assert(ok: Array, site: int, op: str, kind: int, bound: int) -> None:
    ok = ok.contiguous()
    n = ok.size
    launch(assert_kernel, grid1d(n, ELEMENTWISE_BLOCK), ok, error_buffer(ok.device), n, site, bound,
           BLOCK=ELEMENTWISE_BLOCK)
