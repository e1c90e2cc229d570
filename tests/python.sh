#!/usr/bin/env bash
# python.sh — the Python package's tests (python/tests, pytest) against the
# shared library and the tool of $BUILD (default build): scikit-learn's
# estimator checks on every estimator, results against independent
# references, the tool's bits, threads, Ctrl-C, pickling across processes.
# Prints pytest's own summary line, then "N passed, N failed": passed counts
# pytest's passed and xfailed (the scikit-learn checks that cannot hold for
# an embedding, each listed with its reason in python/nlembed/_estimators.py)
# and xpassed; failed counts failures and errors.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's, with numpy, scipy, scikit-learn, tqdm, pytest
log=$(mktemp)
trap 'rm -f "$log"' EXIT
PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} NLEMBED_LIBRARY=$BUILD/libnlembed.so NLEMBED_CLI=$BUILD/nlembed \
  "$PYTHON" -m pytest -q -p no:cacheprovider --disable-warnings python/tests 2>&1 | tee "$log"
summary=$(grep -E '^=* ?[0-9]+ (passed|failed|error|errors|xfailed|skipped)' "$log" | tail -n 1)
count() { echo "$summary" | grep -oE "[0-9]+ $1" | head -n 1 | grep -oE '^[0-9]+' || echo 0; }
if [ -z "$summary" ]; then
  echo "python: pytest ended without its summary line"
  echo "0 passed, 1 failed"
  exit 1
fi
passed=$(($(count passed) + $(count xfailed) + $(count xpassed)))
failed=$(($(count failed) + $(count 'errors?')))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
