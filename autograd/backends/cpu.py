"""``autograd.backends.cpu``: the cpu device runs NumPy, whose BLAS picks its own vector instructions."""


def get_cpu_capability() -> str:
    return "DEFAULT"
