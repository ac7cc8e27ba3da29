"""The cpu backend: every op implemented with NumPy. Importing this package imports all its modules, each of
which registers its ops with ``@register(name, "numpy")``."""

import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")
