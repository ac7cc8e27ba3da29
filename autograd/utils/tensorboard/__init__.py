"""``autograd.utils.tensorboard`` (≙ ``torch.utils.tensorboard``): ``SummaryWriter``. Needs the optional
``tensorboard`` package (``pip install tensorboard``), imported when a writer is made."""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
