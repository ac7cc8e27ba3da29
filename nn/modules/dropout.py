"""``nn.modules.dropout``: PyTorch's module path for the dropout layers (defined in ``misc.py``)."""

from .misc import Dropout, Dropout1d, Dropout2d, Dropout3d

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]
