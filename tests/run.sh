#!/usr/bin/env bash
# run.sh — the whole test suite on what `make` built: unit tests, the
# command-line tests and the bad-input catalogue under the optimised and the
# ASan+UBSan builds (made here), the install test, then every fuzz target for
# FUZZ_SECONDS (5) each. Ends with one line, "N passed, N failed".
# `./setup.sh test` installs the packages it needs and runs it; so does
# `make check`.
set -u
cd "$(dirname "$0")/.." || exit 1

make -j"$(nproc)" -s asan
log=$(mktemp)
echo "== unit tests"
./build/test_runner | tee "$log.unit" | grep -v '^ok ' || true
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
echo "== unit tests under ASan+UBSan"
./build-asan/test_runner | tee "$log.asan" | grep -v '^ok ' || true
echo "== command-line tests"
NLEMBED=./build/nlembed bash tests/cli.sh | tee "$log.cli" | grep -v '^ok ' || true
echo "== the bad-input catalogue"
NLEMBED=./build/nlembed bash tests/bad_input.sh | tee "$log.bad" | grep -v '^ok ' || true
echo "== command-line tests and the catalogue under ASan+UBSan"
NLEMBED=./build-asan/nlembed bash tests/cli.sh | tee "$log.cli_asan" | grep -v '^ok ' || true
NLEMBED=./build-asan/nlembed bash tests/bad_input.sh | tee "$log.bad_asan" | grep -v '^ok ' || true
echo "== make install and a program built with pkg-config"
bash tests/install.sh | tee "$log.install" | grep -v '^ok ' || true
echo "== fuzzing: every reader and container, ${FUZZ_SECONDS:-5} s each"
rm -rf build-fuzz/work && bash fuzz/run.sh "${FUZZ_SECONDS:-5}" | tee "$log.fuzz" || true
passed=0 failed=0
for part in unit asan cli bad cli_asan bad_asan install fuzz; do
  read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$log.$part" | tail -n 1)
  if [ -z "${p:-}" ]; then
    echo "setup: the $part run ended without its summary line (crashed?)"
    failed=$((failed + 1))
    continue
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  p="" f=""
done
rm -f "$log" "$log".*
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
