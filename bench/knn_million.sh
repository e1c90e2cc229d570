#!/usr/bin/env bash
# knn_million.sh — the approximate k-NN graph at scale against pynndescent
# (Debian's python3-pynndescent, the search umap-learn and openTSNE use): the
# N augmented Fashion-MNIST images of bench/fmnist_million.py reduced to 50
# principal components (as t-SNE's default recipe searches them), k = 90
# (perplexity 30's 3u), 2 threads, one tool after the other on the same
# file. Prints each wall time (median of REPS) and each graph's recall@k
# against the exact neighbours of 1,000 sampled points (brute force in
# double, numpy), and the ratio of the times.
#   N=1000000 K=90 REPS=1 PEER=1 bench/knn_million.sh   (PEER=0: nlembed only;
#   pynndescent took 289 s at N = 300,000 here, so minutes more at a million)
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 1000000 3000)}
K=${K:-$(smoke_or 90 10)}
REPS=${REPS:-1}
PEER=${PEER:-$(smoke_or 1 0)} # the smoke run leaves numba compiling to bench/knn_approx.sh
DATA=$OUT/fm-augmented-$N
[ -f "$DATA.npy" ] || "$PY" bench/fmnist_million.py "$DATA" "$N"
[ -f "$DATA-pca50.npy" ] || "$NLEMBED" pca "$DATA.npy" -d 50 --quiet -o "$DATA-pca50.npy" > /dev/null
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2
median_run "nlembed knn --method approx, $N x 50, k = $K" "$REPS" \
  "$NLEMBED" knn "$DATA-pca50.npy" -k "$K" --method approx --quiet -o "$OUT/knn-million-nlembed.npy"
"$PY" - "$DATA-pca50.npy" "$OUT/knn-million-nlembed.npy" "$K" "$REPS" "$([ "$PEER" = 1 ] && have_peer python pynndescent >&2 && echo 1 || echo 0)" <<'PY'
import statistics, sys, time
import numpy as np
data, ours_file, k, reps, peer = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
X = np.load(data).astype(np.float32)
rng = np.random.default_rng(0)
queries = rng.choice(len(X), min(1000, len(X)), replace=False)
X64 = X.astype(np.float64)
sq = (X64 ** 2).sum(1)
exact = []
for s in range(0, len(queries), 100):
    q = queries[s:s + 100]
    D = sq[q, None] + sq[None, :] - 2.0 * X64[q] @ X64.T
    D[np.arange(len(q)), q] = np.inf
    exact.extend(np.argpartition(D, k, axis=1)[:, :k])
def recall(graph):
    return np.mean([len(set(exact[i]) & set(graph[q])) / k for i, q in enumerate(queries)])
ours = np.load(ours_file)
print(f"nlembed: recall@{k} {recall(ours):.5f} on {len(queries)} sampled points")
if not peer:
    sys.exit(0)
from pynndescent import NNDescent
NNDescent(np.random.default_rng(0).random((2000, 20), dtype=np.float32), n_neighbors=k + 1, random_state=0)  # numba compile
times = []
for r in range(reps):
    t = time.time()
    idx, _ = NNDescent(X, n_neighbors=k + 1, random_state=r, n_jobs=-1).neighbor_graph
    times.append(time.time() - t)
# pynndescent lists each point as its own first neighbour
theirs = {q: [j for j in idx[q] if j != q][:k] for q in queries}
print(f"pynndescent: median {statistics.median(times):.2f} s (runs {' '.join(f'{t:.2f}' for t in times)}), "
      f"recall@{k} {recall(theirs):.5f}")
PY
