"""``standard_gamma_grad`` on cuda (``tkernels.ops.distributions``): one ``standard_gamma_grad_kernel`` launch."""

from __future__ import annotations

from ...array import Array
from ...dispatch import register
from ...kernels.gamma_grad import standard_gamma_grad_kernel
from ...ops.distributions import GAMMA_GRAD_ITERS
from ._launch import ELEMENTWISE_BLOCK, grid1d, launch

BLOCK = 256  # (a few hundred float64 registers' worth of loop state per lane: smaller blocks than elementwise)


@register("standard_gamma_grad", "triton")
def standard_gamma_grad(out: Array, a: Array, z: Array) -> None:
    block = ELEMENTWISE_BLOCK if ELEMENTWISE_BLOCK > 1024 else BLOCK  # (interpreted: big blocks are cheaper)
    launch(standard_gamma_grad_kernel, grid1d(a.size, block), a, z, out, a.size, ITERS=GAMMA_GRAD_ITERS,
           BLOCK=block)
