"""The one place where the Triton versions we support (3.6.0 through the newest 3.x) differ for kernels.

Kernels are written against the newest ``triton.language``; what an older release lacks is filled in here,
once, when ``tkernels.kernels`` is imported (before any kernel module is). Differences that a kernel can
state in a way every version accepts are written that way in the kernel instead (``tl.dot(...,
out_dtype=...)`` for float64: 3.6 defaults it to float32 and rejects a float64 accumulator). Interpreter-only
differences live in ``tkernels.cuda.interpreter``.

- ``tl.to_tensor``: exported by ``triton.language`` from 3.7 on; 3.6 has it only as
  ``triton.language.core.to_tensor``. Both the compiler (an attribute of ``tl``) and the interpreter (which
  patches every builtin it finds on ``tl``) pick up the alias.
"""

from __future__ import annotations

import triton.language as tl

__all__ = ["install"]


def install() -> None:
    """Fill in what this Triton's ``triton.language`` lacks (idempotent)."""
    if not hasattr(tl, "to_tensor"):
        tl.to_tensor = tl.core.to_tensor
