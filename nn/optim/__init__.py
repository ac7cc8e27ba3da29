"""``nn.optim`` (≙ ``torch.optim``)."""

from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import Adagrad, RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401
