#!/usr/bin/env bash
# ee_table31.sh — like dissertation table 3.1: homotopy EE (50 log-spaced
# lambda from 1e-4 to 1e2, tol 1e-6, at most MAXIT iterations per lambda) on
# 720 Fashion-MNIST test images (the first 72 of each class), perplexity 20,
# from the same random start: objective evaluations, iterations, final E and
# time per optimiser. GD and CG get SLOW_MAXIT (they are orders of magnitude
# slower; the cap is printed).
source "$(dirname "$0")/common.sh"
maxit=${MAXIT:-$(smoke_or 10000 5)}
slow=${SLOW_MAXIT:-$(smoke_or 1000 5)}
steps=$(smoke_or 50 3)
"$PY" - "$OUT" "$(smoke_or 72 8)" <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out, per_class = sys.argv[1], int(sys.argv[2])
if os.environ.get("SMOKE") == "1":  # the first images, not the test set's
    Y, y = fmnist.images(1000), fmnist.labels(1000)
else:
    Y, y = fmnist.images()[60000:], fmnist.labels()[60000:]
idx = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(10)])
np.save(f"{out}/fm720.npy", Y[idx].astype(np.float32))
np.save(f"{out}/fm720-labels.npy", y[idx].astype(np.int32))
PY
printf '%-7s %10s %10s %14s %10s %s\n' optimizer evaluations iterations "final E" seconds cap
for opt in sd sd-all sd- fp lbfgs cg gd; do
  cap=$maxit
  case $opt in cg|gd) cap=$slow ;; esac
  extra=""
  [ $opt = sd-all ] && extra="--kappa 0" # L+ from all of W+, not 7 neighbours
  "$NLEMBED" ee "$OUT/fm720.npy" -p 20 --homotopy "$steps" --lambda-start 1e-4 --lambda 1e2 --tol 1e-6 \
    --max-iters "$cap" --optimizer "${opt%-all}" $extra --init random --init-scale 1e-5 --quiet \
    -o "$OUT/fm720-$opt.npy" > "$OUT/fm720-$opt.json"
  "$PY" -c "
import json; r = json.load(open('$OUT/fm720-$opt.json'))
print('%-7s %10d %10d %14.6f %10.1f %s' % ('$opt', r['evaluations'], r['iterations'], r['E'], r['optimize_seconds'], '$cap'))"
done
for opt in sd fp lbfgs; do
  "$NLEMBED" metrics "$OUT/fm720.npy" "$OUT/fm720-$opt.npy" --labels "$OUT/fm720-labels.npy" --quiet |
    sed -n "s/.*\"summary\": \"\([^\"]*\)\".*/$opt: \1/p"
done
