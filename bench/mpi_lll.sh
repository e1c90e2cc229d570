#!/usr/bin/env bash
# mpi_lll.sh — Laplacian eigenmaps by Locally Linear Landmarks on ranks
# (issue 38, docs/mpi_spectral.md "LLL on ranks"): `nlembed le DATA
# --landmarks L -o X.npy` (the other options the defaults) on
#   - 1 process x 2 threads (no mpirun; the pencil summed in double),
#   - 1, 2 and 4 ranks x 1 thread under mpirun (4 oversubscribed on a 2-core
#     machine: its times mean little, its memory per rank is the figure),
# and for each: the wall time, the stages' seconds (rank 0's JSON line:
# the graph, Z, the reduced pencil), the bytes each rank sent, each rank's
# peak memory (GNU time), the output's md5; the ranks' outputs compared
# byte for byte with 1 rank's, and each with the single process's (the
# largest coordinate difference over the largest coordinate).
#
#   bench/mpi_lll.sh [SOURCE ...]   default fashion-mnist (70,000 images);
#                                   a .npy path, or N for N augmented images
#                                   (bench/fmnist_million.py); SMOKE=1: 3000
#   LANDMARKS=2000 (default), REPEAT=1 (medians of REPEAT runs),
#   RANKS="1 2 4", DATA_DIR=/big/disk (default out/bench/mpi-data),
#   APPEND=1 (add to the report instead of starting it again)
. "$(dirname "$0")/common.sh"
command -v mpirun > /dev/null || { echo "mpirun is not installed (./setup.sh installs OpenMPI): skipped"; exit 0; }
grep -q -- '-DNLE_WITH_MPI' "$(dirname "$NLEMBED")/.cflags" 2> /dev/null ||
  { echo "$NLEMBED was built without MPI: skipped"; exit 0; }
SOURCES=${*:-$(smoke_or "fashion-mnist" 3000)}
LANDMARKS=${LANDMARKS:-$(smoke_or 2000 200)}
REPEAT=${REPEAT:-1}
RANKS=${RANKS:-1 2 4}
DATA_DIR=${DATA_DIR:-$OUT/mpi-data}
mkdir -p "$DATA_DIR"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
report=$OUT/mpi_lll.txt
[ "$SMOKE" = 1 ] || report=$RESULTS/mpi_lll.txt
[ "${APPEND:-0}" = 1 ] || : > "$report"
say() { echo "$*" | tee -a "$report"; }
say "# bench/mpi_lll.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -n), L = $LANDMARKS"
say "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# one LABEL RANKS OUT DATA: one run, its JSON line and every rank's
# "wall peak_kb" in $W/LABEL.*
one() {
  local label=$1 ranks=$2 out=$3 data=$4
  ranks_run "$W" "$label" "$ranks" "$NLEMBED" le "$data" --landmarks "$LANDMARKS" -o "$out" --quiet || {
    local rc=$?
    say "$label: failed (exit $rc): $(grep -v '^ *$' "$W/err" | head -n 2 | tr '\n' ' ')"
    return 1
  }
}

for src in $SOURCES; do
  data=$src
  if [[ "$src" =~ ^[0-9]+$ ]]; then
    data=$DATA_DIR/fm$src.npy
    [ -s "$data" ] || "$PY" bench/fmnist_million.py "${data%.npy}" "$src" || { say "could not make $data"; exit 1; }
  fi
  say ""
  say "## $src, $REPEAT run(s) each, medians"
  configs=("alone:0")
  for r in $RANKS; do configs+=("r$r:$r"); done
  for c in "${configs[@]}"; do
    label=${c%%:*} ranks=${c#*:}
    for ((i = 1; i <= REPEAT; i++)); do
      one "$label-$i" "$ranks" "$W/$label.npy" "$data" || continue 2
      say "# $label run $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
  "$PY" - "$W" "$REPEAT" "${configs[@]}" << 'EOF' | tee -a "$report"
import hashlib, os, statistics, sys
import numpy as np
sys.path.insert(0, "bench")
from ranks_runs import runs_of, wall_and_peak
w, repeat, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
stages = ["knn", "graph", "z", "reduce", "eigen", "total"]
med = statistics.median
alone = np.load(f"{w}/alone.npy") if os.path.exists(f"{w}/alone.npy") else None
first = None
for c in configs:
    label, ranks = c.split(":")
    runs = runs_of(w, label, repeat)
    if not runs or not os.path.exists(f"{w}/{label}.npy"):
        print(f"{label}: no run")
        continue
    j0 = runs[-1][0]
    X = np.load(f"{w}/{label}.npy")
    md5 = hashlib.md5(open(f"{w}/{label}.npy", "rb").read()).hexdigest()[:12]
    same = f"md5 {md5}"
    if ranks != "0":
        if first is None:
            first = (label, md5)
        elif label != first[0]:
            same += ", the same bytes as " + first[0] if md5 == first[1] else ", DIFFERS from " + first[0]
        if alone is not None and alone.shape == X.shape:
            same += f", |X - alone| {np.abs(X - alone).max() / np.abs(alone).max():.1e} of its largest"
    wall, peak = wall_and_peak(runs)
    secs = {s: med(j.get(f"{s}_seconds", 0.0) for j, _ in runs) for s in stages}
    name = "1 process x 2 threads" if ranks == "0" else f"{ranks} rank(s) x 1 thread"
    print(f"{name}: {wall:.1f} s wall, peak {peak:.0f} MiB (largest rank), reconstruction error "
          f"{j0.get('reconstruction_error', float('nan')):.4f}, eigenvalues {j0.get('eigenvalues')}, output {same}")
    print("  seconds (rank 0): " + ", ".join(f"{s} {secs[s]:.2f}" for s in stages))
    if len(runs) > 1:
        print("  wall of each run: " + ", ".join(f"{max(r[0] for r in t):.1f}" for _, t in runs) + " s")
    if "bytes_sent" in j0:
        print("  MB sent per rank: " + " / ".join(f"{x / 1e6:.1f}" for x in j0["bytes_sent"]))
        print("  peak MiB per rank (JSON): " + " / ".join(f"{x:.0f}" for x in j0.get("peak_mib", [])))
EOF
done
