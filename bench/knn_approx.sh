#!/usr/bin/env bash
# knn_approx.sh — approximate kNN (random-projection forest + NN-descent)
# against nlembed's exact kNN and against pynndescent (Debian's
# python3-pynndescent), same k and threads, on Fashion-MNIST after PCA-50 and
# on the raw 784 dimensions: recall@k against exact and wall time (medians).
#   K=90 REPS=3 THREADS=2 bench/knn_approx.sh
source "$(dirname "$0")/common.sh"
k=${K:-$(smoke_or 90 10)}
threads=${THREADS:-2}
reps=${REPS:-$(smoke_or 3 1)}
FM=$(smoke_or fashion-mnist fashion-mnist:500) N=$(smoke_or 70000 500)
[ -f "$OUT/fmnist-pca50.npy" ] || "$NLEMBED" pca "$FM" -d 50 --quiet -o "$OUT/fmnist-pca50.npy" > /dev/null
for data in pca50 raw; do
  src=$OUT/fmnist-pca50.npy
  [ $data = raw ] && src=$FM
  median_run "$data: nlembed exact $k-NN" "$reps" \
    "$NLEMBED" knn "$src" -k "$k" --method exact --threads "$threads" --quiet -o "$OUT/knn$k-$data-exact.npy"
  median_run "$data: nlembed approx $k-NN" "$reps" \
    "$NLEMBED" knn "$src" -k "$k" --method approx --threads "$threads" --quiet -o "$OUT/knn$k-$data-approx.npy"
done
have_peer python pynndescent || exit 0
NUMBA_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$PY" - "$OUT" "$k" "$reps" "$N" <<'PY'
import sys, time
import numpy as np
sys.path.insert(0, "bench")
import fmnist
from pynndescent import NNDescent
out, k, reps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
NNDescent(np.random.default_rng(0).random((2000, 20), dtype=np.float32), n_neighbors=k + 1, random_state=0)  # numba compile
def recall(found, exact):
    return np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact)])
for name, data in (("pca50", np.load(f"{out}/fmnist-pca50.npy").astype(np.float32)),
                   ("raw", fmnist.images(n).astype(np.float32))):
    exact = np.load(f"{out}/knn{k}-{name}-exact.npy")
    ours = np.load(f"{out}/knn{k}-{name}-approx.npy")
    times = []
    for r in range(reps):
        t = time.time()
        idx, _ = NNDescent(data, n_neighbors=k + 1, random_state=r, n_jobs=-1).neighbor_graph
        times.append(time.time() - t)
    # pynndescent lists each point as its own first neighbour.
    theirs = np.array([[j for j in row if j != i][:k] for i, row in enumerate(idx)])
    print(f"{name}: pynndescent {k}-NN median {np.median(times):.2f} s (runs {' '.join(f'{x:.2f}' for x in times)}), "
          f"recall {recall(theirs, exact):.5f}; nlembed approx recall {recall(ours, exact):.5f}")
PY
