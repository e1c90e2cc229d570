#!/usr/bin/env bash
# transform_speed.sh — mapping new points at the speed of training: the
# default t-SNE of the 60,000 Fashion-MNIST training images with
# --save-model, then `nlembed transform` of the 10,000 test images with the
# saved model. Prints both wall times (GNU time, whole processes: the
# transform's includes loading the 190 MB model), their ratio, and the test
# images' 10-NN accuracy against the training map's labels (scikit-learn's
# KNeighborsClassifier, k = 10).   bench/transform_speed.sh [REPEATS=3]
source "$(dirname "$0")/common.sh"
REPEATS=${REPEATS:-$(smoke_or 3 1)}
NTRAIN=$(smoke_or 60000 300) NTEST=$(smoke_or 10000 100) # a smoke run: the first 300 images, the next 100 mapped
TRAIN=$(smoke_or fashion-mnist-train "$OUT/tr-train.npy") TEST=$(smoke_or fashion-mnist-test "$OUT/tr-test.npy")
if [ "$SMOKE" = 1 ]; then
  "$PY" -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np
X = fmnist.images($NTRAIN + $NTEST).astype(np.float32); np.save('$TRAIN', X[:$NTRAIN]); np.save('$TEST', X[$NTRAIN:])"
fi
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
train=() map=()
for _ in $(seq "$REPEATS"); do
  # shellcheck disable=SC2046
  /usr/bin/time -f "%e" -o "$OUT/.t_train" "$NLEMBED" tsne "$TRAIN" $(smoke_or "" "--max-iters 30") -o "$OUT/tr_train.npy" \
    --save-model "$OUT/tr_model.nle" --quiet > "$OUT/tr_train.json"
  /usr/bin/time -f "%e" -o "$OUT/.t_map" "$NLEMBED" transform "$OUT/tr_model.nle" "$TEST" \
    -o "$OUT/tr_test.npy" --quiet > "$OUT/tr_test.json"
  train+=("$(cat "$OUT/.t_train")")
  map+=("$(cat "$OUT/.t_map")")
done
have_peer python sklearn || exit 0
"$PY" - "$OUT" "${train[*]}" "${map[*]}" "$NTRAIN" "$NTEST" <<'PY'
import statistics, sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
from sklearn.neighbors import KNeighborsClassifier
out, train, mapped = sys.argv[1], [float(t) for t in sys.argv[2].split()], [float(t) for t in sys.argv[3].split()]
ntrain, ntest = int(sys.argv[4]), int(sys.argv[5])
labels = fmnist.labels(ntrain + ntest)
Xtr, Xte = np.load(f"{out}/tr_train.npy"), np.load(f"{out}/tr_test.npy")
acc = KNeighborsClassifier(10).fit(Xtr, labels[:ntrain]).score(Xte, labels[ntrain:])
mt, mm = statistics.median(train), statistics.median(mapped)
print(f"train ({ntrain}, default t-SNE, --save-model): median {mt:.2f} s of {train}")
print(f"transform ({ntest} test images):              median {mm:.2f} s of {mapped}")
print(f"ratio {mm / mt:.3f} of the training time; test 10-NN accuracy {acc:.4f}")
PY
