"""The cpu backend: every op implemented with NumPy. Importing this package imports all its modules, each of
which registers its ops with ``@register(name, "numpy")``.

Every call runs with NumPy's floating-point warnings off (``_silent``): an overflow to inf, inf - inf, 0 / 0 are
the op's values, as in PyTorch and in our cuda kernels, not a RuntimeWarning from the line of NumPy that met
them (a diverging model on the cpu printed warnings from matmul, conv, batch norm, pooling, Adam). Errors that
PyTorch raises (integer division by zero, bad indices) are checked by the entries and backends themselves."""

import importlib
import pkgutil

from ...dispatch import wrap_calls
from ._util import quiet_off, quiet_on

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")


def _silent(fn):
    """``fn`` under ``np.errstate(all="ignore")`` (``quiet_on``: ~0.2 us a call)."""

    def call(*args, **kwargs):
        tok = quiet_on()
        try:
            return fn(*args, **kwargs)
        finally:
            quiet_off(tok)

    call.__wrapped__ = fn
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "impl")
    return call


wrap_calls("numpy", _silent, skip=("empty",))  # (empty allocates and computes nothing)
