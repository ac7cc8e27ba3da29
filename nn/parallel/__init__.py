"""nn.parallel: data parallel training over autograd.distributed (like ``torch.nn.parallel``)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
