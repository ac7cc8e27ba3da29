#!/usr/bin/env bash
# The README's test command: make a virtual environment, install the project with its dev tools, lint, test.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/ruff check .
# two pytest workers on two cores: one BLAS thread each (OpenBLAS threads spinning against the other worker
# make a 64x64x256 matmul take 30 ms instead of 50 us)
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/python -m pytest -n 2 -q -p no:cacheprovider --timeout=300 "$@"
