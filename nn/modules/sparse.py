"""``nn.modules.sparse``: PyTorch's module path for ``Embedding`` (defined in ``misc.py``)."""

from .misc import Embedding

__all__ = ["Embedding"]
