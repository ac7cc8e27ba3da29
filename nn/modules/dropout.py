"""``nn.modules.dropout``: PyTorch's module path for the dropout layers (``Dropout``...``Dropout3d`` are defined
in ``misc.py``); ``AlphaDropout`` and ``FeatureAlphaDropout`` here."""

from __future__ import annotations

from .. import functional as F
from .misc import Dropout, Dropout1d, Dropout2d, Dropout3d

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class AlphaDropout(Dropout):
    """Dropout that keeps SELU's zero mean and unit variance (``nn.functional.alpha_dropout``)."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels of ``(N, C, *)``."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
