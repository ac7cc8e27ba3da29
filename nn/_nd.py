"""Argument checks shared by the n-d composite layers (conv3d, the 1-d/3-d and adaptive pools)."""

from __future__ import annotations

import operator

from tkernels.validation import OpTypeError, OpValueError


def ints(op: str, name: str, value, n: int, minimum: int = 0) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints as an ``n``-tuple, each at least ``minimum``."""
    try:
        t = (operator.index(value),) * n if not isinstance(value, list | tuple) else tuple(map(operator.index, value))
    except TypeError:
        raise OpTypeError(f"{op}: {name} must be an int or a sequence of {n} ints, got {value!r}") from None
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise OpValueError(f"{op}: {name} must be an int or a sequence of {n} ints, got {value!r}")
    if any(v < minimum for v in t):
        raise OpValueError(f"{op}: {name} must be at least {minimum}, got {value!r}")
    return t


def describe(t) -> str:
    return f"of shape {list(t.shape)}, dtype {t.dtype}, device {t.device}"


def batched(op: str, input, nd: int, layout: str):
    """``(input with a batch dim, was_unbatched)`` for an ``(N, C, *nd)`` or ``(C, *nd)`` input."""
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 1}-D (C, {layout}) or {nd + 2}-D (N, C, {layout}) input, got "
                           f"one {describe(input)}")
    return input, False
