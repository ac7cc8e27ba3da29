"""``ChannelShuffle`` (PyTorch's path ``nn.modules.channelshuffle``)."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the channels of ``(N, C, *)`` in ``groups`` and interleaves them (ShuffleNet)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
