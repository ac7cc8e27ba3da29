"""nn: modules, losses, optimizers, data, checkpoints (like torch.nn)."""

from . import amp, data, functional, init, optim, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter  # noqa: F401
from .serialization import CheckpointError, load, save  # noqa: F401
