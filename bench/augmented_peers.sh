#!/usr/bin/env bash
# augmented_peers.sh — t-SNE by nlembed against umap-learn (Debian's
# python3-umap-learn) on N augmented Fashion-MNIST images
# (bench/fmnist_million.py: the 70,000 images shifted and rotated, 784-d
# float32), one tool after the other on the same .npy file, 2 threads each,
# no options but the output. Prints each tool's wall time and peak memory
# (GNU time; both include reading the file), the ratio nlembed / umap-learn,
# and, from `nlembed metrics` on the same 10,000-point subsample, each map's
# recall@10 and trustworthiness@10 (ranks among all N) and 10-NN accuracy
# (5-fold CV over all N points).
#   N=300000 bench/augmented_peers.sh   [PEER=0: nlembed only]
# umap-learn held 9.1 GiB at N = 300,000 (2026-11-27): at a million it would
# need about 30 GiB, more than this 24 GiB machine has.
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 300000 2000)}
PEER=${PEER:-$(smoke_or 1 0)} # the smoke run leaves umap-learn's numba compilation out
SUBSAMPLE=$(smoke_or 10000 500)
DATA=$OUT/fm-augmented-$N
[ -f "$DATA.npy" ] || "$PY" bench/fmnist_million.py "$DATA" "$N"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2 MKL_NUM_THREADS=2
printf '# %s augmented Fashion-MNIST images (784-d), 2 threads; metrics: k = 10, subsample %s; %s\n' \
  "$N" "$SUBSAMPLE" "$(date -u '+%F %H:%M UTC')"
printf '%-14s %8s %9s %10s %10s %9s\n' tool "wall s" "peak MiB" "recall@10" "trust@10" "10-NN acc"
declare -A wall
run() { # NAME command... (writes $OUT/augmented-NAME.npy)
  local name=$1 t m
  shift
  /usr/bin/time -f "%e %M" -o "$OUT/augmented-$name.time" "$@" > "$OUT/augmented-$name.log" 2>&1 || {
    echo "$name: failed: $(tail -2 "$OUT/augmented-$name.log")"; return 0; }
  read -r t m < "$OUT/augmented-$name.time"
  wall[$name]=$t
  "$NLEMBED" metrics "$DATA.npy" "$OUT/augmented-$name.npy" --labels "$DATA-labels.npy" -k 10 \
    --subsample "$SUBSAMPLE" --quiet -o "$OUT/augmented-$name-metrics.json" > /dev/null
  "$PY" -c "
import json; r = json.load(open('$OUT/augmented-$name-metrics.json'))
print('%-14s %8.1f %9.0f %10.4f %10.5f %9.4f' % ('$name', $t, $m / 1024, r['recall'], r['trustworthiness'],
      r['knn_accuracy']))"
}
# shellcheck disable=SC2046
run nlembed-tsne "$NLEMBED" tsne "$DATA.npy" $(smoke_or "" "--max-iters 30") -o "$OUT/augmented-nlembed-tsne.npy"
if [ "$PEER" = 1 ] && have_peer python umap; then
  run umap-learn "$PY" - "$DATA.npy" "$OUT/augmented-umap-learn.npy" <<'PY'
import sys
import numpy as np
import umap
Y = np.load(sys.argv[1])
np.save(sys.argv[2], umap.UMAP(n_jobs=2, random_state=None).fit_transform(Y).astype(np.float64))
PY
  [ -n "${wall[nlembed-tsne]:-}" ] && [ -n "${wall[umap-learn]:-}" ] &&
    echo "nlembed tsne / umap-learn wall: $(echo "${wall[nlembed-tsne]} / ${wall[umap-learn]}" | bc -l | cut -c1-5)"
fi
echo "nlembed's stages: $(grep -o '"read_seconds.*"total_seconds": [0-9.]*' "$OUT/augmented-nlembed-tsne.log" || true)"
