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

# Build and run-time needs (OpenMPI and PARPACK: distributed runs under mpirun, docs/mpi.md). The sparse/FFT/eigen libraries are for the methods
# that build on this foundation; installing them now keeps set-up one step.
PACKAGES=(build-essential pkg-config libopenblas-dev liblapacke-dev libsuitesparse-dev
          libarpack2-dev libfftw3-dev zlib1g-dev libcairo2-dev libhdf5-dev libmatio-dev dataset-fashion-mnist
          openmpi-bin libopenmpi-dev libparpack2-dev)
# The test suite compares outputs with numpy under Debian's /usr/bin/python3
# (and writes .h5ad, .npz and .mat files with anndata, h5py and scipy),
# runs the libFuzzer targets (clang) and opens `nlembed view`'s pages in a
# headless browser (chromium, tests/viewer.sh); the Python package's tests
# run scikit-learn's estimator checks under pytest, with tqdm's progress bars;
# the benchmarks' smoke runs (tests/bench_smoke.sh) time with GNU time and
# count with bc (their peers, BENCH_PACKAGES, are skipped when missing).
TEST_PACKAGES=(python3-mpi4py python3-numpy python3-scipy python3-h5py python3-anndata python3-sklearn python3-pytest python3-tqdm
               clang chromium time bc)
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

# `nlembed view`'s page script (viewer/): node and npm (Debian's, unless some
# npm is already there), the locked npm packages, one bundle that make then
# compiles into the tool. Without them the tool still builds, and `view`
# says how to get the viewer.
build_viewer() {
  command -v npm > /dev/null || install_missing nodejs npm || true
  if ! command -v npm > /dev/null; then echo "setup: no npm: nlembed is built without its viewer" >&2; return 0; fi
  ( cd viewer &&
    { { [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; } ||
      npm ci --no-audit --no-fund --loglevel=error; } &&
    node build.mjs > /dev/null ) || echo "setup: the viewer did not build: nlembed is built without it" >&2
}

build() {
  build_viewer
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

case "${1:-}" in
  run)   install_missing "${PACKAGES[@]}"; build; main_job ;;
  test)  install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"; build; bash tests/run.sh ;;
  bench) install_missing "${PACKAGES[@]}" "${BENCH_PACKAGES[@]}"; build; make -s bench ;;
  build) install_missing "${PACKAGES[@]}"; build ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
