#!/usr/bin/env bash
# bench_smoke.sh — every benchmark in its smoke mode (bench/common.sh:
# SMOKE=1, tiny sizes, seconds each), so that a change that breaks one (an
# option renamed, a range check, a JSON field gone) fails the suite: the
# bench/*.sh scripts, the benchmark programs of `make bench` with tiny
# arguments, and the Python helpers no script runs. A benchmark fails when
# it exits non-zero or prints a line saying a run failed ("failed");
# figures are not checked. A peer that is not installed (umap-learn,
# pynndescent, R, ...; ./setup.sh bench installs them) is skipped with a
# line saying so, nlembed's side still runs. One "ok"/"FAIL" line each,
# then "N passed, N failed".
#   NLEMBED=./build/nlembed bash tests/bench_smoke.sh [NAME ...]
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
export NLEMBED SMOKE=1 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
BUILD=$(dirname "$NLEMBED")
export BUILD
LIMIT=${BENCH_SMOKE_LIMIT:-300} # seconds per benchmark before it counts as failed
only=" $* "

# check NAME command...: runs it (a program or an exported function of this
# file) with its own $OUT, at most LIMIT seconds; BENCH_SMOKE_SHOW=1 prints
# its output.
check() {
  local name=$1 rc t0=$SECONDS
  shift
  [ "$only" != "  " ] && [[ "$only" != *" $name "* ]] && return 0
  mkdir -p "$T/$name"
  local timing=()
  [ -x /usr/bin/time ] && timing=(/usr/bin/time -f "%U %S" -o "$T/$name.cpu")
  OUT=$T/$name "${timing[@]}" timeout "$LIMIT" bash -c '"$@"' _ "$@" > "$T/$name.log" 2>&1
  rc=$?
  local cpu=""
  [ -s "$T/$name.cpu" ] && cpu=$(awk 'END {printf ", %.1f s CPU", $1 + $2}' "$T/$name.cpu")
  [ "${BENCH_SMOKE_SHOW:-0}" = 1 ] && sed "s/^/  | /" "$T/$name.log"
  local skipped
  skipped=$(grep -c '^peer .* is not installed' "$T/$name.log")
  if [ $rc -ne 0 ]; then
    bad "$name" "exit $rc$([ $rc = 124 ] && echo " (over ${LIMIT} s)") after $((SECONDS - t0)) s: $(tail -n 3 "$T/$name.log" | tr '\n' ' ' | cut -c1-400)"
  elif grep -qiw 'failed' "$T/$name.log"; then
    bad "$name" "$(grep -iw -m 2 'failed' "$T/$name.log" | tr '\n' ' ' | cut -c1-400)"
  else
    ok "$name ($((SECONDS - t0)) s$cpu$([ "$skipped" -gt 0 ] && echo ", $skipped peer(s) not installed, skipped"))"
  fi
  grep '^peer .* is not installed' "$T/$name.log" | sed 's/^/  /'
}

for script in bench/*.sh; do
  name=$(basename "$script" .sh)
  [ "$name" = common ] && continue
  check "$name" bash "$script"
done

# The benchmark programs (make bench), on tiny inputs made by the tool.
if [ "$only" = "  " ] || [[ "$only" == *" programs "* ]]; then
  if make -s -j2 BUILD="$BUILD" bench > "$T/make-bench.log" 2>&1; then
    ok "make bench"
  else
    bad "make bench" "$(tail -n 3 "$T/make-bench.log" | tr '\n' ' ')"
  fi
fi
check ea_table "$BUILD/ea_table" blobs:300:5 -k 30 -p 10 --reps 1 --threads 2
check nbody_scaling "$BUILD/nbody_scaling" --min-n 1000 --max-n 2000 --threads 2
engine_gradient() {
  "$NLEMBED" affinity blobs:300:5 -p 10 --normalize -o "$OUT/W.mtx" --quiet > /dev/null &&
    "$NLEMBED" tsne blobs:300:5 -p 10 --max-iters 50 -o "$OUT/X.npy" --quiet > /dev/null &&
    "$BUILD/engine_gradient" "$OUT/W.mtx" "$OUT/X.npy" --reps 1 --threads 2 &&
    "$BUILD/engine_gradient" "$OUT/W.mtx" "$OUT/X.npy" --reps 1 --threads 2 --ee 0.01
}
export -f engine_gradient
check engine_gradient engine_gradient
mpi_programs() { # the distributed graph stage and iterations (built with MPI): 2 ranks each, both holding rows
  "$NLEMBED" affinity blobs:5000:5 -p 10 -o "$OUT/P.mtx" --quiet > /dev/null &&
    "$NLEMBED" tsne blobs:5000:5 -p 10 --max-iters 50 -o "$OUT/X.npy" --quiet > /dev/null || return 1
  /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1).standard_normal((5000, 8)).astype(np.float32))" "$OUT/Y.npy" || return 1
  local run=(mpirun --allow-run-as-root --oversubscribe -np 2)
  "${run[@]}" "$BUILD/mpi_graph" "$OUT/Y.npy" --threads 1 || return 1
  if [ -x "$BUILD/mpi_tsne_iter" ]; then
    "${run[@]}" "$BUILD/mpi_tsne_iter" "$OUT/P.mtx" "$OUT/X.npy" --iters 5 --threads 1
  else
    echo "mpi_tsne_iter: not built (a build without MPI)"
  fi
}
export -f mpi_programs
check mpi_programs mpi_programs

# Python helpers that no script runs.
metrics_vs_sklearn() {
  "$NLEMBED" tsne fashion-mnist:400 -o "$OUT/emb.npy" --save-labels "$OUT/labels.npy" --max-iters 50 --quiet \
    > /dev/null &&
    /usr/bin/python3 -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np
np.save(sys.argv[1], fmnist.images(400).astype(np.float32))" "$OUT/data.npy" &&
    /usr/bin/python3 bench/metrics_vs_sklearn.py "$OUT/data.npy" "$OUT/emb.npy" "$OUT/labels.npy" 10
}
export -f metrics_vs_sklearn
check metrics_vs_sklearn metrics_vs_sklearn
h5ad_cells() {
  /usr/bin/python3 bench/h5ad_cells.py "$OUT/cells.h5ad" 300 200 4 1 &&
    "$NLEMBED" tsne "$OUT/cells.h5ad" --labels "$OUT/cells.h5ad:obs/cell_type" -o "$OUT/cells.npy" --max-iters 50 --quiet
}
export -f h5ad_cells
check h5ad_cells h5ad_cells
check scale_model /usr/bin/python3 bench/scale_model.py --n 1e6 --machines 4
plot_curves() { # DIR: fashion20k_curves.sh's traces (run again when absent)
  local traces=$1
  [ -f "$traces/curve-tsne-sd.csv" ] || { traces=$OUT && bash bench/fashion20k_curves.sh > /dev/null; } || return 1
  if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
    /usr/bin/python3 bench/plot_curves.py "$traces" "$OUT/curves.png"
  else
    echo "peer matplotlib (python) is not installed: skipped"
  fi
}
export -f plot_curves
check plot_curves plot_curves "$T/fashion20k_curves"
finish
