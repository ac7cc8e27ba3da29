"""``autograd.backends.mkldnn``: no oneDNN here (the cpu device is NumPy); ``enabled`` is accepted."""

enabled = True


def is_available() -> bool:
    return False
