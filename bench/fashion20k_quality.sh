#!/usr/bin/env bash
# fashion20k_quality.sh — issue 4, measurement 4: kNN recall@10,
# trustworthiness@10 and 10-NN accuracy of 2-D embeddings of the first 20,000
# Fashion-MNIST points (train order, raw 784-d), all metrics against the
# 784-d neighbours (nlembed metrics), for nlembed t-SNE and EE beside Rtsne
# (r-cran-rtsne, defaults: PCA to 50, perplexity 30, theta 0.5, 1000
# iterations) and umap-learn (defaults, n_neighbors 15). Timings are single
# runs (these take minutes); they are not the point here.
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 20000 300)}
ITERS=$(smoke_or "" "--max-iters 30")
DATA=fashion-mnist:$N
"$PY" - "$OUT" "$N" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out, n = sys.argv[1], int(sys.argv[2])
np.save(f"{out}/fm{n}.npy", fmnist.images(n).astype(np.float32))
PY
run() { # NAME command...
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$OUT/q-$name.log" 2>&1 || { echo "$name: failed: $(tail -2 "$OUT/q-$name.log")"; return; }
  t1=$(date +%s.%N)
  "$NLEMBED" metrics "$DATA" "$OUT/q-$name.npy" -k 10 --quiet > "$OUT/q-$name.json"
  "$PY" -c "
import json; r = json.load(open('$OUT/q-$name.json'))
print('%-24s recall@10 %.3f  trustworthiness@10 %.3f  10-NN accuracy %.3f  (%.0f s)' % ('$name', r['recall'], r['trustworthiness'], r['knn_accuracy'], $t1 - $t0))"
}
# shellcheck disable=SC2086
run nlembed-tsne-sd "$NLEMBED" tsne "$DATA" -p 30 $ITERS -o "$OUT/q-nlembed-tsne-sd.npy" --quiet
# shellcheck disable=SC2086
run nlembed-tsne-gd "$NLEMBED" tsne "$DATA" -p 30 --learning-rate auto --exaggeration 12 --init pca \
  --init-scale 1e-4 $ITERS -o "$OUT/q-nlembed-tsne-gd.npy" --quiet
# shellcheck disable=SC2086
run nlembed-ee-lambda1 "$NLEMBED" ee "$DATA" -p 30 --lambda 1 $ITERS -o "$OUT/q-nlembed-ee-lambda1.npy" --quiet
# shellcheck disable=SC2086
run nlembed-tee-lambda1 "$NLEMBED" tee "$DATA" -p 30 --lambda 1 $ITERS -o "$OUT/q-nlembed-tee-lambda1.npy" --quiet
have_peer R Rtsne && run Rtsne "$PY" - "$OUT" "$N" <<'PY'
import subprocess, sys
import numpy as np
out, n = sys.argv[1], sys.argv[2]
Y = np.load(f"{out}/fm{n}.npy")
np.savetxt(f"{out}/fm{n}.csv", Y, fmt="%d", delimiter=",")
r = f"""
set.seed(1)
Y <- as.matrix(read.csv("{out}/fm{n}.csv", header = FALSE))
res <- Rtsne::Rtsne(Y, dims = 2, perplexity = 30, check_duplicates = FALSE, num_threads = 2)
write.table(res$Y, "{out}/q-Rtsne.csv", sep = ",", row.names = FALSE, col.names = FALSE)
"""
subprocess.run(["Rscript", "-e", r], check=True)
np.save(f"{out}/q-Rtsne.npy", np.loadtxt(f"{out}/q-Rtsne.csv", delimiter=","))
PY
# the last peer in an `if`: a peer not installed is skipped (saying so), and
# the script still ends with success; a peer that fails still fails it
if have_peer python umap; then
  run umap-learn "$PY" - "$OUT" "$N" <<'PY'
import sys
import numpy as np
import umap
out, n = sys.argv[1], sys.argv[2]
Y = np.load(f"{out}/fm{n}.npy")
np.save(f"{out}/q-umap-learn.npy", umap.UMAP(random_state=1).fit_transform(Y).astype(np.float64))
PY
fi
