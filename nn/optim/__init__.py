"""``nn.optim`` (≙ ``torch.optim``)."""

from .adam import Adam, AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
