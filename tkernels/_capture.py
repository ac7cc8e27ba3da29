"""The state of graph capture that the low layers read (``tkernels.graphs`` sets it): kept apart so that
``array`` and ``dispatch`` can check it with one global read and without importing ``graphs``."""

from __future__ import annotations

GRAPH = None  # the Graph being captured, or None (the common case: one global read per check)


def check_host_read(array, op: str) -> None:
    """Raise when the capturing thread reads array values on the host outside a kernel or host call: the
    value would be frozen into the graph and every replay would reuse it."""
    g = GRAPH
    if g is not None and g._records_here():
        from .validation import describe

        raise RuntimeError(
            f"{op}: reading array values on the host ({describe(array)}) is not allowed while a graph is being "
            f"captured: the value would be frozen into the graph and reused by every replay; hint: read it "
            f"outside the capture (after replay()), or run that code through tkernels.graphs.host_call")


def refuse(op: str, why: str, hint: str) -> None:
    """Raise when the calling thread is capturing (outside kernels and host calls): ``op`` keeps state on the host
    that a replay would not update (``why``)."""
    g = GRAPH
    if g is not None and g._records_here():
        raise RuntimeError(f"{op}: cannot be captured in a graph: {why}; hint: {hint}")
