#!/usr/bin/env bash
# peers.sh — the whole pipeline (kNN, affinities,
# embedding to 2-D) on Fashion-MNIST (all 70,000 points, raw 784-d input) by
# nlembed (t-SNE and EE) and the peers Debian packages: umap-learn, R uwot,
# R Rtsne and scikit-learn's TSNE, each with 2 threads, in one run. Prints
# wall time, peak memory (GNU time; every tool's time includes reading the
# data), and from `nlembed metrics`, on the same fixed subsample of SUBSAMPLE
# points (0 = all): kNN recall@10 against the 784-d neighbours among all N
# points; trustworthiness@10 both within the subsample (sklearn's
# trustworthiness(Y[s], X[s]), the convention of the issue's baseline
# figures) and with ranks among all N; 10-NN accuracy (stratified 5-fold CV
# over all points).
#   bench/peers.sh            [N=70000] [SUBSAMPLE=10000] [ONLY="name ..."]
# nlembed runs with no options but the output file (its defaults search
# neighbours among the first 50 principal components, as Rtsne does, and
# re-rank them by their 784-d distances); every tool's metrics are against
# the raw data. Each nlembed JSON line (in $OUT/peers-NAME.log) has the time
# of every stage.
# One run per tool (they take minutes); results in $OUT/peers-*. RESCORE=1
# only scores the embeddings and times a previous run left in $OUT.
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 70000 300)}
SUBSAMPLE=${SUBSAMPLE:-$(smoke_or 10000 200)}
ITERS=$(smoke_or "" "--max-iters 30") # a smoke run's nlembed: a few iterations
ONLY=${ONLY:-}
DATA=fashion-mnist
[ "$N" -lt 70000 ] && DATA=fashion-mnist:$N
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2 MKL_NUM_THREADS=2
# The peers read the pixels as raw float32 (N x 784, row-major).
"$PY" - "$OUT" "$N" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out, n = sys.argv[1], int(sys.argv[2])
fmnist.images(n).astype(np.float32).tofile(f"{out}/peers-data.f32")
PY
printf '# Fashion-MNIST N = %s, 784-d, 2 threads; metrics: k = 10, subsample %s; %s\n' "$N" "$SUBSAMPLE" "$(date -u +%F)"
printf '%-22s %8s %9s %10s %10s %10s %9s\n' tool "wall s" "peak MiB" "recall@10" "trust@10" "trust@10" "10-NN"
printf '%-22s %8s %9s %10s %10s %10s %9s\n' "" "" "" "(all N)" "(subset)" "(all N)" accuracy
run() { # NAME command... (writes $OUT/peers-NAME.npy)
  local name=$1
  shift
  [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]] && return 0
  if [ "${RESCORE:-0}" = 1 ]; then
    [ -f "$OUT/peers-$name.time" ] || return 0
    local t m
    read -r t m < "$OUT/peers-$name.time"
    score "$name" "$t" "$m"
    return 0
  fi
  /usr/bin/time -f "%e %M" -o "$OUT/peers-$name.time" "$@" > "$OUT/peers-$name.log" 2>&1 || {
    echo "$name: failed: $(tail -2 "$OUT/peers-$name.log")"; return 0; }
  local t m
  read -r t m < "$OUT/peers-$name.time"
  score "$name" "$t" "$m"
}
score() { # NAME WALL_S PEAK_KIB: the metrics of $OUT/peers-NAME.npy
  local name=$1
  "$NLEMBED" metrics "$DATA" "$OUT/peers-$name.npy" -k 10 --subsample "$SUBSAMPLE" --quiet > "$OUT/peers-$name.json"
  "$NLEMBED" metrics "$DATA" "$OUT/peers-$name.npy" -k 10 --subsample "$SUBSAMPLE" --within-subsample --quiet \
    > "$OUT/peers-$name.within.json"
  "$PY" -c "
import json; r = json.load(open('$OUT/peers-$name.json')); w = json.load(open('$OUT/peers-$name.within.json'))
print('%-22s %8.1f %9.0f %10.4f %10.5f %10.5f %9.4f' % ('$name', $2, $3 / 1024, r['recall'], w['trustworthiness'],
      r['trustworthiness'], r['knn_accuracy']))"
}
# nlembed with no options but the output: its defaults are the product.
# shellcheck disable=SC2086
run nlembed-tsne "$NLEMBED" tsne "$DATA" $ITERS -o "$OUT/peers-nlembed-tsne.npy"
# shellcheck disable=SC2086
run nlembed-tee "$NLEMBED" tee "$DATA" $ITERS -o "$OUT/peers-nlembed-tee.npy"
# shellcheck disable=SC2086
run nlembed-ee "$NLEMBED" ee "$DATA" $ITERS -o "$OUT/peers-nlembed-ee.npy"
have_peer python umap && run umap-learn "$PY" - "$OUT" "$N" <<'PY'
import sys
import numpy as np
import umap
out, n = sys.argv[1], int(sys.argv[2])
Y = np.fromfile(f"{out}/peers-data.f32", np.float32).reshape(n, 784)
np.save(f"{out}/peers-umap-learn.npy", umap.UMAP(n_jobs=2, random_state=None).fit_transform(Y).astype(np.float64))
PY
r_tool() { # NAME R-PACKAGE R-expression computing E from Y
  local name=$1 package=$2 expr=$3
  have_peer R "$package" || return 0
  run "$name" "$PY" - "$OUT" "$N" "$name" "$expr" <<'PY'
import subprocess, sys
import numpy as np
out, n, name, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
r = f"""
set.seed(1)
Y <- matrix(readBin("{out}/peers-data.f32", "numeric", n = {n} * 784, size = 4), nrow = {n}, byrow = TRUE)
E <- {expr}
writeBin(as.vector(t(E)), "{out}/peers-{name}.f64", size = 8)
"""
subprocess.run(["Rscript", "-e", r], check=True)
np.save(f"{out}/peers-{name}.npy", np.fromfile(f"{out}/peers-{name}.f64", np.float64).reshape(n, 2))
PY
}
r_tool uwot uwot "uwot::umap(Y, n_threads = 2, n_sgd_threads = 2)"
r_tool Rtsne Rtsne "Rtsne::Rtsne(Y, dims = 2, perplexity = 30, check_duplicates = FALSE, num_threads = 2)\$Y"
have_peer python sklearn && run sklearn-TSNE "$PY" - "$OUT" "$N" "$(smoke_or 1000 250)" <<'PY'
import sys
import numpy as np
from sklearn.manifold import TSNE
out, n, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
Y = np.fromfile(f"{out}/peers-data.f32", np.float32).reshape(n, 784)
E = TSNE(n_components=2, perplexity=30, init="pca", learning_rate="auto", n_jobs=2, random_state=1,
         **{"max_iter" if "max_iter" in TSNE().get_params() else "n_iter": iters}).fit_transform(Y)
np.save(f"{out}/peers-sklearn-TSNE.npy", E.astype(np.float64))
PY
