"""Benchmarks of tkernels side by side with its peers (raw NumPy on the CPU; PyTorch, cuBLAS on a GPU).

Run ``python -m bench --help`` for the list of benchmarks, ``python -m bench overhead`` for one.
Every row measures our op and its anchor in the same process, interleaved, and reports the ratio
(DESIGN.md §11). Results worth keeping go to ``bench/results/`` (see its README).

Modules: ``timing`` (timers: warm-up, adaptive loops, median of repeats), ``report`` (tables, CSV,
environment), one module per benchmark registered in ``bench/__main__.py``.
"""
