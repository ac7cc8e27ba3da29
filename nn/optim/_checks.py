"""Argument checks shared by the optimizers, with PyTorch's messages."""

from __future__ import annotations


def check_nonneg(*named) -> None:
    """``ValueError("Invalid <name>: <value>")`` for the first ``(name, value)`` pair below zero."""
    for name, v in named:
        if not 0.0 <= v:
            raise ValueError(f"Invalid {name}: {v}")


def check_betas(betas) -> None:
    for i, b in enumerate(betas[:2]):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
