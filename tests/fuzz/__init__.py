"""Differential fuzzing: random ops, shapes, dtypes, layouts and values against PyTorch and NumPy (issue 14)."""
