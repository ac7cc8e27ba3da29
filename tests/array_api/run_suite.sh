#!/usr/bin/env bash
# Runs the array API standard's own test suite (github.com/data-apis/array-api-tests) against this checkout of
# tkernels, and prints a per-file passed/failed/skipped table. Needs a clone of the suite with its array-api
# submodule checked out, and a Python with the suite's requirements (pytest, pytest-json-report, hypothesis,
# ndindex) plus tkernels' own (numpy, ml_dtypes, triton). It reaches the network never, but CI does not run it
# (a shell script: pytest does not collect it). Results and the reasons for each remaining failure:
# tests/ARRAY_API.md.
#
#   tests/array_api/run_suite.sh PATH/TO/array-api-tests [cpu|cuda] [more pytest arguments]
#
# cuda makes cuda the default device (interpreted unless TKERNELS_INTERPRET is set to 0: slow, use -k or
# MAX_EXAMPLES). Environment: PYTHON (default python3), MAX_EXAMPLES (20), ARRAY_API_TESTS_VERSION (2024.12),
# REPORT (the JSON report's path, default ./array-api-tests-report.json).
set -euo pipefail
SUITE=${1:?usage: tests/array_api/run_suite.sh PATH/TO/array-api-tests [cpu|cuda] [pytest arguments]}
DEVICE=${2:-cpu}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
REPORT=$(realpath -m "${REPORT:-array-api-tests-report.json}")
[ -d "$SUITE/array_api_tests" ] || { echo "run_suite: $SUITE is not a clone of array-api-tests" >&2; exit 2; }
[ -n "$(ls -A "$SUITE/array-api" 2>/dev/null)" ] || {
  echo "run_suite: $SUITE/array-api (the spec submodule) is empty; git submodule update --init" >&2; exit 2; }

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export ARRAY_API_TESTS_VERSION=${ARRAY_API_TESTS_VERSION:-2024.12}
case "$DEVICE" in
  cpu) export ARRAY_API_TESTS_MODULE=tkernels ;;
  cuda)
    export TKERNELS_INTERPRET=${TKERNELS_INTERPRET:-1}
    export ARRAY_API_TESTS_MODULE="exec('import tkernels as xp; xp.set_default_device(\"cuda\")')" ;;
  *) echo "run_suite: device must be cpu or cuda, got $DEVICE" >&2; exit 2 ;;
esac

cd "$SUITE"
echo "suite $(git rev-parse --short HEAD 2>/dev/null || echo '?'), spec $(git -C array-api rev-parse --short HEAD 2>/dev/null || echo '?'), standard $ARRAY_API_TESTS_VERSION, device $DEVICE"
status=0
"$PY" -m pytest array_api_tests/ --max-examples="${MAX_EXAMPLES:-20}" --hypothesis-seed=0 -p no:cacheprovider -q \
  --json-report --json-report-file="$REPORT" "$@" || status=$?
"$PY" - "$REPORT" <<'PY'
import collections, json, sys

tests = json.load(open(sys.argv[1]))["tests"]
table = collections.defaultdict(collections.Counter)
for t in tests:
    table[t["nodeid"].split("::")[0].rsplit("/", 1)[-1]][t["outcome"]] += 1
total = collections.Counter()
print(f"| {'file':45} | passed | failed | skipped |\n|{'-' * 47}|--------|--------|---------|")
for name in sorted(table):
    c = table[name]
    total += c
    print(f"| {name:45} | {c['passed']:6} | {c['failed'] + c['error']:6} | {c['skipped']:7} |")
print(f"| {'total':45} | {total['passed']:6} | {total['failed'] + total['error']:6} | {total['skipped']:7} |")
PY
exit $status
