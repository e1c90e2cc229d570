#!/usr/bin/env bash
# mpi.sh — issue 38's measurements (docs/mpi.md): the whole t-SNE (`nlembed
# tsne DATA -o X.npy`, the defaults) of N augmented Fashion-MNIST images
# (bench/fmnist_million.py) on
#   - 1 process x 2 threads (no mpirun: what a user of one machine runs),
#   - 2 ranks x 1 thread (mpirun -np 2: one rank a core),
#   - 4 ranks x 1 thread (mpirun -np 4, oversubscribed on a 2-core machine:
#     its times mean little; its memory per rank is the figure),
# and for each: the wall time, each stage's seconds (rank 0's JSON line),
# the bytes each rank sent per stage and per iteration, each rank's peak
# memory (GNU time's maximum RSS), and whether X.npy is the single
# process's, byte for byte. Then the issue's two ratios: 2 ranks' time over
# the single process's, and the largest peak of a rank at 4 ranks over the
# single process's peak.
#
#   bench/mpi.sh [N ...]      default 1000000 2000000; SMOKE=1: 3000
#   REPEAT=3 bench/mpi.sh     medians of 3 runs of each (default 1: a run
#                             at a million points takes ~10 minutes)
#   RANKS="2 4"               the distributed runs (default 2 4)
#   DATA_DIR=/big/disk        where the inputs are made once (default
#                             out/bench/mpi-data; 3.1 GB a million points)
. "$(dirname "$0")/common.sh"
command -v mpirun > /dev/null || { echo "mpirun is not installed (./setup.sh installs OpenMPI): skipped"; exit 0; }
grep -q -- '-DNLE_WITH_MPI' "$(dirname "$NLEMBED")/.cflags" 2> /dev/null ||
  { echo "$NLEMBED was built without MPI: skipped"; exit 0; }
SIZES=${*:-$(smoke_or "1000000 2000000" 3000)}
REPEAT=${REPEAT:-1}
RANKS=${RANKS:-2 4}
DATA_DIR=${DATA_DIR:-$OUT/mpi-data}
mkdir -p "$DATA_DIR"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
report=$OUT/mpi.txt
[ "$SMOKE" = 1 ] || report=$RESULTS/mpi.txt
: > "$report"
say() { echo "$*" | tee -a "$report"; }
say "# bench/mpi.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -n)"
say "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# one LABEL RANKS OUT DATA N: one run, its JSON line and every rank's
# "wall peak_kb" in $W/LABEL.*
one() {
  local label=$1 ranks=$2 out=$3 data=$4 n=$5
  ranks_run "$W" "$label" "$ranks" "$NLEMBED" tsne "$data" -o "$out" --quiet $(smoke_or "" "--max-iters 50") || {
    local rc=$?
    say "$label, $n points: failed (exit $rc): $(grep -v '^ *$' "$W/err" | head -n 2 | tr '\n' ' ')"
    return 1
  }
}

for n in $SIZES; do
  data=$DATA_DIR/fm$n
  [ -s "$data.npy" ] || "$PY" bench/fmnist_million.py "$data" "$n" || { say "could not make $data.npy"; exit 1; }
  say ""
  say "## $n points ($data.npy, $(du -hL "$data.npy" | cut -f1)), $REPEAT run(s) each, medians"
  configs=("alone:0")
  for r in $RANKS; do configs+=("r$r:$r"); done
  for c in "${configs[@]}"; do
    label=${c%%:*} ranks=${c#*:}
    for ((i = 1; i <= REPEAT; i++)); do
      one "$label-$i" "$ranks" "$W/$label.npy" "$data.npy" "$n" || continue 2
      say "# $label run $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
    # a plain nlembed renumbers the points in a locality order from the
    # whole graph, which ranks cannot (docs/mpi.md): the distributed runs
    # are compared with each other (the first of them) and with alone
    same="md5 $(md5sum < "$W/$label.npy" | cut -c1-12)"
    if [ "$ranks" != 0 ]; then
      first=${configs[1]%%:*}
      cmp -s "$W/$label.npy" "$W/alone.npy" && same="$same, the same bytes as alone" || same="$same, not alone's"
      [ "$label" = "$first" ] || { cmp -s "$W/$label.npy" "$W/$first.npy" && same="$same, the same bytes as $first" ||
        same="$same, DIFFERS from $first"; }
    fi
    echo "$same" > "$W/$label.same"
  done
  "$PY" - "$W" "$REPEAT" "${configs[@]}" << 'EOF' | tee -a "$report"
import statistics, sys
sys.path.insert(0, "bench")
from ranks_runs import runs_of, wall_and_peak
w, repeat, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
stages = ["read", "pca", "knn", "affinity", "optimize"]
med = statistics.median
rows, summary = [], {}
for c in configs:
    label, ranks = c.split(":")
    runs = runs_of(w, label, repeat)
    if not runs:
        print(f"{label}: no run")
        continue
    j0 = runs[-1][0]
    wall, peak = wall_and_peak(runs)
    secs = {s: med(j.get(f"{s}_seconds", 0.0) for j, _ in runs) for s in stages}
    same = open(f"{w}/{label}.same").read().strip()
    name = "1 process x 2 threads" if ranks == "0" else f"{ranks} ranks x 1 thread"
    summary[label] = (wall, peak)
    print(f"{name}: {wall:.1f} s wall, peak {peak:.0f} MiB (largest rank), {j0['iterations']} iterations, "
          f"KL {j0['kl_divergence']:.4f}, output {same}")
    print("  seconds (rank 0): " + ", ".join(f"{s} {secs[s]:.1f}" for s in stages) + f", total {med(j['total_seconds'] for j, _ in runs):.1f}")
    if len(runs) > 1:
        print("  wall of each run: " + ", ".join(f"{max(r[0] for r in t):.1f}" for _, t in runs) + " s")
    if ranks != "0":
        for s in ["pca", "knn", "affinity", "optimize"]:
            b = j0.get(f"{s}_bytes", [])
            print(f"  {s} MB sent per rank: " + " / ".join(f"{x / 1e6:.1f}" for x in b))
        print("  bytes sent per iteration per rank: " + " / ".join(f"{x:,.0f}" for x in j0.get("bytes_per_iteration", [])))
        print("  peak MiB per rank (JSON): " + " / ".join(f"{x:.0f}" for x in j0.get("peak_mib", [])))
if "alone" in summary:
    wall, peak = summary["alone"]
    for label, (w2, p2) in summary.items():
        if label != "alone":
            print(f"ratio {label} / alone: time {w2 / wall:.2f}x, peak per rank {p2 / peak:.2f}x")
EOF
done
