#!/usr/bin/env bash
# fashion20k_curves.sh — issue 4, measurement 3 (dissertation fig. 3.4): E
# against time for FP, L-BFGS and SD (kappa = 7) on the first 20,000
# Fashion-MNIST points, perplexity 50, for EE (lambda = 100) and t-SNE, each
# run for BUDGET seconds (the dissertation used 1 hour) from the same PCA
# start. Writes the traces (iteration, seconds, E, evaluations) and prints,
# per model, each optimiser's final E and the time SD took to reach FP's
# final E.
source "$(dirname "$0")/common.sh"
N=${N:-$(smoke_or 20000 300)}
BUDGET=${BUDGET:-600}
ITERS=${ITERS:-$(smoke_or 1000000 10)} # the time budget stops a full run
DATA=fashion-mnist:$N
for model in ee tsne; do
  for opt in fp lbfgs sd; do
    "$NLEMBED" "$model" "$DATA" -p 50 --optimizer "$opt" --kappa 7 --max-iters "$ITERS" --tol 0 \
      --time-budget "$BUDGET" --trace "$OUT/curve-$model-$opt.csv" -o "$OUT/curve-$model-$opt.npy" --quiet \
      > "$OUT/curve-$model-$opt.json"
  done
  "$PY" - "$OUT" "$model" <<'PY'
import sys
import numpy as np
out, model = sys.argv[1], sys.argv[2]
tr = {o: np.loadtxt(f"{out}/curve-{model}-{o}.csv", delimiter=",", skiprows=1, ndmin=2) for o in ("fp", "lbfgs", "sd")}
for o, t in tr.items():
    print(f"{model} {o:6s}: {len(t):6d} iterations in {t[-1, 1]:7.1f} s, final E {t[-1, 2]:.8g}")
target = tr["fp"][-1, 2]
for o in ("sd", "lbfgs"):
    hit = np.flatnonzero(tr[o][:, 2] <= target)
    if len(hit):
        s = tr[o][hit[0], 1]
        print(f"{model}: {o} reaches FP's final E after {s:.1f} s ({tr['fp'][-1, 1] / s:.1f}x sooner)")
    else:
        print(f"{model}: {o} does not reach FP's final E")
PY
done
