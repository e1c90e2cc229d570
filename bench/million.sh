#!/usr/bin/env bash
# million.sh — a million points through the whole pipeline with the default
# recipe and no tuning: `nlembed MODEL DATA -o X.npy` (MODEL tsne by
# default; tee, ee too), 2 threads: wall time and peak memory (GNU time) of
# that one command, then the recall@10 and trustworthiness@10 of a
# 10,000-point subsample and the 10-NN accuracy (`nlembed metrics`, timed),
# and a PNG with the class names in docs/images.
#   bench/million.sh   [N=1000000] [MODEL=tsne]
# The data (bench/fmnist_million.py: Fashion-MNIST shifted by up to two
# pixels and rotated by up to 10 degrees, 3 GB of float32) is made once in
# $OUT and is not part of the timing.
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 1000000 2000)}
MODEL=${MODEL:-tsne}
DATA=$OUT/fm-augmented-$N
[ -f "$DATA.npy" ] || "$PY" bench/fmnist_million.py "$DATA" "$N"
[ -f "$DATA-names.txt" ] || "$PY" - "$DATA" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
labels = np.load(sys.argv[1] + "-labels.npy")
open(sys.argv[1] + "-names.txt", "w").write("\n".join(fmnist.CLASSES[i] for i in labels) + "\n")
PY
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
# shellcheck disable=SC2046
/usr/bin/time -f "%e %M" -o "$OUT/million-$MODEL.time" "$NLEMBED" "$MODEL" "$DATA.npy" $(smoke_or "" "--max-iters 30") -o "$OUT/million-$MODEL.npy" \
  > "$OUT/million-$MODEL.json" 2> "$OUT/million-$MODEL.log"
read -r t m < "$OUT/million-$MODEL.time"
printf '%s of %s points with the defaults: wall %.0f s (%.1f min), peak RSS %.2f GiB\n' "$MODEL" "$N" "$t" \
  "$(echo "$t / 60" | bc -l)" "$(echo "$m / 1048576" | bc -l)"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in d if k.endswith('seconds') or k in ('knn_method', 'pca', 'repulsion', 'iterations')})" "$OUT/million-$MODEL.json"
/usr/bin/time -f "%e" -o "$OUT/million-metrics.time" "$NLEMBED" metrics "$DATA.npy" "$OUT/million-$MODEL.npy" \
  --labels "$DATA-labels.npy" --subsample "$(smoke_or 10000 500)" --quiet -o "$OUT/million-$MODEL-metrics.json" > /dev/null
echo "metrics ($(cat "$OUT/million-metrics.time") s): $(cat "$OUT/million-$MODEL-metrics.json")"
title=$("$PY" -c "print({'tsne': 't-SNE', 'tee': 't-EE', 'ee': 'EE'}.get('$MODEL', '$MODEL'))")
"$NLEMBED" plot "$OUT/million-$MODEL.npy" --labels "$DATA-names.txt" \
  --title "$title of $N augmented Fashion-MNIST images (defaults)" --info "$OUT/million-$MODEL-metrics.json" \
  -o "$IMAGES/million-$MODEL.png" --quiet
