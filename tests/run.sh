#!/usr/bin/env bash
# run.sh — the whole test suite on what `make` built: unit tests, the
# command-line tests and the bad-input catalogue under the optimised and the
# ASan+UBSan builds (made here), the file formats end to end, the map viewer
# in a real browser, the Python package, every benchmark in its smoke mode
# (tests/bench_smoke.sh), the distributed cases under mpirun (tests/mpi.sh),
# CONTRIBUTING.md's counts (tests/contrib.sh),
# the install test, then every fuzz
# target for FUZZ_SECONDS (5) each. Ends with one line, "N passed, N failed".
# `./setup.sh test` installs the packages it needs and runs it; so does
# `make check`.
set -u
cd "$(dirname "$0")/.." || exit 1

make -j"$(nproc)" -s asan isa
log=$(mktemp)
# part NAME COMMAND...: runs one part, its "ok" lines kept out of the way; a
# non-zero exit (a sanitizer report at exit, a crash) counts as a failure
# even when the part's own summary line says none.
exits=0
part() {
  local name=$1 start=$SECONDS
  shift
  "$@" | tee "$log.$name" | grep -v '^ok '
  local rc=${PIPESTATUS[0]}
  # each part's wall time, so a slower suite shows where (CI's limit is 20 minutes)
  echo "run: $name took $((SECONDS - start)) s"
  if [ "$rc" -ne 0 ] && ! grep -q "^[0-9]* passed, [1-9]" "$log.$name"; then
    echo "run: $name exited $rc"
    exits=$((exits + 1))
  fi
}
echo "== unit tests"
part unit ./build/test_runner
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
echo "== unit tests under ASan+UBSan, with allocation failures injected"
part asan ./build-asan/test_runner
echo "== distributed runs: 2 and 3 ranks under mpirun, through TCP"
part mpi bash tests/mpi.sh
echo "== command-line tests"
NLEMBED=./build/nlembed part cli bash tests/cli.sh
echo "== the bad-input catalogue"
NLEMBED=./build/nlembed part bad bash tests/bad_input.sh
echo "== the hot loops' x86-64, AVX2 and AVX-512 builds give the same bits"
NLEMBED=./build/nlembed part isa bash tests/isa.sh
echo "== command-line tests and the catalogue under ASan+UBSan"
# (the thread-invariance block, a property of the algorithms, runs on the
# optimised build only: under ASan it took 2 of the pass's 5 minutes)
NLEMBED=./build-asan/nlembed CLI_SKIP_THREADS_SAME=1 part cli_asan bash tests/cli.sh
NLEMBED=./build-asan/nlembed part bad_asan bash tests/bad_input.sh
echo "== file formats end to end (AnnData, HDF5, .npz, MATLAB, 10x) from the tools users write them with"
NLEMBED=./build/nlembed part formats bash tests/formats.sh
NLEMBED=./build-asan/nlembed part formats_asan bash tests/formats.sh
echo "== the map viewer in Debian's chromium (playwright-core)"
NLEMBED=./build/nlembed part viewer bash tests/viewer.sh
echo "== the Python package (pytest; scikit-learn's estimator checks)"
BUILD=build part python bash tests/python.sh
echo "== every benchmark in its smoke mode (tiny sizes; peers not installed are skipped, saying so)"
NLEMBED=./build/nlembed part bench bash tests/bench_smoke.sh
echo "== CONTRIBUTING.md's counts: a dummy reader, optimiser, engine, spectral method and option, each in a scratch copy"
part contrib bash tests/contrib.sh
echo "== make install and a program built with pkg-config"
part install bash tests/install.sh
echo "== fuzzing: every reader and container, ${FUZZ_SECONDS:-5} s each"
rm -rf build-fuzz/work
part fuzz bash fuzz/run.sh "${FUZZ_SECONDS:-5}"
passed=0 failed=$exits
for name in unit asan mpi cli bad isa cli_asan bad_asan formats formats_asan viewer python bench contrib install fuzz; do
  read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$log.$name" | tail -n 1)
  if [ -z "${p:-}" ]; then
    echo "run: the $name part ended without its summary line (crashed?)"
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
