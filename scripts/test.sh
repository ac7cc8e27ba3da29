#!/usr/bin/env bash
# The README's test command: both legs of the Triton version matrix, each in its own virtual environment.
#   1. default: the newest Triton and NumPy on this Python (.venv, with the dev tools): lint, then the whole suite;
#   2. triton36: triton==3.6.0 (the oldest supported, what the GPU machines have) with the newest NumPy 2.x on
#      Python 3.12 when it is installed (the GPU machines' Python; else this python3), in .venv-triton36: the AOT
#      compile tests and the interpreted kernel and op tests (tests/tkernels: every kernel family, compiled for
#      sm_90 and sm_80 and run through Triton's interpreter).
# With both legs, leg 2's virtual environment is made in the background while leg 1 lints and tests (its output
# is shown when leg 2 starts). Each pytest runs two workers with work stealing (a worker that runs dry takes
# tests queued for the other; the tests marked slow are handed out first: tests/conftest.py).
# Arguments go to leg 1's pytest. TKERNELS_TEST_LEGS=default or =triton36 runs one leg only. Exits non-zero when
# either leg fails, and when a leg's pytest collected no test (exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
legs="${TKERNELS_TEST_LEGS:-all}"
case "$legs" in all|default|triton36) ;; *) echo "TKERNELS_TEST_LEGS must be all, default or triton36, got '$legs'" >&2; exit 2;; esac
# two pytest workers on two cores: one BLAS thread each (OpenBLAS threads spinning against the other worker
# make a 64x64x256 matmul take 30 ms instead of 50 us)
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

run_pytest() {  # venv, leg name, pytest arguments...
  local py="$1/bin/python" leg="$2" rc=0
  shift 2
  "$py" -m pytest -n 2 --dist worksteal -q -p no:cacheprovider --timeout=300 "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "test.sh: leg $leg collected no tests (pytest exit 5): failing" >&2
    return 1
  fi
  return "$rc"
}

setup_triton36() {  # .venv-triton36: Python 3.12 where it is installed, triton==3.6.0, the newest NumPy 2.x
  local py312="" c v
  local candidates=()
  if command -v python3.12 >/dev/null 2>&1; then candidates+=("$(command -v python3.12)"); fi
  if command -v pyenv >/dev/null 2>&1; then  # a pyenv shim runs only where that version is selected
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' || true); do
      candidates+=("$(PYENV_VERSION="$v" pyenv which python3.12 2>/dev/null || true)")
    done
  fi
  for c in "${candidates[@]}"; do  # the first that really runs
    if [ -n "$c" ] && "$c" -c 'import sys, venv; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
      py312="$c"
      break
    fi
  done
  if [ -z "$py312" ]; then
    echo "test.sh: no Python 3.12 here: the triton36 leg runs on $(python3 --version)" >&2
    py312=$(command -v python3)
  fi
  echo "== leg 2 (triton36): $("$py312" --version), triton==3.6.0, newest numpy 2.x" >&2
  "$py312" -m venv .venv-triton36
  .venv-triton36/bin/python -m pip install -q --upgrade pip
  .venv-triton36/bin/python -m pip install -q -e ".[test]" "triton==3.6.0" "numpy>=2,<3"
  .venv-triton36/bin/python - <<'EOF'
import numpy, triton
assert triton.__version__ == "3.6.0", f"the triton36 leg got triton {triton.__version__}"
print(f"triton {triton.__version__}, numpy {numpy.__version__}")
EOF
}

setup_pid=""
setup_log=""
wait_setup() {  # the background setup of leg 2: its output, its exit status
  local rc=0
  wait "$setup_pid" || rc=$?
  cat "$setup_log" >&2
  rm -f "$setup_log"
  setup_pid=""
  return "$rc"
}

if [ "$legs" != triton36 ]; then
  echo "== leg 1 (default): $(python3 --version), newest Triton" >&2
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  if [ "$legs" = all ]; then  # after leg 1's install: two editable installs at once would share the egg-info
    setup_log=$(mktemp)
    (setup_triton36) >"$setup_log" 2>&1 &
    setup_pid=$!
  fi
  rc=0
  .venv/bin/ruff check . || rc=$?
  if [ "$rc" -eq 0 ]; then run_pytest .venv default "$@" || rc=$?; fi
  if [ "$rc" -ne 0 ]; then
    if [ -n "$setup_pid" ]; then wait_setup || true; fi
    exit "$rc"
  fi
fi

if [ "$legs" != default ]; then
  if [ -n "$setup_pid" ]; then
    wait_setup || { rc=$?; echo "test.sh: making .venv-triton36 failed (exit $rc)" >&2; exit "$rc"; }
  else
    setup_triton36
  fi
  run_pytest .venv-triton36 triton36 tests/tkernels
fi
