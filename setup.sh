#!/usr/bin/env bash
# setup.sh — installs what is missing (Debian packages), builds, and runs.
#
#   ./setup.sh run     set-up + build + the main job (EE of Fashion-MNIST,
#                      its quality figures and a plot, in out/)
#   ./setup.sh test    set-up + build + the whole test suite (unit tests, the
#                      same under ASan+UBSan, command-line tests)
#   ./setup.sh bench   set-up + build + what the benchmark scripts need
#   ./setup.sh build   set-up + build only
set -euo pipefail
cd "$(dirname "$0")"

# Build and run-time needs. The sparse/FFT/eigen libraries are for the methods
# that build on this foundation; installing them now keeps set-up one step.
PACKAGES=(build-essential pkg-config libopenblas-dev liblapacke-dev libsuitesparse-dev
          libarpack2-dev libfftw3-dev zlib1g-dev libcairo2-dev dataset-fashion-mnist)
# The test suite compares outputs with numpy under Debian's /usr/bin/python3.
TEST_PACKAGES=(python3-numpy)
BENCH_PACKAGES=(python3-numpy python3-sklearn python3-pynndescent hyperfine time r-cran-rtsne r-cran-uwot umap-learn)

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  make -j"$(nproc)" -s all
}

main_job() {
  # EE of the first 5,000 Fashion-MNIST images (train order): the exact
  # O(N^2) repulsion makes all 70,000 a job for the fast engines (issue 5).
  mkdir -p out
  local t0=$SECONDS data=fashion-mnist:5000
  ./build/nlembed ee "$data" -p 30 --lambda 1 -o out/fashion-mnist-ee.npy \
    --save-model out/fashion-mnist-ee.nle > out/ee.json
  ./build/nlembed metrics "$data" out/fashion-mnist-ee.npy -o out/metrics.json > /dev/null
  ./build/nlembed plot out/fashion-mnist-ee.npy --labels "$data" \
    --title "Elastic embedding of Fashion-MNIST (first 5,000 images)" --info out/ee.json --info out/metrics.json \
    -o out/fashion-mnist-ee.png
  echo
  echo "EE:      $(cat out/ee.json)"
  echo "metrics: $(cat out/metrics.json)"
  echo "plot:    out/fashion-mnist-ee.png   (main job: $((SECONDS - t0)) s)"
}

test_suite() {
  make -j"$(nproc)" -s asan
  local log
  log=$(mktemp)
  echo "== unit tests"
  ./build/test_runner | tee "$log.unit" | grep -v '^ok ' || true
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
  echo "== unit tests under ASan+UBSan"
  ./build-asan/test_runner | tee "$log.asan" | grep -v '^ok ' || true
  echo "== command-line tests"
  NLEMBED=./build/nlembed bash tests/cli.sh | tee "$log.cli" | grep -v '^ok ' || true
  echo "== command-line tests under ASan+UBSan"
  NLEMBED=./build-asan/nlembed bash tests/cli.sh | tee "$log.cli_asan" | grep -v '^ok ' || true
  local passed=0 failed=0 p f
  for part in unit asan cli cli_asan; do
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
}

case "${1:-}" in
  run)   install_missing "${PACKAGES[@]}"; build; main_job ;;
  test)  install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"; build; test_suite ;;
  bench) install_missing "${PACKAGES[@]}" "${BENCH_PACKAGES[@]}"; build; make -s bench ;;
  build) install_missing "${PACKAGES[@]}"; build ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
