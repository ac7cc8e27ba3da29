"""Kernel-level ops that the array API lacks (softmax, norms, losses, convolution, pooling, attention...),
each with its ``*_backward`` entries, NumPy-style argument names."""

from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .conv import *  # noqa: F403
from .distributions import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .normalization import *  # noqa: F403
from .optim import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .spmm import *  # noqa: F403
