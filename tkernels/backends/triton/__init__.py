"""The cuda backend: op implementations that launch our Triton kernels on the current stream, on memory from
the caching allocator. Importing this package imports all its modules, each registering its ops with
``@register(name, "triton")``. Real GPUs go through the torch-free Triton driver; interpreted cuda runs the
same kernels in Triton's interpreter."""

import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")
