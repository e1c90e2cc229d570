#!/usr/bin/env bash
# tsne_engines.sh — where should t-SNE's automatic repulsion engine switch?
# For each N (SIZES, subsamples of Fashion-MNIST, and BLOBS synthetic sets
# of 10 Gaussian blobs in 50 dimensions) runs the default t-SNE with each
# engine (ENGINES: exact, Barnes-Hut, FFT interpolation; exact only up to
# EXACT_MAX points, FFT from FFT_MIN), REPS times, the engines interleaved within each
# repetition so that a noisy shared machine slows them alike. Prints per
# (N, engine) the median of the optimiser's seconds and of the process's CPU
# seconds, KL(P || Q) (the same P for every engine at one N) and the 10-NN
# accuracy of the map (Fashion-MNIST's classes; the blobs' labels) and its
# recall@10.
# On a loaded machine compare CPU seconds at THREADS=1 (the work): at two
# threads both the wall time and the CPU time (threads spinning while they
# wait) measure the load (bench/results/tsne_engines.txt).
#   bench/tsne_engines.sh            (about 15 minutes on 2 quiet threads)
#   THREADS=1 SIZES="1000 1500 2000 5000 10000 20000" EXACT_MAX=2000 bench/tsne_engines.sh
#   SMOKE=1 bench/tsne_engines.sh    (seconds: 300 points, one repetition)
source "$(dirname "$0")/common.sh"
SIZES=${SIZES:-500 1000 2000 3500 5000 10000 20000}
BLOBS=${BLOBS:-2000 10000}
ENGINES=${ENGINES:-exact bh fft}
EXACT_MAX=${EXACT_MAX:-5000}
FFT_MIN=${FFT_MIN:-0}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
if [ "${SMOKE:-0}" = 1 ]; then SIZES=300 BLOBS=300 REPS=1; fi
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
rows="$OUT/tsne_engines.tsv"
: > "$rows"
echo "# t-SNE defaults per repulsion engine, $THREADS threads, median of $REPS; $(date -u +%F)"
one() { # DATA LABELS N ENGINE
  local data=$1 labels=$2 n=$3 engine=$4 line metrics
  /usr/bin/time -f "%U %S" -o "$OUT/.cpu" "$NLEMBED" tsne "$data" --repulsion "$engine" --threads "$THREADS" \
    -o "$OUT/engines.npy" --quiet > "$OUT/.line" || { echo "$data $engine: failed" >&2; return 1; }
  line=$(tail -n 1 "$OUT/.line")
  metrics=$("$NLEMBED" metrics "$data" "$OUT/engines.npy" --labels "$labels" --subsample 2000 --threads "$THREADS" --quiet)
  "$PY" - "$data" "$n" "$engine" "$line" "$metrics" "$(cat "$OUT/.cpu")" >> "$rows" <<'PY'
import json, sys
data, n, engine, line, metrics, cpu = sys.argv[1:7]
d, m = json.loads(line), json.loads(metrics)
kl = d.get("kl_divergence", d["E"])  # before kl_divergence was reported: E (KL + H(P), the same H at one N)
print(data.split(":")[0], n, engine, d["optimize_seconds"], sum(map(float, cpu.split())), kl, m["knn_accuracy"],
      m["recall"], sep="\t")
PY
}
sets=()
for n in $SIZES; do sets+=("fashion-mnist:$n fashion-mnist:$n $n"); done
for n in $BLOBS; do sets+=("blobs:$n:50:10 blobs:$n:50:10 $n"); done
for s in "${sets[@]}"; do
  read -r data labels n <<< "$s"
  for _ in $(seq "$REPS"); do
    for e in $ENGINES; do
      [ "$e" = exact ] && [ "$n" -gt "$EXACT_MAX" ] && continue
      [ "$e" = fft ] && [ "$n" -lt "$FFT_MIN" ] && continue
      one "$data" "$labels" "$n" "$e"
    done
  done
done
"$PY" - "$rows" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    data, n, engine, *figures = line.split("\t")
    runs[(data, int(n), engine)].append([float(f) for f in figures])
print(f"{'data':14} {'N':>6} {'engine':6} {'optimise s':>10} {'CPU s':>8} {'KL':>8} {'10-NN':>7} {'recall':>7}  runs")
for (data, n, engine), r in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1], "exact bh fft".find(kv[0][2]))):
    med = [statistics.median(x[i] for x in r) for i in range(5)]
    print(f"{data:14} {n:6d} {engine:6} {med[0]:10.2f} {med[1]:8.2f} {med[2]:8.4f} {med[3]:7.4f} {med[4]:7.4f}  {len(r)}")
PY
