#!/usr/bin/env bash
# setup.sh — installs what is missing (Debian packages), builds, and runs.
#
#   ./setup.sh run     set-up + build + the main job (t-SNE of all 70,000
#                      Fashion-MNIST images, its quality figures and a plot,
#                      in out/)
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
# The test suite compares outputs with numpy under Debian's /usr/bin/python3
# and runs the libFuzzer targets (clang).
TEST_PACKAGES=(python3-numpy clang)
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
  # t-SNE of all 70,000 Fashion-MNIST images with the defaults (no tuning),
  # its quality figures and a plot with the class names, in out/.
  mkdir -p out
  local t0=$SECONDS data=fashion-mnist
  ./build/nlembed tsne "$data" -o out/fashion-mnist-tsne.npy > out/tsne.json
  ./build/nlembed metrics "$data" out/fashion-mnist-tsne.npy --subsample 10000 -o out/metrics.json > /dev/null
  ./build/nlembed plot out/fashion-mnist-tsne.npy --labels "$data" \
    --title "t-SNE of Fashion-MNIST (all 70,000 images)" --info out/metrics.json \
    -o out/fashion-mnist-tsne.png
  echo
  echo "t-SNE:   $(cat out/tsne.json)"
  echo "metrics: $(cat out/metrics.json)"
  echo "plot:    out/fashion-mnist-tsne.png   (main job: $((SECONDS - t0)) s)"
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
  echo "== the bad-input catalogue"
  NLEMBED=./build/nlembed bash tests/bad_input.sh | tee "$log.bad" | grep -v '^ok ' || true
  echo "== command-line tests and the catalogue under ASan+UBSan"
  NLEMBED=./build-asan/nlembed bash tests/cli.sh | tee "$log.cli_asan" | grep -v '^ok ' || true
  NLEMBED=./build-asan/nlembed bash tests/bad_input.sh | tee "$log.bad_asan" | grep -v '^ok ' || true
  echo "== fuzzing: every reader and container, ${FUZZ_SECONDS:-5} s each"
  rm -rf build-fuzz/work && bash fuzz/run.sh "${FUZZ_SECONDS:-5}" | tee "$log.fuzz" || true
  local passed=0 failed=0 p f
  for part in unit asan cli bad cli_asan bad_asan fuzz; do
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
