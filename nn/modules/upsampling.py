"""``UpsamplingNearest2d`` and ``UpsamplingBilinear2d`` (PyTorch's path ``nn.modules.upsampling``, which also
holds ``Upsample``)."""

from __future__ import annotations

from .misc import Upsample

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling of ``(N, C, H, W)`` to ``size`` or by ``scale_factor``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True`` (PyTorch's choice for this module)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
