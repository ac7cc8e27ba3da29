"""``nn.modules.batchnorm``: PyTorch's module path for the batch norm layers (defined in ``normalization.py``)."""

from .normalization import BatchNorm1d, BatchNorm2d

__all__ = ["BatchNorm1d", "BatchNorm2d"]
