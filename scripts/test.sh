#!/usr/bin/env bash
# The README's test command: make a virtual environment, install the project with its dev tools, lint, test.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/ruff check .
.venv/bin/python -m pytest -n 2 -q -p no:cacheprovider "$@"
