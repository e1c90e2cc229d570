#!/usr/bin/env bash
# oos_engines.sh — issue 5, item 5: the out-of-sample map F(y) of many new
# points with the fast engines against exact sums. Trains t-SNE and EE on
# Fashion-MNIST's 60,000 training images (--save-model), maps the 10,000
# test images with `nlembed transform --repulsion exact` and with the fast
# engine (fft for t-SNE, fgt for EE; one run each, 2 threads), and prints
# each map's time and peak memory, the distance between the two maps (largest
# and median, relative to the training map's rms radius), and each map's 1-NN
# accuracy of the test images against the training labels. M maps only the
# first M test images (EE's exact map of all 10,000 ran over 20 minutes).
#   bench/oos_engines.sh   [ONLY="tsne ee"] [M=10000]
source "$(dirname "$0")/common.sh"
ONLY=${ONLY:-"tsne ee"}
M=${M:-$(smoke_or 10000 100)}
NTRAIN=$(smoke_or 60000 300) # the training images (a smoke run: the first 300, the next M mapped)
TRAIN=$(smoke_or fashion-mnist-train "fashion-mnist:$NTRAIN")
"$PY" - "$OUT" "$M" "$NTRAIN" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out, m, ntrain = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
np.save(f"{out}/oos-test.npy", fmnist.images(ntrain + m)[ntrain:].astype(np.float32))
PY
for model in $ONLY; do
  case $model in
    tsne) opts="--optimizer gd --learning-rate auto --exaggeration 12 --max-iters $(smoke_or 750 30)" fast=fft ;;
    ee) opts="--lambda 0.03 --max-iters $(smoke_or 300 30)" fast=fgt ;;
    *) echo "unknown model $model" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  median_run "train $model ($NTRAIN images)" 1 "$NLEMBED" "$model" "$TRAIN" $opts --threads 2 \
    -o "$OUT/oos-$model-train.npy" --save-model "$OUT/oos-$model.nle" --model-data reference
  for engine in exact $fast; do
    median_run "transform $model, $M images, $engine" 1 "$NLEMBED" transform "$OUT/oos-$model.nle" \
      "$OUT/oos-test.npy" --repulsion "$engine" --threads 2 -o "$OUT/oos-$model-$engine.npy"
  done
  "$PY" - "$OUT" "$model" "$fast" "$NTRAIN" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out, model, fast, ntrain = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
X = np.load(f"{out}/oos-{model}-train.npy")
A = np.load(f"{out}/oos-{model}-exact.npy")
B = np.load(f"{out}/oos-{model}-{fast}.npy")
labels = fmnist.labels(ntrain + len(A))
ytr, yte = labels[:ntrain], labels[ntrain:]
rms = np.sqrt(((X - X.mean(0)) ** 2).sum(1).mean())
dist = np.sqrt(((A - B) ** 2).sum(1)) / rms
def nn_accuracy(P):
    right = 0
    for s in range(0, len(P), 1000):
        d = ((P[s:s + 1000, None, :] - X[None, :, :]) ** 2).sum(2)
        right += (ytr[d.argmin(1)] == yte[s:s + 1000]).sum()
    return right / len(P)
print(f"{model}: |F_{fast} - F_exact| / rms radius: max {dist.max():.3g}, median {np.median(dist):.3g}; "
      f"1-NN test accuracy exact {nn_accuracy(A):.4f}, {fast} {nn_accuracy(B):.4f}")
PY
done
