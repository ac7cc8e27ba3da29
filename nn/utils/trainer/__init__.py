"""``nn.utils.trainer``: ``Trainer`` (a training loop with plugins, PyTorch 0.1's ``torch.utils.trainer``)
and its plugins (``nn.utils.trainer.plugins``, also importable from here)."""

from .plugins import *  # noqa: F403
from .plugins import __all__ as _plugins
from .trainer import Trainer

__all__ = ["Trainer", *_plugins]
