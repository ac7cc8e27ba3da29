"""``autograd.backends``: the switches PyTorch scripts set on ``torch.backends`` (``cudnn.benchmark = True``,
``cudnn.deterministic = True``, ``cuda.matmul.allow_tf32``, ``mps.is_available()``). There is no cuDNN, MPS or
MKL-DNN here: the flags are accepted and kept so that scripts run, and have no effect (kernel autotuning is
``TKERNELS_AUTOTUNE``); each module's docstring says what its flags would mean."""

from . import cpu, cuda, cudnn, mkldnn, mps  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps"]
