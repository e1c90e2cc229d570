#!/usr/bin/env bash
# wneg_quality.sh — issue 5, item 4: are EE embeddings with the EE paper's
# squared-distance repulsive weights (w-_nm = |y_n - y_m|^2) better than with
# uniform ones (chapter 5's choice, which the fast engines serve)? EE of the
# first N Fashion-MNIST images (raw 784-d, perplexity 30, default SD, 300
# iterations, exact repulsion) over a grid of lambda for each W-, the
# squared-distance lambdas divided by the mean squared distance so that both
# grids span the same total repulsive weight. Prints recall@10,
# trustworthiness@10 and 10-NN accuracy against the 784-d data (nlembed
# metrics, all points) for each run.
#   bench/wneg_quality.sh   [N=5000] [ENGINE=exact|auto|fft] [WNEG_DIMS=30]
#                           [LAMBDAS="0.01 0.03 0.1 0.3"] [WNEGS="uniform sqdist"]
# With a fast engine, sqdist W- is summed by FFT over the data after PCA to
# WNEG_DIMS dimensions (--wneg-dims).
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 5000 300)}
ITERS=${ITERS:-$(smoke_or 300 20)}
ENGINE=${ENGINE:-exact}
WNEG_DIMS=${WNEG_DIMS:-30}
LAMBDAS=${LAMBDAS:-$(smoke_or "0.01 0.03 0.1 0.3" 0.1)}
WNEGS=${WNEGS:-uniform sqdist}
DATA=fashion-mnist:$N
MEAN_SQ=$("$PY" - "$N" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
n = int(sys.argv[1])
Y = fmnist.images(n).astype(np.float64)
sq = (Y ** 2).sum(1)
print(2 * (sq.mean() - (Y.mean(0) ** 2).sum()))  # mean of |y_n - y_m|^2 over all pairs
PY
)
echo "# EE of $DATA, $ENGINE repulsion (sqdist features: $WNEG_DIMS PCA dimensions with a fast engine), SD, $ITERS iterations; mean squared distance $MEAN_SQ"
for lam in $LAMBDAS; do
  for wneg in $WNEGS; do
    l=$lam
    [ "$wneg" = sqdist ] && l=$("$PY" -c "print($lam / $MEAN_SQ)")
    out="$OUT/wneg-$wneg-$lam.npy"
    t0=$(date +%s.%N)
    "$NLEMBED" ee "$DATA" -p 30 --wneg "$wneg" --lambda "$l" --max-iters "$ITERS" --repulsion "$ENGINE" --wneg-dims "$WNEG_DIMS" --threads 2 -o "$out" \
      --quiet > /dev/null
    t1=$(date +%s.%N)
    "$NLEMBED" metrics "$DATA" "$out" -k 10 --subsample 0 --quiet > "$OUT/wneg.json"
    "$PY" -c "
import json; r = json.load(open('$OUT/wneg.json'))
print('W- %-7s lambda %-10.4g (uniform-equivalent %-5s) recall@10 %.4f  trustworthiness@10 %.4f  10-NN accuracy %.4f  (%.0f s)' % ('$wneg', $l, '$lam', r['recall'], r['trustworthiness'], r['knn_accuracy'], $t1 - $t0))"
  done
done
