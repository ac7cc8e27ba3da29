"""``@triton.jit`` kernels, one file per family (the Triton tutorials' style: kernel, then why-comments).

Kernels never import the rest of tkernels; launch wrappers live in ``tkernels/backends/triton``. Kernels are
written against the newest ``triton.language``; ``_compat`` fills in what older supported releases lack.
"""

from . import _compat

_compat.install()
