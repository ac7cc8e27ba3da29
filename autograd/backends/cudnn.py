"""``autograd.backends.cudnn``: no cuDNN here (convolutions are our own Triton kernels), so ``is_available()``
is False and ``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` are plain attributes scripts may set,
with no effect."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None
