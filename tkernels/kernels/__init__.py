"""``@triton.jit`` kernels, one file per family (the Triton tutorials' style: kernel, then why-comments).

Kernels never import the rest of tkernels; launch wrappers live in ``tkernels/backends/triton``.
"""
