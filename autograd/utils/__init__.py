"""``autograd.utils`` (≙ ``torch.utils``): ``autograd.utils.tensorboard`` (import it explicitly; it needs the
optional ``tensorboard`` package)."""
