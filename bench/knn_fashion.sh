#!/usr/bin/env bash
# knn_fashion.sh — exact k = 10 nearest neighbours of Fashion-MNIST (70,000
# points) after PCA-50 and on the raw 784 dimensions: wall time, median of 3.
# The result is checked against numpy on a random 200-point sample of rows.
source "$(dirname "$0")/common.sh"
threads=${THREADS:-2}
reps=${REPS:-$(smoke_or 3 1)}
FM=$(smoke_or fashion-mnist fashion-mnist:500) N=$(smoke_or 70000 500)
[ -f "$OUT/fmnist-pca50.npy" ] || "$NLEMBED" pca "$FM" -d 50 --quiet -o "$OUT/fmnist-pca50.npy" > /dev/null
median_run "exact 10-NN, Fashion-MNIST PCA-50" "$reps" \
  "$NLEMBED" knn "$OUT/fmnist-pca50.npy" -k 10 --method exact --threads "$threads" --quiet -o "$OUT/knn-pca50.npy" --distances "$OUT/knn-pca50-d.npy"
median_run "exact 10-NN, Fashion-MNIST raw 784-d" "$reps" \
  "$NLEMBED" knn "$FM" -k 10 --method exact --threads "$threads" --quiet -o "$OUT/knn-raw.npy" --distances "$OUT/knn-raw-d.npy"
"$PY" - "$OUT" "$N" <<'PY'
import json, sys, time
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out = sys.argv[1]
Y = fmnist.images(int(sys.argv[2]))
P = np.load(f"{out}/fmnist-pca50.npy").astype(np.float32).astype(np.float64)
rng = np.random.default_rng(0)
for name, data in (("raw", Y), ("pca50", P)):
    idx, dist = np.load(f"{out}/knn-{name}.npy"), np.load(f"{out}/knn-{name}-d.npy")
    rows = rng.choice(data.shape[0], 200, replace=False)
    agree, dist_err = 0, 0.0
    for i in rows:
        d2 = ((data - data[i]) ** 2).sum(axis=1)
        d2[i] = np.inf
        want = np.sort(d2)[:10]
        dist_err = max(dist_err, np.max(np.abs(dist[i] - want) / np.maximum(want, 1e-12)))
        agree += np.array_equal(np.sort(d2[idx[i]]), want)
    print(f"{name}: {agree}/200 sampled rows have exactly the true 10 smallest distances; max rel. distance error {dist_err:.2e}")
PY
